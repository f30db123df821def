"""What a whole declared estate needs of each credential (``proxmox.privileges_needed``): every chunk of
the run's lowstate turned into its needs (``access.privileges``), the least role of each credential as a
``proxmox:roles`` entry with the ``proxmox:acls`` entries that grant it, and what each credential lacks
today (``GET /access/permissions``) with the ``pveum`` lines that grant it.

Each present object needs its reads, its create and its update; an absent one with ``removal: destroy``
its read and its delete. Besides the families' own reads, the read credential needs Sys.Audit on
``/access`` to read the provision token's privileges at plan (pve-access-control
``API2/AccessControl.pm`` ``permissions`` with ``userid``), and VM.Audit on each guest's ``/vms/<vmid>``
(its config and status reads).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from salt_proxmox.access.privileges import (
    ROLES,
    Need,
    bridge_of,
    cluster_major,
    grant_command,
    guest_needs,
    held,
    least_roles,
    simple_needs,
    token_of,
)
from salt_proxmox.entry import imported
from salt_proxmox.errors import DeclarationError
from salt_proxmox.registry import BY_STATE
from salt_proxmox.run.lowstate import Chunk

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.run.context import PveContext

#: Guest arguments that start, stop or reboot the guest (VM.PowerMgmt).
_GUEST_POWER = ("status", "start", "reboot_for_pending")
#: Guest arguments that are no PVE config key.
_GUEST_META = frozenset(
    [
        "vmid",
        "node",
        "target",
        "adopt",
        "removal",
        "ostemplate",
        "clone",
        "full",
        "storage",
        "start",
        "reboot_for_pending",
        "pool",
        "secrets_pillar",
        "name",
        "require",
        "migrate",
    ]
)


def _zones(ctx: PveContext | None, config: Mapping[str, str]) -> dict[str, str]:
    """The zone ``check_vnet_access`` names for each bridge a NIC of ``config`` names
    (``guest.nics.bridge_zone``: its vnet's, else ``localnetwork``)."""
    if ctx is None:
        return {}
    from salt_proxmox.guest.nics import bridge_zone

    zones = {}
    for key, value in config.items():
        bridge = bridge_of(value) if key.startswith("net") else None
        if bridge:
            zones[bridge] = bridge_zone(ctx, bridge) or "localnetwork"
    return zones


def chunk_needs(chunk: Chunk, target: str, ctx: PveContext | None = None) -> list[Need]:
    """The needs of one declaration (a chunk of the run). A chunk that is not of this product, or whose
    declaration is refused, needs nothing (its state says why). ``ctx``: where a NIC's vnet zone is read."""
    family = BY_STATE.get(chunk.state)
    if family is None or family.module != "proxmox":
        return []
    if family.guest is not None:
        vmid = chunk.args.get("vmid")
        if not isinstance(vmid, int) and not (isinstance(vmid, str) and vmid.isdigit()):
            return []
        vmid = int(vmid)
        read = [Need("read", f"/vms/{vmid}", ("VM.Audit",), f"read {family.name} {vmid} (config, status)")]
        if chunk.fun.endswith("absent"):
            return [
                *read,
                Need("provision", f"/vms/{vmid}", ("VM.Allocate",), f"destroy {vmid} (destroy_vm)"),
            ]
        config = {k: str(v) for k, v in chunk.args.items() if k not in _GUEST_META and v is not None}
        power = [k for k in _GUEST_POWER if chunk.args.get(k) not in (None, False, "")]
        config = {k: v for k, v in config.items() if k not in _GUEST_POWER}
        if power:
            # pve-container API2/LXC/Status.pm, qemu-server API2/Qemu.pm vm_start/vm_reboot: VM.PowerMgmt.
            read.append(Need("provision", f"/vms/{vmid}", ("VM.PowerMgmt",), f"{', '.join(power)} of {vmid}"))
        if chunk.args.get("migrate") is True:
            # qemu-server API2/Qemu.pm, pve-container API2/LXC.pm migrate_vm (and its precondition GET).
            read.append(Need("provision", f"/vms/{vmid}", ("VM.Migrate",), f"migrate {vmid} (migrate_vm)"))
        template = str(chunk.args.get("ostemplate") or "")
        if ":" in template:
            storage = template.split(":", 1)[0]
            # pve-storage Storage.pm check_volume_access: a template needs one of these on its storage.
            either = ("Datastore.AllocateSpace", "Datastore.Audit")
            why = f"the template of {vmid} (check_volume_access)"
            read.append(Need("provision", f"/storage/{storage}", either, why, True))
        clone = chunk.args.get("clone")
        pool = chunk.args.get("pool")
        zones = _zones(ctx, config)
        source = (
            int(clone) if isinstance(clone, int) or (isinstance(clone, str) and clone.isdigit()) else None
        )
        # The create (create_vm asks no drive's kind) and the updates that keep the declared keys (a
        # clone's config write, a drive changed later: update_vm_api's $check_drive_perms).
        return (
            read
            + guest_needs(family.name, vmid, config, "create", zones, str(pool) if pool else None, source)
            + guest_needs(family.name, vmid, config, "update", zones)
        )
    kind = family.kind_of(chunk.fun)
    if kind is not None and kind.spec is None and kind.needs and chunk.fun == kind.present:
        # A kind of its own lifecycle (a download) says what its present needs (registry Kind.needs).
        skip = ("name", "target", "require", "secrets_pillar")
        args = {k: v for k, v in chunk.args.items() if k not in skip}
        return imported(kind.needs)(chunk.state_id, str(chunk.args.get("target") or target), chunk.name, args)
    if kind is None or kind.spec is None:
        return []
    spec = kind.load()
    args = {
        key: value for key, value in chunk.args.items() if key not in ("target", "require", "secrets_pillar")
    }
    names = {key: (chunk.name if key == "name" else args.get(key)) for key in spec.identity_keys}
    try:
        if chunk.fun == kind.absent:
            decl = spec.identify(chunk.state_id, target, **names)
            if args.get("removal") != "destroy":
                return []
            major = cluster_major(ctx, kind.name)
            return simple_needs(kind.name, "read", decl, major) + simple_needs(
                kind.name, "delete", decl, major
            )
        try:
            decl = spec.declare(chunk.state_id, target, **{**args, "name": chunk.name})
        except (DeclarationError, TypeError):
            # Values the state reads from pillar (a password beside its serial) are not in the chunk:
            # the object's identity still says where its writes go.
            decl = spec.identify(chunk.state_id, target, **names)
    except (DeclarationError, TypeError):
        return []
    major = cluster_major(ctx, kind.name)
    return [
        need
        for action in ("read", "create", "update")
        for need in simple_needs(kind.name, action, decl, major)
    ]


def estate_needs(chunks: Iterable[Chunk], target: str, ctx: PveContext | None = None) -> list[Need]:
    """Every need of the run's chunks, and the read credential's Sys.Audit on ``/access``."""
    needs = [
        Need(
            "read",
            "/access",
            ("Sys.Audit",),
            "read the provision token's privileges (AccessControl.pm permissions)",
        )
    ]
    for chunk in chunks:
        needs.extend(chunk_needs(chunk, target, ctx))
    return needs


def report(ctx: PveContext, needs: list[Need]) -> dict:
    """``{"proxmox": {"roles", "acls"}, "missing": {credential: {path: {"lacks", "grant"}}}, "notes"}``:
    the least roles as pillar (the ACL entries naming each credential's token), and what each token
    lacks today with the command that grants it. Raises what the permission reads raise."""
    found = least_roles(needs)
    acls = {}
    for label, entry in found["acls"].items():
        token = token_of(ctx, entry["credential"]) or f"<the {entry['credential']} token id>"
        acls[f"salt-proxmox-{label}"] = {"path": entry["path"], "role": entry["role"], "token": token}
    missing: dict[str, dict[str, dict]] = {}
    notes: list[str] = []
    for need in needs:
        have = held(ctx, need.credential, need.path)
        if isinstance(have, str):
            note = f"{need.credential}: {have}"
            if note not in notes:
                notes.append(note)
            continue
        lacking = need.missing(have)
        if not lacking:
            continue
        token = token_of(ctx, need.credential) or need.credential
        entry = missing.setdefault(need.credential, {}).setdefault(need.path, {"lacks": [], "why": []})
        entry["lacks"] = sorted({*entry["lacks"], *(lacking[:1] if need.any else lacking)})
        entry["why"] = [*dict.fromkeys([*entry["why"], need.why])]
        entry["grant"] = grant_command(need.credential, token, need.path, entry["lacks"])
    return {"proxmox": {"roles": found["roles"], "acls": acls}, "missing": missing, "notes": notes}


def needed(ctx: PveContext, lowstate: Iterable[Mapping]) -> dict:
    """``report`` of the run's ``lowstate`` (Salt's low chunks) for ``ctx``'s target."""
    chunks = [chunk for chunk in (Chunk.of(low) for low in lowstate) if chunk is not None]
    mine = [chunk for chunk in chunks if chunk.target(ctx.target.name) == ctx.target.name]
    return report(ctx, estate_needs(mine, ctx.target.name, ctx))


__all__ = ["ROLES", "chunk_needs", "estate_needs", "needed", "report"]
