"""The context of one PBS target within one Salt run: a ``PveContext`` whose client is a
``PbsClient`` and whose broker hands out the PBS target's tokens, so the simple lifecycle
(``salt_proxmox.simple``), task polling (``salt_proxmox.pve.tasks``: PBS answers a UPID and
``/nodes/{node}/tasks/{upid}/status`` as PVE does) and ownership rows serve PBS objects unchanged."""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping

import requests

from salt_proxmox.openbao.creds import CredentialBroker
from salt_proxmox.ownership.keeper import Ownership
from salt_proxmox.ownership.stores import OwnershipStore
from salt_proxmox.pbs.client import PBS_TARGETS, PbsClient, parse_pbs_target
from salt_proxmox.pve.client import new_session
from salt_proxmox.pve.readahead import ReadAhead
from salt_proxmox.run import overlap
from salt_proxmox.run.config import pick_target
from salt_proxmox.run.context import PveContext
from salt_proxmox.run.memo import RunMemo


def pbs_context_for(
    targets: object,
    name: str | None,
    openbao: Mapping | None,
    cache: MutableMapping,
    store: OwnershipStore,
) -> PveContext:
    """The context of ``proxmox:pbs_targets`` entry ``name`` (the only one when None), reusing the
    run's session, client, reads and memo for it (kept in ``cache``, Salt's ``__context__``, under keys
    of their own: a PBS target named like a PVE target shares nothing with it).

    Raises DeclarationError for a missing or malformed target.
    """
    chosen = pick_target(targets, name, PBS_TARGETS)
    target = parse_pbs_target(chosen, targets[chosen])
    overlap.own_connections(cache)
    kept = {}
    for what, kind, make in (
        ("session", requests.Session, lambda: new_session(target)),
        ("reads", ReadAhead, ReadAhead),
        ("memo", RunMemo, RunMemo),
    ):
        key = f"salt_proxmox.{what}/{target.key}"
        if not isinstance(cache.get(key), kind):
            cache[key] = make()
        kept[what] = cache[key]
    client_key = f"salt_proxmox.client/{target.key}"
    client = cache.get(client_key)
    if not isinstance(client, PbsClient) or client.target != target:
        client = PbsClient(target, kept["session"])
        cache[client_key] = client
    return PveContext(
        target=target,
        client=client,
        broker=CredentialBroker(target, cache, openbao),
        ownership=Ownership(store),
        reads=kept["reads"],
        memo=kept["memo"],
    )
