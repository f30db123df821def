"""What a guest's destroy deletes, as its plan names it (``guest.identity.destroyed_volumes``): every
volume its config names, ``unusedN`` included, never a CD-ROM's image (qemu-server
``PVE/QemuServer.pm`` ``destroy_vm`` skips ``drive_is_cdrom``) nor a bind mount's host path
(pve-container ``src/PVE/LXC.pm`` ``destroy_lxc_container`` deletes volumes, not paths)."""

from __future__ import annotations

from salt_proxmox.guest.identity import destroyed_volumes
from salt_proxmox.lxc.family import LXC
from salt_proxmox.qemu.family import QEMU


def test_a_vm_destroy_names_its_disks_cloudinit_and_unused_volumes_not_its_cdrom() -> None:
    live = {
        "scsi0": "local-lvm:vm-290-disk-0,iothread=1,size=32G",
        "ide2": "local:iso/debian-13.2.0-amd64-netinst.iso,media=cdrom",
        "ide0": "local-lvm:vm-290-cloudinit,media=cdrom",
        "ide1": "none,media=cdrom",
        "unused0": "local-lvm:vm-290-disk-1",
        "net0": "virtio=BC:24:11:00:00:01,bridge=vmbr0",
        "memory": "1024",
    }
    assert destroyed_volumes(QEMU, live) == [
        "ide0 local-lvm:vm-290-cloudinit",  # drive_is_cdrom($drive, 1): a cloud-init drive is deleted
        "scsi0 local-lvm:vm-290-disk-0",
        "unused0 local-lvm:vm-290-disk-1",
    ]


def test_a_container_destroy_names_rootfs_and_volume_mount_points_not_bind_mounts() -> None:
    live = {
        "rootfs": "local-zfs:subvol-150-disk-0,size=8G",
        "mp0": "local-zfs:subvol-150-disk-1,mp=/srv/www,backup=1,size=20G",
        "mp1": "/srv/shared,mp=/shared",
        "unused0": "local-zfs:subvol-150-disk-2",
        "hostname": "web",
    }
    assert destroyed_volumes(LXC, live) == [
        "mp0 local-zfs:subvol-150-disk-1",
        "rootfs local-zfs:subvol-150-disk-0",
        "unused0 local-zfs:subvol-150-disk-2",
    ]
