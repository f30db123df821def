"""A linked clone PVE cannot make is refused at plan: qemu-server ``API2/Qemu.pm`` ``clone_vm`` asks
pve-storage ``volume_has_feature($storecfg, 'clone', $volid, ...)`` of every drive but a CD-ROM, the
cloud-init drive and ``tpmstate0`` (those are copied), and dies ``Linked clone feature is not supported
for '<volid>' (<key>)``. Every plugin that clones at all clones base volumes only (its ``clone``
table's ``base`` row, ``$isBase`` of ``parse_volname``), ``BTRFSPlugin`` a raw image too; so a
template whose disk ``qm template`` never converted (``template: 1`` with ``vm-<id>-disk-0``) has no
linked clone, and the remedy is ``full: true`` or ``qm template <id> --disk <key>``."""

from __future__ import annotations

import pytest

from salt_proxmox.pve.facts import parse_storages
from salt_proxmox.qemu.clone import clone_storage_refusals, clones_linked
from salt_proxmox.qemu.props import parse_declaration
from salt_proxmox.wire.volumes import base_volume
from tests.support.qemu import linked_clones

STORES = parse_storages(
    [
        {"storage": "local-lvm", "type": "lvmthin"},
        {"storage": "local", "type": "dir"},
        {"storage": "local-zfs", "type": "zfspool"},
        {"storage": "ceph", "type": "rbd"},
        {"storage": "butter", "type": "btrfs"},
        {"storage": "thick", "type": "lvm"},
    ]
)


@pytest.mark.parametrize(
    ("volume", "base"),
    [
        ("local-lvm:base-9000-disk-0", True),
        ("local-lvm:vm-9000-disk-0", False),
        ("local:9000/base-9000-disk-0.qcow2", True),
        ("local:9000/vm-9000-disk-0.qcow2", False),
        # Plugin.pm parse_volname of a linked clone's own disk: $isBase is parse_name_dir(<its name>)'s.
        ("local:8000/base-8000-disk-0.qcow2/9000/vm-9000-disk-0.qcow2", False),
        ("local:8000/base-8000-disk-0.qcow2/9000/base-9000-disk-0.qcow2", True),
        # ZFSPoolPlugin / RBDPlugin: [base-M-…/]name, $isBase of the name.
        ("local-zfs:base-8000-disk-0/vm-9000-disk-0", False),
        ("local-zfs:base-8000-disk-0/base-9000-disk-0", True),
        ("ceph:base-9000-disk-1", True),
        ("/dev/disk/by-id/ata-disk", False),
        ("none", False),
    ],
)
def test_a_base_volume_is_one_whose_own_name_is_base(volume, base) -> None:
    assert base_volume(volume) is base


def test_btrfs_clones_a_raw_image_that_is_no_base_volume() -> None:
    """BTRFSPlugin ``volume_has_feature``: ``clone => { base => {…}, current => { raw => 1 } }``."""
    assert clones_linked("btrfs", "butter:9000/vm-9000-disk-0.raw")
    assert not clones_linked("btrfs", "butter:9000/vm-9000-disk-0.qcow2")
    assert not clones_linked("dir", "local:9000/vm-9000-disk-0.raw")
    assert clones_linked("dir", "local:9000/base-9000-disk-0.raw")


def refusals(template: dict[str, str], **declared):
    decl = parse_declaration(
        "app", vmid=151, node="pve1", target="homelab", config={"clone": 9000, "name": "app", **declared}
    )
    return clone_storage_refusals(decl, "pve1", {"template": 1, **template}, STORES)


def test_a_linked_clone_of_a_half_converted_template_is_refused_with_pve_s_words_and_the_remedy() -> None:
    (reason,), notes = refusals({"scsi0": "local-lvm:vm-9000-disk-0,size=3G"})
    assert notes == []
    assert "template VM 9000's scsi0 is local-lvm:vm-9000-disk-0, not a base volume" in reason
    assert "`Linked clone feature is not supported for 'local-lvm:vm-9000-disk-0' (scsi0)`" in reason
    assert "Declare full: true" in reason
    assert "convert the disk on node pve1: `qm template 9000 --disk scsi0`" in reason
    assert refusals({"scsi0": "local-lvm:vm-9000-disk-0,size=3G"}, full=True) == ([], []), "a copy"


def test_every_cloned_drive_is_checked_and_copied_ones_are_not() -> None:
    """``clone_vm``: efidisk0 is linked-cloned like a disk; CD-ROMs (``drive_is_cdrom($drive, 1)``),
    the cloud-init drive and ``tpmstate0`` are copied (``volume_has_feature 'copy'``)."""
    template = {
        "scsi0": "local-zfs:base-9000-disk-0,size=3G",
        "efidisk0": "local-zfs:vm-9000-disk-1,efitype=4m,size=1M",
        "tpmstate0": "local-zfs:vm-9000-disk-2,size=4M,version=v2.0",
        "ide0": "local-zfs:vm-9000-cloudinit,media=cdrom",
        "ide2": "local:iso/debian.iso,media=cdrom",
        "virtio1": "ceph:vm-9000-disk-3,size=8G",
    }
    found, _ = refusals(template)
    assert [reason.split(" is ", 1)[0] for reason in found] == [
        "clone: template VM 9000's efidisk0",
        "clone: template VM 9000's virtio1",
    ]
    assert "PVE: `Linked clone feature is not supported for 'ceph:vm-9000-disk-3' (virtio1)`" in found[1]


def test_a_linked_clone_s_own_disk_in_a_template_is_no_base_volume() -> None:
    """A template made of a linked clone without ``qm template``: Plugin.pm ``parse_volname`` gives
    ``$isBase`` of the clone's own name, ``vm-…``; once converted (``base-…``) it clones."""
    (reason,), _ = refusals({"scsi0": "local:8000/base-8000-disk-0.qcow2/9000/vm-9000-disk-0.qcow2,size=3G"})
    assert "'local:8000/base-8000-disk-0.qcow2/9000/vm-9000-disk-0.qcow2' (scsi0)" in reason
    assert refusals({"scsi0": "local:8000/base-8000-disk-0.qcow2/9000/base-9000-disk-0.qcow2"}) == ([], [])


def test_the_storage_refusal_stands_alone_and_an_unseen_storage_is_noted() -> None:
    (reason,), _ = refusals({"scsi0": "thick:vm-9000-disk-0,size=3G"})
    assert "is on storage thick (lvm), which cannot make a linked clone" in reason
    refused, (note,) = refusals({"scsi0": "hidden:vm-9000-disk-0,size=3G"})
    assert refused == [] and "whether storage hidden can take this clone was not checked" in note


@pytest.mark.parametrize(
    ("kind", "volname", "clones"),
    [
        ("lvmthin", "base-9000-disk-0", True),
        ("lvmthin", "vm-9000-disk-0", False),
        ("dir", "8000/base-8000-disk-0.qcow2/9000/vm-9000-disk-0.qcow2", False),
        ("dir", "9000/base-9000-disk-0.qcow2", True),
        ("btrfs", "9000/vm-9000-disk-0.raw", True),
        ("lvm", "base-9000-disk-0", False),
    ],
)
def test_the_fake_clones_what_volume_has_feature_clones(kind, volname, clones) -> None:
    """``tests.support.qemu.QemuPve``'s clone refuses as pve-storage does, and as the plan."""
    assert linked_clones(kind, volname) is clones
    assert clones_linked(kind, f"s:{volname}") is clones or kind == "lvm"
