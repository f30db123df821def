"""A guest's fingerprint (docs/design.md §8): what it holds of a container config, how two compare, how a
stored one is checked, and the container's check of a live guest against its row. No server."""

from __future__ import annotations

import re

import pytest

from salt_proxmox.guest import identity as guest_identity
from salt_proxmox.guest.fingerprint import GuestKeys, differences, fingerprint
from salt_proxmox.lxc.family import LXC
from salt_proxmox.lxc.props import parse_declaration
from salt_proxmox.ownership.rows import OwnershipCorrupt, check_row

MAC = "BC:24:11:12:34:56"
LIVE = {
    "digest": "d",
    "hostname": "web",
    "memory": 1024,
    # PVE prints the MAC it drew (pve-container Config.pm parse_lxc_network) in upper case.
    "net0": f"name=eth0,bridge=vmbr0,hwaddr={MAC},ip=dhcp,type=veth",
    "net1": "name=eth1,bridge=vmbr1,hwaddr=bc:24:11:ab:cd:ef,ip=dhcp,type=veth",
    "rootfs": "local-zfs:subvol-150-disk-0,size=8G",
    "mp0": "local-zfs:subvol-150-disk-1,mp=/data,backup=1,size=20G",
    "mp1": "/srv/share,mp=/share",
    "unused0": "local-zfs:subvol-150-disk-2",
    "dev0": "/dev/net/tun",
}


def test_a_container_fingerprint_holds_macs_volumes_and_mount_points():
    assert guest_identity.live_fingerprint(LXC, LIVE) == {
        "mp0": "local-zfs:subvol-150-disk-1 size=20G",
        "mp1": "/srv/share",
        "net0": MAC,
        "net1": "BC:24:11:AB:CD:EF",
        "rootfs": "local-zfs:subvol-150-disk-0 size=8G",
        "unused0": "local-zfs:subvol-150-disk-2",
    }


def test_options_a_write_changes_are_no_part_of_it():
    # An option change (backup, ip, bridge) is an update of the same guest, not another guest.
    edited = dict(LIVE, mp0="local-zfs:subvol-150-disk-1,mp=/data,backup=0,size=20G")
    edited["net0"] = f"name=eth0,bridge=vmbr1,hwaddr={MAC},ip=10.0.0.5/24,type=veth"
    assert guest_identity.live_fingerprint(LXC, edited) == guest_identity.live_fingerprint(LXC, LIVE)


def test_differences_name_each_key():
    recorded = guest_identity.live_fingerprint(LXC, LIVE)
    other = dict(
        LIVE,
        net0="name=eth0,bridge=vmbr0,hwaddr=BC:24:11:00:00:01,ip=dhcp",
        mp2="local-zfs:x,mp=/x,size=500G",
    )
    del other["unused0"]
    assert differences(recorded, guest_identity.live_fingerprint(LXC, other)) == [
        "mp2 (local-zfs:x size=500G) was not recorded",
        f"net0 is BC:24:11:00:00:01, recorded {MAC}",
        "unused0 (local-zfs:subvol-150-disk-2) is gone",
    ]
    assert differences(recorded, guest_identity.live_fingerprint(LXC, LIVE)) == []


def test_a_value_that_cannot_be_read_still_compares():
    prints = guest_identity.live_fingerprint(LXC, {"mp0": "not a volume", "net0": "garbage=,"})
    assert prints["mp0"] == "not a volume"


def test_the_shape_serves_a_vm_family():
    # qemu-server: netN holds model=MAC; vmgenid and smbios1's uuid are generated once per VM.
    keys = GuestKeys(
        nic=re.compile(r"net\d+"),
        mac_of=lambda value: value.split(",")[0].split("=")[1].upper(),
        volume=re.compile(r"(?:scsi|virtio|sata|ide)\d+|efidisk0|unused\d+"),
        volume_of=lambda value: value.split(",")[0],
        generated=("vmgenid", "smbios1"),
        pick=lambda key, value: value.split("uuid=")[1].split(",")[0] if key == "smbios1" else value,
    )
    vm = {
        "net0": "virtio=bc:24:11:00:00:07,bridge=vmbr0",
        "scsi0": "local-lvm:vm-300-disk-0,size=32G",
        "vmgenid": "0b7ac1a0-0000-4000-8000-000000000001",
        "smbios1": "uuid=5d2c0000-0000-4000-8000-000000000002",
        "name": "router",
    }
    assert fingerprint(vm, keys) == {
        "net0": "BC:24:11:00:00:07",
        "scsi0": "local-lvm:vm-300-disk-0",
        "smbios1": "5d2c0000-0000-4000-8000-000000000002",
        "vmgenid": "0b7ac1a0-0000-4000-8000-000000000001",
    }


@pytest.mark.parametrize("stored", ["BC:24", ["net0"], {"net0": 1}])
def test_a_malformed_stored_fingerprint_is_corrupt_not_ignored(stored):
    row = {"phase": "owned", "state_id": "web", "declared": {"vmid": 150}, "fingerprint": stored}
    with pytest.raises(OwnershipCorrupt, match="fingerprint"):
        check_row("homelab/lxc/150", row)


def _recorded(**config):
    return parse_declaration("web", vmid=150, node="pve1", target="homelab", config=config)


def test_check_with_a_fingerprint_compares_only_it():
    row = {"phase": "owned", "declared": {}, "fingerprint": guest_identity.live_fingerprint(LXC, LIVE)}
    assert guest_identity.check(LXC, row, LIVE, _recorded()) == guest_identity.Check()
    moved = dict(LIVE, net1="name=eth1,bridge=vmbr1,hwaddr=BC:24:11:00:00:02,ip=dhcp")
    assert guest_identity.check(LXC, row, moved, _recorded()).differs == [
        "net1 is BC:24:11:00:00:02, recorded BC:24:11:AB:CD:EF"
    ]


def test_check_of_a_row_before_fingerprints_needs_an_exact_match():
    live = {k: LIVE[k] for k in ("hostname", "memory", "net0", "rootfs")}
    exact = _recorded(
        hostname="web", memory=1024, net0="name=eth0,bridge=vmbr0,ip=dhcp", rootfs="local-zfs:8"
    )
    row = {"phase": "owned", "declared": {}}
    assert guest_identity.check(LXC, row, live, exact) == guest_identity.Check(legacy=True)
    other = guest_identity.check(LXC, row, dict(live, memory=2048, mp0=LIVE["mp0"]), exact)
    assert other.legacy and other.differs == [
        "memory differs from it",
        "mp0 (local-zfs:subvol-150-disk-1 size=20G) is not in it",
    ]
    text = guest_identity.not_ours("CT 150 on pve1", other, "delete")
    assert (
        "written before fingerprints existed" in text
        and "nothing was deleted" in text
        and "adopt: true" in text
    )


def test_unknown_volumes_include_unused_ones():
    declared = _recorded(rootfs="local-zfs:8", mp0="local-zfs:20,mp=/data", mp1="/srv/share,mp=/share")
    assert guest_identity.unknown_volumes(LXC, declared, LIVE) == ["unused0 (local-zfs:subvol-150-disk-2)"]
