"""A VM declaration, and the VM's property strings: drives, NICs, ``sshkeys``, ``memory``, ``cpu``.

Bad input is refused here, before any network call, with one sentence per key naming the key and
the rule (docs/design.md §3). The property strings are parsed as qemu-server parses them
(pve-common ``PVE/JSONSchema.pm`` ``parse_property_string`` over the formats in
``salt_proxmox.qemu.schema``) and printed in PVE's order (``print_property_string``: the default
key first, then the rest sorted), so a value this module writes reads back the same.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import quote, unquote

from salt_proxmox.errors import DeclarationError, boolean_problem, shown
from salt_proxmox.guest.props import CONTROL, config_problems, guest_problems, secret_problem, wired_value
from salt_proxmox.guest.restore import archive_problem
from salt_proxmox.pve.constraints import (
    check_size,
    options_problem,
    post_problem,
    vmid_number,
)
from salt_proxmox.qemu import schema
from salt_proxmox.qemu.schema import NIC_MODELS
from salt_proxmox.wire.propstring import canonical_option, pairs, pve_boolean
from salt_proxmox.wire.volumes import STORAGE_ID, Volume, VolumeFamily

#: qemu-server ``PVE/QemuServer/Drive.pm`` ``$NEW_DISK_RE``: ``[storage:]N`` (GiB); a storage is
#: required here, since a create without ``storage`` has no default to fall back on.
_NEW = re.compile(r"^([a-z][a-z0-9\-_.]*[a-z0-9]):(\d+(?:\.\d+)?)\Z", re.IGNORECASE | re.ASCII)
_SIZE_LIKE = re.compile(r"^[-+]?\d+(?:\.\d+)?[A-Za-z]*\Z", re.ASCII)


def drive_options(key: str) -> frozenset[str]:
    """The options drive ``key`` takes (``scsi3`` → ``schema.DRIVE_OPTIONS['scsi']``)."""
    return schema.DRIVE_OPTIONS[key if key in schema.SPECIAL_DRIVES else schema.family_of(key)]


def parse_drive(value: str) -> Volume:
    """Parse a drive value (``local-lvm:32,discard=on``, ``local-lvm:vm-100-disk-0,size=32G``,
    ``local:iso/debian.iso,media=cdrom``, ``none,media=cdrom``, ``local-lvm:cloudinit``).

    ``kind``: ``new`` (``storage:GiB``, allocated by qemu-server ``create_disks``), ``volume``
    (an existing ``storage:volname``), ``cdrom`` (``media=cdrom``: an ISO volume, ``none`` or the
    host's ``cdrom``), ``cloudinit`` (``storage:cloudinit``, or the ``vm-N-cloudinit`` volume PVE
    made of it, always ``media=cdrom``), ``device`` (a host path: root@pam only, pve-storage
    ``check_volume_access``: "only root can pass arbitrary filesystem paths"). ``file=`` is
    ``volume``'s alias, as in ``Drive.pm``. Raises ValueError for a malformed value.
    """
    options = dict(pairs(value, schema.DRIVE.default_key))
    if "file" in options:
        if "volume" in options:
            raise ValueError("file= and a bare volume name the same thing; give one")
        options["volume"] = options.pop("file")
    volume = options.pop("volume", "")
    if not volume:
        raise ValueError("a drive needs a volume (storage:GiB, storage:volume, or none/ISO with media=cdrom)")
    storage, colon, name = volume.partition(":")
    cdrom = options.get("media") == "cdrom"
    if name == "cloudinit" or (colon and re.search(r"(?:^|/)vm-\d+-cloudinit(?:\.\w+)?$", name)):
        return Volume("cloudinit", volume, storage=storage, options=options)
    if cdrom:
        return Volume("cdrom", volume, storage=storage if colon else None, options=options)
    new = _NEW.match(volume)
    if new:
        return Volume("new", volume, storage=new.group(1), new_gib=new.group(2), options=options)
    if volume.startswith("/"):
        return Volume("device", volume, options=options)
    if _SIZE_LIKE.match(name) or not colon or not name or not STORAGE_ID.match(storage):
        raise ValueError(f"{volume!r} is not storage:GiB, storage:volume or none/an ISO with media=cdrom")
    return Volume("volume", volume, storage=storage, options=options)


#: VM drives for ``salt_proxmox.wire.volumes.judge_volume``.
DRIVES = VolumeFamily(
    parse=parse_drive,
    options=schema.DRIVE,
    move="qm disk move",
    noun="a VM disk",
    shrink="qemu-server resize_vm: `shrinking disks is not supported`",
    sort=True,
)


def is_iso_volume(volume: str) -> bool:
    """Whether ``storage:volname`` names an ISO image: pve-storage ``Plugin.pm`` ``parse_volname``
    gives content type ``iso`` to ``iso/<file>`` (``$ISO_EXT_RE_0``: ``.iso``, ``.img``) and to
    nothing else; a storage's ISO images are listed with that volid (``local:iso/debian.iso``)."""
    storage, colon, volname = volume.partition(":")
    return bool(colon and storage and re.fullmatch(r"iso/[^/]+\.(?:iso|img)", volname, re.IGNORECASE))


def drive_problem(key: str, value: str) -> str | None:
    """Why ``value`` is not a valid drive ``key``, else None (options of that bus, each valid; an
    ISO needs ``media=cdrom``, as qemu-server ``$check_drive_param`` demands)."""
    try:
        drive = parse_drive(value)
    except ValueError as exc:
        return str(exc)
    rules = {option: schema.DRIVE.rules[option] for option in drive_options(key) - {"volume"}}
    reason = options_problem(",".join(f"{k}={v}" for k, v in drive.options.items()), rules)
    if reason:
        return reason
    if "size" in drive.options:
        reason = check_size(drive.options["size"])
        if reason:
            return f"size={drive.options['size']}: {reason}"
    volname = drive.volume.partition(":")[2]
    if drive.kind == "volume" and (volname.startswith("iso/") or volname.endswith(".iso")):
        return "explicit 'media=cdrom' is required for iso images (qemu-server $check_drive_param)"
    reason = unparsable_drive(key, drive.options)
    if reason:
        return reason
    if drive.kind == "cdrom" and key in schema.SPECIAL_DRIVES:
        return f"{key} cannot be a CD-ROM"
    named = drive.volume in ("none", "cdrom") or drive.volume.startswith("/")  # a host path: root@pam's
    if drive.kind == "cdrom" and drive.storage is None and not named:
        return f"{drive.volume!r} is not none, cdrom or an ISO volume (storage:iso/file.iso)"
    return None


#: ``Drive.pm`` ``parse_drive``: an option set only beside another (``mbps_max`` needs ``mbps``, a
#: burst length its ``*_max``). qemu-server lists ``miops*_max`` there, options that do not exist,
#: so ``iops_max`` without ``iops`` passes.
THROTTLE_REQUIRES = {
    "mbps_max": "mbps",
    "mbps_rd_max": "mbps_rd",
    "mbps_wr_max": "mbps_wr",
    "bps_max_length": "mbps_max",
    "bps_rd_max_length": "mbps_rd_max",
    "bps_wr_max_length": "mbps_wr_max",
    "iops_max_length": "iops_max",
    "iops_rd_max_length": "iops_rd_max",
    "iops_wr_max_length": "iops_wr_max",
}
#: ``parse_drive``: a total limit excludes the read and write ones.
THROTTLE_EXCLUSIVE = (("mbps", "mbps_rd"), ("mbps", "mbps_wr"), ("iops", "iops_rd"), ("iops", "iops_wr"))


def _set(options: Mapping[str, str], key: str) -> bool:
    """Perl truth of an option as ``parse_drive`` tests it: present and neither ``''`` nor ``'0'``
    (a string ``0.0`` is true in Perl)."""
    return options.get(key, "") not in ("", "0")


def unparsable_drive(key: str, options: Mapping[str, str]) -> str | None:
    """Why qemu-server's ``parse_drive`` (``PVE/QemuServer/Drive.pm``) returns nothing for drive
    ``key`` with ``options``, or rewrites them so they never read back as declared; else None.
    ``update_vm_api``/``create_vm`` then refuse the write (``$check_drive_param``: "unable to parse
    drive options").

    - ``bps``/``bps_rd``/``bps_wr``: deleted and stored as ``mbps*`` (as written, ``mbps=0.000``:
      the code converts ``defined(...)``, not the value), so the declaration would differ forever;
    - ``mbps`` with ``mbps_rd``/``mbps_wr``, ``iops`` with ``iops_rd``/``iops_wr``;
    - a ``*_max`` without its base, a burst ``*_length`` without its ``*_max`` (``THROTTLE_REQUIRES``);
    - a CD-ROM (``media=cdrom``) with ``snapshot`` or ``format``, or on ``virtioN``.
    """
    why = "qemu-server Drive.pm parse_drive; PVE answers `unable to parse drive options`"
    for option in ("bps", "bps_rd", "bps_wr"):
        if option in options:
            return (
                f"{option}= is stored by PVE as m{option}= in MB/s, not as declared (qemu-server Drive.pm "
                f"parse_drive deletes {option} and writes m{option}), so it would differ on every run; "
                f"declare m{option}=<MB/s> instead"
            )
    for total, part in THROTTLE_EXCLUSIVE:
        if _set(options, total) and _set(options, part):
            return f"{total}= excludes {part}= ({why}); declare the total or the read/write limits"
    for option, base in THROTTLE_REQUIRES.items():
        if _set(options, option) and not _set(options, base):
            return f"{option}= requires {base}= ({why})"
    if options.get("media") == "cdrom":
        if schema.family_of(key) == "virtio":
            return (
                f"a CD-ROM cannot be on {key}: VirtIO block has no CD-ROM ({why}); use ideN, sataN or scsiN"
            )
        if (
            options.get("format")
            or canonical_option("snapshot", options.get("snapshot", "0"), schema.DRIVE) != "0"
        ):
            option = "format" if options.get("format") else "snapshot"
            return f"a CD-ROM takes no {option}= ({why})"
    return None


def parse_net(value: str) -> dict[str, str]:
    """A ``netN`` value as ``{'model': ..., 'macaddr': ..., option: value}``.

    ``PVE/QemuServer/Network.pm`` ``$net_fmt``: the model is the default key and each model name
    is a key alias whose value is the MAC (``virtio=BC:24:11:2E:4B:7A``), so ``virtio``,
    ``model=virtio``, ``virtio=<MAC>`` and ``model=virtio,macaddr=<MAC>`` are one NIC. Raises
    ValueError for an unknown option or model, or two models.
    """
    out: dict[str, str] = {}
    for key, raw in pairs(value, schema.NET.default_key):
        if key in NIC_MODELS:
            if "model" in out:
                raise ValueError(f"{key}= names a second model; a NIC has one")
            out["model"] = key
            if raw:
                out["macaddr"] = raw
            continue
        if key == "model" and "model" in out:
            raise ValueError("two models; a NIC has one")
        out[key] = raw
    if out.get("model") not in NIC_MODELS:
        raise ValueError(f"a NIC needs a model ({', '.join(NIC_MODELS)}), e.g. virtio,bridge=vmbr0")
    return out


def print_net(net: Mapping[str, str]) -> str:
    """A NIC as PVE prints it (``print_net``): ``<model>[=<MAC>]``, then the options sorted."""
    head = net["model"] + (f"={net['macaddr']}" if net.get("macaddr") else "")
    rest = [f"{key}={net[key]}" for key in sorted(net) if key not in ("model", "macaddr")]
    return ",".join([head, *rest])


def net_problem(value: str) -> str | None:
    """Why ``value`` is not a valid ``netN``, else None (``$net_fmt``; the MAC a unicast address,
    pve-common ``pve_verify_mac_addr``)."""
    try:
        net = parse_net(value)
    except ValueError as exc:
        return str(exc)
    return options_problem(",".join(f"{k}={v}" for k, v in net.items()), schema.NET.rules)


#: pve-common ``PVE/JSONSchema.pm`` ``pve_verify_urlencoded``: ``^[-%a-zA-Z0-9_.!~*'()]*$``.
_URLENCODED = re.compile(r"^[-%a-zA-Z0-9_.!~*'()]*\Z", re.ASCII)


def sshkeys_wire(keys: str) -> str:
    """``sshkeys`` as PVE takes it: URL-encoded as pve-manager's ``SSHKey.js`` does
    (``encodeURIComponent``: every byte but ``A-Za-z0-9-_.!~*'()`` as ``%XX``, a space as ``%20``,
    never ``+``), which is what pve-common's ``urlencoded`` format accepts; qemu-server decodes it
    with ``URI::Escape::uri_unescape`` (``PVE/QemuServer/Cloudinit.pm``, ``PVE/API2/Qemu.pm``
    ``update_vm``). A value already in that encoding is kept as it is."""
    if _URLENCODED.match(keys) and "%" in keys:
        return keys
    return quote(keys, safe="!~*'()")


def sshkeys_text(value: str) -> str:
    """The keys an ``sshkeys`` value holds, one per line, blank lines and surrounding space dropped
    (``uri_unescape``; qemu-server splits on ``\\s*\\n\\s*``), for comparing."""
    text = unquote(value) if _URLENCODED.match(value) else value
    return "\n".join(line.strip() for line in text.splitlines() if line.strip())


@dataclass(frozen=True)
class QemuDeclaration:
    """One declared VM.

    ``config`` maps VM config keys (``name``, ``memory``, ``scsi0``, ``net0``, ``sshkeys`` …) to
    their wire strings (``sshkeys`` URL-encoded); ``''`` asks to clear the key. ``clone`` (a
    template's vmid), ``full`` and ``storage`` shape the create by clone. ``pool``: as for
    containers (None leaves membership alone, ``''`` is no pool). ``secrets``: ``cipassword``,
    sent only, never in a repr, a return or grains. ``cipassword_serial``: the operator's counter
    for the password; a new value asks for the declared password to be written again.
    ``default_name``: the name a create gives the VM when ``config`` declares none (its state id,
    with ``name_from_id: true``); a live VM keeps its own name, since an undeclared key is never
    drift, so adopting a VM under another state id does not rename it.
    """

    state_id: str
    target: str
    node: str
    vmid: int
    adopt: bool = False
    removal: str = "retain"
    config: dict[str, str] = field(default_factory=dict)
    clone: int | None = None
    #: A create by restore: the backup volume (``guest.restore``), in place of a create from scratch
    #: or by clone; ``storage`` then names where its disks go.
    restore: str | None = None
    #: A restore's ``unique`` (new MACs, vmgenid, smbios1 uuid; ``guest.restore``): true unless declared
    #: false.
    unique: bool = True
    full: bool | None = None
    storage: str | None = None
    pool: str | None = None
    reboot_for_pending: bool = False
    cipassword_serial: int | None = None
    default_name: str | None = None
    secrets: dict[str, str] = field(default_factory=dict, repr=False, compare=False)

    def stored(self) -> dict[str, object]:
        """The declaration as grains keep it: identity and config, without the description (notes
        a human wrote) and without any secret; the password only by its serial."""
        out: dict[str, object] = {key: value for key, value in self.config.items() if key != "description"}
        out["node"] = self.node
        out["vmid"] = self.vmid
        if self.clone is not None:
            out["clone"] = self.clone
        if self.restore is not None:
            out["restore"] = self.restore
        if self.cipassword_serial is not None:
            out["cipassword_serial"] = self.cipassword_serial
        return out


#: Keys that shape the create only; never config.
CREATE_ONLY = frozenset({"clone", "full", "storage", "restore", "unique"})


def _problem_for(key: str, value: str) -> str | None:
    """Why ``value`` is not a valid ``key`` (its rule in ``schema`` or property-string format), else
    None. ``''`` (clear) passes here: ``parse_declaration`` refuses it for ``memory`` (PVE would fall
    back to 512 MiB silently) and refuses the keys PVE generates whatever their value."""
    family = schema.family_of(key)
    if value == "":
        return None
    if schema.is_drive(key):
        return drive_problem(key, value)
    if family == "net":
        return net_problem(value)
    if family == "ipconfig":
        return schema.check_ipconfig(value)
    if family == "serial":
        if value == "socket" or value.startswith("/dev/"):
            return None
        return "socket or a host device /dev/..."
    if family in ("hostpci", "usb"):
        try:
            options = dict(pairs(value, "host"))
        except ValueError as exc:
            return str(exc)
        if not options.get("host") and not options.get("mapping"):
            return "either 'host' or 'mapping' must be set (qemu-server check_hostpci_perm/check_usb_perm)"
        return None
    if key in schema.SCALARS:
        return schema.SCALARS[key].rule.problem(value)
    return None


def _serial(value: object) -> tuple[int | None, str | None]:
    if isinstance(value, bool) or not isinstance(value, int | str) or not re.fullmatch(r"[0-9]+", str(value)):
        return (
            None,
            f"expected a whole number (bump it to write the declared password again), got {shown(value)}",
        )
    return int(str(value)), None


def parse_declaration(
    state_id: str,
    *,
    vmid: object,
    node: object,
    target: object,
    adopt: object = False,
    removal: object = "retain",
    config: Mapping[str, object] | None = None,
    reboot_for_pending: object = False,
) -> QemuDeclaration:
    """Check a ``proxmox_qemu`` declaration and return it in wire spelling.

    Raises DeclarationError listing every problem: an unknown key, a value of the wrong type, a
    value qemu-server's schema rejects, a key PVE generates (``vmgenid``, ``meta``), a secret
    that is not one line of text. A secret's value is never repeated in a message.
    """
    number, problems = guest_problems(vmid, node, target, adopt, removal, reboot_for_pending)
    wired: dict[str, str] = {}
    secrets: dict[str, str] = {}
    extra: dict[str, object] = {}

    def take(key: str, raw: object) -> list[str]:
        problems: list[str] = []
        _take(key, raw, problems)
        return problems

    def _take(key: str, raw: object, problems: list[str]) -> None:
        if key == "cipassword_serial":
            extra[key], problem = _serial(raw)
            if problem:
                problems.append(f"{key}: {problem}")
            return
        if key == "unique":
            problem = boolean_problem("unique", raw)
            if problem:
                problems.append(problem)
            else:
                extra["unique"] = raw
            return
        if key == "restore":
            problem = archive_problem("qemu", raw) if isinstance(raw, str) else "expected a backup volume id"
            if problem:
                problems.append(f"restore: {problem}")
            else:
                extra["restore"] = raw
            return
        if key == "clone":
            try:
                extra["clone"] = vmid_number(raw)
            except DeclarationError as exc:
                problems += [problem.replace("vmid", "clone", 1) for problem in exc.problems]
            return
        if key == "name_from_id":
            # The state's name is the state id, not a declared PVE name: the create names the VM so.
            problem = boolean_problem(key, raw)
            if problem:
                problems.append(problem)
            else:
                extra["name_from_id"] = raw
            return
        if key == "full":
            # clone_vm's full is a PVE boolean: PVE's spellings, nothing else.
            full, problem = pve_boolean("full", raw)
            if problem:
                problems.append(problem)
            else:
                extra["full"] = full
            return
        if key == "storage":
            if not isinstance(raw, str) or not STORAGE_ID.match(raw):
                problems.append(f"storage: {shown(raw)} is not a storage id (pve-storage-id)")
            else:
                extra["storage"] = raw
            return
        if key in schema.SECRETS:
            if not isinstance(raw, str) or not raw or CONTROL.search(raw):
                problems.append(f"{key}: expected one line of text; the value is not repeated here")
            elif raw == schema.PASSWORD_MASK:
                # update_vm_api hashes what it is given (encrypt_pw): the mask would become the password.
                problems.append(
                    f"{key}: {schema.PASSWORD_MASK} is PVE's mask for a set password (qemu-server "
                    "API2/Qemu.pm vm_config shows it in the password's place), not a password: sent, "
                    "update_vm_api would hash it and make it the guest's password. Put the password "
                    "itself in pillar, or leave cipassword out to keep the one the VM has."
                )
            elif post_problem({key: raw}):
                problems.append(f"{key}: {post_problem({key: raw}, secrets={key}).partition(': ')[2]}")
            else:
                secrets[key] = raw
            return
        if key in schema.GENERATED:
            problems.append(
                f"{key}: PVE generates it once for each VM and keeps it (qemu-server create_vm); it is not "
                "declared. Remove it from the declaration."
            )
            return
        if not schema.is_config_key(key):
            problems.append(
                f"{shown(key, quote=False)}: not a VM config key this state manages (see qemu-server "
                "PVE/QemuServer.pm $confdesc); remove it from the declaration"
            )
            return
        if key == "sshkeys":
            problem = (
                secret_problem("ssh-public-keys", sshkeys_text(raw))
                if isinstance(raw, str)
                else "expected text"
            )
            if problem and raw != "":
                problems.append(f"sshkeys: {problem}")
                return
            wired[key] = sshkeys_wire(raw) if raw else ""
            if post_problem({key: wired[key]}):
                problems.append(f"{key}: {post_problem({key: wired[key]}, secrets={key}).partition(': ')[2]}")
            return
        spec = schema.SCALARS.get(key)
        value, problem = wired_value(key, raw, spec.rule.kind if spec is not None else "string")
        if problem:
            problems.append(f"{key}: {problem}")
            return
        if value == "" and key == "memory":
            problems.append("memory: declare the MiB it should have; clearing it falls back to 512 MiB")
            return
        problem = _problem_for(key, value)
        if problem:
            problems.append(f"{key}: {problem}")
            return
        wired[key] = value

    found, extra["pool"] = config_problems(config, take)
    problems += found
    if "full" in extra and "clone" not in extra:
        problems.append("full: only a create by clone takes it; declare clone: <template vmid>")
    if "unique" in extra and "restore" not in extra:
        problems.append("unique: only a create by restore takes it; declare restore: <backup volume>")
    if "restore" in extra and "clone" in extra:
        problems.append("restore: a VM is cloned or restored from a backup, not both; drop one")
    if "storage" in extra and "clone" not in extra and "restore" not in extra:
        problems.append(
            "storage: only a create by clone or restore takes it (a new disk names its storage: "
            "scsi0: local-lvm:32)"
        )
    if "storage" in extra and "clone" in extra and extra.get("full") is not True:
        # clone_vm: `$full = $param->{full} // !is_template`, and only templates are cloned here, so
        # a clone without full: true is linked.
        problems.append(
            "storage: a linked clone keeps the template's storage, and a clone of a template is linked "
            "unless full: true (qemu-server clone_vm: `parameter 'storage' not allowed for linked "
            "clones`); declare full: true or drop storage"
        )
    if problems:
        raise DeclarationError(problems)
    return QemuDeclaration(
        state_id=state_id,
        target=str(target),
        node=str(node),
        vmid=number,
        adopt=bool(adopt),
        removal=str(removal),
        config=wired,
        clone=extra.get("clone"),  # type: ignore[arg-type]
        restore=extra.get("restore"),  # type: ignore[arg-type]
        unique=extra.get("unique") is not False,
        full=extra.get("full"),  # type: ignore[arg-type]
        storage=extra.get("storage"),  # type: ignore[arg-type]
        pool=extra.get("pool"),  # type: ignore[arg-type]
        reboot_for_pending=reboot_for_pending is True,
        cipassword_serial=extra.get("cipassword_serial"),  # type: ignore[arg-type]
        default_name=state_id if extra.get("name_from_id") else None,
        secrets=secrets,
    )


def memory_mib(value: str) -> int:
    """The MiB a ``memory`` value gives the VM: ``2048`` and ``current=2048`` are one value
    (``PVE/QemuServer/Memory.pm`` ``parse_memory``; the property-string form came with
    qemu-server 8.1, PVE 8.1). Raises ValueError for anything else."""
    return int(dict(pairs(value, schema.MEMORY.default_key)).get("current", schema.SCALARS["memory"].default))


def cpu_options(value: str) -> dict[str, str]:
    """A ``cpu`` value as a map: ``host`` and ``cputype=host`` are one value (``CPUConfig.pm``
    ``$cpu_fmt``, ``cputype`` the default key); booleans canonical, ``hidden=0`` dropped; ``flags``
    in name order (``+aes;-pcid`` is ``-pcid;+aes``: each flag sets its own CPUID bit, so only a flag
    named twice makes the order matter, and then it is kept)."""
    out = {key: canonical_option(key, raw, schema.CPU) for key, raw in pairs(value, schema.CPU.default_key)}
    flags = [flag for flag in out.get("flags", "").split(";") if flag]
    if flags and len({flag[1:] for flag in flags}) == len(flags):
        out["flags"] = ";".join(sorted(flags, key=lambda flag: flag[1:]))
    if out.get("hidden") == "0":
        del out["hidden"]
    return out
