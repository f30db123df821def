"""Restore and HA rules without a server, each beside its PVE source: the archive names a guest type
and vmid (pve-storage ``Plugin.pm`` ``parse_volname``), a plan names it with size and time; an HA
resource's requested state is ``ha_state`` (Salt keeps ``state``), PVE's defaults fill what it did not
store (pve-ha-manager ``HA/Resources.pm``), a rule's keys are its type's (``HA/Rules/*.pm``), and a
guest an HA resource of the run manages refuses ``status:`` unless the resource is ``ignored``
(``HA/Config.pm`` ``$service_check_ha_state``)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from salt_proxmox.errors import DeclarationError
from salt_proxmox.guest import ha_owned
from salt_proxmox.guest.restore import Archive, archive_problem, archived_vmid, parse_archived_config
from salt_proxmox.ha import group, resource, rule
from salt_proxmox.ha.common import form_of
from salt_proxmox.lxc.props import parse_declaration as lxc_declaration
from salt_proxmox.qemu.clone import restored_config
from salt_proxmox.qemu.props import parse_declaration as qemu_declaration
from salt_proxmox.run.lowstate import Run

CT_ARCHIVE = "local:backup/vzdump-lxc-150-2026_11_30-02_00_00.tar.zst"
VM_ARCHIVE = "nas:backup/vzdump-qemu-250-2026_11_30-02_00_00.vma.zst"


@pytest.mark.parametrize(
    ("kind", "volid", "words"),
    [
        ("lxc", CT_ARCHIVE, None),
        ("lxc", "local:backup/vzdump-openvz-150-2020_01_01-00_00_00.tar.gz", None),
        ("qemu", VM_ARCHIVE, None),
        ("lxc", VM_ARCHIVE, "is the backup of a VM"),
        ("qemu", CT_ARCHIVE, "is the backup of a container"),
        ("lxc", "local:vztmpl/debian-13-standard_13.0-1_amd64.tar.zst", "not a vzdump backup volume"),
        ("qemu", "/var/lib/vz/dump/vzdump-qemu-250-x.vma", "not a vzdump backup volume"),
    ],
)
def test_an_archive_names_its_guest_type_and_only_that_family_restores_it(kind, volid, words):
    problem = archive_problem(kind, volid)
    assert (problem is None) if words is None else (words in problem)


def test_the_archived_vmid_and_how_a_plan_names_an_archive():
    assert archived_vmid(VM_ARCHIVE) == 250
    shown = Archive(CT_ARCHIVE, "local", 412 * 1024**2, 1796004000, 150).shown()
    assert shown == f"{CT_ARCHIVE} (412.0 MiB, made 2026-11-30 02:00:00 UTC)"


def test_restore_is_a_create_only_key_of_both_families_and_excludes_the_other_ways_to_create():
    ct = lxc_declaration("web2", vmid=160, node="pve1", target="t", config={"restore": CT_ARCHIVE})
    assert ct.restore == CT_ARCHIVE and "restore" not in ct.config and ct.stored()["restore"] == CT_ARCHIVE
    vm = qemu_declaration(
        "app2", vmid=260, node="pve1", target="t", config={"restore": VM_ARCHIVE, "storage": "local-lvm"}
    )
    assert (vm.restore, vm.storage) == (VM_ARCHIVE, "local-lvm"), "create_vm's storage is where disks go"
    assert ct.unique and vm.unique, "unique=1 unless declared otherwise"
    kept = lxc_declaration(
        "w", vmid=160, node="pve1", target="t", config={"restore": CT_ARCHIVE, "unique": False}
    )
    assert kept.unique is False
    with pytest.raises(DeclarationError, match="unique: only a create by restore takes it"):
        qemu_declaration("x", vmid=260, node="pve1", target="t", config={"unique": True})
    with pytest.raises(DeclarationError, match="unique: expected true or false"):
        lxc_declaration(
            "x", vmid=160, node="pve1", target="t", config={"restore": CT_ARCHIVE, "unique": "no"}
        )
    with pytest.raises(DeclarationError, match="not both"):
        lxc_declaration(
            "x",
            vmid=160,
            node="pve1",
            target="t",
            config={"restore": CT_ARCHIVE, "ostemplate": "local:vztmpl/a.tar.zst"},
        )
    with pytest.raises(DeclarationError, match="cloned or restored"):
        qemu_declaration(
            "x", vmid=260, node="pve1", target="t", config={"restore": VM_ARCHIVE, "clone": 9000}
        )


#: What ``extractconfig`` answers for a VM archive (pve-manager ``API2/VZDump.pm``): the config file
#: vzdump wrote, description lines first, its ``#qmdump#map`` lines, then a snapshot section.
ARCHIVED_VM = """#Built%20by%20hand
#second line
boot: order=scsi0
lock: backup
memory: 2048
net0: virtio=BC:24:11:25:00:01,bridge=vmbr0
parent: before
scsi0: local-lvm:vm-250-disk-0,iothread=1,size=8G
scsi1: local-lvm:vm-250-disk-1,backup=0,size=100G
ide2: local:iso/debian.iso,media=cdrom
ide0: local-lvm:vm-250-cloudinit,media=cdrom
smbios1: uuid=2a1c3a4e-8d2b-4f5a-9c7e-1b2d3e4f5a25,manufacturer=QUNNRQ==,base64=1
unused0: local-lvm:vm-250-disk-9
vmgenid: 1a7d1e2f-3a4b-4c5d-8e6f-7a8b9c0d1e25
#qmdump#map:scsi0:drive-scsi0:local-lvm:raw:
#vzdump#
[before]
memory: 1024
"""


def test_an_archived_config_is_read_as_vzdump_wrote_it():
    """qemu-server ``parse_vm_config``: ``#`` lines are the description (URI-escaped), ``[name]`` opens a
    snapshot; ``$parse_backup_hints`` reads each saved drive's storage from its ``#qmdump#map`` line."""
    archived = parse_archived_config(ARCHIVED_VM)
    assert archived.config["description"] == "Built by hand\nsecond line"
    assert archived.config["memory"] == "2048", "the main section, not the snapshot's"
    assert archived.disks == {"scsi0": "local-lvm"}
    assert "#vzdump#" not in archived.config and not any(key.startswith("#") for key in archived.config)


@pytest.mark.parametrize("unique", [True, False])
def test_the_restored_vm_is_what_restore_update_config_line_makes_of_the_archive(unique):
    """qemu-server ``QemuServer.pm`` ``restore_update_config_line``: ``lock``, ``unusedN``, ``parent``
    dropped; a new MAC per NIC and a new ``smbios1`` uuid under ``unique``, a new ``vmgenid`` always
    (PVE draws them: left out); a ``backup=0`` drive kept only as a comment; each saved drive a new
    volume on ``storage`` or the one it was saved from (``$parse_backup_hints``), ``format`` dropped;
    a cloud-init drive a new one; a CD-ROM as it was."""
    archived = parse_archived_config(ARCHIVED_VM)
    config = {"restore": VM_ARCHIVE, "unique": unique}
    decl = qemu_declaration("app", vmid=260, node="pve1", target="t", config=config)
    made = restored_config(decl, archived.config, archived.disks)
    assert {"lock", "parent", "unused0", "vmgenid", "scsi1"}.isdisjoint(made)
    assert made["scsi0"] == "local-lvm:vm-260-disk-0,iothread=1,size=8G"
    assert made["ide0"] == "local-lvm:vm-260-cloudinit,media=cdrom"
    assert made["ide2"] == "local:iso/debian.iso,media=cdrom"
    assert ("BC:24:11:25:00:01" in str(made["net0"])) is not unique
    assert ("uuid=" in str(made["smbios1"])) is not unique
    assert "manufacturer=QUNNRQ==" in str(made["smbios1"])
    elsewhere = qemu_declaration(
        "app", vmid=260, node="pve1", target="t", config={**config, "storage": "local-zfs"}
    )
    moved = restored_config(elsewhere, archived.config, archived.disks)
    assert moved["scsi0"].startswith("local-zfs:vm-260-disk-0,") and moved["ide0"].startswith("local-zfs:")


def test_an_ha_resource_declares_ha_state_and_its_read_fills_pve_s_defaults():
    decl = resource.declare("s", "t", name="ct:150", ha_state="enabled", max_restart=0)
    # HA/Resources.pm: `enabled` is an alias of `started`; a max_restart of 0 is sent, not PVE's default 1.
    assert decl.values == {"ha_state": "started", "max_restart": 0}
    assert form_of(resource.FIELDS, decl.values, resource.WIRE) == {"state": "started", "max_restart": "0"}
    with pytest.raises(DeclarationError, match="declared as ha_state"):
        resource.declare("s", "t", name="ct:150", state="started")
    with pytest.raises(DeclarationError, match="vm:<vmid> for a VM"):
        resource.declare("s", "t", name="150")
    # PVE stores only what was given (resources.cfg): a bare read is started, 1 and 1.
    live = resource.parse({"sid": "ct:150", "type": "ct", "digest": "abc"}, decl)
    assert (live["ha_state"], live["max_restart"], live["max_relocate"], live["digest"]) == (
        "started",
        1,
        1,
        "abc",
    )


def test_an_ha_rule_takes_its_type_s_keys_and_a_group_needs_nodes():
    ok = rule.declare("s", "t", name="r1", type="node-affinity", resources="ct:150,vm:300", nodes=["pve1:2"])
    assert ok.values["resources"] == "ct:150,vm:300" and ok.values["nodes"] == "pve1:2"
    with pytest.raises(DeclarationError) as refused:
        rule.declare("s", "t", name="r2", type="resource-affinity", resources=["ct:150"], strict=1)
    assert "strict: not a key of a resource-affinity rule" in str(refused.value)
    assert "affinity: a resource-affinity rule is positive or negative" in str(refused.value)
    with pytest.raises(DeclarationError, match="nodes: a node-affinity rule names its nodes"):
        rule.declare("s", "t", name="r3", type="node-affinity", resources=["ct:150"])
    with pytest.raises(DeclarationError, match="not vm:<vmid> or ct:<vmid>"):
        rule.declare("s", "t", name="r4", type="node-affinity", resources=["150"], nodes=["pve1"])
    with pytest.raises(DeclarationError, match="an HA group needs its nodes"):
        group.declare("s", "t", name="g1")


def _ctx():
    return SimpleNamespace(memo={}, target=SimpleNamespace(name="t"))


def test_status_yields_to_an_ha_resource_of_the_run_unless_it_is_ignored():
    ctx = _ctx()
    lowstate = [
        {
            "state": "proxmox_ha_resource",
            "fun": "present",
            "__id__": "h1",
            "name": "ct:150",
            "ha_state": "stopped",
        },
        {
            "state": "proxmox_ha_resource",
            "fun": "present",
            "__id__": "h2",
            "name": "vm:210",
            "ha_state": "ignored",
        },
        {"state": "proxmox_ha_resource", "fun": "absent", "__id__": "h3", "name": "ct:151"},
        {"state": "proxmox_lxc", "fun": "present", "__id__": "web", "name": "web", "vmid": 150},
    ]
    ha_owned.remember_run(ctx, Run(lowstate), "t")
    refusal = ha_owned.status_refusal(ctx, "ct", "CT 150 on pve1", 150, "running")
    assert "HA resource ct:150 (declared in this run, state stopped) owns its power state" in refusal
    assert "declare proxmox:ha_resources:ct:150: {ha_state: started}" in refusal
    # Declared and live share one refusal; a live resource with none declared refuses as well.
    live = ha_owned.status_refusal(_ctx(), "ct", "CT 150 on pve1", 150, "stopped", live="started")
    assert "HA resource ct:150 (live, ha.state started) owns its power state" in live
    assert "declare proxmox:ha_resources:ct:150: {ha_state: stopped}" in live
    assert refusal.split("owns its power state")[1] != live.split("owns its power state")[1]
    # Declared ignored while PVE still manages it: the guest's state runs first, so it is refused.
    ignored = ha_owned.status_refusal(ctx, "vm", "VM 210 on pve1", 210, "running", live="started")
    assert "declared ignored in this run, but that is written after this guest's state" in ignored
    assert "`ha-manager set vm:210 --state ignored`" in ignored
    assert ha_owned.status_refusal(ctx, "vm", "VM 210 on pve1", 210, "running") is None, "ignored"
    assert ha_owned.status_refusal(ctx, "ct", "CT 151 on pve1", 151, "stopped") is None, "declared absent"
    assert ha_owned.status_refusal(ctx, "vm", "VM 150 on pve1", 150, "running") is None, (
        "vm:150 is not ct:150"
    )
    assert ha_owned.status_refusal(_ctx(), "ct", "CT 150 on pve1", 150, "running") is None, "outside a run"
