"""Ceph pools through the simple-object lifecycle, against the served fake cluster, whose Ceph pools,
CRUSH rules and health are ``tests.support.ceph.CephPve`` (pve-manager ``PVE/API2/Ceph/Pool.pm`` and
``PVE/Ceph/Tools.pm``: fakepve 0.5.0 stores no pool). Every test counts the requests the fake saw: a plan
only reads, an apply writes what the plan showed and awaits its task, a second plan is clean."""

from __future__ import annotations

from urllib.parse import parse_qs

from salt_proxmox.ceph import pool
from salt_proxmox.ownership.stores import MemoryStore
from salt_proxmox.simple.lifecycle import absent, present
from tests.support.guests import make_context, requests_since, static_targets, writes

POOL = {"name": "vm-disks", "node": "pve1", "size": 3, "min_size": 2, "application": "rbd"}


def _form(body: bytes) -> dict[str, str]:
    return {key: values[0] for key, values in parse_qs(body.decode(), keep_blank_values=True).items()}


def _plan_apply_replan(served, ctx, state_id, **declared):
    """Plan, apply, plan again; returns (plan, apply, the apply's request log)."""
    start = len(served.pve.requests)
    plan = present(ctx, pool.SPEC, True, state_id, **declared)
    assert plan.result is None, plan.comment
    assert writes(requests_since(served, start)) == [], "a plan never writes"
    start = len(served.pve.requests)
    done = present(ctx, pool.SPEC, False, state_id, **declared)
    assert done.result is True, done.comment
    assert done.changes == plan.changes, "the apply did what the plan showed"
    log = requests_since(served, start)
    start = len(served.pve.requests)
    again = present(ctx, pool.SPEC, True, state_id, **declared)
    assert (again.result, again.changes) == (True, {}), again.comment
    assert writes(requests_since(served, start)) == []
    return plan, done, log


def test_a_pool_is_created_by_a_task_updated_cleared_and_replanned_clean(fresh_cluster):
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    declared = {**POOL, "target_size": "1G", "pg_num_min": 16}
    _, _, log = _plan_apply_replan(fresh_cluster, ctx, "disks", **declared)
    (create,) = writes(log)
    assert create[:2] == ("POST", "/nodes/pve1/ceph/pool")
    assert _form(create[2]) == {
        "name": "vm-disks",
        "size": "3",
        "min_size": "2",
        "application": "rbd",
        "target_size": str(1024**3),
        "pg_num_min": "16",
    }
    task = fresh_cluster.pve.tasklog[-1]
    assert (task["type"], task["exitstatus"]) == ("cephcreatepool", "OK")
    assert fresh_cluster.pve.ceph_pools["vm-disks"]["pg_autoscale_mode"] == "warn", "createpool's default"

    # A cleared pool option is sent as 0, which Ceph takes as unset (OSDMonitor prepare_command_pool_set).
    _, done, log = _plan_apply_replan(fresh_cluster, ctx, "disks", **{**declared, "target_size": None})
    assert done.changes == {"target_size": {"old": str(1024**3), "new": ""}}
    (update,) = writes(log)
    assert update[:2] == ("PUT", "/nodes/pve1/ceph/pool/vm-disks")
    assert _form(update[2]) == {"target_size": "0"}
    assert "target_size_bytes" not in fresh_cluster.pve.ceph_pools["vm-disks"]["options"]


def test_a_size_change_carries_the_declared_min_size(fresh_cluster):
    """Ceph resets min_size with size (size - size/2), so the declared min_size goes beside the size."""
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    _plan_apply_replan(fresh_cluster, ctx, "disks", **POOL)
    _, _, log = _plan_apply_replan(fresh_cluster, ctx, "disks", **{**POOL, "size": 4, "min_size": 3})
    assert _form(writes(log)[0][2]) == {"size": "4", "min_size": "3"}
    assert fresh_cluster.pve.ceph_pools["vm-disks"]["min_size"] == 3


def test_a_size_change_without_min_size_says_ceph_sets_min_size_itself(fresh_cluster):
    """Ceph gives a pool whose size is set min_size size - size/2 (osd_pool_default_min_size 0): the
    plan says so when min_size is not declared, and the apply does what the plan said."""
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    declared = {key: value for key, value in POOL.items() if key != "min_size"}
    _plan_apply_replan(fresh_cluster, ctx, "disks", **declared)
    plan = present(ctx, pool.SPEC, True, "disks", **{**declared, "size": 5})
    assert plan.result is None
    assert "size 3 → 5 makes Ceph set min_size 2 → 3 (size - size/2) by itself" in " ".join(plan.comment)
    _plan_apply_replan(fresh_cluster, ctx, "disks", **{**declared, "size": 5})
    assert fresh_cluster.pve.ceph_pools["vm-disks"]["min_size"] == 3
    kept = present(ctx, pool.SPEC, True, "disks", **{**POOL, "size": 4, "min_size": 3})
    assert "by itself" not in " ".join(kept.comment), "a declared min_size is sent, not left to Ceph"


def test_min_size_above_size_is_refused_before_anything_is_read_or_written(fresh_cluster):
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    start = len(fresh_cluster.pve.requests)
    plan = present(ctx, pool.SPEC, True, "disks", **{**POOL, "size": 2, "min_size": 3})
    assert plan.result is False
    assert "min_size: 3 is above size 2" in " ".join(plan.comment)
    assert requests_since(fresh_cluster, start) == []


def test_min_size_above_the_live_size_is_refused_at_plan(fresh_cluster):
    """Only min_size declared: the live size (2) is what Ceph judges it by."""
    fresh_cluster.pve.add_ceph_pool("vm-disks", size=2, min_size=1)
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    start = len(fresh_cluster.pve.requests)
    plan = present(ctx, pool.SPEC, True, "disks", name="vm-disks", node="pve1", min_size=3, adopt=True)
    assert plan.result is False
    assert "pool min_size must be between 1 and size, which is set to 2" in " ".join(plan.comment)
    assert writes(requests_since(fresh_cluster, start)) == []


def test_an_autoscaled_pg_num_is_never_drift(fresh_cluster):
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    declared = {**POOL, "pg_autoscale_mode": "on", "pg_num": 32}
    plan, _, _ = _plan_apply_replan(fresh_cluster, ctx, "disks", **declared)
    assert any("pg_num 32 is the create's" in line for line in plan.comment)
    fresh_cluster.pve.autoscale("vm-disks", 128)
    start = len(fresh_cluster.pve.requests)
    again = present(ctx, pool.SPEC, True, "disks", **declared)
    assert (again.result, again.changes) == (True, {}), again.comment
    assert writes(requests_since(fresh_cluster, start)) == []
    # Under warn the same move is drift, and the declared pg_num is written back.
    fresh_cluster.pve.ceph_pools["vm-disks"]["pg_autoscale_mode"] = "warn"
    drift = present(ctx, pool.SPEC, True, "disks", **{**declared, "pg_autoscale_mode": "warn"})
    assert drift.changes == {
        "pg_num": {"old": 128, "new": 32},
    }, drift.changes


def test_a_degraded_cluster_is_refused_at_plan(fresh_cluster):
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    fresh_cluster.pve.degrade("PG_DEGRADED")
    start = len(fresh_cluster.pve.requests)
    plan = present(ctx, pool.SPEC, True, "disks", **POOL)
    assert plan.result is False
    text = " ".join(plan.comment)
    assert "Ceph reports HEALTH_WARN (PG_DEGRADED: Degraded data redundancy" in text
    assert writes(requests_since(fresh_cluster, start)) == []
    done = present(ctx, pool.SPEC, False, "disks", **POOL)
    assert done.result is False and "vm-disks" not in fresh_cluster.pve.ceph_pools
    fresh_cluster.pve.ceph_checks.clear()
    fresh_cluster.pve.ceph["health"] = "HEALTH_ERR"
    assert "Ceph reports HEALTH_ERR" in " ".join(present(ctx, pool.SPEC, True, "disks", **POOL).comment)


def test_a_destroy_is_refused_while_a_storage_names_the_pool(fresh_cluster):
    store = MemoryStore()
    ctx = make_context(static_targets(fresh_cluster), store=store)
    _plan_apply_replan(fresh_cluster, ctx, "disks", **POOL)
    fresh_cluster.pve.add_ceph_storage("vm-disks-rbd", pool="vm-disks")
    start = len(fresh_cluster.pve.requests)
    gone = absent(ctx, pool.SPEC, False, "disks", "destroy", name="vm-disks", node="pve1")
    assert gone.result is False
    assert "named by storage vm-disks-rbd" in " ".join(gone.comment)
    assert writes(requests_since(fresh_cluster, start)) == []
    assert "vm-disks" in fresh_cluster.pve.ceph_pools

    del fresh_cluster.pve.storages["vm-disks-rbd"]
    start = len(fresh_cluster.pve.requests)
    gone = absent(ctx, pool.SPEC, False, "disks", "destroy", name="vm-disks", node="pve1")
    assert gone.result is True, gone.comment
    (delete,) = writes(requests_since(fresh_cluster, start))
    assert delete[:2] == ("DELETE", "/nodes/pve1/ceph/pool/vm-disks")
    assert "vm-disks" not in fresh_cluster.pve.ceph_pools and store.rows == {}


def test_an_application_change_and_an_unknown_crush_rule_are_refused_at_plan(fresh_cluster):
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    _plan_apply_replan(fresh_cluster, ctx, "disks", **POOL)
    plan = present(ctx, pool.SPEC, True, "disks", **{**POOL, "application": "cephfs"})
    assert plan.result is False and "application rbd → cephfs cannot change" in " ".join(plan.comment)
    plan = present(ctx, pool.SPEC, True, "disks", **{**POOL, "crush_rule": "ssd-only"})
    assert plan.result is False and "CRUSH rule ssd-only does not exist" in " ".join(plan.comment)
    fresh_cluster.pve.crush_rules[1] = "ssd-only"
    _plan_apply_replan(fresh_cluster, ctx, "disks", **{**POOL, "crush_rule": "ssd-only"})
    assert fresh_cluster.pve.ceph_pools["vm-disks"]["crush_rule"] == 1


EC = {"name": "ec", "node": "pve1", "erasure_coding": {"k": 2, "m": 1}, "size": 3, "min_size": 2}


def test_an_erasure_coded_pool_is_created_as_two_pools_with_its_storage_and_destroyed_whole(fresh_cluster):
    """createpool with erasure-coding: <name>-data (erasure, profile pve_ec_<name>), <name>-metadata,
    and the RBD storage <name> with data-pool; destroypool of each, the profile and storage with them."""
    fresh_cluster.pve.ceph_osds = {"pve1": 1, "pve2": 1, "pve3": 1}
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    plan, _, log = _plan_apply_replan(fresh_cluster, ctx, "ec", **EC)
    assert "PVE makes pools ec-data (erasure-coded, profile pve_ec_ec" in " ".join(plan.comment)
    (create,) = writes(log)
    assert _form(create[2])["erasure-coding"] == "k=2,m=1,failure-domain=host"
    pools = fresh_cluster.pve.ceph_pools
    assert (pools["ec-data"]["type"], pools["ec-data"]["size"], pools["ec-metadata"]["pg_num"]) == (3, 3, 32)
    assert fresh_cluster.pve.storages["ec"]["data-pool"] == "ec-data"

    # pg_num is the data pool's, size the metadata pool's: each PUT goes to its pool.
    _, _, log = _plan_apply_replan(fresh_cluster, ctx, "ec", **{**EC, "pg_num": 64, "size": 4, "min_size": 2})
    assert [(w[1], _form(w[2])) for w in writes(log)] == [
        ("/nodes/pve1/ceph/pool/ec-data", {"pg_num": "64"}),
        ("/nodes/pve1/ceph/pool/ec-metadata", {"size": "4", "min_size": "2"}),
    ]

    plan = present(ctx, pool.SPEC, True, "ec", **{**EC, "pg_num": 64, "size": 4, "erasure_coding": "k=3,m=1"})
    assert plan.result is False and "erasure coding k+m=3 → k=3,m=1" in " ".join(plan.comment)

    start = len(fresh_cluster.pve.requests)
    gone = absent(ctx, pool.SPEC, True, "ec", "destroy", name="ec", node="pve1")
    assert gone.result is None and "destroys pools ec-data and ec-metadata" in " ".join(gone.comment)
    assert writes(requests_since(fresh_cluster, start)) == []
    gone = absent(ctx, pool.SPEC, False, "ec", "destroy", name="ec", node="pve1")
    assert gone.result is True, gone.comment
    assert "ec-data" not in pools and "ec-metadata" not in pools and "ec" not in fresh_cluster.pve.storages
    assert fresh_cluster.pve.removed_ecprofiles == ["pve_ec_ec"]


def test_an_erasure_coded_pool_is_refused_at_plan_by_name(fresh_cluster):
    """Bad input names the key and rule; fewer hosts than k+m, and a storage <name> already
    defined (PVE adds it after making both pools), are refused at plan; nothing is written."""
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    start = len(fresh_cluster.pve.requests)
    for bad, said in (
        ({"k": 1, "m": 1}, "erasure_coding: k: 1 is not a whole number of at least 2"),
        ({"k": 2, "m": 0}, "erasure_coding: m: 0 is not a whole number of at least 1"),
        ({"k": 2, "m": 1, "failure-domain": "shelf"}, "failure-domain: 'shelf' is not a CRUSH bucket type"),
    ):
        plan = present(ctx, pool.SPEC, True, "ec", **{**EC, "erasure_coding": bad})
        assert plan.result is False and said in " ".join(plan.comment), plan.comment
    assert requests_since(fresh_cluster, start) == []
    plan = present(ctx, pool.SPEC, True, "ec", **EC)
    assert plan.result is False
    assert "the Ceph cluster has 1 host bucket(s) holding an OSD" in " ".join(plan.comment)
    fresh_cluster.pve.ceph_osds = {"pve1": 1, "pve2": 1, "pve3": 1}
    fresh_cluster.pve.add_ceph_storage("ec", pool="other")
    plan = present(ctx, pool.SPEC, True, "ec", **EC)
    assert plan.result is False and "storage ec is already defined" in " ".join(plan.comment)
    assert writes(requests_since(fresh_cluster, start)) == []
    assert "ec-data" not in fresh_cluster.pve.ceph_pools
