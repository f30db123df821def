"""What the root lane's tests and the demo share: a served cluster seen from a node with a root lane
(``node_lane``), container 120 recorded as this state's own, its declaration, targets with a
``root_lane`` (``ticket_lane``: the ticket lane, root@pam's password in the OpenBao dev server),
and the writes each identity sent (``SendersPve``)."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

from salt_proxmox.guest import identity as guest_identity
from salt_proxmox.lxc.family import LXC
from salt_proxmox.ownership.rows import OWNED, row_key
from salt_proxmox.ownership.stores import MemoryStore
from tests.support.cluster import DNS1_VMID
from tests.support.guests import TARGET, bao_targets, dns1, static_targets
from tests.support.openbao import CREDS_PATH, CREDS_POLICY, write_policy
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


#: Where the ticket lane's tests keep root@pam's password: a KV version 2 mount (the dev server's
#: ``secret/``) and the KV version 1 mount of the PVE tokens.
ROOT_PASSWORD_KV2 = "secret/data/salt-proxmox/root-lane"
ROOT_PASSWORD_KV1 = f"{CREDS_PATH}/root"
ROOT_POLICY = "salt-proxmox-root-lane"


def ticket_lane(served, bao, creds: dict, kv: int = 2, readable: bool = True) -> tuple[dict, dict]:
    """Targets minting from OpenBao ``bao`` (``creds``: the ``bao_creds`` fixture's answer) with
    ``root_lane: {via: ticket, ...}``, and the ``openbao:`` block. Root@pam's password is made a fresh
    random one on ``served`` (so a leak check cannot meet it by chance) and kept in OpenBao on a KV
    version ``kv`` mount; the block's token may read it unless ``readable`` is False (KV version 2
    only: the creds policy reads all of the KV version 1 mount). The policy on that path is what
    guards root."""
    served.pve.password = f"r00t-{secrets.token_hex(12)}"
    client = bao.client()
    if kv == 2:
        path = ROOT_PASSWORD_KV2
        client.secrets.kv.v2.create_or_update_secret(
            path=path.removeprefix("secret/data/"),
            secret={"password": served.pve.password},
            mount_point="secret",
        )
    else:
        path = ROOT_PASSWORD_KV1
        client.secrets.kv.v1.create_or_update_secret(
            path="root", secret={"password": served.pve.password}, mount_point=CREDS_PATH
        )
    write_policy(client, ROOT_POLICY, f'path "{ROOT_PASSWORD_KV2}" {{\n  capabilities = ["read"]\n}}\n')
    policies = [CREDS_POLICY, ROOT_POLICY] if readable else [CREDS_POLICY]
    token = client.auth.token.create(policies=policies, ttl="1h")["auth"]["client_token"]
    targets, openbao = bao_targets(served, {**creds, "token": token})
    targets[TARGET]["root_lane"] = {"via": "ticket", "password": {"path": path, "key": "password"}}
    return targets, openbao


#: The fake pvesh's login: a real pvesh runs as root@pam on the node and sends no request for it
#: (pve-manager ``PVE/CLI/pvesh.pm``), so it is no write of the run.
LOGIN = ("POST", "/api2/json/access/ticket")


def api_writes(requests: list[tuple[str, str, Any]]) -> list[tuple[str, str]]:
    """``(method, path)`` of each write in fakepve's request log ``requests``, the lane's logins
    (``LOGIN``) left out."""
    return [(m, p) for m, p, _ in requests if m != "GET" and (m, p.split("?")[0]) != LOGIN]
