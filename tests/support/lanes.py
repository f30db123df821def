"""What the root lane's integration tests share: container 120 recorded as this state's own, its
declaration, targets with a ``root_lane`` (``ticket_lane``: the ticket lane, root@pam's password in
the OpenBao dev server), and the writes each identity sent (``SendersPve``)."""

from __future__ import annotations

import secrets
from typing import Any

from salt_proxmox.guest import identity as guest_identity
from salt_proxmox.lxc.family import LXC
from salt_proxmox.ownership.rows import OWNED, row_key
from salt_proxmox.ownership.stores import MemoryStore
from tests.support.cluster import DNS1_VMID
from tests.support.guests import TARGET, bao_targets, dns1, static_targets
from tests.support.openbao import CREDS_PATH, CREDS_POLICY, write_policy


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
