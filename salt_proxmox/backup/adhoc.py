"""The ad-hoc snapshot calls (``proxmox.snapshot_list``, ``snapshot_create``, ``snapshot_delete``,
``snapshot_rollback``) on one guest, found in the cluster's guest index.

The writes obey ownership as the other ad-hoc writes do (``guest.adhoc.owned_guest``): the guest's
row is ``owned`` and the guest carries the row's fingerprint, unless ``adopt`` is true (then the call
is made without taking the guest over). Each write is PVE's task, awaited with the credential that
started it, and is judged first as the state would judge it (``snapshot.refusals``: a lock, a
volume that cannot snapshot, ``vmstate`` of a stopped VM).

A rollback (pve-guest-common ``AbstractConfig.pm`` ``snapshot_rollback``) puts the guest's config and
disks back to the snapshot's: what it discards is shown first (``rollback_report``): each config key
whose value goes, and the snapshots taken after it (the rollback returns to before them; on ZFS PVE
refuses unless the snapshot is the latest: ``ZFSPoolPlugin.pm`` ``volume_rollback_is_possible``).
With ``test`` nothing is sent.
"""

from __future__ import annotations

from collections.abc import Mapping

from salt_proxmox.backup import snapshot
from salt_proxmox.errors import DeclarationError, Refused, boolean_problem
from salt_proxmox.guest.adhoc import owned_unless_adopted
from salt_proxmox.guest.power import locate
from salt_proxmox.pve.client import api_path
from salt_proxmox.run.context import PveContext

#: Config keys a snapshot's config holds that are no part of the guest's own settings.
SNAPSHOT_KEYS = frozenset(
    {"snaptime", "snapstate", "vmstate", "parent", "digest", "lock", "runningmachine", "runningcpu"}
)


def _guest(
    ctx: PveContext, families: Mapping[str, object], vmid: object, node: object, adopt: object, action
):
    problem = boolean_problem("adopt", adopt)
    if problem:
        raise DeclarationError(problem)
    family, where, number = locate(ctx, families, vmid, node)
    owned_unless_adopted(ctx, family, where, number, action, bool(adopt))
    return family.kind, where, number


def _probe(ctx: PveContext, kind: str, node: str, vmid: int, snapname: object, **values) -> object:
    return snapshot.declare("adhoc", ctx.target.name, snapname, vmid, node, kind, **values)


def list_snapshots(
    ctx: PveContext, families: Mapping[str, object], vmid: object, node: object = None
) -> list[dict]:
    """``proxmox.snapshot_list``: the guest's snapshots (``current`` left out) as PVE lists them:
    ``name``, ``description``, ``snaptime``, ``parent``, ``vmstate`` (VMs). Raises Refused (no such
    guest), PveError."""
    family, where, number = locate(ctx, families, vmid, node)
    rows = ctx.client.request(
        "GET", f"{api_path('nodes', where, family.kind, number)}/snapshot", ctx.broker.read()
    )
    return [dict(row) for row in rows or [] if isinstance(row, Mapping) and row.get("name") != "current"]


def create(
    ctx: PveContext,
    families: Mapping[str, object],
    vmid: object,
    snapname: object,
    node: object = None,
    description: object = None,
    vmstate: object = None,
    adopt: object = False,
) -> dict:
    """``proxmox.snapshot_create``: take snapshot ``snapname`` (a task), after the checks above.
    Returns ``{vmid, node, type, snapname, upid}``. Raises DeclarationError, Refused (not ours, or
    PVE would refuse: the reasons), PveError, TaskFailed, Uncertain."""
    kind, where, number = _guest(ctx, families, vmid, node, adopt, ("snapshot", "snapshotted"))
    values = {
        key: value for key, value in (("description", description), ("vmstate", vmstate)) if value is not None
    }
    decl = _probe(ctx, kind, where, number, snapname, **values)
    problems = snapshot.refusals(ctx, decl, "create", None)
    if problems:
        raise Refused([*problems, "Nothing was written."])
    call = snapshot.create(decl)
    upid = ctx.task("POST", call.path, where, f"snapshot {decl.label}", form=call.form)
    return {"vmid": number, "node": where, "type": kind, "snapname": snapname, "upid": upid}


def delete(
    ctx: PveContext,
    families: Mapping[str, object],
    vmid: object,
    snapname: object,
    node: object = None,
    adopt: object = False,
) -> dict:
    """``proxmox.snapshot_delete``: delete snapshot ``snapname`` (a task; never ``force``). Returns
    ``{vmid, node, type, snapname, upid}``. Raises as ``create``, and Refused for a snapshot the guest
    does not have."""
    kind, where, number = _guest(ctx, families, vmid, node, adopt, ("delete a snapshot of", "changed"))
    decl = _probe(ctx, kind, where, number, snapname)
    names = {row.get("name") for row in list_snapshots(ctx, families, number, where)}
    if snapname not in names:
        raise Refused(f"{decl.label} does not exist; nothing to delete.")
    problems = snapshot.refusals(ctx, decl, "delete", {})
    if problems:
        raise Refused([*problems, "Nothing was deleted."])
    call = snapshot.SPEC.delete(decl, {})
    upid = ctx.task("DELETE", call.path, where, f"delete {decl.label}")
    return {"vmid": number, "node": where, "type": kind, "snapname": snapname, "upid": upid}


def rollback_report(ctx: PveContext, kind: str, node: str, vmid: int, snapname: str) -> dict:
    """What rolling guest ``vmid`` back to ``snapname`` discards: ``config`` ``{key: {old: now, new: at
    the snapshot}}`` for each setting that differs (pending values included, as ``GET …/config``
    merges them), and ``later_snapshots``, the snapshots taken after it, oldest first. Raises
    Refused for a snapshot the guest does not have, PveError."""
    credential = ctx.broker.read()
    base = api_path("nodes", node, kind, vmid)
    rows = ctx.client.request("GET", f"{base}/snapshot", credential) or []
    by_name = {row.get("name"): row for row in rows if isinstance(row, Mapping)}
    if snapname not in by_name or snapname == "current":
        raise Refused(f"{snapshot.KINDS[kind]} {vmid} has no snapshot {snapname}; nothing to roll back to.")
    now = ctx.client.request("GET", f"{base}/config", credential) or {}
    then = ctx.client.request("GET", f"{base}/snapshot/{snapname}/config", credential) or {}
    keys = sorted((set(now) | set(then)) - SNAPSHOT_KEYS)
    config = {
        key: {"old": now.get(key), "new": then.get(key)}
        for key in keys
        if str(now.get(key, "")).rstrip("\n") != str(then.get(key, "")).rstrip("\n")
    }
    taken = by_name[snapname].get("snaptime") or 0
    later = sorted(
        (
            row
            for name, row in by_name.items()
            if name not in ("current", snapname) and (row.get("snaptime") or 0) > taken
        ),
        key=lambda row: row.get("snaptime") or 0,
    )
    return {"config": config, "later_snapshots": [row.get("name") for row in later]}


def rollback(
    ctx: PveContext,
    families: Mapping[str, object],
    vmid: object,
    snapname: object,
    node: object = None,
    adopt: object = False,
    test: bool = False,
) -> dict:
    """``proxmox.snapshot_rollback``: what a rollback to ``snapname`` discards (``rollback_report``),
    and with ``test`` false the rollback itself (``POST …/snapshot/{snapname}/rollback``, a task,
    refused under a config lock). Returns ``{vmid, node, type, snapname, discards, upid}`` (``upid``
    None under ``test``). Raises as ``create``."""
    kind, where, number = _guest(ctx, families, vmid, node, adopt, ("roll back", "rolled back"))
    decl = _probe(ctx, kind, where, number, snapname)
    discards = rollback_report(ctx, kind, where, number, str(snapname))
    out = {
        "vmid": number,
        "node": where,
        "type": kind,
        "snapname": snapname,
        "discards": discards,
        "upid": None,
    }
    if test:
        return out
    problems = snapshot.refusals(ctx, decl, "delete", {})  # the lock check a rollback makes too
    if problems:
        raise Refused([*problems, "Nothing was rolled back."])
    path = f"{api_path('nodes', where, kind, number)}/snapshot/{snapname}/rollback"
    out["upid"] = ctx.task("POST", path, where, f"roll back to {decl.label}")
    return out
