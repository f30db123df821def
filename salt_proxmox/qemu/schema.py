"""Every VM config key this family manages, defined once: how it compares, its default, its rule,
who may change it, and whether a running VM takes it at once.

Sources (qemu-server, the PVE 8 and 9 lines agree on everything used here):

- ``PVE/QemuServer.pm`` ``$confdesc`` and ``$confdesc_cloudinit`` (keys, types, defaults),
  ``vmconfig_hotplug_pending`` and ``$fast_plug_option`` (what applies live);
- ``PVE/QemuServer/Drive.pm`` (``ideN`` 0-3, ``sataN`` 0-5, ``scsiN`` 0-30, ``virtioN`` 0-15,
  ``efidisk0``, ``tpmstate0``), ``PVE/QemuServer/Network.pm`` (``netN`` 0-31, ``ipconfigN``),
  ``PVE/QemuServer/Memory.pm`` (``memory``: ``[current=]N``), ``PVE/QemuServer/CPUConfig.pm``
  (``cpu``: ``[cputype=]NAME,...``), ``PVE/QemuServer/PCI.pm`` / ``USB.pm`` (``hostpciN``, ``usbN``);
- ``PVE/API2/Qemu.pm`` ``$check_vm_modify_config_perm``, ``check_hostpci_perm``,
  ``check_usb_perm``, ``$check_vm_create_serial_perm``: what only root@pam may set.

A key not listed here is refused by name at parse, never ignored and never written.
"""

from __future__ import annotations

import re

from salt_proxmox.guest.schema import Key, indexed_key
from salt_proxmox.guest.words import Words
from salt_proxmox.pve.constraints import (
    Endpoint,
    Rule,
    check_address,
    check_addresses,
    check_dns_name,
    check_dns_names,
    check_ip_config,
    check_resize,
    check_startup,
    check_tags,
    options_problem,
    split_list,
)
from salt_proxmox.wire.propstring import pairs

#: The VM family's words (``guest.words``): what its judge, remedies and messages name.
WORDS = Words(kind="qemu", state="proxmox_qemu", noun="VM", label="VM", command="qm", ha_type="vm")

_OSTYPES = (
    "other",
    "wxp",
    "w2k",
    "w2k3",
    "w2k8",
    "wvista",
    "win7",
    "win8",
    "win10",
    "win11",
    "l24",
    "l26",
    "solaris",
)
_SCSIHW = ("lsi", "lsi53c810", "virtio-scsi-pci", "virtio-scsi-single", "megasas", "pvscsi")
#: ``parse_hotplug_features``: the features ``hotplug`` may list; ``1`` is the default set, ``0`` none.
HOTPLUG_FEATURES = ("network", "disk", "cpu", "memory", "usb", "cloudinit")
HOTPLUG_DEFAULT = "network,disk,usb"


def hotplug_set(value: str | None) -> frozenset[str]:
    """The features a ``hotplug`` value enables (qemu-server ``parse_hotplug_features``): absent
    and ``1`` are ``network,disk,usb``, ``0`` is none. Raises ValueError for an unknown feature."""
    if value is None or value.strip() == "1":
        value = HOTPLUG_DEFAULT
    if value.strip() == "0":
        return frozenset()
    features = split_list(value)
    unknown = [feature for feature in features if feature not in HOTPLUG_FEATURES]
    if unknown:
        raise ValueError(
            f"invalid hotplug feature '{unknown[0]}' (allowed: {', '.join(HOTPLUG_FEATURES)}, or 0/1)"
        )
    return frozenset(features)


def _hotplug(value: str) -> str | None:
    try:
        hotplug_set(value)
    except ValueError as exc:
        return str(exc)
    return None


def _options(allowed: dict[str, Rule], default_key: str | None):
    """A checker of a property string whose options are ``allowed`` (``options_problem``)."""
    return lambda value: options_problem(value, allowed, default_key)


def _pattern(regex: str, what: str):
    compiled = re.compile(regex, re.ASCII)

    def check(value: str) -> str | None:
        return None if compiled.fullmatch(value) else f"{value!r} is not {what}"

    return check


_FLAG = Rule("flag")
#: ``PVE/QemuServer/Memory.pm`` ``$memory_fmt``: ``current`` (default key, MiB, minimum 16).
MEMORY_OPTIONS = {"current": Rule("integer", minimum=16)}
#: ``PVE/QemuServer/CPUConfig.pm`` ``$cpu_fmt`` (``cputype`` the default key).
CPU_OPTIONS = {
    "cputype": Rule(check=_pattern(r"[-+_.a-zA-Z0-9]+", "a CPU model name")),
    "reported-model": Rule(),
    "hidden": _FLAG,
    "hv-vendor-id": Rule(check=_pattern(r"[a-zA-Z0-9]{1,12}", "a Hyper-V vendor id (1-12 letters/digits)")),
    "flags": Rule(
        check=_pattern(r"[+-][a-zA-Z0-9\-_.]+(?:;[+-][a-zA-Z0-9\-_.]+)*", "a ;-list of +flag/-flag")
    ),
    "phys-bits": Rule(check=_pattern(r"host|[0-9]+", "host or a number of bits")),
    "guest-phys-bits": Rule("integer", minimum=32, maximum=64),
    "level": Rule("integer", minimum=0, maximum=4294967295),
}
#: ``PVE/QemuServer/Machine.pm`` ``$machine_fmt`` ``type`` pattern (anchored, as pve-common anchors
#: every pattern), the same in qemu-server 8 and 9; ``maxLength`` 40.
MACHINE_TYPE = re.compile(
    r"(pc|pc(-i440fx)?-\d+(\.\d+)+(\+pve\d+)?(\.pxe)?|q35|pc-q35-\d+(\.\d+)+(\+pve\d+)?(\.pxe)?"
    r"|virt(?:-\d+(\.\d+)+)?(\+pve\d+)?)",
    re.ASCII,
)
#: ``$machine_fmt`` (``type`` the default key; ``aw-bits`` is qemu-server 9's).
MACHINE_OPTIONS = {
    "type": Rule(
        max_length=40,
        check=lambda value: (
            None
            if MACHINE_TYPE.fullmatch(value)
            else f"{value!r} is not a machine type PVE knows (pc, q35, virt, pc-i440fx-X.Y, pc-q35-X.Y+pveN)"
        ),
    ),
    "viommu": Rule("enum", choices=("intel", "virtio")),
    "aw-bits": Rule("number", minimum=32, maximum=64),
    "enable-s3": _FLAG,
    "enable-s4": _FLAG,
}


def check_machine(value: str) -> str | None:
    """None for a ``machine`` value PVE takes, else why: ``$machine_fmt``, then ``Machine.pm``
    ``assert_valid_machine_property`` (``create_vm``/``update_vm_api`` die with its words)."""
    problem = options_problem(value, MACHINE_OPTIONS, "type")
    if problem:
        return problem
    options = dict(pairs(value, default_key="type"))
    if options.get("viommu") == "intel":
        if "q35" not in options.get("type", ""):
            return "to use Intel vIOMMU please set the machine type to q35 (qemu-server Machine.pm)"
        if options.get("aw-bits") and float(options["aw-bits"]) not in (39, 48):
            return "Intel vIOMMU supports only 39 or 48 bits as address width (qemu-server Machine.pm)"
    if options.get("aw-bits") and not options.get("viommu"):
        return "cannot set aw-bits if no vIOMMU is configured (qemu-server Machine.pm)"
    return None


def windows_version(ostype: str | None) -> int:
    """qemu-server ``PVE/QemuServer/Helpers.pm`` ``windows_version``: 5 for ``wxp``/``w2k``/``w2k3``,
    6 for ``w2k8``/``wvista``, N for ``winN``, else 0 (not Windows)."""
    if ostype in ("wxp", "w2k3", "w2k"):
        return 5
    if ostype in ("w2k8", "wvista"):
        return 6
    found = re.fullmatch(r"win(\d+)", ostype or "", re.ASCII)
    return int(found.group(1)) if found else 0


#: ``Machine.pm`` ``windows_get_pinned_machine_version``: what an unversioned type is pinned to.
PINNED = {
    "pc": re.compile(r"pc(-i440fx)?-\d+(\.\d+)+(\+pve\d+)?(\.pxe)?", re.ASCII),
    "q35": re.compile(r"pc-q35-\d+(\.\d+)+(\+pve\d+)?(\.pxe)?", re.ASCII),
    "virt": re.compile(r"virt-\d+(\.\d+)+(\+pve\d+)?", re.ASCII),
}


#: ``PVE/QemuServer/Agent.pm`` ``$agent_fmt``.
AGENT_OPTIONS = {
    "enabled": _FLAG,
    "fstrim_cloned_disks": _FLAG,
    "freeze-fs-on-backup": _FLAG,
    "guest-fsfreeze": _FLAG,
    "freeze-fs": _FLAG,
    "type": Rule("enum", choices=("virtio", "isa")),
}
#: ``$agent_fmt``'s defaults: ``freeze-fs`` (PVE 8: ``freeze-fs-on-backup``) is on unless set off.
AGENT_DEFAULTS = {"enabled": "0", "fstrim_cloned_disks": "0", "freeze-fs": "1", "type": "virtio"}
#: ``$agent_fmt`` (qemu-server 9): ``freeze-fs-on-backup`` and ``guest-fsfreeze`` are aliases of
#: ``freeze-fs``; PVE 8 knows ``freeze-fs-on-backup`` alone, with the same meaning and default.
AGENT_ALIASES = {"freeze-fs-on-backup": "freeze-fs", "guest-fsfreeze": "freeze-fs"}
#: ``PVE/QemuServer.pm`` ``$vga_fmt``.
VGA_OPTIONS = {
    "type": Rule(
        "enum",
        choices=(
            "cirrus",
            "qxl",
            "qxl2",
            "qxl3",
            "qxl4",
            "none",
            "serial0",
            "serial1",
            "serial2",
            "serial3",
            "std",
            "virtio",
            "virtio-gl",
            "vmware",
        ),
    ),
    "memory": Rule("integer", minimum=4, maximum=512),
    "clipboard": Rule("enum", choices=("vnc",)),
}
#: ``PVE/QemuServer.pm`` ``$smbios1_fmt`` (``pve-qm-smbios1``). ``uuid`` PVE generates at create.
SMBIOS1_OPTIONS = {
    "uuid": Rule(check=_pattern(r"[a-fA-F0-9]{8}(?:-[a-fA-F0-9]{4}){3}-[a-fA-F0-9]{12}", "a UUID")),
    "base64": _FLAG,
    "family": Rule(),
    "manufacturer": Rule(),
    "product": Rule(),
    "serial": Rule(),
    "sku": Rule(),
    "version": Rule(),
}
#: ``PVE/QemuServer.pm`` ``$cicustom_fmt``: volume ids of snippets.
CICUSTOM_OPTIONS = {
    name: Rule(check=_pattern(r"[^\s,:]+:\S+", "a volume id"))
    for name in ("meta", "network", "user", "vendor")
}


def boot_devices(value: str) -> list[str]:
    """The devices of a ``boot`` value's ``order`` (``scsi0;ide2;net0``), in order; ``[]`` for the
    legacy ``[acdn]`` form (pve-common ``PVE::Tools::split_list`` on ``order``)."""
    if "=" not in value:
        return []
    order = dict(pairs(value)).get("order", "")
    return split_list(order)


def check_boot_order(order: str) -> str | None:
    """None for a valid ``order`` of ``boot``, else why: each device passes qemu-server
    ``PVE/QemuServer.pm`` ``verify_bootdev``: a drive (``is_valid_drivename``) but not ``efidisk0``
    or ``tpmstate0``, or ``netN``/``usbN``/``hostpciN`` within ``$confdesc``'s range; else PVE's
    ``invalid boot device '<dev>'``."""
    devices = split_list(order)
    if not devices:
        return "an empty boot order (declare order=scsi0;net0, or leave boot out)"
    for device in devices:
        if device in SPECIAL_DRIVES:
            return (
                f"invalid boot device '{device}' (qemu-server verify_bootdev: the EFI disk and the TPM state "
                "are not boot devices; OVMF boots from the disks listed)"
            )
        if not (is_drive(device) or family_of(device) in ("net", "usb", "hostpci")):
            return f"invalid boot device '{device}' (qemu-server verify_bootdev)"
    return None


#: ``pve-qm-boot``: ``order=dev;dev...`` (PVE 6.3 and newer); the legacy ``[acdn]{1,4}`` still parses.
BOOT_OPTIONS = {
    "order": Rule(check=lambda value: check_boot_order(value)),
    "legacy": Rule(check=_pattern(r"[acdn]{1,4}", "a legacy boot string [acdn]{1,4}")),
}
#: ``pve-qm-ipconfig`` (``PVE/QemuServer/Network.pm`` ``$ipconfig_fmt``): ``ip``/``ip6`` are
#: ``pve-ipv4-config``/``pve-ipv6-config``, the gateways ``ipv4``/``ipv6`` addresses; the same
#: pve-common formats a container's ``netN`` takes (``salt_proxmox.pve.constraints``).
IPCONFIG_OPTIONS = {
    "ip": Rule(check=lambda value: check_ip_config(value, 4)),
    "gw": Rule(check=lambda value: check_address(value, 4)),
    "ip6": Rule(check=lambda value: check_ip_config(value, 6)),
    "gw6": Rule(check=lambda value: check_address(value, 6)),
}
#: ``$ipconfig_fmt``'s ``requires``: a gateway needs an address of its family (pve-common
#: ``JSONSchema.pm`` ``check_object``: "missing property - 'gw' requires this property").
IPCONFIG_REQUIRES = {"gw": "ip", "gw6": "ip6"}


def check_ipconfig(value: str) -> str | None:
    """None for a valid ``ipconfigN`` value (``$ipconfig_fmt``), else why: each option's format,
    and ``gw``/``gw6`` only beside ``ip``/``ip6``."""
    problem = options_problem(value, IPCONFIG_OPTIONS)
    if problem:
        return problem
    options = dict(pairs(value))
    for gateway, address in IPCONFIG_REQUIRES.items():
        if gateway in options and address not in options:
            return (
                f"{gateway}= requires {address}= (qemu-server $ipconfig_fmt: a gateway needs an address "
                "of its family)"
            )
    return None


def _boot(value: str) -> str | None:
    """``pve-qm-boot``: ``order=...`` or the legacy ``[acdn]{1,4}``."""
    if "=" in value:
        return _options({"order": BOOT_OPTIONS["order"]}, None)(value)
    return BOOT_OPTIONS["legacy"].problem(value)


#: Scalar keys. ``compare`` as in ``salt_proxmox.guest.schema.Key``, plus the VM's own kinds:
#: ``memory`` (``[current=]N``), ``propstring:<family>:<default key>:<defaults>`` values compared
#: as option maps, ``hotplug`` (a feature set), ``boot``, ``smbios1``, ``sshkeys``.
SCALARS: dict[str, Key] = {
    "name": Key("text", Rule(max_length=255, check=check_dns_name)),
    "memory": Key("memory", Rule(check=_options(MEMORY_OPTIONS, "current")), default="512"),
    "balloon": Key("number", Rule("integer", minimum=0)),
    "cores": Key("number", Rule("integer", minimum=1), default="1"),
    "sockets": Key("number", Rule("integer", minimum=1), default="1"),
    "vcpus": Key("number", Rule("integer", minimum=1)),
    "cpu": Key("cpu", Rule(check=_options(CPU_OPTIONS, "cputype"))),
    "cpulimit": Key("number", Rule("number", minimum=0, maximum=128), default="0"),
    "numa": Key("flag", Rule("boolean"), default="0"),
    "machine": Key("machine", Rule(check=check_machine)),
    "bios": Key("text", Rule("enum", choices=("seabios", "ovmf")), default="seabios"),
    "ostype": Key("text", Rule("enum", choices=_OSTYPES), default="other"),
    "scsihw": Key("text", Rule("enum", choices=_SCSIHW), default="lsi"),
    "agent": Key("agent", Rule(check=_options(AGENT_OPTIONS, "enabled")), default="0"),
    "boot": Key("boot", Rule(check=_boot)),
    "onboot": Key("flag", Rule("boolean"), default="0"),
    "startup": Key("startup", Rule(check=check_startup)),
    "tags": Key("tags", Rule(check=check_tags)),
    "description": Key("description", Rule(max_length=8192)),
    "protection": Key("flag", Rule("boolean"), default="0"),
    "hotplug": Key("hotplug", Rule(check=_hotplug), default=HOTPLUG_DEFAULT),
    "vga": Key("vga", Rule(check=_options(VGA_OPTIONS, "type"))),
    "tablet": Key("flag", Rule("boolean"), default="1"),
    "kvm": Key("flag", Rule("boolean"), default="1"),
    "acpi": Key("flag", Rule("boolean"), default="1"),
    "localtime": Key("flag", Rule("boolean")),
    "smbios1": Key("smbios1", Rule(max_length=512, check=_options(SMBIOS1_OPTIONS, None))),
    # cloud-init (``$confdesc_cloudinit``); ``cipassword`` is a secret, see ``SECRETS``.
    "ciuser": Key("text", Rule()),
    "citype": Key("text", Rule("enum", choices=("configdrive2", "nocloud", "opennebula"))),
    "ciupgrade": Key("flag", Rule("boolean"), default="1"),
    "cicustom": Key("cicustom", Rule(check=_options(CICUSTOM_OPTIONS, None))),
    "nameserver": Key("list", Rule(check=check_addresses)),
    "searchdomain": Key("list", Rule(check=check_dns_names)),
    # Declared as the keys, one per line; checked and URL-encoded by ``props`` (``sshkeys_wire``).
    "sshkeys": Key("sshkeys", Rule()),
}

#: Secrets: sent, never shown, never stored, compared only as set / not set. ``cipassword``
#: (``$confdesc_cloudinit``): ``PVE/API2/Qemu.pm`` ``update_vm_api`` stores a crypt hash
#: (``PVE::Tools::encrypt_pw``, unless the value already is one or the ostype is Windows), while
#: ``create_vm`` writes its form as sent, in clear: so it is never part of a create form
#: (``family.create``). ``vm_config`` answers ``**********`` in its place.
SECRETS = frozenset({"cipassword"})
#: PVE's mask for a set ``cipassword`` in ``GET …/config`` (qemu-server ``PVE/API2/Qemu.pm`` ``vm_config``).
PASSWORD_MASK = "**********"  # noqa: S105 - PVE's mask, not a password

#: Values PVE generates for a VM and keeps: never declared, never drift (``vmgenid``: ``create_vm``
#: writes ``generate_uuid``; ``meta``: ``PVE::QemuServer::MetaInfo::new_meta_info_string`` with the
#: creation time and QEMU version). Setting either is for root@pam only
#: (``$check_vm_modify_config_perm`` lists neither).
GENERATED = frozenset({"vmgenid", "meta"})

#: Keys only root@pam may set: ``$check_vm_modify_config_perm`` ends "catches args, lock, etc.":
#: every key in none of its option lists (``$cpuoptions``, ``$memoryoptions``, ``$hwtypeoptions``,
#: ``$generaloptions``, ``$vmpoweroptions``, ``$diskoptions``, ``$cloudinitoptions``, ``netN``,
#: ``ipconfigN``) dies with ``only root can set '<key>' config``.
ROOT_ONLY = frozenset(
    {
        "args",
        "hookscript",
        "affinity",
        "hugepages",
        "keephugepages",
        "ivshmem",
        "spice_enhancements",
        "amd-sev",
        "intel-tdx",
    }
)

#: Indexed keys and the size of their range.
INDEXED = {
    "ide": 4,
    "sata": 6,
    "scsi": 31,
    "virtio": 16,
    "net": 32,
    "ipconfig": 32,
    "serial": 4,
    "parallel": 3,
    "hostpci": 16,
    "usb": 14,
}
_INDEXED = re.compile(
    r"^(ide|sata|scsi|virtio|net|ipconfig|serial|parallel|hostpci|usb|unused)(\d+)\Z", re.ASCII
)
#: Drive buses (``PVE/QemuServer/Drive.pm`` ``valid_drive_names``); ``efidisk0`` and ``tpmstate0``
#: are drives too.
BUSES = ("ide", "sata", "scsi", "virtio")
SPECIAL_DRIVES = ("efidisk0", "tpmstate0")


def indexed(key: str) -> tuple[str, int] | None:
    """``('scsi', 3)`` for ``scsi3``; None for a key that is not indexed or out of PVE's range."""
    return indexed_key(key, _INDEXED, INDEXED)


def family_of(key: str) -> str:
    """``scsi`` for ``scsi3``, ``''`` for a key that is not indexed."""
    return (indexed(key) or ("", 0))[0]


def is_drive(key: str) -> bool:
    """True for ``ideN``/``sataN``/``scsiN``/``virtioN``, ``efidisk0`` and ``tpmstate0``
    (qemu-server ``is_valid_drivename``)."""
    return key in SPECIAL_DRIVES or family_of(key) in BUSES


def is_config_key(key: str) -> bool:
    """True for every key a ``proxmox_qemu`` declaration may name as VM config."""
    if key in SCALARS or key in SECRETS or key in ROOT_ONLY or is_drive(key):
        return True
    return family_of(key) in ("net", "ipconfig", "serial", "parallel", "hostpci", "usb")


def property_format(key: str) -> tuple[str, str | None] | None:
    """How ``key``'s value is a property string for ``salt_proxmox.wire.propstring``:
    ``(family, default key)``, or None for a plain scalar."""
    family = family_of(key)
    if is_drive(key):
        return ("drive", "volume")
    if family == "net":
        return ("qemu-net", "model")
    if family == "ipconfig":
        return ("ipconfig", None)
    if family in ("hostpci", "usb"):
        return (family, "host")
    compare = SCALARS[key].compare if key in SCALARS else ""
    defaults = {
        "cpu": ("cpu", "cputype"),
        "memory": ("memory", "current"),
        "agent": ("agent", "enabled"),
        "vga": ("vga", "type"),
        "smbios1": ("smbios1", None),
        "cicustom": ("cicustom", None),
        "startup": ("startup", "order"),
    }
    return defaults.get(compare)


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


def _rule_for(key: str) -> Rule | None:
    """A key's rule as a config write takes it: every value was checked at parse against its
    schema rule (``props.parse_declaration``), so a declared key passes; any other is not the API's."""
    return Rule() if is_config_key(key) else None


def _rule_for_create(key: str) -> Rule | None:
    if key == "vmid":
        return Rule("integer", minimum=100, maximum=999_999_999)
    if key == "pool":
        return Rule()  # checked at parse by the pool family's poolid rule
    return _rule_for(key)


def _rule_for_resize(key: str) -> Rule | None:
    if key == "disk":
        names = [f"{bus}{i}" for bus in BUSES for i in range(INDEXED[bus])]
        return Rule("enum", choices=(*names, *SPECIAL_DRIVES))
    if key == "size":
        return Rule(check=check_resize)
    return None


#: qemu-server ``PVE/API2/Qemu.pm``: ``create_vm``, ``update_vm`` (``PUT``/``POST …/config``),
#: ``resize_vm`` (``disk`` a drive name, ``size`` ``\+?\d+(\.\d+)?[KMGT]?``).
CREATE = Endpoint("POST /nodes/{node}/qemu", ("vmid",), _rule_for_create)
UPDATE = Endpoint("PUT /nodes/{node}/qemu/{vmid}/config", (), _rule_for)
RESIZE = Endpoint("PUT /nodes/{node}/qemu/{vmid}/resize", ("disk", "size"), _rule_for_resize)
#: Keys never shown in a return or kept in grains: notes a human wrote, PVE's bookkeeping, the secret.
NEVER_STORED = frozenset({"description", "digest", "lock", "cipassword"})
