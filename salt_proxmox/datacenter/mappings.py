"""Resource mappings (``proxmox_mapping``, kinds ``pci``, ``usb``, ``dir``): cluster-wide names for a host
device or directory on each node, which a VM names (``hostpciN: mapping=<id>``, ``usbN: mapping=<id>``,
``virtiofsN: <id>``) instead of the host's address.

Source: pve-manager ``PVE/API2/Cluster/Mapping/{PCI,USB,Dir}.pm`` (``index``, ``get``, ``create``,
``update``, ``delete``) over pve-guest-common ``src/PVE/Mapping/{PCI,USB,Dir}.pm`` (each kind's section
options and its ``map`` entry format ``$map_fmt``) and pve-common ``SectionConfig.pm``.

- Read ``GET /cluster/mapping/<kind>/{id}`` (Mapping.Audit, Mapping.Use or Mapping.Modify on
  ``/mapping/<kind>/<id>``): the section (``type``, ``description``, ``map``, PCI's ``mdev`` and
  ``live-migration-capable``) and the digest of the kind's whole file. Absence is exactly HTTP 500
  ``mapping '<id>' not found``. The index's ``checks``/``errors`` (``check-node``: the node's hardware
  against the entries) are PVE's diagnosis, never compared.
- Create ``POST /cluster/mapping/<kind>`` with ``id`` (Mapping.Modify on ``/mapping/<kind>``); update
  ``PUT …/{id}`` with the digest the decision was read with (``assert_if_modified``; Mapping.Modify on
  ``/mapping/<kind>/<id>``), ``delete`` for a flag or description going back to PVE's default; delete
  ``DELETE …/{id}`` (Mapping.Modify on ``/mapping/<kind>``). ``map`` is required (``options``: ``map =>
  {}``), so every write carries the whole list and it can never be deleted.
- ``map`` entries are property strings (``$map_fmt``), compared as a set, each entry by meaning: its keys
  in any order, ``iommugroup`` as a number, and the vendor:device ``id``/``subsystem-id`` (and a PCI
  ``path``) in lowercase hex, as the node's sysfs spells them: ``PCI.pm``/``USB.pm`` ``assert_valid``
  compare the entry with sysfs's values by ``ne``, so an uppercase id is reported invalid at start.
  A declared entry in uppercase is written lowercase; a live uppercase one differs.
- A PCI ``path`` is ``[a-f0-9]{4,}:[a-f0-9]{2}:[a-f0-9]{2}(.[a-f0-9])?`` (``;``-separated, the first
  available chosen at start): the domain is required, where a ``hostpciN``'s ``host=`` may leave it
  out. A ``dir`` path is ``pve_verify_path`` (absolute, none of ``;,=()`` after the ``/``).
- A ``dir`` mapping takes one entry per node (``Dir.pm`` ``assert_valid_map_list``: ``Node '<node>' is
  specified <n> times.``) and a ``usb`` mapping needs one too: qemu-server ``PVE/QemuServer/USB.pm``
  refuses the VM's start (``More than one USB mapping per host not supported``).
- ``dir`` mappings (for virtiofs) came with pve-manager 8.3.6 (``api: add resource map api endpoints
  for directories``; PVE 8.4), ``live-migration-capable`` with pve-guest-common 5.1.7: an older cluster
  refuses them (``GET /version``; the package version of each node on PVE 8).
- PVE deletes a mapping a VM still names without a word (``delete``), and the VM then fails to start
  (``PCI device mapping not found for '<id>'``): a destroy is refused at plan naming each VM and key
  (every VM's config read) and each VM state of this run declaring it (``mapping_users``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from salt_proxmox.errors import DeclarationError, Refused, shown
from salt_proxmox.guest.absence import index_rows
from salt_proxmox.pve.client import api_path
from salt_proxmox.pve.constraints import NODE, Endpoint, Rule
from salt_proxmox.pve.facts import package_at_least, release, version_tuple
from salt_proxmox.simple.fields import Field
from salt_proxmox.simple.spec import Call, Declared, ObjectSpec, exact_message, export_by, identify_by_name
from salt_proxmox.wire.propstring import pairs

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.run.context import PveContext

KINDS = ("pci", "usb", "dir")
#: pve-common ``JSONSchema.pm`` ``$CONFIGID_RE`` (``pve-configid``, each kind's ``id``).
CONFIGID = re.compile(r"^[a-z][a-z0-9_-]+\Z", re.IGNORECASE)
_PCI = r"[a-f0-9]{4,}:[a-f0-9]{2}:[a-f0-9]{2}(?:\.[a-f0-9])?"
#: ``Mapping/PCI.pm`` ``$map_fmt`` ``path``; JSONSchema anchors a pattern at both ends.
PCI_PATH = re.compile(rf"^(?:{_PCI};)*{_PCI}\Z")
#: ``Mapping/PCI.pm`` and ``USB.pm`` ``$map_fmt`` ``id`` and ``subsystem-id``.
VENDOR_DEVICE = re.compile(r"^[0-9A-Fa-f]{4}:[0-9A-Fa-f]{4}\Z")
#: ``Mapping/USB.pm`` ``$map_fmt`` ``path`` (bus-port[.port...]).
USB_PATH = re.compile(r"^(\d+)\-(\d+(\.\d+)*)\Z")
#: ``Mapping/Dir.pm`` ``pve_verify_path`` (unanchored at the end, as PVE's).
DIR_PATH = re.compile(r"^/[^;,=\(\)]+")
#: pve-manager 8.3.6 brought ``/cluster/mapping/dir``; pve-guest-common 5.1.7 ``live-migration-capable``.
DIR_SINCE = (8, 3, 6)
LIVE_MIGRATION_SINCE = ("libpve-guest-common-perl", (5, 1, 7))


def _text_entry(text: str) -> str | None:
    if len(text) > 4096:
        return "at most 4096 characters"
    return "a property string value holds no ',' or '\"'" if "," in text or '"' in text else None


def _node(text: str) -> str | None:
    return None if NODE.match(text) and len(text) <= 63 else f"invalid format - {text} is not a node name"


def _pattern(regex: re.Pattern, what: str):
    return lambda text: None if regex.match(text) else f"value does not match the regex pattern ({what})"


def _dir_path(text: str) -> str | None:
    if DIR_PATH.match(text) and "," not in text and "=" not in text:
        return None
    return (
        "Value does not look like a valid absolute path. These symbols are currently not allowed in path: "
        ";,=() (Mapping/Dir.pm pve_verify_path)"
    )


#: Each kind's ``$map_fmt``: ``{key: (required, check, lowercase)}``.
ENTRY: dict[str, dict[str, tuple[bool, object, bool]]] = {
    "pci": {
        "node": (True, _node, False),
        "path": (True, _pattern(PCI_PATH, "0000:01:00.0, the domain included; ';' between paths"), True),
        "id": (True, _pattern(VENDOR_DEVICE, "vendor:device, 4 hex digits each"), True),
        "subsystem-id": (False, _pattern(VENDOR_DEVICE, "vendor:device, 4 hex digits each"), True),
        "iommugroup": (False, None, False),
        "description": (False, _text_entry, False),
    },
    "usb": {
        "node": (True, _node, False),
        "id": (True, _pattern(VENDOR_DEVICE, "vendor:device, 4 hex digits each"), True),
        "path": (False, _pattern(USB_PATH, "bus-port, e.g. 1-2.3"), False),
        "description": (False, _text_entry, False),
    },
    "dir": {"node": (True, _node, False), "path": (True, _dir_path, False)},
}
#: Each kind's section options besides ``map`` (``options``), flags at PVE's default 0.
FIELDS: dict[str, dict[str, Field]] = {
    "pci": {
        "description": Field(check=lambda t: "at most 4096 characters" if len(t) > 4096 else None),
        "mdev": Field("flag"),
        "live-migration-capable": Field("flag"),
    },
    "usb": {"description": Field(check=lambda t: "at most 4096 characters" if len(t) > 4096 else None)},
    "dir": {"description": Field(check=lambda t: "at most 4096 characters" if len(t) > 4096 else None)},
}
#: Each kind's Perl module name (``Mapping/PCI.pm``, ``USB.pm``, ``Dir.pm``) and its schema's source.
PM = {"pci": "PCI.pm", "usb": "USB.pm", "dir": "Dir.pm"}
SOURCES = {kind: f"pve-guest-common src/PVE/Mapping/{PM[kind]}" for kind in KINDS}


#: What a VM naming a missing mapping meets at start (qemu-server ``PVE/QemuServer/PCI.pm``, ``USB.pm``
#: and pve-guest-common ``Mapping/Dir.pm`` ``find_on_current_node``).
START = {
    "pci": "`PCI device mapping not found for '<id>'`",
    "usb": "`USB device mapping not found for '<id>'`",
    "dir": "`Directory ID <id> does not exist.`",
}


def _entry_items(value: object) -> list[tuple[str, object]]:
    if isinstance(value, Mapping):
        return list(value.items())
    if isinstance(value, str):
        return list(pairs(value))
    raise ValueError(f"expected a property string or a mapping, got {shown(value)}")


def canonical_entry(kind: str, value: object, declared: bool = True) -> str:
    """One ``map`` entry as compared and sent: ``node=<node>`` first, then its keys sorted, a declared
    hex value lowercased (module docstring). ``declared`` False (a live entry) keeps PVE's case.
    Raises ValueError naming the key and rule."""
    fmt, found = ENTRY[kind], {}
    for key, raw in _entry_items(value):
        if key not in fmt:
            raise ValueError(f"{key}: not a key of a {kind} mapping entry ({', '.join(fmt)})")
        if raw is None or raw == "":
            continue
        if isinstance(raw, bool) or not isinstance(raw, (str, int)):
            raise ValueError(f"{key}: expected text, got {shown(raw)}")
        text = str(raw).strip()
        _required, check, lower = fmt[key]
        if key == "iommugroup":
            if not re.fullmatch(r"[0-9]+", text):
                raise ValueError(f"iommugroup: expected an integer, got {shown(raw)}")
            text = str(int(text))
        if lower and declared:
            text = text.lower()
        problem = check(text) if callable(check) else None
        if problem:
            raise ValueError(f"{key}: {problem}")
        found[str(key)] = text
    missing = [key for key, (required, _check, _lower) in fmt.items() if required and key not in found]
    if missing:
        raise ValueError(
            f"{', '.join(missing)}: required in a {kind} mapping entry ({SOURCES[kind]} $map_fmt)"
        )
    node = found.pop("node")
    return ",".join([f"node={node}", *(f"{key}={found[key]}" for key in sorted(found))])


def entry_node(entry: str) -> str:
    """The node a canonical entry names."""
    return entry.split(",", 1)[0].removeprefix("node=")


def entry_option(entry: str, key: str) -> str | None:
    """One key of an entry (``path``, ``id``), or None."""
    return dict(pairs(entry)).get(key)


def _map(kind: str, value: object) -> list[str]:
    """The declared ``map`` as a sorted list of canonical entries. Raises DeclarationError."""
    if isinstance(value, (str, Mapping)):
        value = [value]
    if not isinstance(value, list) or not value:
        raise DeclarationError(f"map: expected a non-empty list of entries (node, ...), got {shown(value)}")
    problems, entries = [], []
    for at, item in enumerate(value):
        try:
            entries.append(canonical_entry(kind, item))
        except ValueError as exc:
            problems.append(f"map[{at}]: {exc}")
    if problems:
        raise DeclarationError(problems)
    twice = sorted({entry for entry in entries if entries.count(entry) > 1})
    if twice:
        problems.append(f"map: {', '.join(twice)} is declared more than once (the entries are a set)")
    if kind in ("dir", "usb"):
        nodes = [entry_node(entry) for entry in entries]
        for node in sorted({node for node in nodes if nodes.count(node) > 1}):
            why = (
                f"PVE: `Node '{node}' is specified {nodes.count(node)} times.` (Mapping/Dir.pm "
                "assert_valid_map_list)"
                if kind == "dir"
                else "a VM naming it would not start: `More than one USB mapping per host not supported` "
                "(qemu-server PVE/QemuServer/USB.pm)"
            )
            problems.append(
                f"map: node {node} has more than one entry, and a {kind} mapping takes one; {why}"
            )
    if problems:
        raise DeclarationError(problems)
    return sorted(entries)


def _id_problem(name: str) -> str | None:
    return None if CONFIGID.match(name) else f"invalid configuration ID '{name}' (pve-configid)"


def _identify(kind: str):
    def identify(state_id: str, target: str, name: object = None, **extra: object) -> Declared:
        """A ``kind`` mapping by its id (``name``). Raises DeclarationError for an unknown key or a bad
        id."""
        found = identify_by_name(
            state_id,
            target,
            name,
            extra,
            noun=f"{kind} mapping",
            has=f"name, map, {', '.join(FIELDS[kind])}",
            check=_id_problem,
        )
        return Declared(
            state_id, target, identity=found.identity, label=f"{kind} mapping {name}", names=found.names
        )

    return identify


def _declare(kind: str):
    identify = _identify(kind)

    def declare(
        state_id: str, target: str, name: object = None, map: object = None, adopt: object = False, **options
    ) -> Declared:
        """A checked mapping declaration: ``name`` (the id), ``map`` (a list of entries, each a property
        string or a mapping of the kind's ``$map_fmt`` keys), and the kind's options (``description``; PCI's
        ``mdev``, ``live-migration-capable``). Raises DeclarationError naming each bad key and its rule."""
        probe = identify(state_id, target, name=name)
        problems, values = [], {}
        try:
            values["map"] = _map(kind, map)
        except DeclarationError as exc:
            problems.extend(exc.problems)
        for key, value in options.items():
            field = FIELDS[kind].get(key)
            if field is None:
                problems.append(
                    f"{key}: not an option of a {kind} mapping ({SOURCES[kind]} options: map, "
                    f"{', '.join(FIELDS[kind])})"
                )
                continue
            try:
                values[key] = field.canonical(value)
            except ValueError as exc:
                problems.append(f"{key}: {exc}")
        if problems:
            raise DeclarationError(problems)
        found = probe.declaring(values, adopt)
        # A description is text a human wrote: compared, never kept in the rows (docs/design.md §6).
        return replace(found, unstored=frozenset({"description"} & set(values)))

    return declare


def _parse(kind: str):
    def parse(data: object, decl: Declared) -> dict:
        """``GET /cluster/mapping/<kind>/{id}`` → ``map`` (canonical entries, sorted; an entry no
        declaration can spell kept as PVE's text), each option (PVE's default where unset), ``digest``.
        Raises ValueError for another shape."""
        if not isinstance(data, Mapping) or not isinstance(data.get("map", []), (list, str)):
            raise ValueError("expected the mapping's section with a list of map entries")
        raw = data.get("map", [])
        entries = []
        for item in [raw] if isinstance(raw, str) else raw:
            try:
                entries.append(canonical_entry(kind, item, declared=False))
            except ValueError:
                entries.append(str(item))
        found: dict[str, object] = {"map": sorted(entries)}
        for key, field in FIELDS[kind].items():
            try:
                found[key] = field.canonical(data.get(key))
            except ValueError:
                found[key] = str(data.get(key))
        found["digest"] = str(data.get("digest") or "")
        return found

    return parse


def _path(kind: str, decl: Declared) -> str:
    return api_path("cluster", "mapping", kind, decl.names["name"])


def _wire(kind: str, key: str, value: object) -> object:
    return list(value) if key == "map" else FIELDS[kind][key].wire(value)


def _create(kind: str):
    def create(decl: Declared) -> Call:
        """``POST /cluster/mapping/<kind>``: ``id``, ``map`` (every entry) and each declared option but a
        default (a flag at 0, an empty description), as JSON (``map`` is an array)."""
        form: dict = {"id": decl.names["name"]}
        form.update(
            {key: _wire(kind, key, value) for key, value in decl.values.items() if value not in ("", 0)}
        )
        return Call("POST", api_path("cluster", "mapping", kind), form=form, json=True)

    return create


def _update(kind: str):
    def update(decl: Declared, live: Mapping[str, object]) -> Call | None:
        """``PUT /cluster/mapping/<kind>/{id}``: the whole ``map`` and each declared option that differs
        (``delete`` for one going back to PVE's default), with the digest the decision was read with. None
        when nothing differs."""
        changed = {key: value for key, value in decl.values.items() if live.get(key) != value}
        if not changed:
            return None
        form: dict = {"map": list(decl.values["map"])}
        gone = sorted(key for key, value in changed.items() if key != "map" and value in ("", 0))
        form.update(
            {key: _wire(kind, key, v) for key, v in changed.items() if key != "map" and key not in gone}
        )
        if gone:
            form["delete"] = ",".join(gone)
        if live.get("digest"):
            form["digest"] = str(live["digest"])
        return Call("PUT", _path(kind, decl), form=form, json=True)

    return update


#: A device key and the mapping kind it names, with the property string's default key.
DEVICE = re.compile(r"^(hostpci|usb|virtiofs)[0-9]+\Z")
_KINDS = {
    "hostpci": ("pci", "host", "mapping"),
    "usb": ("usb", "host", "mapping"),
    "virtiofs": ("dir", "dirid", "dirid"),
}


def named_mapping(key: str, value: object) -> tuple[str, str] | None:
    """``(kind, id)`` of the mapping a VM config key's value names (``hostpci0: mapping=gpu`` →
    ``('pci', 'gpu')``), or None (not a device key, a raw ``host=``, a value that is no property string)."""
    match = DEVICE.match(key)
    if match is None or not isinstance(value, str):
        return None
    kind, default, option = _KINDS[match.group(1)]
    try:
        found = dict(pairs(value, default)).get(option)
    except ValueError:
        return None
    return (kind, found) if found else None


def declared_users(ctx: PveContext, kind: str, mapping: str) -> list[str]:
    """``<state id> (<key>)`` for each device key a VM state of this run (``RunMemo.chunks``) declares
    naming ``kind`` mapping ``mapping``, on this target."""
    run = ctx.memo.chunks
    if run is None:
        return []
    found = []
    for chunk in run.declared("proxmox_qemu", ctx.target.name, ctx.target.name):
        if chunk.fun != "present":
            continue
        for key, value in sorted(chunk.args.items()):
            if named_mapping(str(key), value) == (kind, mapping):
                found.append(f"{chunk.state_id} ({key})")
    return found


def mapping_users(ctx: PveContext, kind: str, mapping: str) -> list[str]:
    """``VM <vmid> <key>`` for each device key of a VM the read credential can see (the guest index, then
    each VM's config) that names ``kind`` mapping ``mapping``: ``hostpciN``/``usbN`` ``mapping=<id>``,
    ``virtiofsN`` ``<id>``/``dirid=<id>`` (qemu-server ``PVE/QemuServer/PCI.pm``, ``USB.pm``,
    ``Virtiofs.pm``). Containers take no mapping. Raises what the reads raise."""
    credential = ctx.broker.read()
    found = []
    for row in index_rows(ctx, credential):
        if row["type"] != "qemu":
            continue
        config = ctx.client.request(
            "GET", f"{api_path('nodes', row['node'], 'qemu', row['vmid'])}/config", credential
        )
        for key, value in sorted((config or {}).items()):
            if named_mapping(str(key), value) == (kind, mapping):
                found.append(f"VM {row['vmid']} {key}")
    return found


def _dir_missing(ctx: PveContext) -> str | None:
    """Why the cluster has no directory mappings (a pve-manager before 8.3.6, ``GET /version``), or None."""
    cluster = release(ctx)
    have = version_tuple(cluster.version) or (cluster.major, cluster.minor)
    if cluster.major == 8 and have < DIR_SINCE:
        return (
            f"the cluster runs pve-manager {cluster.version or cluster.release}, which has no directory "
            "mappings (pve-manager 8.3.6 added PVE/API2/Cluster/Mapping/Dir.pm; PVE answers 501 `Method "
            "'POST /cluster/mapping/dir' not implemented`)"
        )
    return None


def _dir_on_cluster(ctx: PveContext, decl: Declared) -> ObjectSpec:
    """``for_cluster`` of ``dir``: itself, on a cluster that has directory mappings. Raises Refused before
    the first read on an older one (``_dir_missing``), which answers 501."""
    why = _dir_missing(ctx)
    if why:
        raise Refused(f"{decl.label}: {why}. Upgrade to PVE 8.4 or later. Nothing was written.")
    return DIR


def _listings(kind: str):
    def listings(ctx: PveContext) -> list[tuple[Call, Mapping[str, object]]]:
        """``GET /cluster/mapping/<kind>``; none for ``dir`` on a cluster without directory mappings."""
        if kind == "dir" and _dir_missing(ctx):
            return []
        return [(Call("GET", api_path("cluster", "mapping", kind)), {})]

    return listings


def _cluster_has(ctx: PveContext, kind: str, decl: Declared) -> list[str]:
    if kind == "pci" and decl.values.get("live-migration-capable") and release(ctx).major == 8:
        package, since = LIVE_MIGRATION_SINCE
        ok, why = package_at_least(ctx, package, since)
        if not ok:
            return [
                f"live-migration-capable: {why}; {package} 5.1.7 added it to Mapping/PCI.pm, and an "
                "older one refuses it (`property is not defined in schema`). Upgrade the nodes, or leave "
                "it out."
            ]
    return []


def _refusals(kind: str):
    def refusals(
        ctx: PveContext, decl: Declared, action: str, live: Mapping[str, object] | None
    ) -> list[str]:
        """A kind or option the cluster's release lacks; a destroy while a VM, or a VM state of this run,
        names the mapping (module docstring)."""
        if action != "delete":
            return _cluster_has(ctx, kind, decl)
        name, found = decl.names["name"], []
        users = mapping_users(ctx, kind, name)
        if users:
            found.append(
                f"{decl.label}: {', '.join(users)} name it; PVE deletes a mapping in use without a "
                f"word (pve-manager API2/Cluster/Mapping/{PM[kind]} delete) and the VM then fails to start "
                f"({START[kind]}). Remove the device from those VMs first, then run again."
            )
        declared = declared_users(ctx, kind, name)
        if declared:
            found.append(
                f"{decl.label}: VM states of this run name it ({', '.join(declared)}); their VMs would "
                "not start without it. Take it out of those declarations first, then run again."
            )
        return found

    return refusals


def _export_values(kind: str):
    def export_values(live: Mapping[str, object], probe: Declared) -> dict:
        """``proxmox.export``: the map and each option other than PVE's default."""
        return {
            key: value
            for key, value in live.items()
            if key == "map" or (key in FIELDS[kind] and value not in ("", 0))
        }

    return export_values


def _rule(kind: str):
    def rule(key: str) -> Rule | None:
        if key in ("id", "map"):
            return Rule()
        found = FIELDS[kind].get(key)
        return (
            Rule("boolean") if found is not None and found.kind == "flag" else found.rule() if found else None
        )

    return rule


def _spec(kind: str) -> ObjectSpec:
    return ObjectSpec(
        family=f"mapping_{kind}",
        noun=f"{kind} mapping",
        declare=_declare(kind),
        identify=_identify(kind),
        read=lambda decl: Call("GET", _path(kind, decl)),
        absence=f"HTTP 500 \"mapping '<id>' not found\" (pve-manager API2/Cluster/Mapping/{PM[kind]} get)",
        is_absent=exact_message(500, "mapping '{name}' not found"),
        parse=_parse(kind),
        create=_create(kind),
        create_endpoint=Endpoint(f"POST /cluster/mapping/{kind}", ("id", "map"), _rule(kind)),
        update=_update(kind),
        update_endpoint=Endpoint(f"PUT /cluster/mapping/{kind}/{{id}}", (), _rule(kind)),
        delete=lambda decl, live: Call("DELETE", _path(kind, decl)),
        refusals=_refusals(kind),
        # GET /cluster/mapping/<kind> (Mapping/<KIND>.pm index) names each mapping by ``id``.
        export_names=export_by("id"),
        export_listings=_listings(kind),
        export_values=_export_values(kind),
        live_only=("digest",),
        for_cluster=_dir_on_cluster if kind == "dir" else None,
    )


PCI = _spec("pci")
USB = _spec("usb")
DIR = _spec("dir")
#: ``{kind: ObjectSpec}``.
SPECS = {"pci": PCI, "usb": USB, "dir": DIR}
