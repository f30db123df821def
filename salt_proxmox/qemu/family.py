"""VMs as a guest family (``guest.family.Family``): what the shared guest lifecycle needs to know of
them, from qemu-server's own rules.

- API: ``/nodes/{node}/qemu/{vmid}`` (qemu-server ``PVE/API2/Qemu.pm``); remedies name ``qm``.
- Fingerprint keys (``KEYS``): the MAC PVE drew for each ``netN``; the volume id and size of each
  disk and ``unusedN`` (a CD-ROM's medium is swapped by operators and does not count); and the values
  qemu-server generates once per VM: ``vmgenid``, ``smbios1``'s ``uuid``, ``meta``'s ``ctime``
  (``create_vm``; a clone gets its own, ``clone_vm``).
- Hotplug: ``hotplug.applies_live`` with the VM's ``hotplug`` in effect (``vmconfig_hotplug_pending``).
- Create from scratch: one ``POST /nodes/{node}/qemu`` task (``create_vm``) without ``cipassword``,
  then, when one is declared, one ``POST …/config`` task with it alone: ``create_vm`` writes its form
  into ``/etc/pve`` as sent, and only ``update_vm_api`` hashes ``cipassword``
  (``PVE::Tools::encrypt_pw``, a ``$5$`` crypt, unless the ostype is Windows: cloudbase-init needs
  it in clear). Create by clone: ``POST /nodes/{node of the template}/qemu/{template}/clone``
  (``clone_vm``, a task), then the declaration written onto the clone in the same apply: one
  ``POST …/config`` task (``update_vm`` async: the form's drives are allocated by ``create_disks``)
  judged against the clone as it was made, then a ``PUT …/resize`` task per disk that grows. The
  plan judges the clone as it will be (``clone.cloned_config``: the template's config with its disks
  on the clone's storage), so it lists every key the configure step writes or deletes. A declared
  ``cipassword`` is always written onto the clone (it carries the template's, which PVE shows only
  as set); without one, the plan says the clone keeps the template's.
- Config writes of an existing VM (``config_task``): the synchronous ``PUT …/config`` for simple
  changes, the ``POST …/config`` task (``update_vm_async``) for a write that allocates a volume or
  hot-plugs into the running VM, as qemu-server's API documents them. ``pending_first``:
  ``update_vm_api`` writes each value into ``[PENDING]`` before ``vmconfig_hotplug_pending`` (or
  ``vmconfig_apply_pending``) and raises their errors after, so a failed write is read back and
  reported key by key (``guest.lifecycle``).
- Root keys (``args``, ``hookscript``, a host ``usbN``/``hostpciN``: ``judge.device_rule``): written
  through the root lane on update and, after the token's create, at create (``judge.create_root``,
  ``guest.lane``); onto a clone or a restore they are refused.
- Refusals at plan: ``judge.create_refusals`` (root-only values, disks not allocated by the create),
  an ISO a written CD-ROM names that PVE says is not there (``iso_checks``),
  ``clone.clone_source_refusals`` (the template must exist and be one), and the judge's verdict of
  the declaration against the template's config, so a clone is never made that its own config write
  would then refuse.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from salt_proxmox.access import privileges
from salt_proxmox.errors import Refused
from salt_proxmox.guest import lifecycle as shared
from salt_proxmox.guest import restore
from salt_proxmox.guest.change import live_text
from salt_proxmox.guest.family import CreatePlan, CreateStep, Family
from salt_proxmox.guest.fingerprint import GuestKeys
from salt_proxmox.guest.pending import GuestConfig
from salt_proxmox.guest.refusals import provision_privilege_check
from salt_proxmox.pve.client import Credential, api_path
from salt_proxmox.pve.constraints import check_form
from salt_proxmox.pve.facts import release, storages, volume_presence
from salt_proxmox.qemu import change, clone, drives, hotplug, judge, machine, schema
from salt_proxmox.qemu.props import QemuDeclaration, parse_declaration, parse_drive, parse_net
from salt_proxmox.wire.propstring import pairs
from salt_proxmox.wire.volumes import size_option

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.run.context import PveContext


def _mac(value: str) -> str | None:
    """The MAC of a ``netN`` value, upper-cased (``$net_fmt``: ``<model>=<MAC>``)."""
    mac = parse_net(value).get("macaddr")
    return mac.upper() if mac else None


def _volume(value: str) -> str | None:
    """``<volume id> size=<size>`` of a drive or ``unusedN``; None for a CD-ROM (its medium is the
    operator's to swap)."""
    drive = parse_drive(value)
    if drive.kind == "cdrom":
        return None
    size = drive.options.get("size")
    return f"{drive.volume} size={size}" if size else drive.volume


def _generated(key: str, value: str) -> str | None:
    """The part of a generated value that identifies the VM: ``smbios1``'s ``uuid``, ``meta``'s
    ``ctime``, ``vmgenid`` whole."""
    if key == "smbios1":
        return dict(pairs(value)).get("uuid")
    if key == "meta":
        return dict(pairs(value)).get("ctime")
    return value


#: The VM keys of a fingerprint.
KEYS = GuestKeys(
    nic=re.compile(r"net\d+", re.ASCII),
    mac_of=_mac,
    volume=re.compile(r"(?:ide|sata|scsi|virtio|unused)\d+|efidisk0|tpmstate0", re.ASCII),
    volume_of=_volume,  # type: ignore[arg-type]  # None leaves a CD-ROM out
    generated=("vmgenid", "smbios1", "meta"),
    pick=_generated,
)


def _source(ctx: PveContext, decl: QemuDeclaration) -> tuple[str | None, dict[str, object] | None]:
    """``(node, config)`` of the template ``decl.clone`` names, read with the read credential
    (the cluster's guest index, then ``GET …/config``); ``(None, None)`` when no VM holds it."""
    assert decl.clone is not None
    row = shared.indexed_guest(ctx, decl.clone)
    if row is None or row.get("type") != "qemu":
        return None, None
    node = str(row["node"])
    config = ctx.client.request(
        "GET", f"{api_path('nodes', node, 'qemu', decl.clone)}/config", ctx.broker.read()
    )
    return node, dict(config or {})


def _onto(decl: QemuDeclaration, made: Mapping[str, object]) -> change.QemuChange:
    """The judge's verdict of ``decl`` written onto a VM made by cloning (``made``: its config, or the
    plan's ``clone.cloned_config``), with nothing recorded yet. ``made``'s ``cipassword`` is left out:
    it is the template's (``clone_vm`` copies it), shown only as set, so a declared one is always
    written."""
    return judge.judge(
        decl, {key: value for key, value in made.items() if key not in ("template", "cipassword")}
    )


def iso_checks(
    ctx: PveContext, decl: QemuDeclaration, values: Mapping[str, str]
) -> tuple[list[str], list[str]]:
    """``(refusals, notes)`` for the ISOs the CD-ROM values of ``values`` (key -> value to write)
    name (``drives.iso_volumes``): each is read once per run (``facts.volume_presence``); one PVE says
    is not there is refused (``drives.missing_iso_refusal``), one the read credential may not look at
    is noted (``drives.unchecked_iso_note``) and goes through. Raises what ``volume_presence``
    raises."""
    refusals: list[str] = []
    notes: list[str] = []
    for key, volid in drives.iso_volumes(values).items():
        found = volume_presence(ctx, decl.node, volid)
        if found.state == "missing":
            refusals.append(drives.missing_iso_refusal(decl, key, volid, found.said))
        elif found.state == "unchecked":
            notes.append(drives.unchecked_iso_note(decl, key, volid))
    return refusals, notes


def plan_create(ctx: PveContext, decl: QemuDeclaration) -> CreatePlan:
    """What a plan says of creating ``decl``: from scratch, ``judge.create_refusals`` and the ISOs its
    CD-ROMs name (``iso_checks``); by clone, also the template's existence and kind, and the refusals
    the config write onto the clone would meet (judged against the template's config)."""
    refusals = judge.create_refusals(decl)
    what = f"VM {decl.vmid} on {decl.node}"
    if decl.restore is not None:
        return restore_plan(ctx, decl, refusals)
    notes = [f"{what}: the create needs {use}" for use in judge.mapping_uses(decl)]
    if "name" not in decl.config and decl.default_name:
        notes.append(
            f"{what}: named {decl.default_name}, its state id, since the declaration names none "
            "(declare name: to give another)"
        )
    if machine.needs_release(decl.config):
        refusals += machine.release_refusals(decl.config, release(ctx))
    if decl.config.get("startup") and not refusals:
        refusals, said = startup_check(ctx, decl)
        notes += said
    if not refusals:
        # The root keys go through the root lane as root@pam after the create, not with the token.
        laned = judge.create_root(decl)
        sent = {key: value for key, value in decl.config.items() if key not in laned}
        refusals, said = privileges.guest_check(ctx, "qemu", decl.vmid, sent, "create", decl.pool, decl.clone)
        notes += said
    if decl.clone is None:
        if not refusals:
            refusals, unchecked = iso_checks(ctx, decl, decl.config)
            notes += unchecked
        return CreatePlan(
            refusals=refusals, source="from scratch", again="from scratch with new, empty disks", notes=notes
        )
    node, config = _source(ctx, decl)
    refusals += clone.clone_source_refusals(decl, config)
    if config is not None and node is not None and not refusals:
        more, said = clone.clone_storage_refusals(decl, node, config, storages(ctx))
        refusals, notes = [*refusals, *more], [*notes, *said]
    changes = None
    if config is not None and not refusals:
        made = clone.cloned_config(decl, config)
        onto = _onto(decl, made)
        # Root keys onto a clone are not written through a lane (guest.apply.written_onto).
        refusals += [*onto.refuse, *onto.root.values()]
        if not refusals:
            refusals, unchecked = iso_checks(ctx, decl, onto.put)
            notes += unchecked
            changes = shared.changes_of(QEMU, onto, made)
            if onto.drift:
                notes.append(f"{what}: then written onto the clone: {', '.join(onto.drift)}")
        if "cipassword" not in decl.secrets and live_text(config.get("cipassword")):
            notes.append(
                f"{what}: the clone keeps template VM {decl.clone}'s cipassword (PVE copies it, shown only "
                "as set); declare cipassword to write another"
            )
    kind = "a linked clone" if clone.linked_clone(decl) else "a full clone"
    return CreatePlan(
        changes=changes,
        refusals=refusals,
        source=f"as {kind} of template VM {decl.clone}"
        + (f" on {node}" if node and node != decl.node else ""),
        again=f"as {kind} of template VM {decl.clone} with new disks",
        notes=notes,
    )


def _restore_storage_refusals(
    ctx: PveContext, decl: QemuDeclaration, made: Mapping[str, object]
) -> list[str]:
    """Why the restore cannot allocate a drive of the VM it makes (``made``:
    ``clone.restored_config``): qemu-server ``QemuServer.pm`` ``$parse_backup_hints`` dies ``Content
    type 'images' is not available on storage '<storage>'`` (and ``storage_config`` on a storage that
    does not exist) before anything is restored. A storage the read token does not list is refused
    too: nothing proves it takes the drive."""
    found = []
    known = storages(ctx)
    for key in sorted(made):
        text = live_text(made[key])
        if not schema.is_drive(key) or not text or "media=cdrom" in text:
            continue
        storage = text.split(":", 1)[0]
        held = known.get(storage)
        if held is None or "images" not in re.split(r"[\s,;]+", str(held.get("content") or "")):
            said = (
                "the read token does not list"
                if held is None
                else f"holds {held.get('content') or 'nothing'}"
            )
            found.append(
                f"restore: {key} would be restored onto storage {storage}, which {said}, not VM disks "
                f"(content images): qemu-server refuses the restore (`Content type 'images' is not available "
                f"on storage '{storage}'`, QemuServer.pm parse_backup_hints). Declare storage: naming a "
                "storage with content images."
            )
    return found


def restore_plan(ctx: PveContext, decl: QemuDeclaration, refusals: list[str]) -> CreatePlan:
    """A create by restore: the archive as the node lists it (``guest.restore.find_archive``), and
    the config it holds (``guest.restore.archived_config``), from which the VM the restore makes is
    known (``clone.restored_config``). The plan names the archive with its size and time, refuses a
    drive the restore cannot allocate (``_restore_storage_refusals``) and what the write after it
    cannot do (a disk smaller than the archive's, on another storage: the judge, as onto a clone),
    and lists what that write changes; the declared drives are never sent with ``archive``
    (``create_vm`` refuses them)."""
    assert decl.restore is not None
    archive, refusal = restore.find_archive(ctx, decl.node, decl.restore)
    refusals = [*refusals, *([refusal] if refusal else [])]
    if archive is None or refusals:
        return CreatePlan(refusals=refusals)
    archived = restore.archived_config(ctx, decl.node, decl.restore)
    made = clone.restored_config(decl, archived.config, archived.disks)
    onto = _onto(decl, made)
    refusals = [*_restore_storage_refusals(ctx, decl, made), *onto.refuse, *onto.root.values()]
    if refusals:
        return CreatePlan(refusals=refusals)
    what = QEMU.what(decl.vmid, decl.node)
    changes = shared.changes_of(QEMU, onto, made)
    return restore.create_plan(
        what, archive, decl.config, judge.key_change, onto.drift, decl.unique, changes=changes
    )


#: Why a failed VM restore leaves the guest uncertain (``CreateStep.uncertain``).
RESTORE_UNCERTAIN = (
    "A failed qemu-server restore can leave the config create_vm locked at the vmid "
    "(restore_file_archive dies after create_and_lock_config): the VM is neither absent nor ours. "
    "Read `qm config {vmid}` on the node; remove what the restore left (`qm destroy {vmid}`) or declare "
    "adopt: true once it is what you want."
)


def _restored(
    ctx: PveContext, decl: QemuDeclaration, credential: Callable[[], Credential]
) -> Iterator[CreateStep]:
    """A create by restore: ``POST /nodes/{node}/qemu`` with ``archive`` and ``unique=1`` (and
    ``storage``, ``pool``; never ``force``, never a drive key: ``create_vm`` refuses them beside
    ``archive``), then the declaration written onto the restored VM as onto a clone."""
    assert decl.restore is not None
    form = {"vmid": str(decl.vmid), "archive": decl.restore, "unique": "1" if decl.unique else "0"}
    if decl.storage:
        form["storage"] = decl.storage
    if decl.pool:
        form["pool"] = decl.pool
    check_form(schema.CREATE, form, presence=True)
    path = api_path("nodes", decl.node, "qemu", decl.vmid)
    yield CreateStep(
        "POST",
        api_path("nodes", decl.node, "qemu"),
        f"restore VM {decl.vmid} on {decl.node} from {decl.restore}",
        form,
        uncertain=RESTORE_UNCERTAIN.format(vmid=decl.vmid),
    )
    yield from _configured(ctx, decl, credential, path)


def _configured(
    ctx: PveContext, decl: QemuDeclaration, credential: Callable[[], Credential], path: str
) -> Iterator[CreateStep]:
    """The declaration written onto a VM a clone or a restore made (``guest.apply.written_onto``:
    one ``POST …/config`` task with its digest, then a resize task per disk that grows), judged
    against the VM as made (``_onto``). Raises Refused when it cannot take the declaration (its row
    stays ``creating``)."""
    made = dict(ctx.client.request("GET", f"{path}/config", credential()) or {})
    yield from shared.written_onto(QEMU, decl, _onto(decl, made), made, path)


def create(
    ctx: PveContext, decl: QemuDeclaration, credential: Callable[[], Credential]
) -> Iterator[CreateStep]:
    """The requests of a VM create, each a task: ``POST /nodes/{node}/qemu`` (``create_vm``), then
    a declared ``cipassword`` in a ``POST …/config`` of its own (``update_vm_api`` hashes it;
    ``create_vm`` would store it in clear); or ``POST …/qemu/{template}/clone`` (``clone_vm``),
    then the declaration, ``cipassword`` included, written onto the clone (``POST …/config`` with
    its digest) and a ``PUT …/resize`` per disk that grows. Raises Refused
    (nothing sent) when the template is gone or not a template; after the clone, Refused when the
    clone as made cannot take the declaration (its row stays ``creating``)."""
    path = api_path("nodes", decl.node, "qemu", decl.vmid)
    if decl.restore is not None:
        yield from _restored(ctx, decl, credential)
        return
    if decl.clone is None:
        form = judge.create_form(decl)
        check_form(schema.CREATE, form, presence=True)
        yield CreateStep(
            "POST", api_path("nodes", decl.node, "qemu"), f"create VM {decl.vmid} on {decl.node}", form
        )
        if decl.secrets:
            # create_vm stores its form as sent; only update_vm_api hashes cipassword (encrypt_pw).
            made = ctx.client.request("GET", f"{path}/config", credential(), params={"current": "1"})
            form = {**decl.secrets, "digest": str((made or {}).get("digest", ""))}
            check_form(schema.UPDATE, form, presence=False, secrets=decl.secrets)
            yield CreateStep(
                "POST", f"{path}/config", f"write {', '.join(sorted(decl.secrets))} to VM {decl.vmid}", form
            )
        return
    node, config = _source(ctx, decl)
    refusals = clone.clone_source_refusals(decl, config)
    if config is not None and node is not None and not refusals:
        refusals = clone.clone_storage_refusals(decl, node, config, storages(ctx))[0]
    if refusals or node is None:
        raise Refused(" ".join(refusals))
    yield CreateStep(
        "POST",
        f"{api_path('nodes', node, 'qemu', decl.clone)}/clone",
        f"clone VM {decl.clone} to VM {decl.vmid} on {decl.node}",
        clone.clone_form(decl, node),
    )
    yield from _configured(ctx, decl, credential, path)


def update_checks(
    ctx: PveContext, decl: QemuDeclaration, change: change.QemuChange, config: GuestConfig
) -> tuple[list[str], list[str]]:
    """The ISOs the CD-ROM values ``change`` writes name (``iso_checks``); nothing is read when it
    writes none (a no-drift plan reads nothing more). The release is read only for an option some
    releases lack (``machine.release_refusals``). The privileges each key written, deleted or resized
    needs of the provision token, judged against ``config``'s old values (``privileges.guest_check``:
    a drive replaced or deleted is checked as the kind it was too). The judge's notes
    (``QemuChange.notes``: what PVE does with the write beyond storing it) follow the ISO notes."""
    refusals, notes = iso_checks(ctx, decl, change.put)
    if machine.needs_release(change.put):
        refusals = [*refusals, *machine.release_refusals(change.put, release(ctx))]
    if "startup" in change.put or "startup" in change.clear:
        more, said = startup_check(ctx, decl)
        refusals, notes = [*refusals, *more], [*notes, *said]
    # A secret's value is not needed: its key's class is (cipassword: $cloudinitoptions). Root keys
    # go through the root lane as root@pam (guest.lane), not with the token.
    written = {
        key: value
        for key, value in {
            **dict.fromkeys(change.secrets, "*"),
            **change.put,
            **change.after,
            **dict.fromkeys(change.clear, ""),
        }.items()
        if key not in change.root
    }
    resized = [key for key, _ in change.resize]
    if written or resized:
        old = {**config.pending, **config.current}
        more, said = privileges.guest_check(
            ctx, "qemu", decl.vmid, written, "update", live=old, resize=resized
        )
        refusals, notes = [*refusals, *more], [*notes, *said]
    return refusals, [*notes, *getattr(change, "notes", [])]


def startup_check(ctx: PveContext, decl: QemuDeclaration) -> tuple[list[str], list[str]]:
    """``(refusals, notes)`` for a write of ``startup``: the provision token needs Sys.Modify on ``/``
    (``judge.startup_refusal``), read as ``guest.refusals.provision_privilege_check`` reads it.
    Raises PveMalformed, PveUnreachable, PveError other than 403."""
    return provision_privilege_check(
        ctx,
        *privileges.STARTUP,
        f"needed to set startup on VM {decl.vmid}",
        lambda who: judge.startup_refusal(decl, who),
        "is checked by PVE when the write is sent",
    )


def applies_live(key: str, clear: bool, config: GuestConfig, new: str | None = None) -> bool:
    """``hotplug.applies_live`` on the VM's config in effect, with its ``hotplug``, ``ostype`` and
    ``machine`` and the options of ``key`` the write changes (``netN``, drives, ``agent``)."""
    old = live_text(config.current.get(key))
    changed: frozenset[str] = frozenset()
    if old is not None and new is not None:
        if schema.family_of(key) == "net":
            changed = judge.net_changed(new, old)
        elif schema.is_drive(key):
            changed = drives.drift_changed(new, old)
        elif key == "agent":
            a, b = dict(pairs(new, "enabled")), dict(pairs(old, "enabled"))
            changed = frozenset(k for k in {*a, *b} if a.get(k) != b.get(k))
    current = config.current
    return hotplug.applies_live(
        key,
        clear,
        old,
        new,
        live_text(current.get("hotplug")),
        changed,
        ostype=live_text(current.get("ostype")),
        machine=live_text(current.get("machine")),
    )


def _allocates(value: str) -> bool:
    """Whether a drive value makes ``create_disks`` allocate a volume: ``storage:GiB`` (a disk, an EFI
    disk, a TPM state) or ``storage:cloudinit``."""
    try:
        drive = parse_drive(value)
    except ValueError:
        return False
    return drive.kind == "new" or (
        drive.kind == "cloudinit" and drive.volume.partition(":")[2] == "cloudinit"
    )


def config_task(
    put: Mapping[str, str], clear: Sequence[str], config: GuestConfig, running: bool | None
) -> str | None:
    """Why a VM config write of ``put`` (key -> value) and ``clear`` goes as ``POST …/config``
    (``update_vm_async``: a ``qmconfig`` task), or None for ``PUT …/config`` (``update_vm``).

    Both run ``update_vm_api`` (qemu-server ``API2/Qemu.pm``); PVE documents the ``PUT`` as the
    synchronous API ("You should consider using the POST method instead for any actions involving
    hotplug or storage allocation"), and the ``POST`` task is awaited with the credential that
    started it. A write allocates when a drive value names a new volume (``storage:GiB``,
    ``storage:cloudinit``: ``create_disks``), whatever the VM's state. It hot-plugs when the VM
    runs (``running`` True; None, not read, is taken as running: the lifecycle reads the status
    whenever the answer depends on it) and a key it writes or deletes is one
    ``vmconfig_hotplug_pending`` applies through QEMU or the cgroup (``applies_live``, less the
    ``hotplug.FAST_PLUG`` keys and ``ipconfigN``, which it only writes into the config). Anything
    else is a simple change: the ``PUT``."""
    allocates = [key for key, value in put.items() if schema.is_drive(key) and _allocates(value)]
    if allocates:
        return f"it allocates {', '.join(allocates)} (create_disks)"
    if running is False:
        return None
    plugged = [
        key
        for key in [*put, *clear]
        if key not in hotplug.FAST_PLUG
        and schema.family_of(key) != "ipconfig"
        and applies_live(key, key in clear, config, put.get(key))
    ]
    if plugged:
        return f"it hot-plugs {', '.join(plugged)} into the running VM (vmconfig_hotplug_pending)"
    return None


#: The VM family.
QEMU = Family(
    names_guest=True,
    words=schema.WORDS,
    destroy_running="VM {vmid} is running - destroy failed",  # qemu-server destroy_vm
    ha_forces_stop=True,  # pve-ha-manager Resources/PVEVM.pm shutdown: forceStop => 1
    startup_down=True,  # qemu-server _do_vm_stop: $timeout = $opts->{down}
    pauses=True,  # qemu-server vm_shutdown: "VM is paused - cannot shutdown"
    config_task=config_task,
    pending_first=True,  # update_vm_api: [PENDING] written, then hot-plugged, then raise_param_exc
    parse=parse_declaration,
    judge=judge.judge,
    shown=judge.shown,
    key_change=judge.key_change,
    operator_view=judge.operator_view,
    identity_refusals=judge.identity_refusals,
    update_checks=update_checks,
    applies_live=applies_live,
    keys=KEYS,
    update=schema.UPDATE,
    resize=schema.RESIZE,
    size_of=size_option,
    plan_create=plan_create,
    create=create,
    create_form=judge.create_form,
    create_root=judge.create_root,
    # qemu/judge.py: PVE shows a set cipassword masked, so it is compared as set / not set.
    secrets_rule=(
        "sent in the first config write after the create (PVE hashes it there, never in create_vm), and "
        "again only when the VM shows none or cipassword_serial changes; never shown or kept, compared "
        "only as set / not set"
    ),
)
