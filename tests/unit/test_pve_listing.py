"""The one reader of PVE listings (salt_proxmox.pve.listing) and the states that read through it.

PVE's index methods return a list of objects (pve-manager ``PVE/API2/Pool.pm`` ``index``,
``PVE/API2/Cluster.pm`` ``get_status``, pve-network ``src/PVE/API2/Network/SDN/Zones.pm`` ``index``):
any other 200 is malformed and must fail the read, never read as an empty listing (which would
prove objects absent that are not)."""

from __future__ import annotations

import pytest

from salt_proxmox.firewall import alias
from salt_proxmox.network.apply import cluster_health
from salt_proxmox.pve.client import Credential
from salt_proxmox.pve.errors import PveMalformed
from salt_proxmox.pve.listing import get_rows, node_names, rows_of
from salt_proxmox.pve.readahead import ReadAhead
from salt_proxmox.sdn.apply import pending as sdn_pending
from salt_proxmox.simple import acl, pool
from tests.support.stubs import StubClient, pve_context

CRED = Credential("r@pve!plan", "read-secret", role="read")
NOT_LISTS = [{"data": []}, "pools", None, 3, [{"poolid": "a"}, "b"], [None]]


def test_rows_of_takes_a_list_of_objects_as_it_is():
    rows = [{"poolid": "a"}, {"poolid": "b", "comment": "x"}]
    assert rows_of(rows) is rows
    assert rows_of([]) == []


@pytest.mark.parametrize("data", NOT_LISTS)
def test_rows_of_refuses_any_other_shape(data):
    with pytest.raises(ValueError, match="expected a list of pools"):
        rows_of(data, "pools")


@pytest.mark.parametrize("data", NOT_LISTS)
def test_get_rows_names_the_path_and_query_of_a_malformed_listing(data):
    client = StubClient(lambda *_: data)
    with pytest.raises(PveMalformed) as caught:
        get_rows(client, "cluster/sdn/zones", CRED, {"pending": "1"})
    assert "GET cluster/sdn/zones?pending=1: malformed answer" in str(caught.value)
    assert "expected a list of objects" in str(caught.value)
    assert "read-secret" not in str(caught.value)


def test_get_rows_with_the_runs_reads_sends_one_get_for_every_state():
    client = StubClient(lambda *_: [{"poolid": "a"}])
    reads = ReadAhead()
    reads.begin("run-1")
    first = get_rows(client, "pools", CRED, reads=reads)
    second = get_rows(client, "pools", CRED, reads=reads)
    assert first == second == [{"poolid": "a"}]
    assert len(client.sent) == 1
    # Without the run's reads every call goes to PVE.
    get_rows(client, "pools", CRED)
    assert len(client.sent) == 2


def _malformed(*_):
    return {"data": "not a list"}


@pytest.mark.parametrize(
    "read",
    [
        pytest.param(lambda ctx: sdn_pending(ctx), id="sdn pending"),
        pytest.param(lambda ctx: acl.known_names(ctx), id="acl access names"),
        pytest.param(lambda ctx: cluster_health(ctx, CRED), id="cluster status"),
        pytest.param(
            lambda ctx: alias.list_digest(
                ctx, CRED, alias.SPEC.identify("s", "lab", name="web"), {"cidr": "192.0.2.1"}
            ),
            id="alias list digest",
        ),
        pytest.param(
            lambda ctx: pool.refusals(
                ctx, pool.SPEC.identify("s", "lab", name="prod"), "delete", {"members": []}
            ),
            id="pool delete refusal",
        ),
    ],
)
def test_every_listing_reader_refuses_a_malformed_listing(read):
    ctx = pve_context(_malformed)
    with pytest.raises(PveMalformed, match="expected a list of"):
        read(ctx)


@pytest.mark.parametrize(
    "data",
    [
        pytest.param([], id="no-node"),
        pytest.param([{"node": "pve1"}, {"status": "online"}], id="a-row-without-its-node"),
        pytest.param([{"node": ""}], id="an-empty-name"),
    ],
)
def test_a_node_listing_without_every_node_s_name_is_malformed_not_fewer_nodes(data):
    """pve-manager ``PVE/API2/Nodes.pm`` ``index`` lists every node of ``get_nodelist`` (the answering
    node included, a standalone one too) with its ``node`` name, whatever the caller may audit (only
    the stats are hidden: ``extract_node_stats(..., !$can_audit)``). No node, or a row without its
    name, is not a cluster PVE describes: read as fewer nodes, an HA rule would be refused naming a
    member as foreign and a per-node listing would read nothing."""
    client = StubClient(lambda *_: data)
    with pytest.raises(PveMalformed, match=r"GET nodes: malformed answer from PVE: .*Nodes\.pm index"):
        node_names(client, CRED)
