"""Backup coverage against the served fake cluster: every plan notes, once per run, the declared guests no
enabled job covers (this run's declared jobs included, disabled ones not: PVE's
/cluster/backup-info/not-backed-up counts those), and ``backup: required`` makes an uncovered guest a
refusal at plan. The run is what Salt hands a state (``run.lowstate.Run`` of the run's chunks)."""

from __future__ import annotations

from typing import Any

from salt_proxmox.backup import coverage
from salt_proxmox.guest import lifecycle as guest_lifecycle
from salt_proxmox.lxc.family import LXC
from salt_proxmox.ownership.stores import MemoryStore
from salt_proxmox.run.lowstate import Run
from salt_proxmox.run.memo import keep_run
from tests.support.cluster import TEMPLATE
from tests.support.guests import DNS1_DECLARATION, make_context, requests_since, static_targets, writes

WEB: dict[str, Any] = {
    "vmid": 150,
    "node": "pve1",
    "ostemplate": TEMPLATE,
    "hostname": "web",
    "memory": 512,
    "rootfs": "local-zfs:4",
    "net0": "name=eth0,bridge=vmbr0,ip=dhcp",
}


def _chunk(state: str, state_id: str, fun: str = "present", **args: Any) -> dict:
    return {"state": state, "fun": fun, "__id__": state_id, "name": state_id, **args}


def _run(ctx, *chunks: dict, key: str = "run-1") -> Run:
    run = Run(list(chunks), chunks[0], key=key)
    ctx.begin(run.key)
    keep_run(ctx.memo, run)
    return run


def test_every_plan_notes_the_uncovered_guests_once_per_run(fresh_cluster):
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    dns = {**DNS1_DECLARATION, "adopt": True}
    _run(
        ctx,
        _chunk("proxmox_lxc", "dns1", **dns),
        _chunk("proxmox_lxc", "web", **WEB),
        _chunk("proxmox_backup_job", "nightly", schedule="02:00", storage="local", vmid=[120]),
    )
    first = guest_lifecycle.present(ctx, LXC, "dns1", True, **dns)
    second = guest_lifecycle.present(ctx, LXC, "web", True, **WEB)
    note = "backup coverage: no enabled backup job covers CT 150; covered: CT 120 by nightly"
    assert first.run_notes == [note], "the declared job of this run covers 120 before it exists"
    assert first.salt_return("dns1")["notes"] == [note]
    assert second.run_notes == [], "once per run, not once per state"
    assert second.result is None, second.comment


def test_a_disabled_job_does_not_cover(fresh_cluster):
    fresh_cluster.pve.add_backup_job("old", schedule="daily", vmid="120", enabled=0)
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    dns = {**DNS1_DECLARATION, "adopt": True}
    _run(ctx, _chunk("proxmox_lxc", "dns1", **dns))
    plan = guest_lifecycle.present(ctx, LXC, "dns1", True, **dns)
    assert plan.run_notes == ["backup coverage: no enabled backup job covers CT 120"]


def test_backup_required_refuses_an_uncovered_guest_and_passes_a_covered_one(fresh_cluster):
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    web = {**WEB, "backup": "required"}
    _run(ctx, _chunk("proxmox_lxc", "web", **web))
    start = len(fresh_cluster.pve.requests)
    refused = guest_lifecycle.present(ctx, LXC, "web", False, **web)
    assert refused.result is False
    assert "Refused: backup: required, and no enabled backup job covers CT 150" in refused.comment[0]
    assert writes(requests_since(fresh_cluster, start)) == [], "nothing was written"
    assert fresh_cluster.pve.ct(150) is None

    # A job this run declares covers it: the plan goes through, before the job exists.
    _run(
        ctx,
        _chunk("proxmox_lxc", "web", **web),
        _chunk("proxmox_backup_job", "nightly", schedule="02:00", storage="local", vmid="150"),
        key="run-2",
    )
    plan = guest_lifecycle.present(ctx, LXC, "web", True, **web)
    assert plan.result is None, plan.comment
    assert plan.run_notes == ["backup coverage: covered: CT 150 by nightly"]


def test_a_misspelt_backup_level_is_refused_by_name(fresh_cluster):
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    plan = guest_lifecycle.present(ctx, LXC, "web", True, **{**WEB, "backup": "requried"})
    assert plan.result is False
    assert "backup: 'requried' is not one of required, optional" in " ".join(plan.comment)


def test_the_coverage_report_lists_every_guest_of_the_cluster(fresh_cluster):
    """``proxmox.backup_coverage``: uncovered guests, and the enabled jobs covering every other guest."""
    fresh_cluster.pve.add_backup_job("nightly", schedule="02:00", vmid="120")
    fresh_cluster.pve.add_backup_job("old", schedule="daily", all=1, enabled=0)
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    report = coverage.report(ctx)
    assert report["covered"] == {"CT 120": ["nightly"]}
    assert "VM 300" in report["uncovered"] and "CT 120" not in report["uncovered"]
    assert report["disabled"] == ["old"]


def test_backup_required_refuses_an_uncovered_vm_too(fresh_cluster):
    """The guard is the guest lifecycle's, so VMs take backup: as containers do."""
    from salt_proxmox.qemu.family import QEMU
    from tests.support.guests import vm

    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    declared = {**vm(210), "backup": "required"}
    _run(ctx, _chunk("proxmox_qemu", "app", **declared))
    start = len(fresh_cluster.pve.requests)
    refused = guest_lifecycle.present(ctx, QEMU, "app", True, **declared)
    assert refused.result is False
    assert "Refused: backup: required, and no enabled backup job covers VM 210" in refused.comment[0]
    assert writes(requests_since(fresh_cluster, start)) == []
