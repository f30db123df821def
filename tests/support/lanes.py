"""What the root lane's tests and the demo share: a served cluster seen from a node with a root lane
(``node_lane``), container 120 recorded as this state's own, its declaration, targets with a
``root_lane``, and the writes each identity sent (``SendersPve``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from salt_proxmox.guest import identity as guest_identity
from salt_proxmox.lxc.family import LXC
from salt_proxmox.ownership.rows import OWNED, row_key
from salt_proxmox.ownership.stores import MemoryStore
from tests.support.cluster import DNS1_VMID
from tests.support.guests import TARGET, dns1, static_targets
from tests.support.pvesh import write_fake_pvesh
from tests.support.snippets import add_snippet_storage

#: The ``dir`` storage taking snippets that ``node_lane`` adds (``pillar_examples/node.sls`` names it).
SNIPPET_STORAGE = "snippets"


def node_lane(served, directory: Path, storage: str = SNIPPET_STORAGE, node: str = "pve1") -> dict[str, str]:
    """``served`` (a ``ServedCluster``) as the states see it from its node ``node`` as root, everything
    under ``directory`` (a private temporary directory): the fake ``pvesh`` forwarding as root@pam
    (``tests.support.pvesh``) in ``bin/``; the node's ``/etc/pve`` as ``etc/pve``, where the fake keeps
    each container's config file (``tests.support.pmxcfs``), and ``/run/lock`` as ``run/lock``; and
    ``storage`` a ``dir`` storage at ``store/`` taking snippets (``tests.support.snippets``). Returns
    the target's ``root_lane``: ``{via: pvesh, pvesh, pve_dir, lock_dir}``."""
    (directory / "store").mkdir(parents=True, exist_ok=True)
    add_snippet_storage(served.pve, directory / "store", storage)
    served.pve.pve_dir = directory / "etc" / "pve"
    return {
        "via": "pvesh",
        "pvesh": str(write_fake_pvesh(served, directory / "bin", node=node)),
        "pve_dir": str(directory / "etc" / "pve"),
        "lock_dir": str(directory / "run" / "lock"),
    }


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


#: The fake pvesh's login: a real pvesh runs as root@pam on the node and sends no request for it
#: (pve-manager ``PVE/CLI/pvesh.pm``), so it is no write of the run.
LOGIN = ("POST", "/api2/json/access/ticket")


def api_writes(requests: list[tuple[str, str, Any]]) -> list[tuple[str, str]]:
    """``(method, path)`` of each write in fakepve's request log ``requests``, the lane's logins
    (``LOGIN``) left out."""
    return [(m, p) for m, p, _ in requests if m != "GET" and (m, p.split("?")[0]) != LOGIN]
