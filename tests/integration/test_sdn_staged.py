"""What the SDN commit makes live that others staged, and another client's global SDN lock, against
the suite's SDN fake (tests/support/network.py ``NetworkPve``: pending/running configuration as
pve-network's ``pending_config``, the lock as ``lock_sdn_config``).

``PUT /cluster/sdn`` (pve-network ``API2/Network/SDN.pm`` ``reload`` → ``Network/SDN.pm``
``commit_config``) commits the whole pending configuration: a zone, vnet or subnet somebody else
staged, which no state of the run declares, would go live under a plan that named only ours."""

from __future__ import annotations

from salt_proxmox.network import apply as network_apply
from salt_proxmox.ownership.stores import MemoryStore
from salt_proxmox.sdn import apply as sdn_apply
from salt_proxmox.sdn import objects
from tests.support.guests import TARGET, make_context, requests_since, static_targets, writes

ZONE = {"name": "lab", "type": "vlan", "bridge": "vmbr0", "mtu": 1496}
VNET = {"name": "labnet", "zone": "lab", "tag": 20}
SUBNET = {"name": "10.20.0.0/24", "vnet": "labnet", "gateway": "10.20.0.1"}


def _declare(ctx, test: bool, *pairs) -> None:
    for spec, declared in pairs:
        done = network_apply.present(ctx, spec, test, declared["name"], **declared)
        assert done.result is not False, done.comment


def _refused(served, ctx, words: list[str]) -> str:
    """The plan and the apply of the commit both refuse, with ``words``, and nothing is written."""
    start = len(served.pve.requests)
    running = {kind: dict(rows) for kind, rows in served.pve.sdn_running.items()}
    for test in (True, False):
        outcome = sdn_apply.applied(ctx, test, "sdn")
        said = " ".join(outcome.comment)
        assert outcome.result is False, said
        assert all(word in said for word in words), said
    assert writes(requests_since(served, start)) == [], "no lock, no commit"
    assert served.pve.sdn_running == running
    return said


def test_a_zone_somebody_else_staged_refuses_the_commit_until_the_run_declares_it(fresh_cluster):
    store = MemoryStore()
    ctx = make_context(static_targets(fresh_cluster), store=store)
    _declare(ctx, False, (objects.ZONE, ZONE))
    fresh_cluster.pve.sdn["zones"]["other"] = {"type": "simple"}  # another client's pending create
    said = _refused(
        fresh_cluster,
        ctx,
        [
            "no state of this run declares: zone other: new",
            "adopt: true",
            "`pvesh create /cluster/sdn/rollback`",
        ],
    )
    assert "zone lab" not in said, "ours, written by this run, is not foreign"
    # Declared (adopted: this minion did not create it) in the run, it is the run's to commit.
    ctx = make_context(static_targets(fresh_cluster), store=store)
    other = {"name": "other", "type": "simple", "adopt": True}
    for test in (True, False):
        _declare(ctx, test, (objects.ZONE, ZONE), (objects.ZONE, other))
        done = sdn_apply.applied(ctx, test, "sdn")
        assert done.result is not False, done.comment
    assert set(fresh_cluster.pve.sdn_running["zones"]) == {"lab", "other"}


def test_what_an_earlier_run_of_ours_staged_is_committed_by_a_run_that_declares_it(fresh_cluster):
    store = MemoryStore()
    _declare(make_context(static_targets(fresh_cluster), store=store), False, (objects.ZONE, ZONE))
    # A run that declares nothing commits nothing of it.
    _refused(fresh_cluster, make_context(static_targets(fresh_cluster), store=store), ["zone lab: new"])
    ctx = make_context(static_targets(fresh_cluster), store=store)
    _declare(ctx, True, (objects.ZONE, ZONE))
    plan = sdn_apply.applied(ctx, True, "sdn")
    assert plan.result is None and plan.changes["reload"]["diff"].startswith("zone lab: new"), plan.comment
    _declare(ctx, False, (objects.ZONE, ZONE))
    assert sdn_apply.applied(ctx, False, "sdn").result is True
    assert "lab" in fresh_cluster.pve.sdn_running["zones"]


def test_a_key_or_a_subnet_somebody_else_staged_on_our_objects_refuses_the_commit(fresh_cluster):
    store = MemoryStore()
    ctx = make_context(static_targets(fresh_cluster), store=store)
    ours = ((objects.ZONE, ZONE), (objects.VNET, VNET), (objects.SUBNET, SUBNET))
    _declare(ctx, False, *ours)
    assert sdn_apply.applied(ctx, False, "sdn").result is True
    # Another client stages nodes on our zone and a subnet in our vnet.
    fresh_cluster.pve.sdn["zones"]["lab"]["nodes"] = "pve1"
    fresh_cluster.pve.sdn["subnets"]["lab-10.30.0.0-24"] = {"type": "subnet", "vnet": "labnet"}
    ctx = make_context(static_targets(fresh_cluster), store=store)
    _declare(ctx, True, *ours)
    said = _refused(
        fresh_cluster,
        ctx,
        ["zone lab: nodes=pve1 (staged, and not in its declaration)", "subnet labnet/10.30.0.0/24: new"],
    )
    assert "vnet labnet" not in said and "10.20.0.0" not in said
    assert f"{TARGET}/sdn_lock/global" not in store.rows


def test_a_commit_under_another_clients_sdn_lock_fails_naming_that_lock_and_writes_nothing(fresh_cluster):
    """No read shows PVE's global SDN lock (pve-network ``Network/SDN.pm``: ``/etc/pve/sdn/.lock`` is
    read only by ``lock_sdn_config``, which every write runs under), so the plan cannot refuse it; the
    apply's ``POST /cluster/sdn/lock`` is refused "invalid lock token provided!" and the apply says it
    is another client's lock, its remedies, and that nothing was written."""
    store = MemoryStore()
    ctx = make_context(static_targets(fresh_cluster), store=store)
    _declare(ctx, False, (objects.ZONE, ZONE))
    fresh_cluster.pve.sdn_lock = "held-by-someone-else"
    plan = sdn_apply.applied(ctx, True, "sdn")
    assert plan.result is None, "a plan cannot see the lock"
    start = len(fresh_cluster.pve.requests)
    done = sdn_apply.applied(ctx, False, "sdn")
    said = " ".join(done.comment)
    assert done.result is False, said
    assert "another client holds PVE's global SDN lock" in said
    assert "`pvesh delete /cluster/sdn/lock --force 1`" in said and "Nothing was written." in said
    assert "reload was not started" not in said and "held-by-someone-else" not in said
    assert [(m, p) for m, p, _ in writes(requests_since(fresh_cluster, start))] == [
        ("POST", "/cluster/sdn/lock")
    ]
    assert (
        fresh_cluster.pve.sdn_lock == "held-by-someone-else" and fresh_cluster.pve.sdn_running["zones"] == {}
    )
    assert f"{TARGET}/sdn_lock/global" not in store.rows
