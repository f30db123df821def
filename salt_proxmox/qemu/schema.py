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

from salt_proxmox.guest.schema import STARTUP, Key, PropString, SubKey, indexed_key
from salt_proxmox.guest.words import Words
from salt_proxmox.pve.constraints import (
    Endpoint,
    Rule,
    check_address,
    check_addresses,
    check_bridge_id,
    check_dns_name,
    check_dns_names,
    check_ip_config,
    check_mac,
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


def _options(table: PropString):
    """A checker of a property string of the format ``table`` (``options_problem``)."""
    return lambda value: options_problem(value, table.rules, table.default_key)


def _pattern(regex: str, what: str):
    compiled = re.compile(regex, re.ASCII)

    def check(value: str) -> str | None:
        return None if compiled.fullmatch(value) else f"{value!r} is not {what}"

    return check


_FLAG = Rule("flag")
_FLAG_OFF = SubKey(_FLAG, default="0")
#: ``PVE/QemuServer/Memory.pm`` ``$memory_fmt``: ``current`` (default key, MiB, minimum 16).
MEMORY = PropString(
    "memory", {"current": SubKey(Rule("integer", minimum=16), lead=True)}, default_key="current"
)
#: ``PVE/QemuServer/CPUConfig.pm`` ``$cpu_fmt`` (``cputype`` the default key).
CPU = PropString(
    "cpu",
    {
        "cputype": SubKey(Rule(check=_pattern(r"[-+_.a-zA-Z0-9]+", "a CPU model name")), lead=True),
        "reported-model": SubKey(),
        "hidden": SubKey(_FLAG),
        "hv-vendor-id": SubKey(
            Rule(check=_pattern(r"[a-zA-Z0-9]{1,12}", "a Hyper-V vendor id (1-12 letters/digits)"))
        ),
        "flags": SubKey(
            Rule(check=_pattern(r"[+-][a-zA-Z0-9\-_.]+(?:;[+-][a-zA-Z0-9\-_.]+)*", "a ;-list of +flag/-flag"))
        ),
        "phys-bits": SubKey(Rule(check=_pattern(r"host|[0-9]+", "host or a number of bits"))),
        "guest-phys-bits": SubKey(Rule("integer", minimum=32, maximum=64)),
        "level": SubKey(Rule("integer", minimum=0, maximum=4294967295)),
    },
    default_key="cputype",
)
#: ``PVE/QemuServer/Machine.pm`` ``$machine_fmt`` ``type`` pattern (anchored, as pve-common anchors
#: every pattern), the same in qemu-server 8 and 9; ``maxLength`` 40.
MACHINE_TYPE = re.compile(
    r"(pc|pc(-i440fx)?-\d+(\.\d+)+(\+pve\d+)?(\.pxe)?|q35|pc-q35-\d+(\.\d+)+(\+pve\d+)?(\.pxe)?"
    r"|virt(?:-\d+(\.\d+)+)?(\+pve\d+)?)",
    re.ASCII,
)
#: ``$machine_fmt`` (``type`` the default key; ``aw-bits`` is qemu-server 9's).
MACHINE = PropString(
    "machine",
    {
        "type": SubKey(
            Rule(
                max_length=40,
                check=lambda value: (
                    None
                    if MACHINE_TYPE.fullmatch(value)
                    else f"{value!r} is not a machine type PVE knows "
                    "(pc, q35, virt, pc-i440fx-X.Y, pc-q35-X.Y+pveN)"
                ),
            ),
            lead=True,
        ),
        "viommu": SubKey(Rule("enum", choices=("intel", "virtio"))),
        "aw-bits": SubKey(Rule("number", minimum=32, maximum=64)),
        "enable-s3": SubKey(_FLAG),
        "enable-s4": SubKey(_FLAG),
    },
    default_key="type",
)


def check_machine(value: str) -> str | None:
    """None for a ``machine`` value PVE takes, else why: ``$machine_fmt``, then ``Machine.pm``
    ``assert_valid_machine_property`` (``create_vm``/``update_vm_api`` die with its words)."""
    problem = _options(MACHINE)(value)
    if problem:
        return problem
    options = dict(pairs(value, MACHINE.default_key))
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


#: ``PVE/QemuServer/Agent.pm`` ``$agent_fmt`` (``enabled`` the default key): ``freeze-fs`` (PVE 8:
#: ``freeze-fs-on-backup``) is on unless set off.
AGENT = PropString(
    "agent",
    {
        "enabled": SubKey(_FLAG, default="0", lead=True),
        "fstrim_cloned_disks": _FLAG_OFF,
        "freeze-fs-on-backup": SubKey(_FLAG),
        "guest-fsfreeze": SubKey(_FLAG),
        "freeze-fs": SubKey(_FLAG, default="1"),
        "type": SubKey(Rule("enum", choices=("virtio", "isa")), default="virtio"),
    },
    default_key="enabled",
)
#: ``$agent_fmt`` (qemu-server 9): ``freeze-fs-on-backup`` and ``guest-fsfreeze`` are aliases of
#: ``freeze-fs``; PVE 8 knows ``freeze-fs-on-backup`` alone, with the same meaning and default.
AGENT_ALIASES = {"freeze-fs-on-backup": "freeze-fs", "guest-fsfreeze": "freeze-fs"}
#: ``PVE/QemuServer.pm`` ``$vga_fmt`` (``type`` the default key).
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
VGA = PropString("vga", {key: SubKey(rule, lead=key == "type") for key, rule in VGA_OPTIONS.items()}, "type")
SMBIOS1 = PropString("smbios1", {key: SubKey(rule) for key, rule in SMBIOS1_OPTIONS.items()})
#: ``PVE/QemuServer.pm`` ``$cicustom_fmt``: volume ids of snippets.
CICUSTOM = PropString(
    "cicustom",
    {
        name: SubKey(Rule(check=_pattern(r"[^\s,:]+:\S+", "a volume id")))
        for name in ("meta", "network", "user", "vendor")
    },
)


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
IPCONFIG = PropString(
    "ipconfig",
    {
        "ip": SubKey(Rule(check=lambda value: check_ip_config(value, 4))),
        "gw": SubKey(Rule(check=lambda value: check_address(value, 4))),
        "ip6": SubKey(Rule(check=lambda value: check_ip_config(value, 6))),
        "gw6": SubKey(Rule(check=lambda value: check_address(value, 6))),
    },
)
#: ``$ipconfig_fmt``'s ``requires``: a gateway needs an address of its family (pve-common
#: ``JSONSchema.pm`` ``check_object``: "missing property - 'gw' requires this property").
IPCONFIG_REQUIRES = {"gw": "ip", "gw6": "ip6"}


def check_ipconfig(value: str) -> str | None:
    """None for a valid ``ipconfigN`` value (``$ipconfig_fmt``), else why: each option's format,
    and ``gw``/``gw6`` only beside ``ip``/``ip6``."""
    problem = _options(IPCONFIG)(value)
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
        return options_problem(value, {"order": BOOT_OPTIONS["order"]})
    return BOOT_OPTIONS["legacy"].problem(value)


#: Scalar keys. ``compare`` as in ``salt_proxmox.guest.schema.Key``, plus the VM's own kinds:
#: ``memory`` (``[current=]N``), ``propstring:<family>:<default key>:<defaults>`` values compared
#: as option maps, ``hotplug`` (a feature set), ``boot``, ``smbios1``, ``sshkeys``.
SCALARS: dict[str, Key] = {
    "name": Key("text", Rule(max_length=255, check=check_dns_name)),
    "memory": Key("memory", Rule(check=_options(MEMORY)), default="512"),
    "balloon": Key("number", Rule("integer", minimum=0)),
    "cores": Key("number", Rule("integer", minimum=1), default="1"),
    "sockets": Key("number", Rule("integer", minimum=1), default="1"),
    "vcpus": Key("number", Rule("integer", minimum=1)),
    "cpu": Key("cpu", Rule(check=_options(CPU))),
    "cpulimit": Key("number", Rule("number", minimum=0, maximum=128), default="0"),
    "numa": Key("flag", Rule("boolean"), default="0"),
    "machine": Key("machine", Rule(check=check_machine)),
    "bios": Key("text", Rule("enum", choices=("seabios", "ovmf")), default="seabios"),
    "ostype": Key("text", Rule("enum", choices=_OSTYPES), default="other"),
    "scsihw": Key("text", Rule("enum", choices=_SCSIHW), default="lsi"),
    "agent": Key("agent", Rule(check=_options(AGENT)), default="0"),
    "boot": Key("boot", Rule(check=_boot)),
    "onboot": Key("flag", Rule("boolean"), default="0"),
    "startup": Key("startup", Rule(check=check_startup)),
    "tags": Key("tags", Rule(check=check_tags)),
    "description": Key("description", Rule(max_length=8192)),
    "protection": Key("flag", Rule("boolean"), default="0"),
    "hotplug": Key("hotplug", Rule(check=_hotplug), default=HOTPLUG_DEFAULT),
    "vga": Key("vga", Rule(check=_options(VGA))),
    "tablet": Key("flag", Rule("boolean"), default="1"),
    "kvm": Key("flag", Rule("boolean"), default="1"),
    "acpi": Key("flag", Rule("boolean"), default="1"),
    "localtime": Key("flag", Rule("boolean")),
    "smbios1": Key("smbios1", Rule(max_length=512, check=_options(SMBIOS1))),
    # cloud-init (``$confdesc_cloudinit``); ``cipassword`` is a secret, see ``SECRETS``.
    "ciuser": Key("text", Rule()),
    "citype": Key("text", Rule("enum", choices=("configdrive2", "nocloud", "opennebula"))),
    "ciupgrade": Key("flag", Rule("boolean"), default="1"),
    "cicustom": Key("cicustom", Rule(check=_options(CICUSTOM))),
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


#: ``PVE/QemuServer/Network.pm`` ``$nic_model_list``.
NIC_MODELS = (
    "e1000", "e1000-82540em", "e1000-82544gc", "e1000-82545em", "e1000e", "i82551", "i82557b",
    "i82559er", "ne2k_isa", "ne2k_pci", "pcnet", "rtl8139", "virtio", "vmxnet3",
)  # fmt: skip
#: ``PVE/QemuServer/Network.pm`` ``$net_fmt``: ``model`` the default key (each model name is also a
#: key whose value is the MAC, ``props.parse_net``), ``firewall`` and ``link_down`` off by default.
NET = PropString(
    "qemu-net",
    {
        "model": SubKey(Rule("enum", choices=NIC_MODELS), lead=True),
        "macaddr": SubKey(Rule(check=check_mac), compare="mac"),
        "bridge": SubKey(Rule(check=check_bridge_id)),
        "queues": SubKey(Rule("integer", minimum=0, maximum=64)),
        "rate": SubKey(Rule("number", minimum=0)),
        "tag": SubKey(Rule("integer", minimum=1, maximum=4094)),
        "trunks": SubKey(Rule(check=_pattern(r"\d+(?:-\d+)?(?:;\d+(?:-\d+)?)*", "a ;-list of VLAN ids"))),
        "firewall": _FLAG_OFF,
        "link_down": _FLAG_OFF,
        "mtu": SubKey(Rule("integer", minimum=1, maximum=65520)),
        "host-tunnel": SubKey(_FLAG),
    },
    default_key="model",
)

_THROTTLE = (
    "bps", "bps_rd", "bps_wr", "mbps", "mbps_rd", "mbps_wr", "iops", "iops_rd", "iops_wr",
    "mbps_max", "mbps_rd_max", "mbps_wr_max", "iops_max", "iops_rd_max", "iops_wr_max",
    "bps_max_length", "bps_rd_max_length", "bps_wr_max_length", "iops_max_length",
    "iops_rd_max_length", "iops_wr_max_length",
)  # fmt: skip
#: Every drive option (``PVE/QemuServer/Drive.pm`` ``%drivedesc_base`` and each bus's format,
#: ``$efidisk_fmt``, ``$tpmstate_fmt``); which of them each drive key takes is ``DRIVE_OPTIONS``.
#: Defaults: ``media`` disk, ``replicate`` on, ``shared`` and ``scsiblock`` off; ``backup`` has no
#: schema default but vzdump includes every drive without ``backup=0`` (``PVE/VZDump/QemuServer.pm``),
#: so absent is 1; ``efitype`` 2m, ``pre-enrolled-keys`` off, ``ms-cert`` 2011 (``%efitype_fmt``);
#: ``version`` v1.2 (``$tpmstate_fmt``).
DRIVE = PropString(
    "drive",
    {
        "volume": SubKey(lead=True),
        "media": SubKey(Rule("enum", choices=("cdrom", "disk")), default="disk"),
        "snapshot": SubKey(_FLAG),
        "cache": SubKey(Rule("enum", choices=("none", "writethrough", "writeback", "unsafe", "directsync"))),
        "format": SubKey(Rule("enum", choices=("raw", "qcow", "qed", "qcow2", "vmdk", "cloop"))),
        "size": SubKey(),
        "backup": SubKey(_FLAG, default="1"),
        "replicate": SubKey(_FLAG, default="1"),
        "rerror": SubKey(Rule("enum", choices=("ignore", "report", "stop"))),
        "werror": SubKey(Rule("enum", choices=("enospc", "ignore", "report", "stop"))),
        "aio": SubKey(Rule("enum", choices=("native", "threads", "io_uring"))),
        "discard": SubKey(Rule("enum", choices=("ignore", "on"))),
        "detect_zeroes": SubKey(_FLAG),
        "serial": SubKey(),
        "shared": _FLAG_OFF,
        **{
            name: SubKey(Rule("number" if name.startswith("mbps") else "integer", minimum=0))
            for name in _THROTTLE
        },
        "model": SubKey(),
        "ssd": SubKey(_FLAG),
        "wwn": SubKey(),
        "iothread": SubKey(_FLAG),
        "product": SubKey(),
        "queues": SubKey(Rule("integer", minimum=2)),
        "ro": SubKey(_FLAG),
        "scsiblock": _FLAG_OFF,
        "vendor": SubKey(),
        "efitype": SubKey(Rule("enum", choices=("2m", "4m")), default="2m"),
        "pre-enrolled-keys": _FLAG_OFF,
        "ms-cert": SubKey(default="2011"),
        "version": SubKey(Rule("enum", choices=("v1.2", "v2.0")), default="v1.2"),
    },
    default_key="volume",
    bare=True,
)
_BASE = frozenset(
    {
        "volume", "media", "snapshot", "cache", "format", "size", "backup", "replicate", "rerror",
        "werror", "aio", "discard", "detect_zeroes", "serial", "shared", *_THROTTLE,
    }
)  # fmt: skip
#: The options each drive key takes (``PVE/QemuServer/Drive.pm``: ``$ide_fmt``, ``$sata_fmt``,
#: ``$scsi_fmt``, ``$virtio_fmt``, ``$efidisk_fmt``, ``$tpmstate_fmt``).
DRIVE_OPTIONS: dict[str, frozenset[str]] = {
    "ide": _BASE | {"model", "ssd", "wwn"},
    "sata": _BASE | {"ssd", "wwn"},
    "scsi": _BASE | {"iothread", "product", "queues", "ro", "scsiblock", "ssd", "vendor", "wwn"},
    "virtio": _BASE | {"iothread", "ro"},
    "efidisk0": frozenset({"volume", "format", "size", "efitype", "pre-enrolled-keys", "ms-cert"}),
    "tpmstate0": frozenset({"volume", "format", "size", "version"}),
}
#: ``hostpciN``/``usbN`` (``PCI.pm``/``USB.pm``, ``host`` the default key) as a plan shows them; their
#: values are checked by ``props`` and ``judge.device_rule``.
HOSTPCI = PropString("hostpci", {"host": SubKey(), "mapping": SubKey()}, default_key="host")
USB = PropString("usb", {"host": SubKey(), "mapping": SubKey()}, default_key="host")


def property_format(key: str) -> PropString | None:
    """``key``'s property-string table, or None for a plain scalar."""
    family = family_of(key)
    if is_drive(key):
        return DRIVE
    by_family = {"net": NET, "ipconfig": IPCONFIG, "hostpci": HOSTPCI, "usb": USB}
    if family in by_family:
        return by_family[family]
    compare = SCALARS[key].compare if key in SCALARS else ""
    by_compare = {
        "cpu": CPU,
        "memory": MEMORY,
        "agent": AGENT,
        "vga": VGA,
        "smbios1": SMBIOS1,
        "cicustom": CICUSTOM,
        "startup": STARTUP,
    }
    return by_compare.get(compare)


def _rule_for(key: str) -> Rule | None:
    """A key's rule as a config write takes it: every value was checked at parse against its
    schema rule (``props.parse_declaration``), so a declared key passes; any other is not the API's."""
    return Rule() if is_config_key(key) else None


def _rule_for_create(key: str) -> Rule | None:
    if key == "vmid":
        return Rule("integer", minimum=100, maximum=999_999_999)
    if key == "pool":
        return Rule()  # checked at parse by the pool family's poolid rule
    if key in RESTORE_FORM:
        return RESTORE_FORM[key]
    return _rule_for(key)


#: A create by restore (``guest.restore``): ``create_vm``'s ``archive`` (the backup volume), ``unique``
#: (new MACs, vmgenid, smbios1 uuid) and ``storage`` (where the restored disks go).
RESTORE_FORM = {"archive": Rule(), "unique": Rule("boolean"), "storage": Rule()}


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
