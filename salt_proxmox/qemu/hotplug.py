"""A running VM's hotplug rules: which config writes PVE applies at once and which wait (pure).

qemu-server ``PVE/QemuServer.pm`` ``vmconfig_hotplug_pending`` decides, key by key, whether a write to
a running VM is applied through QEMU, the cgroup or the config alone, or kept in the pending section
until the next start; the plan reports the second kind as pending. The keys' schema is ``schema``'s.
"""

from __future__ import annotations

import re

from salt_proxmox.qemu.schema import SPECIAL_DRIVES, family_of, hotplug_set, is_drive, windows_version

#: ``$fast_plug_option``: written straight into the config of a running VM, every
#: ``$confdesc_cloudinit`` key included (``ipconfigN`` too, by family in ``applies_live``; PVE
#: regenerates the cloud-init drive; the guest reads it at its next boot).
FAST_PLUG = frozenset(
    {
        "description", "hookscript", "lock", "migrate_downtime", "migrate_speed", "name", "onboot",
        "protection", "shares", "startup", "tags", "vmstatestorage",
        "cicustom", "cipassword", "citype", "ciuser", "ciupgrade", "nameserver", "searchdomain", "sshkeys",
    }
)  # fmt: skip
#: NIC options ``vmconfig_update_net`` changes on a running VM without hotplug (re-plugging the
#: tap); a change of any other option (``model``, ``macaddr``, ``queues``, ``mtu``) needs the
#: ``network`` hotplug feature.
NET_LIVE_OPTIONS = frozenset({"bridge", "tag", "trunks", "firewall", "rate", "link_down"})
#: Drive options ``vmconfig_update_disk`` refuses to change on a running VM ("skip non
#: hotpluggable value"): they wait for the next start.
DRIVE_COLD_OPTIONS = frozenset(
    {"aio", "discard", "iothread", "queues", "product", "cache", "ssd", "vendor", "ro"}
)


def usb_hotplug_supported(features: frozenset[str], ostype: str | None, machine: str | None) -> bool:
    """qemu-server ``PVE/QemuServer.pm`` ``vmconfig_hotplug_pending``'s ``$is_usb_hotplug_supported``:
    the ``usb`` hotplug feature, a machine version of at least 7.1 (a pinned ``pc-i440fx-6.2`` is not;
    an unversioned type runs the node's QEMU, 8.0 or newer on PVE 8 and 9), and ``ostype`` ``l26`` or
    a Windows newer than 7 (``windows_version`` > 7); an unset ``ostype`` is neither."""
    if "usb" not in features:
        return False
    found = re.search(r"-(\d+)\.(\d+)", (machine or "").partition(",")[0])
    if found and (int(found.group(1)), int(found.group(2))) < (7, 1):
        return False
    return ostype == "l26" or windows_version(ostype) > 7


def applies_live(
    key: str,
    clear: bool,
    old: str | None,
    new: str | None,
    hotplug: str | None,
    changed: frozenset[str] = frozenset(),
    ostype: str | None = None,
    machine: str | None = None,
) -> bool:
    """Whether writing ``key`` to a RUNNING VM takes effect at once (True) or waits in the pending
    section for its next start (False). A stopped VM takes every change at once.

    ``clear``: a ``delete=``; ``old``: the value in effect (None: absent); ``new``: the value
    written; ``hotplug``: the VM's ``hotplug`` in effect (None: the default ``network,disk,usb``);
    ``changed``: for ``netN`` and drives, the option names whose values differ.

    qemu-server ``PVE/QemuServer.pm`` ``vmconfig_hotplug_pending``: ``FAST_PLUG`` keys at once;
    ``hotplug`` itself unless ``cpu`` or ``memory`` is in the old or new value; ``netN`` through
    ``vmconfig_update_net`` (``NET_LIVE_OPTIONS`` always, the rest and a new NIC with the
    ``network`` feature); drives through ``vmconfig_update_disk`` (a CD-ROM medium change always;
    a disk's option change unless it touches ``DRIVE_COLD_OPTIONS``; a new ``scsiN``/``virtioN``
    with the ``disk`` feature; never ``efidisk0``/``tpmstate0``, nor a new ``ideN``/``sataN``);
    ``memory`` with the ``memory`` feature, ``vcpus`` with ``cpu``, ``tablet`` with ``usb``, ``usbN``
    where ``usb_hotplug_supported`` says so for the VM's ``ostype`` and ``machine`` in effect;
    ``ipconfigN`` at once (``$fast_plug_option`` takes every ``$confdesc_cloudinit`` key);
    ``balloon`` unless it turns ballooning on or off; ``cpulimit``/``cpuunits`` through the cgroup;
    ``agent`` when only ``fstrim_cloned_disks`` changes (``vmconfig_update_agent``).
    Anything else ("skip non-hot-pluggable options": ``cores``, ``sockets``, ``cpu``, ``bios``,
    ``machine``, ``vga``, ``serialN``, ``hostpciN``, ...) waits.
    """
    try:
        features = hotplug_set(hotplug)
    except ValueError:
        features = frozenset()
    family = family_of(key)
    if key in FAST_PLUG or family == "ipconfig":
        return True
    if key == "hotplug":
        values = f"{old or ''},{new or ''}" if not clear else (old or "")
        return not re.search(r"cpu|memory", values)
    if key in ("cpulimit", "cpuunits"):
        return True
    if key == "memory":
        return "memory" in features
    if key == "vcpus":
        return "cpu" in features
    if key == "tablet":
        return "usb" in features
    if family == "usb":
        return usb_hotplug_supported(features, ostype, machine)
    if key == "balloon":
        if clear:
            return old is None or old.strip() != "0"
        return (old is None or old.strip() != "0") == ((new or "").strip() != "0")
    if key == "agent" and not clear:
        return old is not None and changed <= {"fstrim_cloned_disks"}
    if family == "net":
        if clear or old is None:
            return "network" in features
        return changed <= NET_LIVE_OPTIONS or "network" in features
    if is_drive(key):
        if key in SPECIAL_DRIVES:
            return False
        if clear:
            return "disk" in features and family in ("scsi", "virtio")
        if old is None:
            return "disk" in features and family in ("scsi", "virtio")
        if "media=cdrom" in old.replace(" ", ""):
            return True
        if "volume" in changed:
            return "disk" in features
        return not (changed & DRIVE_COLD_OPTIONS)
    return False
