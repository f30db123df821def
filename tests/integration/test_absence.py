"""The proof that no guest holds a vmid (salt_proxmox.guest.absence), against fakepve: the run's
guest index is read once and serves only as a hint; every "absent" is proven by
``GET cluster/nextid?vmid=`` (pve-manager ``PVE/API2/Cluster.pm`` ``nextid``: the vmid itself when the
cluster's vmlist holds no such guest, else HTTP 400 "VM N already exists"), so creating N guests
reads the index once and each guest costs the same at any N."""

from __future__ import annotations

import pytest

from salt_proxmox.errors import Refused
from salt_proxmox.guest import lifecycle as guest_lifecycle
from salt_proxmox.lxc.family import LXC
from salt_proxmox.pve.errors import PveError, PveMalformed
from tests.support.cluster import DNS1_CONFIG, DNS1_VMID
from tests.support.guests import declaration, make_context, requests_since, static_targets

INDEX, NEXTID = "/cluster/resources", "/cluster/nextid"


def paths(cluster, start: int) -> list[str]:
    return [path for _, path, _ in requests_since(cluster, start)]


def test_absence_is_proven_by_nextid_with_the_run_index_read_once(cluster):
    ctx = make_context(static_targets(cluster))
    start = len(cluster.pve.requests)
    for vmid in (901, 902, 903):
        assert guest_lifecycle.read_live(ctx, LXC, "pve1", vmid) is None
    assert paths(cluster, start) == [
        "/nodes/pve1/lxc/901/pending",
        INDEX,
        NEXTID,
        "/nodes/pve1/lxc/902/pending",
        NEXTID,
        "/nodes/pve1/lxc/903/pending",
        NEXTID,
    ]


def test_a_vmid_taken_since_the_run_index_was_read_is_never_absent(fresh_cluster):
    # The hint says 904 is listed nowhere; a guest made at 904 on pve2 meanwhile is found by nextid
    # and located by a fresh index read: refused as held elsewhere, nothing created.
    ctx = make_context(static_targets(fresh_cluster))
    assert guest_lifecycle.read_live(ctx, LXC, "pve1", 905) is None  # the run's index is read now
    fresh_cluster.pve.add_ct(904, node="pve2", config=dict(DNS1_CONFIG, hostname="other"), defaults=False)
    start = len(fresh_cluster.pve.requests)
    with pytest.raises(Refused, match=r"vmid 904 is a lxc guest on node pve2"):
        guest_lifecycle.read_live(ctx, LXC, "pve1", 904)
    assert paths(fresh_cluster, start) == ["/nodes/pve1/lxc/904/pending", NEXTID, INDEX]
    start = len(fresh_cluster.pve.requests)
    outcome = guest_lifecycle.present(ctx, LXC, "web", False, **declaration(vmid=904, mp0=None))
    assert outcome.result is False and "pve2" in "\n".join(outcome.comment)
    assert [m for m, _, _ in requests_since(fresh_cluster, start) if m != "GET"] == [], "nothing created"


def test_a_vmid_the_run_index_lists_is_decided_on_a_fresh_read(fresh_cluster):
    # The hint lists CT 120 on its node; destroyed since, it is absent once nextid says so.
    ctx = make_context(static_targets(fresh_cluster))
    assert guest_lifecycle.read_live(ctx, LXC, "pve1", 906) is None  # the run's index, listing CT 120
    fresh_cluster.pve.cts.remove(fresh_cluster.pve.ct(DNS1_VMID))
    start = len(fresh_cluster.pve.requests)
    assert guest_lifecycle.read_live(ctx, LXC, "pve2", DNS1_VMID) is None
    assert paths(fresh_cluster, start) == [f"/nodes/pve2/lxc/{DNS1_VMID}/pending", INDEX, NEXTID]


@pytest.mark.parametrize(
    ("status", "message"),
    [pytest.param(500, "got timeout", id="500"), pytest.param(401, "authentication failure", id="401")],
)
def test_a_failed_nextid_is_an_error_never_absence(fresh_cluster, status, message):
    fresh_cluster.pve.fail("GET", NEXTID, status=status, message=message)
    with pytest.raises(PveError) as caught:
        guest_lifecycle.read_live(make_context(static_targets(fresh_cluster)), LXC, "pve1", 907)
    assert caught.value.status == status


def test_a_nextid_answer_naming_another_vmid_proves_nothing(fresh_cluster, monkeypatch):
    ctx = make_context(static_targets(fresh_cluster))
    real = ctx.client.request

    def other_id(method, path, *args, **kwargs):
        answer = real(method, path, *args, **kwargs)
        return "100" if path == NEXTID.lstrip("/") else answer

    monkeypatch.setattr(ctx.client, "request", other_id)
    with pytest.raises(PveMalformed, match="expected the vmid 908"):
        guest_lifecycle.read_live(ctx, LXC, "pve1", 908)


def test_a_vmid_taken_but_listed_nowhere_for_this_token_is_refused(fresh_cluster, monkeypatch):
    # nextid reads the whole vmlist, the index only what the token may audit (Cluster.pm resources).
    ctx = make_context(static_targets(fresh_cluster))
    real = ctx.client.request

    def hidden(method, path, *args, **kwargs):
        answer = real(method, path, *args, **kwargs)
        if path == INDEX.lstrip("/"):
            return [row for row in answer if int(row["vmid"]) != 909]
        return answer

    monkeypatch.setattr(ctx.client, "request", hidden)
    fresh_cluster.pve.add_ct(909, node="pve2", config=dict(DNS1_CONFIG, hostname="hidden"), defaults=False)
    with pytest.raises(Refused, match="vmid 909 is held by a guest"):
        guest_lifecycle.read_live(ctx, LXC, "pve1", 909)
