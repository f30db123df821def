"""``proxmox_sdn.applied``: commit the pending SDN configuration and reload every node's network.

Sources: pve-network ``src/PVE/API2/Network/SDN.pm`` (``reload``: ``PUT /cluster/sdn`` commits the
pending configuration to the running one inside the SDN lock, then forks a ``reloadnetworkall``
task that reloads each node; ``lock``/``release_lock``: ``POST``/``DELETE /cluster/sdn/lock``),
``src/PVE/Network/SDN.pm`` (``pending_config``: with ``pending=1`` every object that differs from
the running configuration carries ``state`` — ``new``, ``changed`` or ``deleted`` — and
``pending``, the values not yet running; ``lock_sdn_config``: while a global lock is held, every
SDN write must carry its ``lock-token``) and the zones, vnets and subnets APIs (``pending``).

The apply follows ``salt_proxmox.network.apply.run`` (nothing pending: nothing done; health before
and after; one provision credential for the commit and its task; a poll that cannot be read is
unreachable; anything pending after an OK task fails). The SDN lock token is taken where the
cluster has it (``POST /cluster/sdn/lock`` with ``allow-pending``, as the changes to commit ARE
pending), so no other SDN write lands between the commit and the release; the commit releases it
(``release-lock`` defaults to 1), and a commit PVE refuses releases it explicitly. A cluster without
the lock API (HTTP 501 for the method) is committed without one.
"""

from __future__ import annotations

from collections.abc import Mapping

from salt_proxmox.errors import DeclarationError
from salt_proxmox.network.apply import Reload, run
from salt_proxmox.outcome import Outcome
from salt_proxmox.pve.client import api_path
from salt_proxmox.pve.errors import PveError
from salt_proxmox.pve.listing import get_rows
from salt_proxmox.pve.tasks import start_task, upid_node


def _rows(ctx, credential, path: str) -> list[Mapping]:
    return get_rows(ctx.client, path, credential, {"pending": "1"})


def _line(kind: str, ident: object, row: Mapping) -> str:
    pending = row.get("pending") if isinstance(row.get("pending"), Mapping) else {}
    what = ", ".join(f"{key}={value}" for key, value in sorted(pending.items()))
    return f"{kind} {ident}: {row.get('state') or 'changed'}" + (f" ({what})" if what else "")


def _lines(kind: str, rows: list[Mapping]) -> list[str]:
    """A line per row not running as it is (a ``state``, or ``pending`` values); ``kind`` is also
    the row's id key (``zone``, ``vnet``, ``subnet``)."""
    return [_line(kind, row.get(kind), row) for row in rows if row.get("state") or "pending" in row]


def pending(ctx) -> str:
    """One line per SDN object whose configuration is not running (``zone lab: new (...)``), ''
    when nothing is pending. Reads zones, vnets and each remaining vnet's subnets with
    ``pending=1``. Raises PveError, PveMalformed, PveUnreachable."""
    credential = ctx.broker.read()
    lines = _lines("zone", _rows(ctx, credential, "cluster/sdn/zones"))
    vnets = _rows(ctx, credential, "cluster/sdn/vnets")
    lines += _lines("vnet", vnets)
    for vnet in sorted(str(row.get("vnet")) for row in vnets if row.get("state") != "deleted"):
        path = api_path("cluster", "sdn", "vnets", vnet, "subnets")
        lines += _lines("subnet", _rows(ctx, credential, path))
    return "\n".join(lines)


def commit(ctx, credential) -> str:
    """Take the SDN lock (where PVE has it), ``PUT /cluster/sdn`` with its token, return the UPID.
    Raises PveError (refused; the lock released), TaskUncertain (no UPID)."""
    try:
        token = ctx.client.request("POST", "cluster/sdn/lock", credential, form={"allow-pending": "1"})
    except PveError as error:
        if error.status != 501:
            raise
        token = None
    form = {"lock-token": token} if isinstance(token, str) and token else {}
    try:
        return start_task(ctx.client, credential, "PUT", "cluster/sdn", "commit the SDN configuration", form)
    except PveError:
        if form:
            ctx.client.request("DELETE", "cluster/sdn/lock", credential, params=form)
        raise


def applied(ctx, test: bool, state_id: str, **extra: object) -> Outcome:
    """Plan or apply the pending SDN configuration (``proxmox_sdn.applied``). Never raises for a
    known failure."""
    if extra:
        return Outcome().refuse(
            DeclarationError(f"unknown key(s) {', '.join(sorted(extra))}: applied takes none")
        )
    step = Reload(
        subject="the SDN configuration",
        scope="sdn",
        pending=lambda: pending(ctx),
        show=lambda text: text,
        start=lambda credential: commit(ctx, credential),
        node_of=lambda upid: upid_node(upid) or "",
    )
    return run(ctx, test, step)
