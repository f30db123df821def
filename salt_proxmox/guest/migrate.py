"""Migration as declared intent: a guest declared on another node than the one it lives on is moved
there, when the declaration opts in (``migrate: true`` on the guest, or ``proxmox:targets:<t>:migrate:
true`` for every guest of the target), since a move is not free (disks are copied, a running container
is restarted). Without the opt-in it is refused as before, naming ``migrate: true`` as the remedy.

The plan judges the guest where it lives first (``guest.decide`` on its live node: ownership,
fingerprint, adopt), then ``plan_move`` runs the move's preflight and says what the move does:

- a VM: PVE's own preflight, ``GET nodes/{node}/qemu/{vmid}/migrate?target=`` (qemu-server
  ``src/PVE/API2/Qemu.pm`` ``migrate_vm_precondition``, VM.Migrate on ``/vms/{vmid}``): ``running``,
  ``allowed_nodes``, ``not_allowed_nodes`` (``unavailable_storages``, ``unavailable-resources``),
  ``local_disks`` (``volid``, ``size`` in bytes, ``cdrom``, ``is_unused``), ``local_resources``,
  ``mapped-resources``, ``mapped-resource-info``. Refused when the target is not allowed (PVE's reason),
  a local resource blocks it (``src/PVE/QemuMigrate.pm`` ``prepare``: ``can't migrate VM which uses
  local devices``; the offline ``force`` that overrides it is root@pam's only, ``migrate_vm``), a running
  VM uses a mapped device that is not live-migratable (``prepare``), or a local CD-ROM image is attached
  (``scan_local_volumes``: ``local cdrom image``; a cloud-init drive is regenerated, not copied). A
  running VM moves online (``migrate_vm``: ``can't migrate running VM without --online``), its local
  disks with ``with-local-disks``;
- a container: pve-container 5 (PVE 8) has no preflight call (PVE 9 added ``GET …/lxc/{vmid}/migrate``),
  so its rules are checked here from ``src/PVE/LXC/Migrate.pm`` ``prepare``: a bind or device mount point
  not marked ``shared`` (``cannot migrate local <type> mount point``), a volume on a storage the target
  node lacks (pve-storage ``storage_check_enabled``: ``storage '<id>' is not available on node
  '<node>'``, read as ``GET nodes/{target}/storage``, Datastore.Audit). A running container is moved in
  restart mode (``prepare``: ``running container can only be migrated in restart mode``; live migration
  is not implemented): shut down with ``timeout`` (the declared ``shutdown_timeout``, else PVE's 180 s),
  moved, started on the target;
- an HA-managed guest is refused: PVE hands its migrate to the HA manager (``migrate_vm`` of both:
  ``ha-manager migrate <sid> <target>``), which is HA's ``migrate``/``relocate``, not this state's.

One move at a time, and never together with other changes in one write: a move with config drift or a
power change plans the move only; the config and power are planned on the next run, from the new node.
The apply sends the ``POST …/migrate`` the plan listed, awaits its task with the provision credential
that started it, reads the guest back on the target and records the ownership row there (the row key
holds no node; its recorded declaration's ``node`` follows the guest).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from salt_proxmox.access.privileges import Need, check, planning
from salt_proxmox.errors import SaltProxmoxError, boolean_problem
from salt_proxmox.guest import identity
from salt_proxmox.guest.refusals import ha_managed, read_current
from salt_proxmox.pve.client import api_path
from salt_proxmox.pve.errors import PveMalformed
from salt_proxmox.pve.facts import node_storages

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.guest.family import Declaration, Family
    from salt_proxmox.guest.power import Power
    from salt_proxmox.outcome import Outcome
    from salt_proxmox.run.context import PveContext

#: The state argument (and ``proxmox:targets:<t>`` key) that opts a guest in.
KEY = "migrate"
#: pve-container ``API2/LXC.pm`` ``migrate_vm``: ``timeout`` of a restart migration's shutdown, default 180 s.
RESTART_TIMEOUT = 180
#: pve-common ``PVE/JSONSchema.pm`` ``parse_size``: a number with an optional K, M, G or T (powers of 1024).
_SIZE = re.compile(r"(\d+(?:\.\d+)?)([KMGT]?)")
_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}
#: Where each family's migrate call is defined.
_API = {"qemu": "qemu-server API2/Qemu.pm", "lxc": "pve-container API2/LXC.pm"}
#: pve-container ``PVE/LXC/Config.pm``: ``rootfs``, ``mpN`` and ``unusedN`` name volumes.
_MOUNT = re.compile(r"rootfs|mp\d+|unused\d+")


def option_problem(where: str, value: object) -> str | None:
    """The refusal of a ``migrate`` value that is not a YAML boolean (``errors.boolean_problem``),
    named by ``where`` (``migrate``, ``proxmox:targets:lab:migrate``); None when it is one."""
    problem = boolean_problem(KEY, value)
    return None if problem is None else problem.replace(KEY, where, 1)


def size_bytes(text: object) -> int:
    """Bytes of a PVE size (``8G``, ``512M``, ``1073741824``: pve-common ``parse_size``); 0 if unreadable."""
    match = _SIZE.fullmatch(str(text or "").strip())
    return int(float(match.group(1)) * _UNITS[match.group(2)]) if match else 0


def shown_size(size: int) -> str:
    """``16 GiB``, ``1.5 GiB``, ``512 MiB``."""
    for unit, scale in (("TiB", 1024**4), ("GiB", 1024**3), ("MiB", 1024**2)):
        if size >= scale:
            value = size / scale
            return f"{value:g} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{size} B"


@dataclass(frozen=True)
class Move:
    """A migration the plan lists: ``POST path`` with ``form`` on ``source`` (qemu-server/pve-container
    ``migrate_vm``), to ``target``. ``line``: what the plan says it does; ``deferred``: the config
    keys and power change planned on the next run, after the move."""

    source: str
    target: str
    path: str
    form: dict[str, str]
    line: str
    deferred: list[str] = field(default_factory=list)


def opted_in(ctx: PveContext, declared: object) -> bool:
    """Whether a guest may be moved: its own ``migrate`` when declared, else its target's."""
    return bool(declared) if declared is not None else bool(getattr(ctx.target, "migrate", False))


def not_opted_in(family: Family, decl: Declaration, source: str, target_name: str) -> str:
    """The refusal of a guest declared on another node than its own, without the opt-in."""
    return (
        f"{family.what(decl.vmid, decl.node)}: the guest lives on node {source}, not {decl.node}. A move is "
        f"not free (its local disks are copied, a running container is restarted), so it is made only when "
        f"asked: declare migrate: true on this guest (or proxmox:targets:{target_name}:migrate: true) to "
        f"migrate it to {decl.node}, or declare node: {source}."
    )


def _vm_preflight(
    ctx: PveContext, family: Family, decl: Declaration, source: str
) -> tuple[dict[str, str], str, list[str]]:
    """``(form, what the move does, refusals)`` of a VM from PVE's ``migrate_vm_precondition``."""
    path = f"{api_path('nodes', source, 'qemu', decl.vmid)}/migrate"
    answer = ctx.client.request("GET", path, ctx.broker.provision(), params={"target": decl.node})
    if not isinstance(answer, Mapping):
        raise PveMalformed("GET", path, "the migration preconditions are not an object")
    what, target = family.what(decl.vmid, source), decl.node
    refusals = []
    running = str(answer.get("running")) in ("1", "True", "true")
    allowed = answer.get("allowed_nodes") or []
    if target not in allowed:
        reasons = (answer.get("not_allowed_nodes") or {}).get(target)
        if isinstance(reasons, Mapping) and reasons:
            said = "; ".join(
                f"{key}: {', '.join(map(str, value)) if isinstance(value, list) else value}"
                for key, value in sorted(reasons.items())
            )
            refusals.append(
                f"{what}: PVE does not allow a migration to {target} ({said}; qemu-server API2/Qemu.pm "
                "migrate_vm_precondition). Make them available on the target node, or declare another node."
            )
        else:
            refusals.append(
                f"{what}: {target} is not among the nodes PVE allows a migration to "
                f"({', '.join(map(str, allowed)) or 'none'}; qemu-server API2/Qemu.pm "
                "migrate_vm_precondition). Declare one of them."
            )
    mapped = answer.get("mapped-resource-info") or {}
    blocking = [r for r in answer.get("local_resources") or [] if r not in mapped]
    if blocking:
        refusals.append(
            f"{what}: PVE refuses to migrate it: `can't migrate VM which uses local devices: "
            f"{', '.join(map(str, blocking))}` (qemu-server QemuMigrate.pm prepare; only root@pam's offline "
            "force overrides it). Remove them, or map them (Datacenter → Resource Mappings)."
        )
    if running:
        fixed = [
            f"{key}:{info.get('name', '')}"
            for key, info in sorted(mapped.items())
            if isinstance(info, Mapping) and not info.get("live-migration")
        ]
        if fixed:
            refusals.append(
                f"{what}: PVE refuses to migrate it while it runs: `can't live migrate running VM which uses "
                f"following mapped devices: {', '.join(fixed)}` (qemu-server QemuMigrate.pm prepare). Shut "
                "it down first (status: stopped), then run again."
            )
    copied = []
    for disk in answer.get("local_disks") or []:
        if not isinstance(disk, Mapping):
            continue
        volid = str(disk.get("volid") or "")
        if disk.get("cdrom"):
            if re.search(r"vm-\d+-cloudinit", volid):
                continue  # regenerated on the target (QemuMigrate.pm scan_local_volumes: ref generated)
            refusals.append(
                f"{what}: PVE refuses to migrate it: its CD-ROM {volid} is a local image (`local cdrom "
                "image`, qemu-server QemuMigrate.pm scan_local_volumes). Eject it (media on a shared "
                "storage, or none), then run again."
            )
            continue
        copied.append(int(disk.get("size") or 0))
    form = {"target": target}
    if running:
        form["online"] = "1"
        if copied:
            form["with-local-disks"] = "1"
    mode = "online, the VM keeps running" if running else "offline"
    return form, mode + _copied(copied), refusals


def _ct_preflight(
    ctx: PveContext, family: Family, decl: Declaration, source: str, live: Mapping[str, object], power: Power
) -> tuple[dict[str, str], str, list[str]]:
    """``(form, what the move does, refusals)`` of a container, from pve-container ``LXC/Migrate.pm``
    ``prepare`` (PVE 8 has no preflight call for containers)."""
    what, target = family.what(decl.vmid, source), decl.node
    storages = node_storages(ctx, target)
    refusals, copied = [], []
    for key in sorted(k for k in live if _MOUNT.fullmatch(k)):
        value = str(live[key])
        volume, *options = value.split(",")
        opts = dict(o.partition("=")[::2] for o in options)
        if volume.startswith("/"):
            if opts.get("shared") != "1":
                kind = "device" if volume.startswith("/dev/") else "bind"
                refusals.append(
                    f"{what}: PVE refuses to migrate it: `cannot migrate local {kind} mount point '{key}'` "
                    "(pve-container LXC/Migrate.pm prepare). Mark it shared=1 if the path exists on every "
                    "node, or remove it."
                )
            continue
        storage = volume.partition(":")[0]
        found = storages.get(storage)
        # pve-storage API2/Storage/Status.pm index lists a storage disabled there with enabled 0.
        if found is None or str(found.get("enabled", 1)) == "0":
            refusals.append(
                f"{what}: PVE refuses to migrate it: `storage '{storage}' is not available on node "
                f"'{target}'` ({key}; pve-container LXC/Migrate.pm prepare, pve-storage "
                "storage_check_enabled). Make the storage available there, or declare another node."
            )
        elif not found.get("shared"):
            copied.append(size_bytes(opts.get("size")))
    running = str(read_current(ctx, family.kind, source, decl.vmid).get("status")) == "running"
    form = {"target": target}
    if not running:
        return form, "offline" + _copied(copied), refusals
    timeout = power.shutdown_timeout if power.timeout_declared else RESTART_TIMEOUT
    form.update(restart="1", timeout=str(timeout))
    mode = f"restart mode: it is shut down on {source} (timeout {timeout} s), moved, and started on {target}"
    return form, mode + _copied(copied), refusals


def _copied(sizes: list[int]) -> str:
    if not sizes:
        return ", no local disk copied"
    count = f"{len(sizes)} disk{'s' if len(sizes) > 1 else ''}"
    return f", {count} of {shown_size(sum(sizes))} copied"


def plan_move(
    ctx: PveContext,
    family: Family,
    decl: Declaration,
    power: Power,
    source: str,
    live: Mapping[str, object],
    deferred: list[str],
) -> tuple[list[str], list[str], Move | None]:
    """``(refusals, notes, move)`` of guest ``decl.vmid``, declared on ``decl.node``, that lives on
    ``source`` with config ``live`` and was judged there (ownership and identity: ``guest.decide``);
    ``deferred``: its drift and power change, planned after the move. Raises what the reads raise."""
    what = family.what(decl.vmid, source)
    current = read_current(ctx, family.kind, source, decl.vmid)
    if ha_managed(current) is not None:
        sid = f"{family.ha_type}:{decl.vmid}"
        return (
            [
                f"{what} is managed by HA as {sid}: PVE hands its migration to the HA manager (`ha-manager "
                f"migrate {sid} {decl.node}`; {_API[family.kind]} migrate_vm), so this state does not move "
                f"it. Move it with HA (`ha-manager migrate {sid} {decl.node}` or `ha-manager relocate {sid} "
                f"{decl.node}`), then declare the node it is on."
            ],
            [],
            None,
        )
    notes: list[str] = []
    if planning(ctx):
        why = f"migrate {family.label} {decl.vmid} ({_API[family.kind]} migrate_vm)"
        refused, notes = check(ctx, [Need("provision", f"/vms/{decl.vmid}", ("VM.Migrate",), why)])
        if refused:
            return refused, notes, None
    if family.kind == "qemu":
        form, mode, refused = _vm_preflight(ctx, family, decl, source)
    else:
        form, mode, refused = _ct_preflight(ctx, family, decl, source, live, power)
    if refused:
        return refused, notes, None
    path = f"{api_path('nodes', source, family.kind, decl.vmid)}/migrate"
    return [], notes, Move(source, decl.node, path, form, f"would migrate to {decl.node} ({mode})", deferred)


def outcome(ctx: PveContext, family: Family, decl: Declaration, decision: Any, test: bool, out: Outcome):
    """Plan or apply a ``migrate`` decision (a ``guest.decide.Decision`` with its ``move``) onto
    ``out``: the plan lists the move; the apply sends its ``POST …/migrate``, awaits the task with the
    credential that started it, reads the guest back on the target node and records it there. Returns
    ``out``; never raises for a known failure."""
    from salt_proxmox.guest.live import read_live

    move = decision.move
    assert move is not None
    what = family.what(decl.vmid, move.source)
    out.changes = {"node": {"old": move.source, "new": move.target}}
    out.comment.extend(decision.notes)
    later = (
        f"{what}: {', '.join(move.deferred)} differ{'s' if len(move.deferred) == 1 else ''} too; one move at "
        f"a time and never with other changes: they are planned on the next run, read from {move.target}"
    )
    if test:
        out.comment.append(f"{what}: {move.line}")
        if move.deferred:
            out.comment.append(later)
        out.result = None
        return out
    label = f"migrate {family.label} {decl.vmid} to {move.target}"
    try:
        ctx.write_slot(move.target)
        ctx.task("POST", move.path, move.source, label, form=move.form)
    except SaltProxmoxError as exc:
        out.changes = {}
        return out.fail(
            f"{what}: {exc}",
            f"The migration failed; PVE leaves the guest on {move.source} (QemuMigrate.pm/LXC/Migrate.pm "
            "final_cleanup), and its ownership row is unchanged. The next run reads where it is.",
        )
    try:
        after = read_live(ctx, family, move.target, decl.vmid)
        if after is None:
            return out.fail(
                f"{what}: the migrate task ended OK but {move.target} holds no guest {decl.vmid}."
            )
        row = decision.row or {}
        declared = row.get("declared") if move.deferred and isinstance(row.get("declared"), Mapping) else None
        # Without drift, the declaration is what the guest now is; with drift, the one it was made with.
        stored = {**declared, "node": move.target} if declared else decl.stored()
        prints = identity.live_fingerprint(family, after.merged())
        ctx.ownership.mark_owned(decision.row_key, decl.state_id, stored, prints)
    except SaltProxmoxError as exc:
        return out.fail(f"{what}: migrated to {move.target}, but {exc}", "Its ownership row is unchanged.")
    out.comment.append(f"{family.what(decl.vmid, move.target)} has been migrated from {move.source}")
    if move.deferred:
        out.comment.append(later.replace("are planned on", "are written by"))
    return out
