"""A container declaration: the state's arguments, checked and turned into PVE's wire spelling.

Bad input is refused here, before any network call, with one sentence per key naming the key
and the rule (docs/design.md §3: keys a family does not know are refused by name, never ignored).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from salt_proxmox.errors import DeclarationError, boolean_problem, shown
from salt_proxmox.guest.props import config_problems, guest_problems, secret_problem, wired_value
from salt_proxmox.guest.restore import archive_problem
from salt_proxmox.guest.schema import PropString
from salt_proxmox.lxc import rawkeys, schema
from salt_proxmox.lxc.schema import parse_mountpoint
from salt_proxmox.pve.constraints import options_problem
from salt_proxmox.wire.propstring import flag, pairs


@dataclass(frozen=True)
class LxcDeclaration:
    """One declared container.

    ``config`` maps PVE config keys (``hostname``, ``rootfs``, ``net0``, ``unprivileged``, ...) to
    their wire strings; ``''`` asks to clear the key. ``ostemplate`` and ``start`` are create-only.
    ``reboot_for_pending``: the apply may reboot the running container when changes it wrote are
    pending until the next start (never otherwise).
    """

    state_id: str
    target: str
    node: str
    vmid: int
    adopt: bool = False
    removal: str = "retain"
    config: dict[str, str] = field(default_factory=dict)
    ostemplate: str | None = None
    #: A create by restore: the backup volume (``guest.restore``), in place of ``ostemplate``.
    restore: str | None = None
    #: A restore's ``unique`` (new MACs; ``guest.restore``): true unless declared false.
    unique: bool = True
    start: bool = False
    reboot_for_pending: bool = False
    #: The resource pool the guest belongs to: None leaves membership alone, ``''`` is no pool.
    pool: str | None = None
    #: ``schema.CREATE_SECRETS`` declared: only the create sends them; never in a repr or a return.
    secrets: dict[str, str] = field(default_factory=dict, repr=False, compare=False)

    def stored(self) -> dict[str, object]:
        """The declaration as grains keep it: identity and config, without never-stored keys."""
        out: dict[str, object] = {
            key: value for key, value in self.config.items() if key not in schema.NEVER_STORED
        }
        if rawkeys.KEY in out:
            # Declared as a list of pairs; kept so (the text is this product's comparison form).
            out[rawkeys.KEY] = rawkeys.pairs(str(out[rawkeys.KEY]))
        out["node"] = self.node
        out["vmid"] = self.vmid
        if self.ostemplate is not None:
            out["ostemplate"] = self.ostemplate
        if self.restore is not None:
            out["restore"] = self.restore
        return out


def _problem_for(key: str, value: str) -> str | None:
    """Why ``value`` is not a valid ``key`` (its schema rule or property-string format), or None.

    ``''`` asks to clear a key: refused for the keys PVE will not delete (``schema.Key.clearable``)
    and for ``unprivileged``, which is never a config removal (PVE: read-only after create).
    """
    if value == "":
        if key == "unprivileged":
            return "cannot be removed; declare true or false"
        if key in schema.SCALARS and not schema.SCALARS[key].clearable:
            return (
                f"PVE refuses to delete it (`unable to delete required option '{key}'`, pve-container "
                "Config.pm update_pct_config); declare the value it should have"
            )
        return None
    if key in schema.SCALARS:
        if key == "features":
            return _options_problem(value, schema.FEATURES)
        return schema.SCALARS[key].rule.problem(value)
    if key == "unprivileged":
        return schema._rule_for(key).problem(value)
    family = (schema.indexed(key) or ("", 0))[0]
    if key == "rootfs" or family == "mp":
        try:
            volume = parse_mountpoint(value)
        except ValueError as exc:
            return str(exc)
        if family == "mp" and "mp" not in volume.options:
            return "a mount point needs mp=<path in the container>"
        return _options_problem(value, schema.ROOTFS if key == "rootfs" else schema.MP)
    if family == "net":
        problem = _options_problem(value, schema.NET)
        if problem is None and not dict(pairs(value)).get("name"):
            return "a NIC needs name=<interface name in the container>"
        return problem
    if family == "dev":
        return _options_problem(value, schema.DEV)
    return None


def _options_problem(value: str, table: PropString) -> str | None:
    """Check a property string against its table: known options, each valid."""
    return options_problem(value, table.rules, table.default_key)


def parse_declaration(
    state_id: str,
    *,
    vmid: object,
    node: object,
    target: object,
    adopt: object = False,
    removal: object = "retain",
    config: Mapping[str, object] | None = None,
    reboot_for_pending: object = False,
) -> LxcDeclaration:
    """Check a ``proxmox_lxc`` declaration and return it in wire spelling.

    Raises DeclarationError listing every problem: an unknown key, a value of the wrong type
    (a list or a mapping where PVE takes a string), or a value PVE's schema rejects.
    """
    number, problems = guest_problems(vmid, node, target, adopt, removal, reboot_for_pending)
    wired: dict[str, str] = {}
    secrets: dict[str, str] = {}
    once: dict[str, object] = {"ostemplate": None, "start": False, "restore": None, "unique": None}

    def take(key: str, raw: object) -> list[str]:
        if key == "unique":
            problem = boolean_problem("unique", raw)
            once["unique"] = raw
            return [problem] if problem else []
        if key == schema.RESTORE:
            problem = archive_problem("lxc", raw) if isinstance(raw, str) else "expected a backup volume id"
            if problem:
                return [f"restore: {problem}"]
            once["restore"] = raw
            return []
        if key == rawkeys.KEY:
            # The raw lxc.* lines, an ordered list (lxc.rawkeys), compared and written as one text.
            text, problems = rawkeys.declared_text(raw)
            wired[key] = text
            return problems
        if key in schema.CREATE_SECRETS:
            problem = secret_problem(key, raw)
            if problem:
                return [f"{key}: {problem}"]
            secrets[key] = str(raw)
            return []
        if key not in schema.CREATE_ONLY and not schema.is_config_key(key):
            return [
                f"{shown(key, quote=False)}: not a container config key this state manages (see "
                "pve-container src/PVE/LXC/Config.pm); remove it from the declaration"
            ]
        # A config key or ostemplate/start: its rule as the create takes it (``schema._rule_for``).
        rule = schema.CREATE.rule_for(key)
        kind = rule.kind if rule is not None else None
        # ``start`` is read below as any boolean spelling, not sent as a parameter.
        value, problem = wired_value(key, raw, None if key == "start" else kind)
        if problem:
            return [f"{key}: {problem}"]
        if key == "ostemplate":
            once["ostemplate"] = value or None
            return (
                [] if value else ["ostemplate: give a template volume (storage:vztmpl/file) or leave it out"]
            )
        if key == "start":
            try:
                once["start"] = flag(value) == "1"
            except ValueError as exc:
                return [f"start: {exc}"]
            return []
        problem = _problem_for(key, value)
        if problem:
            return [f"{key}: {problem}"]
        wired[key] = value
        return []

    found, pool = config_problems(config, take)
    problems += found
    ostemplate, start = once["ostemplate"], once["start"]
    if once["unique"] is not None and once["restore"] is None:
        problems.append("unique: only a create by restore takes it; declare restore: <backup volume>")
    if ostemplate is not None and once["restore"] is not None:
        problems.append(
            "restore: a container is created from an ostemplate or restored from a backup, not both; drop one"
        )
    if problems:
        raise DeclarationError(problems)
    return LxcDeclaration(
        state_id=state_id,
        target=str(target),
        node=str(node),
        vmid=number,
        adopt=bool(adopt),
        removal=str(removal),
        config=wired,
        ostemplate=ostemplate,  # type: ignore[arg-type]
        restore=once["restore"],  # type: ignore[arg-type]
        unique=once["unique"] is not False,
        start=start is True,
        reboot_for_pending=reboot_for_pending is True,
        secrets=secrets,
        pool=pool,
    )
