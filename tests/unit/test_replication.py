"""Pure rules of storage replication jobs (salt_proxmox.datacenter.replication), each beside its pve-manager
(``PVE/API2/ReplicationConfig.pm``), pve-guest-common (``ReplicationConfig.pm``), pve-container/qemu-server
(``get_replicatable_volumes``) or pve-storage (``volume_has_feature``) source."""

from __future__ import annotations

import pytest

from salt_proxmox.datacenter import replication
from salt_proxmox.errors import DeclarationError

STORAGES = {
    "local-zfs": {"type": "zfspool", "shared": False},
    "local-lvm": {"type": "lvmthin", "shared": False},
    "nfs": {"type": "nfs", "shared": True},
    "local": {"type": "dir", "shared": False},
}


def _declare(**options):
    return replication.declare("sid", "lab", **{"name": "120-0", "target_node": "pve2", **options})


def _live(decl, **data):
    return replication.parse({"type": "local", "target": "pve2", "guest": 120, "digest": "d1", **data}, decl)


@pytest.mark.parametrize(
    ("name", "words"),
    [
        # ReplicationConfig.pm pve-replication-id: [1-9][0-9]{2,8}-\d{1,9}; parse_replication_job_id.
        ("120", "invalid replication job id '120'"),
        ("99-0", "invalid replication job id '99-0'"),
        ("vm120-0", "invalid replication job id"),
        # create keeps "120-01" as sent; parse_section_header reads it back as 120-1.
        ("120-01", "reads a jobnum back as an integer"),
    ],
)
def test_a_bad_job_id_is_refused_by_name(name, words):
    with pytest.raises(DeclarationError) as caught:
        replication.identify("sid", "lab", name=name)
    assert "name:" in str(caught.value) and words in str(caught.value)


def test_the_id_names_the_guest_whose_privileges_are_checked():
    decl = _declare(name="120-3")
    assert decl.names == {"name": "120-3", "vmid": "120"} and replication.vmid_of(decl) == 120
    with pytest.raises(DeclarationError, match="vmid: the job id 120-3 names guest 120"):
        replication.identify("sid", "lab", name="120-3", vmid=121)


@pytest.mark.parametrize(
    ("options", "key", "words"),
    [
        ({"rate": 0.5}, "rate", "minimum 1"),  # ReplicationConfig.pm rate: minimum => 1
        ({"rate": "fast"}, "rate", "expected a number"),
        ({"schedule": "every day"}, "schedule", "pve-calendar-event"),
        # SectionConfig.pm check_value: "property contains a line feed"
        ({"comment": "two\nlines"}, "comment", "line feed"),
        ({"comment": "x" * 4097}, "comment", "4096"),
        # remove_job is the delete's mark (ReplicationConfig.pm delete), never declared.
        ({"remove_job": "full"}, "remove_job", "removal: destroy"),
        ({"target_node": None}, "target_node", "requires its target node"),
        ({"target_node": "pve_2"}, "target_node", "pve-node"),
        ({"colour": "red"}, "colour", "unknown key"),
    ],
)
def test_bad_declarations_are_refused_by_key(options, key, words):
    with pytest.raises(DeclarationError) as caught:
        _declare(**options)
    assert f"{key}: " in str(caught.value) and words in str(caught.value)


def test_pve_s_defaults_are_no_drift():
    # ReplicationConfig.pm: schedule default '*/15'; rate, disable and comment optional without a value.
    decl = _declare()
    assert decl.values == {"target_node": "pve2", "schedule": "*/15", "rate": "", "disable": 0, "comment": ""}
    assert replication.SPEC.differences(_live(decl), decl) == {}
    assert replication.SPEC.differences(_live(decl, schedule="*/15", disable=0), decl) == {}


def test_the_schedule_is_compared_by_meaning_as_a_backup_job_s():
    # proxmox-time calendar_event.rs: "*/15" and "*:0/15" are one event (backup.schedule).
    decl = _declare(schedule="*:0/15")
    live = _live(decl, schedule="*/15")
    assert live["schedule"] == "*:0/15" and replication.SPEC.differences(live, decl) == {}
    assert replication.SPEC.differences(_live(decl, schedule="*/30"), decl) == {
        "schedule": {"old": "*/30", "new": "*:0/15"}
    }


def test_the_rate_is_a_number_in_one_spelling():
    # ReplicationConfig.pm rate: type number (MB/s); PVE answers it as a JSON number.
    decl = _declare(rate="50.0")
    assert decl.values["rate"] == "50"
    assert replication.SPEC.differences(_live(decl, rate=50), decl) == {}
    assert _declare(rate=2.5).values["rate"] == "2.5"


def test_create_sends_the_type_the_target_and_only_what_is_not_pve_s_default():
    call = replication.create(_declare(rate=50, comment="to pve2"))
    assert (call.method, call.path) == ("POST", "cluster/replication")
    assert call.form == {"id": "120-0", "type": "local", "target": "pve2", "rate": "50", "comment": "to pve2"}


def test_a_cleared_option_is_written_as_delete_and_the_digest_is_sent_back():
    # ReplicationConfig.pm update: ``delete`` drops optional keys; assert_if_modified takes the digest read.
    decl = _declare(rate=None, comment="", schedule="*/15")
    live = _live(decl, rate=10, comment="old", schedule="*/5")
    call = replication.update(decl, live)
    assert call.form == {"delete": "comment,rate,schedule"}
    assert replication.SPEC.write_guard(None, None, decl, live) == {"digest": "d1"}
    assert replication.update(decl, _live(decl)) is None


def test_another_target_is_refused_at_plan_naming_a_new_jobnum():
    # ReplicationConfig.pm local options: target => {fixed => 1}; updateSchema leaves it out.
    decl = _declare(target_node="pve3")
    live = _live(decl)
    reasons = replication.refusals(None, decl, "update", live)
    assert (
        len(reasons) == 1 and "cannot change a job's target" in reasons[0] and "another jobnum" in reasons[0]
    )


def test_a_job_marked_for_removal_reads_as_absent():
    # ReplicationConfig.pm delete sets remove_job; Replication.pm run_replication_nolock removes the job.
    decl = _declare()
    assert replication.parse({"type": "local", "target": "pve2", "remove_job": "full"}, decl) is None
    assert replication._export_names({"id": "120-0", "remove_job": "full"}) is None
    assert replication._export_names({"id": "120-0"}) == {"name": "120-0"}


def test_the_plan_says_pve_only_marks_a_deleted_job():
    (note,) = replication.side_effects(None, _declare(), "delete")
    assert "remove_job=full" in note and "next run" in note and "pve2" in note


@pytest.mark.parametrize(
    ("config", "kind", "problems", "count"),
    [
        # ZFSPoolPlugin.pm volume_has_feature: replicate => {base => 1, current => 1}.
        ({"rootfs": "local-zfs:subvol-120-disk-0,size=4G"}, "lxc", [], 1),
        # any other local storage: "missing replicate feature on volume"
        (
            {"rootfs": "local-lvm:vm-120-disk-0,size=4G"},
            "lxc",
            ["rootfs (local-lvm:vm-120-disk-0: lvmthin"],
            0,
        ),
        # replicate=0 skipped; a mount point's volume= spelling read (LXC/Config.pm foreach_volume).
        (
            {
                "rootfs": "local-zfs:subvol-120-disk-0",
                "mp0": "volume=local-lvm:vm-120-disk-1,mp=/srv,replicate=0",
            },
            "lxc",
            [],
            1,
        ),
        # a bind mount that replicates: "unable to replicate mountpoint type 'bind'"
        (
            {"rootfs": "local-zfs:subvol-120-disk-0", "mp0": "/srv/data,mp=/data"},
            "lxc",
            ["mp0 (/srv/data"],
            1,
        ),
        # shared storage skipped ($scfg->{shared}); another guest's volume skipped ($owner != $vmid).
        ({"scsi0": "nfs:120/vm-120-disk-0.qcow2", "scsi1": "local-lvm:base-9000-disk-0"}, "qemu", [], 0),
        # a VM's CD-ROM skipped (foreach_volid cdrom); unused volumes count (include_unused).
        (
            {"ide2": "local:iso/d.iso,media=cdrom", "unused0": "local-zfs:vm-120-disk-2"},
            "qemu",
            [],
            1,
        ),
    ],
)
def test_which_volumes_can_replicate(config, kind, problems, count):
    found, counted = replication.replicatable(config, kind, 120, STORAGES)
    assert counted == count
    assert len(found) == len(problems) and all(f.startswith(p) for f, p in zip(found, problems, strict=True))


def test_the_export_names_only_what_differs_from_pve_s_defaults():
    decl = _declare()
    live = _live(decl, rate=20, source="pve1")
    assert replication.export_values(live, decl) == {"target_node": "pve2", "rate": "20"}
    assert set(replication.SPEC.live_only) == {"digest", "source"}


def test_the_write_privilege_is_by_release():
    # pve-manager 9.0.0 ("close #2809: api: replication: use VM.Replicate privilege"): VM.Replicate on
    # /vms/<vmid>; stable-8 API2/ReplicationConfig.pm create/update/delete: Datastore.Allocate on /storage.
    from salt_proxmox.access import privileges

    decl = _declare()
    (nine,) = privileges.simple_needs("replication", "create", decl)
    assert (nine.credential, nine.path, nine.privileges) == ("provision", "/vms/120", ("VM.Replicate",))
    (eight,) = privileges.simple_needs("replication", "delete", decl, major=8)
    assert (eight.credential, eight.path, eight.privileges) == (
        "provision",
        "/storage",
        ("Datastore.Allocate",),
    )
    (read,) = privileges.simple_needs("replication", "read", decl, major=8)
    assert (read.path, read.privileges) == ("/vms/120", ("VM.Audit",))
    assert privileges.by_release("replication") and not privileges.by_release("metric_server")
