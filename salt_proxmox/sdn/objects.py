"""SDN zones, vnets and subnets (``proxmox_sdn.zone``/``vnet``/``subnet``), as simple objects.

Sources: pve-network ``src/PVE/API2/Network/SDN/Zones.pm``, ``Vnets.pm``, ``Subnets.pm`` (the API),
``src/PVE/Network/SDN/Zones/{Simple,Vlan,Vxlan,Evpn}Plugin.pm`` (each zone type's ``options``),
``src/PVE/Network/SDN/Zones/Plugin.pm`` (``pve-sdn-zone-id``), ``VnetPlugin.pm``
(``pve-sdn-vnet-id``, the vnet keys), ``SubnetPlugin.pm`` (the subnet keys, ``dhcp-range``) and
``src/PVE/Network/SDN.pm`` (``encode_value``: node lists compared sorted and comma-joined).

What PVE does, and so how these families judge:

- Every write changes the **pending** configuration (``/etc/pve/sdn/*.cfg``); nothing runs until
  ``PUT /cluster/sdn`` commits it (``salt_proxmox.sdn.apply``). The object judged here is the
  configuration as written (``GET`` without ``pending`` or ``running``).
- **zone**: id ``[a-zA-Z][a-zA-Z0-9]*[a-zA-Z0-9]``, 2-8 characters. ``GET /cluster/sdn/zones/{zone}``
  wants SDN.Allocate, so the zone is read from the listing ``GET /cluster/sdn/zones`` (SDN.Audit),
  which hides zones the caller may not audit: a zone it lacks is absent only when the read
  credential holds SDN.Audit or SDN.Allocate on ``/sdn/zones/<zone>`` (``GET /access/permissions``).
  Each type takes its plugin's ``options``; ``vlan`` needs ``bridge``, ``evpn`` ``controller``
  and ``vrf-vxlan``. The type cannot change (``update`` takes none).
- **vnet**: id ``[a-zA-Z][a-zA-Z0-9]*[a-zA-Z0-9]``, 2-8 characters; ``zone``, ``tag``, ``alias``,
  ``vlanaware``, ``isolate-ports``. ``GET /cluster/sdn/vnets/{vnet}`` answers HTTP 500
  ``sdn vnet '<id>' does not exist`` for a missing one.
- **subnet**: keyed by its CIDR within a vnet; PVE's id is ``<zone>-<address>-<prefix>``. A prefix
  length under 8 is refused as PVE refuses it; host bits are kept, as PVE keeps them. Read from
  ``GET /cluster/sdn/vnets/{vnet}/subnets``, complete once the vnet access check passed; a missing
  vnet (HTTP 500 ``sdn vnet '<id>' does not exist``) holds no subnet. ``gateway``, ``snat``,
  ``dnszoneprefix``, ``dhcp-dns-server`` and ``dhcp-range`` (a list of
  ``start-address=<ip>,end-address=<ip>``, answered as objects, compared as a set). Sent as JSON,
  so the range list arrives as an array.
- Updates carry the section config's ``digest`` (zones, vnets, subnets: ``assert_if_modified``),
  read from the same answer that was judged. Deletes carry none: the ``delete`` methods' schemas
  have no ``digest`` (``additionalProperties => 0``), so PVE would refuse one with HTTP 400; the
  read-back proves the object gone.
- Writes carry no ``lock-token``, as PVE's own GUI sends none: every SDN write already runs under
  the cluster's ``sdn`` domain lock (``lock_sdn_config``/``lock_sdn_domain``), and the global lock
  (``POST /cluster/sdn/lock``, "api: add lock-token parameter to all api calls") is for a client's
  transaction of several writes. Taken per write it would guard nothing more, and a minion that died
  between the lock and its release would leave every SDN write of the cluster refused. While another
  client holds it, PVE refuses the write ("invalid lock token provided!"), and the state names that
  lock and how to release it (``salt_proxmox.pve.errors``). The commit does take it
  (``salt_proxmox.sdn.apply``).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from salt_proxmox.access.privileges import listing_privileges
from salt_proxmox.errors import DeclarationError, Refused, shown
from salt_proxmox.pve.client import api_path
from salt_proxmox.pve.constraints import NODE, Endpoint, Rule, check_cidr
from salt_proxmox.pve.errors import PveError
from salt_proxmox.pve.listing import rows_of
from salt_proxmox.sdn import rules
from salt_proxmox.simple.fields import Field, canonical_values, deleted_keys, form_values, live_values
from salt_proxmox.simple.spec import Call, Declared, ObjectSpec, audited_listing, exact_message, export_by

if TYPE_CHECKING:  # pragma: no cover
    pass

#: ``pve-sdn-zone-id`` and ``pve-sdn-vnet-id``.
SDN_ID = re.compile(r"^[a-zA-Z][a-zA-Z0-9]*[a-zA-Z0-9]$", re.ASCII)
SDN_ID_MAX = 8


def check_sdn_id(value: str) -> str | None:
    """None for a zone or vnet id PVE takes, else the reason."""
    if not SDN_ID.match(value) or len(value) > SDN_ID_MAX:
        return f"{shown(value)} is not an SDN id (a letter, then letters and digits, 2-8 characters)"
    return None


def _check_nodes(value: str) -> str | None:
    bad = [node for node in value.split(",") if not NODE.match(node)]
    return f"not node names: {', '.join(bad)}" if bad else None


def _check_ips(value: str) -> str | None:
    for part in value.split(","):
        try:
            ipaddress.ip_address(part)
        except ValueError:
            return f"{shown(part)} is not an IP address"
    return None


_NODES = Field("set", separator=",", check=_check_nodes)
_COMMON = {
    "nodes": _NODES,
    "mtu": Field("integer", minimum=0),
    "dns": Field(),
    "reversedns": Field(),
    "dnszone": Field(),
    "ipam": Field(),
}
#: Each zone type's ``options`` (its plugin), and the keys it requires.
ZONE_FIELDS: dict[str, dict[str, Field]] = {
    "simple": {**_COMMON, "dhcp": Field("choice", choices=("dnsmasq",))},
    "vlan": {**_COMMON, "bridge": Field(), "bridge-disable-mac-learning": Field("flag")},
    "vxlan": {
        **_COMMON,
        "peers": Field("set", separator=",", check=_check_ips),
        "vxlan-port": Field("integer", minimum=1, maximum=65536),
        "fabric": Field(),
    },
    "evpn": {
        **_COMMON,
        "controller": Field(),
        "vrf-vxlan": Field("integer", minimum=1, maximum=16777215),
        "exitnodes": _NODES,
        "exitnodes-primary": Field(check=lambda v: None if NODE.match(v) else "not a node name"),
        "exitnodes-local-routing": Field("flag"),
        "advertise-subnets": Field("flag"),
        "disable-arp-nd-suppression": Field("flag"),
        "bridge-disable-mac-learning": Field("flag"),
        "rt-import": Field(),
        "vxlan-port": Field("integer", minimum=1, maximum=65536),
        "mac": Field(),
    },
}
ZONE_REQUIRED = {"vlan": ("bridge",), "evpn": ("controller", "vrf-vxlan")}
VNET_FIELDS: dict[str, Field] = {
    "tag": Field("integer", minimum=1, maximum=16777215),
    "alias": Field(
        check=lambda v: None if len(v) <= 256 and "\n" not in v else "at most 256 characters, one line"
    ),
    "vlanaware": Field("flag"),
    "isolate-ports": Field("flag"),
}


def _range(value: object) -> str:
    """One ``dhcp-range`` as ``start-address=<ip>,end-address=<ip>`` (addresses canonical), from that
    text, a ``{start-address, end-address}`` mapping (PVE's answer) or ``{start, end}``."""
    if isinstance(value, Mapping):
        start = value.get("start-address", value.get("start"))
        end = value.get("end-address", value.get("end"))
    elif isinstance(value, str):
        parts = dict(part.partition("=")[::2] for part in value.split(","))
        start, end = parts.get("start-address"), parts.get("end-address")
    else:
        raise ValueError(f"expected start-address=<ip>,end-address=<ip>, got {shown(value)}")
    try:
        first, last = ipaddress.ip_address(str(start)), ipaddress.ip_address(str(end))
    except ValueError:
        raise ValueError(f"{shown(value)}: start-address and end-address must be IP addresses") from None
    if first.version != last.version or first > last:
        raise ValueError(f"start-address {first} must be smaller than end-address {last}")
    return f"start-address={first.compressed},end-address={last.compressed}"


def canonical_ranges(value: object) -> list[str]:
    """``dhcp-range`` as a sorted list of canonical ranges. Raises ValueError."""
    if value is None or value == "":
        return []
    items = value if isinstance(value, list) else [value]
    return sorted({_range(item) for item in items})


SUBNET_FIELDS: dict[str, Field] = {
    "gateway": Field("address"),
    "snat": Field("flag"),
    "dnszoneprefix": Field(),
    "dhcp-dns-server": Field("address"),
}


def _extra_problem(extra: Mapping[str, object], noun: str, has: str) -> list[str]:
    return [f"unknown key(s) {', '.join(sorted(extra))}: a {noun} has {has}"] if extra else []


def _id(key: str, value: object, noun: str) -> tuple[str, list[str]]:
    if not isinstance(value, str):
        return "", [f"{key}: the {noun} id is required (text)"]
    problem = check_sdn_id(value)
    return value, [f"{key}: {problem}"] if problem else []


# ------------------------------------------------------------------------------------------- zones


def _by_id(noun: str, has: str):
    """The ``identify`` of a family keyed by one SDN id (``name``): a zone, a vnet. The function
    raises DeclarationError for an unknown key or an id PVE does not take."""

    def identify(state_id: str, target: str, name: object = None, **extra: object) -> Declared:
        ident, problems = _id("name", name, noun)
        problems = _extra_problem(extra, noun, has) + problems
        if problems:
            raise DeclarationError(problems)
        return Declared(state_id, target, identity=ident, label=f"SDN {noun} {ident}", names={"name": ident})

    return identify


zone_identify = _by_id("zone", "name, type and its type's keys")


def zone_declare(
    state_id: str,
    target: str,
    name: object = None,
    type: object = None,
    adopt: object = False,
    **config: object,
) -> Declared:
    """A checked zone declaration: ``name``, ``type`` (simple, vlan, vxlan, evpn) and that type's
    keys, ``adopt``. Raises DeclarationError naming every key and rule."""
    probe = zone_identify(state_id, target, name=name)
    fields = ZONE_FIELDS.get(type) if isinstance(type, str) else None
    if fields is None:
        raise DeclarationError(f"type: expected one of {', '.join(ZONE_FIELDS)}, got {shown(type)}")
    values = canonical_values(fields, config)
    missing = [key for key in ZONE_REQUIRED.get(type, ()) if values.get(key) in (None, "")]
    if missing:
        raise DeclarationError([f"{key}: a {type} zone needs it" for key in missing])
    return probe.declaring({"type": type, **values}, adopt)


def zone_parse(data: object, decl: Declared) -> dict | None:
    """The zones listing → this zone's ``type``, canonical keys and ``digest``; None when not listed."""
    rows = [row for row in rows_of(data, "zones") if row.get("zone") == decl.names["name"]]
    if not rows:
        return None
    row = rows[0]
    fields = ZONE_FIELDS.get(row.get("type"))
    if fields is None:
        return {"type": row.get("type"), "digest": row.get("digest")}
    return {"type": row["type"], **live_values(fields, row), "digest": row.get("digest")}


#: A zone the listing lacks is absent only when the read credential may see it (pve-network
#: ``API2/Network/SDN/Zones.pm`` ``index`` filters by SDN.Audit or SDN.Allocate).
zone_confirm_absent = audited_listing(
    "GET /cluster/sdn/zones",
    "zones",
    listing_privileges("sdn_zone"),
    lambda decl: f"/sdn/zones/{decl.names['name']}",
    "SDN.Audit on /sdn",
)


def _digest_guard(ctx, credential, decl: Declared, live: Mapping[str, object]) -> dict:
    """The digest of the answer judged (``assert_if_modified`` checks it)."""
    digest = live.get("digest")
    return {"digest": str(digest)} if isinstance(digest, str) and digest else {}


def _update(path: str, fields, decl: Declared, live: Mapping[str, object], json: bool = False) -> Call | None:
    sent = form_values(fields, decl.values)
    form: dict = {key: value for key, value in sent.items() if live.get(key) != decl.values[key]}
    gone = deleted_keys(decl.values, live)
    if gone:
        form["delete"] = ",".join(gone)
    return Call("PUT", path, form=form, json=json)


def _zone_rules(key: str) -> Rule | None:
    if key == "zone":
        return Rule(check=check_sdn_id)
    if key == "type":
        return Rule("enum", choices=tuple(ZONE_FIELDS))
    if key == "lock-token":
        return Rule()
    for fields in ZONE_FIELDS.values():
        if key in fields:
            return fields[key].rule()
    return None


ZONE_CREATE = Endpoint("POST /cluster/sdn/zones", ("zone", "type"), _zone_rules)
ZONE_UPDATE = Endpoint("PUT /cluster/sdn/zones/{zone}", (), _zone_rules)


def _zone_update(decl: Declared, live: Mapping[str, object]) -> Call | None:
    if live.get("type") != decl.values["type"]:
        return None
    return _update(
        api_path("cluster", "sdn", "zones", decl.names["name"]), ZONE_FIELDS[decl.values["type"]], decl, live
    )


ZONE = ObjectSpec(
    family="sdn_zone",
    noun="SDN zone",
    declare=zone_declare,
    identify=zone_identify,
    read=lambda decl: Call("GET", "cluster/sdn/zones"),
    absence="not in GET /cluster/sdn/zones while the read credential may audit it",
    is_absent=lambda error, decl: False,
    parse=zone_parse,
    create=lambda decl: Call(
        "POST",
        "cluster/sdn/zones",
        form={
            "zone": decl.names["name"],
            "type": str(decl.values["type"]),
            **form_values(ZONE_FIELDS[decl.values["type"]], decl.values),
        },
    ),
    create_endpoint=ZONE_CREATE,
    update=_zone_update,
    update_endpoint=ZONE_UPDATE,
    delete=lambda decl, live: Call("DELETE", api_path("cluster", "sdn", "zones", decl.names["name"])),
    confirm_absent=zone_confirm_absent,
    write_guard=_digest_guard,
    refusals=rules.zone_refusals,
    export_names=export_by("zone"),
    export_listings=lambda ctx: [(Call("GET", "cluster/sdn/zones"), {})],
)


# ------------------------------------------------------------------------------------------- vnets


vnet_identify = _by_id("vnet", f"name, zone, {', '.join(VNET_FIELDS)}")


def vnet_declare(
    state_id: str,
    target: str,
    name: object = None,
    zone: object = None,
    adopt: object = False,
    **config: object,
) -> Declared:
    """A checked vnet declaration: ``name``, ``zone``, ``tag``, ``alias``, ``vlanaware``,
    ``isolate-ports``, ``adopt``. Raises DeclarationError naming every key and rule."""
    probe = vnet_identify(state_id, target, name=name)
    zone_id, problems = _id("zone", zone, "zone")
    try:
        values = canonical_values(VNET_FIELDS, config)
    except DeclarationError as exc:
        problems += exc.problems
        values = {}
    if problems:
        raise DeclarationError(problems)
    return probe.declaring({"zone": zone_id, **values}, adopt)


def vnet_parse(data: object, decl: Declared) -> dict:
    """``GET /cluster/sdn/vnets/{vnet}`` → ``zone``, canonical keys and ``digest``."""
    if not isinstance(data, Mapping) or data.get("vnet") != decl.names["name"]:
        raise ValueError(f"expected vnet {decl.names['name']}")
    zone = data.get("zone")
    if not isinstance(zone, str):
        raise ValueError("the vnet has no zone")
    return {"zone": zone, **live_values(VNET_FIELDS, data), "digest": data.get("digest")}


def _vnet_rules(key: str) -> Rule | None:
    if key in ("vnet", "zone"):
        return Rule(check=check_sdn_id)
    if key == "type":
        return Rule("enum", choices=("vnet",))
    if key == "lock-token":
        return Rule()
    field = VNET_FIELDS.get(key)
    return field.rule() if field else None


VNET_CREATE = Endpoint("POST /cluster/sdn/vnets", ("vnet", "zone"), _vnet_rules)
VNET_UPDATE = Endpoint("PUT /cluster/sdn/vnets/{vnet}", (), _vnet_rules)
_VNET_ALL = {**VNET_FIELDS, "zone": Field()}

VNET = ObjectSpec(
    family="sdn_vnet",
    noun="SDN vnet",
    declare=vnet_declare,
    identify=vnet_identify,
    read=lambda decl: Call("GET", api_path("cluster", "sdn", "vnets", decl.names["name"])),
    absence="HTTP 500 \"sdn vnet '<vnet>' does not exist\" (pve-network PVE/Network/SDN/Vnets.pm)",
    is_absent=exact_message(500, "sdn vnet '{name}' does not exist"),
    parse=vnet_parse,
    create=lambda decl: Call(
        "POST",
        "cluster/sdn/vnets",
        form={"vnet": decl.names["name"], **form_values(_VNET_ALL, decl.values, skip=())},
    ),
    create_endpoint=VNET_CREATE,
    update=lambda decl, live: _update(
        api_path("cluster", "sdn", "vnets", decl.names["name"]), _VNET_ALL, decl, live
    ),
    update_endpoint=VNET_UPDATE,
    delete=lambda decl, live: Call("DELETE", api_path("cluster", "sdn", "vnets", decl.names["name"])),
    write_guard=_digest_guard,
    refusals=rules.vnet_refusals,
    export_names=export_by("vnet"),
    export_listings=lambda ctx: [(Call("GET", "cluster/sdn/vnets"), {})],
)


# ----------------------------------------------------------------------------------------- subnets


def subnet_identify(
    state_id: str, target: str, name: object = None, vnet: object = None, **extra: object
) -> Declared:
    """A subnet by its CIDR (``name``) within ``vnet``. Raises DeclarationError.

    pve-network ``SubnetPlugin.pm`` ``parse_sdn_subnet_id`` checks the CIDR as pve-common's
    ``pve_verify_cidrv4``/``v6`` (``check_cidr``: a prefix length of 8 or more), which do not look at
    host bits: ``10.2.0.5/24`` is a subnet PVE creates and keeps as written (id
    ``<zone>-10.2.0.5-24``), so it is kept here too."""
    problems = _extra_problem(
        extra, "subnet", f"name (the CIDR), vnet, {', '.join(SUBNET_FIELDS)}, dhcp-range"
    )
    vnet_id, more = _id("vnet", vnet, "vnet")
    problems += more
    cidr = ""
    try:
        network = (
            ipaddress.ip_network(str(name), strict=False) if isinstance(name, str) and "/" in name else None
        )
    except ValueError:
        network = None
    if network is None:
        problems.append(f"name: {shown(name)} is not a CIDR network (address/prefix-length)")
    elif check_cidr(name):
        problems.append(f"name: {check_cidr(name)}")
    else:
        # Host bits are kept, as PVE keeps them (the id is ``<zone>-<address>-<prefix>``).
        cidr = f"{ipaddress.ip_interface(name).ip.compressed}/{network.prefixlen}"
    if problems:
        raise DeclarationError(problems)
    return Declared(
        state_id,
        target,
        identity=f"{vnet_id}/{cidr}",
        label=f"SDN subnet {cidr} of vnet {vnet_id}",
        names={"name": cidr, "vnet": vnet_id},
    )


def subnet_declare(
    state_id: str,
    target: str,
    name: object = None,
    vnet: object = None,
    adopt: object = False,
    **config: object,
) -> Declared:
    """A checked subnet declaration: ``name`` (CIDR), ``vnet``, ``gateway``, ``snat``,
    ``dhcp-range`` (a list of ``start-address=..,end-address=..`` or ``{start, end}``),
    ``dnszoneprefix``, ``dhcp-dns-server``, ``adopt``. Raises DeclarationError."""
    probe = subnet_identify(state_id, target, name=name, vnet=vnet)
    config = dict(config)
    problems = []
    ranges: list[str] | None = None
    if "dhcp-range" in config:
        try:
            ranges = canonical_ranges(config.pop("dhcp-range"))
        except ValueError as exc:
            problems.append(f"dhcp-range: {exc}")
    try:
        values = canonical_values(SUBNET_FIELDS, config)
    except DeclarationError as exc:
        problems += exc.problems
        values = {}
    network = ipaddress.ip_network(probe.names["name"], strict=False)
    for key in ("gateway", "dhcp-dns-server"):
        if values.get(key) and ipaddress.ip_address(values[key]).version != network.version:
            problems.append(f"{key}: {values[key]} is not of the subnet's IP version")
    # SubnetPlugin on_update_hook: an IPv4 /32 is point-to-point, whose gateway lies outside it.
    point_to_point = network.version == 4 and network.prefixlen == 32
    if (
        values.get("gateway")
        and ipaddress.ip_address(values["gateway"]) not in network
        and not point_to_point
    ):
        problems.append(f"gateway: {values['gateway']} is not in {probe.names['name']}")
    for item in ranges or []:
        start, end = (part.partition("=")[2] for part in item.split(","))
        if ipaddress.ip_address(start) not in network or ipaddress.ip_address(end) not in network:
            problems.append(f"dhcp-range: {item} is not in subnet {probe.names['name']}")
    if problems:
        raise DeclarationError(problems)
    if ranges is not None:
        values["dhcp-range"] = ranges
    return probe.declaring(values, adopt)


def subnet_parse(data: object, decl: Declared) -> dict | None:
    """The vnet's subnets → this subnet's canonical keys and ``digest``; None when not listed."""
    want = ipaddress.ip_interface(decl.names["name"])
    for row in rows_of(data, "subnets"):
        try:
            found = ipaddress.ip_interface(str(row.get("cidr")))
        except ValueError:
            raise ValueError(f"subnet {row.get('subnet')!r} has no CIDR") from None
        if found == want:
            return {
                **live_values(SUBNET_FIELDS, row),
                "dhcp-range": canonical_ranges(row.get("dhcp-range")),
                "id": row.get("subnet") or row.get("id"),
                "digest": row.get("digest"),
            }
    return None


def _subnet_path(decl: Declared, live: Mapping[str, object]) -> str:
    subnet_id = live.get("id")
    if not isinstance(subnet_id, str) or not subnet_id:
        raise Refused(f"{decl.label}: PVE did not say the subnet's id; nothing was written.")
    return api_path("cluster", "sdn", "vnets", decl.names["vnet"], "subnets", subnet_id)


def _subnet_form(decl: Declared) -> dict:
    form: dict = form_values(SUBNET_FIELDS, decl.values, skip=("dhcp-range",))
    if decl.values.get("dhcp-range"):
        form["dhcp-range"] = list(decl.values["dhcp-range"])
    return form


def _subnet_update(decl: Declared, live: Mapping[str, object]) -> Call:
    form = _subnet_form(decl)
    gone = deleted_keys(decl.values, live, skip=())
    if gone:
        form["delete"] = ",".join(gone)
    return Call("PUT", _subnet_path(decl, live), form=form, json=True)


def _subnet_rules(key: str) -> Rule | None:
    if key == "subnet":
        return Rule()
    if key == "vnet":
        return Rule(check=check_sdn_id)
    if key == "type":
        return Rule("enum", choices=("subnet",))
    if key in ("lock-token", "dhcp-range"):
        return Rule()
    field = SUBNET_FIELDS.get(key)
    return field.rule() if field else None


SUBNET_CREATE = Endpoint("POST /cluster/sdn/vnets/{vnet}/subnets", ("subnet", "type"), _subnet_rules)
SUBNET_UPDATE = Endpoint("PUT /cluster/sdn/vnets/{vnet}/subnets/{subnet}", (), _subnet_rules)


def subnet_is_absent(error: PveError, decl: Declared) -> bool:
    """A missing vnet holds no subnet (``check_vnet_access`` dies before the listing)."""
    return error.status == 500 and error.message == f"sdn vnet '{decl.names['vnet']}' does not exist"


def subnet_listings(ctx) -> list[tuple[Call, Mapping[str, object]]]:
    """``proxmox.export``: each vnet's subnets listing (``GET /cluster/sdn/vnets`` first), each row
    named by its vnet. Raises what the vnets listing's read raises."""
    vnets = rows_of(ctx.client.request("GET", "cluster/sdn/vnets", ctx.broker.read()), "vnets")
    return [
        (Call("GET", api_path("cluster", "sdn", "vnets", str(row["vnet"]), "subnets")), {"vnet": row["vnet"]})
        for row in vnets
        if isinstance(row.get("vnet"), str)
    ]


SUBNET = ObjectSpec(
    family="sdn_subnet",
    noun="SDN subnet",
    declare=subnet_declare,
    identify=subnet_identify,
    read=lambda decl: Call("GET", api_path("cluster", "sdn", "vnets", decl.names["vnet"], "subnets")),
    absence="not in GET /cluster/sdn/vnets/{vnet}/subnets, or that vnet absent",
    is_absent=subnet_is_absent,
    parse=subnet_parse,
    create=lambda decl: Call(
        "POST",
        api_path("cluster", "sdn", "vnets", decl.names["vnet"], "subnets"),
        form={"subnet": decl.names["name"], "type": "subnet", **_subnet_form(decl)},
        json=True,
    ),
    create_endpoint=SUBNET_CREATE,
    update=_subnet_update,
    update_endpoint=SUBNET_UPDATE,
    delete=lambda decl, live: Call("DELETE", _subnet_path(decl, live)),
    confirm_absent=lambda ctx, credential, decl: None,
    write_guard=_digest_guard,
    identity_keys=("name", "vnet"),
    refusals=rules.subnet_refusals,
    side_effects=rules.subnet_side_effects,
    export_names=lambda row: {"name": row["cidr"]} if isinstance(row.get("cidr"), str) else None,
    export_listings=subnet_listings,
    live_only=("id",),
)

SPECS = {"zone": ZONE, "vnet": VNET, "subnet": SUBNET}
