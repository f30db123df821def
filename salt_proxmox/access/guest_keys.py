"""The privileges PVE checks for one guest config key written (or deleted, ``delete=``), per family and
release: the key's class, and the checks the value makes (a drive's kind, a new volume's storage,
``features``). Plain ``(path, privileges, any, why)`` checks that ``access.privileges.guest_needs`` turns
into needs; SDN.Use on a NIC's bridge is ``guest.nics``'s.

VM (qemu-server ``src/PVE/API2/Qemu.pm``; 8: ``stable-bookworm``, 8.4.x; 9: ``master``, 9.2.x):

- ``$check_vm_modify_config_perm``, over the keys written and the keys deleted alike (``update_vm_api``
  calls it for ``@delete`` and for ``keys %$param``; ``create_vm`` for its keys): ``$cpuoptions`` and
  ``numaN`` VM.Config.CPU, ``$memoryoptions`` VM.Config.Memory, ``$hwtypeoptions`` VM.Config.HWType,
  ``$generaloptions`` VM.Config.Options (``startup`` Sys.Modify on ``/`` too, the family's own check),
  ``$vmpoweroptions`` VM.PowerMgmt, ``$diskoptions`` VM.Config.Disk, ``netN`` (9: and
  ``running-nets-host-mtu``) VM.Config.Network, ``$cloudinitoptions`` and ``ipconfigN``
  VM.Config.Cloudinit or VM.Config.Network, ``vmstate`` VM.Config.Disk and VM.PowerMgmt; drives,
  ``cdrom``, ``unusedN``/``serialN``/``usbN``/``hostpciN``/``virtiofsN`` and ``tags`` are checked by
  value; every other key "only root can set '<key>' config". 9 adds ``allow-ksm`` to
  ``$memoryoptions`` and ``running-nets-host-mtu``; 8 knows neither key (PVE 8's schema refuses it).
- ``update_vm_api``'s ``$check_drive_perms``, for the old value of a drive changed or deleted and for
  the new one: a cloud-init drive (``QemuServer/Drive.pm`` ``drive_is_cloudinit``: the volume ends
  ``[:/](?:vm-\\d+-)?cloudinit(\\.fmt)?``, with or without ``media=cdrom``) VM.Config.Cloudinit and
  VM.Config.CDROM, another ``media=cdrom`` drive VM.Config.CDROM, any other VM.Config.Disk. ``create_vm``
  makes no such check (it calls ``$check_storage_access`` and ``$check_vm_modify_config_perm``, which
  skips drives: VM.Allocate covers them), so a create asks none of them.
- ``$check_storage_access`` (create and update): a new disk (``$NEW_DISK_RE``, ``<storage>:<GiB>``, not a
  CD-ROM) Datastore.AllocateSpace on ``/storage/<storage>``; a new cloud-init volume
  (``<storage>:cloudinit``) nothing; ``vmstatestorage`` Datastore.AllocateSpace on its storage.
- deleting ``unusedN`` VM.Config.Disk; ``serialN`` ``socket`` VM.Config.HWType (a real device is
  root@pam's); ``check_usb_perm``, a mapped ``check_hostpci_perm`` and ``check_rng_perm``
  VM.Config.HWType; ``check_dir_perm`` (``virtiofsN``) VM.Config.Disk; pve-guest-common
  ``GuestHelpers.pm`` ``assert_tag_permissions`` (``tags``) VM.Config.Options. Mapping.Use on
  ``/mapping/...`` is the family's own note (``qemu.judge.mapping_uses``).
- ``resize_vm``: VM.Config.Disk, and Datastore.AllocateSpace on the volume's storage.

Container (pve-container ``src/PVE/LXC.pm`` ``check_ct_modify_config_perm``, the same in 5.x for PVE 8
and 6.x for PVE 9; called by ``create_vm``, ``update_vm`` for the keys written and, with no new value,
for the keys deleted, and ``resize_vm`` with its ``disk`` and ``size``): ``cores``/``cpuunits``/
``cpulimit`` VM.Config.CPU, ``rootfs``/``mpN`` VM.Config.Disk (not deleted: a new volume
``<storage>:<GiB>`` Datastore.AllocateSpace on its storage), ``memory``/``swap`` VM.Config.Memory,
``netN``/``hostname``/``nameserver``/``searchdomain`` VM.Config.Network, ``features`` VM.Allocate when
``nesting`` is what changes (set or deleted; another feature is root@pam's, the family's refusal),
``tags`` VM.Config.Options (``assert_tag_permissions``), ``devN``/``hookscript`` root@pam's, every other
key (``resize_vm``'s ``disk`` and ``size`` too) VM.Config.Options.
"""

from __future__ import annotations

import re

from salt_proxmox.wire.propstring import flag, pairs

#: One check: ``(path, privileges, any, why)``: all of ``privileges`` on ``path`` (one, when ``any``).
Check = tuple[str, tuple[str, ...], bool, str]

_CPU = ("cores", "cpu", "runningcpu", "cpulimit", "cpuunits", "numa", "smp", "sockets", "vcpus")
_MEMORY = ("memory", "balloon", "shares")
_HWTYPE = ("acpi", "hotplug", "kvm", "machine", "runningmachine", "scsihw", "smbios1", "tablet", "vga",
           "watchdog", "audio0", "rng0")  # fmt: skip
_GENERAL = ("agent", "autostart", "bios", "description", "keyboard", "localtime", "migrate_downtime",
            "migrate_speed", "name", "onboot", "ostype", "protection", "reboot", "startdate", "startup",
            "tdf", "template")  # fmt: skip
#: ``$cloudinitoptions`` (8 and 9 alike); with ``ipconfigN``: VM.Config.Cloudinit or VM.Config.Network.
QEMU_CLOUDINIT = ("cicustom", "cipassword", "citype", "ciuser", "ciupgrade", "nameserver", "searchdomain",
                  "sshkeys")  # fmt: skip
_CLOUDINIT_OR_NETWORK = ("VM.Config.Cloudinit", "VM.Config.Network")


def _classes(*extra: tuple[str, str]) -> dict[str, tuple[str, ...]]:
    table = {
        **dict.fromkeys(_CPU, ("VM.Config.CPU",)),
        **dict.fromkeys(_MEMORY, ("VM.Config.Memory",)),
        **dict.fromkeys(_HWTYPE, ("VM.Config.HWType",)),
        **dict.fromkeys(_GENERAL, ("VM.Config.Options",)),
        "freeze": ("VM.PowerMgmt",),  # $vmpoweroptions
        **dict.fromkeys(("boot", "bootdisk", "vmstatestorage"), ("VM.Config.Disk",)),  # $diskoptions
        "vmstate": ("VM.Config.Disk", "VM.PowerMgmt"),
    }
    table.update((key, (privilege,)) for key, privilege in extra)
    return table


#: ``$check_vm_modify_config_perm``'s class of each scalar key, by PVE major release (``numaN``, ``netN``,
#: ``ipconfigN`` and the cloud-init keys are matched by ``qemu_key``).
QEMU_KEYS: dict[int, dict[str, tuple[str, ...]]] = {
    8: _classes(),
    9: _classes(("allow-ksm", "VM.Config.Memory"), ("running-nets-host-mtu", "VM.Config.Network")),
}
#: Keys ``$check_vm_modify_config_perm`` skips: checked by their value (``qemu_checks``).
_BY_VALUE = re.compile(r"^(?:unused|serial|usb|hostpci|virtiofs)\d+$|^(?:cdrom|tags)$")
_DRIVE = re.compile(r"^(?:ide|sata|scsi|virtio)\d+$|^(?:efidisk0|tpmstate0)$")
#: ``QemuServer/Drive.pm`` ``drive_is_cloudinit`` (``$QEMU_FORMAT_RE``), on the drive's volume.
_CLOUDINIT = re.compile(r"[:/](?:vm-\d+-)?cloudinit(?:\.(?:raw|qcow|qcow2|qed|vmdk|cloop))?$")
#: ``QemuServer/Drive.pm`` ``$NEW_DISK_RE`` (a storage named) and pve-container ``LXC.pm`` ``$NEW_DISK_RE``.
_NEW_DISK = re.compile(r"^([^/:\s]+):(\d+(?:\.\d+)?)$")


def qemu_key(key: str, major: int = 9) -> tuple[tuple[str, ...], bool] | None:
    """``$check_vm_modify_config_perm`` for ``key`` on PVE ``major``: ``(privileges, any)`` on
    ``/vms/<vmid>``; ``((), False)`` for a key it leaves to its value's checks (drives, ``cdrom``,
    ``tags``, ``unusedN``...); None for a key only root@pam may set."""
    if _DRIVE.match(key) or _BY_VALUE.match(key):
        return (), False
    found = QEMU_KEYS[major if major in QEMU_KEYS else max(QEMU_KEYS)].get(key)
    if found:
        return found, False
    if re.match(r"^numa\d+$", key):
        return ("VM.Config.CPU",), False
    if re.match(r"^net\d+$", key):
        return ("VM.Config.Network",), False
    if key in QEMU_CLOUDINIT or re.match(r"^ipconfig\d+$", key):
        return _CLOUDINIT_OR_NETWORK, True
    return None


def differs_by_release(keys: object) -> bool:
    """True when one of ``keys`` has another class on PVE 8 than on 9 (the release must be read)."""
    return any(QEMU_KEYS[8].get(key) != QEMU_KEYS[9].get(key) for key in keys)  # type: ignore[attr-defined]


def volume_of(value: str | None) -> str:
    """The volume of a drive or mount point value (its default key, or ``volume=``/``file=``)."""
    options = dict(pairs(value or "", "volume"))
    return options.get("volume") or options.get("file") or ""


def drive_kind(value: str) -> str:
    """``cloudinit``, ``cdrom`` or ``disk``: the kind ``$check_drive_perms`` checks a drive value as
    (``drive_is_cloudinit`` first, then ``drive_is_cdrom``: ``media=cdrom``)."""
    if _CLOUDINIT.search(volume_of(value)):
        return "cloudinit"
    return "cdrom" if dict(pairs(value, "volume")).get("media") == "cdrom" else "disk"


_DRIVE_PRIVILEGES = {
    "cloudinit": ("VM.Config.Cloudinit", "VM.Config.CDROM"),
    "cdrom": ("VM.Config.CDROM",),
    "disk": ("VM.Config.Disk",),
}


def new_volume_storage(value: str | None) -> str | None:
    """The storage a new volume (``local-lvm:8``) would be allocated on, or None (an existing volume, a
    cloud-init drive, none)."""
    found = _NEW_DISK.match(volume_of(value))
    return found.group(1) if found else None


def qemu_checks(
    vmid: int, key: str, new: str | None, old: str | None, action: str, major: int = 9
) -> list[Check] | None:
    """What writing ``new`` to VM ``vmid``'s ``key`` (None: ``delete=``), whose value is ``old`` (None:
    unset), needs; ``action``: ``create`` or ``update``. None when only root@pam may make it (the
    family refuses it by name). See the module docstring for each rule's source."""
    vm, where = f"/vms/{vmid}", f"{key} of VM {vmid} (qemu-server API2/Qemu.pm"
    found = qemu_key(key, major)
    if found is None:
        return None
    privileges, anyof = found
    checks: list[Check] = (
        [(vm, privileges, anyof, f"{where} $check_vm_modify_config_perm)")] if privileges else []
    )
    values = [value for value in (old if action == "update" else None, new) if value]
    if _DRIVE.match(key) or key == "cdrom":
        # create_vm makes no per-drive check: VM.Allocate covers the drives a create sends.
        for value in values if action == "update" else ():
            kind = drive_kind(value if key != "cdrom" else f"{value},media=cdrom")
            checks.append(
                (vm, _DRIVE_PRIVILEGES[kind], False, f"{where} $check_drive_perms: a {kind} drive)")
            )
        storage = new_volume_storage(new) if new and drive_kind(new) == "disk" else None
        if storage:
            checks.append(
                (f"/storage/{storage}", ("Datastore.AllocateSpace",), False,
                 f"a new volume on {storage} for {where} $check_storage_access)")
            )  # fmt: skip
    elif key == "vmstatestorage" and new:
        checks.append(
            (f"/storage/{new}", ("Datastore.AllocateSpace",), False, f"{where} $check_storage_access)")
        )
    elif key.startswith("unused") and new is None:
        checks.append((vm, ("VM.Config.Disk",), False, f"{where} update_vm_api: deleting an unused disk)"))
    elif key.startswith("serial"):
        if all(value == "socket" for value in values):
            checks.append((vm, ("VM.Config.HWType",), False, f"{where} a serial socket)"))
    elif key.startswith(("usb", "hostpci")):
        checks.append((vm, ("VM.Config.HWType",), False, f"{where} check_usb_perm/check_hostpci_perm)"))
    elif key.startswith("virtiofs"):
        checks.append((vm, ("VM.Config.Disk",), False, f"{where} check_dir_perm)"))
    elif key == "tags":
        checks.append((vm, ("VM.Config.Options",), False, "tags (pve-guest-common assert_tag_permissions)"))
    return checks


def _nesting(value: str | None) -> str:
    """``nesting`` of a ``features`` value as ``check_ct_modify_config_perm`` compares it: ``''`` unset."""
    found = dict(pairs(value or "")).get("nesting")
    return "" if found is None else flag(found)


def lxc_checks(vmid: int, key: str, new: str | None, old: str | None) -> list[Check] | None:
    """What writing ``new`` to container ``vmid``'s ``key`` (None: ``delete=``), whose value is ``old``
    (None: unset, or a create), needs; None when only root@pam may make it (``devN``, ``hookscript``:
    the family refuses it by name). A ``features`` change of another feature than ``nesting`` is
    root@pam's too; the family's judge refuses it (``lxc.judge.features_need_root``)."""
    vm, where = f"/vms/{vmid}", f"{key} of CT {vmid} (pve-container LXC.pm check_ct_modify_config_perm)"
    if re.match(r"^dev\d+$", key) or key == "hookscript":
        return None
    if key in ("cores", "cpuunits", "cpulimit"):
        return [(vm, ("VM.Config.CPU",), False, where)]
    if key in ("memory", "swap"):
        return [(vm, ("VM.Config.Memory",), False, where)]
    if re.match(r"^net\d+$", key) or key in ("hostname", "nameserver", "searchdomain"):
        return [(vm, ("VM.Config.Network",), False, where)]
    if key == "rootfs" or re.match(r"^mp\d+$", key):
        checks: list[Check] = [(vm, ("VM.Config.Disk",), False, where)]
        storage = new_volume_storage(new) if new else None
        if storage:
            checks.append(
                (
                    f"/storage/{storage}",
                    ("Datastore.AllocateSpace",),
                    False,
                    f"a new volume on {storage} for {where}",
                )
            )
        return checks
    if key == "features":
        if new is None:
            old_keys = {name for name, _ in pairs(old or "")}
            changed = old_keys == {"nesting"}
        else:
            changed = (
                _nesting(new) != _nesting(old) if old else {name for name, _ in pairs(new)} == {"nesting"}
            )
        return (
            [(vm, ("VM.Allocate",), False, f"features nesting of CT {vmid} (check_ct_modify_config_perm)")]
            if changed
            else []
        )
    return [
        (vm, ("VM.Config.Options",), False, where if key != "tags" else f"{where}, assert_tag_permissions")
    ]


def resize_checks(kind: str, vmid: int, key: str, volume_storage: str | None) -> list[Check]:
    """What ``PUT …/resize`` of ``key`` needs: VM.Config.Disk on ``/vms/<vmid>`` (qemu-server and
    pve-container ``resize_vm`` ``permissions``), Datastore.AllocateSpace on the volume's storage, and
    for a container VM.Config.Options (``check_ct_modify_config_perm`` of ``disk`` and ``size``)."""
    vm, label = f"/vms/{vmid}", f"{'VM' if kind == 'qemu' else 'CT'} {vmid}"
    source = "qemu-server API2/Qemu.pm resize_vm" if kind == "qemu" else "pve-container API2/LXC.pm resize_vm"
    checks: list[Check] = [(vm, ("VM.Config.Disk",), False, f"resize {key} of {label} ({source})")]
    if kind == "lxc":
        checks.append(
            (vm, ("VM.Config.Options",), False, f"resize {key} of {label} (check_ct_modify_config_perm)")
        )
    if volume_storage:
        checks.append(
            (
                f"/storage/{volume_storage}",
                ("Datastore.AllocateSpace",),
                False,
                f"resize {key} of {label} ({source})",
            )
        )
    return checks
