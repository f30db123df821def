"""The container a restore makes (``salt_proxmox.lxc.restored``), each rule beside its pve-container
source: ``API2/LXC.pm`` ``create_vm`` (restore branch) and ``LXC/Create.pm``
``sanitize_and_merge_config``."""

from __future__ import annotations

import pytest

from salt_proxmox.guest.restore import parse_archived_config
from salt_proxmox.lxc import judge
from salt_proxmox.lxc.family import _restore_form
from salt_proxmox.lxc.props import parse_declaration
from salt_proxmox.lxc.restored import dropped_mount_notes, restored_config, rootfs_note

CT_ARCHIVE = "local:backup/vzdump-lxc-150-2026_11_30-02_00_00.tar.zst"
#: A pct.conf as vzdump writes it into the archive (``VZDump/LXC.pm``: ``write_pct_config`` without
#: snapshots), with a raw ``lxc.*`` key only root@pam may set.
ARCHIVED_CT = """#Web server
arch: amd64
cores: 2
hostname: web-old
memory: 1024
mp0: local-lvm:vm-150-disk-1,mp=/srv/data,backup=1,size=16G
mp1: local-lvm:vm-150-disk-2,mp=/var/cache,size=2G
mp2: /mnt/shared,mp=/shared
net0: name=eth0,bridge=vmbr0,hwaddr=BC:24:11:15:00:01,ip=dhcp,type=veth
ostype: debian
rootfs: local-lvm:vm-150-disk-0,size=8G
swap: 256
unused0: local-lvm:vm-150-disk-3
unprivileged: 1
lxc.cgroup2.devices.allow: c 10:200 rwm
"""


def _decl(**config):
    return parse_declaration(
        "web",
        vmid=160,
        node="pve1",
        target="t",
        config={"restore": CT_ARCHIVE, "rootfs": "local-zfs:10", **config},
    )


def _made(decl):
    archived = parse_archived_config(ARCHIVED_CT).config
    return archived, restored_config(decl.vmid, archived, _restore_form(decl), decl.unique)


def test_only_the_mount_points_sent_are_made_and_the_archive_s_are_dropped():
    """``create_vm``: with ``rootfs`` sent (not storage-only mode) ``$mp_param`` holds only the mount
    points sent, allocated by ``create_disks`` on their own storage; ``sanitize_and_merge_config``
    skips the archive's ``rootfs``, ``mpN`` and ``unusedN``, and bind/device mount points come back
    only in storage-only mode (``$delayed_mp_param``)."""
    archived, made = _made(_decl())
    assert made["rootfs"] == "local-zfs:vm-160-disk-0,size=10G"
    assert not any(key.startswith(("mp", "unused")) for key in made), made
    notes = dropped_mount_notes("CT 160 on pve1", archived, _restore_form(_decl()))
    assert len(notes) == 3, notes
    assert "mp0" in notes[0] and "extracted under /srv/data into the mount points sent" in notes[0]
    assert "mp1" in notes[1] and "the archive holds none of its files" in notes[1]
    assert "mp2" in notes[2] and "a bind mount point, not restored" in notes[2]


def test_a_declared_volume_mount_point_is_sent_with_the_restore_so_its_files_land_in_it():
    """``create_vm`` allocates each mount point of ``$mp_param`` and ``restore_archive`` extracts into
    ``mount_all``'s tree: a declared ``mpN`` sent with the restore gets its files; written after, it
    would mount an empty volume over them."""
    decl = _decl(mp0="local-zfs:16,mp=/srv/data,backup=1")
    form = _restore_form(decl)
    assert form["mp0"] == "local-zfs:16,mp=/srv/data,backup=1"
    archived, made = _made(decl)
    assert made["mp0"] == "local-zfs:vm-160-disk-1,mp=/srv/data,backup=1,size=16G"
    assert [n for n in dropped_mount_notes("CT 160", archived, form) if "mp0" in n] == []
    assert judge.judge(decl, made).drift == [], (
        "a declared mount point sent with the restore is made as declared"
    )


@pytest.mark.parametrize("unique", [True, False])
def test_the_archive_s_keys_are_merged_as_sanitize_and_merge_config_does(unique):
    """``sanitize_and_merge_config``: every archived key not given is kept, ``lxc.*`` raw keys only for
    root@pam (``$restricted``: an API token never is); ``unprivileged`` the archive's
    (``create_vm``: ``$conf->{unprivileged} = $orig_conf->{unprivileged}``); under ``unique`` each
    ``netN`` a new ``hwaddr`` (``random_ether_addr``, left out: PVE draws it)."""
    _, made = _made(_decl(unique=unique))
    assert made["hostname"] == "web-old" and made["memory"] == "1024" and made["swap"] == "256"
    assert made["description"] == "Web server" and made["unprivileged"] == "1"
    assert not any(key.startswith("lxc") for key in made)
    assert ("hwaddr=BC:24:11:15:00:01" in made["net0"]) is not unique
    assert "bridge=vmbr0" in made["net0"] and made["net0"].startswith("name=eth0")


def test_pve_s_defaults_follow_the_merge_and_a_template_stays_one():
    """``create_vm`` after the merge: ``hostname ||= CT<vmid>``, ``memory ||= 512``, ``swap //= 512``;
    a template's archive is a template again (``$was_template``, ``template_create``)."""
    archived = {"rootfs": "local-lvm:vm-150-disk-0,size=8G", "template": "1", "ostype": "debian"}
    made = restored_config(160, archived, {"rootfs": "local-lvm:8"}, True)
    assert (made["hostname"], made["memory"], made["swap"], made["template"]) == ("CT160", "512", "512", "1")
    assert "unprivileged" not in made, "a privileged archive restores privileged"


def test_the_declaration_is_judged_against_the_restored_container():
    """Keys the archive already holds equal are not writes; keys that differ are; a MAC drawn by
    ``unique`` is no drift; ``unprivileged`` other than the archive's is refused (``update_pct_config``:
    read-only)."""
    decl = _decl(memory=1024, cores=4, net0="name=eth0,bridge=vmbr0,ip=dhcp")
    _, made = _made(decl)
    onto = judge.judge(decl, made)
    assert onto.drift == ["cores"] and onto.put == {"cores": "4"}
    _, made = _made(_decl(unprivileged=0))
    refused = judge.judge(_decl(unprivileged=0), made).refuse
    assert refused and "unprivileged" in refused[0]


def test_where_rootfs_is_restored_is_said_when_it_is_not_the_archive_s():
    """``create_vm`` allocates the ``rootfs`` sent (``$mp_param``), never the archive's: a plan says the
    storage and size it moves to, and nothing when they are the archive's."""
    archived = parse_archived_config(ARCHIVED_CT).config
    note = rootfs_note("CT 160 on pve1", archived, {"rootfs": "local-zfs:10"})
    assert note == (
        "CT 160 on pve1: rootfs is restored onto a new volume on local-zfs of 10G (the archive's: local-lvm, "
        "8G); pve-container create_vm allocates the rootfs sent with the restore."
    )
    assert rootfs_note("CT 160", archived, {"rootfs": "local-lvm:8"}) is None
