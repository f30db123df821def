"""The formula's backup jobs and snapshots: a job requires its storage, pool and the guests it lists; a
guest's ``snapshots:`` list becomes one proxmox_snapshot state per entry, requiring the guest, and never
reaches the guest's own state."""

from __future__ import annotations

from salt_proxmox.backup import job
from tests.support.formula import formula

WEB = {"vmid": 150, "node": "pve1", "ostemplate": "local:vztmpl/x.tar.zst", "rootfs": "local-zfs:4"}


def _estate(pillar):
    return formula().estate(pillar)


def test_a_job_requires_its_storage_pool_and_the_guests_it_lists():
    states = _estate(
        {
            "proxmox": {
                "storage": {"backups": {"type": "dir", "path": "/srv/b", "content": "backup"}},
                "lxc": {"web": WEB, "db": {**WEB, "vmid": 151}},
                "backup_jobs": {"nightly": {"schedule": "02:00", "storage": "backups", "vmid": [150, 999]}},
            }
        }
    )
    args = states["proxmox-backup-job-nightly"]["proxmox_backup_job.present"]
    assert {
        "require": [{"proxmox_storage": "proxmox-storage-backups"}, {"proxmox_lxc": "proxmox-lxc-web"}]
    } in args
    assert list(states)[-1] == "proxmox-backup-job-nightly", "jobs run after the guests"


def test_an_absent_job_passes_only_its_identity_and_removal():
    states = _estate(
        {"proxmox": {"backup_jobs": {"old": {"ensure": "absent", "removal": "destroy", "schedule": "x"}}}}
    )
    assert states["proxmox-backup-job-old"] == {
        "proxmox_backup_job.absent": [{"name": "old"}, {"removal": "destroy"}]
    }


def test_the_formula_knows_every_job_option():
    options = formula().BACKUP_JOB_OPTIONS
    assert frozenset(job.FIELDS) == options


def test_snapshots_become_states_requiring_their_guest():
    web = {**WEB, "target": "lab", "snapshots": [{"snapname": "before-upgrade", "description": "pre 13.2"}]}
    states = _estate({"proxmox": {"lxc": {"web": web}}})
    assert "snapshots" not in {key for arg in states["proxmox-lxc-web"]["proxmox_lxc.present"] for key in arg}
    assert states["proxmox-snapshot-web-before-upgrade"] == {
        "proxmox_snapshot.present": [
            {"name": "before-upgrade"},
            {"description": "pre 13.2"},
            {"node": "pve1"},
            {"target": "lab"},
            {"type": "lxc"},
            {"vmid": 150},
            {"require": [{"proxmox_lxc": "proxmox-lxc-web"}]},
        ]
    }


def test_a_vm_snapshot_and_an_absent_one():
    vm = {"vmid": 210, "node": "pve1", "scsi0": "local-lvm:8"}
    vm["snapshots"] = [
        {"snapname": "s1", "vmstate": True},
        {"snapname": "s0", "ensure": "absent", "removal": "destroy"},
    ]
    states = _estate({"proxmox": {"qemu": {"app": vm}}})
    assert {"type": "qemu"} in states["proxmox-snapshot-app-s1"]["proxmox_snapshot.present"]
    assert states["proxmox-snapshot-app-s0"] == {
        "proxmox_snapshot.absent": [
            {"name": "s0"},
            {"node": "pve1"},
            {"removal": "destroy"},
            {"type": "qemu"},
            {"vmid": 210},
        ]
    }


def test_a_malformed_snapshot_entry_is_one_failing_state_naming_it():
    web = {**WEB, "snapshots": [{"description": "no name"}, {"snapname": "ok", "colour": "red"}]}
    states = _estate({"proxmox": {"lxc": {"web": web}}})
    first = states["proxmox-snapshot-web-0"]["proxmox_pillar.refused"]
    assert first[0] == {"name": "pillar proxmox:lxc:web:snapshots:0"}
    second = states["proxmox-snapshot-web-ok"]["proxmox_pillar.refused"]
    assert "unknown key(s) colour" in second[1]["comment"]
    not_list = _estate({"proxmox": {"lxc": {"web": {**WEB, "snapshots": "before-upgrade"}}}})
    assert (
        "not a list of snapshots"
        in not_list["proxmox-snapshot-web-pillar"]["proxmox_pillar.refused"][1]["comment"]
    )
