"""Backup jobs through the simple-object lifecycle, against the served fake cluster, whose backup jobs are
``tests.support.backup.BackupPve`` (pve-manager ``PVE/API2/Backup.pm``: fakepve 0.5.0 stores none). A plan
only reads, an apply writes what the plan showed, a second plan is clean; a schedule PVE keeps in another
spelling is the same schedule; a job is re-read right before a write, since PVE keeps no digest for it."""

from __future__ import annotations

from urllib.parse import parse_qs

import pytest

from salt_proxmox.backup import job
from salt_proxmox.ownership.stores import MemoryStore
from salt_proxmox.simple import lifecycle
from salt_proxmox.simple.lifecycle import absent, present
from tests.support.guests import make_context, requests_since, static_targets, writes

JOB = {"name": "nightly", "schedule": "02:00", "storage": "local", "vmid": [120, 300], "mode": "snapshot"}


def _form(body: bytes) -> dict[str, str]:
    return {key: values[0] for key, values in parse_qs(body.decode(), keep_blank_values=True).items()}


def _plan_apply_replan(served, ctx, state_id, **declared):
    start = len(served.pve.requests)
    plan = present(ctx, job.SPEC, True, state_id, **declared)
    assert plan.result is None, plan.comment
    assert writes(requests_since(served, start)) == [], "a plan never writes"
    start = len(served.pve.requests)
    done = present(ctx, job.SPEC, False, state_id, **declared)
    assert done.result is True, done.comment
    assert done.changes == plan.changes, "the apply did what the plan showed"
    log = requests_since(served, start)
    start = len(served.pve.requests)
    again = present(ctx, job.SPEC, True, state_id, **declared)
    assert (again.result, again.changes) == (True, {}), again.comment
    assert writes(requests_since(served, start)) == []
    return plan, done, log


def test_a_job_is_created_updated_and_replanned_clean(fresh_cluster):
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    _, _, log = _plan_apply_replan(fresh_cluster, ctx, "nightly", **JOB, **{"prune-backups": "keep-daily=7"})
    (create,) = writes(log)
    assert create[:2] == ("POST", "/cluster/backup")
    assert _form(create[2]) == {
        "id": "nightly",
        "schedule": "02:00",
        "storage": "local",
        "vmid": "120,300",
        "mode": "snapshot",
        "prune-backups": "keep-daily=7",
    }
    kept = fresh_cluster.pve.backup_jobs["nightly"]
    assert kept["enabled"] == 1 and kept["prune-backups"] == {"keep-daily": 7}, "create_job's default, parsed"

    # Moving the job to all-but-300 sends all and exclude and deletes vmid (update_job would drop it too).
    moved = {**JOB, "vmid": None, "all": True, "exclude": [300]}
    _, done, log = _plan_apply_replan(fresh_cluster, ctx, "nightly", **moved)
    assert set(done.changes) == {"vmid", "all", "exclude"}
    (update,) = writes(log)
    assert update[:2] == ("PUT", "/cluster/backup/nightly")
    assert _form(update[2]) == {"all": "1", "exclude": "300", "delete": "vmid"}
    assert "digest" not in _form(update[2]), "PVE's /cluster/backup takes no digest"


def test_a_schedule_in_another_spelling_is_not_drift_and_a_utc_one_is(fresh_cluster):
    """PVE keeps a schedule as sent (Backup.pm create_job); proxmox-time reads '*-*-* 2:00:00', '02:00' and
    '2:0' as one event, and '02:00 UTC' as another (calendar_event.rs: the UTC suffix)."""
    fresh_cluster.pve.add_backup_job(
        "nightly", schedule="*-*-* 2:00:00", storage="local", vmid="300,120", mode="snapshot"
    )
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    for spelling in ("02:00", "2:0", "2:00:00"):
        plan = present(ctx, job.SPEC, True, "nightly", **{**JOB, "schedule": spelling, "adopt": True})
        assert set(plan.changes) <= {"ownership"}, (spelling, plan.changes)
    utc = present(ctx, job.SPEC, True, "nightly", **{**JOB, "schedule": "02:00 UTC", "adopt": True})
    assert utc.changes["schedule"] == {"old": "*-*-* 2:00:00", "new": "02:00 UTC"}
    # 25:00 is minute 25 of every hour (parse_time_spec: 25 is no hour), so it means what '*:25' means.
    fresh_cluster.pve.edit_job("nightly", schedule="*:25")
    same = present(ctx, job.SPEC, True, "nightly", **{**JOB, "schedule": "25:00", "adopt": True})
    assert "schedule" not in same.changes


def test_a_schedule_pve_would_refuse_is_refused_before_any_read(fresh_cluster):
    """'Daily' is no keyword (proxmox-time matches 'daily' exactly) and no weekday."""
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    start = len(fresh_cluster.pve.requests)
    plan = present(ctx, job.SPEC, True, "nightly", **{**JOB, "schedule": "Daily"})
    assert plan.result is False
    assert "schedule: unable to parse calendar event" in " ".join(plan.comment)
    assert requests_since(fresh_cluster, start) == []


def test_a_job_naming_a_guest_that_does_not_exist_is_refused_at_plan(fresh_cluster):
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    start = len(fresh_cluster.pve.requests)
    plan = present(ctx, job.SPEC, True, "nightly", **{**JOB, "vmid": [120, 777]})
    assert plan.result is False
    assert "vmid: guest 777 does not exist and no state of this run declares it" in " ".join(plan.comment)
    assert writes(requests_since(fresh_cluster, start)) == []


def test_a_pool_that_does_not_exist_is_refused_at_plan(fresh_cluster):
    """create_job runs check_pool_exist; the fake answers as PVE does, the plan says so first."""
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    plan = present(ctx, job.SPEC, True, "nightly", **{**JOB, "vmid": None, "pool": "nosuch"})
    assert plan.result is False
    assert "pool: pool nosuch does not exist" in " ".join(plan.comment)


def test_an_edit_between_the_decision_and_the_write_is_caught(fresh_cluster, monkeypatch):
    """No digest guards /cluster/backup: the job is read again right before the PUT and compared."""
    fresh_cluster.pve.add_backup_job("nightly", schedule="02:00", storage="local", vmid="120,300")
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    decide = lifecycle.decide

    def decide_then_edit(*args, **kwargs):
        decision = decide(*args, **kwargs)
        fresh_cluster.pve.edit_job("nightly", comment="edited by hand")
        return decision

    monkeypatch.setattr(lifecycle, "decide", decide_then_edit)
    start = len(fresh_cluster.pve.requests)
    done = present(ctx, job.SPEC, False, "nightly", **{**JOB, "mode": "stop", "adopt": True})
    assert done.result is False
    assert "backup job nightly changed after it was read for this decision" in " ".join(done.comment)
    assert writes(requests_since(fresh_cluster, start)) == [], "nothing was written"
    assert fresh_cluster.pve.backup_jobs["nightly"].get("mode") is None


def test_a_destroy_reads_the_job_again_and_deletes_it(fresh_cluster):
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    _plan_apply_replan(fresh_cluster, ctx, "nightly", **JOB)
    gone = absent(ctx, job.SPEC, False, "nightly", removal="destroy", name="nightly")
    assert gone.result is True, gone.comment
    assert "nightly" not in fresh_cluster.pve.backup_jobs
    again = absent(ctx, job.SPEC, True, "nightly", removal="destroy", name="nightly")
    assert again.result is True and "is absent" in " ".join(again.comment)


@pytest.mark.parametrize(
    ("release", "key", "value", "refused"),
    [
        (("9.1.1", "9.1"), "notification-policy", "failure", True),
        (("8.4.14", "8.4"), "notification-policy", "failure", False),
        (("8.0.4", "8.0"), "notification-mode", "auto", True),
        (("8.4.14", "8.4"), "notification-mode", "auto", False),
        (("9.1.1", "9.1"), "mailto", "root@example.com", False),
    ],
)
def test_an_option_the_release_does_not_know_is_refused_by_release(
    fresh_cluster, release, key, value, refused
):
    """pve-guest-common VZDump/Common.pm: notification-mode from 5.0.6 (PVE 8.1); notification-policy,
    notification-target and maxfiles gone in 6.0 (PVE 9); mailto kept (deprecated) on both."""
    fresh_cluster.pve.version, fresh_cluster.pve.release_version = release
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    plan = present(ctx, job.SPEC, True, "nightly", **{**JOB, key: value})
    text = " ".join(plan.comment)
    if refused:
        assert plan.result is False and f"{key}: the cluster runs PVE {release[1]}" in text
    else:
        assert plan.result is None, text


def test_a_put_carrying_a_digest_is_refused_as_pve_refuses_it(fresh_cluster):
    """update_job's schema has no digest (pve-manager API2/Backup.pm): PVE answers 400, so the product
    never sends one and guards the write by reading the job again instead."""
    from salt_proxmox.pve.errors import PveError

    fresh_cluster.pve.add_backup_job("nightly", schedule="02:00", storage="local", vmid="120")
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    with pytest.raises(PveError) as caught:
        ctx.client.request(
            "PUT", "cluster/backup/nightly", ctx.broker.provision(), form={"mode": "stop", "digest": "0" * 40}
        )
    assert caught.value.status == 400
    assert "digest" in caught.value.errors
    assert fresh_cluster.pve.backup_jobs["nightly"].get("mode") is None
