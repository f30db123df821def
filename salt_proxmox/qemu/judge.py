"""Declared against live: what a VM write would change, and what it must refuse (pure).

One function, ``judge``, decides for both the plan and the apply, in the shape the container judge
has (``salt_proxmox.guest.change.Change``: ``put``, ``clear``, ``resize``, ``refuse``, ``drift``), plus
``secrets`` (secret keys to send from the declaration, never their values) and ``uses`` (the
``Mapping.Use`` privileges a mapped device needs, named for the plan). Each rule and its
qemu-server source:

- ``netN``: the MAC PVE drew (``PVE/QemuServer/Network.pm`` ``parse_net``: ``random_ether_addr``
  when the value names none) is the VM's, not drift, and every NIC write carries it: ``update_vm``
  runs the written value through ``parse_net`` again, which would draw a new one.
- drives: ``storage:GiB`` on a new key allocates (``create_disks``); on an existing disk it is
  compared with the live size: larger grows in place with ``PUT …/resize``, smaller and another
  storage are refused (``resize_vm``: "shrinking disks is not supported"; a move is
  ``qm disk move``); options are written with the LIVE volume id and size, so nothing is
  re-allocated (``create_disks`` allocates only for ``$NEW_DISK_RE``); another volume, or a
  volume named on a drive that has none, is refused (it would attach a volume, or move the old one
  to ``unusedN``: ``vmconfig_register_unused_drive``). A CD-ROM (``media=cdrom``: an ISO,
  ``none``, the host's ``cdrom``) is swapped like any value; PVE refuses a media change
  (``vmconfig_update_disk``: "unable to change media type"). A CD-ROM names media, never a disk:
  any other volume is refused (``cdrom_refusal``), a host path is root@pam's. A disk option the
  declaration does not name keeps its live value, carried into every write of the disk
  (``carry_drive_options``): only declared options are managed, as only declared keys are.
- ``boot``, ``smbios1``'s ``uuid``, ``vmgenid``, ``meta`` and any key PVE fills in that the
  declaration does not name are live-owned: never drift; ``smbios1`` writes carry the live uuid.
- ``sshkeys`` compare as the keys they decode to; ``cipassword`` as set / not set
  (``vm_config`` answers ``**********``): written when the live VM has none, or when
  ``cipassword_serial`` differs from the one recorded; never otherwise.
- ``memory`` and ``cpu`` in their property-string forms equal the plain ones.
- root@pam only (``PVE/API2/Qemu.pm`` ``$check_vm_modify_config_perm`` and friends): the
  ``schema.ROOT_ONLY`` keys, ``parallelN``, a ``serialN`` that is not ``socket``, a ``hostpciN``
  with ``host=`` or ``romfile=`` (``check_hostpci_perm``), a ``usbN`` with a ``host=`` other than
  ``spice`` (``check_usb_perm``), a drive on a host path (pve-storage ``check_volume_access``):
  refused at plan with the ``qm set`` command to run. A device with ``mapping=`` goes through
  and names ``Mapping.Use`` on ``/mapping/<pci|usb>/<id>``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal

from salt_proxmox.guest.change import Change, live_text
from salt_proxmox.guest.identity import vmid_refusal
from salt_proxmox.guest.rules import (
    compared_as,
    description_change,
    judge_each,
    judge_scalar,
    put_or_clear,
    root_only_at_create_refusal,
    root_only_refusal,
)
from salt_proxmox.pve.facts import DEFAULT_TAG_STYLE, Release, TagStyle
from salt_proxmox.qemu import schema
from salt_proxmox.qemu.props import (
    DRIVES,
    QemuDeclaration,
    cpu_options,
    is_iso_volume,
    memory_mib,
    parse_drive,
    parse_net,
    print_net,
    sshkeys_text,
    unparsable_drive,
)
from salt_proxmox.wire.propstring import (
    canonical_map,
    canonical_option,
    carry,
    changed_options,
    flag,
    option_map,
    pairs,
    print_pairs,
    sorted_form,
)
from salt_proxmox.wire.sizes import GIB, parse_size
from salt_proxmox.wire.volumes import judge_volume, volume_owner


@dataclass(frozen=True)
class QemuChange(Change):
    """``Change`` plus ``secrets`` (keys whose declared secret value the write sends, from
    ``QemuDeclaration.secrets``), ``uses`` (``Mapping.Use`` privileges the write needs), ``notes``
    (plan lines on what PVE does with a write beyond storing it) and ``after`` (keys written by a
    second digest-guarded config write once the first is done: a declared ``boot`` beside a CD-ROM
    PVE appends to it, see ``boot_order_effects``)."""

    secrets: list[str] = field(default_factory=list)
    uses: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    after: dict[str, str] = field(default_factory=dict)

    @property
    def writes(self) -> bool:
        """True when applying this change sends anything to PVE."""
        return bool(self.put or self.clear or self.resize or self.secrets or self.after)


def scalar_form(key: str, value: str, style: TagStyle = DEFAULT_TAG_STYLE) -> str:
    """One scalar value in its comparable spelling (``schema.SCALARS[key].compare``). Raises
    ValueError for a live value that does not parse in its property-string format."""
    compare = schema.SCALARS[key].compare
    if compare == "memory":
        return str(memory_mib(value))
    if compare == "cpu":
        return sorted_form(cpu_options(value))
    if compare == "hotplug":
        return ",".join(sorted(schema.hotplug_set(value)))
    if compare == "agent":
        options = {
            schema.AGENT_ALIASES.get(key, key): canonical_option(key, raw, schema.AGENT)
            for key, raw in pairs(value, schema.AGENT.default_key)
        }
        return sorted_form({k: v for k, v in options.items() if schema.AGENT.defaults.get(k) != v})
    if compare in ("vga", "cicustom"):
        return sorted_form(
            dict(pairs(value, (schema.VGA if compare == "vga" else schema.CICUSTOM).default_key))
        )
    if compare == "boot":
        options = dict(pairs(value, default_key="legacy")) if "=" in value else {"legacy": value}
        return ";".join(part for part in options.get("order", options.get("legacy", "")).split(";") if part)
    if compare == "sshkeys":
        return sshkeys_text(value)
    if compare == "machine":
        return sorted_form(machine_options(value))
    return compared_as(compare, value, style)


def machine_options(value: str) -> dict[str, str]:
    """A ``machine`` value as a map (``$machine_fmt``, ``type`` the default key), booleans canonical."""
    return {
        key: canonical_option(key, raw, schema.MACHINE)
        for key, raw in pairs(value, schema.MACHINE.default_key)
    }


def machine_pin_notes(decl: QemuDeclaration, change: QemuChange, machine: str | None) -> list[str]:
    """A plan line when the write turns ``ostype`` Windows and ``machine`` is neither declared nor
    pinned: ``update_vm_api`` then pins it to the latest machine version (``Machine.pm``
    ``check_and_pin_machine_string``), a value PVE owns, not drift."""
    ostype = change.put.get("ostype")
    if not ostype or "machine" in decl.config or not schema.windows_version(ostype):
        return []
    kind = machine_options(machine).get("type", "pc") if machine else "pc"
    if kind not in schema.PINNED:
        return []
    return [
        f"VM {decl.vmid} on {decl.node}: ostype {ostype} is Windows, so PVE pins machine {kind} to its "
        "latest version (qemu-server Machine.pm check_and_pin_machine_string); machine is then PVE's, "
        "not drift"
    ]


def machine_same(want: str, have: str, windows: bool) -> bool:
    """Whether the declared ``machine`` is the live one. For a Windows guest an unversioned ``pc``,
    ``q35`` or ``virt`` is the version PVE pinned it to (``Machine.pm``
    ``check_and_pin_machine_string`` at ``create_vm``, and at ``update_vm_api`` when ``ostype``
    turns Windows: "always pin Windows' machine version on create"), never drift."""
    a, b = machine_options(want), machine_options(have)
    pinned = schema.PINNED.get(a.get("type", ""))
    if windows and pinned is not None and pinned.fullmatch(b.get("type", "")):
        a["type"] = b["type"]
    return a == b


def root_only(decl: QemuDeclaration, key: str, value: str, why: str) -> str:
    """A refusal of a change to an existing VM, naming the ``qm set`` to run; ``''`` names ``--delete``."""
    source = " (qemu-server API2/Qemu.pm check_vm_modify_config_perm)"
    return root_only_refusal(schema.WORDS, decl.vmid, decl.node, key, value, why, source)


def root_only_at_create(decl: QemuDeclaration, key: str, value: str, why: str) -> str:
    """A refusal of a root-only value on a VM that does not exist yet: create it as root@pam and
    adopt it, or create it without and ``qm set`` it after (``root_only_at_create_refusal``)."""
    return root_only_at_create_refusal(schema.WORDS, decl.vmid, decl.node, key, value, why)


def device_key(key: str) -> bool:
    """Whether ``device_rule`` judges ``key``: a root-only key, ``serialN``, ``parallelN``,
    ``hostpciN`` or ``usbN`` (qemu-server API2/Qemu.pm ``$check_vm_modify_config_perm``)."""
    return key in schema.ROOT_ONLY or schema.family_of(key) in ("serial", "parallel", "hostpci", "usb")


def device_rule(key: str, value: str) -> tuple[str | None, str | None]:
    """``(root-only reason, Mapping.Use privilege)`` for a ``hostpciN``/``usbN``/``serialN``/
    ``parallelN``/root-only key's ``value`` (one of the two, or neither).

    ``check_hostpci_perm``: ``host=`` is root's ("only root can set '<key>' config for non-mapped
    devices"), ``romfile=`` too; ``mapping=`` needs ``Mapping.Use`` on ``/mapping/pci/<id>``.
    ``check_usb_perm``: ``host=spice`` is anyone's with VM.Config.HWType, another ``host=`` root's,
    ``mapping=`` needs ``Mapping.Use`` on ``/mapping/usb/<id>``. ``$check_vm_create_serial_perm``:
    ``socket`` is VM.Config.HWType's, a real device root's.
    """
    family = schema.family_of(key)
    if key in schema.ROOT_ONLY or family == "parallel":
        return f"{key} is reserved to root@pam.", None
    if family == "serial":
        return (None, None) if value == "socket" else ("A serial port on a host device.", None)
    if family in ("hostpci", "usb"):
        options = dict(pairs(value, "host"))
        host = options.get("host")
        if family == "usb" and host is not None and host.lower() == "spice":
            return None, None
        if host:
            return f"A non-mapped {'PCI' if family == 'hostpci' else 'USB'} device (host={host}).", None
        if family == "hostpci" and "romfile" in options:
            return "A PCI device with romfile=.", None
        kind = "pci" if family == "hostpci" else "usb"
        return None, f"Mapping.Use on /mapping/{kind}/{options.get('mapping')}"
    return None, None


def net_write(declared: str, live: str | None) -> str:
    """The NIC value to PUT: the declaration in PVE's spelling plus the live MAC when it names none
    (else ``update_vm``'s ``parse_net`` draws a new MAC: a new DHCP lease for a tag change)."""
    return print_net(carry(parse_net(declared), parse_net(live) if live is not None else None, "macaddr"))


def _net_map(value: str) -> dict[str, str]:
    return canonical_map(parse_net(value).items(), schema.NET)


def net_changed(declared: str, live: str) -> frozenset[str]:
    """The NIC options whose values differ; the live MAC counts only when one is declared."""
    want, have = _net_map(declared), _net_map(live)
    if "macaddr" not in want:
        have.pop("macaddr", None)
    return frozenset(key for key in {*want, *have} if want.get(key) != have.get(key))


def drive_changed(declared: str, live: str) -> frozenset[str]:
    """The drive options whose values differ (``volume`` when the volume differs), defaults dropped."""
    want, have = parse_drive(declared), parse_drive(live)
    a = _options_map(want.options)
    b = _options_map(have.options)
    out = {key for key in {*a, *b} if a.get(key) != b.get(key)}
    if want.kind not in ("new",) and want.volume != have.volume:
        out.add("volume")
    return frozenset(out)


def smbios_write(declared: str, live: str | None) -> str:
    """``smbios1`` to PUT: the declared fields plus the live ``uuid`` when none is declared (PVE
    generated it at create: ``create_vm`` adds ``smbios1: uuid=…``; the guest sees it as its
    system UUID)."""
    want = carry(dict(pairs(declared)), dict(pairs(live)) if live is not None else None, "uuid")
    return print_pairs(want, lead=("uuid",))


def _smbios_same(declared: str, live: str) -> bool:
    want = {k: canonical_option(k, v, schema.SMBIOS1) for k, v in pairs(declared)}
    have = {k: canonical_option(k, v, schema.SMBIOS1) for k, v in pairs(live)}
    if "uuid" not in want:
        have.pop("uuid", None)
    else:
        want["uuid"], have["uuid"] = want["uuid"].lower(), have.get("uuid", "").lower()
    return want == have


def judge(
    decl: QemuDeclaration,
    live: Mapping[str, object],
    style: TagStyle = DEFAULT_TAG_STYLE,
    ours: QemuDeclaration | None = None,
) -> QemuChange:
    """Compare ``decl`` with a live VM config (``GET …/config`` data) and say what to do.

    ``ours``: the declaration this state last applied (its ownership row), or None; it holds the
    recorded ``cipassword_serial``. ``style``: the datacenter's tag style. Pure: no I/O. Never
    raises for a live value it cannot parse; such a key is drift with a refusal naming it.
    """
    change = QemuChange()
    drift: set[str] = set()
    judge_each(
        decl.config,
        live,
        change,
        drift,
        lambda key, want, have: _judge_key(
            decl, key, want, have, change, drift, style, live_text(live.get("ostype"))
        ),
    )
    change.refuse.extend(live_refusals(decl, live))
    change.notes.extend(machine_pin_notes(decl, change, live_text(live.get("machine"))))
    if MEMORY_KEYS & {*change.put, *change.clear}:
        after = {
            key: change.put[key]
            if key in change.put
            else None
            if key in change.clear
            else live_text(live.get(key))
            for key in (*MEMORY_KEYS, "hugepages")
        }
        change.refuse.extend(memory_refusals(after, "memory" in change.put or "balloon" in change.put))
    declared_boot = decl.config.get("boot")
    if declared_boot and ("boot" in change.put or change.put or change.clear):
        have = {key for key, value in live.items() if live_text(value)} | set(change.put)
        change.refuse.extend(boot_refusals(decl, declared_boot, have - set(change.clear)))
    change.notes.extend(boot_order_effects(decl, change, drift, live_text(live.get("boot"))))
    if "cipassword" in decl.secrets:
        live_set = bool(live_text(live.get("cipassword")))
        recorded = ours.cipassword_serial if ours is not None else decl.cipassword_serial
        if not live_set or (ours is not None and recorded != decl.cipassword_serial):
            drift.add("cipassword")
            change.secrets.append("cipassword")
    change.drift.extend(sorted(drift))
    return change


def _judge_key(
    decl: QemuDeclaration,
    key: str,
    want: str,
    have: str | None,
    change: QemuChange,
    drift: set[str],
    style: TagStyle,
    live_ostype: str | None = None,
) -> None:
    family = schema.family_of(key)
    if schema.is_drive(key):
        _judge_drive(decl, key, want, have, change, drift)
        return
    if family == "net":
        put_or_clear(key, want, have, change, drift, lambda w, h: bool(net_changed(w, h)), net_write)
        return
    if device_key(key):
        same = have is None if want == "" else have is not None and _device_same(key, want, have)
        if same:
            return
        drift.add(key)
        why, use = device_rule(key, want if want else have or "")
        old_why = device_rule(key, have)[0] if have else None
        if why or old_why:
            change.refuse.append(root_only(decl, key, want, why or old_why or ""))
            return
        if use:
            change.uses.append(use)
        if want == "":
            change.clear.append(key)
        else:
            change.put[key] = want
        return
    if family == "ipconfig":
        put_or_clear(
            key,
            want,
            have,
            change,
            drift,
            lambda w, h: option_map(w, schema.IPCONFIG) != option_map(h, schema.IPCONFIG),
            lambda w, _h: w,
        )
        return
    if key == "machine" and want and have is not None:
        ostype = decl.config.get("ostype") or live_ostype
        if machine_same(want, have, bool(schema.windows_version(ostype))):
            return
    if key == "smbios1":
        if want == "" or have is None or not _smbios_same(want, have):
            if want == "" and have is None:
                return
            drift.add(key)
            if want == "":
                change.clear.append(key)
            else:
                change.put[key] = smbios_write(want, have)
        return
    judge_scalar(
        key, want, have, schema.SCALARS[key].default, lambda v: scalar_form(key, v, style), change, drift
    )


def _device_same(key: str, want: str, have: str) -> bool:
    if key in schema.ROOT_ONLY or schema.family_of(key) in ("serial", "parallel"):
        return want == have
    return sorted_form(dict(pairs(want, "host"))) == sorted_form(dict(pairs(have, "host")))


def _judge_drive(
    decl: QemuDeclaration, key: str, want: str, have: str | None, change: QemuChange, drift: set[str]
) -> None:
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


#: The keys whose values ``memory_refusals`` judges together.
MEMORY_KEYS = frozenset({"memory", "balloon", "hotplug", "numa", "sockets"})
#: ``PVE/QemuServer/Memory.pm`` ``$STATICMEM``: the MiB a VM with memory hot-plug boots with; the
#: rest is DIMMs.
STATIC_MEMORY = 1024


def dimm_steps(memory: int, static: int, dimm: int) -> tuple[int, int, int]:
    """``(below, reached, size)`` of ``Memory.pm`` ``foreach_dimm`` for ``memory`` MiB: DIMMs of
    ``dimm`` MiB (512, or 1024 with 1 GiB hugepages) are added 32 at a time, their size doubling after
    each 32, from ``static`` until the total reaches ``memory``; ``reached`` is that total, ``below``
    the one before it and ``size`` the last DIMM's. PVE refuses ``memory`` unless ``reached`` equals it."""
    total = below = static
    if total >= memory:
        return below, total, dimm
    for _ in range(8):
        for _ in range(32):
            below, total = total, total + dimm
            if total >= memory:
                return below, total, dimm
        dimm *= 2
    return below, total, dimm


def memory_refusals(after: Mapping[str, str | None], written: bool = True) -> list[str]:
    """Why a VM with the config values ``after`` (``memory``, ``balloon``, ``hotplug``, ``numa``,
    ``sockets``, ``hugepages`` as they will be once written; None: absent) cannot take them, in PVE's
    words; ``written``: ``memory`` or ``balloon`` is in the write.

    - ``PVE/API2/Qemu.pm`` ``update_vm_api`` (when ``memory`` or ``balloon`` is written): "balloon
      value too large (must be smaller than assigned memory)" when ``balloon`` exceeds ``memory``.
    - ``PVE/QemuServer/Memory.pm`` ``config`` (the VM's start) and ``qemu_memory_hotplug`` (a live
      change), with ``memory`` in ``hotplug``: "NUMA needs to be enabled for memory hotplug";
      "minimum memory must be 1024MB" (``$STATICMEM``, times ``sockets`` with ``hugepages: 1024``);
      "memory size (N) must be aligned to D for hotplugging" (``foreach_dimm``'s DIMM sizes).
    """
    reasons = []
    try:
        memory = memory_mib(after.get("memory") or "512")
        balloon = int(float(after.get("balloon") or 0))
        sockets = int(float(after.get("sockets") or 1))
        features = schema.hotplug_set(after.get("hotplug"))
    except ValueError:
        return []
    if written and balloon and balloon > memory:
        reasons.append(
            f"balloon: {balloon} MiB: balloon value too large (must be smaller than assigned memory) "
            f"(qemu-server API2/Qemu.pm update_vm_api); declare balloon at most memory ({memory} MiB)."
        )
    if "memory" not in features:
        return reasons
    if compared_as("flag", after.get("numa") or "0") != "1":
        reasons.append(
            "hotplug: memory hot-plug needs numa: 1 (qemu-server Memory.pm config: `NUMA needs to be enabled "
            "for memory hotplug`, so the VM would not start); declare numa: 1, or drop memory from hotplug."
        )
    huge = after.get("hugepages") == "1024"
    static = STATIC_MEMORY * sockets if huge else STATIC_MEMORY
    if memory < static:
        reasons.append(
            f"memory: {memory} MiB with memory hot-plug: minimum memory must be {static}MB (qemu-server "
            "Memory.pm config/qemu_memory_hotplug); declare at least that, or drop memory from hotplug."
        )
        return reasons
    below, reached, size = dimm_steps(memory, static, 1024 if huge else 512)
    if reached != memory:
        reasons.append(
            f"memory: {memory} MiB with memory hot-plug: memory size ({memory}) must be aligned to {size} "
            f"for hotplugging (qemu-server Memory.pm foreach_dimm); declare {below} or {reached} MiB."
        )
    return reasons


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


def release_refusals(values: Mapping[str, str], release: Release) -> list[str]:
    """Options of the ``agent``/``machine`` values in ``values`` (key -> value to write) that
    ``release`` does not know (``facts.NEW_IN_9``: the agent's ``freeze-fs``/``guest-fsfreeze``,
    the machine's ``aw-bits``), one sentence each; qemu-server 8's ``parse_property_string``
    refuses them (``invalid key in comma-separated list property``)."""
    reasons = []
    for key, form in (("agent", schema.AGENT), ("machine", schema.MACHINE)):
        if not values.get(key):
            continue
        names = [name for name, _ in pairs(values[key], form.default_key)]
        for option in release.unknown_options(key, names):
            other = " (PVE 8 names it freeze-fs-on-backup)" if key == "agent" else ""
            reasons.append(
                f"{key}: {option}= is an option of PVE 9{other}; this cluster runs PVE {release.release}, "
                f"whose qemu-server refuses it (`invalid key in comma-separated list property: {option}`)."
            )
    return reasons


def needs_release(values: Mapping[str, str]) -> bool:
    """True when ``values`` name an option only some releases know (``release_refusals``)."""
    return bool(release_refusals(values, Release("8.0")))


def startup_refusal(decl: QemuDeclaration, who: str) -> str:
    """A refusal of a ``startup`` write by a caller (``who``) without Sys.Modify on ``/``: qemu-server
    ``PVE/API2/Qemu.pm`` ``$check_vm_modify_config_perm`` checks it for ``startup`` set or deleted,
    at create and update ("special case for startup since it changes host behaviour")."""
    value = decl.config.get("startup") or ""
    run = f"qm set {decl.vmid} --startup '{value}'" if value else f"qm set {decl.vmid} --delete startup"
    return (
        f"startup: PVE lets only a caller with Sys.Modify on / set or clear a VM's startup (qemu-server "
        f"API2/Qemu.pm $check_vm_modify_config_perm: it changes host behaviour), and {who} does not hold it. "
        f"Grant the provision token Sys.Modify on /, or run `{run}` on {decl.node} as root@pam."
    )


def identity_refusals(decl: QemuDeclaration, recorded: Mapping[str, object] | None) -> list[str]:
    """What makes this declaration a different VM than the one its state recorded: a new vmid, or
    another ``clone`` template (consumed at create: another one is a new VM). A changed node is
    settled by the read at the declared node, as for containers (docs/design.md §6)."""
    if not recorded:
        return []
    reasons = vmid_refusal(schema.WORDS, decl.vmid, recorded)
    template = recorded.get("clone")
    if decl.clone is not None and template is not None and int(str(template)) != decl.clone:
        reasons.append(
            f"clone: {template} -> {decl.clone}. A template is consumed at create; a clone of another one is "
            "a new VM. Declare a new state with a new vmid instead."
        )
    return reasons


def live_refusals(decl: QemuDeclaration, live: Mapping[str, object]) -> list[str]:
    """Why the live VM at ``decl.vmid`` is not one this declaration may write: it is a template
    (``template: 1``; qemu-server refuses most writes to one, and it is the source of clones, not a
    VM to run)."""
    if (live_text(live.get("template")) or "0") in ("1", "true"):
        return [
            f"VM {decl.vmid} is a template: a template is the source of clones, not a VM this state "
            "configures. Declare a new vmid with clone: "
            f"{decl.vmid}, or turn it back by restoring a backup."
        ]
    return []


def clone_source_refusals(decl: QemuDeclaration, source: Mapping[str, object] | None) -> list[str]:
    """Why ``decl.clone`` cannot be cloned: it does not exist, or it is not a template (a clone of a
    running VM copies its disks while it writes to them; this state clones templates only)."""
    if decl.clone is None:
        return []
    if source is None:
        return [f"clone: VM {decl.clone} does not exist, so VM {decl.vmid} cannot be cloned from it."]
    if (live_text(source.get("template")) or "0") not in ("1", "true"):
        return [
            f"clone: VM {decl.clone} is not a template; this state clones templates only. Convert it with "
            f"`qm template {decl.clone}` on its node, or name a template."
        ]
    return []


#: pve-storage ``volume_has_feature(..., 'clone', ...)`` of a template's (base) volume, by storage
#: type: ``LvmThinPlugin``, ``ZFSPoolPlugin``, ``ZFSPlugin``, ``RBDPlugin`` (``clone => { base => 1 }``),
#: ``BTRFSPlugin`` and the file-based ``Plugin.pm`` types (``base => { qcow2, raw, vmdk }``: the
#: clone is a qcow2 backed by the base) can; ``LVMPlugin`` (thick: its ``clone`` table is commented
#: out), ``ISCSIPlugin`` and ``ISCSIDirectPlugin`` (``copy`` only) cannot.
LINKED_CLONE = {
    **dict.fromkeys(("lvmthin", "zfspool", "zfs", "rbd", "btrfs"), True),
    **dict.fromkeys(("dir", "nfs", "cifs", "glusterfs", "cephfs"), True),
    **dict.fromkeys(("lvm", "iscsi", "iscsidirect"), False),
}


def linked_clone(decl: QemuDeclaration) -> bool:
    """Whether the clone of a template is linked: qemu-server ``clone_vm``: ``$param->{full} //
    !is_template($conf)`` (this state clones templates only)."""
    return decl.full is not True


def clone_storage_refusals(
    decl: QemuDeclaration, source_node: str, source: Mapping[str, object], stores: Mapping[str, Mapping]
) -> tuple[list[str], list[str]]:
    """``(refusals, notes)``: what qemu-server ``API2/Qemu.pm`` ``clone_vm`` refuses of a clone of the
    template ``source`` (its config, on ``source_node``) given the cluster's storages (``stores``:
    ``pve.facts.storages``). A storage the read credential cannot see is noted as not checked.

    - a linked clone needs every disk's storage to clone its base volume (``LINKED_CLONE``; a
      cloud-init drive and ``tpmstate0`` are always copied): ``Linked clone feature is not supported
      for '<volid>' (<key>)``;
    - a clone to another node (``target``) needs every volume the template names, its ISO CD-ROMs
      included, on shared storage (``$check_storage_access_clone``): ``can't clone VM to node
      '<node>' (VM uses local storage)``;
    - a full clone's ``storage`` on another node must be shared: ``can't clone to non-shared storage
      '<storage>'``."""
    refusals: list[str] = []
    unseen: set[str] = set()
    local: list[str] = []
    linked = linked_clone(decl)
    for key in sorted(source):
        if not schema.is_drive(key):
            continue
        try:
            drive = parse_drive(str(source[key]))
        except ValueError:
            continue
        if drive.storage is None or drive.volume in ("none", "cdrom"):
            continue
        store = stores.get(drive.storage)
        if store is None:
            unseen.add(drive.storage)
            continue
        if not store.get("shared"):
            local.append(f"{key} ({drive.volume})")
        if linked and drive.kind not in ("cdrom", "cloudinit") and key != "tpmstate0":
            if LINKED_CLONE.get(str(store.get("type"))) is False:
                refusals.append(
                    f"clone: template VM {decl.clone}'s {key} is on storage {drive.storage} "
                    f"({store.get('type')}), which cannot make a linked clone (pve-storage "
                    f"volume_has_feature 'clone'; PVE: `Linked clone feature is not supported for "
                    f"'{drive.volume}' ({key})`). "
                    "Declare full: true (and storage: for the copy), or keep the template on a storage that "
                    "clones (lvmthin, zfspool, rbd, a qcow2/raw directory)."
                )
            elif str(store.get("type")) not in LINKED_CLONE:
                unseen.add(drive.storage)
    if decl.node != source_node:
        if local:
            refusals.append(
                f"clone: template VM {decl.clone} is on node {source_node} and names volumes on storage that "
                f"is not shared: {', '.join(local)}. PVE refuses to clone it to node {decl.node} (`can't "
                f"clone VM to node '{decl.node}' (VM uses local storage)`). Declare node: {source_node} "
                "(and migrate the VM after), or keep the template's volumes on shared storage."
            )
        if decl.storage and decl.storage in stores and not stores[decl.storage].get("shared"):
            refusals.append(
                f"storage: {decl.storage} is not shared, and a clone to another node needs a shared target "
                f"storage (`can't clone to non-shared storage '{decl.storage}'`). Name a shared storage, or "
                f"declare node: {source_node}."
            )
        elif decl.storage and decl.storage not in stores:
            unseen.add(decl.storage)
    notes = [
        f"VM {decl.vmid} on {decl.node}: whether storage {sid} can take this clone was not checked (the read "
        "token does not see its type); PVE checks it when the clone is sent"
        for sid in sorted(unseen)
    ]
    return refusals, notes


def mapping_uses(decl: QemuDeclaration) -> list[str]:
    """The ``Mapping.Use`` privileges the declared mapped devices need (``device_rule``), one per
    device, for the plan to name: ``Mapping.Use on /mapping/pci/gpu1``."""
    uses = []
    for key, value in decl.config.items():
        if value and schema.family_of(key) in ("hostpci", "usb"):
            use = device_rule(key, value)[1]
            if use:
                uses.append(use)
    return uses


def create_refusals(decl: QemuDeclaration) -> list[str]:
    """Why this declaration cannot be created with an API token (empty when it can).

    ``POST /nodes/{node}/qemu`` (qemu-server ``PVE/API2/Qemu.pm`` ``create_vm``): root-only values
    as in ``device_rule``; drives only as new ``storage:GiB`` disks, CD-ROMs or cloud-init drives,
    so a create never attaches a volume it did not allocate. A create by clone takes the template's
    drives; its declared drives are judged against the clone's.
    """
    reasons = []
    if decl.clone is None:
        reasons += memory_refusals({key: decl.config.get(key) or None for key in (*MEMORY_KEYS, "hugepages")})
    if decl.clone is None and decl.config.get("boot"):
        declared = {key for key, value in decl.config.items() if value}
        reasons += boot_refusals(decl, decl.config["boot"], declared, at_create=True)
    for key, value in decl.config.items():
        if value == "":
            continue
        if device_key(key):
            why, _use = device_rule(key, value)
            if why:
                reasons.append(root_only_at_create(decl, key, value, why))
        elif schema.is_drive(key) and decl.clone is None:
            refusal = added_drive_refusal(decl, key, value)
            if refusal and parse_drive(value).storage is None:
                reasons.append(root_only_at_create(decl, key, value, "A drive on a host path."))
            elif refusal:
                reasons.append(refusal)
    return reasons


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


def create_form(decl: QemuDeclaration) -> dict[str, str]:
    """The ``POST /nodes/{node}/qemu`` form: declared keys, empties dropped, ``pool`` when declared,
    ``name`` the state id when none is declared (``decl.default_name``). Secrets are added by the
    caller from ``decl.secrets`` (never kept in a form that is shown)."""
    form = {"vmid": str(decl.vmid)}
    for key, value in decl.config.items():
        if value != "":
            form[key] = value
    if "name" not in decl.config and decl.default_name:
        form["name"] = decl.default_name
    if decl.pool:
        form["pool"] = decl.pool  # create_vm adds the new VM to it (PVE::Pool add_vm_to_pool)
    return form


def clone_form(decl: QemuDeclaration, source_node: str) -> dict[str, str]:
    """The ``POST /nodes/{source_node}/qemu/{clone}/clone`` form (qemu-server ``clone_vm``):
    ``newid``, ``name``, ``full`` and ``storage`` as declared (a template gives a linked clone
    unless ``full``), ``pool``, and ``target`` when the VM is declared on another node."""
    form = {"newid": str(decl.vmid)}
    if decl.config.get("name") or decl.default_name:
        form["name"] = decl.config.get("name") or str(decl.default_name)
    if decl.full is not None:
        form["full"] = "1" if decl.full else "0"
    if decl.storage:
        form["storage"] = decl.storage
    if decl.pool:
        form["pool"] = decl.pool
    if source_node != decl.node:
        form["target"] = decl.node
    return form


#: Keys ``clone_vm`` does not copy onto a clone (qemu-server ``API2/Qemu.pm``: snapshot state, and
#: ``template``, deleted); ``unusedN`` is left out too ("no need to copy unused images").
_NOT_CLONED = frozenset(
    {"snapshots", "parent", "snaptime", "vmstate", "snapstate", "runningcpu", "runningmachine"}
    | {"running-nets-host-mtu", "template", "lock", "digest"}
)


def cloned_config(decl: QemuDeclaration, source: Mapping[str, object]) -> dict[str, object]:
    """The config of the VM a clone of ``source`` (the template's config) as ``clone_form(decl)`` will
    make, as qemu-server ``API2/Qemu.pm`` ``clone_vm`` writes it: every key copied but ``_NOT_CLONED``
    and ``unusedN``; ``name`` the declared one or the state id (``default_name``; else
    ``Copy-of-VM-<name>``); each ``netN`` with a new MAC ("always change MAC! address": left out here,
    as PVE draws it); a CD-ROM copied as it is; every
    other drive (disks, the cloud-init drive, ``efidisk0``, ``tpmstate0``) on its own new volume, which
    a full clone with ``storage`` puts on that storage (``clone_disk``: ``$storage || $src_storeid``;
    its format is the target storage's, ``resolve_dst_disk_format``, so a ``format=`` is dropped) and a
    linked clone keeps on the template's. The new volume ids are pve-storage's default names
    (``vm-<vmid>-disk-N``, ``vm-<vmid>-cloudinit``); the judge compares a drive's storage and size, not
    its name. Pure."""
    full = bool(decl.full)  # clone_vm: full defaults to 0 for a template
    out: dict[str, object] = {}
    disks = 0
    for key, value in source.items():
        if key in _NOT_CLONED or schema.family_of(key) == "unused":
            continue
        text = live_text(value)
        if text and schema.family_of(key) == "net":
            out[key] = print_net({k: v for k, v in parse_net(text).items() if k != "macaddr"})
            continue
        if text and schema.is_drive(key):
            drive = parse_drive(text)
            if drive.kind != "cdrom" and drive.storage is not None:
                storage = decl.storage if full and decl.storage else drive.storage
                name = (
                    f"vm-{decl.vmid}-cloudinit"
                    if drive.kind == "cloudinit"
                    else f"vm-{decl.vmid}-disk-{disks}"
                )
                disks += drive.kind != "cloudinit"
                options = {
                    k: v for k, v in drive.options.items() if k != "format" or storage == drive.storage
                }
                out[key] = ",".join([f"{storage}:{name}", *(f"{k}={v}" for k, v in options.items())])
                continue
        out[key] = value
    name = decl.config.get("name") or decl.default_name
    out["name"] = name or f"Copy-of-VM-{live_text(source.get('name')) or decl.clone}"
    return out


def _not_backed_up(value: object) -> bool:
    """A drive's ``backup=0`` (any boolean spelling; one that does not parse counts as saved)."""
    try:
        return value is not None and flag(value) == "0"
    except ValueError:
        return False


def restored_config(
    decl: QemuDeclaration, archived: Mapping[str, str], saved: Mapping[str, str]
) -> dict[str, object]:
    """The config of the VM a restore of an archive holding ``archived`` will make (``saved``: each
    saved drive's storage by key, ``guest.restore.ArchivedConfig``), as qemu-server ``QemuServer.pm``
    writes it: ``restore_update_config_line`` drops ``lock``, ``unusedN`` and ``parent``, gives each
    ``netN`` a new MAC and ``smbios1`` a new uuid under ``unique`` and always a new ``vmgenid`` (left
    out here, as PVE draws them), keeps a drive with ``backup=0`` only as a comment, and puts every
    saved drive on a new volume (``$restore_allocate_devices``: on the declared ``storage``, else the
    one it was saved from, else ``local``, ``$parse_backup_hints``; its ``format`` dropped, its
    ``size`` kept); a cloud-init drive gets a new one on the same storage. The judge compares a
    drive's storage and size, not its name. Pure."""
    out: dict[str, object] = {}
    disks = 0
    for key, value in archived.items():
        if key in ("lock", "parent", "digest") or schema.family_of(key) == "unused":
            continue
        text = live_text(value)
        if text and schema.family_of(key) == "net" and decl.unique:
            out[key] = print_net({k: v for k, v in parse_net(text).items() if k != "macaddr"})
            continue
        if key == "vmgenid" and text != "0":
            continue
        if key == "smbios1" and decl.unique:
            kept = ",".join(part for part in text.split(",") if not part.startswith("uuid="))
            if kept:
                out[key] = kept
            continue
        if text and schema.is_drive(key):
            drive = parse_drive(text)
            if _not_backed_up(drive.options.get("backup")):
                continue
            if key in saved or drive.kind == "cloudinit":
                storage = decl.storage or (saved.get(key) if key in saved else drive.storage) or "local"
                name = (
                    f"vm-{decl.vmid}-cloudinit"
                    if drive.kind == "cloudinit"
                    else f"vm-{decl.vmid}-disk-{disks}"
                )
                disks += drive.kind != "cloudinit"
                options = {k: v for k, v in drive.options.items() if k != "format"}
                out[key] = ",".join([f"{storage}:{name}", *(f"{k}={v}" for k, v in options.items())])
                continue
        out[key] = value
    return out


def drift_changed(new: str, old: str) -> frozenset[str]:
    """``drive_changed`` that never raises (a value PVE printed that does not parse counts as a
    volume change, the strictest case)."""
    try:
        return drive_changed(new, old)
    except ValueError:
        return frozenset({"volume"})


def key_change(key: str, old: str | None, new: str | None) -> dict:
    """What a return shows for one config key going from ``old`` (live) to ``new`` (to write).

    ``description`` as a unified diff; ``cipassword`` only as set / unset (never a value, never a
    derivative of one); ``sshkeys`` decoded; property strings with only the differing sub-keys
    (``propstring.changed_options``); the rest as PVE spells them.
    """
    if key == "description":
        # Compared without trailing white space (rules.scalar_form), so shown without it too.
        return description_change(old, new)
    if key in schema.SECRETS:
        return {"old": "set" if old else "unset", "new": "set (written again)" if old else "set"}
    if key == "sshkeys":
        return {"old": sshkeys_text(old) if old else old, "new": sshkeys_text(new) if new else new}
    form = schema.property_format(key)
    if form is not None and form.name in ("drive", "ipconfig", "hostpci", "usb", "startup"):
        shown_old, shown_new = changed_options(old, new, form)
        return {"old": shown_old, "new": shown_new}
    return {"old": old, "new": new}


def shown(key: str, value: str | None) -> object:
    """A value as a return or a comment may show it: a description only by its length, a
    ``cipassword`` only as set (docs/design.md §6), ``sshkeys`` decoded."""
    if value is None:
        return None
    if key in schema.SECRETS:
        return "set"
    if key in schema.NEVER_STORED:
        return f"<{len(value.rstrip())} characters>"
    if key == "sshkeys":
        return sshkeys_text(value)
    return value


def operator_view(live: Mapping[str, object]) -> dict[str, str]:
    """A live VM config as an operator asks for it (``proxmox.qemu_config``): the description put
    back, ``sshkeys`` decoded, ``cipassword`` as ``set``; no digest or lock."""
    view = {}
    for key, value in live.items():
        text = live_text(value)
        if text is None or key in ("digest", "lock"):
            continue
        view[key] = text if key == "description" else str(shown(key, text))
    return view
