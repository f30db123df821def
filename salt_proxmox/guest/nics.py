"""PVE's rules for a guest's NICs (``netN``), containers and VMs alike, judged at plan.

Both families' ``netN`` name a ``bridge``, a VLAN ``tag`` and ``trunks`` by the same option names
(pve-container ``src/PVE/LXC/Config.pm`` ``$netconf_desc``, qemu-server
``src/PVE/QemuServer/Network.pm`` ``$net_fmt``). What PVE does with them:

- **The bridge must exist when the NIC is plugged, not when it is written.** The config write
  stores any name; the NIC is plugged when the guest starts or, on a running guest, when the write
  hot-plugs it: qemu-server ``QemuServer.pm`` ``print_netdev_full``/``vmconfig_update_net`` and the
  ``pve-bridge`` script (pve-network ``Zones.pm`` ``tap_plug``, pve-common ``Network.pm``
  ``tap_plug``: "bridge '<br>' is neither a linux nor an OVS bridge!", ``read_bridge_mtu``: "bridge
  '<br>' does not exist"); pve-container ``LXC.pm`` ``update_net``/``hotplug_net`` and
  ``Zones.pm`` ``veth_create``. A bridge is live when the node's running
  ``/etc/network/interfaces`` has it; one only in ``interfaces.new`` (staged: ``GET
  /nodes/{node}/network`` lists it, its ``changes`` diff adds it) is made live by that node's
  network apply, an SDN vnet only in the pending SDN configuration (``GET
  /cluster/sdn/vnets?pending=1``: ``state: new``) by the SDN apply — both only when they run, so
  a NIC plugged before is refused at plan. A plug happens at a start (a ``status: running``
  declaration, a create with it: every NIC of the guest), on a running guest when the write applies
  at once (a hot-plug: the NICs written) or at the reboot ``reboot_for_pending`` makes (the NICs
  waiting). Unless this same run makes the bridge live first (the formula orders guests after the
  node and SDN applies that name their bridges): then the plan says the guest depends on it.
- **A NIC written and not plugged in this run** (a stopped guest that stays stopped, a running
  one's NIC left pending) is stored by PVE and plugged at a later start. Refused all the same when
  no start could plug it: a bridge on no node of the cluster (each other node's ``GET
  /nodes/{node}/network/{name}``, pve-manager ``Network.pm`` ``network_config``), a VLAN the bridge
  will not take (below), a bridge only staged (only its node's network apply, which this run does
  not do, makes it live). Noted when a later step makes it start: a vnet only in the pending SDN
  configuration or made VLAN-aware there (the SDN apply), a bridge another node has (the guest
  starts there). NICs the write does not send are not judged unless a start is planned.
- **A VLAN on a vnet that is not VLAN-aware**: pve-network ``Zones/Plugin.pm`` ``tap_plug`` dies
  "vm vlans are not allowed on vnet <vnet>" for a ``tag`` or ``trunks`` on it; **trunks on a plain
  bridge that is not VLAN-aware**: pve-common ``Network.pm`` ``tap_plug`` dies "vlan aware feature
  need to be enabled to use trunks" (a tag on such a bridge is served by a ``<bridge>v<tag>``
  bridge it makes). Both read the running bridge's ``vlan_filtering``, so a vnet VLAN-aware only in
  the pending SDN configuration is refused when plugged and noted otherwise; a VLAN the bridge will
  not take once applied is refused either way.
- **A vnet whose zone leaves the guest's node out** (``nodes``): ``Zones.pm`` ``tap_plug`` dies "vnet
  <vnet> is not allowed on this node". Refused when plugged, noted otherwise (``zone_nodes``).
- **The bridge access PVE checks at the write** (pve-guest-common ``GuestHelpers.pm``
  ``check_vnet_access``, from qemu-server ``QemuServer.pm`` ``check_bridge_access`` in
  ``create_vm``/``update_vm_api`` — the old value too when a NIC is changed or deleted — and
  pve-container ``LXC.pm`` ``check_bridge_access`` in ``check_ct_modify_config_perm``, old and new):
  ``SDN.Use`` on ``/sdn/zones/<zone>/<bridge>`` (zone ``localnetwork`` for a bridge that is no
  vnet; a vnet's zone from the pending SDN configuration) or, with a ``tag``, on
  ``/sdn/zones/<zone>/<bridge>/<tag>`` (each trunk's tag likewise). The provision token's lack is
  refused at plan (``guest.refusals.provision_privilege_check``). Checked for every NIC a write
  names, whatever the guest's power.
- **``host-tunnel``** (a VM NIC option) came with qemu-server 9.1.18 (``facts.NEW_IN_PACKAGE``):
  refused on PVE 8, and on PVE 9 when the guest's node runs an older qemu-server
  (``facts.package_version``); not known (no Sys.Audit on the node) is a note.

Reads, each once per run and only when a NIC is written or a start planned: the node's listing
(``GET /nodes/{node}/network`` with its ``changes``, shared by the run's states) and the SDN vnets
(``GET /cluster/sdn/vnets?pending=1``, shared). The listings hide what the read credential may not
audit (a bridge without SDN.Audit/SDN.Use on ``/sdn/zones/localnetwork/<bridge>``, a vnet without
SDN.Audit on its zone path), so a name neither lists is proven absent by ``GET
/cluster/sdn/vnets/{name}`` (PVE's "sdn vnet '<name>' does not exist" for anyone) and ``GET
/nodes/{node}/network/{name}`` (400 ``interface does not exist``); a 403 there is a note.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from salt_proxmox.guest.change import live_text
from salt_proxmox.guest.refusals import provision_privilege_check, static_provision_token
from salt_proxmox.pve.client import api_path
from salt_proxmox.pve.errors import PveError, PveMalformed
from salt_proxmox.pve.facts import NEW_IN_PACKAGE, package_version, release, version_tuple
from salt_proxmox.pve.listing import get_rows, node_names, rows_of
from salt_proxmox.run.memo import node_applied, removed, sdn_applied
from salt_proxmox.simple.spec import planned
from salt_proxmox.wire.ifdiff import staged_additions, staged_deletions
from salt_proxmox.wire.propstring import flag, pairs

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.guest.family import Declaration, Family
    from salt_proxmox.run.context import PveContext

NIC = re.compile(r"net\d+", re.ASCII)
#: The zone pve-guest-common ``check_vnet_access`` names for a bridge that is no vnet.
LOCAL_ZONE = "localnetwork"
_BRIDGE_TYPES = ("bridge", "OVSBridge")


@dataclass(frozen=True)
class Nic:
    """One ``netN`` value's options that PVE checks: ``bridge``, ``tag``, ``trunks`` (``''``: not
    set) and whether it names ``host-tunnel``."""

    key: str
    bridge: str
    tag: str = ""
    trunks: str = ""
    host_tunnel: bool = False


def parse_nic(key: str, value: str) -> Nic:
    """``value`` of ``key`` (``netN``) as a Nic. A VM's model comes first with no key
    (``virtio=<MAC>`` or a bare ``virtio``). Raises ValueError for a value that is no property
    string."""
    options = dict(pairs(value, "model"))
    return Nic(
        key,
        options.get("bridge", ""),
        options.get("tag", ""),
        options.get("trunks", ""),
        "host-tunnel" in options,
    )


def trunk_tags(trunks: str) -> list[str]:
    """The VLAN ids of ``trunks`` (``10;20-22``) as pve-guest-common ``get_tags_from_trunk`` lists
    them: each id, each range expanded."""
    tags: list[str] = []
    for part in re.split(r"[;,\s]+", trunks.strip()):
        low, _, high = part.partition("-")
        if low.isdigit() and high.isdigit():
            tags.extend(str(tag) for tag in range(int(low), int(high) + 1))
        elif low.isdigit():
            tags.append(low)
    return tags


@dataclass(frozen=True)
class Bridge:
    """What a NIC's bridge will be when the NIC is plugged in this run (``bridge_state``).

    ``state``: ``live`` (exists now and stays), ``made`` (this run's ``by`` makes it live before
    the guest), ``staged`` (only in the node's ``interfaces.new``), ``pending`` (an SDN vnet not
    applied), ``missing``, ``unchecked`` (``said``: why it could not be told). ``vnet``: it is an SDN
    vnet; ``zone``: the zone ``check_vnet_access`` names (None: not known); ``vlan_aware``: the
    bridge's VLAN filtering when plugged in this run (None: not known); ``vlan_after``: a vnet's
    once the pending SDN configuration is applied (None: as ``vlan_aware``)."""

    name: str
    state: str
    vnet: bool = False
    zone: str | None = LOCAL_ZONE
    vlan_aware: bool | None = None
    by: str = ""
    said: str = ""
    vlan_after: bool | None = None


def _true(value: object) -> bool:
    try:
        return flag(live_text(value) or "0") == "1"
    except ValueError:
        return False


def _vnet_rows(ctx: PveContext) -> dict[str, Mapping]:
    """``{vnet: row}`` of ``GET /cluster/sdn/vnets?pending=1`` (shared by the run)."""
    rows = get_rows(
        ctx.client, "cluster/sdn/vnets", ctx.broker.read(), {"pending": "1"}, what="vnets", reads=ctx.reads
    )
    return {str(row["vnet"]): row for row in rows if isinstance(row.get("vnet"), str)}


def node_listing(ctx: PveContext, node: str) -> tuple[dict[str, Mapping], str]:
    """``({iface: row}, staged diff)`` of ``GET /nodes/{node}/network`` (shared by the run)."""
    path = api_path("nodes", node, "network")
    body = ctx.reads.shared(ctx.client, path, ctx.broker.read(), envelope=True)
    try:
        rows = rows_of(body.get("data") if isinstance(body, Mapping) else None, "interfaces")
    except ValueError as why:
        raise PveMalformed("GET", path, f"data: {why}") from None
    changes = body.get("changes") if isinstance(body, Mapping) else None
    return {str(row["iface"]): row for row in rows if isinstance(row.get("iface"), str)}, (
        changes if isinstance(changes, str) else ""
    )


def _vnet_state(ctx: PveContext, name: str, row: Mapping | None, made: Mapping | None) -> Bridge:
    """A vnet's Bridge from its pending-listing ``row`` and what this run writes to it (``made``)."""
    covered = sdn_applied(ctx.memo, ctx.target.name)
    running: dict | None = None
    after: dict | None = None
    if row is not None:
        top = {key: value for key, value in row.items() if key not in ("pending", "state")}
        if row.get("state") != "new":
            running = top
        if row.get("state") != "deleted":
            changes = row.get("pending") if isinstance(row.get("pending"), Mapping) else {}
            after = {**top, **changes}  # type: ignore[dict-item]
            after = {key: value for key, value in after.items() if value != "deleted"}
    if made is not None:
        after = {**(after or {}), **made}
    if name in removed(ctx.memo, ctx.target.name, "sdn"):
        after = None
    # check_vnet_access reads the pending SDN configuration for the zone.
    zone = str((after or running or {}).get("zone") or "") or None
    if covered and after is not None:
        state = "live" if running is not None else "made"
        return Bridge(name, state, True, zone, _true(after.get("vlanaware")), by="this run's SDN apply")
    later = _true(after.get("vlanaware")) if after is not None else None
    if running is not None and not covered:
        return Bridge(name, "live", True, zone, _true(running.get("vlanaware")), vlan_after=later)
    if running is not None:
        return Bridge(name, "missing", True, zone)
    return Bridge(name, "pending", True, zone, vlan_after=later)


def _hidden(ctx: PveContext, node: str, name: str) -> Bridge:
    """A name neither listing shows: proven absent by both single reads, else unchecked."""
    credential = ctx.broker.read()
    try:
        ctx.client.request("GET", api_path("cluster", "sdn", "vnets", name), credential)
        return Bridge(name, "unchecked", True, None, said="the read token may not audit this vnet")
    except PveError as exc:
        if exc.status == 403:
            return Bridge(name, "unchecked", True, None, said=exc.message)
        if f"sdn vnet '{name}' does not exist" not in exc.message:
            raise
    try:
        ctx.client.request("GET", api_path("nodes", node, "network", name), credential)
        return Bridge(name, "unchecked", said="the node network listing hides it from the read token")
    except PveError as exc:
        if exc.status == 403:
            return Bridge(name, "unchecked", said=exc.message)
        if exc.status != 400:
            raise
    return Bridge(name, "missing")


def bridge_state(ctx: PveContext, node: str, name: str) -> Bridge:
    """What bridge ``name`` on ``node`` will be when a NIC of this run is plugged (see ``Bridge``),
    from the shared listings and what this run's earlier states create, stage, apply or remove
    (``simple.spec.planned``, ``run.memo`` ``node_applied``/``removed``/``sdn_applied``).

    Raises PveError, PveMalformed, PveUnreachable, CredentialError."""
    vnets = _vnet_rows(ctx)
    made_vnet = planned(ctx, "sdn_vnet").get(name)
    if name in vnets or made_vnet is not None:
        return _vnet_state(ctx, name, vnets.get(name), made_vnet)
    rows, diff = node_listing(ctx, node)
    covered = node_applied(ctx.memo, ctx.target.name, node)
    made = planned(ctx, "network_interface").get(f"{node}/{name}")
    gone = name in removed(ctx.memo, ctx.target.name, f"node {node}")
    staged_new = name in staged_additions(diff)
    row = rows.get(name)
    values = {**(row or {}), **(made or {})}
    if row is None and made is None:
        if name in staged_deletions(diff):
            return Bridge(name, "missing" if covered else "live")
        return _hidden(ctx, node, name)
    if values.get("type") not in _BRIDGE_TYPES:
        return Bridge(name, "missing", said=f"it is a {values.get('type') or 'typeless'} interface")
    aware = _true(values.get("bridge_vlan_aware")) or values.get("type") == "OVSBridge"
    if gone:
        return Bridge(name, "missing" if covered else "live", vlan_aware=aware)
    if staged_new or (made is not None and row is None):
        by = f"this run's network apply of node {node}"
        return Bridge(name, "made" if covered else "staged", vlan_aware=aware, by=by)
    return Bridge(name, "live", vlan_aware=aware)


@dataclass
class NicPlan:
    """What ``judge`` found: ``refusals`` (nothing is written), ``notes`` (plan lines)."""

    refusals: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _not_there(bridge: Bridge, node: str, elsewhere: str = "") -> str:
    """Why a NIC on ``bridge`` cannot be plugged now, in PVE's words, and the remedy; '' when it
    can. ``elsewhere``: what the other nodes have, said of a missing bridge."""
    if bridge.state == "staged":
        return (
            f"bridge '{bridge.name}' is only staged on node {node} (interfaces.new); PVE's plug fails "
            f"(`bridge '{bridge.name}' does not exist`, pve-common Network.pm read_bridge_mtu/tap_plug) "
            f"until the node's network apply makes it live. Apply it first (proxmox:networks:{node}: apply: "
            f"true, or proxmox_network.applied node={node})"
        )
    if bridge.state == "pending":
        return (
            f"vnet '{bridge.name}' is in the pending SDN configuration only (state new); PVE plugs a NIC "
            "into the running one (pve-network Zones.pm tap_plug: get_vnet(<vnet>, running)), so the plug "
            f"fails (`bridge '{bridge.name}' does not exist`) until the SDN apply commits it. Apply it first "
            "(proxmox:sdn: apply: true, or proxmox_sdn.applied)"
        )
    if bridge.state == "missing":
        why = f" ({bridge.said})" if bridge.said else ""
        return (
            f"bridge '{bridge.name}' does not exist on node {node}{why}{elsewhere}; PVE's plug fails "
            f"(`bridge '{bridge.name}' does not exist`, pve-common Network.pm read_bridge_mtu/tap_plug). "
            "Declare the bridge (a node interface or an SDN vnet) and its apply in this run, or name one "
            "that exists"
        )
    return ""


def zone_nodes(ctx: PveContext, zone: str | None) -> list[str]:
    """The nodes zone ``zone`` is limited to (``[]``: every node, or not known) as a plug reads them:
    pve-network ``Zones.pm`` ``get_plugin_config`` takes ``zones.cfg`` as written (``config()``, not the
    running configuration), so ``GET /cluster/sdn/zones`` (the listing without ``running``, shared) and
    this run's own zone writes. Raises what the listing raises."""
    if not zone:
        return []
    rows = get_rows(ctx.client, "cluster/sdn/zones", ctx.broker.read(), what="zones", reads=ctx.reads)
    row = {
        **next((r for r in rows if r.get("zone") == zone), {}),
        **(planned(ctx, "sdn_zone").get(zone) or {}),
    }
    nodes = row.get("nodes")
    text = ",".join(map(str, nodes)) if isinstance(nodes, list | tuple) else str(live_text(nodes) or "")
    return [name for name in re.split(r"[,;\s]+", text) if name]


def _barred(ctx: PveContext, bridge: Bridge, node: str) -> tuple[str, list[str]]:
    """``(why, nodes)`` when vnet ``bridge``'s zone leaves ``node`` out: pve-network ``Zones.pm``
    ``tap_plug`` dies "vnet <vnet> is not allowed on this node" (a container's ``lxcnetaddbr`` hook
    plugs through it too); ``('', [])`` otherwise."""
    if not bridge.vnet or bridge.state not in ("live", "made"):
        return "", []
    nodes = zone_nodes(ctx, bridge.zone)
    if not nodes or node in nodes:
        return "", []
    return (
        f"vnet '{bridge.name}' is in zone {bridge.zone}, which is limited to node {', '.join(nodes)}: PVE's "
        f"plug on {node} dies `vnet {bridge.name} is not allowed on this node` (pve-network Zones.pm "
        f"tap_plug). Add {node} to the zone's nodes, or put the guest on one of them"
    ), nodes


def _vlan_problem(nic: Nic, bridge: Bridge) -> str:
    """Why PVE's plug refuses ``nic``'s VLANs on ``bridge`` as a plug in this run finds it ('' when
    it does not)."""
    if bridge.vlan_aware is not False:
        return ""
    if bridge.vnet and (nic.tag or nic.trunks) and bridge.vlan_after:
        return (
            f"vnet '{bridge.name}' is VLAN-aware in the pending SDN configuration only; PVE's plug reads the "
            f"running one and dies `vm vlans are not allowed on vnet {bridge.name}` (pve-network "
            "Zones/Plugin.pm tap_plug) until the SDN apply commits it. Apply it first (proxmox:sdn: apply: "
            "true, or proxmox_sdn.applied)"
        )
    if bridge.vnet and (nic.tag or nic.trunks):
        option = "tag" if nic.tag else "trunks"
        return (
            f"{option} on vnet '{bridge.name}', which is not VLAN-aware: PVE's plug dies `vm vlans are not "
            f"allowed on vnet {bridge.name}` (pve-network Zones/Plugin.pm tap_plug). Declare vlanaware: true "
            f"on the vnet (and apply it), or drop {option}"
        )
    if not bridge.vnet and nic.trunks:
        return (
            f"trunks on bridge '{bridge.name}', which is not VLAN-aware: PVE's plug dies `vlan aware feature "
            "need to be enabled to use trunks` (pve-common Network.pm tap_plug). Declare bridge_vlan_aware "
            "on the bridge (and apply it), or drop trunks"
        )
    return ""


def _elsewhere(ctx: PveContext, node: str, name: str) -> tuple[list[str], list[str]]:
    """The cluster's other nodes that have bridge ``name`` (this run declares it there, or pve-manager
    ``Network.pm`` ``network_config``, Sys.Audit on the node, lists it: 400 ``interface does not
    exist`` when not), and ``<node>: <why>`` for each that could not tell. Raises PveMalformed,
    PveUnreachable, CredentialError (``GET /nodes``)."""
    credential = ctx.broker.read()
    made = planned(ctx, "network_interface")
    have: list[str] = []
    unknown: list[str] = []
    for other in node_names(ctx.client, credential):
        if other == node:
            continue
        row = made.get(f"{other}/{name}")
        if row is None:
            try:
                row = ctx.client.request("GET", api_path("nodes", other, "network", name), credential)
            except PveError as exc:
                if exc.status != 400:
                    unknown.append(f"{other}: {exc.message}")
                continue
        if isinstance(row, Mapping) and row.get("type") in _BRIDGE_TYPES:
            have.append(other)
    return have, unknown


def _unplugged(
    ctx: PveContext, nic: Nic, bridge: Bridge, node: str, problem: str, noun: str
) -> tuple[str, str]:
    """``(refusal, note)`` for a NIC written and not plugged in this run whose plug now has
    ``problem``: a refusal when no later start could plug it (module docstring), else a note."""
    if bridge.vlan_after is not None:
        bridge = replace(bridge, vlan_aware=bridge.vlan_after)
    lasting = _vlan_problem(nic, bridge)
    never = f", then run again. PVE would store the NIC, and every start of the {noun} on {node} would fail."
    if lasting or (bridge.state == "missing" and bridge.vnet):
        return (lasting or problem) + never, ""
    if bridge.state == "staged":
        return (
            f"{problem}, then run again. PVE would store the NIC, and the {noun} would not start until that "
            "apply, which this run does not make."
        ), ""
    if bridge.state == "missing":
        have, unknown = _elsewhere(ctx, node, bridge.name)
        if have:
            return "", _not_there(
                bridge, node, f" (node {', '.join(have)} has it: the {noun} can start there)"
            )
        if unknown:
            return "", f"{problem}; whether another node has it is not known ({'; '.join(unknown)})"
        return _not_there(bridge, node, " nor on any other node of the cluster") + never, ""
    return "", problem


def _access_paths(nic: Nic, zone: str) -> list[str]:
    """The paths pve-guest-common ``check_vnet_access`` checks SDN.Use on for ``nic``."""
    base = f"/sdn/zones/{zone}/{nic.bridge}"
    tags = ([nic.tag] if nic.tag else []) + trunk_tags(nic.trunks)
    return [f"{base}/{tag}" for tag in dict.fromkeys(tags)] if tags else [base]


def bridge_zone(ctx: PveContext, name: str) -> str | None:
    """The zone ``check_vnet_access`` names for bridge ``name``: its vnet's in the pending SDN
    configuration, else ``localnetwork``; None when a vnet the read token may not see could hold
    the name."""
    vnets = _vnet_rows(ctx)
    made = planned(ctx, "sdn_vnet").get(name)
    if name in vnets or made is not None:
        row = vnets.get(name) or {}
        pending = row.get("pending") if isinstance(row.get("pending"), Mapping) else {}
        zone = (made or {}).get("zone") or pending.get("zone") or row.get("zone")  # type: ignore[union-attr]
        return str(zone) if zone else None
    return LOCAL_ZONE


def access_refusal(nic: Nic, path: str, zone: str, who: str) -> str:
    """The refusal of ``nic`` for a caller (``who``) without SDN.Use on ``path``."""
    return (
        f"{nic.key}: PVE lets a caller put a NIC on bridge {nic.bridge} only with SDN.Use on {path} "
        "(pve-guest-common GuestHelpers.pm check_vnet_access, from check_bridge_access), and "
        f"{who} does not hold it (`Permission check failed ({path}, SDN.Use)`). Grant the provision "
        f"token SDN.Use on {path} (or on /sdn/zones/{zone}/{nic.bridge}, propagated), or name a bridge "
        "it may use."
    )


def access_checks(ctx: PveContext, family: Family, decl: Declaration, nics: Iterable[Nic]) -> NicPlan:
    """SDN.Use of the provision token on each path ``check_vnet_access`` checks for ``nics`` (every
    NIC value the write names, old and new), read as ``provision_privilege_check`` reads it."""
    found = NicPlan()
    nics = [nic for nic in nics if nic.bridge]
    if nics and static_provision_token(ctx) is None:
        # Nothing to read: the minted token is PVE's to check (provision_privilege_check's note).
        named = ", ".join(dict.fromkeys(f"{nic.key} ({nic.bridge})" for nic in nics))
        found.notes += [
            f"{family.what(decl.vmid, decl.node)}: {note}"
            for note in provision_privilege_check(
                ctx, "SDN.Use", f"the bridges of {named}", "check_vnet_access", str, "is checked by PVE "
                "when the write is sent",
            )[1]
        ]  # fmt: skip
        return found
    seen: set[str] = set()
    for nic in nics:
        zone = bridge_zone(ctx, nic.bridge)
        if zone is None:
            found.notes.append(
                f"{family.what(decl.vmid, decl.node)}: {nic.key}: the SDN.Use PVE checks on vnet "
                f"{nic.bridge} is checked by PVE when the write is sent: the read token may not see its zone"
            )
            continue
        for path in _access_paths(nic, zone):
            if path in seen:
                continue
            seen.add(path)
            refusals, notes = provision_privilege_check(
                ctx,
                "SDN.Use",
                path,
                f"needed for {nic.key} on {nic.bridge}",
                lambda who, path=path, nic=nic, zone=zone: access_refusal(nic, path, zone, who),
                "is checked by PVE when the write is sent",
            )
            found.refusals += refusals
            found.notes += [f"{family.what(decl.vmid, decl.node)}: {note}" for note in notes]
    return found


def host_tunnel_refusals(ctx: PveContext, family: Family, decl: Declaration, nics: Iterable[Nic]) -> NicPlan:
    """``host-tunnel`` on a VM NIC where the node's qemu-server predates it
    (``facts.NEW_IN_PACKAGE``): PVE 8 from the release alone; PVE 9 from the node's package version,
    read only when a written NIC names it."""
    found = NicPlan()
    named = [nic.key for nic in nics if nic.host_tunnel]
    if family.kind != "qemu" or not named:
        return found
    package, first = NEW_IN_PACKAGE["net"]["host-tunnel"]
    since = ".".join(map(str, first))
    cluster = release(ctx)
    why = ""
    if cluster.major < 9:
        why = f"this cluster runs PVE {cluster.release}"
    else:
        installed = package_version(ctx, decl.node, package)
        numbers = version_tuple(installed.version) if installed.version else None
        if numbers is None:
            found.notes.append(
                f"{family.what(decl.vmid, decl.node)}: {', '.join(named)}: host-tunnel needs {package} "
                f"{since} on {decl.node}, checked by PVE when the write is sent: its version is not known "
                f"({installed.said or 'unreadable'})"
            )
            return found
        if numbers < first:
            why = f"node {decl.node} runs {package} {installed.version}"
    if why:
        found.refusals.append(
            f"{', '.join(named)}: host-tunnel= is an option of {package} {since} on "
            f"(src/PVE/QemuServer/Network.pm $net_fmt); {why}, whose qemu-server refuses it (`invalid key "
            f"in comma-separated list property: host-tunnel`). Upgrade the node's {package}, or drop "
            "host-tunnel."
        )
    return found


def parsed(values: Mapping[str, object]) -> list[Nic]:
    """The NICs of ``values`` (key -> value), sorted by key; values that do not parse are left to
    the judge."""
    out = []
    for key in sorted(values):
        value = live_text(values[key])
        if NIC.fullmatch(key) and value:
            try:
                out.append(parse_nic(key, value))
            except ValueError:
                continue
    return out


def judge(
    ctx: PveContext,
    family: Family,
    decl: Declaration,
    written: Mapping[str, object],
    replaced: Mapping[str, object],
    plugged: Iterable[str],
    later: str = "",
    config: Mapping[str, object] | None = None,
) -> NicPlan:
    """PVE's NIC rules (module docstring) for one guest write: ``written`` the NIC values the write
    sends (key -> value), ``replaced`` the values it changes or deletes (their access is checked
    too), ``plugged`` the NIC keys plugged in this run (a start or a reboot: every NIC; a hot-plug:
    those written), ``later`` what becomes of a written NIC that is not plugged now and is only
    noted (default: the guest cannot start before the remedy; a written NIC no later start could
    plug is refused, ``_unplugged``), ``config`` the guest's NICs as they will be (default
    ``written``). Nothing is read when the write names no NIC and nothing is plugged.

    Raises PveError, PveMalformed, PveUnreachable, CredentialError."""
    what = family.what(decl.vmid, decl.node)
    nics = parsed(written)
    found = NicPlan()
    if nics:
        more = host_tunnel_refusals(ctx, family, decl, nics)
        found.refusals += more.refusals
        found.notes += more.notes
        more = access_checks(ctx, family, decl, [*parsed(replaced), *nics])
        found.refusals += more.refusals
        found.notes += more.notes
    every = {nic.key: nic for nic in parsed(config if config is not None else written)}
    plugged = set(plugged)
    for key, nic in sorted(every.items()):
        if not nic.bridge or (key not in plugged and key not in written):
            continue
        bridge = bridge_state(ctx, decl.node, nic.bridge)
        barred, nodes = _barred(ctx, bridge, decl.node)
        problem = _not_there(bridge, decl.node) or barred or _vlan_problem(nic, bridge)
        if bridge.state == "unchecked":
            found.notes.append(
                f"{what}: {key}: whether bridge '{nic.bridge}' exists on {decl.node} is not known "
                f"({bridge.said}); PVE tells when the NIC is plugged"
            )
        elif problem and key in plugged:
            found.refusals.append(f"{key}: {problem}, then run again.")
        elif problem and problem == barred:
            found.notes.append(
                f"{what}: {key}: {barred}. The write goes through; the {family.noun} can start on "
                f"{', '.join(nodes)} only"
            )
        elif problem:
            refusal, note = _unplugged(ctx, nic, bridge, decl.node, problem, family.noun)
            if refusal:
                found.refusals.append(f"{key}: {refusal}")
            else:
                found.notes.append(
                    f"{what}: {key}: {note}. The write goes through; "
                    + (later or f"the {family.noun} cannot start on {decl.node} before that")
                )
        elif bridge.state == "made":
            found.notes.append(
                f"{what}: {key} depends on {bridge.by}, which makes bridge '{nic.bridge}' live before it"
            )
    return found


def create_plan(ctx: PveContext, family: Family, decl: Declaration, start: bool) -> NicPlan:
    """``judge`` for a create: every declared NIC is written; with ``start`` (``status: running``)
    every one is plugged by the start that follows."""
    written = {key: value for key, value in decl.config.items() if NIC.fullmatch(key)}
    return judge(ctx, family, decl, written, {}, written if start else ())


def update_plan(
    ctx: PveContext,
    family: Family,
    decl: Declaration,
    put: Mapping[str, str],
    clear: Iterable[str],
    merged: Mapping[str, object],
    running: bool,
    now: Iterable[str],
    whole: bool,
) -> NicPlan:
    """``judge`` for a write of ``put``/``clear`` to an existing guest whose config (pending merged)
    is ``merged``: on a ``running`` guest the NICs it writes that apply at once (``now``) are
    hot-plugged; ``whole`` (a start or a reboot of this run) plugs every NIC the guest will have.
    Nothing is read when the write names no NIC and ``whole`` is False."""
    clear = [key for key in clear if NIC.fullmatch(key)]
    written = {key: value for key, value in put.items() if NIC.fullmatch(key)}
    replaced = {key: merged[key] for key in [*written, *clear] if merged.get(key) is not None}
    if not written and not clear and not whole:
        return NicPlan()
    after = {key: value for key, value in merged.items() if NIC.fullmatch(key) and key not in clear}
    after.update(written)
    if whole:
        plugged: Iterable[str] = after
    else:
        plugged = [key for key in written if running and key in set(now)]
    later = (
        "it waits for the next start, which fails before that"
        if running
        else f"the {family.noun} cannot start on {decl.node} before that"
    )
    return judge(ctx, family, decl, written, replaced, plugged, later, after)


def writes_nic(change: object) -> bool:
    """True when a judge's ``Change`` writes or deletes a ``netN``."""
    keys = [*getattr(change, "put", {}), *getattr(change, "clear", [])]
    return any(NIC.fullmatch(key) for key in keys)
