"""PVE's refusals of SDN zone, vnet and subnet writes, predicted at plan (docs/design.md §7b).

pve-network checks each write against the rest of the SDN configuration under its lock and refuses
what does not fit. Each rule below is read from the source (pve-network master ``ecf98c5``, and
``stable-bookworm`` for PVE 8) and judged here with the ``read`` credential's listings, so the plan
refuses what the apply would meet, with PVE's own words and a remedy:

- zone (``src/PVE/API2/Network/SDN/Zones.pm`` ``create``/``update``): ``dns`` and ``reversedns``
  must name a DNS server (``<id> don't exist``), ``dnszone`` needs ``dns`` (``missing dns
  server``), ``ipam`` must name an IPAM (``<id> not existing``), and ``ipam`` cannot change while a
  subnet of the zone exists (``can't change ipam if a subnet is already defined in this zone``);
  ``Zones/EvpnPlugin.pm`` ``on_update_hook``: the ``controller`` must exist and be an ``evpn`` one,
  ``vrf-vxlan`` unique among zones; ``Zones/VxlanPlugin.pm`` ``on_update_hook``: exactly one of
  ``peers``/``fabric`` (PVE 9; PVE 8 has no fabrics and requires ``peers``);
- vnet (``API2/Network/SDN/Vnets.pm`` ``create``/``update`` and each zone plugin's
  ``vnet_update_hook``): the zone must exist; ``simple``: no tag (``vlan tag is not allowed on
  simple zone``); ``vlan``: a tag (``missing vlan tag``) of at most 4096, unique in the zone;
  ``qinq``: at most 4096, unique in the zone, one tag-less vnet per zone; ``vxlan``/``evpn``: a tag
  (``missing vxlan tag``) of at most 16777216, unique among every vxlan and evpn zone's vnets, and
  ``evpn`` takes no ``vlanaware``; ``VnetPlugin.pm`` ``on_update_hook``: a ``vlanaware`` vnet has
  no subnet; ``update``: the zone cannot change while subnets exist;
- subnet (``SubnetPlugin.pm`` ``on_update_hook``): the vnet must exist (``<vnet> don't exist``)
  and not be VLAN-aware (``you can't add a subnet on a vlanaware vnet``).

What the run itself creates or changes earlier counts (``simple.spec.planned``): a vnet declared
with the zone it names is judged by that zone's declared type. The listings show only what the
read credential may audit (``SDN.Audit``), so a tag another, hidden vnet holds is PVE's to refuse at
apply; what PVE answers then is shown as it is.

Side effects the plan states (``side_effects``): a subnet in a zone with an IPAM is registered in
that IPAM (and its gateway with it) by the write itself, before any SDN apply
(``SubnetPlugin.pm`` ``on_update_hook`` → ``Subnets::add_subnet``/``add_ip``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from salt_proxmox.pve import facts
from salt_proxmox.pve.client import api_path
from salt_proxmox.pve.listing import get_rows
from salt_proxmox.simple.spec import Declared, planned

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.run.context import PveContext

ZONES = "cluster/sdn/zones"
VNETS = "cluster/sdn/vnets"
#: ``vlan`` and ``qinq`` tags (``VlanPlugin``/``QinQPlugin`` ``vnet_update_hook``).
VLAN_MAX = 4096
#: ``vxlan`` and ``evpn`` tags (``VxlanPlugin``/``EvpnPlugin`` ``vnet_update_hook``).
VXLAN_MAX = 16777216
#: Zone types whose vnets share one VXLAN id space.
VXLAN_TYPES = ("vxlan", "evpn")


def _rows(ctx: PveContext, path: str, what: str) -> list[Mapping]:
    """One SDN listing as the run shares it (``ReadAhead.shared``). Raises as ``get_rows``."""
    return get_rows(ctx.client, path, ctx.broker.read(), what=what, reads=ctx.reads)


def zones(ctx: PveContext) -> dict[str, Mapping[str, object]]:
    """``{zone: options}``: the zones listing, with what this run creates or changes laid over it."""
    found: dict[str, Mapping[str, object]] = {
        str(row["zone"]): row for row in _rows(ctx, ZONES, "zones") if isinstance(row.get("zone"), str)
    }
    found.update(planned(ctx, "sdn_zone"))
    return found


def vnets(ctx: PveContext) -> dict[str, Mapping[str, object]]:
    """``{vnet: options}``: the vnets listing, with what this run creates or changes laid over it."""
    found: dict[str, Mapping[str, object]] = {
        str(row["vnet"]): row for row in _rows(ctx, VNETS, "vnets") if isinstance(row.get("vnet"), str)
    }
    found.update(planned(ctx, "sdn_vnet"))
    return found


def _ids(ctx: PveContext, path: str, key: str, what: str) -> dict[str, Mapping]:
    return {str(row[key]): row for row in _rows(ctx, path, what) if isinstance(row.get(key), str)}


#: ``{kind: (listing, what)}`` of the objects a zone names (``controller``, ``ipam``, ``dns``).
NAMED = {
    "controller": ("cluster/sdn/controllers", "controllers"),
    "ipam": ("cluster/sdn/ipams", "IPAMs"),
    "dns": ("cluster/sdn/dns", "DNS servers"),
}


def known(ctx: PveContext, kind: str) -> dict[str, Mapping[str, object]]:
    """``{id: options}`` of the SDN ``kind`` (``controller``, ``ipam``, ``dns``): its listing, with
    what this run creates or changes laid over it (``simple.spec.planned``), so a zone may name one
    this run declares before it. Raises as ``get_rows``."""
    path, what = NAMED[kind]
    found = dict(_ids(ctx, path, kind, what))
    found.update(planned(ctx, f"sdn_{kind}"))
    return found


def _subnets(ctx: PveContext, vnet: str) -> list[Mapping]:
    return _rows(ctx, api_path(VNETS, vnet, "subnets"), "subnets")


def _tag(value: object) -> int | None:
    try:
        return None if value in (None, "") else int(str(value))
    except ValueError:
        return None


def zone_refusals(
    ctx: PveContext, decl: Declared, action: str, live: Mapping[str, object] | None
) -> list[str]:
    """PVE's refusals of a zone create or update (module docstring), as sentences naming the key,
    PVE's words and the remedy; ``[]`` for a delete. Raises what the listings' reads raise."""
    if action not in ("create", "update"):
        return []
    name, values = decl.names["name"], decl.values
    kind = values.get("type")
    out: list[str] = []
    for key in ("dns", "reversedns"):
        server = values.get(key)
        if server and str(server) not in known(ctx, "dns"):
            out.append(
                f"{decl.label}: {key} names DNS server {server}, which does not exist, and PVE refuses the "
                f"zone (`{server} don't exist`). Add the DNS server first (proxmox:sdn:dns), or drop "
                f"{key}."
            )
    if values.get("dnszone") and not values.get("dns"):
        out.append(f"{decl.label}: dnszone needs dns, and PVE refuses it alone (`missing dns server`).")
    ipam = values.get("ipam")
    if ipam and str(ipam) not in known(ctx, "ipam"):
        out.append(
            f"{decl.label}: ipam names IPAM {ipam}, which does not exist, and PVE refuses the zone "
            f"(`{ipam} not existing`). Add it first (proxmox:sdn:ipams), or drop ipam."
        )
    if action == "update" and live is not None and (live.get("ipam") or "") != (ipam or ""):
        used = [vnet for vnet, opts in vnets(ctx).items() if opts.get("zone") == name and _subnets(ctx, vnet)]
        if used:
            out.append(
                f"{decl.label}: its vnets {', '.join(sorted(used))} have subnets, and PVE refuses to change "
                "the ipam then (`can't change ipam if a subnet is already defined in this zone`). Keep "
                f"ipam {live.get('ipam') or '(none)'}, or remove the subnets first."
            )
    if kind == "evpn":
        out += _evpn(ctx, decl)
    if kind == "vxlan":
        out += _vxlan(ctx, decl)
    return out


def _evpn(ctx: PveContext, decl: Declared) -> list[str]:
    out = []
    controller = str(decl.values.get("controller") or "")
    found = known(ctx, "controller").get(controller)
    if found is None:
        out.append(
            f"{decl.label}: controller {controller} does not exist, and PVE refuses the zone (`controller "
            f"{controller} don't exist`, EvpnPlugin on_update_hook). Add the EVPN controller first "
            "(proxmox:sdn:controllers)."
        )
    elif found.get("type") != "evpn":
        out.append(
            f"{decl.label}: controller {controller} is a {found.get('type')} controller, and PVE refuses it "
            f"(`{controller} is not a evpn controller type`). Name an EVPN controller."
        )
    vrf = _tag(decl.values.get("vrf-vxlan"))
    for other, opts in sorted(zones(ctx).items()):
        if other != decl.names["name"] and vrf is not None and _tag(opts.get("vrf-vxlan")) == vrf:
            out.append(
                f"{decl.label}: vrf-vxlan {vrf} is zone {other}'s already, and PVE refuses a second "
                f"(`vrf-vxlan {vrf} is already declared in {other}`). Pick another VRF VXLAN id."
            )
    return out


def _vxlan(ctx: PveContext, decl: Declared) -> list[str]:
    peers, fabric = decl.values.get("peers"), decl.values.get("fabric")
    if facts.release(ctx).major < 9:
        if fabric:
            return [
                f"{decl.label}: fabric is PVE 9's; this cluster runs PVE 8, whose vxlan zones take peers."
            ]
        if not peers:
            return [f"{decl.label}: a vxlan zone needs peers on PVE 8 (VxlanPlugin: peers is not optional)."]
        return []
    if bool(peers) == bool(fabric):
        return [
            f"{decl.label}: declare exactly one of peers and fabric; PVE refuses both or neither (`must have "
            "exactly one of peers / fabric defined`, VxlanPlugin on_update_hook)."
        ]
    return []


def vnet_refusals(
    ctx: PveContext, decl: Declared, action: str, live: Mapping[str, object] | None
) -> list[str]:
    """PVE's refusals of a vnet create or update (module docstring); ``[]`` for a delete. Raises
    what the listings' reads raise."""
    if action not in ("create", "update"):
        return []
    name, values = decl.names["name"], decl.values
    zone = str(values.get("zone") or "")
    known = zones(ctx)
    if zone not in known:
        return [
            f"{decl.label}: zone {zone} does not exist and this run does not create it, so PVE has no "
            f"zone to put the vnet in. Declare zone {zone} (proxmox:sdn:zones), or name an existing zone."
        ]
    kind = str(known[zone].get("type") or "")
    tag = _tag(values.get("tag"))
    others = {vnet: opts for vnet, opts in vnets(ctx).items() if vnet != name}
    out: list[str] = []

    def refuse(why: str, pve: str, remedy: str = "") -> None:
        out.append(f"{decl.label}: {why}, and PVE refuses it (`{pve}`).{' ' + remedy if remedy else ''}")

    if kind == "simple" and tag is not None:
        refuse(f"zone {zone} is simple", "vlan tag is not allowed on simple zone", "Drop the tag.")
    if kind in ("vlan", "qinq"):
        if kind == "vlan" and tag is None:
            refuse(f"zone {zone} is a vlan zone and the vnet has no tag", "missing vlan tag")
        if tag is not None and tag > VLAN_MAX:
            refuse(f"tag {tag} is over {VLAN_MAX}", f"vlan tag max value is {VLAN_MAX}")
        for other, opts in sorted(others.items()):
            if opts.get("zone") != zone:
                continue
            other_tag = _tag(opts.get("tag"))
            if tag is not None and other_tag == tag:
                refuse(
                    f"tag {tag} is vnet {other}'s already in zone {zone}",
                    f"tag {tag} already exist in vnet {other}",
                    "Pick another tag.",
                )
            if kind == "qinq" and tag is None and other_tag is None:
                refuse(
                    f"zone {zone} already has a tag-less vnet, {other}",
                    f"tag-less vnet already exists in zone {zone} vnet {other}",
                )
    if kind in VXLAN_TYPES:
        if tag is None:
            refuse(f"zone {zone} is a {kind} zone and the vnet has no tag", "missing vxlan tag")
        elif tag > VXLAN_MAX:
            refuse(f"tag {tag} is over {VXLAN_MAX}", f"vxlan tag max value is {VXLAN_MAX}")
        if kind == "evpn" and values.get("vlanaware"):
            refuse(f"zone {zone} is an evpn zone", "vlan-aware option can't be enabled with evpn")
        for other, opts in sorted(others.items()):
            other_zone = str(opts.get("zone") or "")
            same = tag is not None and _tag(opts.get("tag")) == tag
            if same and known.get(other_zone, {}).get("type") in VXLAN_TYPES:
                refuse(
                    f"VXLAN id {tag} is vnet {other}'s already (zone {other_zone}), and VXLAN ids are unique "
                    "across every vxlan and evpn zone",
                    f"vxlan tag {tag} already exist in vnet {other} in zone {other_zone}",
                    "Pick another tag.",
                )
    if action == "update" and live is not None:
        subnets = _subnets(ctx, name)
        if subnets and values.get("vlanaware"):
            refuse("it has subnets", "vlanaware vnet is not compatible with subnets", "Remove them first.")
        if subnets and live.get("zone") != zone:
            refuse(
                "it has subnets",
                "can't change zone if subnets exist",
                f"Remove the subnets first, or keep zone {live.get('zone')}.",
            )
    return out


def subnet_refusals(
    ctx: PveContext, decl: Declared, action: str, live: Mapping[str, object] | None
) -> list[str]:
    """PVE's refusals of a subnet create or update (module docstring); ``[]`` for a delete. Raises
    what the listings' reads raise."""
    if action not in ("create", "update"):
        return []
    vnet = decl.names["vnet"]
    opts = vnets(ctx).get(vnet)
    if opts is None:
        return [
            f"{decl.label}: vnet {vnet} does not exist and this run does not create it (`{vnet} don't "
            f"exist`). Declare vnet {vnet} (proxmox:sdn:vnets) first."
        ]
    if opts.get("vlanaware") in (True, 1, "1"):
        return [
            f"{decl.label}: vnet {vnet} is VLAN-aware, and PVE refuses a subnet on it (`you can't add a "
            "subnet on a vlanaware vnet`). Drop vlanaware from the vnet, or put the subnet on another vnet."
        ]
    return []


def subnet_side_effects(ctx: PveContext, decl: Declared, action: str) -> list[str]:
    """What PVE does by itself when it writes this subnet: with an IPAM on its zone, it registers
    the subnet (and its gateway) there at once, before any SDN apply (module docstring). Raises
    what the listings' reads raise."""
    if action not in ("create", "update"):
        return []
    zone = str((vnets(ctx).get(decl.names["vnet"]) or {}).get("zone") or "")
    ipam = (zones(ctx).get(zone) or {}).get("ipam")
    if not ipam:
        return []
    gateway = decl.values.get("gateway")
    also = f" and its gateway {gateway}" if gateway else ""
    return [
        f"{decl.label}: PVE registers the subnet{also} in IPAM {ipam} as it writes it, before the SDN apply "
        "makes anything live"
    ]
