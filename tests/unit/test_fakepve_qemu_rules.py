"""The pure rules of the VM test support (``tests.support.qemu``), pinned to PVE's own code: what the
served fake stores where fakepve 0.5.0 stores the value as sent."""

from __future__ import annotations

import pytest

from tests.support.qemu import CLOUDINIT, CRYPTED, encrypt_pw, hotplug_features, hotplugs, unique_tags


@pytest.mark.parametrize(
    ("tags", "style", "stored"),
    [
        # pve-guest-common GuestHelpers::get_unique_tags: split on ; , or space, lower-cased, sorted,
        # duplicates dropped (datacenter.cfg tag-style absent).
        ("Web;db web,DB", {}, "db;web"),
        ("", {}, ""),
        # ordering=config keeps the order written; case-sensitive=1 keeps case (and so two tags).
        ("web;DB;db", {"ordering": "config"}, "web;db"),
        ("web;DB;db", {"case-sensitive": 1}, "DB;db;web"),
        ("web;DB;web", {"case-sensitive": 1, "ordering": "config"}, "web;DB"),
    ],
)
def test_unique_tags_as_get_unique_tags(tags, style, stored):
    assert unique_tags(tags, style) == stored


def test_encrypt_pw_gives_a_crypt_shaped_value_without_the_password():
    """update_vm_api keeps a value matching ``^\\$(?:[156]|2[ay])(\\$.+){2}`` as it is, else hashes it."""
    hashed = encrypt_pw("hunter2")
    assert CRYPTED.match(hashed) and "hunter2" not in hashed
    assert hashed != encrypt_pw("hunter2"), "a fresh salt each time"


@pytest.mark.parametrize(
    ("volname", "vmid"),
    [("vm-210-cloudinit", "210"), ("210/vm-210-cloudinit.qcow2", "210")],
)
def test_cloudinit_volume_names(volname, vmid):
    """qemu-server create_disks names a cloud-init drive ``vm-<vmid>-cloudinit`` (``<vmid>/….qcow2``
    on a storage with a path); a plain disk is no cloud-init drive."""
    assert CLOUDINIT.fullmatch(volname).group(2) == vmid
    assert CLOUDINIT.fullmatch("vm-210-disk-0") is None


DEFAULT = hotplug_features(None)


@pytest.mark.parametrize(
    ("key", "old", "new", "features", "live"),
    [
        # qemu-server vmconfig_hotplug_pending: $fast_plug_option and cloud-init keys apply at once.
        ("tags", "a", "b", frozenset(), True),
        ("ipconfig0", "ip=dhcp", "ip=10.0.0.2/24", frozenset(), True),
        ("cores", "2", "4", DEFAULT, False),
        ("memory", "2048", "4096", DEFAULT, False),
        ("memory", "2048", "4096", hotplug_features("memory,network"), True),
        ("balloon", "1024", "2048", DEFAULT, True),
        ("balloon", "0", "2048", DEFAULT, False),  # turning ballooning on is no hotplug
        ("hotplug", "1", "network,disk,cpu", DEFAULT, False),
        # vmconfig_update_net: bridge, tag, firewall change live; model or MAC needs the network feature.
        (
            "net0",
            "virtio=AA:00:00:00:00:01,bridge=vmbr0",
            "virtio=AA:00:00:00:00:01,bridge=vmbr1",
            frozenset(),
            True,
        ),
        (
            "net0",
            "virtio=AA:00:00:00:00:01,bridge=vmbr0",
            "e1000=AA:00:00:00:00:01,bridge=vmbr0",
            frozenset(),
            False,
        ),
        ("net1", None, "virtio,bridge=vmbr0", DEFAULT, True),
        ("net1", None, "virtio,bridge=vmbr0", frozenset(), False),
        # Disks: scsi/virtio under the disk feature; never ide/sata/efidisk0/tpmstate0; a CD-ROM always.
        ("scsi1", None, "local-lvm:vm-1-disk-1,size=4G", DEFAULT, True),
        ("sata1", None, "local-lvm:vm-1-disk-1,size=4G", DEFAULT, False),
        ("efidisk0", None, "local-lvm:vm-1-disk-2,size=528K", DEFAULT, False),
        ("ide2", "none,media=cdrom", "local:iso/x.iso,media=cdrom", frozenset(), True),
        ("args", None, "-no-reboot", DEFAULT, False),
    ],
)
def test_hotplugs_as_vmconfig_hotplug_pending(key, old, new, features, live):
    assert hotplugs(key, old, new, features) is live


def test_hotplug_features_default_and_none():
    """qemu-server parse_hotplug_features: ``1`` (and no value) is network,disk,usb; ``0`` is none."""
    assert hotplug_features(None) == hotplug_features("1") == {"network", "disk", "usb"}
    assert hotplug_features(0) == frozenset()
