"""Containers as a guest family (``guest.family.Family``): what the shared guest lifecycle needs to
know of them, from pve-container's own rules.

- API: ``/nodes/{node}/lxc/{vmid}`` (pve-container ``src/PVE/API2/LXC.pm``); remedies name ``pct``.
- Fingerprint keys (``KEYS``): the MAC PVE drew for each ``netN``, the volume id and size of
  ``rootfs``, each ``mpN`` and ``unusedN`` (pve-container ``src/PVE/LXC/Config.pm``: ``netN``
  ``$netconf_desc``, ``rootfs``/``mpN`` ``$mp_desc``, ``unusedN`` ``$unused_desc``).
- Hotplug: ``schema.applies_live`` (``vmconfig_hotplug_pending``).
- Create: one ``POST /nodes/{node}/lxc`` task (``create_vm``) from an ``ostemplate``, with the
  create secrets (``schema.CREATE_SECRETS``) in that one form and nowhere else. A privileged
  create on PVE 9 needs Sys.Modify on ``/`` (``lxc.refusals``): checked at plan with the read
  credential when it can be, and by the minted credential itself before the POST.
- Refusals at plan: ``judge.create_refusals`` for a create, ``judge.release_refusals`` for options
  the cluster's release does not know, ``judge.identity_refusals`` for another vmid or template.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING

from salt_proxmox.access import privileges
from salt_proxmox.guest import restore
from salt_proxmox.guest.apply import written_onto
from salt_proxmox.guest.decide import changes_of
from salt_proxmox.guest.family import CreatePlan, CreateStep, Family
from salt_proxmox.guest.fingerprint import GuestKeys
from salt_proxmox.guest.live import styled
from salt_proxmox.guest.pending import GuestConfig
from salt_proxmox.lxc import judge, rawkeys, restored, schema
from salt_proxmox.lxc.props import LxcDeclaration, parse_declaration
from salt_proxmox.lxc.refusals import check_own_sys_modify, privileged_create_check
from salt_proxmox.lxc.schema import parse_mountpoint
from salt_proxmox.pve.client import Credential, api_path
from salt_proxmox.pve.constraints import check_form, split_list
from salt_proxmox.pve.facts import Release, release, storages
from salt_proxmox.wire.propstring import pairs
from salt_proxmox.wire.volumes import size_option

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.guest.change import Change
    from salt_proxmox.run.context import PveContext


def _mac(value: str) -> str | None:
    """The ``hwaddr`` of a ``netN`` value, upper-cased as PVE prints it (pve-container
    ``Config.pm`` ``$netconf_desc`` hwaddr, format ``mac-addr``)."""
    mac = dict(pairs(value)).get("hwaddr")
    return mac.upper() if mac else None


def _volume(value: str) -> str:
    """``<volume id> size=<size>`` of a ``rootfs``/``mpN``/``unusedN`` value (``unusedN`` holds a
    bare volume id), or the path of a bind or device mount point."""
    volume = parse_mountpoint(value)
    size = volume.options.get("size")
    return f"{volume.volume} size={size}" if size else volume.volume


#: The container keys of a fingerprint (pve-container ``Config.pm``: ``netN`` ``$netconf_desc``,
#: ``rootfs``/``mpN`` ``$mp_desc``, ``unusedN`` ``$unused_desc``).
KEYS = GuestKeys(
    nic=re.compile(r"net\d+", re.ASCII),
    mac_of=_mac,
    volume=re.compile(r"rootfs|mp\d+|unused\d+", re.ASCII),
    volume_of=_volume,
)


def _needs_sys_modify(decl: LxcDeclaration, cluster: Release) -> bool:
    """A create PVE lets only a caller with Sys.Modify on / make (``lxc.refusals``)."""
    return cluster.privileged_create_needs_sys_modify and not judge.creates_unprivileged(decl, cluster)


def plan_create(ctx: PveContext, decl: LxcDeclaration) -> CreatePlan:
    """What a plan says of creating ``decl``: ``judge.create_refusals`` on the cluster's release,
    then (for a privileged create on PVE 9) the provision token's Sys.Modify; the note names the
    template and, when ``unprivileged`` is not declared, the kind the release's default makes. A
    create by restore: ``restore_plan``."""
    cluster = release(ctx)
    refusals = judge.create_refusals(decl, cluster)
    if decl.restore is not None:
        return restore_plan(ctx, decl, refusals)
    checked: list[str] = []
    if not refusals and _needs_sys_modify(decl, cluster):
        refusals, checked = privileged_create_check(ctx)
    if not refusals:
        # The root keys go through the root lane as root@pam after the create, not with the token.
        laned = judge.create_root(decl)
        sent = {key: value for key, value in decl.config.items() if key not in laned}
        refusals, unchecked = privileges.guest_check(ctx, "lxc", decl.vmid, sent, "create", decl.pool)
        checked += unchecked
    suffix = ""
    if "unprivileged" not in decl.config:
        kind = "unprivileged" if judge.creates_unprivileged(decl, cluster) else "privileged"
        suffix = f" as {kind} (PVE {cluster.release}'s default: unprivileged is not declared)"
    return CreatePlan(
        refusals=refusals,
        source=f"from {decl.ostemplate}",
        again="from ostemplate with new, empty volumes",
        suffix=suffix,
        notes=checked,
    )


def _restore_storage_refusal(ctx: PveContext, decl: LxcDeclaration) -> str | None:
    """Why the restore's target storage cannot take it, or None: ``rootfs`` must be declared as a new
    volume (``storage:GiB``) on a storage that holds containers (content ``rootdir``): pve-container
    ``create_vm`` allocates the restored volumes there (``$mp_param``; without one, on ``storage``,
    default ``local``), and ``PVE::LXC::create_disks`` dies on a storage without ``rootdir``."""
    rootfs = decl.config.get("rootfs")
    volume = parse_mountpoint(rootfs).volume if rootfs else ""
    storage, _, size = volume.partition(":")
    if not rootfs or not size.replace(".", "", 1).isdigit():
        return (
            f"restore: declare rootfs as the new volume the restore allocates (rootfs: <storage>:<GiB>, on a "
            f"storage that holds containers); without it pve-container create_vm restores onto storage "
            f"local. Declared: {rootfs or 'no rootfs'}."
        )
    known = storages(ctx).get(storage)
    if known is None or "rootdir" not in split_list(str(known.get("content") or "")):
        return (
            f"restore: rootfs is on storage {storage}, which "
            + (
                "the read token does not list"
                if known is None
                else f"holds {known.get('content') or 'nothing'}"
            )
            + ", not containers (content rootdir): pve-container create_vm would refuse the restore's "
            "volumes there. Name a storage with content rootdir."
        )
    return None


def restore_plan(ctx: PveContext, decl: LxcDeclaration, refusals: list[str]) -> CreatePlan:
    """A create by restore: the archive as the node lists it (``guest.restore.find_archive``), the
    target storage (``_restore_storage_refusal``), and the config the archive holds
    (``guest.restore.archived_config``), from which the container the restore makes is known
    (``lxc.restored.restored_config``). The declaration is judged against that container as the apply
    judges it against the one it reads back: the plan lists only what the write after the restore
    changes, refuses what it cannot (``unprivileged`` other than the archive's), and notes where
    ``rootfs`` goes (``restored.rootfs_note``) and each archived mount point the restore does not make
    (``restored.dropped_mount_notes``)."""
    assert decl.restore is not None
    archive, refusal = restore.find_archive(ctx, decl.node, decl.restore)
    refusals = [*refusals, *([refusal] if refusal else [])]
    problem = _restore_storage_refusal(ctx, decl)
    if problem:
        refusals.append(problem)
    if archive is None or refusals:
        return CreatePlan(refusals=refusals)
    archived = restore.archived_config(ctx, decl.node, decl.restore).config
    form = _restore_form(decl)
    made = restored.restored_config(decl.vmid, archived, form, decl.unique)
    onto = judge.judge(decl, made, styled(ctx, decl))
    if onto.refuse or onto.root:
        # Root keys onto a restored container are not written through a lane (guest.apply.written_onto).
        return CreatePlan(refusals=[*onto.refuse, *onto.root.values()])
    checked: list[str] = []
    if release(ctx).privileged_create_needs_sys_modify and not judge.is_unprivileged(made):
        # create_vm (pve-container 6, PVE 9): "creating a new privileged container is checked here",
        # after the archive's unprivileged was taken (restoring a privileged backup as a new CT).
        refusals, checked = privileged_create_check(ctx)
        if refusals:
            return CreatePlan(refusals=refusals)
    what = LXC.what(decl.vmid, decl.node)
    plan = restore.create_plan(
        what,
        archive,
        decl.config,
        judge.key_change,
        onto.drift,
        decl.unique,
        changes=changes_of(LXC, onto, made),
    )
    moved = restored.rootfs_note(what, archived, form)
    plan.notes.extend([*([moved] if moved else []), *restored.dropped_mount_notes(what, archived, form)])
    plan.notes.extend(checked)
    return plan


def _restore_form(decl: LxcDeclaration) -> dict[str, str]:
    """``POST /nodes/{node}/lxc`` of a restore (``create_vm``): the archive as ``ostemplate`` with
    ``restore=1`` and ``unique=1`` (new MACs), the target ``rootfs``, each declared volume ``mpN``
    (``$mp_param``: allocated before the archive is extracted into them, so their files land in them,
    not in ``rootfs``) and ``pool``; never ``force``. Every other declared key is written after it
    (``create``)."""
    assert decl.restore is not None
    form = {
        "vmid": str(decl.vmid),
        "ostemplate": decl.restore,
        "restore": "1",
        "unique": str(int(decl.unique)),
    }
    form["rootfs"] = decl.config["rootfs"]
    for key, value in decl.config.items():
        if (schema.indexed(key) or ("", 0))[0] == "mp" and value and not parse_mountpoint(value).host_path:
            form[key] = value
    if decl.pool:
        form["pool"] = decl.pool
    return form


def create(
    ctx: PveContext, decl: LxcDeclaration, credential: Callable[[], Credential]
) -> Iterator[CreateStep]:
    """The one request of a container create: ``POST /nodes/{node}/lxc`` (pve-container
    ``src/PVE/API2/LXC.pm`` ``create_vm``), a task. Before it, a privileged create on PVE 9 checks
    the minted credential's own Sys.Modify (raises Refused: nothing sent). A create by restore:
    the restore task (``_restore_form``), then the declaration judged against the restored
    container and written with its digest (``PUT …/config``: a declared ``netN`` keeps the MAC
    the restore drew, ``judge``), then a resize task per volume that grows."""
    if decl.restore is not None:
        yield from _restored(ctx, decl, credential)
        return
    # The create secrets go with this one POST and nowhere else (schema.CREATE_SECRETS).
    form = {**judge.create_form(decl), **decl.secrets}
    check_form(schema.CREATE, form, presence=True, secrets=decl.secrets)
    minted = credential()
    if _needs_sys_modify(decl, release(ctx)):
        check_own_sys_modify(ctx, minted)
    yield CreateStep(
        "POST", api_path("nodes", decl.node, "lxc"), f"create CT {decl.vmid} on {decl.node}", form
    )


def _restored(
    ctx: PveContext, decl: LxcDeclaration, credential: Callable[[], Credential]
) -> Iterator[CreateStep]:
    """The steps of a create by restore (``create``)."""
    form = _restore_form(decl)
    check_form(schema.CREATE, form, presence=True)
    path = api_path("nodes", decl.node, "lxc", decl.vmid)
    yield CreateStep(
        "POST",
        api_path("nodes", decl.node, "lxc"),
        f"restore CT {decl.vmid} on {decl.node} from {decl.restore}",
        form,
    )
    made = dict(ctx.client.request("GET", f"{path}/config", credential()) or {})
    # pve-container has the synchronous PUT …/config only.
    yield from written_onto(LXC, decl, judge.judge(decl, made, styled(ctx, decl)), made, path, task=False)


def _write_raw(ctx: PveContext, decl: LxcDeclaration, values: Mapping[str, str], digest: str) -> None:
    """The raw ``lxc`` lines into the container's config file on its node, through the root lane's
    node (``lxc.rawkeys.write_lines``, under PVE's config lock, guarded by ``digest``); the
    directories are the lane's ``pve_dir`` and ``lock_dir``."""
    config = ctx.lane.config
    rawkeys.write_lines(config.pve_dir, config.lock_dir, decl.node, decl.vmid, values[rawkeys.KEY], digest)


def update_checks(
    ctx: PveContext, decl: LxcDeclaration, change: Change, config: GuestConfig
) -> tuple[list[str], list[str]]:
    """Refusals: options ``decl`` names that the cluster's release does not know
    (``judge.release_refusals``; the release is read only when ``decl`` names such an option), and the
    privileges the keys written, deleted or resized need that the provision token lacks, judged against
    ``config``'s old values (``access.privileges.guest_check``; root keys go through the root lane as
    root@pam, ``guest.lane``, not with the token); notes where those cannot be read."""
    refusals = judge.release_refusals(decl, release(ctx)) if judge.uses_new_options(decl) else []
    written = {
        k: v for k, v in {**change.put, **dict.fromkeys(change.clear, "")}.items() if k not in change.root
    }
    resized = [key for key, _ in change.resize]
    lacking, notes = [], []
    if written or resized:
        old = {**config.pending, **config.current}
        lacking, notes = privileges.guest_check(
            ctx, "lxc", decl.vmid, written, "update", live=old, resize=resized
        )
    return [*refusals, *lacking], notes


def applies_live(key: str, clear: bool, config: GuestConfig, new: str | None = None) -> bool:
    """``schema.applies_live`` on the container's config in effect (the value written does not
    change the container's rule)."""
    return schema.applies_live(key, clear, key in config.current)


#: The container family.
LXC = Family(
    words=schema.WORDS,
    destroy_running="unable to destroy CT {vmid} - container is running",
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
    file_keys=frozenset({rawkeys.KEY}),
    file_write=lambda ctx, decl, values, digest: _write_raw(ctx, decl, values, digest),
)
