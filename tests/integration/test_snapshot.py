"""Snapshots through the simple-object lifecycle and the ad-hoc calls, against the served fake cluster
(fakepve models container and VM snapshots: pve-container ``API2/LXC/Snapshot.pm``, qemu-server
``API2/Qemu.pm``). A plan only reads, the apply takes the snapshot as PVE's task, a second plan is clean;
PVE's refusals of the task are predicted at plan (pve-guest-common ``AbstractConfig.pm``
``__snapshot_prepare``: ``check_lock``, ``has_feature('snapshot')``; ``vmstate`` of a stopped VM)."""

from __future__ import annotations

import pytest

from salt_proxmox.backup import adhoc, snapshot
from salt_proxmox.errors import Refused
from salt_proxmox.ownership.rows import row_key
from salt_proxmox.ownership.stores import MemoryStore
from salt_proxmox.registry import guests
from salt_proxmox.simple.lifecycle import absent, present
from tests.support.guests import make_context, requests_since, static_targets, writes

SNAP = {"name": "before-upgrade", "vmid": 120, "node": "pve1", "type": "lxc", "description": "pre 13.2"}


def _vm(served, vmid: int, disk: str, status: str = "running"):
    config = {
        "memory": 1024,
        "scsihw": "virtio-scsi-single",
        "scsi0": disk,
        "net0": "virtio=BC:24:11:00:00:01,bridge=vmbr0",
    }
    return served.pve.add_vm(vmid, f"vm{vmid}", node="pve1", status=status, config=config)


def test_a_snapshot_is_taken_by_a_task_and_replanned_clean(fresh_cluster):
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    start = len(fresh_cluster.pve.requests)
    plan = present(ctx, snapshot.SPEC, True, "snap", **SNAP)
    assert plan.result is None, plan.comment
    assert writes(requests_since(fresh_cluster, start)) == []
    done = present(ctx, snapshot.SPEC, False, "snap", **SNAP)
    assert done.result is True, done.comment
    assert done.changes == plan.changes
    assert fresh_cluster.pve.ct(120).snapshots["before-upgrade"]["description"] == "pre 13.2"
    assert fresh_cluster.pve.tasklog[-1]["type"] == "vzsnapshot"
    row = ctx.ownership.row(row_key(ctx.target.name, "snapshot", "120/before-upgrade"))
    assert row["declared"] == {"name": "before-upgrade", "vmid": "120", "node": "pve1", "type": "lxc"}, (
        "notes a human wrote are never kept in a row"
    )
    start = len(fresh_cluster.pve.requests)
    again = present(ctx, snapshot.SPEC, True, "snap", **SNAP)
    assert (again.result, again.changes) == (True, {}), again.comment
    assert writes(requests_since(fresh_cluster, start)) == []

    # A new description is a PUT of the snapshot's config, no task; vmstate is the snapshot's own.
    changed = present(ctx, snapshot.SPEC, False, "snap", **{**SNAP, "description": "pre 13.3"})
    assert changed.result is True and changed.changes == {
        "description": {"old": "pre 13.2", "new": "pre 13.3"}
    }
    gone = absent(
        ctx,
        snapshot.SPEC,
        False,
        "snap",
        removal="destroy",
        name="before-upgrade",
        vmid=120,
        node="pve1",
        type="lxc",
    )
    assert gone.result is True, gone.comment
    assert "before-upgrade" not in fresh_cluster.pve.ct(120).snapshots


def test_a_locked_guest_is_refused_at_plan(fresh_cluster):
    """check_lock: 'CT is locked (backup)' while vzdump holds the config."""
    fresh_cluster.pve.ct(120).lock = "backup"
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    plan = present(ctx, snapshot.SPEC, True, "snap", **SNAP)
    assert plan.result is False
    assert "CT 120 is locked (backup)" in " ".join(plan.comment)


def test_a_vm_disk_on_a_storage_that_cannot_snapshot_is_refused_at_plan(fresh_cluster):
    """A raw file on a dir storage has no snapshot (pve-storage Plugin.pm volume_has_feature: qcow2 only)."""
    _vm(fresh_cluster, 310, "local:310/vm-310-disk-0.raw,size=8G")
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    plan = present(ctx, snapshot.SPEC, True, "snap", name="s1", vmid=310, node="pve1", type="qemu")
    assert plan.result is False
    assert "scsi0 (local:310/vm-310-disk-0.raw: dir storage, raw) cannot be snapshotted" in " ".join(
        plan.comment
    )
    # The same file as qcow2 snapshots.
    _vm(fresh_cluster, 311, "local:311/vm-311-disk-0.qcow2,size=8G")
    ok = present(ctx, snapshot.SPEC, True, "snap", name="s1", vmid=311, node="pve1", type="qemu")
    assert ok.result is None, ok.comment


def test_a_qcow2_volume_on_lvm_snapshots_on_pve_9_only_and_a_raw_one_never(fresh_cluster):
    """pve-storage 9.0 ``LVMPlugin.pm`` ``volume_has_feature``: ``snapshot => {current => {qcow2 =>
    1}}``, the volume chain of a storage with ``snapshot-as-volume-chain`` (``parse_volname`` reads
    the format from the ``.qcow2`` name); a raw LVM volume has none. PVE 8's ``LVMPlugin.pm`` has no
    snapshot feature. The rule follows ``GET /version``."""
    fresh_cluster.pve.storages["san"] = {
        "type": "lvm", "vgname": "san", "content": "images", "snapshot-as-volume-chain": 1,
        "active": 1, "files": set(), "volumes": {},
    }  # fmt: skip
    _vm(fresh_cluster, 330, "san:vm-330-disk-0.qcow2,size=8G")
    _vm(fresh_cluster, 331, "san:vm-331-disk-0,size=8G")
    declared = {"name": "s1", "node": "pve1", "type": "qemu"}
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    ok = present(ctx, snapshot.SPEC, True, "snap", vmid=330, **declared)
    assert ok.result is None, ok.comment
    raw = present(ctx, snapshot.SPEC, True, "snap", vmid=331, **declared)
    assert raw.result is False
    text = " ".join(raw.comment)
    assert "scsi0 (san:vm-331-disk-0: lvm storage, raw) cannot be snapshotted" in text
    assert "qcow2 on an LVM storage with snapshot-as-volume-chain" in text

    fresh_cluster.pve.version, fresh_cluster.pve.release_version = "8.4.14", "8.4"
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    refused = present(ctx, snapshot.SPEC, True, "snap", vmid=330, **declared)
    assert refused.result is False, refused.comment
    text = " ".join(refused.comment)
    assert "scsi0 (san:vm-330-disk-0.qcow2: lvm storage, qcow2) cannot be snapshotted" in text
    assert "snapshot-as-volume-chain" not in text, "PVE 8 has no volume chain to name"
    assert writes(requests_since(fresh_cluster, 0)) == []


def test_vmstate_of_a_stopped_vm_is_refused_at_plan_and_of_a_running_one_taken(fresh_cluster):
    _vm(fresh_cluster, 320, "local-lvm:vm-320-disk-0,size=8G", status="stopped")
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    declared = {"name": "s1", "vmid": 320, "node": "pve1", "type": "qemu", "vmstate": True}
    plan = present(ctx, snapshot.SPEC, True, "snap", **declared)
    assert plan.result is False
    assert "vmstate asks for the RAM of a running VM, and VM 320 is not running" in " ".join(plan.comment)
    fresh_cluster.pve.find("pve1", 320).status = "running"
    done = present(ctx, snapshot.SPEC, False, "snap", **declared)
    assert done.result is True, done.comment
    again = present(ctx, snapshot.SPEC, True, "snap", **declared)
    assert (again.result, again.changes) == (True, {}), again.comment


def test_a_container_has_no_vmstate(fresh_cluster):
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    plan = present(ctx, snapshot.SPEC, True, "snap", **{**SNAP, "vmstate": True})
    assert plan.result is False and "vmstate: a container snapshot has no RAM state" in " ".join(plan.comment)


def test_a_snapshot_of_a_guest_that_does_not_exist_is_refused(fresh_cluster):
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    plan = present(ctx, snapshot.SPEC, True, "snap", **{**SNAP, "vmid": 777})
    assert plan.result is False
    assert "CT 777 does not exist on pve1, and no state of this run declares it" in " ".join(plan.comment)


def test_the_adhoc_calls_obey_ownership(fresh_cluster):
    """Container 120 was made outside this minion: a snapshot of it is refused unless adopt=True."""
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    start = len(fresh_cluster.pve.requests)
    with pytest.raises(Refused, match="is not recorded as ours"):
        adhoc.create(ctx, guests(), 120, "s1")
    assert writes(requests_since(fresh_cluster, start)) == []
    made = adhoc.create(ctx, guests(), 120, "s1", description="by hand", adopt=True)
    assert made["upid"] and "s1" in fresh_cluster.pve.ct(120).snapshots
    assert [row["name"] for row in adhoc.list_snapshots(ctx, guests(), 120)] == ["s1"]


def test_a_rollback_says_what_it_discards_before_it_rolls_back(fresh_cluster):
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    adhoc.create(ctx, guests(), 120, "s1", adopt=True)
    ct = fresh_cluster.pve.ct(120)
    ct.config["memory"] = 2048
    adhoc.create(ctx, guests(), 120, "s2", adopt=True)
    ct.snapshots["s2"]["snaptime"] = ct.snapshots["s1"]["snaptime"] + 10
    start = len(fresh_cluster.pve.requests)
    shown = adhoc.rollback(ctx, guests(), 120, "s1", adopt=True, test=True)
    assert writes(requests_since(fresh_cluster, start)) == [], "test=True sends nothing"
    assert shown["upid"] is None
    assert shown["discards"]["config"]["memory"] == {"old": 2048, "new": 512}
    assert shown["discards"]["later_snapshots"] == ["s2"]
    done = adhoc.rollback(ctx, guests(), 120, "s1", adopt=True)
    assert done["upid"] and ct.config["memory"] == 512


def _untyped(**over):
    return {key: value for key, value in {**SNAP, **over}.items() if key != "type"}


def test_a_snapshot_declared_without_type_is_planned_applied_and_replanned_clean(fresh_cluster):
    """A vmid is unique in the cluster (pve-cluster ``check_vmid_unused``), so the guest index row names
    the guest's family: the plan says which, the apply takes the snapshot on that path, the row keeps it,
    a replan is clean and a destroy needs no type either."""
    _vm(fresh_cluster, 311, "local:311/vm-311-disk-0.qcow2,size=8G")
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    for declared, kind, guest in ((_untyped(), "lxc", "CT 120"), (_untyped(vmid=311), "qemu", "VM 311")):
        state_id = f"snap-{kind}"
        start = len(fresh_cluster.pve.requests)
        plan = present(ctx, snapshot.SPEC, True, state_id, **declared)
        assert plan.result is None, plan.comment
        text = " ".join(plan.comment)
        assert f"type: {kind}" in text and "cluster/resources" in text, text
        assert plan.changes["created"]["new"] == f"snapshot before-upgrade of {guest}"
        assert writes(requests_since(fresh_cluster, start)) == []
        done = present(ctx, snapshot.SPEC, False, state_id, **declared)
        assert done.result is True, done.comment
        assert done.changes == plan.changes
        row = ctx.ownership.row(row_key(ctx.target.name, "snapshot", f"{declared['vmid']}/before-upgrade"))
        assert row["declared"]["type"] == kind
        start = len(fresh_cluster.pve.requests)
        again = present(ctx, snapshot.SPEC, True, state_id, **declared)
        assert (again.result, again.changes) == (True, {}), again.comment
        assert writes(requests_since(fresh_cluster, start)) == []
    assert "before-upgrade" in fresh_cluster.pve.ct(120).snapshots
    assert "before-upgrade" in fresh_cluster.pve.find("pve1", 311).snapshots
    gone = absent(
        ctx, snapshot.SPEC, False, "snap-lxc", removal="destroy", name="before-upgrade", vmid=120, node="pve1"
    )
    assert gone.result is True, gone.comment
    assert "before-upgrade" not in fresh_cluster.pve.ct(120).snapshots


def test_a_type_contradicting_the_guest_index_is_refused_naming_the_key(fresh_cluster):
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    start = len(fresh_cluster.pve.requests)
    plan = present(ctx, snapshot.SPEC, True, "snap", **{**SNAP, "type": "qemu"})
    assert plan.result is False
    assert "type: qemu, but vmid 120 is a container (cluster/resources)" in " ".join(plan.comment)
    bad = present(ctx, snapshot.SPEC, True, "snap", **{**SNAP, "type": "vm"})
    assert bad.result is False
    assert "type: 'vm' is neither lxc nor qemu" in " ".join(bad.comment)
    assert writes(requests_since(fresh_cluster, start)) == []


def test_a_snapshot_without_type_of_a_guest_in_neither_index_nor_run_is_refused(fresh_cluster):
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    plan = present(ctx, snapshot.SPEC, True, "snap", **_untyped(vmid=777))
    assert plan.result is False
    text = " ".join(plan.comment)
    assert "VM/CT 777 exists in no guest index row nor in this run's declarations" in text
    assert "declare type (lxc or qemu)" in text


def test_a_failing_guest_index_read_is_an_error_never_absence(fresh_cluster):
    fresh_cluster.pve.fail("GET", "/cluster/resources", 500, "got timeout")
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    plan = present(ctx, snapshot.SPEC, True, "snap", **_untyped())
    assert plan.result is False
    text = " ".join(plan.comment)
    assert "got timeout" in text and "exists in no guest index row" not in text, text


def test_a_snapshot_without_type_of_a_guest_this_run_creates_takes_its_family(fresh_cluster):
    """CT 150 is not in the guest index until its state creates it: the plan reads the snapshot's family
    from the state that declares the guest; the apply, after the guest's, from the index."""
    from salt_proxmox.guest import lifecycle as guest_lifecycle
    from salt_proxmox.lxc.family import LXC
    from salt_proxmox.run.lowstate import Run
    from salt_proxmox.run.memo import keep_run
    from tests.support.guests import declaration

    web = declaration(vmid=150, mp0=None)
    snap = _untyped(vmid=150)
    chunks = [
        {"state": "proxmox_lxc", "fun": "present", "__id__": "web", "name": "web", **web},
        {"state": "proxmox_snapshot", "fun": "present", "__id__": "snap", **snap},
    ]
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    run = Run(chunks, chunks[0], key="run-1")
    ctx.begin(run.key)
    keep_run(ctx.memo, run)
    assert guest_lifecycle.present(ctx, LXC, "web", True, **web).result is None
    plan = present(ctx, snapshot.SPEC, True, "snap", **snap)
    assert plan.result is None, plan.comment
    text = " ".join(plan.comment)
    assert "type: lxc" in text and "state web of this run" in text, text
    assert plan.changes["created"]["new"] == "snapshot before-upgrade of CT 150"

    made = guest_lifecycle.present(ctx, LXC, "web", False, **web)
    assert made.result is True, made.comment
    done = present(ctx, snapshot.SPEC, False, "snap", **snap)
    assert done.result is True, done.comment
    assert "before-upgrade" in fresh_cluster.pve.ct(150).snapshots
    ctx = make_context(static_targets(fresh_cluster), store=ctx.ownership.store)
    again = present(ctx, snapshot.SPEC, True, "snap", **snap)
    assert (again.result, again.changes) == (True, {}), again.comment


def test_the_adhoc_get_reads_a_snapshot_without_type(fresh_cluster, tmp_path):
    """``proxmox.snapshot_get`` completes its identity as the state does (``ObjectSpec.resolve``)."""
    from tests.support.salt_modules import execution_module

    adhoc.create(
        make_context(static_targets(fresh_cluster)), guests(), 120, "s1", description="x", adopt=True
    )
    module = execution_module(
        {"proxmox:targets": static_targets(fresh_cluster), "proxmox:ownership_file": str(tmp_path / "rows")}
    )
    got = module.snapshot_get("s1", vmid=120, node="pve1")
    assert got["description"] == "x"
