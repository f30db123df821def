"""``proxmox.export``: the live cluster (and OpenBao's policies) read back as the pillar the formula
reads (``formula/proxmox/init.sls``): one entry per object under its family's section
(``registry.Family.section``), in the product's own spellings, with ``adopt: true``, so the pillar
applied as it is plans nothing but the ownership rows it records.

Each family supplies its export (``exporter``): an ``ObjectSpec`` family through its spec
(``export.objects``: ``ObjectSpec.export_names``), a guest family through its live reader
(``export.guests``), the policies through OpenBao (``export.policies``). A family without one is a
LookupError here and a failing test (``tests/unit/test_registry.py``), never a silent gap.

Filters: ``families`` (registry names), ``node``, ``pool``, ``vmid``: given, a filter keeps only the
objects that have that attribute and match it (``node`` keeps guests, interfaces and Ceph pools of
that node; ``pool`` the guests in that pool and the pool itself; ``vmid`` that guest). A firewall object
has them by its scope (``firewall.scope.export_place``): a guest's own options, rule list, IP sets and
aliases (``vm/<vmid>``, ``ct/<vmid>``) pass ``vmid`` of that guest and ``node``/``pool`` of the guest's
node and pool; a node's options and rule list (``node/<node>``) pass ``node`` of that node.

Secrets are never exported, whether PVE shows them or not (an smtp password, an InfluxDB token: never;
an ``http_proxy`` password, ACME plugin data, an IPAM token: to an auditor): a note names each by the
pillar path its value goes to in a secrets pillar file (``secret_note``), the entry's own path, which the
formula passes its state as ``secrets_pillar``. ``to_yaml`` writes the notes as YAML comments above the
pillar.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

import yaml

from salt_proxmox import registry
from salt_proxmox.entry import imported
from salt_proxmox.errors import DeclarationError, SaltProxmoxError
from salt_proxmox.export import guests, objects, policies
from salt_proxmox.export.objects import Exported, Found
from salt_proxmox.pve.constraints import vmid_number

#: The sections whose key is only a state id (the formula's ``ID_ONLY``): the key is made up here.
ID_ONLY = ("proxmox:acls", "proxmox:lxc")


@dataclass
class Filters:
    """What ``export`` keeps (see the module docstring); None: no filter."""

    families: frozenset[str] | None = None
    node: str | None = None
    pool: str | None = None
    vmid: int | None = None

    @classmethod
    def given(cls, family: object, node: object, pool: object, vmid: object) -> Filters:
        """The filters of ``proxmox.export``'s arguments (each None when not given): ``family`` as
        ``family_filter`` reads it, ``vmid`` a vmid. Raises DeclarationError naming the argument."""
        try:
            families = family_filter(family)
        except ValueError as exc:
            raise DeclarationError(str(exc)) from None
        return cls(
            families=families,
            node=str(node) if node is not None else None,
            pool=str(pool) if pool is not None else None,
            vmid=vmid_number(vmid) if vmid is not None else None,
        )

    def keeps(self, family: registry.Family, names: Mapping[str, object]) -> bool:
        """Whether the object ``names`` (its identity keys; a guest's ``pool`` too) passes."""
        if self.node is not None and names.get("node") != self.node:
            return False
        if self.vmid is not None and names.get("vmid") != self.vmid:
            return False
        if self.pool is not None:
            own = names.get("name") if family.name == "pool" else names.get("pool")
            if own != self.pool:
                return False
        return True


@dataclass
class Export:
    """The pillar (``{"proxmox": {...}, "openbao": {...}}``, sections present only when they hold an
    object) and the notes on what was left out or needs a hand."""

    pillar: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    count: int = 0


def exporter(family: registry.Family, kind: registry.Kind) -> Callable[..., Found]:
    """The export of ``kind`` of ``family``: ``(ctx, bao, keep) -> Found``. Raises LookupError for a
    family that supplies none (an ``ObjectSpec`` without ``export_names``, a lifecycle of its own
    without an exporter here)."""
    if kind.spec is not None:
        spec = kind.load()
        if spec.not_exported is not None:
            return lambda ctx, bao, keep: objects.Found(
                notes=[f"{spec.noun}s are not exported: {spec.not_exported}"]
            )
        if spec.export_names is None:
            raise LookupError(f"{family.name}: its ObjectSpec {kind.name} has no export_names")
        return lambda ctx, bao, keep: objects.export(ctx, spec, keep)
    if family.guest is not None:
        guest = registry.guests()[family.name]
        return lambda ctx, bao, keep: guests.export(ctx, guest, keep)
    if family.module == "openbao":
        return lambda ctx, bao, keep: policies.export(bao, keep)
    if kind.export is not None:
        return imported(kind.export)
    raise LookupError(f"{family.name}: no export (salt_proxmox.export.pillar.exporter)")


def _label(text: str) -> str:
    """A pillar key made of ``text``: letters, digits, ``.``, ``_`` and ``-``, runs of others ``-``."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "entry"


def _unique(section: Mapping, key: str, suffix: object) -> str:
    return key if key not in section else f"{key}-{suffix}"


#: The firewall's kinds by their key under ``proxmox:firewall`` (the formula's ``FIREWALL_KEYS``).
FIREWALL = {
    "firewall_options": "options",
    "firewall_ipset": "ipsets",
    "firewall_group": "groups",
    "firewall_rules": "rules",
}
#: The kinds whose objects live at a firewall scope, placed by it for the filters (``_keep``).
FIREWALL_SCOPED = frozenset({"firewall_alias", *FIREWALL})


def place(pillar: dict, family: registry.Family, kind: registry.Kind, found: Exported) -> tuple[str, ...]:
    """Put ``found`` where the formula reads ``family``'s entries (its ``section``); returns the entry's
    pillar path (``("proxmox", "sdn", "ipams", "netbox")``)."""
    top, _, section = family.section.partition(":")
    entry = dict(found.declaration)
    names = found.names
    if family.section == "proxmox:networks":
        node, name = str(entry.pop("node")), str(entry.pop("name"))
        nodes = pillar.setdefault(top, {}).setdefault(section, {})
        nodes.setdefault(node, {}).setdefault("interfaces", {})[name] = entry
        return (top, section, node, "interfaces", name)
    if family.section == "proxmox:sdn":
        plural = {
            "sdn_controller": "controllers",
            "sdn_ipam": "ipams",
            "sdn_dns": "dns",
            "sdn_zone": "zones",
            "sdn_vnet": "vnets",
            "sdn_subnet": "subnets",
        }[kind.name]
        entries = pillar.setdefault(top, {}).setdefault(section, {}).setdefault(plural, {})
        if kind.name == "sdn_subnet":
            cidr = str(entry.pop("name"))
            key = _label(f"{entry['vnet']}-{cidr}")
            entries[key] = {"cidr": cidr, **entry}
        else:
            key = str(entry.pop("name"))
            entries[key] = entry
        return (top, section, plural, key)
    if family.section == "proxmox:nodes":  # proxmox:nodes:<node>:<kind> (node_dns: dns), as the formula's
        from salt_proxmox.node import PILLAR_KEYS

        node, node_kind = str(entry.pop("name")), PILLAR_KEYS[kind.name]
        pillar.setdefault(top, {}).setdefault(section, {}).setdefault(node, {})[node_kind] = entry
        return (top, section, node, node_kind)
    if family.section == "proxmox:mappings":  # proxmox:mappings:<kind>:<id> (mapping_pci: pci)
        entries = pillar.setdefault(top, {}).setdefault(section, {})
        mapping_kind, key = kind.name.removeprefix("mapping_"), str(entry.pop("name"))
        entries.setdefault(mapping_kind, {})[key] = entry
        return (top, section, mapping_kind, key)
    if family.section == "proxmox:acme":  # proxmox:acme:plugins and :accounts, as the formula's _acme
        plural = {"acme_plugin": "plugins", "acme_account": "accounts"}[kind.name]
        key = str(entry.pop("name"))
        pillar.setdefault(top, {}).setdefault(section, {}).setdefault(plural, {})[key] = entry
        return (top, section, plural, key)
    if family.section == "proxmox:notifications":  # the formula's NOTIFICATION_KEYS
        plural = {"notification_endpoint": "endpoints", "notification_matcher": "matchers"}[kind.name]
        entries = pillar.setdefault(top, {}).setdefault(section, {}).setdefault(plural, {})
        key = str(entry.pop("name"))
        entries[key] = entry
        return (top, section, plural, key)
    if kind.name in FIREWALL:
        entries = pillar.setdefault(top, {}).setdefault(section, {}).setdefault(FIREWALL[kind.name], {})
        key = _named(entries, entry)
        entries[key] = entry
        return (top, section, FIREWALL[kind.name], key)
    entries = pillar.setdefault(top, {})
    for part in section.split(":"):  # proxmox:pbs:datastores nests one level deeper
        entries = entries.setdefault(part, {})
    if family.guest is not None:
        base = entry.get("hostname") or entry.get("name") or f"{family.name}{names['vmid']}"
        key = _unique(entries, _label(str(base)), names["vmid"])
    elif family.section in ID_ONLY:
        kind_key = next(key for key in ("user", "group", "token") if key in names)
        where = str(names["path"]).strip("/") or "root"
        base = _label(f"{names['role']}-{names[kind_key]}-on-{where}")
        key = _unique(entries, base, len(entries))
    else:
        key = _named(entries, entry)
    entries[key] = entry
    return (top, *section.split(":"), key)


def secret_note(label: str, path: tuple[str, ...], key: str) -> str:
    """The note on secret ``key`` of the object ``label`` exported at pillar ``path``: where its value
    goes (the entry's own path, which the formula gives its state as ``secrets_pillar``)."""
    return (
        f"{label}: {key} is a secret, so not exported; if it holds one, put its value at "
        f"{':'.join((*path, key))} in a secrets pillar file of its own (the state reads it there through "
        "secrets_pillar), never in this file"
    )


def _scoped(entry: object) -> bool:
    scope = entry.get("scope") if isinstance(entry, Mapping) else None
    return isinstance(scope, str) and scope != "cluster"


def _free(section: Mapping, key: str) -> str:
    """``key``, or the first of ``key-2``, ``key-3``, … that ``section`` does not hold."""
    found, count = key, 1
    while found in section:
        count += 1
        found = f"{key}-{count}"
    return found


def _named(entries: dict, entry: dict) -> str:
    """The key in ``entries`` of an entry named by its ``name``: the name (taken out of the entry), or,
    for a guest's own firewall IP set or alias (``scope: vm/<vmid>``), ``<scope>-<name>`` as a label with
    ``name`` kept in the entry, since the cluster and other guests may hold one of the same name. A
    label is only a key: one a cluster object's name (pve-firewall takes ``vm-510-gw`` as a name) or
    another label holds already gets a free one, and a guest's entry under a name a cluster object
    then claims moves to a free one, so no object overwrites another."""
    if _scoped(entry):
        return _free(entries, _label(f"{entry['scope']}-{entry['name']}"))
    name = str(entry.pop("name"))
    if _scoped(entries.get(name)):
        moved = _free(entries, name)
        entries[moved] = entries.pop(name)
    return name


def export(ctx, bao, filters: Filters, pbs: Mapping[str, object] | None = None) -> Export:
    """The pillar of every registered family ``filters`` keeps, read with ``ctx`` (a ``PveContext``)
    and ``bao`` (a ``BaoContext``, None when OpenBao is not configured: the policies are left out with a
    note); a family on a PBS target (``proxmox:pbs:…``) with each context of ``pbs`` (``{target name:
    context}``, its entries naming their ``target`` when there are several). A family that cannot be
    read is left out with a note naming why (a cluster without Ceph, a listing the read credential may
    not see), never silently. Raises LookupError for a family without an export."""
    result = Export()
    places: dict = {}
    for family in registry.FAMILIES:
        if filters.families is not None and family.name not in filters.families:
            continue
        on_pbs = family.section.startswith("proxmox:pbs:")
        if on_pbs and not pbs:
            result.notes.append(f"{family.name}: not exported, no proxmox:pbs_targets is configured")
            continue
        if on_pbs and (filters.node or filters.vmid or filters.pool):
            continue
        for kind in family.kinds:
            run = exporter(family, kind)
            if family.module == "openbao" and bao is None:
                result.notes.append(f"{family.name}: not exported, no openbao block is configured")
                continue
            if family.module == "openbao" and (filters.node or filters.vmid or filters.pool):
                continue
            for where, context in pbs.items() if on_pbs else [(None, ctx)]:
                try:
                    found = run(context, bao, _keep(filters, family, kind, context, places))
                except SaltProxmoxError as exc:
                    result.notes.append(f"{kind.name}: not exported: {exc}")
                    continue
                for item in found.objects:
                    if where is not None and len(pbs) > 1:
                        item.declaration["target"] = where
                    path = place(result.pillar, family, kind, item)
                    result.notes.extend(secret_note(item.label, path, key) for key in item.secrets)
                    result.count += 1
                result.notes.extend(found.notes)
    return result


def _keep(filters: Filters, family: registry.Family, kind: registry.Kind, ctx, places: dict) -> Callable:
    """``keep(names)`` of ``kind``'s export: ``filters.keeps``, a firewall object placed by its scope
    (``firewall.scope.export_place``) when a node, vmid or pool filter is given. ``places``: the guest
    scopes' places, read on first use (``firewall.scope.export_places``) and kept for the export."""
    if kind.name not in FIREWALL_SCOPED or not (filters.node or filters.vmid or filters.pool):
        return lambda names: filters.keeps(family, names)
    from salt_proxmox.firewall.scope import export_place, export_places

    def keep(names: Mapping[str, object]) -> bool:
        if "guests" not in places:
            places["guests"] = export_places(ctx)
        return filters.keeps(family, {**export_place(places["guests"], names), **names})

    return keep


def family_filter(raw: object) -> frozenset[str] | None:
    """``family=`` as the set of registry names (a comma-separated text or a list); None when not
    given. Raises ValueError naming the registered families for an unknown one."""
    if raw in (None, ""):
        return None
    names = raw.split(",") if isinstance(raw, str) else list(raw) if isinstance(raw, Iterable) else [raw]
    wanted = frozenset(str(name).strip() for name in names if str(name).strip())
    known = {family.name for family in registry.FAMILIES}
    unknown = sorted(wanted - known)
    if unknown:
        raise ValueError(f"family: no such family {', '.join(unknown)} (the families: {', '.join(known)})")
    return wanted


def to_yaml(done: Export, header: str) -> str:
    """The pillar file: ``header`` and each note as YAML comments, then the pillar (PyYAML's safe
    dumper, block style, in the formula's section order)."""
    lines = [f"# {line}" for line in header.splitlines()]
    lines += [f"# NOTE: {note}" for note in done.notes]
    body = yaml.safe_dump(done.pillar, default_flow_style=False, sort_keys=False, allow_unicode=True)
    return "\n".join(lines) + "\n" + (body if done.pillar else "{}\n")


def write_file(path: object, done: Export, target: str) -> None:
    """Write ``done`` as a new pillar file at ``path`` (``to_yaml``, mode 0600: it may name secrets'
    places), saying which target it came from. Raises SaltProxmoxError when the file exists or cannot
    be created; an existing file is never overwritten."""
    header = (
        f"Exported by proxmox.export from target {target}: {done.count} object(s), each with adopt: true.\n"
        "Secrets are not exported: put them in a secrets pillar file of their own."
    )
    try:
        fd = os.open(str(path), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        raise SaltProxmoxError(f"path {path}: cannot be created ({exc.strerror})") from None
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(to_yaml(done, header))
