"""PVE's refusals of SDN controller, IPAM and DNS writes, predicted at plan (docs/design.md §7b).

Read from pve-network master ``ecf98c5`` (PVE 9) and ``stable-bookworm`` (PVE 8), judged with the
read credential's listings and what this run declares before (``rules.known``):

- controller create/update: ``Controllers/EvpnPlugin.pm`` ``on_update_hook``: one evpn controller per
  cluster (``only 1 global evpn controller can be defined``); PVE 9: exactly one of ``peers``/``fabric``
  (``must have exactly one of peers / fabric defined``); PVE 8 has no fabrics and requires ``peers``
  (its ``options``). ``BgpPlugin.pm``/``IsisPlugin.pm`` ``on_update_hook`` mean "one bgp (isis)
  controller per node" (``only 1 bgp controller can be defined``) but count only the node answering
  the write and refuse from the third; each such controller writes that node's ``router bgp``
  (``generate_frr_config`` skips the other nodes'), so a second one for a node is refused here.
- every update: the type cannot change (``update`` looks the plugin up from the stored section and
  takes no ``type``).
- delete: an object a zone names (live, or declared by this run) is not deleted from under it.
  PVE refuses that for a controller (Evpn/BgpPlugin ``on_delete_hook``: ``controller <id> is used by
  <zone>``); ``Ipams.pm``/``Dns.pm`` ``delete`` do not look, and the zone would keep naming an IPAM
  or DNS server no longer there (its next subnet or guest IP write fails). PVE's ``pve`` IPAM is
  never deleted: ``Ipams.pm`` ``config`` adds it back to every read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from salt_proxmox.pve import facts
from salt_proxmox.sdn import rules
from salt_proxmox.simple.spec import Declared

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.run.context import PveContext

#: The zone keys naming each kind (``Zones/Plugin.pm`` ``properties``, ``EvpnPlugin`` ``controller``).
ZONE_KEYS = {"controller": ("controller",), "ipam": ("ipam",), "dns": ("dns", "reversedns")}


def _type_change(decl: Declared, live: Mapping[str, object] | None, kind: str) -> list[str]:
    if live is None or live.get("type") == decl.values.get("type"):
        return []
    return [
        f"{decl.label} is a {live.get('type')} {kind}, and PVE cannot change its type (update looks the "
        f"plugin up from the stored section and takes no type). Declare the {decl.values.get('type')} one "
        "under a new id (and this one absent)."
    ]


def users(ctx: PveContext, kind: str, name: str) -> list[str]:
    """The zones (live, or as this run declares them) whose ``ZONE_KEYS[kind]`` name ``name``.
    Raises as the zones listing's read."""
    return sorted(
        zone
        for zone, opts in rules.zones(ctx).items()
        if any(str(opts.get(key) or "") == name for key in ZONE_KEYS[kind])
    )


def _in_use(ctx: PveContext, decl: Declared, kind: str, pve: str) -> list[str]:
    zones = users(ctx, kind, decl.names["name"])
    if not zones:
        return []
    return [
        f"{decl.label}: zone(s) {', '.join(zones)} name it, and it is not deleted from under them ({pve}). "
        f"Change or remove those zones first (proxmox:sdn:zones), then delete it."
    ]


def controller_refusals(
    ctx: PveContext, decl: Declared, action: str, live: Mapping[str, object] | None
) -> list[str]:
    """PVE's refusals of a controller write (module docstring). Raises what the listings' reads raise."""
    if action == "delete":
        return _in_use(ctx, decl, "controller", "PVE: `controller <id> is used by <zone>`, on_delete_hook")
    out = _type_change(decl, live, "controller")
    name, values = decl.names["name"], decl.values
    kind = values.get("type")
    others = {oid: opts for oid, opts in rules.known(ctx, "controller").items() if oid != name}
    if kind == "evpn":
        for other, opts in sorted(others.items()):
            if opts.get("type") == "evpn":
                out.append(
                    f"{decl.label}: controller {other} is the cluster's evpn controller already, and PVE "
                    "refuses a second (`only 1 global evpn controller can be defined`, EvpnPlugin "
                    f"on_update_hook). Use {other}, or remove it first."
                )
        peers, fabric = values.get("peers"), values.get("fabric")
        if facts.release(ctx).major < 9:
            if fabric:
                out.append(
                    f"{decl.label}: fabric is PVE 9's; this cluster runs PVE 8, whose evpn controller "
                    "takes peers."
                )
            elif not peers:
                out.append(
                    f"{decl.label}: an evpn controller needs peers on PVE 8 (EvpnPlugin: peers is not "
                    "optional)."
                )
        elif bool(peers) == bool(fabric):
            out.append(
                f"{decl.label}: declare exactly one of peers and fabric; PVE refuses both or neither "
                "(`must have exactly one of peers / fabric defined`, EvpnPlugin on_update_hook)."
            )
    if kind in ("bgp", "isis"):
        node = values.get("node")
        for other, opts in sorted(others.items()):
            if opts.get("type") == kind and str(opts.get("node") or "") == node:
                out.append(
                    f"{decl.label}: controller {other} is node {node}'s {kind} controller already; PVE means "
                    f"one per node (`only 1 bgp{' or isis' if kind == 'isis' else ''} controller can be "
                    f"defined`, {kind.capitalize()}Plugin on_update_hook) and both would write that node's "
                    f"FRR router. Declare one {kind} controller for node {node}."
                )
    return out


def missing_secret(
    decl: Declared, action: str, live: Mapping[str, object] | None, secrets, kind: str
) -> list[str]:
    """A create without the type's secret (``token``, ``key``: required by its plugin's ``options``),
    or a ``secret_serial`` bump without it, refused naming the key and where it comes from."""
    due = action == "create" or (
        "secret_serial" in decl.values and (live or {}).get("secret_serial") != decl.values["secret_serial"]
    )
    return [
        f"{key}: a {decl.values.get('type')} {kind} needs it to be written (PVE requires it at create; "
        "secret_serial writes it again): declare it in pillar, at the path the state's secrets_pillar names"
        for key in secrets
        if due and key not in decl.secrets
    ]


def ipam_refusals(
    ctx: PveContext, decl: Declared, action: str, live: Mapping[str, object] | None
) -> list[str]:
    """An IPAM's type change, its token missing; the delete of ``pve`` or of one a zone names. Raises
    as the listings' reads raise."""
    if action != "delete":
        needs = ("token",) if decl.values.get("type") in ("netbox", "phpipam") else ()
        return _type_change(decl, live, "IPAM") + missing_secret(decl, action, live, needs, "IPAM")
    if decl.names["name"] == "pve":
        return [
            f"{decl.label} is PVE's own IPAM, never deleted: Ipams.pm config adds it to every read, and the "
            "zones and guests it serves keep their addresses there. Declare it present (adopt: true), or "
            "absent with removal: retain."
        ]
    return _in_use(ctx, decl, "ipam", "Ipams.pm delete does not look: the zone would name no IPAM")


def dns_refusals(
    ctx: PveContext, decl: Declared, action: str, live: Mapping[str, object] | None
) -> list[str]:
    """A DNS server's type change, its key missing; the delete of one a zone names. Raises as the
    listings' reads raise."""
    if action != "delete":
        return _type_change(decl, live, "DNS server") + missing_secret(
            decl, action, live, ("key",), "DNS server"
        )
    return _in_use(ctx, decl, "dns", "Dns.pm delete does not look: the zone would name no DNS server")


def direct_side_effects(ctx: PveContext, decl: Declared, action: str) -> list[str]:
    """An IPAM or DNS write is not staged: it takes effect as written, and PVE first asks the server's
    API (``on_update_hook``: ``verify_api``, ``powerdns_api_request``)."""
    now = (
        f"{decl.label}: written to the SDN configuration at once (Ipams.pm/Dns.pm keep no pending copy): "
        "it takes effect without the SDN apply"
    )
    if action == "delete" or decl.values.get("type") == "pve":
        return [now]
    return [
        now,
        f"{decl.label}: PVE asks {decl.values.get('url')} from the node taking the write before it saves it "
        "(on_update_hook): an unreachable or refusing server refuses the write and nothing is saved",
    ]
