"""Declared against live: what a VM write would change, and what it must refuse (pure).

One function, ``judge``, decides for both the plan and the apply, in the shape the container judge
has (``salt_proxmox.guest.change.Change``: ``put``, ``clear``, ``resize``, ``refuse``, ``drift``), plus
``secrets`` (secret keys to send from the declaration, never their values) and ``uses`` (the
``Mapping.Use`` privileges a mapped device needs, named for the plan). Each rule and its
qemu-server source (the drives, boot order, machine, memory and clone rules live in the sibling
modules ``drives``, ``boot``, ``machine``, ``memory`` and ``clone``):

- ``netN``: the MAC PVE drew (``PVE/QemuServer/Network.pm`` ``parse_net``: ``random_ether_addr``
  when the value names none) is the VM's, not drift, and every NIC write carries it: ``update_vm``
  runs the written value through ``parse_net`` again, which would draw a new one.
- drives: ``drives.judge_drive`` (its module says each rule).
- ``boot``, ``smbios1``'s ``uuid``, ``vmgenid``, ``meta`` and any key PVE fills in that the
  declaration does not name are live-owned: never drift; ``smbios1`` writes carry the live uuid.
- ``sshkeys`` compare as the keys they decode to; ``cipassword`` as set / not set
  (``vm_config`` answers ``**********``): written when the live VM has none, or when
  ``cipassword_serial`` differs from the one recorded; never otherwise.
- ``memory`` and ``cpu`` in their property-string forms equal the plain ones.
- root@pam only (``PVE/API2/Qemu.pm`` ``$check_vm_modify_config_perm`` and friends): the
  ``schema.ROOT_ONLY`` keys, ``parallelN``, a ``serialN`` that is not ``socket``, a ``hostpciN``
  with ``host=`` or ``romfile=`` (``check_hostpci_perm``), a ``usbN`` with a ``host=`` other than
  ``spice`` (``check_usb_perm``): root writes (``Change.root_write``), written through the target's
  root lane as root@pam (``guest.lane``), refused at plan with the ``qm set`` command to run and the
  lane to configure when it has none; at create the same keys (``create_root``) go in a lane write
  after the token's create. A drive on a host path (pve-storage ``check_volume_access``) is refused
  with the ``qm set`` to run. A device with ``mapping=`` goes with the token and names
  ``Mapping.Use`` on ``/mapping/<pci|usb>/<id>``.
"""

from __future__ import annotations

from collections.abc import Mapping

from salt_proxmox.guest.change import live_text
from salt_proxmox.guest.identity import vmid_refusal
from salt_proxmox.guest.rules import compared_as, description_change, judge_each, judge_scalar, put_or_clear
from salt_proxmox.pve.facts import DEFAULT_TAG_STYLE, TagStyle
from salt_proxmox.qemu import schema
from salt_proxmox.qemu.boot import boot_order_effects, boot_refusals
from salt_proxmox.qemu.change import QemuChange, root_only, root_only_at_create
from salt_proxmox.qemu.drives import added_drive_refusal, judge_drive
from salt_proxmox.qemu.machine import machine_options, machine_pin_notes, machine_same
from salt_proxmox.qemu.memory import MEMORY_KEYS, memory_refusals
from salt_proxmox.qemu.props import (
    QemuDeclaration,
    cpu_options,
    memory_mib,
    parse_drive,
    parse_net,
    print_net,
    sshkeys_text,
)
from salt_proxmox.wire.propstring import (
    canonical_map,
    canonical_option,
    carry,
    changed_options,
    option_map,
    pairs,
    print_pairs,
    sorted_form,
)


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
            kind = "pci" if family == "hostpci" else "usb"
            return (
                f"A non-mapped {kind.upper()} device (host={host}). A resource mapping (mapping=<id>, "
                f"proxmox:mappings:{kind}) works with an API token: it needs Mapping.Use on "
                f"/mapping/{kind}/<id>."
            ), None
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
        judge_drive(decl, key, want, have, change, drift)
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
            # Root's alone (the new value's rule, or the old one's: update_vm_api checks both):
            # written through the root lane, refused naming it without one (guest.lane.route).
            change.root_write(key, want, root_only(decl, key, want, why or old_why or ""))
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


def root_at_create(decl: QemuDeclaration) -> dict[str, str]:
    """The declared values only root@pam may set on a VM (``device_rule``), each with its refusal
    at create (``root_only_at_create``); qemu-server ``create_vm`` runs ``$check_vm_modify_config_perm``
    and ``check_vm_create_usb_perm``/``check_vm_create_hostpci_perm``/``$check_vm_create_serial_perm``
    over its form."""
    found = {}
    for key, value in decl.config.items():
        if value and device_key(key):
            why = device_rule(key, value)[0]
            if why:
                found[key] = root_only_at_create(decl, key, value, why)
    return found


def create_root(decl: QemuDeclaration) -> dict[str, str]:
    """The root keys of a create from scratch (``root_at_create``), which the create writes through
    the root lane after the token's ``POST /nodes/{node}/qemu`` (``guest.lane.create_write``). A clone
    or a restore has none: its declared root keys are refused (``guest.apply.written_onto``)."""
    return root_at_create(decl) if decl.clone is None and decl.restore is None else {}


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
    laned = create_root(decl)
    reasons += [why for key, why in root_at_create(decl).items() if key not in laned]
    for key, value in decl.config.items():
        if value == "":
            continue
        if schema.is_drive(key) and decl.clone is None:
            refusal = added_drive_refusal(decl, key, value)
            if refusal and parse_drive(value).storage is None:
                reasons.append(root_only_at_create(decl, key, value, "A drive on a host path."))
            elif refusal:
                reasons.append(refusal)
    return reasons


def create_form(decl: QemuDeclaration) -> dict[str, str]:
    """The ``POST /nodes/{node}/qemu`` form: declared keys, empties dropped, ``pool`` when declared,
    ``name`` the state id when none is declared (``decl.default_name``); not the root keys
    (``create_root``: the lane writes them after it). Secrets are added by the caller from
    ``decl.secrets`` (never kept in a form that is shown)."""
    form = {"vmid": str(decl.vmid)}
    laned = create_root(decl)
    for key, value in decl.config.items():
        if value != "" and key not in laned:
            form[key] = value
    if "name" not in decl.config and decl.default_name:
        form["name"] = decl.default_name
    if decl.pool:
        form["pool"] = decl.pool  # create_vm adds the new VM to it (PVE::Pool add_vm_to_pool)
    return form


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
