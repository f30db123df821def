"""Node network interfaces (``proxmox_network.interface``): bridges, bonds, VLANs and plain NICs.

Sources: pve-manager ``PVE/API2/Network.pm`` (the API: ``index``, ``create_network``,
``update_network``, ``delete_network``, ``network_config``) and pve-common
``src/PVE/Network/Interfaces.pm`` (``__read_etc_network_interfaces``/
``__write_etc_network_interfaces``, which ``PVE/INotify.pm`` registers for ``interfaces``), with
pve-common ``src/PVE/JSONSchema.pm`` for the formats (``pve_verify_iface``,
``pve_verify_vlan_id_or_range``).

What PVE does, and so how this family judges:

- Every write goes through ``INotify::write_file('interfaces')``, whose shadow file is
  ``/etc/network/interfaces.new``: a write only **stages**; nothing is reloaded until
  ``PUT /nodes/{node}/network`` (``salt_proxmox.network.apply``). Every read parses the staged
  file when it exists, so the object judged here is the staged one.
- Read is the node's listing ``GET /nodes/{node}/network`` (the row whose ``iface`` is the name).
  The listing hides bridges the caller may not see (``check_sdn_bridge``: SDN.Audit or SDN.Use on
  ``/sdn/zones/localnetwork/<bridge>``), so a name missing from it is confirmed absent by
  ``GET /nodes/{node}/network/{iface}`` (Sys.Audit on the node), whose exact answer for a missing
  one is HTTP 400 with ``errors.iface`` = ``interface does not exist``.
- Create is ``POST /nodes/{node}/network`` (``iface``, ``type`` and the keys), update
  ``PUT /nodes/{node}/network/{iface}`` (``type`` is required there too), delete
  ``DELETE /nodes/{node}/network/{iface}``. There is no digest: the read-back after the write is
  what catches a change made meanwhile.
- ``update_network`` sets ``method`` from the address given IN THAT PUT (no ``cidr`` → ``manual``)
  and merges every other key over the stored ones, so an update restates every declared key and
  the live ``cidr``/``cidr6`` the declaration leaves unmanaged; cleared keys go in ``delete``
  (``delete=cidr6`` also removes ``address6``/``netmask6``, and the ``inet6`` stanza goes with
  them; a gateway left without its address is refused at plan:
  ``salt_proxmox.network.rules.gateway_without_address``). It
  takes no ``method``: an update of an interface configured ``inet dhcp``, ``inet6 auto``/``dhcp``
  (or with an ``inet6`` stanza and no cidr6) would rewrite it and is refused at plan
  (``salt_proxmox.network.rules.address_method``).
- Spellings as the parser gives them back: ``bridge_ports`` and ``slaves`` sorted and de-duplicated
  (a set); ``bridge_vids`` as written (a list); ``autostart`` 1 or absent; ``bridge_vlan_aware`` 1
  or absent — and the writer prints ``bridge-vlan-aware yes`` for any DEFINED value, so a 0 sent
  would read back as 1: a false flag is cleared with ``delete``, never sent; ``bond_mode`` as its
  name (a number is mapped back); ``cidr`` with the host bits kept; ``comments`` one ``#`` line per
  line, read back with white space trimmed at line ends and a ``\\n`` after every line.
- What the writer drops or refuses, refused here before anything is sent: a bond named other than
  ``bondN`` (it would read back as another type), ``bridge_vids`` without ``bridge_vlan_aware``,
  ``bond_xmit_hash_policy`` without ``bond_mode`` balance-xor or 802.3ad, ``bond-primary`` without
  ``active-backup`` or not among ``slaves``, a VLAN whose name and ``vlan-raw-device``/``vlan-id``
  disagree, keys of another type (``bridge_ports`` on a bond), and a ``comments`` of ``0`` (Perl
  false: not written).
- What PVE refuses against the node's other interfaces (a second default gateway, a port in use,
  a bridge port with an address, a missing bond slave or VLAN raw device) and what its writer
  forces (a bond slave's autostart) are judged at plan by ``salt_proxmox.network.rules``
  (``refusals``, ``side_effects``); a declared empty ``bridge_vids`` of a VLAN-aware bridge and an
  empty ``bond_mode`` are compared as the writer writes them (``2-4094``, ``balance-rr``).
- A physical NIC stays listed (``exists``) when its stanza is deleted, so ``removal: destroy`` of
  ``type: eth`` is refused.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from salt_proxmox.errors import DeclarationError, Refused, shown
from salt_proxmox.network import rules
from salt_proxmox.pve.client import api_path
from salt_proxmox.pve.constraints import NODE, Endpoint, Rule
from salt_proxmox.pve.errors import PveError
from salt_proxmox.pve.listing import node_names, rows_of
from salt_proxmox.simple.fields import Field, canonical_values, deleted_keys, form_values, live_values
from salt_proxmox.simple.spec import Call, Declared, ObjectSpec, comment_problem

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.pve.client import Credential
    from salt_proxmox.run.context import PveContext

FAMILY = "network_interface"
#: ``pve_verify_iface``.
IFACE = re.compile(r"^[a-z][a-z0-9_]{1,20}(?:[:.][0-9]+)?$", re.IGNORECASE | re.ASCII)
TYPES = ("bridge", "bond", "eth", "vlan")
#: ``$bond_modes`` of Interfaces.pm (Linux bonds; the OVS modes belong to OVSBond).
BOND_MODES = (
    "balance-rr",
    "active-backup",
    "balance-xor",
    "broadcast",
    "802.3ad",
    "balance-tlb",
    "balance-alb",
)
_PERL_SPACE = " \t\n\r\f\v"


def check_iface(value: str) -> str | None:
    """``pve-iface``: None, or PVE's reason."""
    return None if IFACE.match(value) else f"invalid network interface name '{value}'"


def check_iface_list(value: str) -> str | None:
    """``pve-iface-list``: every item a ``pve-iface``."""
    for item in value.split():
        problem = check_iface(item)
        if problem:
            return problem
    return None


def check_vids(value: str) -> str | None:
    """``pve-vlan-id-or-range-list``: items ``N`` or ``N-M`` with 2 <= N, M <= 4094."""
    for item in value.split():
        match = re.fullmatch(r"([0-9]+)(?:-([0-9]+))?", item)
        if not match:
            return f"invalid VLAN configuration '{item}'"
        for tag in filter(None, match.groups()):
            if not 2 <= int(tag) <= 4094:
                return f"invalid VLAN tag '{tag}'"
    return None


def canonical_comments(text: str) -> str:
    """``comments`` as PVE reads back what it wrote: each line written as ``#line``, read back with
    trailing white space trimmed and ``\\n`` appended; trailing empty lines are lost (Perl's
    ``split``)."""
    lines = [line.rstrip(_PERL_SPACE) for line in text.split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return "".join(f"{line}\n" for line in lines)


def _comment_check(text: str) -> str | None:
    return comment_problem(text.strip(_PERL_SPACE))


FIELDS: dict[str, Field] = {
    "cidr": Field("cidr", version=4),
    "cidr6": Field("cidr", version=6),
    "gateway": Field("address", version=4),
    "gateway6": Field("address", version=6),
    "autostart": Field("flag"),
    "bridge_ports": Field("set", check=check_iface_list),
    "bridge_vlan_aware": Field("flag"),
    "bridge_vids": Field("list", check=check_vids),
    "slaves": Field("set", check=check_iface_list),
    "bond_mode": Field("choice", choices=BOND_MODES),
    "bond-primary": Field(check=check_iface),
    "bond_xmit_hash_policy": Field("choice", choices=("layer2", "layer2+3", "layer3+4")),
    "vlan-raw-device": Field(check=check_iface),
    "vlan-id": Field("integer", minimum=1, maximum=4094),
    "mtu": Field("integer", minimum=1280, maximum=65520),
    "comments": Field(normal=canonical_comments, check=_comment_check),
}
#: Keys only one type takes (the writer prints them only in that type's block).
ONLY = {
    "bridge_ports": "bridge",
    "bridge_vlan_aware": "bridge",
    "bridge_vids": "bridge",
    "slaves": "bond",
    "bond_mode": "bond",
    "bond-primary": "bond",
    "bond_xmit_hash_policy": "bond",
    "vlan-raw-device": "vlan",
    "vlan-id": "vlan",
}
_RULES = {key: field.rule() for key, field in FIELDS.items()}
_RULES.update(
    iface=Rule(check=check_iface),
    type=Rule("enum", choices=TYPES),
    delete=Rule(),
)
CREATE = Endpoint("POST /nodes/{node}/network", ("iface", "type"), _RULES.get)
UPDATE = Endpoint("PUT /nodes/{node}/network/{iface}", ("type",), _RULES.get)


def identify(
    state_id: str, target: str, name: object = None, node: object = None, **extra: object
) -> Declared:
    """An interface by ``name`` (the iface) on ``node``. Raises DeclarationError naming the key."""
    problems = []
    if extra:
        problems.append(
            f"unknown key(s) {', '.join(sorted(extra))}: an interface is declared with name and node"
        )
    if not isinstance(name, str) or check_iface(name):
        problems.append(
            f"name: {shown(name)} is not a network interface name PVE takes "
            "([a-z][a-z0-9_]{1,20}, optionally .N or :N)"
        )
    if not isinstance(node, str) or not NODE.match(node):
        problems.append(f"node: {shown(node)} is not a node name")
    if problems:
        raise DeclarationError(problems)
    return Declared(
        state_id,
        target,
        identity=f"{node}/{name}",
        label=f"interface {name} on {node}",
        names={"name": name, "node": node},
    )


def declare(
    state_id: str,
    target: str,
    name: object = None,
    node: object = None,
    type: object = None,
    adopt: object = False,
    **config: object,
) -> Declared:
    """A checked interface declaration: ``name``, ``node``, ``type`` (bridge, bond, eth, vlan) and
    PVE's keys (see ``FIELDS``), ``adopt``. Raises DeclarationError naming every key and rule."""
    probe = identify(state_id, target, name=name, node=node)
    problems = []
    if "removal" in config:  # what absent does: a present declaration removes nothing
        config = dict(config)
        config.pop("removal")
        problems.append(
            "removal: an interface declared present is never removed; removal (retain or destroy) is "
            "an argument of proxmox_network.interface_absent (in pillar: ensure: absent)"
        )
    if type not in TYPES:
        problems.append(f"type: expected one of {', '.join(TYPES)}, got {shown(type)}")
    try:
        values = canonical_values(FIELDS, config)
    except DeclarationError as exc:
        problems += exc.problems
        values = {}
    if not problems:
        problems += _type_problems(str(name), str(type), values)
    if problems:
        raise DeclarationError(problems)
    # What __interface_to_string writes for a key left empty is what reads back: compare with it.
    if values.get("bridge_vids") == "" and values.get("bridge_vlan_aware") == 1:
        values["bridge_vids"] = rules.BRIDGE_VIDS_DEFAULT
    if type == "bond" and values.get("bond_mode") == "":
        values["bond_mode"] = rules.BOND_MODE_DEFAULT
    return probe.declaring({"type": type, **values}, adopt)


def _type_problems(name: str, kind: str, values: Mapping[str, object]) -> list[str]:
    """What ``__write_etc_network_interfaces`` would drop, refuse or read back as another type."""
    problems = [
        f"{key}: only a {owner} takes it (Interfaces.pm writes it in the {owner} block only)"
        for key, owner in ONLY.items()
        if key in values and values[key] not in ("", 0) and owner != kind
    ]
    if kind == "bond" and not re.fullmatch(r"bond[0-9]+", name):
        problems.append(f"name: a bond must be named bondN; PVE reads {name} back as another type")
    if values.get("bridge_vids") and values.get("bridge_vlan_aware") != 1:
        problems.append(
            "bridge_vids: PVE writes it only for a VLAN-aware bridge; declare bridge_vlan_aware: true"
        )
    mode = values.get("bond_mode")
    if values.get("bond_xmit_hash_policy") and mode not in ("balance-xor", "802.3ad"):
        problems.append("bond_xmit_hash_policy: PVE writes it only with bond_mode balance-xor or 802.3ad")
    primary = values.get("bond-primary")
    if primary:
        if mode != "active-backup":
            problems.append("bond-primary: PVE writes it only with bond_mode active-backup")
        elif primary not in str(values.get("slaves", "")).split():
            problems.append(f"bond-primary: {primary} is not among slaves (PVE refuses the write)")
    if kind == "vlan":
        dotted = re.fullmatch(r"(\S+)\.([0-9]+)", name)
        raw, vid = values.get("vlan-raw-device"), values.get("vlan-id")
        if dotted:
            if raw and raw != dotted.group(1):
                problems.append(f"vlan-raw-device: {name} names {dotted.group(1)} as its raw device")
            if vid and vid != int(dotted.group(2)):
                problems.append(f"vlan-id: {name} names VLAN {dotted.group(2)}")
        elif not raw:
            problems.append(f"vlan-raw-device: a VLAN not named <device>.<id> needs it ({name})")
        elif not re.fullmatch(r"vlan[0-9]+", name) and not vid:
            problems.append(f"vlan-id: a VLAN named {name} needs it (only vlanN and <device>.N carry the id)")
    return problems


def parse(data: object, decl: Declared) -> dict | None:
    """The listing → this interface's canonical values (``type`` and every ``FIELDS`` key), or
    None when the listing does not hold it. Raises ValueError for another shape. The vlan keys PVE
    derives from a ``<device>.<id>`` name are taken as it gives them."""
    rows = [row for row in rows_of(data, "interfaces") if row.get("iface") == decl.names["name"]]
    if not rows:
        return None
    row = rows[0]
    kind = row.get("type")
    if not isinstance(kind, str):
        raise ValueError(f"interface {decl.names['name']} has no type")
    try:
        values = live_values(FIELDS, row)
    except ValueError as exc:
        raise ValueError(f"interface {decl.names['name']}: {exc}") from None
    families = row.get("families")
    return {
        "type": kind,
        **values,
        "exists": int(bool(row.get("exists"))),
        # Not compared: what update_network would rewrite (salt_proxmox.network.rules.address_method).
        "method": row.get("method"),
        "method6": row.get("method6"),
        "families": list(families) if isinstance(families, list) else None,
    }


def is_absent(error: PveError, decl: Declared) -> bool:
    """``network_config``'s missing-interface answer (``raise_param_exc``)."""
    return error.status == 400 and str(error.errors.get("iface", "")).strip() == "interface does not exist"


def confirm_absent(ctx: PveContext, credential: Credential, decl: Declared) -> None:
    """Prove an interface the listing lacks absent: ``GET /nodes/{node}/network/{iface}`` must
    answer PVE's exact missing-interface error. Raises Refused when it answers the interface (the
    listing hid it: a bridge the read credential lacks SDN.Audit for), PveError otherwise."""
    try:
        ctx.client.request("GET", _path(decl), credential)
    except PveError as error:
        if is_absent(error, decl):
            return
        raise
    raise Refused(
        f"{decl.label}: GET /nodes/{decl.names['node']}/network does not list it but the interface exists: "
        "the listing hides bridges from a credential without SDN.Audit on /sdn/zones/localnetwork. Grant "
        "the read token SDN.Audit on /sdn; nothing was written."
    )


def _path(decl: Declared) -> str:
    return api_path("nodes", decl.names["node"], "network", decl.names["name"])


def create_call(decl: Declared) -> Call:
    """``POST /nodes/{node}/network`` with ``iface``, ``type`` and the declared values."""
    form = {"iface": decl.names["name"], "type": str(decl.values["type"]), **form_values(FIELDS, decl.values)}
    return Call("POST", api_path("nodes", decl.names["node"], "network"), form=form)


def update_call(decl: Declared, live: Mapping[str, object]) -> Call | None:
    """``PUT /nodes/{node}/network/{iface}`` restating every declared value, the live address the
    declaration does not manage, and ``delete`` for the cleared keys; None when the type differs
    (PVE keeps the type it derives from the name and keys: another type is another interface)."""
    if live.get("type") != decl.values["type"]:
        return None
    form = {"type": str(decl.values["type"]), **form_values(FIELDS, decl.values)}
    for key in ("cidr", "cidr6"):
        if key not in decl.values and live.get(key):
            form[key] = str(live[key])
    cleared = deleted_keys(decl.values, live)
    if cleared:
        form["delete"] = ",".join(cleared)
    return Call("PUT", _path(decl), form=form)


def refusals(ctx: PveContext, decl: Declared, action: str, live: Mapping[str, object] | None) -> list[str]:
    """PVE's refusals and rewrites of this write (``salt_proxmox.network.rules``), as sentences
    naming why and the remedy; ``[]`` for a delete."""
    if action not in ("create", "update"):
        return []
    call = update_call(decl, live) if action == "update" and live is not None else create_call(decl)
    if call is None:
        return []
    form = dict(call.form or {})
    before = live if action == "update" else None
    out = rules.address_method(decl, live, form) if before is not None else []
    out += rules.gateway_without_address(decl, before, form)
    return out + rules.node_refusals(decl, action, form, rules.node_interfaces(ctx, decl.names["node"]))


def side_effects(ctx: PveContext, decl: Declared, action: str) -> list[str]:
    """What PVE's writer changes on other interfaces by itself (``rules.forced_on_others``)."""
    if action not in ("create", "update"):
        return []
    return rules.forced_on_others(decl, rules.node_interfaces(ctx, decl.names["node"]))


def delete_call(decl: Declared, live: Mapping[str, object]) -> Call:
    """``DELETE /nodes/{node}/network/{iface}``. Raises Refused for a physical NIC, which PVE keeps
    listing after its stanza is gone."""
    if live.get("type") == "eth" or live.get("exists"):
        raise Refused(
            f"{decl.label}: a physical NIC stays listed after its stanza is deleted, so it cannot be "
            "destroyed. Nothing was deleted: declare it absent with removal: retain."
        )
    return Call("DELETE", _path(decl))


def export_names(row: Mapping[str, object]) -> dict | None:
    """``proxmox.export``: an interface of a node's listing by its name; a physical NIC (``eth``) is
    the hardware's, not anybody's to declare."""
    name = row.get("iface")
    return {"name": name} if isinstance(name, str) and row.get("type") != "eth" else None


def export_listings(ctx) -> list[tuple[Call, Mapping[str, object]]]:
    """``proxmox.export``: each node's interfaces listing, each row named by its node."""
    return [
        (Call("GET", api_path("nodes", node, "network")), {"node": node})
        for node in node_names(ctx.client, ctx.broker.read())
    ]


def export_values(live: Mapping[str, object], decl: Declared) -> dict:
    """The declared keys of a live interface: ``type`` and the ``FIELDS`` it holds, not what the
    listing shows beside them (``exists``, ``method``, ``families``)."""
    return {
        key: value
        for key, value in live.items()
        if (key == "type" or key in FIELDS) and value not in (None, "", [])
    }


SPEC = ObjectSpec(
    family=FAMILY,
    noun="interface",
    declare=declare,
    identify=identify,
    read=lambda decl: Call("GET", api_path("nodes", decl.names["node"], "network")),
    absence="listed nowhere on the node, and HTTP 400 errors.iface 'interface does not exist' "
    "(pve-manager PVE/API2/Network.pm network_config)",
    is_absent=lambda error, decl: False,
    parse=parse,
    create=create_call,
    create_endpoint=CREATE,
    update=update_call,
    update_endpoint=UPDATE,
    delete=delete_call,
    confirm_absent=confirm_absent,
    identity_keys=("name", "node"),
    refusals=refusals,
    side_effects=side_effects,
    export_names=export_names,
    export_listings=export_listings,
    export_values=export_values,
)
