"""PVE's refusals and rewrites of a node interface write, predicted at plan (docs/design.md §7b).

Sources (pve-manager master ``14a22df``, pve-common master ``f665029``): pve-manager
``PVE/API2/Network.pm`` (``create_network``/``update_network`` and their checks) and pve-common
``src/PVE/Network/Interfaces.pm`` (``__read_etc_network_interfaces``,
``__write_etc_network_interfaces``, ``__interface_to_string``; ``PVE/INotify.pm`` registers them
for ``interfaces``). Each write rewrites the whole file, so what the writer refuses or forces is
judged here against the node's listing, with what this run writes earlier laid over it.

- **The address method** (``update_network``): the update takes no ``method``, ``method6`` or
  ``families`` (its schema has none, ``additionalProperties => 0``); it rebuilds them from the
  address IN THAT PUT: ``inet static`` with a ``cidr`` sent, else ``inet manual``; an ``inet6``
  stanza only with a ``cidr6`` sent (``static``). An interface configured otherwise (``inet dhcp``,
  ``inet6 auto``/``dhcp``, an ``inet6 manual`` stanza of its own) would be rewritten, and the node's
  next reload would drop its address: such an update is refused (``address_method``), unless the
  declaration itself declares the static address of each family whose method changes, or clears
  (``''``) the static address whose stanza goes with it: ``delete=cidr``/``cidr6`` removes the
  address and its netmask as well, and no ``inet6`` stanza is written without an address6.
- **A gateway left without its address** (``gateway_without_address``): ``update_network`` deletes
  only the keys ``delete`` lists and ``create_network`` takes a gateway alone; neither refuses. The
  writer (``__interface_to_string``) prints ``gateway`` in whatever stanza the family has: an IPv4
  gateway lands in ``inet manual`` (a default route through an address the interface lacks), or is
  lost with the ``inet`` stanza when only ``inet6`` is left; a ``gateway6`` is always lost, since
  no ``inet6`` stanza is written without a cidr6 (and reads back gone: never clean). Refused at
  plan, the remedy being to clear the gateway with its address.
- **What the API refuses** (``create_network``/``update_network``, HTTP 400): a ``gateway`` (or
  ``gateway6``) sent while another interface has one (``$check_duplicate_gateway``: ``Default
  gateway already exists on interface '<iface>'.``); a port (``bridge_ports``, ``slaves``) another
  bridge or bond uses (``$check_duplicate_ports``: ``<port> is already used on interface
  '<iface>'.``).
- **What the writer refuses** (``__write_etc_network_interfaces``): a bridge port that exists
  nowhere (``bridge '<br>' - unable to find bridge port '<port>'``; a ``<device>.<id>`` port is
  made on the fly) or that holds a static address, from either side (``iface <port> - ip address
  can't be set on interface if bridged in <br>``); a bond slave that exists nowhere or is not an
  eth or bond (``unable to find slave``, ``wrong interface type on slave``); a VLAN whose raw device
  (the ``<device>`` of ``<device>.<id>``, else ``vlan-raw-device``) exists nowhere or is not an eth,
  bond, bridge or VLAN (``vlan '<vlan>' - unable to find parent '<device>'``).
- **What the writer forces** (never drift): every slave of a bond gets ``autostart`` (so a
  declared ``autostart: false`` on one is refused); a VLAN-aware bridge without ``bridge_vids``
  gets ``2-4094`` and a bond without ``bond_mode`` gets ``balance-rr`` (``__interface_to_string``),
  so a declared empty value is read as that default (``interface.declare``).

The node's interfaces are its listing (``GET /nodes/{node}/network``, shared by the run), with the
values this run creates or changes earlier laid over it (``simple.spec.planned``) and those it
removes taken out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from salt_proxmox.pve.client import api_path
from salt_proxmox.pve.listing import get_rows
from salt_proxmox.run.memo import removed
from salt_proxmox.simple.spec import Declared, planned

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.run.context import PveContext

FAMILY = "network_interface"
#: The keys naming another interface's ports (``$check_duplicate_ports``), in PVE's order.
PORT_KEYS = ("bridge_ports", "ovs_ports", "slaves", "ovs_bonds")
#: Defaults ``__interface_to_string`` writes for a key left out.
BRIDGE_VIDS_DEFAULT = "2-4094"
BOND_MODE_DEFAULT = "balance-rr"

#: The address families an ``iface`` stanza names, and the key holding each one's method.
_METHOD_KEY = {"inet": "method", "inet6": "method6"}
_ADDRESS_KEY = {"inet": "cidr", "inet6": "cidr6"}
_GATEWAY_KEY = {"inet": "gateway", "inet6": "gateway6"}


def pve_families(form: Mapping[str, str]) -> dict[str, str]:
    """``{family: method}`` as ``update_network`` writes them for ``form`` (the PUT's keys):
    ``inet`` static with a ``cidr``, ``inet6`` static with a ``cidr6``, ``inet manual`` when
    neither."""
    written = {family: "static" for family, key in _ADDRESS_KEY.items() if form.get(key)}
    return written or {"inet": "manual"}


def live_families(live: Mapping[str, object]) -> dict[str, str]:
    """``{family: method}`` of the interface as the listing gives it (``families``, ``method``,
    ``method6``; ``__read_etc_network_interfaces`` defaults a missing method to ``manual`` and
    ``families`` to ``[inet]``). A stanza without a family (ifupdown2's typeless ``iface``) is
    left out: it has no method to lose."""
    families = live.get("families")
    if not isinstance(families, list) or not families:
        families = ["inet"]
    return {
        family: str(live.get(_METHOD_KEY[family]) or "manual") for family in families if family in _METHOD_KEY
    }


def _spelled(families: Mapping[str, str]) -> str:
    return ", ".join(f"`{family} {method}`" for family, method in families.items())


def address_method(decl: Declared, live: Mapping[str, object], form: Mapping[str, str]) -> list[str]:
    """The refusal of an update PVE would write with another address method (module docstring):
    ``[]`` when every live family keeps its method, changes to ``static`` with the address the
    declaration declares for it, or is ``static`` with the address the declaration clears (its
    stanza going is that clear: ``update_network``'s ``delete``)."""
    before, after = live_families(live), pve_families(form)
    lost = [
        family
        for family, method in before.items()
        if after.get(family) != method
        and not (after.get(family) == "static" and decl.values.get(_ADDRESS_KEY[family]))
        and not (method == "static" and decl.values.get(_ADDRESS_KEY[family], None) == "")
    ]
    if not lost:
        return []
    node = decl.names["node"]
    dynamic = [family for family in lost if before[family] not in ("static", "manual")]
    harm = (
        "so the node's next reload would leave it without the address it gets by "
        + " and ".join(f"{before[family]} ({family})" for family in dynamic)
        if dynamic
        else f"so the node's next reload would drop its {_spelled({f: before[f] for f in lost})} stanza"
    )
    keys = " and ".join(_ADDRESS_KEY[family] for family in lost)
    return [
        f"{decl.label}: it is configured {_spelled(before)}, and PVE rewrites an interface it updates as "
        "`inet static` with the cidr the update sends or `inet manual` without one, with an `inet6` stanza "
        "only for a cidr6 sent (pve-manager PVE/API2/Network.pm update_network; the API takes no method). "
        f"This update would stage {_spelled(after)}, {harm}. Change it in /etc/network/interfaces on node "
        f"{node} (then `ifreload -a`), or declare the interface as it is (nothing to update), or declare "
        f"its static {keys}."
    ]


def gateway_without_address(
    decl: Declared, live: Mapping[str, object] | None, form: Mapping[str, str]
) -> list[str]:
    """The refusal of a write that leaves a family's gateway without its address (module
    docstring): ``form`` is the POST (``live`` None) or the PUT. A gateway the interface already
    holds without its address is let pass: this write does not make it so."""
    deleted = set(str(form.get("delete") or "").split(","))
    written = pve_families(form)
    api = "create_network" if live is None else "update_network"
    out = []
    for family, key in _ADDRESS_KEY.items():
        gateway_key = _GATEWAY_KEY[family]
        if form.get(key):
            continue
        kept = live is not None and gateway_key not in deleted and live.get(gateway_key)
        gateway = form.get(gateway_key) or kept
        if not gateway or (live is not None and not live.get(key) and live.get(gateway_key) == gateway):
            continue
        if family in written:
            harm = (
                f"writes gateway {gateway} in an `{family} {written[family]}` stanza with no address: a "
                "default route through an address the interface does not have"
            )
        else:
            harm = (
                f"drops the {gateway_key} {gateway} with its `{family}` stanza, which it writes "
                f"only with a {key} (so it reads back gone)"
            )
        remedy = (
            f"Declare {key} with it, or leave {gateway_key} out."
            if live is None
            else f"Clear the gateway with its address (declare {gateway_key}: '' with it), or keep {key}."
        )
        out.append(
            f"{decl.label}: {gateway_key}: this write leaves no {key}, and PVE takes it without a word: it "
            f"{harm} (pve-manager PVE/API2/Network.pm {api}; pve-common Network/Interfaces.pm "
            f"__interface_to_string). {remedy}"
        )
    return out


def node_interfaces(ctx: PveContext, node: str) -> dict[str, dict]:
    """``{iface: values}`` of ``node`` as the module docstring describes (listing, this run's writes
    over it, its removals out). Raises PveError, PveMalformed, PveUnreachable."""
    path = api_path("nodes", node, "network")
    rows = get_rows(ctx.client, path, ctx.broker.read(), what="interfaces", reads=ctx.reads)
    found = {str(row["iface"]): dict(row) for row in rows if isinstance(row.get("iface"), str)}
    for identity, values in planned(ctx, FAMILY).items():
        where, _, name = identity.partition("/")
        if where == node:
            found.setdefault(name, {}).update(values)
    for name in removed(ctx.memo, ctx.target.name, f"node {node}"):
        found.pop(name, None)
    return found


def _ports(values: Mapping[str, object]) -> list[str]:
    return [port for key in PORT_KEYS for port in str(values.get(key) or "").split()]


def _has_address(values: Mapping[str, object]) -> bool:
    """``method``/``method6`` static with an address other than 0.0.0.0/:: — the writer's test; a
    value this run writes counts by its cidr."""
    for suffix, empty in (("", "0.0.0.0"), ("6", "::")):  # noqa: S104 - PVE's words
        address = str(values.get(f"cidr{suffix}") or values.get(f"address{suffix}") or "").split("/")[0]
        static = values.get(f"method{suffix}") == "static" or values.get(f"cidr{suffix}")
        if static and address and address != empty:
            return True
    return False


def node_refusals(
    decl: Declared, action: str, form: Mapping[str, str], others: Mapping[str, Mapping[str, object]]
) -> list[str]:
    """PVE's refusals of this create or update (module docstring: the API's and the writer's),
    judged against the node's other interfaces ``others`` (``node_interfaces``), as sentences with
    PVE's words and the remedy."""
    if action not in ("create", "update"):
        return []
    name, kind = decl.names["name"], str(decl.values.get("type"))
    others = {iface: values for iface, values in others.items() if iface != name}
    out: list[str] = []

    def refuse(key: str, pve: str, where: str, remedy: str) -> None:
        out.append(f"{decl.label}: {key}: PVE refuses the write (`{pve}`, {where}). {remedy}")

    for key, what in (("gateway", "Default gateway"), ("gateway6", "Default ipv6 gateway")):
        holder = next((iface for iface, values in sorted(others.items()) if values.get(key)), None)
        if form.get(key) and holder:
            refuse(
                key,
                f"{what} already exists on interface '{holder}'.",
                "pve-manager PVE/API2/Network.pm $check_duplicate_gateway",
                f"A node has one default {key}: clear it on {holder} first (declare {holder} with {key}: '' "
                f"before this state), or leave {key} out here.",
            )
    sent = [port for key in PORT_KEYS for port in str(form.get(key) or "").split()]
    key = next((key for key in PORT_KEYS if form.get(key)), "bridge_ports")
    for port in sent:
        holder = next((iface for iface, values in sorted(others.items()) if port in _ports(values)), None)
        if holder:
            refuse(
                key,
                f"{port} is already used on interface '{holder}'.",
                "pve-manager PVE/API2/Network.pm $check_duplicate_ports",
                f"Take {port} out of {holder} first, or leave it out here.",
            )
    writer = "pve-common Network/Interfaces.pm __write_etc_network_interfaces"
    if kind == "bridge":
        for port in str(decl.values.get("bridge_ports") or "").split():
            if port not in others and not re.fullmatch(r"\S+\.[0-9]+", port):
                refuse(
                    "bridge_ports",
                    f"bridge '{name}' - unable to find bridge port '{port}'",
                    writer,
                    f"Name a port the node has, or declare {port} before this bridge.",
                )
            elif port in others and _has_address(others[port]):
                refuse(
                    "bridge_ports",
                    f"iface {port} - ip address can't be set on interface if bridged in {name}",
                    writer,
                    f"A bridge port carries no address: move {port}'s address to the bridge (clear cidr on "
                    f"{port} first), or leave {port} out.",
                )
    if kind == "bond":
        for slave in str(decl.values.get("slaves") or "").split():
            found = others.get(slave)
            if found is None:
                refuse(
                    "slaves",
                    f"bond '{name}' - unable to find slave '{slave}'",
                    writer,
                    f"Name a NIC the node has, or declare {slave} before this bond.",
                )
            elif found.get("type") not in ("eth", "bond"):
                refuse(
                    "slaves",
                    f"bond '{name}' - wrong interface type on slave '{slave}' ('{found.get('type')}' != "
                    "'eth or bond')",
                    writer,
                    "A bond's slaves are NICs or bonds.",
                )
    if kind == "vlan":
        dotted = re.fullmatch(r"(\S+)\.([0-9]+)", name)
        parent = dotted.group(1) if dotted else str(decl.values.get("vlan-raw-device") or "")
        found = others.get(parent)
        if found is None:
            refuse(
                "vlan-raw-device",
                f"vlan '{name}' - unable to find parent '{parent}'",
                writer,
                f"The raw device {parent} exists nowhere on node {decl.names['node']}: name a NIC, bond, "
                f"bridge or VLAN it has, or declare {parent} before this VLAN.",
            )
        elif found.get("type") not in ("eth", "bridge", "bond", "vlan"):
            refuse(
                "vlan-raw-device",
                f"vlan '{name}' - wrong interface type on parent '{parent}' ('{found.get('type')}' != "
                "'eth|bond|bridge|vlan' )",
                writer,
                "A VLAN's raw device is a NIC, bond, bridge or VLAN.",
            )
    if form.get("cidr") or form.get("cidr6"):
        for bridge, values in sorted(others.items()):
            if values.get("type") == "bridge" and name in str(values.get("bridge_ports") or "").split():
                refuse(
                    "cidr" if form.get("cidr") else "cidr6",
                    f"iface {name} - ip address can't be set on interface if bridged in {bridge}",
                    writer,
                    f"{name} is a port of {bridge}: put the address on {bridge}, or take {name} out of it "
                    "first.",
                )
    if decl.values.get("autostart") == 0:
        for bond, values in sorted(others.items()):
            if values.get("type") == "bond" and name in str(values.get("slaves") or "").split():
                out.append(
                    f"{decl.label}: autostart: it is a slave of {bond}, and PVE's writer turns autostart on "
                    f"for every slave of a bond ({writer}), so false would read back true on every run. "
                    "Declare autostart: true, or leave it out."
                )
    return out


def forced_on_others(decl: Declared, others: Mapping[str, Mapping[str, object]]) -> list[str]:
    """What the write changes on other interfaces by itself, as plan lines: a bond's write turns
    ``autostart`` on for each slave without it (``__write_etc_network_interfaces``, "check bond")."""
    if decl.values.get("type") != "bond":
        return []
    slaves = str(decl.values.get("slaves") or "").split()
    off = [slave for slave in slaves if slave in others and not others[slave].get("autostart")]
    if not off:
        return []
    return [
        f"{decl.label}: PVE turns autostart on for its slave(s) {', '.join(off)} as it writes the bond "
        "(pve-common Network/Interfaces.pm __write_etc_network_interfaces)"
    ]
