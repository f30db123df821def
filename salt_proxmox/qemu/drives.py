"""A VM's drives, declared against live: what a write changes and what it must refuse (pure).

``storage:GiB`` on a new key allocates (qemu-server ``create_disks``); on an existing disk it is
compared with the live size: larger grows in place with ``PUT …/resize``, smaller and another
storage are refused (``resize_vm``: "shrinking disks is not supported"; a move is ``qm disk move``);
options are written with the LIVE volume id and size, so nothing is re-allocated (``create_disks``
allocates only for ``$NEW_DISK_RE``); another volume, or a volume named on a drive that has none, is
refused (it would attach a volume, or move the old one to ``unusedN``:
``vmconfig_register_unused_drive``). A CD-ROM (``media=cdrom``: an ISO, ``none``, the host's
``cdrom``) is swapped like any value; PVE refuses a media change (``vmconfig_update_disk``: "unable
to change media type"). A CD-ROM names media, never a disk: any other volume is refused
(``cdrom_refusal``), a host path is root@pam's. A disk option the declaration does not name keeps its
live value, carried into every write of the disk (``carry_drive_options``): only declared options
are managed, as only declared keys are. ``efidisk0``/``tpmstate0`` follow ``special_drive_rules``;
an ISO a drive names is checked on its storage (``iso_volumes``, ``missing_iso_refusal``).
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal

from salt_proxmox.qemu import schema
from salt_proxmox.qemu.change import QemuChange, root_only
from salt_proxmox.qemu.props import DRIVES, QemuDeclaration, is_iso_volume, parse_drive, unparsable_drive
from salt_proxmox.wire.propstring import canonical_map
from salt_proxmox.wire.sizes import GIB, parse_size
from salt_proxmox.wire.volumes import judge_volume, volume_owner


def drive_changed(declared: str, live: str) -> frozenset[str]:
    """The drive options whose values differ (``volume`` when the volume differs), defaults dropped."""
    want, have = parse_drive(declared), parse_drive(live)
    a = _options_map(want.options)
    b = _options_map(have.options)
    out = {key for key in {*a, *b} if a.get(key) != b.get(key)}
    if want.kind not in ("new",) and want.volume != have.volume:
        out.add("volume")
    return frozenset(out)


def judge_drive(
    decl: QemuDeclaration, key: str, want: str, have: str | None, change: QemuChange, drift: set[str]
) -> None:
    """Judge drive ``key``: the declared value ``want`` (``''``: detach) against the live ``have``
    (None: absent), recording into ``change`` (``put``, ``resize``, ``refuse``, ``notes``) and adding
    ``key`` to ``drift`` when they differ. A new disk's size is ``storage:GiB``; a live one's is
    PVE's ``size=`` (``32G``, ``4M``). Raises ValueError (``props.parse_drive``) for a live value
    that does not parse as a drive.

    The rules, each with its qemu-server source, are this module's (its docstring): a detach is
    refused (``vmconfig_register_unused_drive``), an added drive goes through ``added_drive_refusal``,
    undeclared live options are carried (``carry_drive_options``), ``efidisk0``/``tpmstate0`` follow
    ``special_drive_rules``, a media change is refused (``vmconfig_update_disk``), a CD-ROM is swapped
    through ``cdrom_refusal``, and a disk's volume and size through ``judge_volume`` (``resize_vm``)."""
    if want == "":
        if have is not None:
            drift.add(key)
            change.refuse.append(
                f"{key}: detaching a drive moves its volume to unusedN (qemu-server "
                f"vmconfig_register_unused_drive); do it by hand (`qm set {decl.vmid} --delete {key}`) if "
                "that is what you want."
            )
        return
    declared = parse_drive(want)
    if have is None:
        drift.add(key)
        if refusal := added_drive_refusal(decl, key, want):
            change.refuse.append(refusal)
        else:
            change.put[key] = want
        return
    live = parse_drive(have)
    if not {declared.kind, live.kind} & {"cdrom", "cloudinit"}:
        want, carried = carry_drive_options(want, have)
        if carried and (why := unparsable_drive(key, parse_drive(want).options)):
            drift.add(key)
            change.refuse.append(carried_option_refusal(key, carried, why))
            return
        declared = parse_drive(want)
    if key in schema.SPECIAL_DRIVES:
        want, refusals, notes = special_drive_rules(decl, key, want, have)
        if refusals:
            drift.add(key)
            change.refuse.extend(refusals)
            return
        change.notes.extend(notes)
        declared = parse_drive(want)
    if {declared.kind, live.kind} & {"cdrom", "cloudinit"}:
        if declared.kind != live.kind and not {declared.kind, live.kind} <= {"cdrom", "cloudinit"}:
            drift.add(key)
            change.refuse.append(
                f"{key}: the live drive is a {_media(live.kind)}, the declaration a "
                f"{_media(declared.kind)}; PVE cannot change a drive's media (qemu-server "
                "vmconfig_update_disk: `unable to change media type`). Declare another drive key, or "
                "change it by hand."
            )
            return
        if declared.kind == "cloudinit" and live.kind == "cloudinit":
            if declared.storage != live.storage:
                drift.add(key)
                change.refuse.append(
                    f"{key}: the cloud-init drive is on storage {live.storage}, the declaration asks for "
                    f"{declared.storage}; move it by hand (`qm set {decl.vmid} --delete {key}` then add it)."
                )
            return
        if drive_changed(want, have) or declared.volume != live.volume:
            drift.add(key)
            if refusal := cdrom_refusal(decl, key, want):
                change.refuse.append(refusal)
            else:
                change.put[key] = want
        return
    if key in schema.SPECIAL_DRIVES and declared.kind == "new" and "size" in live.options:
        # create_disks ignores the GiB of a new efidisk0/tpmstate0 (the EFI vars template's size, 4 MiB
        # of TPM state; Drive.pm $efidisk_desc/$tpmstate_desc): the live size is the declared one.
        gib = Decimal(parse_size(live.options["size"])) / GIB
        want = ",".join([f"{declared.storage}:{gib:f}", *(f"{k}={v}" for k, v in declared.options.items())])
    verdict = judge_volume(key, want, have, DRIVES)
    if change.take_volume(key, verdict, root_only(decl, key, want, "A drive on a host path.")):
        drift.add(key)


def carry_drive_options(declared: str, live: str) -> tuple[str, dict[str, str]]:
    """``(value to judge and write, carried options)``: ``declared`` plus every option of the live
    disk it does not name, ``size`` aside (PVE's measure, judged by ``judge_volume``).

    A drive option the declaration leaves out (``cache``, ``discard``, ``iothread``, ``ssd``, ``aio``,
    ``backup``, ``replicate``, ``ro``, ``serial``, ``wwn``, the ``iops*``/``mbps*`` limits, an EFI
    disk's ``efitype``/``pre-enrolled-keys``/``ms-cert``, a TPM state's ``version``, …) is not managed,
    as a top-level key left out is not: it keeps its live value, carried into the write like the MAC of
    a ``netN`` (``wire.propstring.carry``). ``update_vm_api`` stores a drive value whole (``parse_drive``
    then ``print_drive``), so a write without it would drop it: a clone's configure step would lose the
    template's ``cache=``. A declared option is compared and written. To remove one, declare PVE's
    default for it (``discard=ignore``, ``iothread=0``, ``ssd=0``, ``ro=0``, ``backup=1``,
    ``replicate=1``, ``detect_zeroes=1``, a limit ``0``: ``Drive.pm``/``Blockdev.pm`` test them for
    truth); ``cache``, ``aio``, ``serial`` and ``wwn`` have no value that means unset (``Drive.pm``'s
    ``cache`` enum is ``none writethrough writeback unsafe directsync``; unset, ``QemuServer.pm``
    ``print_drive_commandline`` runs the disk with ``cache=none`` except on btrfs without ``nocow``),
    so removing one is ``qm set <vmid> --<disk> <value without it>`` by hand."""
    want, have = parse_drive(declared), parse_drive(live)
    carried = {key: value for key, value in have.options.items() if key not in want.options and key != "size"}
    if not carried:
        return declared, {}
    return ",".join([declared, *(f"{key}={value}" for key, value in carried.items())]), carried


def carried_option_refusal(key: str, carried: Mapping[str, str], why: str) -> str:
    """The refusal of a drive write that the live options it carries (``carry_drive_options``) make
    one PVE cannot parse (``unparsable_drive``: a total limit declared beside a live read/write one)."""
    kept = ", ".join(f"{option}={value}" for option, value in carried.items())
    return (
        f"{key}: the live {kept} is kept, since the declaration does not name it, and with the declared "
        f"options PVE refuses the drive: {why}. Declare the live option too, with the value you want (0 "
        "turns a limit off)."
    )


def _options_map(options: Mapping[str, str]) -> dict[str, str]:
    """A drive's options (not volume or size) in canonical spelling, ``schema.DRIVE``'s defaults dropped."""
    return canonical_map(((k, v) for k, v in options.items() if k != "size"), schema.DRIVE)


def _drive_map(value: str) -> dict[str, str]:
    """A drive's options (not volume or size) in canonical spelling, defaults dropped."""
    return _options_map(parse_drive(value).options)


#: ``Drive.pm`` ``%efitype_fmt`` ``ms-cert``: ``2023`` and ``2023w`` are deprecated markers; enrolling
#: writes ``2023k`` (``OVMF.pm`` ``ensure_ms_2023_cert_enrolled``).
MS_CERT_DEPRECATED = ("2023", "2023w")


def special_drive_rules(
    decl: QemuDeclaration, key: str, want: str, have: str
) -> tuple[str, list[str], list[str]]:
    """``(value to judge, refusals, notes)`` for a declared ``efidisk0``/``tpmstate0`` against the
    live one (qemu-server 9.0.27+ and 8.4.6+ on ``ms-cert``; the rest since PVE 7).

    - ``ms-cert`` is PVE's marker unless declared: ``OVMF.pm`` ``create_efidisk`` adds ``ms-cert=2023k``
      when it copies a vars template with ``pre-enrolled-keys`` that holds the Microsoft UEFI CA 2023,
      so an undeclared one is carried into the value judged and written. A declared ``2023k`` over
      another marker is a key enrollment (``drive_change`` runs ``ensure_ms_2023_cert_enrolled``,
      ``virt-fw-vars``, when the pending change is applied: at once on a stopped VM, at the next start
      of a running one): a note. Without ``pre-enrolled-keys`` PVE enrolls nothing and drops the
      marker (``should_enroll_ms_2023_cert``); ``2023``/``2023w`` become ``2023k``; a marker away
      from ``2023k`` changes only the text ("the marker is not the source of truth"): refused.
    - ``efitype`` and ``pre-enrolled-keys`` of an existing EFI disk: ``create_disks`` copies the
      OVMF vars template only for a new disk (``create_efidisk``), so a change rewrites only the
      config text while the vars keep their size and keys: refused, naming a new EFI disk.
    - ``tpmstate0`` ``version``: ``API2/Qemu.pm`` ``prohibit_tpm_version_change`` dies
      ``cannot change TPM state version after creation``: refused, naming a new TPM state.
    """
    a, b = _drive_map(want), _drive_map(have)
    volume = parse_drive(have).volume
    storage = volume.partition(":")[0]
    vmid, refusals, notes = decl.vmid, [], []
    if key == "tpmstate0":
        default = schema.DRIVE.defaults["version"]
        had, wanted = b.get("version", default), a.get("version", default)
        if wanted != had:
            refusals.append(
                f"tpmstate0: version {had} -> {wanted}: PVE refuses it (qemu-server API2/Qemu.pm "
                "prohibit_tpm_version_change: `cannot change TPM state version after creation`). A new "
                "TPM state loses what the guest sealed in it (BitLocker keys): with VM "
                f"{vmid} shut down, `qm set {vmid} --delete tpmstate0` (the old volume becomes "
                f"unusedN), then `qm set {vmid} --tpmstate0 {storage}:1,version={wanted}`."
            )
        return want, refusals, notes
    value = ",".join([f"{storage}:1", *(f"{k}={v}" for k, v in sorted(a.items()) if k != "ms-cert")])
    new_disk = (
        f"with VM {vmid} shut down, `qm set {vmid} --delete efidisk0` (the old volume becomes "
        f"unusedN), then `qm set {vmid} --efidisk0 {value}` (the EFI variables, boot entries "
        "included, start from the template again)"
    )
    for option in ("efitype", "pre-enrolled-keys"):
        default = schema.DRIVE.defaults[option]
        if a.get(option, default) != b.get(option, default):
            refusals.append(
                f"efidisk0: {option} {b.get(option, default)} -> {a.get(option, default)}: on an "
                "existing EFI disk PVE rewrites only the config text; the EFI vars on "
                f"{volume} keep the size and keys of the template they were copied from "
                "(qemu-server API2/Qemu.pm create_disks runs OVMF.pm create_efidisk for a new disk "
                f"only). For a new EFI disk: {new_disk}."
            )
    if refusals:
        return want, refusals, notes
    if "ms-cert" not in parse_drive(want).options:
        marker = parse_drive(have).options.get("ms-cert")
        return (f"{want},ms-cert={marker}" if marker else want), [], []
    wanted, had = (side.get("ms-cert", schema.DRIVE.defaults["ms-cert"]) for side in (a, b))
    if wanted == had:
        return want, [], []
    if wanted in MS_CERT_DEPRECATED:
        refusals.append(
            f"efidisk0: ms-cert={wanted} is a deprecated marker; PVE enrolls the 2023 "
            "certificates and writes ms-cert=2023k (qemu-server OVMF.pm "
            "ensure_ms_2023_cert_enrolled), so it would differ again. Declare ms-cert=2023k, or "
            "leave ms-cert out (it is PVE's marker)."
        )
    elif wanted.startswith("2023") and a.get("pre-enrolled-keys") != "1":
        refusals.append(
            f"efidisk0: ms-cert={wanted} without pre-enrolled-keys=1: PVE enrolls nothing and "
            "drops the marker (qemu-server OVMF.pm should_enroll_ms_2023_cert), so it would "
            "differ again. Leave ms-cert out."
        )
    elif not wanted.startswith("2023"):
        refusals.append(
            f"efidisk0: ms-cert {had} -> {wanted}: PVE rewrites only the marker; the certificates "
            f"enrolled in {volume} stay (qemu-server OVMF.pm drive_change: the marker is not the "
            "source of truth). Leave ms-cert out of the declaration (it is PVE's marker), or make "
            f"a new EFI disk: {new_disk}."
        )
    else:
        notes.append(
            f"VM {vmid} on {decl.node}: efidisk0: ms-cert {had} -> 2023k enrolls the Microsoft "
            "UEFI CA 2023, Windows UEFI CA 2023 and Microsoft Corporation KEK 2K CA 2023 "
            f"certificates into the EFI vars of {volume} (qemu-server OVMF.pm drive_change -> "
            "ensure_ms_2023_cert_enrolled, virt-fw-vars) when the change is applied: at once on a "
            "stopped VM, at its next start on a running one"
        )
    return want, refusals, notes


def _media(kind: str) -> str:
    return {"cdrom": "CD-ROM", "cloudinit": "cloud-init drive"}.get(kind, "disk")


def _whose(decl: QemuDeclaration, volume: str) -> str:
    """``, a volume of vmid N (...)`` or ``, a volume of this VM`` by pve-storage's naming; ``''``
    when the name does not say."""
    owner = volume_owner(volume)
    if owner is not None and owner != decl.vmid:
        return f", a volume of vmid {owner} (its data would be shared with this VM)"
    return ", a volume of this VM" if owner == decl.vmid else ""


def cdrom_refusal(decl: QemuDeclaration, key: str, value: str) -> str | None:
    """Why CD-ROM ``value`` (``media=cdrom``) cannot be written to ``key``, else None (and None for a
    value that is no CD-ROM). A CD-ROM names media: an ISO image (``storage:iso/<file>``,
    ``props.is_iso_volume``), ``none`` or ``cdrom`` (the host's drive: qemu-server ``API2/Qemu.pm``
    ``$check_storage_access`` asks Sys.Console on ``/``, not root@pam). A host path is root@pam's
    (pve-storage ``check_volume_access``: "Only root can pass arbitrary filesystem paths").

    Any other volume is refused as a disk would be: ``$check_storage_access`` lets a CD-ROM name an
    ``images`` volume as well as an ``iso`` one, and ``check_volume_access`` lets through any volume
    the caller may access (a holder of Datastore.Allocate on its storage may name another guest's
    disk), so VM.Config.CDROM would attach another guest's data to this VM as its media."""
    drive = parse_drive(value)
    if drive.kind != "cdrom" or drive.volume in ("none", "cdrom") or is_iso_volume(drive.volume):
        return None
    if drive.storage is None:
        return root_only(decl, key, value, "A CD-ROM on a host path.")
    return (
        f"{key}: {drive.volume} is not an ISO image{_whose(decl, drive.volume)}; a CD-ROM names media "
        "(storage:iso/<file>.iso, none or cdrom), never a disk. PVE would attach it as this VM's media "
        "(qemu-server $check_storage_access takes an images volume on a CD-ROM, and pve-storage "
        "check_volume_access lets through any volume the caller may access), giving the VM another "
        "guest's data. Declare an ISO image, none or cdrom."
    )


def added_drive_refusal(decl: QemuDeclaration, key: str, value: str) -> str | None:
    """Why a drive this state adds (at create, or to a live VM where ``key`` is not configured)
    cannot be declared as ``value``, else None: a new disk is ``storage:GiB``, a CD-ROM an ISO,
    ``none`` or ``cdrom`` (``cdrom_refusal``), a cloud-init drive ``storage:cloudinit``; an existing
    disk volume would be attached (another guest's data, or a volume of this VM's ``unusedN``), a
    host path is root@pam's."""
    drive = parse_drive(value)
    if drive.kind == "cdrom":
        return cdrom_refusal(decl, key, value)
    if drive.kind in ("new", "cloudinit"):
        return None
    if drive.kind == "device":
        return root_only(decl, key, value, "A drive on a host path.")
    return (
        f"{key}: {drive.volume} is an existing volume{_whose(decl, drive.volume)}; a new drive allocates a "
        f"new volume. Declare it as storage:GiB (e.g. {drive.storage}:32), not the existing volume."
    )


def iso_volumes(values: Mapping[str, str]) -> dict[str, str]:
    """The ISO volume each CD-ROM value of ``values`` (drive key -> value to write) names:
    ``{'ide2': 'local:iso/debian.iso'}``; ``none`` (no medium) and ``cdrom`` (the host's drive)
    name no volume. Values that are not CD-ROMs are left out."""
    out = {}
    for key, value in values.items():
        if not value or not schema.is_drive(key):
            continue
        drive = parse_drive(value)
        if drive.kind == "cdrom" and drive.storage is not None:
            out[key] = drive.volume
    return out


def missing_iso_refusal(decl: QemuDeclaration, key: str, volid: str, said: str) -> str:
    """A refusal of a CD-ROM whose ISO PVE says is not there (``said``: PVE's answer): qemu-server
    refuses the write (``create_disks``/``vmconfig_update_disk`` resolve it with
    ``PVE::Storage::path``/``volume_size_info``: "volume '<volid>' does not exist")."""
    storage = volid.partition(":")[0]
    return (
        f"{key}: {volid} is not on storage {storage} as node {decl.node} sees it (PVE: {said.rstrip('.')}); "
        f"PVE would refuse VM {decl.vmid}'s write of it (qemu-server create_disks: volume does not exist). "
        f"Upload the ISO to {storage}, or correct the volume id, then plan again."
    )


def unchecked_iso_note(decl: QemuDeclaration, key: str, volid: str) -> str:
    """What a plan says when the read credential may not look at an ISO (HTTP 403: pve-storage
    ``check_volume_access`` wants Datastore.Audit or Datastore.AllocateSpace on its storage)."""
    storage = volid.partition(":")[0]
    return (
        f"VM {decl.vmid} on {decl.node}: {key}: could not check that {volid} exists: the read credential "
        f"needs Datastore.Audit (or Datastore.AllocateSpace) on /storage/{storage}; the write fails if it "
        "is missing"
    )


def drift_changed(new: str, old: str) -> frozenset[str]:
    """``drive_changed`` that never raises (a value PVE printed that does not parse counts as a
    volume change, the strictest case)."""
    try:
        return drive_changed(new, old)
    except ValueError:
        return frozenset({"volume"})
