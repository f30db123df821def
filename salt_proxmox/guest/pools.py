"""A guest's pool membership (the ``pool`` a declaration names), compared as PVE lists it and
moved with the pool's own write.
"""

from __future__ import annotations

from salt_proxmox.errors import SaltProxmoxError
from salt_proxmox.guest.absence import indexed_guest
from salt_proxmox.outcome import Outcome
from salt_proxmox.pve.client import api_path
from salt_proxmox.run.context import PveContext
from salt_proxmox.run.memo import note_leaving_pool


def pool_membership(
    ctx: PveContext, what: str, vmid: int, pool: str, test: bool, outcome: Outcome
) -> Outcome:
    """Keep an existing guest (``what``) in its declared pool (``''``: in none), compared as PVE
    lists membership: the ``pool`` of its row in ``GET cluster/resources`` (pve-manager
    ``PVE/API2/Cluster.pm``).

    A move is one ``PUT /pools/{poolid}`` with ``vms=<vmid>`` (and ``allow-move=1`` when it leaves
    another pool), a removal one ``PUT /pools/{old}`` with ``vms=<vmid>&delete=1``
    (pve-manager ``PVE/API2/Pool.pm`` ``update_pool``), then membership is read again. Members are
    the guest's to declare: ``proxmox_pool`` never compares them, so an owned pool is not drift."""
    try:
        row = indexed_guest(ctx, vmid)
        have = str((row or {}).get("pool") or "")
        if row is None or have == pool:
            return outcome
        moving = f"into pool {pool}" if pool else f"out of pool {have}"
        if pool and have:
            moving += f" (from pool {have})"
        outcome.changes["pool"] = {"old": have or None, "new": pool or None}
        if have:
            note_leaving_pool(ctx.memo, ctx.target.name, have, str(row.get("type")), vmid)
        if test:
            outcome.result = None
            outcome.comment.append(f"{what}: would move {moving}")
            return outcome
        if pool:
            form = {"vms": str(vmid), **({"allow-move": "1"} if have else {})}
            ctx.client.request("PUT", api_path("pools", pool), ctx.broker.provision(), form=form)
        else:
            form = {"vms": str(vmid), "delete": "1"}
            ctx.client.request("PUT", api_path("pools", have), ctx.broker.provision(), form=form)
        now = str((indexed_guest(ctx, vmid) or {}).get("pool") or "")
    except SaltProxmoxError as exc:
        return outcome.fail(f"{what}: pool membership: {exc}")
    if now != pool:
        return outcome.fail(
            f"{what}: after the move PVE lists it in pool {now or '(none)'}, not {pool or '(none)'}."
        )
    outcome.comment.append(f"{what}: moved {moving}")
    return outcome
