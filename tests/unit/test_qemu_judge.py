"""The pure half of ``proxmox_qemu``: which spellings are one value, what a change writes, what is refused.

No server. Each test pins one rule of ``salt_proxmox.qemu.judge``/``props``/``schema`` with the
qemu-server source beside it: ``PVE/QemuServer.pm`` (``$confdesc``, ``vmconfig_hotplug_pending``,
``vmconfig_update_disk``, ``vmconfig_update_net``, ``vmconfig_update_agent``),
``PVE/QemuServer/Network.pm`` (``$net_fmt``, ``parse_net``), ``PVE/QemuServer/Drive.pm``,
``PVE/QemuServer/Memory.pm``, ``PVE/QemuServer/CPUConfig.pm`` and ``PVE/API2/Qemu.pm``
(``create_vm``, ``update_vm``, ``resize_vm``, ``clone_vm``, ``vm_config``,
``$check_vm_modify_config_perm``, ``check_hostpci_perm``, ``check_usb_perm``). Live values are
spelled as PVE prints them, numbers as JSON numbers where PVE answers numbers.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

import pytest

from salt_proxmox.errors import DeclarationError
from salt_proxmox.guest.pending import GuestConfig
from salt_proxmox.guest.verdict import judge_guest, split_by_effect
from salt_proxmox.qemu import schema
from salt_proxmox.qemu.change import QemuChange
from salt_proxmox.qemu.clone import clone_form, clone_source_refusals
from salt_proxmox.qemu.family import QEMU, config_task
from salt_proxmox.qemu.hotplug import applies_live
from salt_proxmox.qemu.judge import (
    create_form,
    create_refusals,
    create_root,
    identity_refusals,
    judge,
    key_change,
    live_refusals,
    startup_refusal,
)
from salt_proxmox.qemu.props import (
    QemuDeclaration,
    parse_declaration,
    parse_drive,
    parse_net,
    sshkeys_text,
    sshkeys_wire,
)

VMID = 150
MAC = "BC:24:11:2E:4B:7A"
NIC = f"virtio={MAC},bridge=vmbr0,firewall=1,tag=10"
DISK = "local-lvm:vm-150-disk-0,discard=on,iothread=1,size=32G"
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGq7Jx0s9Nn8sWQ2p5mE1cQH0b4aJXk0n4mZ8b1c2d3e ops@example"
SECRET = "correct-horse-battery"


def decl(**config: object) -> QemuDeclaration:
    """A declaration of VM 150 on pve1 with ``config``, through the real parser."""
    return parse_declaration("web", vmid=VMID, node="pve1", target="homelab", config=config)


def vm(**config: object) -> dict[str, object]:
    """A live VM config (GET .../config data) with what qemu-server's create_vm always adds."""
    return {
        "digest": "0" * 40,
        "vmgenid": "3f1c1e0e-8e1e-4c7b-9a3e-0d4c6f3f8b11",
        "smbios1": "uuid=6a3c9b1e-2f4d-4e8a-9c7b-1d2e3f4a5b6c",
        "meta": "creation-qemu=9.0.2,ctime=1732960000",
        "boot": "order=scsi0;ide2;net0",
        **config,
    }


def verdict(change: QemuChange) -> tuple:
    return change.put, change.clear, change.resize, change.refuse


# ============================================================================================
# netN: the MAC PVE drew is live-owned and carried on every write
# ============================================================================================


def test_nic_spellings_are_one_value() -> None:
    # Network.pm $net_fmt: model is the default key and each model name a keyAlias of model whose
    # value is the MAC, so these four spellings parse to one NIC.
    spellings = [
        f"virtio={MAC},bridge=vmbr0",
        f"model=virtio,macaddr={MAC},bridge=vmbr0",
        f"bridge=vmbr0,virtio={MAC.lower()}",
    ]
    assert all(judge(decl(net0=s), vm(net0=f"virtio={MAC},bridge=vmbr0")).drift == [] for s in spellings)
    assert parse_net("virtio,bridge=vmbr0") == {"model": "virtio", "bridge": "vmbr0"}


def test_an_undeclared_mac_is_not_drift() -> None:
    # parse_net draws random_ether_addr when the value names no MAC: PVE's, not the declaration's.
    assert judge(decl(net0="virtio,bridge=vmbr0,firewall=1,tag=10"), vm(net0=NIC)).drift == []


def test_a_nic_write_carries_the_live_mac() -> None:
    # update_vm runs every netN through parse_net again: without the live MAC a tag change would
    # give the VM a new MAC (a new DHCP lease).
    change = judge(decl(net0="virtio,bridge=vmbr0,firewall=1,tag=20"), vm(net0=NIC))
    assert change.put == {"net0": f"virtio={MAC},bridge=vmbr0,firewall=1,tag=20"}


def test_a_model_change_keeps_the_mac() -> None:
    change = judge(decl(net0="e1000,bridge=vmbr0,firewall=1,tag=10"), vm(net0=NIC))
    assert change.put == {"net0": f"e1000={MAC},bridge=vmbr0,firewall=1,tag=10"}


def test_a_declared_mac_is_compared_case_insensitively_and_written_when_it_differs() -> None:
    assert judge(decl(net0=f"virtio={MAC.lower()},bridge=vmbr0,firewall=1,tag=10"), vm(net0=NIC)).drift == []
    other = "BC:24:11:00:00:99"
    change = judge(decl(net0=f"virtio={other},bridge=vmbr0,firewall=1,tag=10"), vm(net0=NIC))
    assert change.put == {"net0": f"virtio={other},bridge=vmbr0,firewall=1,tag=10"}


def test_a_new_nic_is_written_without_a_mac_so_pve_draws_one() -> None:
    change = judge(decl(net1="virtio,bridge=vmbr1"), vm(net0=NIC))
    assert change.put == {"net1": "virtio,bridge=vmbr1"}


def test_nic_defaults_are_not_drift() -> None:
    # $net_fmt: firewall and link_down are off when absent.
    assert (
        judge(
            decl(net0="virtio,bridge=vmbr0,link_down=0,firewall=0"), vm(net0=f"virtio={MAC},bridge=vmbr0")
        ).drift
        == []
    )


def test_a_nic_with_two_models_or_an_unknown_option_is_refused_at_parse() -> None:
    with pytest.raises(DeclarationError, match="net0"):
        decl(net0="virtio,e1000,bridge=vmbr0")
    with pytest.raises(DeclarationError, match=r"net0: unknown option\(s\) hwaddr"):
        decl(net0=f"virtio,bridge=vmbr0,hwaddr={MAC}")
    with pytest.raises(DeclarationError, match="net0: tag=5000"):
        decl(net0="virtio,bridge=vmbr0,tag=5000")


# ============================================================================================
# Drives: grow in place, refuse shrink and moves, change options without re-allocating
# ============================================================================================


def test_a_larger_declared_disk_grows_in_place_with_resize() -> None:
    # resize_vm grows the volume online; the config keeps its volume id.
    change = judge(decl(scsi0="local-lvm:40,discard=on,iothread=1"), vm(scsi0=DISK))
    assert verdict(change) == ({}, [], [("scsi0", "40G")], [])


def test_the_same_size_in_another_unit_is_not_drift() -> None:
    assert (
        judge(decl(scsi0="local-lvm:32,discard=on,iothread=1"), vm(scsi0=DISK.replace("32G", "32768M"))).drift
        == []
    )


def test_a_smaller_declared_disk_is_refused_at_plan() -> None:
    # resize_vm: die "shrinking disks is not supported".
    change = judge(decl(scsi0="local-lvm:16,discard=on,iothread=1"), vm(scsi0=DISK))
    assert change.put == {} and change.resize == []
    assert "shrinking disks is not supported" in change.refuse[0]


def test_another_storage_is_a_move_and_refused() -> None:
    change = judge(decl(scsi0="ceph:32,discard=on,iothread=1"), vm(scsi0=DISK))
    assert change.put == {} and "qm disk move" in change.refuse[0]


@pytest.mark.parametrize(
    ("key", "declared", "live"),
    [
        # create_disks: efidisk0 takes the OVMF vars size (OVMF::create_efidisk: 528K for 4m).
        ("efidisk0", "local-lvm:1,efitype=4m", "local-lvm:vm-150-disk-1,efitype=4m,size=528K"),
        ("efidisk0", "local-lvm:0,efitype=2m", "local-lvm:vm-150-disk-1,efitype=2m,size=128K"),
        # create_disks: tpmstate0 takes TPMSTATE_DISK_SIZE (4 MiB).
        ("tpmstate0", "local-lvm:1,version=v2.0", "local-lvm:vm-150-disk-2,size=4M,version=v2.0"),
    ],
)
def test_an_efi_disk_or_tpm_state_keeps_the_size_pve_fixed(key: str, declared: str, live: str) -> None:
    change = judge(decl(**{key: declared}), vm(**{key: live}))
    assert verdict(change) == ({}, [], [], []) and change.drift == []


SECURE_BOOT = "local-lvm:1,efitype=4m,pre-enrolled-keys=1"
#: What qemu-server 9.0.27+ / 8.4.6+ makes of SECURE_BOOT: OVMF.pm create_efidisk adds ms-cert=2023k
#: when the vars template it copies holds the Microsoft UEFI CA 2023 (is_ms_2023_cert_enrolled).
SECURE_BOOT_LIVE = "local-lvm:vm-150-disk-1,efitype=4m,ms-cert=2023k,pre-enrolled-keys=1,size=528K"


@pytest.mark.parametrize(
    "declared",
    [
        SECURE_BOOT,
        "local-lvm:1,efitype=4m,pre-enrolled-keys=true",
        "local-lvm:1,efitype=4m,pre-enrolled-keys=On",
    ],
)
def test_the_ms_cert_marker_pve_adds_at_create_is_not_drift(declared: str) -> None:
    # OVMF.pm create_efidisk: `$efidisk->{'ms-cert'} = '2023k'` when it enrolls keys; pve-common
    # JSONSchema.pm parse_property_string reads a boolean option with parse_boolean (1/on/yes/true).
    change = judge(decl(efidisk0=declared), vm(efidisk0=SECURE_BOOT_LIVE))
    assert verdict(change) == ({}, [], [], []) and change.drift == []


def test_a_declared_ms_cert_2023k_is_planned_as_the_key_enrollment_it_is() -> None:
    # OVMF.pm drive_change: a marker newly changed to 2023* runs ensure_ms_2023_cert_enrolled
    # (virt-fw-vars --distro-keys ms-uefi --distro-keys windows --add-kek ...) when the pending change
    # is applied (vmconfig_apply_pending); the write keeps the live volume and size.
    change = judge(
        decl(efidisk0=f"{SECURE_BOOT},ms-cert=2023k"),
        vm(efidisk0="local-lvm:vm-150-disk-1,efitype=4m,pre-enrolled-keys=1,size=528K"),
    )
    assert change.refuse == [] and change.resize == []
    assert change.put == {
        "efidisk0": "local-lvm:vm-150-disk-1,efitype=4m,ms-cert=2023k,pre-enrolled-keys=1,size=528K"
    }
    assert (
        "enrolls the Microsoft UEFI CA 2023" in change.notes[0]
        and "ensure_ms_2023_cert_enrolled" in change.notes[0]
    )


@pytest.mark.parametrize(
    ("declared", "live", "needle"),
    [
        # OVMF.pm ensure_ms_2023_cert_enrolled writes 2023k whatever 2023* marker asked for it.
        (f"{SECURE_BOOT},ms-cert=2023w", "local-lvm:vm-150-disk-1,efitype=4m,pre-enrolled-keys=1,size=528K",
         "deprecated marker"),
        # should_enroll_ms_2023_cert: nothing without pre-enrolled-keys, and drive_change drops the marker.
        ("local-lvm:1,efitype=4m,ms-cert=2023k", "local-lvm:vm-150-disk-1,efitype=4m,size=528K",
         "should_enroll_ms_2023_cert"),
        # drive_change: "changing away from ms-cert=2023 is allowed too, the marker is not the source
        # of truth".
        (f"{SECURE_BOOT},ms-cert=2011", SECURE_BOOT_LIVE, "the marker is not the source of truth"),
    ],
)  # fmt: skip
def test_an_ms_cert_pve_would_not_keep_is_refused(declared: str, live: str, needle: str) -> None:
    change = judge(decl(efidisk0=declared), vm(efidisk0=live))
    assert change.put == {} and needle in change.refuse[0], change.refuse


@pytest.mark.parametrize(
    ("declared", "live", "option"),
    [
        (SECURE_BOOT, "local-lvm:vm-150-disk-1,efitype=4m,size=528K", "pre-enrolled-keys 0 -> 1"),
        ("local-lvm:1,efitype=4m", "local-lvm:vm-150-disk-1,size=128K", "efitype 2m -> 4m"),
    ],
)
def test_efitype_or_pre_enrolled_keys_on_an_existing_efi_disk_is_refused_with_a_new_disk(
    declared: str, live: str, option: str
) -> None:
    # API2/Qemu.pm update_vm_api -> create_disks allocates (OVMF.pm create_efidisk copies the vars
    # template) only for storage:N: on the existing volume only the config text would change.
    change = judge(decl(efidisk0=declared), vm(efidisk0=live))
    assert change.put == {} and option in change.refuse[0], change.refuse
    assert (
        "qm set 150 --delete efidisk0" in change.refuse[0]
        and "qm set 150 --efidisk0 local-lvm:1,efitype=4m" in change.refuse[0]
    )


def test_a_tpm_state_version_change_is_refused_with_pve_s_words() -> None:
    # API2/Qemu.pm prohibit_tpm_version_change (absent is v1.2, $tpmstate_fmt).
    change = judge(
        decl(tpmstate0="local-lvm:1,version=v2.0"), vm(tpmstate0="local-lvm:vm-150-disk-2,size=4M")
    )
    assert change.put == {}
    assert "cannot change TPM state version after creation" in change.refuse[0]
    assert "qm set 150 --tpmstate0 local-lvm:1,version=v2.0" in change.refuse[0]
    same = judge(decl(tpmstate0="local-lvm:1,version=v1.2"), vm(tpmstate0="local-lvm:vm-150-disk-2,size=4M"))
    assert verdict(same) == ({}, [], [], [])


def test_an_option_change_is_written_on_the_live_volume_never_as_a_new_disk() -> None:
    # update_vm hands every drive value to create_disks, which allocates for storage:N
    # ($NEW_DISK_RE) only: the live volume id and size keep the disk.
    change = judge(decl(scsi0="local-lvm:32,discard=on,iothread=1,cache=writeback"), vm(scsi0=DISK))
    assert change.put == {"scsi0": "local-lvm:vm-150-disk-0,cache=writeback,discard=on,iothread=1,size=32G"}
    assert ":32," not in change.put["scsi0"]


def test_grow_and_option_change_together() -> None:
    change = judge(decl(scsi0="local-lvm:64,discard=on,iothread=1,ssd=1"), vm(scsi0=DISK))
    assert change.put == {"scsi0": "local-lvm:vm-150-disk-0,discard=on,iothread=1,size=32G,ssd=1"}
    assert change.resize == [("scsi0", "64G")]


def test_drive_defaults_are_not_drift() -> None:
    # Drive.pm: replicate defaults on, media disk; vzdump backs a drive up unless backup=0.
    declared = "local-lvm:32,discard=on,iothread=1,backup=1,replicate=1,media=disk"
    assert judge(decl(scsi0=declared), vm(scsi0=DISK)).drift == []


def test_a_new_disk_on_a_free_key_is_allocated() -> None:
    change = judge(decl(scsi1="local-lvm:8"), vm(scsi0=DISK))
    assert change.put == {"scsi1": "local-lvm:8"}


def test_an_existing_volume_on_a_free_key_is_refused() -> None:
    # Naming a volume on a new drive attaches it: another guest's data, or this VM's unusedN.
    change = judge(decl(scsi1="local-lvm:vm-200-disk-0"), vm(scsi0=DISK))
    assert change.put == {} and "a volume of vmid 200" in change.refuse[0]


def test_another_volume_on_a_configured_drive_is_refused() -> None:
    change = judge(decl(scsi0="local-lvm:vm-150-disk-1,discard=on,iothread=1"), vm(scsi0=DISK))
    assert change.put == {} and "unusedN" in change.refuse[0]


def test_detaching_a_disk_is_refused() -> None:
    change = judge(decl(scsi0=""), vm(scsi0=DISK))
    assert change.clear == [] and "qm set 150 --delete scsi0" in change.refuse[0]


def test_a_host_path_drive_is_root_only() -> None:
    # pve-storage check_volume_access: only root may pass arbitrary filesystem paths.
    change = judge(decl(scsi1="/dev/sdb"), vm(scsi0=DISK))
    assert "qm set 150 --scsi1 '/dev/sdb'" in change.refuse[0]


def test_size_on_an_existing_volume_is_measured_not_requested() -> None:
    change = judge(decl(scsi0="local-lvm:vm-150-disk-0,discard=on,iothread=1,size=40G"), vm(scsi0=DISK))
    assert change.resize == [] and "storage:GiB" in change.refuse[0]


def test_drive_options_are_checked_per_bus() -> None:
    # Drive.pm: iothread is for scsi/virtio, ssd for ide/sata/scsi, not virtio.
    with pytest.raises(DeclarationError, match="virtio0: unknown option"):
        decl(virtio0="local-lvm:32,ssd=1")
    with pytest.raises(DeclarationError, match="ide0: unknown option"):
        decl(ide0="local-lvm:32,iothread=1")
    with pytest.raises(DeclarationError, match="cache=fast"):
        decl(scsi0="local-lvm:32,cache=fast")
    with pytest.raises(DeclarationError, match="scsi31"):
        decl(scsi31="local-lvm:32")  # Drive.pm $MAX_SCSI_DISKS = 31: scsi0-scsi30


# ============================================================================================
# CD-ROM and cloud-init drive
# ============================================================================================


def test_cdrom_kinds() -> None:
    assert parse_drive("local:iso/debian-13.iso,media=cdrom").kind == "cdrom"
    assert parse_drive("none,media=cdrom").kind == "cdrom"
    assert parse_drive("local-lvm:cloudinit").kind == "cloudinit"
    assert parse_drive("local-lvm:vm-150-cloudinit,media=cdrom").kind == "cloudinit"


def test_an_iso_needs_media_cdrom() -> None:
    # $check_drive_param: "explicit 'media=cdrom' is required for iso images".
    with pytest.raises(DeclarationError, match="media=cdrom"):
        decl(ide2="local:iso/debian-13.iso")


def test_a_cdrom_is_swapped_and_ejected_like_any_value() -> None:
    live = vm(ide2="local:iso/debian-12.iso,media=cdrom")
    assert judge(decl(ide2="local:iso/debian-12.iso,media=cdrom"), live).drift == []
    assert judge(decl(ide2="local:iso/debian-13.iso,media=cdrom"), live).put == {
        "ide2": "local:iso/debian-13.iso,media=cdrom"
    }
    assert judge(decl(ide2="none,media=cdrom"), live).put == {"ide2": "none,media=cdrom"}


@pytest.mark.parametrize(
    "value",
    [
        "local:iso/debian-13.iso,media=cdrom",
        "cephfs:iso/rescue.IMG,media=cdrom",
        "none,media=cdrom",
        "cdrom,media=cdrom",  # the host's drive: Sys.Console on /, not root@pam ($check_storage_access)
    ],
)
def test_a_cdrom_naming_media_is_written(value: str) -> None:
    assert judge(decl(ide2=value), vm()).put == {"ide2": value}
    assert create_refusals(decl(ide2=value)) == []


@pytest.mark.parametrize(
    ("volume", "whose"),
    [
        ("local-lvm:vm-170-disk-0", ", a volume of vmid 170 (its data would be shared with this VM)"),
        ("local-lvm:vm-150-disk-0", ", a volume of this VM"),
        ("local:170/vm-170-disk-1.qcow2", ", a volume of vmid 170 (its data would be shared with this VM)"),
        ("local:import/disk.iso", ""),  # vtype import, not iso (pve-storage Plugin.pm parse_volname)
        ("nas:backup/rootfs.raw", ""),
    ],
)
def test_a_cdrom_naming_any_other_volume_is_refused_like_a_disk(volume: str, whose: str) -> None:
    # qemu-server $check_storage_access takes an images volume on a CD-ROM, and pve-storage
    # check_volume_access lets through any volume the caller may access (Datastore.Allocate on its
    # storage): VM.Config.CDROM would attach another guest's disk to this VM as its media.
    value = f"{volume},media=cdrom"
    for change in (
        judge(decl(ide2=value), vm()),  # a drive added to a live VM
        judge(decl(ide2=value), vm(ide2="none,media=cdrom")),  # a CD-ROM swapped
    ):
        assert change.put == {} and change.drift == ["ide2"]
        (refusal,) = change.refuse
        assert refusal.startswith(f"ide2: {volume} is not an ISO image{whose}; a CD-ROM names media")
        assert "Declare an ISO image, none or cdrom." in refusal
    (at_create,) = create_refusals(decl(ide2=value))
    assert at_create.startswith(f"ide2: {volume} is not an ISO image")


def test_a_cdrom_on_a_host_path_is_root_only() -> None:
    # pve-storage check_volume_access: "Only root can pass arbitrary filesystem paths."
    change = judge(decl(ide2="/dev/sr0,media=cdrom"), vm(ide2="none,media=cdrom"))
    (refusal,) = change.refuse
    assert "root@pam" in refusal and "qm set 150 --ide2 '/dev/sr0,media=cdrom'" in refusal
    (at_create,) = create_refusals(decl(ide2="/dev/sr0,media=cdrom"))
    assert "root@pam" in at_create


def test_a_cdrom_is_never_turned_into_a_disk() -> None:
    # vmconfig_update_disk: die "unable to change media type".
    change = judge(decl(ide2="local-lvm:8"), vm(ide2="none,media=cdrom"))
    assert change.put == {} and "unable to change media type" in change.refuse[0]


def test_a_declared_cloudinit_drive_matches_the_volume_pve_made_of_it() -> None:
    # create_disks turns storage:cloudinit into vm-<vmid>-cloudinit,media=cdrom.
    assert (
        judge(decl(ide0="local-lvm:cloudinit"), vm(ide0="local-lvm:vm-150-cloudinit,media=cdrom")).drift == []
    )


# ============================================================================================
# Values PVE fills in are live-owned
# ============================================================================================


def test_generated_values_are_never_drift_and_never_declared() -> None:
    assert judge(decl(name="web"), vm(name="web")).drift == []
    for key in ("vmgenid", "meta"):
        with pytest.raises(DeclarationError, match=f"{key}: PVE generates it"):
            decl(**{key: "1"})


def test_smbios1_keeps_the_uuid_pve_generated() -> None:
    live = vm()
    change = judge(decl(smbios1="manufacturer=ACME,product=Web"), live)
    assert change.put == {
        "smbios1": "uuid=6a3c9b1e-2f4d-4e8a-9c7b-1d2e3f4a5b6c,manufacturer=ACME,product=Web"
    }
    after = {**live, **change.put}
    assert judge(decl(smbios1="manufacturer=ACME,product=Web"), after).drift == []


def test_boot_is_compared_as_its_order() -> None:
    assert judge(decl(boot="order=scsi0;ide2;net0"), vm()).drift == []
    assert judge(decl(boot="order=net0;scsi0"), vm()).put == {"boot": "order=net0;scsi0"}


@pytest.mark.parametrize(
    ("key", "value", "needle"),
    [
        # Drive.pm parse_drive: `foreach my $opt (qw(bps bps_rd bps_wr))` deletes bps* and stores m<opt>.
        ("scsi0", "local-lvm:32,bps=10485760", "stored by PVE as mbps="),
        ("scsi0", "local-lvm:32,bps_wr=1048576", "declare mbps_wr=<MB/s>"),
        # parse_drive: `return if $res->{mbps_rd} && $res->{mbps}` (and the iops pairs).
        ("scsi0", "local-lvm:32,mbps=100,mbps_rd=50", "mbps= excludes mbps_rd="),
        ("scsi0", "local-lvm:32,iops=100,iops_wr=50", "iops= excludes iops_wr="),
        # parse_drive: [mbps_max => 'mbps'] ... [iops_max_length => 'iops_max'].
        ("scsi0", "local-lvm:32,mbps_rd_max=200", "mbps_rd_max= requires mbps_rd="),
        ("scsi0", "local-lvm:32,iops=100,iops_max_length=10", "iops_max_length= requires iops_max="),
        # parse_drive: a CD-ROM `return if $res->{snapshot} || $res->{format}` and not on virtio.
        ("virtio1", "local:iso/debian-13.iso,media=cdrom", "a CD-ROM cannot be on virtio1"),
        ("ide2", "local:iso/debian-13.iso,media=cdrom,format=raw", "a CD-ROM takes no format="),
        ("ide2", "none,media=cdrom,snapshot=on", "a CD-ROM takes no snapshot="),
        # QemuServer.pm verify_bootdev: efidisk/tpmstate are no boot devices.
        ("boot", "order=efidisk0;scsi0", "invalid boot device 'efidisk0'"),
        ("boot", "order=scsi0;tpmstate0", "invalid boot device 'tpmstate0'"),
        ("boot", "order=scsi0;floppy0", "invalid boot device 'floppy0'"),
    ],
)
def test_drive_and_boot_values_pve_cannot_parse_are_refused_at_parse(
    key: str, value: str, needle: str
) -> None:
    with pytest.raises(DeclarationError, match=re.escape(needle)):
        decl(**{key: value})


def test_throttle_values_pve_parses_pass() -> None:
    # parse_drive tests Perl truth: a zero total beside a read limit, iops_max alone (qemu-server checks
    # `miops_max`, an option that does not exist), a CD-ROM with snapshot=0.
    decl(
        scsi0="local-lvm:32,mbps=0,mbps_rd=50,mbps_rd_max=60,iops_max=500", ide2="none,media=cdrom,snapshot=0"
    )


def test_pve_s_own_boot_order_changes_are_planned() -> None:
    # API2/Qemu.pm update_vm_api: `push @bootorder, $opt` for a new CD-ROM (drive_is_cdrom($drive, 1): not
    # cloud-init) the order does not name; `@bootorder = grep { $_ ne $opt } @bootorder` for a deleted device;
    # written keys are handled in hash order, so a boot beside the append may be overwritten.
    live = vm(scsi0=DISK, net0=NIC, net1=NIC.replace("tag=10", "tag=11"))
    with_net1 = {**live, "boot": "order=scsi0;ide2;net0;net1"}
    undeclared = judge(decl(ide3="none,media=cdrom", net1=""), with_net1)
    assert "removes net1 from boot; appends the new CD-ROM ide3 to boot" in undeclared.notes[0]
    assert "boot becomes order=scsi0;ide2;net0;ide3" in undeclared.notes[0] and undeclared.after == {}
    # The append gives the declared order: boot is not sent.
    appended = judge(decl(ide3="none,media=cdrom", boot="order=scsi0;ide2;net0;ide3"), live)
    assert "boot" not in appended.put and appended.after == {} and "boot is not sent" in appended.notes[0]
    # Another order: boot goes in a second write, after the CD-ROM.
    other = judge(decl(ide3="none,media=cdrom", boot="order=ide3;scsi0;ide2;net0"), live)
    assert other.put == {"ide3": "none,media=cdrom"} and other.after == {"boot": "order=ide3;scsi0;ide2;net0"}
    assert "boot" in other.drift and "second write" in other.notes[0]
    # A cloud-init drive is not appended; a boot naming a device the write deletes is refused.
    assert judge(decl(ide1="local-lvm:cloudinit"), live).notes == []
    gone = judge(decl(net1="", boot="order=scsi0;net0;net1"), {**live, "boot": "order=scsi0;net0;net1"})
    assert "device 'net1' does not exist" in gone.refuse[0]


def test_a_boot_order_naming_a_device_the_vm_will_not_have_is_refused() -> None:
    # API2/Qemu.pm update_vm_api: "invalid bootorder: device '$dev' does not exist'" unless it is in the
    # config, pending, or the same write, and not deleted.
    live = vm(scsi0=DISK, net0=NIC)
    refused = judge(decl(boot="order=scsi1;scsi0"), live)
    assert "invalid bootorder: device 'scsi1' does not exist" in refused.refuse[0]
    added = judge(decl(boot="order=scsi1;scsi0", scsi1="local-lvm:8"), live)
    assert added.refuse == [] and added.put["boot"] == "order=scsi1;scsi0"
    # At create (create_vm stores it unchecked; the VM would have nothing there): refused too.
    created = decl(boot="order=scsi0;net0", scsi0="local-lvm:8")
    assert "device 'net0' does not exist" in create_refusals(created)[0]
    assert (
        create_refusals(decl(boot="order=scsi0;net0", scsi0="local-lvm:8", net0="virtio,bridge=vmbr0")) == []
    )


def test_a_balloon_larger_than_memory_is_refused_with_pve_s_words() -> None:
    # API2/Qemu.pm update_vm_api, when memory or balloon is written: `die "balloon value too large (must be
    # smaller than assigned memory)\n" if $balloon && $balloon > $maxmem` (equal passes, 0 is off).
    live = vm(memory="current=2048", balloon=1024)
    refused = judge(decl(balloon=4096), live)
    assert "balloon value too large (must be smaller than assigned memory)" in refused.refuse[0]
    shrunk = judge(decl(memory=512), live)
    assert "balloon value too large" in shrunk.refuse[0] and "(512 MiB)" in shrunk.refuse[0]
    assert (
        judge(decl(balloon=2048), live).refuse == [] and judge(decl(memory=512, balloon=0), live).refuse == []
    )
    assert "balloon value too large" in create_refusals(decl(memory=1024, balloon=2048))[0]


@pytest.mark.parametrize(
    ("config", "needle"),
    [
        # Memory.pm config: `die "NUMA needs to be enabled for memory hotplug\n" if !$conf->{numa}`.
        ({"hotplug": "network,disk,memory", "memory": 2048}, "NUMA needs to be enabled for memory hotplug"),
        # Memory.pm config: `die "minimum memory must be ${static_memory}MB\n"` ($STATICMEM = 1024).
        ({"hotplug": "memory", "numa": 1, "memory": 768}, "minimum memory must be 1024MB"),
        # Memory.pm foreach_dimm: 512 MiB DIMMs from 1024: 1800 lands between 1536 and 2048.
        ({"hotplug": "memory", "numa": 1, "memory": 1800}, "must be aligned to 512 for hotplugging"),
    ],
)
def test_memory_pve_cannot_hot_plug_is_refused_at_plan_and_at_create(config: dict, needle: str) -> None:
    live = vm(memory="current=4096", numa=0)
    refused = judge(decl(**config), live)
    assert needle in "\n".join(refused.refuse), refused.refuse
    assert needle in "\n".join(create_refusals(decl(**config)))


def test_memory_pve_can_hot_plug_passes() -> None:
    # foreach_dimm: 1024 + n*512 up to 32 DIMMs (17408), then 1024 MiB DIMMs.
    for memory in (1024, 1536, 4096, 17408, 18432):
        assert create_refusals(decl(hotplug="network,disk,memory", numa=1, memory=memory)) == []
    assert "declare 17408 or 18432 MiB" in create_refusals(decl(hotplug="memory", numa=1, memory=18000))[0]
    # Without memory in hotplug none of this applies.
    assert create_refusals(decl(memory=700)) == []


# ============================================================================================
# memory and cpu: property-string forms equal the plain ones
# ============================================================================================


@pytest.mark.parametrize(
    ("declared", "live"),
    [(2048, "current=2048"), ("current=2048", 2048), ("2048", "2048"), (512, None)],
)
def test_memory_spellings(declared: object, live: object) -> None:
    # Memory.pm $memory_fmt: current is the default key, default 512 (qemu-server 8.1+ prints it).
    config = vm() if live is None else vm(memory=live)
    assert judge(decl(memory=declared), config).drift == []


def test_memory_change_is_written() -> None:
    assert judge(decl(memory=4096), vm(memory="current=2048")).put == {"memory": "4096"}


@pytest.mark.parametrize(
    ("declared", "live", "same"),
    [
        ("host", "cputype=host", True),
        ("cputype=host", "host", True),
        ("host,hidden=0", "host", True),
        ("x86-64-v2-AES", "host", False),
        ("host,flags=+aes", "host", False),
    ],
)
def test_cpu_spellings(declared: str, live: str, same: bool) -> None:
    # CPUConfig.pm $cpu_fmt: cputype is the default key; hidden defaults to 0.
    assert (judge(decl(cpu=declared), vm(cpu=live)).drift == []) is same


@pytest.mark.parametrize(
    ("key", "declared", "live"),
    [
        # CPUConfig.pm $cpu_fmt flags: a ;-list of +FLAG/-FLAG, each its own CPUID bit.
        ("cpu", "host,flags=+aes;-pcid", "host,flags=-pcid;+aes"),
        ("cpu", "cputype=host,hidden=off,flags=+aes", "host,flags=+aes"),
        # Agent.pm $agent_fmt: booleans read with parse_boolean; freeze-fs defaults on;
        # freeze-fs-on-backup and guest-fsfreeze are aliases of freeze-fs (PVE 8 spells freeze-fs-on-backup).
        ("agent", "enabled=yes,fstrim_cloned_disks=on,freeze-fs=true", "1,fstrim_cloned_disks=1"),
        ("agent", "1,freeze-fs-on-backup=0", "enabled=1,freeze-fs=0"),
        ("agent", "enabled=TRUE,guest-fsfreeze=off", "1,freeze-fs-on-backup=0"),
        # Network.pm $net_fmt host-tunnel: boolean.
        ("net0", "virtio,bridge=vmbr0,host-tunnel=on", f"virtio={MAC},bridge=vmbr0,host-tunnel=1"),
        # $smbios1_fmt base64: boolean.
        (
            "smbios1",
            "base64=yes,serial=QUJD",
            "uuid=6a3c9b1e-2f4d-4e8a-9c7b-1d2e3f4a5b6c,base64=1,serial=QUJD",
        ),
    ],
)
def test_pve_s_boolean_spellings_and_flag_order_are_one_value(key: str, declared: str, live: str) -> None:
    # pve-common JSONSchema.pm parse_property_string: `$v = parse_boolean($v) // $v` for a boolean option.
    change = judge(decl(**{key: declared}), vm(**{key: live}))
    assert change.drift == [] and change.put == {}, change.put


def test_flag_order_and_boolean_values_still_differ_when_they_do() -> None:
    assert judge(decl(cpu="host,flags=+aes;-pcid"), vm(cpu="host,flags=+aes")).put == {
        "cpu": "host,flags=+aes;-pcid"
    }
    assert judge(decl(agent="1,freeze-fs=0"), vm(agent="1")).put == {"agent": "1,freeze-fs=0"}


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        # Machine.pm $machine_fmt type pattern (anchored) and maxLength 40.
        ("i440fx", "not a machine type PVE knows"),
        ("pc-q35-latest", "not a machine type PVE knows"),
        ("q35,viommu=amd", "viommu"),
        # Machine.pm assert_valid_machine_property, in its words.
        ("pc,viommu=intel", "to use Intel vIOMMU please set the machine type to q35"),
        ("q35,viommu=intel,aw-bits=40", "Intel vIOMMU supports only 39 or 48 bits as address width"),
        ("q35,aw-bits=48", "cannot set aw-bits if no vIOMMU is configured"),
    ],
)
def test_a_machine_pve_rejects_is_refused_at_parse(value: str, needle: str) -> None:
    with pytest.raises(DeclarationError, match=re.escape(needle)):
        decl(machine=value)


def test_machine_values_pve_takes_pass() -> None:
    for value in (
        "pc",
        "q35",
        "pc-i440fx-9.2+pve1",
        "pc-q35-10.0+pve1.pxe",
        "virt-9.0",
        "q35,viommu=intel,aw-bits=48",
    ):
        decl(machine=value)


def test_the_machine_version_pve_pins_for_windows_is_not_drift() -> None:
    # Machine.pm check_and_pin_machine_string (create_vm, and update_vm_api on an ostype change): a Windows
    # guest's unversioned pc/q35/virt is pinned to windows_get_pinned_machine_version's latest version.
    live = vm(ostype="win11", machine="pc-q35-10.0+pve1")
    assert judge(decl(ostype="win11", machine="q35"), live).drift == []
    assert (
        judge(
            decl(ostype="win11", machine="q35,enable-s3=off"),
            vm(ostype="win11", machine="pc-q35-10.0+pve1,enable-s3=0"),
        ).drift
        == []
    )
    # Another base type, or a guest that is not Windows, is a real change.
    assert judge(decl(ostype="win11", machine="pc"), live).put == {"machine": "pc"}
    assert judge(decl(ostype="l26", machine="q35"), vm(ostype="l26", machine="pc-q35-10.0+pve1")).put == {
        "machine": "q35"
    }
    # An ostype turned Windows without a declared machine: PVE pins it, the plan says so.
    turned = judge(decl(ostype="win11"), vm(ostype="l26"))
    assert turned.put == {"ostype": "win11"} and "check_and_pin_machine_string" in turned.notes[0]


def test_options_of_pve_9_are_refused_on_pve_8() -> None:
    # qemu-server 9 Agent.pm $agent_fmt adds freeze-fs (alias guest-fsfreeze); stable-bookworm knows
    # freeze-fs-on-backup only. Machine.pm $machine_fmt's aw-bits is qemu-server 9's too.
    from salt_proxmox.pve.facts import Release
    from salt_proxmox.qemu.machine import needs_release, release_refusals

    values = {"agent": "1,freeze-fs=0", "machine": "q35,viommu=virtio,aw-bits=48"}
    said = release_refusals(values, Release("8.4"))
    assert "agent: freeze-fs= is an option of PVE 9 (PVE 8 names it freeze-fs-on-backup)" in said[0]
    assert "machine: aw-bits= is an option of PVE 9" in said[1]
    assert release_refusals(values, Release("9.0")) == [] and needs_release(values)
    assert not needs_release({"agent": "1,freeze-fs-on-backup=0", "machine": "q35"})


def test_numbers_from_a_form_put_read_back_as_strings_compare_as_numbers() -> None:
    assert judge(decl(cores=2, sockets=1, onboot=True), vm(cores="2", onboot="1")).drift == []


def test_hotplug_is_a_set_of_features() -> None:
    # parse_hotplug_features: '1' is network,disk,usb; order is not meaning.
    assert judge(decl(hotplug="usb,disk,network"), vm()).drift == []
    assert judge(decl(hotplug="1"), vm(hotplug="network,disk,usb")).drift == []
    assert judge(decl(hotplug="network,disk,cpu"), vm()).put == {"hotplug": "network,disk,cpu"}
    with pytest.raises(DeclarationError, match="invalid hotplug feature 'gpu'"):
        decl(hotplug="network,gpu")


def test_agent_defaults_are_not_drift() -> None:
    # Agent.pm $agent_fmt: enabled is the default key; fstrim_cloned_disks off, type virtio.
    assert judge(decl(agent="enabled=1"), vm(agent="1")).drift == []
    assert judge(decl(agent="1,type=virtio"), vm(agent="1")).drift == []
    assert judge(decl(agent="1,fstrim_cloned_disks=1"), vm(agent="1")).put == {
        "agent": "1,fstrim_cloned_disks=1"
    }


# ============================================================================================
# Cloud-init: sshkeys URL-encoded, cipassword a secret
# ============================================================================================


def test_sshkeys_are_sent_as_encodeuricomponent_encodes_them() -> None:
    # pve-manager www/manager6/qemu/SSHKey.js: encodeURIComponent; pve-common's urlencoded format
    # takes ^[-%a-zA-Z0-9_.!~*'()]*$, so a space is %20 and '+' (base64) is %2B, never '+'.
    keys = f"{KEY}\nssh-rsa AAAAB3Nza+/= second@host"
    wire = decl(sshkeys=keys).config["sshkeys"]
    assert " " not in wire and "+" not in wire and "\n" not in wire
    assert "%20" in wire and "%2B" in wire and "%0A" in wire and "%40" in wire
    assert unquote(wire) == keys


def test_sshkeys_compare_as_the_keys_they_decode_to() -> None:
    # qemu-server decodes with URI::Escape::uri_unescape; qm set encodes with uri_escape, which
    # also escapes !*'() — another spelling of the same keys.
    qm_spelling = "".join(c if c.isalnum() or c in "-_.~" else f"%{ord(c):02X}" for c in KEY)
    assert judge(decl(sshkeys=KEY), vm(sshkeys=qm_spelling)).drift == []
    assert judge(decl(sshkeys=KEY + "\n"), vm(sshkeys=sshkeys_wire(KEY))).drift == []
    other = KEY.replace("ops@", "dev@")
    assert judge(decl(sshkeys=other), vm(sshkeys=sshkeys_wire(KEY))).put == {"sshkeys": sshkeys_wire(other)}


def test_an_encoded_declaration_is_kept_and_bad_keys_refused() -> None:
    assert decl(sshkeys=sshkeys_wire(KEY)).config["sshkeys"] == sshkeys_wire(KEY)
    assert sshkeys_text(sshkeys_wire(KEY)) == KEY
    with pytest.raises(DeclarationError, match="sshkeys: line 1 is not an OpenSSH public key"):
        decl(sshkeys="not a key")


def test_cipassword_is_written_when_the_vm_shows_none() -> None:
    change = judge(decl(cipassword=SECRET), vm())
    assert change.secrets == ["cipassword"] and change.drift == ["cipassword"]
    assert SECRET not in repr(change) and "cipassword" not in change.put


def test_a_set_cipassword_is_never_rewritten_without_a_new_serial() -> None:
    # vm_config answers a set password as **********: its value cannot be compared.
    live = vm(cipassword=schema.PASSWORD_MASK)
    ours = decl(cipassword=SECRET, cipassword_serial=1)
    assert judge(decl(cipassword="another-one", cipassword_serial=1), live, ours=ours).drift == []
    assert judge(decl(cipassword="another-one"), live).drift == []  # adopted: nothing recorded


def test_a_bumped_serial_writes_the_password_again() -> None:
    live = vm(cipassword=schema.PASSWORD_MASK)
    ours = decl(cipassword=SECRET, cipassword_serial=1)
    change = judge(decl(cipassword="another-one", cipassword_serial=2), live, ours=ours)
    assert change.secrets == ["cipassword"]


def test_cipassword_never_reaches_a_repr_a_stored_row_or_a_change_view() -> None:
    declared = decl(cipassword=SECRET, cipassword_serial=3, name="web")
    assert SECRET not in repr(declared)
    assert SECRET not in str(declared.stored()) and declared.stored()["cipassword_serial"] == 3
    assert SECRET not in str(key_change("cipassword", schema.PASSWORD_MASK, SECRET))
    assert key_change("cipassword", None, SECRET) == {"old": "unset", "new": "set"}


def test_a_bad_secret_is_refused_without_repeating_it() -> None:
    with pytest.raises(DeclarationError) as caught:
        decl(cipassword="line\nbreak-secret")
    assert "break-secret" not in str(caught.value)


# ============================================================================================
# Root-only and privileged keys
# ============================================================================================


def test_args_is_a_root_write_with_the_qm_set_command() -> None:
    # $check_vm_modify_config_perm: "catches args, lock, etc." -> only root can set 'args' config:
    # written through the root lane, and without one refused with the qm set to run (guest.lane.route).
    change = judge(decl(args="-device foo"), vm())
    assert change.put == {"args": "-device foo"} and change.refuse == []
    assert "qm set 150 --args '-device foo'" in change.root["args"] and "node pve1" in change.root["args"]


def test_a_non_mapped_pci_device_is_a_root_write_and_a_mapped_one_names_mapping_use() -> None:
    # check_hostpci_perm: host= -> "only root can set 'hostpci0' config for non-mapped devices";
    # mapping= -> Mapping.Use on /mapping/pci/<id>, with the token.
    rooted = judge(decl(hostpci0="0000:01:00.0,pcie=1"), vm())
    assert rooted.put == {"hostpci0": "0000:01:00.0,pcie=1"} and rooted.refuse == []
    assert "qm set 150 --hostpci0" in rooted.root["hostpci0"]
    mapped = judge(decl(hostpci0="mapping=gpu1,pcie=1"), vm())
    assert mapped.put == {"hostpci0": "mapping=gpu1,pcie=1"} and mapped.refuse == [] and mapped.root == {}
    assert mapped.uses == ["Mapping.Use on /mapping/pci/gpu1"]
    # raise_param_exc: "only root@pam can set 'romfile' option".
    assert "romfile" in judge(decl(hostpci0="mapping=gpu1,romfile=vbios.bin"), vm()).root["hostpci0"]


def test_a_host_device_replaced_by_a_mapping_is_root_s_too() -> None:
    # update_vm_api checks the old value too (check_hostpci_perm on $oldvalue, check_usb_perm on
    # $conf->{$opt}), and deleting one (check_usb_perm on $val).
    swapped = judge(decl(usb0="mapping=stick"), vm(usb0="host=1234:5678"))
    assert swapped.root and swapped.put == {"usb0": "mapping=stick"}
    dropped = judge(decl(usb0=""), vm(usb0="host=1234:5678"))
    assert dropped.clear == ["usb0"] and "qm set 150 --delete usb0" in dropped.root["usb0"]


def test_usb_spice_is_the_token_s_a_host_device_a_root_write_a_mapping_named() -> None:
    # check_usb_perm.
    spice = judge(decl(usb0="spice"), vm())
    assert spice.put == {"usb0": "spice"} and spice.root == {}
    assert "qm set 150 --usb0" in judge(decl(usb0="host=1234:5678"), vm()).root["usb0"]
    assert judge(decl(usb0="mapping=stick"), vm()).uses == ["Mapping.Use on /mapping/usb/stick"]


def test_a_serial_socket_is_the_token_s_a_host_serial_a_root_write() -> None:
    # $check_vm_create_serial_perm / update_vm: "only root can modify 'serialN' config for real devices".
    assert judge(decl(serial0="socket"), vm()).put == {"serial0": "socket"}
    assert "qm set 150 --serial0 '/dev/ttyS0'" in judge(decl(serial0="/dev/ttyS0"), vm()).root["serial0"]


def test_root_keys_at_create_go_through_the_lane_after_the_token_s_create() -> None:
    # create_vm: $check_vm_modify_config_perm and check_vm_create_hostpci_perm over its form. The
    # token's create leaves them out; the lane writes them after it, or route refuses them with
    # these sentences (both ways by hand: qm create as root and adopt, or qm set after).
    declared = decl(args="-device foo", hostpci0="0000:01:00.0", scsi0="local-lvm:32")
    assert create_refusals(declared) == []
    root = create_root(declared)
    assert sorted(root) == ["args", "hostpci0"]
    assert all("adopt: true" in reason and "qm create 150" in reason for reason in root.values())
    form = create_form(declared)
    assert "args" not in form and "hostpci0" not in form and form["scsi0"] == "local-lvm:32"


def test_root_keys_onto_a_clone_stay_refused_at_create() -> None:
    # A clone's declaration is written onto the clone (guest.apply.written_onto), not through a lane.
    reasons = create_refusals(decl(clone=9000, args="-device foo"))
    assert create_root(decl(clone=9000, args="-device foo")) == {}
    assert len(reasons) == 1 and "qm create 150" in reasons[0]


def test_unchanged_root_only_values_are_not_refused() -> None:
    # An adopted VM whose root set args: declaring the live value is no write.
    assert (
        judge(
            decl(args="-device foo", hostpci0="0000:01:00.0"), vm(args="-device foo", hostpci0="0000:01:00.0")
        ).refuse
        == []
    )


# ============================================================================================
# Identity
# ============================================================================================


def test_a_startup_refusal_names_sys_modify_and_the_qm_set_to_run() -> None:
    # API2/Qemu.pm $check_vm_modify_config_perm: `if ($opt eq 'startup') { check_full("/", ['Sys.Modify']) }`.
    said = startup_refusal(decl(startup="order=2,up=30"), "the provision token x@pve!y")
    assert "Sys.Modify on /" in said and "the provision token x@pve!y does not hold it" in said
    assert "`qm set 150 --startup 'order=2,up=30'` on pve1 as root@pam" in said
    assert "qm set 150 --delete startup" in startup_refusal(decl(startup=""), "it")


def test_identity_refusals() -> None:
    declared = parse_declaration("web", vmid=151, node="pve1", target="homelab", config={"clone": 9000})
    reasons = identity_refusals(declared, {"vmid": 150, "clone": 9001, "node": "pve1"})
    assert len(reasons) == 2 and "vmid: 150 -> 151" in reasons[0] and "clone: 9001 -> 9000" in reasons[1]
    assert identity_refusals(declared, None) == []


def test_a_live_template_is_not_written() -> None:
    assert "is a template" in live_refusals(decl(), vm(template=1))[0]
    assert live_refusals(decl(), vm()) == []


def test_a_clone_source_must_be_a_template() -> None:
    declared = decl(clone=9000)
    assert clone_source_refusals(declared, {"template": 1}) == []
    assert "is not a template" in clone_source_refusals(declared, {"name": "vm"})[0]
    assert "does not exist" in clone_source_refusals(declared, None)[0]


def test_clone_options_are_checked() -> None:
    with pytest.raises(DeclarationError, match="storage: a linked clone"):
        decl(clone=9000, full=False, storage="local-lvm")
    # clone_vm: full defaults to !is_template, so a template's clone without full: true is linked
    # and PVE dies "parameter 'storage' not allowed for linked clones".
    with pytest.raises(DeclarationError, match="storage: a linked clone"):
        decl(clone=9000, storage="local-lvm")
    assert decl(clone=9000, full=True, storage="local-lvm").storage == "local-lvm"
    with pytest.raises(DeclarationError, match="full: only a create by clone"):
        decl(full=True)


# ============================================================================================
# Create forms
# ============================================================================================


def test_create_form_and_refusals() -> None:
    declared = decl(name="web", memory=2048, scsi0="local-lvm:32", net0="virtio,bridge=vmbr0", pool="web")
    assert create_refusals(declared) == []
    assert create_form(declared) == {
        "vmid": "150",
        "memory": "2048",
        "name": "web",
        "net0": "virtio,bridge=vmbr0",
        "scsi0": "local-lvm:32",
        "pool": "web",
    }
    attach = create_refusals(decl(scsi0="local-lvm:vm-150-disk-0"))
    assert "a volume of this VM" in attach[0]


@pytest.mark.parametrize(
    ("value", "full"), [(True, True), ("1", True), (1, True), ("yes", True), ("off", False), ("false", False)]
)
def test_full_takes_pves_boolean_spellings(value: object, full: bool) -> None:
    # qemu-server API2/Qemu.pm clone_vm's full is a PVE boolean (pve-common parse_boolean).
    storage = {"storage": "local-lvm"} if full else {}  # a linked clone takes no storage
    assert decl(clone=9000, full=value, **storage).full is full


@pytest.mark.parametrize("value", ["n", "2", None])
def test_full_refuses_what_pve_would_not_read_as_a_boolean(value: object) -> None:
    with pytest.raises(DeclarationError, match="full: expected a boolean as PVE spells it"):
        decl(clone=9000, full=value)


def test_clone_form() -> None:
    declared = decl(clone=9000, full=True, storage="local-lvm", name="web", pool="web")
    assert clone_form(declared, "pve1") == {
        "newid": "150",
        "name": "web",
        "full": "1",
        "storage": "local-lvm",
        "pool": "web",
    }
    assert clone_form(declared, "pve2")["target"] == "pve1"
    assert declared.stored()["clone"] == 9000


# ============================================================================================
# Pending: the hotplug option decides what applies live
# ============================================================================================


@pytest.mark.parametrize(
    ("key", "old", "new", "hotplug", "live"),
    [
        ("name", "a", "b", None, True),  # $fast_plug_option
        ("ciuser", "a", "b", None, True),  # cloud-init keys are fast-plug
        ("cores", "1", "2", None, False),  # not hot-pluggable
        ("memory", "2048", "4096", None, False),  # default hotplug has no memory
        ("memory", "2048", "4096", "network,disk,memory", True),
        (
            "net0",
            NIC,
            NIC.replace("tag=10", "tag=20"),
            "0",
            True,
        ),  # vmconfig_update_net: tag re-plugs the tap
        ("net0", NIC, NIC.replace("virtio=", "e1000="), "0", False),  # a model change needs hotplug network
        ("net0", NIC, NIC.replace("virtio=", "e1000="), None, True),
        ("net1", None, "virtio,bridge=vmbr0", "disk", False),
        ("scsi1", None, "local-lvm:8", None, True),  # a new scsi disk with the disk feature
        ("sata1", None, "local-lvm:8", None, False),  # never a new sata/ide disk
        ("efidisk0", None, "local-lvm:1,efitype=4m", None, False),
        ("scsi0", DISK, DISK.replace("discard=on", "discard=ignore"), None, False),  # cold option
        ("ide2", "none,media=cdrom", "local:iso/a.iso,media=cdrom", "0", True),  # medium change
        ("hotplug", "network,disk,usb", "network,disk,cpu", None, False),
        ("balloon", "1024", "2048", None, True),
        ("balloon", "0", "2048", None, False),  # turning ballooning on
    ],
)
def test_applies_live(key: str, old: str | None, new: str, hotplug: str | None, live: bool) -> None:
    # vmconfig_hotplug_pending with the VM's hotplug (default network,disk,usb).
    from salt_proxmox.qemu.drives import drift_changed
    from salt_proxmox.qemu.judge import net_changed

    changed = frozenset()
    if old is not None and schema.family_of(key) == "net":
        changed = net_changed(new, old)
    elif old is not None and schema.is_drive(key):
        changed = drift_changed(new, old)
    assert applies_live(key, False, old, new, hotplug, changed) is live


def test_ipconfig_applies_at_once_as_every_cloud_init_key() -> None:
    # QemuServer.pm: `for my $opt (keys %$confdesc_cloudinit) { $fast_plug_option->{$opt} = 1 }`, and
    # $confdesc_cloudinit holds ipconfigN.
    assert applies_live("ipconfig0", False, "ip=dhcp", "ip=10.0.0.5/24,gw=10.0.0.1", "0") is True
    assert applies_live("ipconfig1", True, "ip=dhcp", None, "0") is True


@pytest.mark.parametrize(
    ("hotplug", "ostype", "machine", "live"),
    [
        (None, "l26", None, True),  # usb feature (default), Linux, the node's QEMU
        (None, "win11", "pc-q35-10.0+pve1", True),  # windows_version 11 > 7
        (None, "win7", None, False),  # windows_version 7 is not > 7
        (None, "other", None, False),  # neither l26 nor Windows
        (None, None, None, False),  # `defined($ostype)`: an unset ostype is neither
        (None, "l26", "pc-i440fx-6.2", False),  # min_version($version, 7, 1)
        ("network,disk", "l26", None, False),  # no usb feature
    ],
)
def test_usb_hot_plug_follows_ostype_and_machine(hotplug, ostype, machine, live: bool) -> None:
    # QemuServer.pm vmconfig_hotplug_pending $is_usb_hotplug_supported: `$hotplug_features->{usb} &&
    # min_version($version, 7, 1) && defined($ostype) && ($ostype eq 'l26' || windows_version($ostype) > 7)`.
    got = applies_live("usb0", False, None, "spice", hotplug, ostype=ostype, machine=machine)
    assert got is live
    # tablet needs the feature alone.
    assert applies_live("tablet", False, "1", "0", hotplug) is (hotplug is None)


def test_split_by_effect_on_a_running_vm() -> None:
    config = GuestConfig(current=vm(cores=1, name="a", net0=NIC), digest="0" * 40)
    found = judge_guest(QEMU, decl(cores=2, name="b", net0="virtio,bridge=vmbr0,firewall=1,tag=20"), config)
    assert split_by_effect(QEMU, found, config, running=True) == (["name", "net0"], ["cores"])
    assert split_by_effect(QEMU, found, config, running=False) == (["cores", "name", "net0"], [])


def test_a_cipassword_written_to_a_running_vm_takes_effect_at_once() -> None:
    # qemu-server QemuServer.pm: $fast_plug_option takes every $confdesc_cloudinit key, cipassword
    # among them, so vmconfig_hotplug_pending writes it at once; the plan places it with the keys in
    # effect at once, never in neither list. Its value is never looked at.
    config = GuestConfig(current=vm(cores=1), digest="0" * 40)
    found = judge_guest(QEMU, decl(cores=2, cipassword=SECRET), config)
    assert found.change.secrets == ["cipassword"]
    assert split_by_effect(QEMU, found, config, running=True) == (["cipassword"], ["cores"])
    assert split_by_effect(QEMU, found, config, running=False) == (["cores", "cipassword"], [])


# ============================================================================================
# Unknown keys and bad values
# ============================================================================================


def test_unknown_keys_are_refused_by_name() -> None:
    with pytest.raises(DeclarationError, match="hostname: not a VM config key"):
        decl(hostname="web")


def test_a_live_value_that_does_not_parse_is_drift_with_a_refusal() -> None:
    change = judge(decl(net0="virtio,bridge=vmbr0"), vm(net0="garbage=,=x"))
    assert change.put == {} and "cannot be read" in change.refuse[0]


def test_the_gib_of_a_new_efidisk_or_tpmstate_is_ignored_as_pve_ignores_it() -> None:
    # Drive.pm $efidisk_desc / $tpmstate_desc: "SIZE_IN_GiB is ignored here" — create_disks copies the
    # EFI vars template (528K for efitype=4m) or allocates 4 MiB of TPM state, so the live size is
    # never a grow to plan, and another storage is still a move.
    declared = decl(
        efidisk0="local-lvm:1,efitype=4m,pre-enrolled-keys=1", tpmstate0="local-lvm:1,version=v2.0"
    )
    live = vm(
        efidisk0="local-lvm:vm-150-disk-1,efitype=4m,pre-enrolled-keys=1,size=528K",
        tpmstate0="local-lvm:vm-150-disk-2,size=4M,version=v2.0",
    )
    assert verdict(judge(declared, live)) == ({}, [], [], [])
    moved = judge(declared, {**live, "tpmstate0": "ceph:vm-150-disk-2,size=4M,version=v2.0"})
    assert moved.resize == [] and "qm disk move" in moved.refuse[0]


def test_the_clone_a_plan_judges_is_the_template_with_its_disks_where_clone_vm_puts_them() -> None:
    # qemu-server API2/Qemu.pm clone_vm: unusedN and template not copied, a new MAC per NIC, a
    # CD-ROM copied; clone_disk: a full clone with storage copies every disk and the cloud-init
    # drive to it (format: the target storage's), a linked clone keeps the template's storage.
    from salt_proxmox.qemu.clone import cloned_config

    template = vm(
        template=1,
        name="tpl",
        scsi0="local-lvm:base-9000-disk-0,iothread=1,size=3G",
        virtio1="local:9000/base-9000-disk-1.qcow2,format=qcow2,size=1G",
        ide0="local-lvm:vm-9000-cloudinit,media=cdrom",
        ide2="local:iso/debian.iso,media=cdrom",
        unused0="local-lvm:vm-9000-disk-7",
        net0=NIC,
    )
    full = parse_declaration(
        "app", vmid=151, node="pve1", target="homelab", config={"clone": 9000, "full": True, "storage": "zfs"}
    )
    made = cloned_config(full, template)
    assert "template" not in made and "unused0" not in made and made["name"] == "Copy-of-VM-tpl"
    assert made["scsi0"].startswith("zfs:vm-151-disk-") and made["scsi0"].endswith("iothread=1,size=3G")
    assert made["virtio1"].startswith("zfs:") and "format=" not in made["virtio1"]
    assert made["ide0"] == "zfs:vm-151-cloudinit,media=cdrom"
    assert made["ide2"] == "local:iso/debian.iso,media=cdrom"
    assert parse_net(made["net0"]).get("macaddr") is None
    linked = parse_declaration(
        "app", vmid=151, node="pve1", target="homelab", config={"clone": 9000, "name": "app"}
    )
    made = cloned_config(linked, template)
    assert made["scsi0"].startswith("local-lvm:") and made["name"] == "app"
    assert "format=qcow2" in made["virtio1"]


def test_a_create_from_scratch_sends_cipassword_only_in_the_config_write_after_it() -> None:
    """qemu-server ``API2/Qemu.pm`` ``create_vm`` writes its form as sent (``$conf = $param``,
    ``write_config``): a ``cipassword`` there would stay in clear in ``/etc/pve``. Only
    ``update_vm_api`` hashes it (``PVE::Tools::encrypt_pw``), so the create leaves it out and a
    ``POST …/config`` with the digest the create left carries it."""
    from types import SimpleNamespace

    from salt_proxmox.qemu.family import create

    reads: list[tuple[str, str, object]] = []

    def request(method, path, credential, params=None):
        reads.append((method, path, params))
        return {"digest": "d1gest", "cipassword": "**********"}

    ctx = SimpleNamespace(client=SimpleNamespace(request=request))
    declared = parse_declaration(
        "web", vmid=VMID, node="pve1", target="homelab", config={"name": "web", "cipassword": "s3cret-pw"}
    )
    steps = create(ctx, declared, lambda: "provision")  # type: ignore[arg-type]
    first = next(steps)
    assert (first.method, first.path) == ("POST", "nodes/pve1/qemu") and "cipassword" not in first.form
    assert reads == [], "nothing read before the create ran"
    second = next(steps)
    assert (second.method, second.path) == ("POST", f"nodes/pve1/qemu/{VMID}/config")
    assert dict(second.form) == {"cipassword": "s3cret-pw", "digest": "d1gest"}
    assert "s3cret-pw" not in second.what
    assert next(steps, None) is None
    plain = create(ctx, decl(name="web"), lambda: "provision")  # type: ignore[arg-type]
    assert [step.path for step in plain] == ["nodes/pve1/qemu"], "no password, one create"


def test_clone_storage_refusals_follow_clone_vm_and_volume_has_feature() -> None:
    """qemu-server ``API2/Qemu.pm`` ``clone_vm``; pve-storage ``volume_has_feature`` 'clone' of a base
    volume: lvmthin/zfspool/rbd and file storages can, thick ``lvm`` and ``iscsi`` cannot; a
    cloud-init drive is always copied. ``Plugin.pm`` ``@SHARED_STORAGE`` types are shared."""
    from salt_proxmox.pve.facts import parse_storages
    from salt_proxmox.qemu.clone import clone_storage_refusals, linked_clone

    stores = parse_storages(
        [
            {"storage": "thin", "type": "lvmthin"},
            {"storage": "thick", "type": "lvm", "shared": 1},
            {"storage": "ceph", "type": "rbd"},
            {"storage": "nas", "type": "nfs"},
        ]
    )
    assert stores["ceph"]["shared"] and stores["nas"]["shared"] and stores["thick"]["shared"]
    assert not stores["thin"]["shared"]

    def refusals(config, **over):
        declared = parse_declaration(
            "app", vmid=151, node=over.pop("node", "pve1"), target="homelab", config={"clone": 9000, **over}
        )
        return clone_storage_refusals(declared, "pve1", config, stores)

    thick = {"scsi0": "thick:base-9000-disk-0,size=3G", "ide2": "thin:vm-9000-cloudinit,media=cdrom"}
    (reason,), _ = refusals(thick)
    assert "`Linked clone feature is not supported for 'thick:base-9000-disk-0' (scsi0)`" in reason
    assert refusals(thick, full=True) == ([], []), "a full clone copies"
    shared = {"scsi0": "ceph:base-9000-disk-0,size=3G", "ide2": "nas:iso/d.iso,media=cdrom"}
    assert refusals(shared, node="pve2") == ([], [])
    (reason,), _ = refusals({**shared, "ide0": "thin:vm-9000-cloudinit,media=cdrom"}, node="pve2")
    assert "(`can't clone VM to node 'pve2' (VM uses local storage)`)" in reason
    (reason,), _ = refusals(shared, node="pve2", full=True, storage="thin")
    assert "`can't clone to non-shared storage 'thin'`" in reason
    _, (note,) = refusals({"scsi0": "hidden:base-9000-disk-0"})
    assert "whether storage hidden can take this clone was not checked" in note
    assert linked_clone(parse_declaration("a", vmid=151, node="pve1", target="t", config={"clone": 9000}))


# ------------------------------------------------------------------------- which write is a task

RUNNING_VM = GuestConfig.settled(
    {"digest": "0" * 40, "ostype": "l26", "scsi0": DISK, "net0": NIC, "cores": 2, "tags": "web"}
)


@pytest.mark.parametrize(
    ("put", "clear", "running", "why"),
    [
        # create_disks allocates storage:GiB and storage:cloudinit, running or not.
        ({"scsi1": "local-lvm:4"}, [], False, "it allocates scsi1 (create_disks)"),
        ({"ide0": "local-lvm:cloudinit"}, [], None, "it allocates ide0 (create_disks)"),
        ({"efidisk0": "local-lvm:1,efitype=4m"}, [], False, "it allocates efidisk0 (create_disks)"),
        # vmconfig_hotplug_pending plugs a NIC (the default hotplug is network,disk,usb), a NIC's bridge
        # (vmconfig_update_net), cpulimit (the cgroup), a NIC's removal.
        ({"net1": "virtio,bridge=vmbr0"}, [], True, "it hot-plugs net1 into the running VM"),
        ({"net0": f"virtio={MAC},bridge=vmbr1,firewall=1,tag=10"}, [], True, "it hot-plugs net0"),
        ({"cpulimit": "2"}, [], True, "it hot-plugs cpulimit"),
        ({}, ["net0"], True, "it hot-plugs net0"),
        # $fast_plug_option keys and ipconfigN are written into the config only; cores, and memory
        # without the memory feature, wait ("skip non-hot-pluggable options"): simple changes.
        ({"tags": "web;db", "ipconfig0": "ip=dhcp", "description": "x"}, [], True, None),
        ({"cores": "4"}, [], True, None),
        ({"memory": "4096"}, [], True, None),
        # A stopped VM takes a write by vmconfig_apply_pending: nothing plugs.
        ({"net1": "virtio,bridge=vmbr0"}, [], False, None),
        # An existing volume is not allocated (create_disks allocates for $NEW_DISK_RE only).
        ({"scsi0": "local-lvm:vm-150-disk-0,discard=on,iothread=1,size=32G,ssd=1"}, [], False, None),
        ({"ide2": "local:iso/debian.iso,media=cdrom"}, [], False, None),
    ],
)
def test_a_vm_config_write_is_a_task_when_it_allocates_or_hot_plugs(put, clear, running, why) -> None:
    # API2/Qemu.pm update_vm (PUT, synchronous): "You should consider using the POST method instead
    # for any actions involving hotplug or storage allocation"; update_vm_async (POST) forks a task.
    said = config_task(put, clear, RUNNING_VM, running)
    if why is None:
        assert said is None, said
    else:
        assert said is not None and said.startswith(why), said


# ------------------------------------------------------------------- disk options left undeclared

TUNED = "local-lvm:vm-150-disk-0,cache=writeback,discard=on,iothread=1,serial=web0,size=32G,ssd=1"


def test_a_disk_option_the_declaration_leaves_out_keeps_its_live_value() -> None:
    # Top-level keys left out are never managed; a drive's sub-options likewise: update_vm_api stores a
    # drive value whole (Drive.pm parse_drive/print_drive), so they are carried, like a NIC's MAC.
    assert verdict(judge(decl(scsi0="local-lvm:32,discard=on,iothread=1"), vm(scsi0=TUNED))) == (
        {}, [], [], []
    )  # fmt: skip


def test_a_declared_disk_option_is_written_with_the_undeclared_live_ones() -> None:
    change = judge(decl(scsi0="local-lvm:32,discard=ignore"), vm(scsi0=TUNED))
    assert change.drift == ["scsi0"] and change.refuse == []
    kept = "cache=writeback,discard=ignore,iothread=1,serial=web0,size=32G,ssd=1"
    assert change.put == {"scsi0": f"local-lvm:vm-150-disk-0,{kept}"}
    # A grow keeps them too: the options are unchanged, only resize_vm runs.
    grown = judge(decl(scsi0="local-lvm:40"), vm(scsi0=TUNED))
    assert grown.put == {} and grown.resize == [("scsi0", "40G")], verdict(grown)


@pytest.mark.parametrize(
    ("option", "default"),
    # Drive.pm/Blockdev.pm: discard unset is ignore (detect_zeroes_cmdline_option), iothread and ssd are
    # tested for truth, backup absent is 1 (VZDump/QemuServer.pm), replicate defaults 1.
    [("discard", "ignore"), ("iothread", "0"), ("ssd", "0"), ("backup", "1")],
)
def test_an_option_is_removed_by_declaring_pve_s_default_for_it(option: str, default: str) -> None:
    live = "local-lvm:vm-150-disk-0,backup=0,discard=on,iothread=1,size=32G,ssd=1"
    change = judge(decl(scsi0=f"local-lvm:32,{option}={default}"), vm(scsi0=live))
    assert change.drift == ["scsi0"] and f"{option}={default}" in change.put["scsi0"].split(","), change.put
    written = change.put["scsi0"]
    assert verdict(judge(decl(scsi0=f"local-lvm:32,{option}={default}"), vm(scsi0=written))) == (
        {},
        [],
        [],
        [],
    )


def test_an_efi_disk_and_a_tpm_state_keep_the_options_the_declaration_leaves_out() -> None:
    # efitype, pre-enrolled-keys and version are the disk's since create_disks made it; left out they
    # are not managed, so not a change PVE would refuse (create_efidisk, prohibit_tpm_version_change).
    change = judge(
        decl(efidisk0="local-lvm:1", tpmstate0="local-lvm:1"),
        vm(
            efidisk0="local-lvm:vm-150-disk-1,efitype=4m,ms-cert=2023k,pre-enrolled-keys=1,size=528K",
            tpmstate0="local-lvm:vm-150-disk-2,size=4M,version=v2.0",
        ),
    )
    assert verdict(change) == ({}, [], [], []), verdict(change)


def test_a_carried_limit_pve_would_refuse_beside_a_declared_one_is_refused_naming_it() -> None:
    # Drive.pm parse_drive: mbps excludes mbps_rd. The live mbps_rd is kept, so declaring mbps alone
    # would send both; PVE answers "unable to parse drive options".
    live = "local-lvm:vm-150-disk-0,mbps_rd=50,size=32G"
    change = judge(decl(scsi0="local-lvm:32,mbps=100"), vm(scsi0=live))
    assert change.put == {} and change.drift == ["scsi0"]
    assert "the live mbps_rd=50 is kept" in change.refuse[0] and "mbps= excludes mbps_rd=" in change.refuse[0]
    settled = judge(decl(scsi0="local-lvm:32,mbps=100,mbps_rd=0"), vm(scsi0=live))
    assert settled.refuse == [] and settled.put == {
        "scsi0": "local-lvm:vm-150-disk-0,mbps=100,mbps_rd=0,size=32G"
    }


def test_a_clone_keeps_the_template_s_disk_options_the_declaration_leaves_out() -> None:
    # clone_vm/clone_disk copy the drive's options; the configure step writes the declared ones onto
    # the clone's volume and keeps the template's cache=writeback.
    from salt_proxmox.qemu.clone import cloned_config

    template = vm(
        template=1, name="tpl", scsi0="local-lvm:base-9000-disk-0,cache=writeback,iothread=1,size=3G"
    )
    declared = parse_declaration(
        "app",
        vmid=151,
        node="pve1",
        target="homelab",
        config={"clone": 9000, "full": True, "scsi0": "local-lvm:10,discard=on,iothread=1"},
    )
    change = judge(declared, cloned_config(declared, template))
    assert change.refuse == [] and change.resize == [("scsi0", "10G")]
    assert "cache=writeback" in change.put["scsi0"] and "discard=on" in change.put["scsi0"], change.put
