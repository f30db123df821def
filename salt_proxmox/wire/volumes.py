"""Mount point values (``rootfs``, ``mpN``) as pve-container classifies them.

pve-container ``src/PVE/LXC/Config.pm`` (``$rootfs_desc``, ``$mp_desc``, ``classify_mountpoint``):
the first, key-less item is the volume. ``STORAGE:SIZE_IN_GiB`` asks for a new volume at create
(``PVE::LXC::create_disks``); a ``/dev/...`` path is a device mount point, any other absolute path
a bind mount, and ``storage:volname`` an allocated volume. Bind and device mount points are for
root@pam only (``PVE::LXC::check_ct_modify_config_perm``). Which options a mount point takes is
its family's table (``salt_proxmox.lxc.schema.MP``), given to ``parse_volume``: this module holds no
family schema.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from salt_proxmox.wire.propstring import Format, option_map, pairs, print_pairs
from salt_proxmox.wire.sizes import MIB, mib_text, new_volume_mib, parse_size

#: pve-storage ``PVE::Storage::Plugin`` storage id format ``pve-storage-id``.
STORAGE_ID = re.compile(r"^[a-z][a-z0-9\-_.]*[a-z0-9]\Z", re.IGNORECASE | re.ASCII)
_SIZE_LIKE = re.compile(r"^[-+]?\d+(?:\.\d+)?[A-Za-z]*\Z", re.ASCII)
_NEW = re.compile(r"^([a-z][a-z0-9\-_.]*[a-z0-9]):(\d+(?:\.\d+)?)\Z", re.IGNORECASE | re.ASCII)


@dataclass(frozen=True)
class Volume:
    """One parsed mount point: ``kind`` is ``new``, ``volume``, ``bind`` or ``device``."""

    kind: str
    volume: str
    storage: str | None = None
    new_gib: str | None = None
    options: dict[str, str] = field(default_factory=dict)

    @property
    def host_path(self) -> bool:
        """True for bind and device mount points (and a VM drive on a host path), which only
        root@pam may configure."""
        return self.kind in ("bind", "device")


def parse_volume(value: str, table: Format) -> Volume:
    """Parse a ``rootfs``/``mpN`` value with its family's ``table`` (the options it knows: the
    container's ``$mp_desc``, ``salt_proxmox.lxc.schema.MP``).

    Raises ValueError for an option the table does not know, a malformed size, or a volume that is
    neither ``storage:...`` nor an absolute path.
    """
    items = pairs(value, default_key="volume")
    options = dict(items)
    unknown = sorted(set(options) - set(table.rows))
    if unknown:
        raise ValueError(f"unknown mount point option(s) {', '.join(unknown)}")
    volume = options.pop("volume", "")
    if not volume:
        raise ValueError("a mount point needs a volume (storage:size-in-GiB, storage:volname or a path)")
    if "size" in options:
        parse_size(options["size"])
    new = _NEW.match(volume)
    if new:
        return Volume("new", volume, storage=new.group(1), new_gib=new.group(2), options=options)
    if volume.startswith("/dev/"):
        return Volume("device", volume, options=options)
    if volume.startswith("/"):
        return Volume("bind", volume, options=options)
    storage, colon, name = volume.partition(":")
    if _SIZE_LIKE.match(name):
        raise ValueError(
            f"{volume!r}: a new volume is storage:GiB with a bare number (e.g. {storage}:40); "
            f"{name!r} is not a volume name"
        )
    if not colon or not name or not STORAGE_ID.match(storage):
        raise ValueError(f"{volume!r} is not storage:size, storage:volume or an absolute path")
    return Volume("volume", volume, storage=storage, options=options)


#: The owner vmid in a volume name as pve-storage allocates it: ``vm-<vmid>-disk-N``,
#: ``subvol-<vmid>-disk-N``, ``base-<vmid>-disk-N`` (``PVE::Storage::Plugin::parse_name_dir``,
#: ``LVMPlugin``/``ZFSPoolPlugin`` ``parse_volname``), possibly under ``<vmid>/`` (a directory
#: storage's ``images/<vmid>/``) or behind a linked clone's ``base-M-disk-N/``.
_OWNER = re.compile(r"(?:^|/)(vm|subvol|base|basevol)-(\d+)-[^/]*$", re.ASCII)


def volume_owner(volume: str) -> int | None:
    """The vmid that owns ``storage:volname`` by pve-storage's naming, or None when the name does
    not say (a volume named by hand)."""
    found = _OWNER.search(volume.partition(":")[2])
    return int(found.group(2)) if found else None


def base_volume(volume: str) -> bool:
    """Whether ``storage:volname`` is a base volume, the ``$isBase`` of pve-storage's
    ``parse_volname``: the volume's own name, the last part of the volname, is ``base-<vmid>-…``
    (``basevol-``: a ZFS subvolume). ``Plugin.pm`` (file storages) parses
    ``<basevmid>/<basename>/<vmid>/<name>`` and ``<vmid>/<name>`` and asks ``parse_name_dir(<name>)``;
    ``LvmThinPlugin``, ``ZFSPoolPlugin`` (``[base-M-…/]name``) and ``RBDPlugin`` (``[base-M-…/]name``)
    look at the name's prefix likewise. So ``local:9000/base-9000-disk-0.qcow2`` and
    ``local-zfs:base-9000-disk-0`` are base volumes; a template's disk ``qm template`` has not
    converted (``local-lvm:vm-9000-disk-0``) and a linked clone's own disk
    (``local:9000/base-9000-disk-0.qcow2/151/vm-151-disk-0.qcow2``) are not. A device path is none."""
    _, colon, name = volume.partition(":")
    if not colon or volume.startswith("/"):
        return False
    found = _OWNER.search(name)  # the volume's own name, as volume_owner reads it
    return found is not None and found.group(1) in ("base", "basevol")


def volume_format(volume: str) -> str | None:
    """The format a file storage's volume name spells (pve-storage ``Plugin.pm``
    ``parse_name_dir``: ``….raw``, ``….qcow2``, ``….vmdk``, ``….subvol``), or None."""
    found = re.search(r"\.(raw|qcow2|vmdk|subvol)\Z", volume.partition(":")[2])
    return found.group(1) if found else None


def added_volume_refusal(vmid: int, key: str, volume: Volume) -> str | None:
    """Why a mount point this state adds (at create, or to a live guest where ``key`` is not yet
    configured) cannot be declared as ``volume`` (parsed with the family's table), else None.

    A mount point that does not exist yet gets a new volume, ``storage:GiB``: naming an existing
    volume would attach it, and a volume of another vmid holds another guest's data (PVE attaches
    it: pve-container ``src/PVE/LXC/Config.pm`` ``update_pct_config`` only checks the caller may
    use the storage). A bind or device mount point is root@pam's (the caller says so).
    """
    if volume.kind != "volume":
        return None
    owner = volume_owner(volume.volume)
    whose = ""
    if owner is not None and owner != vmid:
        whose = f", a volume of vmid {owner} (its data would be shared with this guest)"
    elif owner == vmid:
        whose = ", a volume of this guest"
    return (
        f"{key}: {volume.volume} is an existing volume{whose}; a create allocates new volumes only, and so "
        f"does a mount point added to a live guest. Declare it as storage:GiB (e.g. {volume.storage}:8), not "
        "the existing volume."
    )


@dataclass(frozen=True)
class VolumeFamily:
    """How one guest family spells its volumes, for ``judge_volume``.

    ``parse``: a config value as a ``Volume`` (raises ValueError); ``options``: the table of its
    property string (``propstring.Format``: its defaults, and the options PVE prints right after
    the volume, ``lead``); ``move``: the command that moves a volume to another storage; ``noun``:
    what the messages call such a volume; ``shrink``: PVE's refusal of a shrink, quoted.
    """

    parse: Callable[[str], Volume]
    options: Format
    move: str
    noun: str
    shrink: str
    #: PVE prints the options sorted after ``lead`` (qemu-server ``print_drive``); False keeps the
    #: declared order (pve-container prints ``mp`` first, then the config's order).
    sort: bool = False


def _comparable(volume: Volume, family: VolumeFamily) -> dict[str, str]:
    """Options that define the volume (defaults dropped), without the volume id and its size."""
    text = ",".join(f"{key}={value}" for key, value in volume.options.items() if key != "size")
    return option_map(text, family.options)


@dataclass(frozen=True)
class VolumeVerdict:
    """What one declared mount point needs against its live value.

    ``put``: the value to write (live volume id and size, declared options); ``resize``: a grow
    size for ``PUT .../resize``; ``refuse``: why it cannot be done; ``root_only``: a bind/device
    change only root@pam may make.
    """

    put: str | None = None
    resize: str | None = None
    refuse: str | None = None
    root_only: bool = False

    @property
    def differs(self) -> bool:
        """True when the live mount point is not what was declared."""
        return any((self.put, self.resize, self.refuse, self.root_only))


def _live_write(live: Volume, want: Volume, family: VolumeFamily) -> str:
    """The declared options written onto the LIVE volume id and size, ``family.lead`` first as PVE
    prints them."""
    declared = {key: value for key, value in want.options.items() if key != "size"}
    if "size" in live.options:
        declared["size"] = live.options["size"]
    if family.sort:
        declared = dict(sorted(declared.items()))
    return ",".join([live.volume, print_pairs(declared, lead=family.options.lead)]).rstrip(",")


def judge_volume(key: str, declared: str, live: str, family: VolumeFamily) -> VolumeVerdict:
    """Compare a declared volume with the live one (pure; see the module docstring).

    ``family``: how the guest family spells volumes (``salt_proxmox.lxc.schema.VOLUMES``, the VM
    family's drives ``salt_proxmox.qemu.props.DRIVES``). A declared new disk ``storage:N`` against a live
    volume on the same storage: its size is the whole MiB a create allocates for N GiB
    (``new_volume_mib``), compared with the live size in whole MiB; larger grows to that many MiB
    after the config PUT, smaller is refused (pve-container: ``unable to shrink disk size``;
    qemu-server ``PVE/API2/Qemu.pm`` ``resize_vm``: ``shrinking disks is not supported``), another
    storage is refused (a move is ``pct move-volume`` / ``qm disk move``). An option change is
    written with the LIVE volume id and size, so PVE allocates nothing (pve-container
    ``create_disks`` and qemu-server ``create_disks`` allocate only for ``storage:N``).
    """
    want = family.parse(declared)
    have = family.parse(live)
    if want.host_path or have.host_path:
        if (
            want.kind != have.kind
            or want.volume != have.volume
            or _comparable(want, family) != _comparable(have, family)
        ):
            return VolumeVerdict(root_only=True)
        return VolumeVerdict()
    if want.kind == "new":
        # Storage ids are names: the /i of ``pve_verify_storage_id`` checks the format only.
        if want.storage != have.storage:
            return VolumeVerdict(
                refuse=(
                    f"{key}: the live volume {have.volume} is on storage {have.storage}, the declaration "
                    f"asks for {want.storage}. Moving a volume is `{family.move}`, not an update: run it "
                    "on the node, or declare the storage it is on."
                )
            )
        resize = None
        live_size = have.options.get("size")
        # The size a create gives ``storage:N``: whole MiB (``new_volume_mib``), so a fractional
        # N compares equal to what PVE made of it and a grow is sent in the same MiB. The live size
        # is compared in whole MiB too, the unit create_disks allocates in.
        wanted_mib = new_volume_mib(want.new_gib)
        if live_size is None:
            return VolumeVerdict(
                refuse=f"{key}: the live volume {have.volume} reports no size, so it cannot be compared."
            )
        have_mib = parse_size(live_size) // MIB
        if wanted_mib < have_mib:
            return VolumeVerdict(
                refuse=(
                    f"{key}: declared {want.new_gib}G is smaller than the live {live_size}. PVE cannot "
                    f"shrink {family.noun} ({family.shrink}); declare at least the live size."
                )
            )
        if wanted_mib > have_mib:
            resize = mib_text(wanted_mib)
        put = (
            _live_write(have, want, family)
            if _comparable(want, family) != _comparable(have, family)
            else None
        )
        return VolumeVerdict(put=put, resize=resize)
    if want.volume != have.volume:
        return VolumeVerdict(
            refuse=(
                f"{key}: the live volume is {have.volume}, the declaration names {want.volume}. Swapping "
                "a volume detaches the old one (PVE moves it to unusedN): do it by hand, or declare the "
                "live volume."
            )
        )
    if "size" in want.options and parse_size(want.options["size"]) != parse_size(
        have.options.get("size", "0")
    ):
        return VolumeVerdict(
            refuse=(
                f"{key}: size= on an existing volume is what PVE measured, not a request; declare the new "
                "size as storage:GiB to grow it."
            )
        )
    if _comparable(want, family) != _comparable(have, family):
        return VolumeVerdict(put=_live_write(have, want, family))
    return VolumeVerdict()


def size_option(value: str | None) -> str | None:
    """The ``size`` option of a container volume or a VM disk as PVE prints it
    (``local-lvm:vm-150-disk-0,size=8G`` → ``8G``; ``local-lvm:vm-300-disk-0,iothread=1,size=32G``
    → ``32G``), read with the property-string parser (``pairs``: its keys in any order, whatever
    other options the family has); None when it has none, or when it is no size ``parse_size``
    reads. Never raises: a return only shows it."""
    if not value:
        return None
    try:
        size = dict(pairs(value, default_key="volume")).get("size")
        if size is not None:
            parse_size(size)
    except ValueError:
        return None
    return size
