"""A VM's boot order: what PVE does to it by itself and what it refuses (pure).

qemu-server ``PVE/API2/Qemu.pm`` ``update_vm_api`` removes a deleted device from ``boot``'s
``order`` and appends a new CD-ROM to it, and refuses an order naming a device the VM will not have.
"""

from __future__ import annotations

from salt_proxmox.qemu import schema
from salt_proxmox.qemu.change import QemuChange
from salt_proxmox.qemu.props import QemuDeclaration, parse_drive


def boot_order_effects(
    decl: QemuDeclaration, change: QemuChange, drift: set[str], boot: str | None
) -> list[str]:
    """What PVE does to ``boot`` by itself when ``change`` is written onto a VM whose ``boot`` is
    ``boot``, made part of the plan; returns its plan lines and adjusts ``change`` (and ``drift``).

    qemu-server ``PVE/API2/Qemu.pm`` ``update_vm_api``, when ``boot`` has an ``order``: a deleted
    device is removed from it (before any written key, so a written ``boot`` wins), and a drive written
    as a CD-ROM (``drive_is_cdrom($drive, 1)``: ``media=cdrom``, not cloud-init) that the order does not
    name is appended to it ("append new CD drives to bootorder to mark them bootable"). Written keys
    are handled in Perl hash order, so a ``boot`` in the same write may come first and be overwritten
    by the append: the resulting order is not fixed. Hence, with a declared ``boot``: when the append
    alone gives the declared order, ``boot`` is not sent; otherwise it goes in a second write
    (``after``). Without a declared ``boot`` the order is PVE's: the plan says what it becomes.
    """
    order = schema.boot_devices(boot or "")
    if not order:
        return []
    removed = [key for key in change.clear if key in order]
    appended = [
        key
        for key, value in change.put.items()
        if schema.is_drive(key) and key not in order and _plain_cdrom(value)
    ]
    if not (removed or appended):
        return []
    result = [device for device in order if device not in removed] + appended
    becomes = f"order={';'.join(result)}"
    what = f"VM {decl.vmid} on {decl.node}"
    did = "; ".join(
        part
        for part in (
            f"removes {', '.join(removed)} from boot" if removed else "",
            f"appends the new CD-ROM {', '.join(appended)} to boot" if appended else "",
        )
        if part
    )
    declared = decl.config.get("boot")
    if not declared:
        return [
            f"{what}: PVE {did} by itself (qemu-server API2/Qemu.pm update_vm_api): boot becomes {becomes}"
        ]
    if not appended:
        return []
    if len(appended) == 1 and schema.boot_devices(declared) == result:
        change.put.pop("boot", None)
        return [
            f"{what}: PVE {did} by itself (qemu-server API2/Qemu.pm update_vm_api), which is the declared "
            f"boot order ({becomes}); boot is not sent"
        ]
    change.put.pop("boot", None)
    change.after["boot"] = declared
    drift.add("boot")
    return [
        f"{what}: PVE {did} in the same write, in an order it does not fix (qemu-server API2/Qemu.pm "
        f"update_vm_api); the declared boot ({declared}) is sent in a second write after it"
    ]


def _plain_cdrom(value: str) -> bool:
    """``drive_is_cdrom($drive, 1)``: a CD-ROM value that is not a cloud-init drive."""
    try:
        return parse_drive(value).kind == "cdrom"
    except ValueError:
        return False


def boot_refusals(decl: QemuDeclaration, boot: str, devices: set[str], at_create: bool = False) -> list[str]:
    """Why the ``order`` of ``boot`` names a device the VM will not have once the write is done
    (``devices``: the config keys it will hold), else ``[]``. qemu-server ``PVE/API2/Qemu.pm``
    ``update_vm_api``: "invalid bootorder: device '<dev>' does not exist" unless the device is in the
    config, its pending section or the same write, and not deleted by it. ``create_vm`` stores such
    an order unchecked, and the VM then has nothing to boot from there: refused at create too."""
    missing = [device for device in schema.boot_devices(boot) if device not in devices]
    if not missing:
        return []
    what = "the declaration creates" if at_create else "VM has or this write adds"
    return [
        f"boot: invalid bootorder: device '{missing[0]}' does not exist (qemu-server API2/Qemu.pm "
        f"update_vm_api); the boot order may name only devices the {what}. Declare {missing[0]}, or "
        "drop it from boot."
    ]
