"""Storage replication jobs through the simple-object lifecycle, against the served fake cluster, whose jobs
are ``tests.support.replication.ReplicationPve`` (pve-manager ``PVE/API2/ReplicationConfig.pm`` over
pve-guest-common ``ReplicationConfig.pm``: fakepve 0.5.0 stores none). A plan only reads, an apply writes
what the plan showed, a second plan is clean; a destroy only marks the job, PVE's runner removes it; each
refusal PVE would make is made at plan, with nothing written; a job made by hand is exported as a
declaration that plans clean with adopt."""

from __future__ import annotations

from urllib.parse import parse_qs

import pytest

from salt_proxmox.datacenter import replication
from salt_proxmox.export import objects
from salt_proxmox.ownership.rows import row_key
from salt_proxmox.ownership.stores import MemoryStore
from salt_proxmox.simple.lifecycle import absent, present
from tests.support.guests import make_context, requests_since, static_targets, writes

#: Container 120 (dns1 on pve1, its rootfs on local-zfs, a zfspool) of the seeded cluster.
JOB = {"name": "120-0", "target_node": "pve2", "schedule": "*/30", "rate": 50, "comment": "dns1 to pve2"}


def _form(body: bytes) -> dict[str, str]:
    return {key: values[0] for key, values in parse_qs(body.decode(), keep_blank_values=True).items()}


def _ctx(served, *owned: tuple[str, int]):
    """A context whose ownership rows hold the guests ``owned`` (``(family, vmid)``) as this minion's."""
    ctx = make_context(static_targets(served), store=MemoryStore())
    for family, vmid in owned:
        ctx.ownership.mark_owned(row_key(ctx.target.name, family, vmid), f"guest-{vmid}", {"vmid": vmid})
    return ctx


def _plan_apply_replan(served, ctx, state_id, **declared):
    start = len(served.pve.requests)
    plan = present(ctx, replication.SPEC, True, state_id, **declared)
    assert plan.result is None, plan.comment
    assert writes(requests_since(served, start)) == [], "a plan never writes"
    start = len(served.pve.requests)
    done = present(ctx, replication.SPEC, False, state_id, **declared)
    assert done.result is True, done.comment
    assert done.changes == plan.changes, "the apply did what the plan showed"
    log = requests_since(served, start)
    again = present(ctx, replication.SPEC, True, state_id, **declared)
    assert (again.result, again.changes) == (True, {}), again.comment
    return plan, done, log


def test_a_job_is_created_updated_by_meaning_and_destroyed_by_pve_s_runner(fresh_cluster):
    pve = fresh_cluster.pve
    ctx = _ctx(fresh_cluster, ("lxc", 120))
    plan, _, log = _plan_apply_replan(fresh_cluster, ctx, "repl", **JOB)
    assert any("PVE runs it on its schedule (*/30)" in line for line in plan.comment)
    (create,) = writes(log)
    assert create[:2] == ("POST", "/cluster/replication")
    assert _form(create[2]) == {
        "id": "120-0",
        "type": "local",
        "target": "pve2",
        "schedule": "*/30",
        "rate": "50",
        "comment": "dns1 to pve2",
    }
    # ReplicationConfig.pm create: source is the guest's node, set by PVE.
    assert pve.replication_jobs["120-0"]["source"] == "pve1"

    # Another spelling of the same calendar event is no drift (backup.schedule); a rate back to no limit is
    # a delete, sent with the digest of replication.cfg (SectionConfig assert_if_modified).
    same = present(ctx, replication.SPEC, True, "repl", **{**JOB, "schedule": "*:0/30"})
    assert (same.result, same.changes) == (True, {}), same.comment
    _, done, log = _plan_apply_replan(fresh_cluster, ctx, "repl", **{**JOB, "rate": None})
    assert set(done.changes) == {"rate"}
    (update,) = writes(log)
    form = _form(update[2])
    assert update[:2] == ("PUT", "/cluster/replication/120-0") and form["delete"] == "rate" and form["digest"]

    # ReplicationConfig.pm delete marks remove_job=full; the job stays until the runner removes it.
    last = {**JOB, "rate": None}
    plan = absent(ctx, replication.SPEC, True, "repl", "destroy", name="120-0")
    assert plan.result is None and any("PVE marks it for removal" in line for line in plan.comment)
    done = absent(ctx, replication.SPEC, False, "repl", "destroy", name="120-0")
    assert done.result is True, done.comment
    assert pve.replication_jobs["120-0"]["remove_job"] == "full"
    again = absent(ctx, replication.SPEC, True, "repl", "destroy", name="120-0")
    assert (again.result, again.changes) == (True, {}), again.comment
    # A create at its id waits for the runner (create: "replication job '120-0' already exists").
    early = present(ctx, replication.SPEC, True, "repl", **last)
    assert early.result is False and "marked for removal" in " ".join(early.comment)
    assert pve.run_replication() == ["120-0"]
    assert present(ctx, replication.SPEC, True, "repl", **last).result is None


@pytest.mark.parametrize(
    ("declared", "owned", "words"),
    [
        # the job snapshots and copies the guest's disks: only a guest of ours, or one the run declares.
        (JOB, (), "CT 120 is not ours"),
        # ReplicationConfig.pm create: "Guest '<vmid>' does not exist."
        ({**JOB, "name": "777-0"}, (), "Guest '777' does not exist."),
        # "Target '<node>' does not exist." (PVE::Cluster::get_members)
        ({**JOB, "target_node": "pve9"}, (("lxc", 120),), "Target 'pve9' does not exist."),
        # "Source and target must not be identical"
        ({**JOB, "target_node": "pve1"}, (("lxc", 120),), "Source and target must not be identical"),
        # "Source '<source>' does not match current node of guest ..."
        ({**JOB, "source": "pve2"}, (("lxc", 120),), "does not match current node of guest '120' (pve1)"),
        # VM 300 on pve2 has scsi0 on local-lvm: QemuConfig.pm get_replicatable_volumes, "missing replicate
        # feature on volume" (only ZFSPoolPlugin.pm volume_has_feature has replicate).
        (
            {**JOB, "name": "300-0", "target_node": "pve1"},
            (("qemu", 300),),
            "scsi0 (local-lvm:vm-300-disk-0: lvmthin storage) cannot replicate",
        ),
    ],
)
def test_each_refusal_pve_would_make_is_made_at_plan(fresh_cluster, declared, owned, words):
    ctx = _ctx(fresh_cluster, *owned)
    start = len(fresh_cluster.pve.requests)
    for test in (True, False):
        said = present(ctx, replication.SPEC, test, "repl", **declared)
        assert said.result is False and words in " ".join(said.comment), said.comment
    assert writes(requests_since(fresh_cluster, start)) == []
    assert fresh_cluster.pve.replication_jobs == {}


def test_the_fake_refuses_what_the_plan_refuses(fresh_cluster):
    """The fake (from ReplicationConfig.pm create) refuses the volumes and the source as the plan says."""
    pve = fresh_cluster.pve
    for form, words in (
        ({"id": "300-0", "type": "local", "target": "pve1"}, "missing replicate feature on volume"),
        ({"id": "120-0", "type": "local", "target": "pve1"}, "Source and target must not be identical"),
    ):
        with pytest.raises(Exception, match=words):
            fresh_cluster.run_coro(pve._replication_create(form, "root@pam"))


def test_one_job_per_guest_and_target(fresh_cluster):
    # ReplicationConfig.pm write_config: "replication job for guest '120' to target 'local/pve2' already
    # exists".
    fresh_cluster.pve.add_replication_job("120-1", "pve2")
    ctx = _ctx(fresh_cluster, ("lxc", 120))
    said = present(ctx, replication.SPEC, True, "repl", **JOB)
    assert said.result is False
    assert "to target 'local/pve2' already exists" in " ".join(said.comment)


def test_a_job_of_a_guest_the_run_declares_is_not_refused_as_foreign(fresh_cluster, monkeypatch):
    from salt_proxmox.backup import declared

    ctx = _ctx(fresh_cluster)
    monkeypatch.setattr(declared, "guest", lambda ctx, vmid: object() if vmid == 120 else None)
    said = present(ctx, replication.SPEC, True, "repl", **JOB)
    assert said.result is None, said.comment


def test_a_hand_made_job_exports_as_a_declaration_that_plans_clean_with_adopt(fresh_cluster):
    fresh_cluster.pve.add_replication_job("120-0", "pve2", schedule="*/5", rate=20, comment="by hand")
    ctx = _ctx(fresh_cluster)
    found = objects.export(ctx, replication.SPEC)
    (exported,) = found.objects
    assert exported.declaration == {
        "name": "120-0",
        "target_node": "pve2",
        "schedule": "*/5",
        "rate": "20",
        "comment": "by hand",
        "adopt": True,
    }
    start = len(fresh_cluster.pve.requests)
    plan = present(ctx, replication.SPEC, True, "repl", **exported.declaration)
    assert set(plan.changes) <= {"ownership"}, plan.changes
    done = present(ctx, replication.SPEC, False, "repl", **exported.declaration)
    assert done.result is True and writes(requests_since(fresh_cluster, start)) == []


def test_pve_8_asks_datastore_allocate_on_storage_for_the_write(fresh_cluster):
    # stable-8 API2/ReplicationConfig.pm: check => ['perm', '/storage', ['Datastore.Allocate']].
    from tests.support.cluster import PROVISION_TOKEN_ID

    pve = fresh_cluster.pve
    pve.version, pve.release_version = "8.4.14", "8.4"
    pve.acl[PROVISION_TOKEN_ID] = [
        (p, privs - {"Datastore.Allocate"}) for p, privs in pve.acl[PROVISION_TOKEN_ID]
    ]
    said = present(_ctx(fresh_cluster, ("lxc", 120)), replication.SPEC, True, "repl", **JOB)
    assert said.result is False and "lacks Datastore.Allocate on /storage" in " ".join(said.comment)
    with pytest.raises(Exception, match=r"Permission check failed \(/storage, Datastore.Allocate\)"):
        fresh_cluster.run_coro(
            pve._replication_create({"id": "120-0", "type": "local", "target": "pve2"}, PROVISION_TOKEN_ID)
        )
