"""What the root lane's integration tests share: container 120 recorded as this state's own, its
declaration, targets with a ``root_lane``, and the writes each identity sent (``SendersPve``)."""

from __future__ import annotations

from typing import Any

from salt_proxmox.guest import identity as guest_identity
from salt_proxmox.lxc.family import LXC
from salt_proxmox.ownership.rows import OWNED, row_key
from salt_proxmox.ownership.stores import MemoryStore
from tests.support.cluster import DNS1_VMID
from tests.support.guests import TARGET, dns1, static_targets


def owned_dns1(served) -> MemoryStore:
    """Container 120 recorded as this state's own."""
    return MemoryStore(
        {
            row_key(TARGET, "lxc", DNS1_VMID): {
                "phase": OWNED,
                "instance": "x",
                "state_id": "dns",
                "declared": {"vmid": DNS1_VMID, "node": "pve1"},
                "fingerprint": guest_identity.live_fingerprint(LXC, served.pve.ct(DNS1_VMID).config),
            }
        }
    )


def declared_dns1(**over: Any) -> dict[str, Any]:
    """Container 120's declaration with ``over``."""
    return dns1(description="Resolver for the lab", **over)


def lane_targets(served, lane: dict | None = None) -> dict:
    """The static targets of ``served``, with ``root_lane`` when ``lane`` is given."""
    targets = static_targets(served)
    if lane is not None:
        targets[TARGET]["root_lane"] = lane
    return targets


def writes_since(served, start: int) -> list[tuple[str, str, str | None]]:
    """The writes sent since request ``start``: ``(method, path, identity)``, the ticket logins left out."""
    return [(m, p, who) for m, p, who in served.pve.senders[start:] if m != "GET" and p != "/access/ticket"]
