"""A container declaration: the state's arguments, checked and turned into PVE's wire spelling.

Bad input is refused here, before any network call, with one sentence per key naming the key
and the rule (docs/design.md §3: keys a family does not know are refused by name, never ignored).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from salt_proxmox.errors import DeclarationError, boolean_problem, shown
from salt_proxmox.lxc import schema
from salt_proxmox.ownership.rows import removal_problem
from salt_proxmox.pve.constraints import MAX_POST, NODE, NODE_MAX, options_problem, post_problem, vmid_number
from salt_proxmox.simple.pool import check_poolid
from salt_proxmox.wire.propstring import flag, pairs, text_problem, wire
from salt_proxmox.wire.volumes import parse_volume

#: Control characters. Only ``description`` may span lines (PVE stores it as ``#`` comment lines,
#: pve-container Config.pm ``write_pct_config``) or hold tabs; no value may hold the others.
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


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
        out["node"] = self.node
        out["vmid"] = self.vmid
        if self.ostemplate is not None:
            out["ostemplate"] = self.ostemplate
        return out


#: An OpenSSH public key line: optional options, a key type, base64 (PVE::Tools::validate_ssh_public_keys
#: runs ssh-keygen -l on them; this is the shape it accepts).
_SSH_KEY = re.compile(
    r"^(?:\S+\s+)?(?:ssh-(?:rsa|dss|ed25519)|ecdsa-sha2-nistp(?:256|384|521)|sk-\S+)\s+[A-Za-z0-9+/]+={0,3}(?:\s.*)?$"
)


def pool_problem(value: object) -> str | None:
    """Why ``value`` is not a ``pool:`` of a container, or None: a poolid PVE creates
    (``simple.pool.check_poolid``), or ``''`` for no pool."""
    if not isinstance(value, str):
        return f"expected a pool name (text), got {shown(value)}"
    return None if value == "" else check_poolid(value)


def secret_problem(key: str, value: object) -> str | None:
    """Why a create secret (``schema.CREATE_SECRETS``) cannot be sent, or None; the message never
    repeats the value. ``password``: text of at least 5 characters on one line (pve-container
    ``create_vm``: minLength 5); ``ssh-public-keys``: one OpenSSH public key per line."""
    if not isinstance(value, str):
        return f"expected text (quote it), got {type(value).__name__}; the value is not repeated here"
    if key == "password":
        if len(value) < 5:
            return "PVE wants at least 5 characters (pve-container create_vm: minLength 5)"
        if _CONTROL.search(value):
            return "holds a line break or another control character"
        return (post_problem({key: value}, secrets={key}) or "").partition(": ")[2] or None
    lines = [line.strip() for line in value.splitlines() if line.strip() and not line.strip().startswith("#")]
    bad = [number for number, line in enumerate(lines, 1) if not _SSH_KEY.match(line)]
    if not lines or bad:
        return (
            f"line {bad[0] if bad else 1} is not an OpenSSH public key (PVE: SSH public key validation "
            "error, pve-common PVE::Tools validate_ssh_public_keys); one key per line"
        )
    return None


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
            return _options_problem(value, "features", None)
        return schema.SCALARS[key].rule.problem(value)
    if key == "unprivileged":
        return schema._rule_for(key).problem(value)
    family = (schema.indexed(key) or ("", 0))[0]
    if key == "rootfs" or family == "mp":
        try:
            volume = parse_volume(value)
        except ValueError as exc:
            return str(exc)
        if family == "mp" and "mp" not in volume.options:
            return "a mount point needs mp=<path in the container>"
        return _options_problem(value, "rootfs" if key == "rootfs" else "mp", "volume")
    if family == "net":
        problem = _options_problem(value, "net", None)
        if problem is None and not dict(pairs(value)).get("name"):
            return "a NIC needs name=<interface name in the container>"
        return problem
    if family == "dev":
        return _options_problem(value, "dev", "path")
    return None


def _options_problem(value: str, family: str, default_key: str | None) -> str | None:
    """Check a property string against ``schema.OPTIONS[family]``: known options, each valid."""
    return options_problem(value, schema.OPTIONS[family], default_key)


def guest_problems(
    vmid: object, node: object, target: object, adopt: object, removal: object, reboot_for_pending: object
) -> tuple[int, list[str]]:
    """``(vmid, problems)`` for the arguments every guest state takes, in both families: the vmid
    (``vmid_number``; 0 when it is bad), the node (pve-common ``pve_verify_node_name``), the
    target, ``adopt``, ``removal`` and ``reboot_for_pending``."""
    problems: list[str] = []
    try:
        number = vmid_number(vmid)
    except DeclarationError as exc:
        problems += exc.problems
        number = 0
    if not isinstance(node, str) or len(node) > NODE_MAX or not NODE.match(node):
        # A node name is a host name label (at most NODE_MAX characters); the message stays PVE's.
        problems.append(f"node: {shown(node)} is not a PVE node name (pve-node)")
    if not isinstance(target, str) or not target:
        problems.append("target: name the cluster from proxmox:targets")
    problems += filter(
        None,
        (
            boolean_problem("adopt", adopt),
            removal_problem(removal),
            boolean_problem("reboot_for_pending", reboot_for_pending),
        ),
    )
    return number, problems


def wired_value(key: str, raw: object, kind: str | None) -> tuple[str, str | None]:
    """``(wire spelling, None)`` of a declared config value whose schema rule is of ``kind``, or
    ``('', problem)``: a boolean where a number goes, YAML's boolean or float where text goes
    (``text_problem``), a list or mapping, a control character (only ``description`` may span
    lines: PVE keeps each other key on one config line, pve-container ``write_pct_config`` and
    qemu-server ``write_vm_config``: "detected invalid newline inside property"), or a value longer
    than one request (``post_problem``). A boolean API parameter is sent as 1/0, the only spelling
    pve-common ``JSONSchema.pm`` ``check_type`` takes for one."""
    if isinstance(raw, bool) and kind in ("integer", "number"):
        return "", f"expected a number, got {raw!r}"
    problem = text_problem(raw) if kind in ("string", "enum") else None
    if problem:
        return "", problem
    try:
        value = wire(raw)
    except TypeError as exc:
        return "", str(exc)
    if _CONTROL.search(value.replace("\n", "").replace("\t", "") if key == "description" else value):
        return "", (
            "the value holds a line break or another control character; PVE keeps each key on one config "
            'line ("detected invalid newline inside property"), so nothing can be written from it'
        )
    if value and kind == "boolean":
        try:
            value = flag(value)
        except ValueError:
            return "", f"type check ('boolean') failed - got {shown(value)}"
    if len(value) > MAX_POST:
        return "", str(post_problem({key: value})).partition(": ")[2]
    return value, None


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
    pool: str | None = None
    ostemplate: str | None = None
    start = False
    for key, raw in sorted((config or {}).items()):
        if not isinstance(key, str):
            problems.append(f"{shown(key)}: config keys are strings")
            continue
        if key == "pool":
            problem = pool_problem(raw)
            if problem:
                problems.append(f"pool: {problem}")
            else:
                pool = str(raw)
            continue
        if key in schema.CREATE_SECRETS:
            problem = secret_problem(key, raw)
            if problem:
                problems.append(f"{key}: {problem}")
            else:
                secrets[key] = str(raw)
            continue
        if key not in schema.CREATE_ONLY and not schema.is_config_key(key):
            problems.append(
                f"{shown(key, quote=False)}: not a container config key this state manages (see "
                "pve-container src/PVE/LXC/Config.pm); remove it from the declaration"
            )
            continue
        # A config key or ostemplate/start: its rule as the create takes it (``schema._rule_for``).
        rule = schema.CREATE.rule_for(key)
        kind = rule.kind if rule is not None else None
        # ``start`` is read below as any boolean spelling, not sent as a parameter.
        value, problem = wired_value(key, raw, None if key == "start" else kind)
        if problem:
            problems.append(f"{key}: {problem}")
            continue
        if key == "ostemplate":
            if not value:
                problems.append("ostemplate: give a template volume (storage:vztmpl/file) or leave it out")
            ostemplate = value or None
            continue
        if key == "start":
            try:
                start = flag(value) == "1"
            except ValueError as exc:
                problems.append(f"start: {exc}")
            continue
        problem = _problem_for(key, value)
        if problem:
            problems.append(f"{key}: {problem}")
            continue
        wired[key] = value
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
        ostemplate=ostemplate,
        start=start,
        reboot_for_pending=reboot_for_pending is True,
        secrets=secrets,
        pool=pool,
    )
