"""A PVE listing: a GET whose data is a list of objects, one per pool, role, zone, status row.

PVE's index methods promise ``returns => {type => 'array', items => {type => 'object'}}`` (e.g.
pve-manager ``PVE/API2/Pool.pm`` ``index``, ``PVE/API2/Cluster.pm`` ``get_status``, pve-network
``src/PVE/API2/Network/SDN/Zones.pm`` ``index``). An answer of another shape is malformed: it is
never read as an empty listing, which would prove objects absent that are not.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from salt_proxmox.pve.errors import PveMalformed

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.pve.client import Credential, PveClient
    from salt_proxmox.pve.readahead import ReadAhead


def rows_of(data: object, what: str = "objects") -> list[Mapping]:
    """``data`` as a listing's rows. Raises ValueError (``expected a list of <what>``) when it is not
    a list of objects."""
    if not isinstance(data, list) or not all(isinstance(row, Mapping) for row in data):
        raise ValueError(f"expected a list of {what}")
    return data


def get_rows(
    client: PveClient,
    path: str,
    credential: Credential,
    params: Mapping[str, str] | None = None,
    *,
    what: str = "objects",
    reads: ReadAhead | None = None,
) -> list[Mapping]:
    """The rows of ``GET path`` (query ``params``) read with ``credential``. With ``reads`` (the
    run's ``ReadAhead``) the run's shared answer for the listing serves, and a fresh one is kept
    for the run's other states (``ReadAhead.shared``).

    Raises PveMalformed (naming the path and query) for an answer that is not a list of objects,
    and what ``PveClient.request`` raises: PveError, PveUnreachable, CredentialError.
    """
    if reads is not None:
        data = reads.shared(client, path, credential, params)
    else:
        data = client.request("GET", path, credential, params=params)
    try:
        return rows_of(data, what)
    except ValueError as why:
        query = "&".join(f"{key}={value}" for key, value in (params or {}).items())
        raise PveMalformed("GET", f"{path}?{query}" if query else path, str(why)) from None


def node_names(client: PveClient, credential: Credential) -> list[str]:
    """The cluster's nodes, sorted (``GET /nodes``, pve-manager ``PVE/API2/Nodes.pm`` index): where a
    node-scoped listing (interfaces, Ceph pools) is read. ``index`` lists every node of
    ``get_nodelist``, the answering one included, each with its ``node`` name whatever the caller may
    audit (``extract_node_stats`` hides only the stats): raises PveMalformed for no node or a row
    without its name (read as fewer nodes, a member would be called foreign and a node's listing
    left unread), and what ``get_rows`` raises."""
    rows = get_rows(client, "nodes", credential, what="nodes")
    names = [row.get("node") for row in rows]
    if not names or not all(isinstance(name, str) and name for name in names):
        raise PveMalformed(
            "GET", "nodes", "not every node is listed by its name (pve-manager PVE/API2/Nodes.pm index)"
        )
    return sorted(names)
