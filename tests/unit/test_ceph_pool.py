"""The Ceph pool rules (salt_proxmox/ceph/pool.py), each beside the pve-manager or Ceph source it follows:
pve-manager ``PVE/API2/Ceph/Pool.pm`` (``lspools``, ``createpool``, ``setpool``, ``destroypool``) and
``PVE/Ceph/Tools.pm`` (``set_pool``), Ceph ``src/mon/OSDMonitor.cc`` ``prepare_command_pool_set``."""

from __future__ import annotations

import pytest

from salt_proxmox.ceph import pool
from salt_proxmox.errors import DeclarationError

#: A row of ``lspools`` as PVE 9 answers it (``crush_rule`` an id, ``crush_rule_name`` its name, the
#: pool options under their API names).
ROW = {
    "pool": 2,
    "pool_name": "vm-disks",
    "size": 3,
    "min_size": 2,
    "pg_num": 32,
    "crush_rule": 0,
    "crush_rule_name": "replicated_rule",
    "pg_autoscale_mode": "on",
    "application_metadata": {"rbd": {}},
    "target_size": 1073741824,
    "target_size_ratio": 0.2,
    "type": "replicated",
}


def _decl(**values):
    return pool.declare("disks", "lab", name="vm-disks", node="pve1", **values)


def test_min_size_above_size_is_refused_when_declared():
    """Ceph: ``pool min_size must be between 1 and size``."""
    with pytest.raises(DeclarationError, match="min_size: 3 is above size 2"):
        _decl(size=2, min_size=3)
    assert _decl(size=3, min_size=3).values == {"size": 3, "min_size": 3}


def test_min_size_is_judged_by_the_live_or_the_default_size():
    """Only min_size declared: the live size decides; on a create, createpool's default size 3."""
    assert pool.size_problems({"min_size": 3}, {"size": 2, "min_size": 1})
    assert pool.size_problems({"min_size": 4}, None)
    assert pool.size_problems({"min_size": 3}, None) == []


def test_a_size_change_that_would_leave_min_size_at_cephs_default_is_refused():
    """set_pool reads the properties once, before ``size`` resets ``min_size`` to size - size/2, and skips
    a ``min_size`` equal to the value read: 3/2 → 4/2 leaves min_size 2 (= default of 4: fine), 3/1 → 4/1
    would leave 2."""
    live = {"size": 3, "min_size": 1}
    assert pool.size_problems({"size": 4, "min_size": 1}, live)
    assert pool.size_problems({"size": 4, "min_size": 2}, {"size": 3, "min_size": 2}) == []
    assert pool.size_problems({"size": 4, "min_size": 3}, live) == [], "a changed min_size is applied"
    assert [pool.default_min_size(n) for n in (1, 2, 3, 4, 5)] == [1, 1, 2, 2, 3]


def test_the_autoscaler_owns_pg_num_only_when_on():
    """``pg_autoscale_mode: on``: Ceph's pg_autoscaler moves pg_num; warn and off leave it."""
    live = pool.parse_row(ROW)
    assert pool.SPEC.differences({**live, "pg_num": 128}, _decl(pg_num=32)) == {}
    assert pool.SPEC.differences({**live, "pg_num": 128}, _decl(pg_num=32, pg_autoscale_mode="warn")) == {
        "pg_num": {"old": 128, "new": 32},
        "pg_autoscale_mode": {"old": "on", "new": "warn"},
    }


def test_a_listing_row_is_read_with_the_rule_name_and_the_applications():
    assert pool.parse_row(ROW) == {
        "size": 3,
        "min_size": 2,
        "pg_num": 32,
        "pg_num_min": "",
        "pg_autoscale_mode": "on",
        "crush_rule": "replicated_rule",
        "application": "rbd",
        "target_size": "1073741824",
        "target_size_ratio": "0.2",
        "type": "replicated",
    }
    assert pool.parse([ROW], _decl()) is not None
    assert pool.parse([{**ROW, "pool_name": "other"}], _decl()) is None, "lspools lists every pool"
    with pytest.raises(ValueError):
        pool.parse({"vm-disks": ROW}, _decl())


def test_declared_sizes_are_compared_as_ceph_keeps_them():
    """createpool parses target_size into target_size_bytes; 0 unsets a pool option."""
    decl = _decl(target_size="1G", target_size_ratio="0.20", pg_num_min=0)
    assert decl.values == {"target_size": "1073741824", "target_size_ratio": "0.2", "pg_num_min": ""}
    with pytest.raises(DeclarationError, match="size"):
        _decl(size=8)  # $ceph_pool_common_options: maximum 7
    with pytest.raises(DeclarationError, match="application"):
        _decl(application="nfs")
    with pytest.raises(DeclarationError, match="colour"):
        _decl(colour="red")
    with pytest.raises(DeclarationError, match="name"):
        pool.identify("x", "lab", name="a/b", node="pve1")  # createpool: ^[^:/\s]+$


def test_an_update_sends_what_differs_a_cleared_option_as_0_and_never_the_application():
    live = pool.parse_row(ROW)
    call = pool.update_call(_decl(size=4, min_size=2, target_size=None, application="cephfs"), live)
    assert (call.method, call.path) == ("PUT", "nodes/pve1/ceph/pool/vm-disks")
    assert call.form == {"size": "4", "min_size": "2", "target_size": "0"}
    assert pool.update_call(_decl(application="cephfs"), live) is None


def test_ceph_health_refuses_an_error_and_degraded_data_only():
    """``ceph status`` health: HEALTH_ERR, or a raised PG_DEGRADED/PG_AVAILABILITY/OSD_DOWN/..., refuses."""
    ok = {"health": {"status": "HEALTH_OK", "checks": {}}}
    assert pool.health_problem(ok, "pve1") is None
    noisy = {"status": "HEALTH_WARN", "checks": {"AUTH_INSECURE_GLOBAL_ID_RECLAIM_ALLOWED": {}}}
    assert pool.health_problem({"health": noisy}, "pve1") is None
    degraded = {
        "status": "HEALTH_WARN",
        "checks": {"PG_DEGRADED": {"summary": {"message": "Degraded data redundancy: 1 pg degraded"}}},
    }
    assert "PG_DEGRADED: Degraded data redundancy" in pool.health_problem({"health": degraded}, "pve1")
    assert "HEALTH_ERR" in pool.health_problem({"health": {"status": "HEALTH_ERR", "checks": {}}}, "pve1")
    with pytest.raises(ValueError):
        pool.health_problem({"fsid": "x"}, "pve1")


def test_storages_naming_a_pool_are_found_as_destroypool_finds_them():
    """``$get_storages``: rbd storages whose pool (rbd when unset) or data-pool is the pool."""
    rows = [
        {"storage": "a", "type": "rbd", "pool": "vm-disks"},
        {"storage": "b", "type": "rbd"},
        {"storage": "c", "type": "rbd", "pool": "meta", "data-pool": "vm-disks"},
        {"storage": "d", "type": "cephfs", "pool": "vm-disks"},
    ]
    assert pool.storages_naming(rows, "vm-disks") == ["a", "c"]
    assert pool.storages_naming(rows, "rbd") == ["b"]


def test_a_destroy_never_removes_storages_nor_an_erasure_code_profile():
    """destroypool: remove_storages defaults to 0, remove_ecprofile to 1, so 0 is sent for the latter."""
    call = pool.SPEC.delete(_decl(), {})
    assert (call.method, call.path, call.params) == (
        "DELETE",
        "nodes/pve1/ceph/pool/vm-disks",
        {"remove_ecprofile": "0"},
    )


# ------------------------------------------------------------------------- erasure-coded pools
# pve-manager PVE/API2/Ceph/Pool.pm createpool ($ec_format, ec_parse_and_check, $add_storage),
# destroypool; PVE/Ceph/Tools.pm create_ecprofile, get_ecprofile_name, set_pool.

from salt_proxmox.ceph import erasure  # noqa: E402

DATA = {
    **ROW,
    "pool_name": "ec-data",
    "type": "erasure",
    "size": 3,
    "min_size": 2,
    "crush_rule_name": "ec-data",
}
META = {**ROW, "pool_name": "ec-metadata", "pg_num": 32, "size": 3, "min_size": 2}


def _ec(**values):
    return pool.declare("ec", "lab", name="ec", node="pve1", **values)


def test_erasure_coding_is_pves_property_string_with_its_minimums_and_default():
    """$ec_format: k minimum 2, m minimum 1, failure-domain default host; a mapping or the string."""
    assert _ec(erasure_coding={"k": 2, "m": 1}).values == {"erasure_coding": "k=2,m=1,failure-domain=host"}
    assert _ec(erasure_coding="m=2,k=4,device-class=ssd").values["erasure_coding"] == (
        "k=4,m=2,failure-domain=host,device-class=ssd"
    )
    with pytest.raises(DeclarationError, match="erasure_coding: k: 1 is not a whole number of at least 2"):
        _ec(erasure_coding={"k": 1, "m": 1})
    with pytest.raises(DeclarationError, match="erasure_coding: m: 0 is not a whole number of at least 1"):
        _ec(erasure_coding={"k": 2, "m": 0})
    with pytest.raises(DeclarationError, match="erasure_coding: failure-domain: 'shelf' is not a CRUSH"):
        _ec(erasure_coding={"k": 2, "m": 1, "failure-domain": "shelf"})
    with pytest.raises(DeclarationError, match="erasure_coding: unknown key"):
        _ec(erasure_coding={"k": 2, "m": 1, "plugin": "isa"})


def test_an_erasure_coded_pool_is_read_from_its_two_pools():
    """createpool makes <name>-data (erasure, size k+m) and <name>-metadata; size, min_size and
    crush_rule are the metadata pool's, pg_num the data pool's."""
    decl = _ec(erasure_coding="k=2,m=1", pg_num=32, size=3)
    live = pool.parse([DATA, META, ROW], decl)
    assert live["erasure_coding"] == "k=2,m=1,failure-domain=host"
    assert (live["crush_rule"], live["pg_num"]) == ("replicated_rule", 32)
    assert pool.parse([ROW], decl) is None, "neither pool listed: absent"
    assert pool.parse([DATA], decl)["erasure_coding"] == "ec-metadata missing"
    assert pool.parse([{**DATA, "size": 5}, META], decl)["erasure_coding"] == "k+m=5"
    problem = erasure.immutable_problem(
        "Ceph pool ec", {"erasure_coding": "k+m=5"}, "k=2,m=1,failure-domain=host"
    )
    assert "cannot change" in problem and "create another pool" in problem


def test_an_erasure_coded_create_sends_the_property_string_and_updates_go_to_the_pool_holding_each_key():
    decl = _ec(erasure_coding={"k": 2, "m": 1}, size=3)
    call = pool.create_call(decl)
    assert call.form == {"name": "ec", "size": "3", "erasure-coding": "k=2,m=1,failure-domain=host"}
    assert erasure.split_update({"size": "4", "pg_num": "64"}, "ec") == [
        ("ec-data", {"pg_num": "64"}),
        ("ec-metadata", {"size": "4"}),
    ], "set_pool drops size and crush_rule on an erasure-coded pool"


def test_failure_domains_are_counted_from_the_osd_tree_and_fewer_than_k_plus_m_refused():
    """CRUSH puts each of the k+m chunks in its own failure domain (the profile's chooseleaf indep rule)."""
    host = lambda name, n: {"type": "host", "name": name, "children": [{"type": "osd"}] * n}  # noqa: E731
    tree = {"root": {"children": [{"type": "root", "children": [host("a", 2), host("b", 1), host("c", 0)]}]}}
    assert erasure.failure_domains(tree, "host") == 2
    assert erasure.failure_domains(tree, "osd") == 3
    ec = erasure.parse_ec("k=2,m=1")
    assert erasure.domain_problem("p", ec, 3) is None
    assert "has 2 host bucket(s) holding an OSD" in erasure.domain_problem("p", ec, 2)
    with pytest.raises(ValueError):
        erasure.failure_domains({"nodes": []}, "host")


def test_an_erasure_coded_destroy_removes_both_pools_and_only_its_own_profile():
    """destroypool: remove_ecprofile for pve_ec_<name> only; remove_storages for PVE's storage <name>."""
    path = lambda pool_name: f"nodes/pve1/ceph/pool/{pool_name}"  # noqa: E731
    assert erasure.delete_calls(path, "ec", erasure.parse_ec("k=2,m=1")) == [
        ("nodes/pve1/ceph/pool/ec-data", {"remove_ecprofile": "1", "remove_storages": "1"}),
        ("nodes/pve1/ceph/pool/ec-metadata", {"remove_ecprofile": "0"}),
    ]
    kept = erasure.delete_calls(path, "ec", erasure.parse_ec("k=2,m=1,profile=shared"))
    assert kept[0][1]["remove_ecprofile"] == "0"
    assert "destroys profile pve_ec_ec" in erasure.delete_notes("p", "ec", erasure.parse_ec("k=2,m=1"))[0]
