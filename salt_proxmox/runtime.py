"""Building a target's context from Salt-shaped configuration (no Salt import).

The Salt modules hand over plain data — the ``proxmox:targets`` mapping (read with
``config.get`` so it can live in minion config or pillar), the ``openbao:`` block, the run's
cache (``__context__``) and an ownership store — and get back a ``PveContext``.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping

import requests

from salt_proxmox.errors import DeclarationError
from salt_proxmox.lxc.lifecycle import PveContext
from salt_proxmox.openbao.creds import CredentialBroker
from salt_proxmox.ownership import Ownership, OwnershipStore
from salt_proxmox.pve.client import PveClient, parse_target


def pick_target(targets: object, name: str | None) -> str:
    """The target name to use: ``name``, or the only one configured.

    Raises DeclarationError when there are none, several and none named, or the named one is
    missing.
    """
    if not isinstance(targets, Mapping) or not targets:
        raise DeclarationError("proxmox:targets: no target is configured (minion config or pillar)")
    if name is None:
        if len(targets) != 1:
            raise DeclarationError(
                f"target: several targets are configured ({', '.join(sorted(map(str, targets)))}); name one"
            )
        return str(next(iter(targets)))
    if name not in targets:
        raise DeclarationError(
            f"target: {name!r} is not in proxmox:targets ({', '.join(sorted(map(str, targets)))})"
        )
    return name


def context_for(
    targets: object,
    name: str | None,
    openbao: Mapping | None,
    cache: MutableMapping,
    store: OwnershipStore,
) -> PveContext:
    """A ``PveContext`` for one target, reusing the run's HTTP session and read credential.

    Raises DeclarationError for a missing or malformed target.
    """
    chosen = pick_target(targets, name)
    target = parse_target(chosen, targets[chosen])
    session_key = f"salt_proxmox.session/{chosen}"
    session = cache.get(session_key)
    if not isinstance(session, requests.Session):
        session = requests.Session()
        cache[session_key] = session
    client_key = f"salt_proxmox.client/{chosen}"
    client = cache.get(client_key)
    if not isinstance(client, PveClient) or client.target != target:
        client = PveClient(target, session)
        cache[client_key] = client
    broker = CredentialBroker(target, cache, openbao)
    return PveContext(target=target, client=client, broker=broker, ownership=Ownership(store))
