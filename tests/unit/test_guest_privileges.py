"""The privilege of each guest config key written or deleted, pinned against PVE's source per release
(``salt_proxmox/access/guest_keys.py`` through ``access.privileges.guest_needs``).

VM: qemu-server ``src/PVE/API2/Qemu.pm`` ``$check_vm_modify_config_perm`` and its option hashes, copied
here from ``stable-bookworm`` (qemu-server 8.4.10, PVE 8) and ``master`` (qemu-server 9.2.6, PVE 9);
``update_vm_api``'s ``$check_drive_perms``; ``$check_storage_access``. Container: pve-container
``src/PVE/LXC.pm`` ``check_ct_modify_config_perm`` (5.3.5 and 6.1.10: the same sub)."""

from __future__ import annotations

import pytest

from salt_proxmox.access import privileges

#: ``$cpuoptions``, ``$memoryoptions``, ``$hwtypeoptions``, ``$generaloptions``, ``$vmpoweroptions``,
#: ``$diskoptions`` of qemu-server 8.4 (stable-bookworm), as each hash lists its keys.
PVE8 = {
    "VM.Config.CPU": "cores cpu runningcpu cpulimit cpuunits numa smp sockets vcpus",
    "VM.Config.Memory": "memory balloon shares",
    "VM.Config.HWType": "acpi hotplug kvm machine runningmachine scsihw smbios1 tablet vga watchdog audio0 "
    "rng0",
    "VM.Config.Options": "agent autostart bios description keyboard localtime migrate_downtime migrate_speed "
    "name onboot ostype protection reboot startdate startup tdf template",
    "VM.PowerMgmt": "freeze",
    "VM.Config.Disk": "boot bootdisk vmstatestorage",
}
#: qemu-server 9.2 (master): ``allow-ksm`` joins ``$memoryoptions``; ``running-nets-host-mtu`` takes
#: VM.Config.Network beside ``netN``.
PVE9 = {
    **PVE8,
    "VM.Config.Memory": "memory balloon shares allow-ksm",
    "VM.Config.Network": "running-nets-host-mtu",
}
#: ``$confdesc`` keys in none of the hashes (and not checked by value): "only root can set '<key>' config".
ROOT_ONLY = (
    "affinity amd-sev arch args hookscript hugepages intel-tdx ivshmem keephugepages lock meta parent "
)
ROOT_ONLY += "snaptime spice_enhancements vmgenid parallel0"


def _vm(needs, vmid=150):
    return {(need.privileges, need.any) for need in needs if need.path == f"/vms/{vmid}"}


def _cases(table):
    return [(priv, key) for priv, keys in table.items() for key in keys.split()]


@pytest.mark.parametrize(("privilege", "key"), [*_cases(PVE8), ("VM.Config.CPU", "numa3")])
def test_a_vm_key_of_both_releases_needs_its_class(privilege, key):
    needs = privileges.guest_needs("qemu", 150, {key: "1"}, "update", dedicated=False)
    assert _vm(needs) == {((privilege,), False)}, needs


@pytest.mark.parametrize(("privilege", "key"), _cases(PVE9))
def test_a_vm_key_of_pve_9_needs_its_class_there(privilege, key):
    needs = privileges.guest_needs("qemu", 150, {key: "1"}, "update", dedicated=False, major=9)
    assert _vm(needs) == {((privilege,), False)}, needs


@pytest.mark.parametrize("key", ["allow-ksm", "running-nets-host-mtu"])
def test_a_key_pve_9_added_is_root_s_on_pve_8(key):
    # qemu-server 8.4 $check_vm_modify_config_perm: in no hash, so "only root can set '<key>' config".
    assert privileges.guest_needs("qemu", 150, {key: "1"}, "update", dedicated=False, major=8) == []


@pytest.mark.parametrize("key", ROOT_ONLY.split())
def test_a_key_in_no_hash_needs_nothing_here_since_only_root_may_set_it(key):
    # The family refuses these by name (qemu.schema.ROOT_ONLY, GENERATED); nothing a role could grant.
    assert privileges.guest_needs("qemu", 150, {key: "x"}, "update", dedicated=False) == []


def test_vmstate_needs_disk_and_power_management():
    # "the user needs Disk and PowerMgmt privileges to change the vmstate".
    needs = privileges.guest_needs("qemu", 150, {"vmstate": ""}, "update", live={"vmstate": "local:state"})
    assert _vm(needs) == {(("VM.Config.Disk", "VM.PowerMgmt"), False)}


@pytest.mark.parametrize("key", ["ciuser", "cipassword", "ipconfig0", "sshkeys", "nameserver", "cicustom"])
def test_a_cloud_init_key_written_or_deleted_needs_cloudinit_or_network(key):
    for value in ("x", ""):  # update_vm_api checks @delete with the same sub
        needs = privileges.guest_needs("qemu", 150, {key: value}, "update", live={key: "y"})
        assert _vm(needs) == {(("VM.Config.Cloudinit", "VM.Config.Network"), True)}


@pytest.mark.parametrize(
    "value",
    ["local-lvm:cloudinit", "local-lvm:vm-150-cloudinit", "local:150/vm-150-cloudinit.qcow2,media=cdrom"],
)
def test_a_cloud_init_drive_without_media_cdrom_is_a_cloud_init_drive(value):
    # QemuServer/Drive.pm drive_is_cloudinit: [:/](?:vm-\d+-)?cloudinit(\.$QEMU_FORMAT_RE)?$ on the volume;
    # $check_drive_perms: VM.Config.Cloudinit and VM.Config.CDROM; $check_storage_access: a
    # <storage>:cloudinit volume is "nothing to check" (no Datastore.AllocateSpace).
    needs = privileges.guest_needs("qemu", 150, {"ide2": value}, "update")
    assert _vm(needs) == {(("VM.Config.Cloudinit", "VM.Config.CDROM"), False)}, needs
    assert {need.path for need in needs} == {"/vms/150"}


def test_a_drive_replaced_or_deleted_is_checked_as_the_kind_it_was_too():
    # update_vm_api: "old drive" $check_drive_perms on $conf->{$opt}, then the new one; a deleted drive
    # on its current value.
    live = {"ide2": "local-lvm:vm-150-cloudinit,media=cdrom", "scsi1": "local-lvm:vm-150-disk-1,size=4G"}
    swapped = privileges.guest_needs(
        "qemu", 150, {"ide2": "local:iso/d.iso,media=cdrom"}, "update", live=live
    )
    assert _vm(swapped) == {
        (("VM.Config.Cloudinit", "VM.Config.CDROM"), False),
        (("VM.Config.CDROM",), False),
    }
    deleted = privileges.guest_needs("qemu", 150, {"ide2": "", "scsi1": ""}, "update", live=live)
    assert _vm(deleted) == {(("VM.Config.Cloudinit", "VM.Config.CDROM"), False), (("VM.Config.Disk",), False)}


def test_a_new_disk_needs_allocate_space_on_its_storage_and_a_cdrom_does_not():
    needs = privileges.guest_needs("qemu", 150, {"scsi1": "local-lvm:8,iothread=1"}, "update")
    assert {need.path: need.privileges for need in needs} == {
        "/vms/150": ("VM.Config.Disk",),
        "/storage/local-lvm": ("Datastore.AllocateSpace",),
    }
    cdrom = privileges.guest_needs("qemu", 150, {"ide2": "none,media=cdrom"}, "update")
    assert {need.path for need in cdrom} == {"/vms/150"}


def test_tags_usb_and_a_serial_socket_are_checked_by_value():
    # GuestHelpers.pm assert_tag_permissions: VM.Config.Options; check_usb_perm and a serial socket:
    # VM.Config.HWType; deleting unusedN: VM.Config.Disk.
    config = {"tags": "web", "usb0": "mapping=key", "serial0": "socket", "unused0": ""}
    needs = privileges.guest_needs("qemu", 150, config, "update", live={"unused0": "local-lvm:vm-150-disk-9"})
    assert {privs for privs, _ in _vm(needs)} == {
        ("VM.Config.Options",),
        ("VM.Config.HWType",),
        ("VM.Config.Disk",),
    }


def test_a_resize_needs_disk_and_allocate_space_on_the_volume_s_storage():
    # qemu-server resize_vm: VM.Config.Disk; Datastore.AllocateSpace on the volume's storage.
    live = {"scsi0": "local-lvm:vm-150-disk-0,size=4G"}
    needs = privileges.guest_needs("qemu", 150, {}, "update", live=live, resize=["scsi0"])
    assert {need.path: need.privileges for need in needs} == {
        "/vms/150": ("VM.Config.Disk",),
        "/storage/local-lvm": ("Datastore.AllocateSpace",),
    }


# ----------------------------------------------------------------------------------------- containers

#: check_ct_modify_config_perm's branches (the else: VM.Config.Options).
LXC = {
    "VM.Config.CPU": "cores cpuunits cpulimit",
    "VM.Config.Memory": "memory swap",
    "VM.Config.Network": "hostname nameserver searchdomain net0",
    "VM.Config.Options": "onboot ostype description startup arch cmode console tty protection timezone tags",
}


@pytest.mark.parametrize(("privilege", "key"), _cases(LXC))
def test_a_container_key_needs_its_branch(privilege, key):
    needs = privileges.guest_needs(
        "lxc", 151, {key: "name=eth0" if key == "net0" else "1"}, "update", dedicated=False
    )
    assert _vm(needs, 151) == {((privilege,), False)}


def test_a_mount_point_deleted_needs_disk_only_and_a_new_one_allocate_space():
    deleted = privileges.guest_needs(
        "lxc", 151, {"mp0": ""}, "update", live={"mp0": "local-zfs:subvol-151-disk-1"}
    )
    assert {need.path: need.privileges for need in deleted} == {"/vms/151": ("VM.Config.Disk",)}
    added = privileges.guest_needs("lxc", 151, {"mp1": "local-zfs:4,mp=/srv"}, "update")
    assert {need.path for need in added} == {"/vms/151", "/storage/local-zfs"}


@pytest.mark.parametrize(
    ("old", "new", "allocate"),
    [
        (None, "nesting=1", True),  # a new features with nesting alone
        ("nesting=1", None, True),  # deleting features that were nesting alone
        ("nesting=1,keyctl=1", None, False),  # root@pam's (other_changed): the family refuses it
        ("nesting=1", "nesting=0", True),
        ("keyctl=1", "keyctl=1,nesting=1", True),
        ("nesting=1,keyctl=1", "nesting=1,keyctl=0", False),  # keyctl changed: root@pam's
    ],
)
def test_features_need_vm_allocate_when_nesting_is_what_changes(old, new, allocate):
    config = {"features": new if new is not None else ""}
    needs = privileges.guest_needs("lxc", 151, config, "update", live={"features": old} if old else {})
    assert (("VM.Allocate",), False) in _vm(needs, 151) if allocate else _vm(needs, 151) == set()


def test_a_container_resize_needs_disk_options_and_allocate_space():
    # pve-container API2/LXC.pm resize_vm: VM.Config.Disk; check_ct_modify_config_perm of disk and size
    # (the else branch: VM.Config.Options); Datastore.AllocateSpace on the volume's storage.
    live = {"rootfs": "local-zfs:subvol-151-disk-0,size=8G"}
    needs = privileges.guest_needs("lxc", 151, {}, "update", live=live, resize=["rootfs"])
    assert {(need.path, need.privileges) for need in needs} == {
        ("/vms/151", ("VM.Config.Disk",)),
        ("/vms/151", ("VM.Config.Options",)),
        ("/storage/local-zfs", ("Datastore.AllocateSpace",)),
    }
