"""Plan and apply of ``proxmox_content.present``/``absent`` (docs/design.md §7i).

One decision (``decide``) serves plan and apply: the nodes that must hold the file
(``live.where_needed``), then on each its storage's state and the file (``live.on_node``), compared by
volid and size; the source (URL, checksum, compression) by the ownership row
(``<target>/content/<volid>``), which keeps the declared source and each node's size, because PVE shows
no checksum of a stored file.

What PVE does with a file that is there (pve-common ``src/PVE/Tools.pm`` ``download_file_from_url``,
which ``download_url`` calls without ``allow_overwrite``): with a checksum it hashes the file and, when it
matches, downloads nothing ("OK, got correct file already"), else dies "checksum mismatch ... aborting";
without one it dies "refusing to override existing file". So a changed source (or a size that is not the
one this minion recorded) is a re-download that must delete the file first
(``DELETE /nodes/{node}/storage/{storage}/content/{volume}``, pve-storage ``API2/Storage/Content.pm``
``delete``): planned explicitly, refused unless ``replace: true``, and never while a VM's drive names the
volid (a CD-ROM ``ide2: <volid>,media=cdrom``; ``live.guests_using``).

- a file that is there and has no row is refused unless ``adopt: true`` (then only the row is written:
  PVE cannot show whether it holds the declared checksum);
- the download task is awaited with the credential that started it; when it fails, its log's last
  lines are in the comment (``GET /nodes/{node}/tasks/{upid}/log``, pve-manager ``API2/Tasks.pm``
  ``read_task_log``); the file is read back after it;
- ``absent``: ``removal: retain`` (default) forgets the row; ``removal: destroy`` deletes the file on
  each node holding it, only when the row says it is ours and no VM names it; without a row it is
  refused when a node holds the file, and done when none does (``_destroy_unowned``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from salt_proxmox.access import privileges
from salt_proxmox.content import live
from salt_proxmox.content.declare import Download, declare, identify, row_source
from salt_proxmox.errors import DeclarationError, SaltProxmoxError
from salt_proxmox.outcome import Outcome, forget_ownership, record_ownership
from salt_proxmox.ownership.rows import destroy_path, removal_problem
from salt_proxmox.pve.client import api_path
from salt_proxmox.pve.tasks import TaskFailed, start_task
from salt_proxmox.run.context import PveContext

#: The task log lines a failed download's comment carries.
LOG_LINES = 5


@dataclass
class Decision:
    """``action``: ``noop``, ``write`` (``steps``: ``(node, "download" | "replace")``), ``record`` (only
    the row) or ``refuse``. ``sizes``: each holding node's size now."""

    action: str
    steps: list[tuple[str, str]] = field(default_factory=list)
    sizes: dict[str, int] = field(default_factory=dict)
    changes: dict = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def where(download: Download) -> str:
    return f"proxmox_content {download.state_id}"


def needs(download: Download, node: str) -> list[privileges.Need]:
    """What the provision credential needs for the download on ``node`` (pve-storage
    ``API2/Storage/Status.pm`` ``download_url`` permissions: Datastore.AllocateTemplate on
    ``/storage/{storage}`` and Sys.Audit with Sys.Modify on ``/`` — or Sys.AccessNetwork on
    ``/nodes/{node}``, the alternative PVE also takes, which this check does not weigh)."""
    why = f"download_url ({download.volid} on {node})"
    return [
        privileges.Need("provision", f"/storage/{download.storage}", ("Datastore.AllocateTemplate",), why),
        privileges.Need("provision", "/", ("Sys.Audit", "Sys.Modify"), why),
    ]


def estate_needs(state_id: str, target: str, name: object, args: dict) -> list[privileges.Need]:
    """``needs`` of a declared download for the estate's privileges report (registry ``Kind.needs``,
    ``access.estate``): those of its download on any node, or none for a declaration ``declare``
    refuses (its state says why)."""
    try:
        download = declare(state_id, target, name=name, **args)
    except DeclarationError:
        return []
    return needs(download, "each node that needs it")


def stored(download: Download, sizes: dict[str, int]) -> dict[str, object]:
    """What the ownership row keeps: the names, the declared source and each node's size."""
    return {
        "storage": download.storage,
        "content": download.content,
        "filename": download.filename,
        "source": download.source(),
        "sizes": dict(sorted(sizes.items())),
    }


def decide(ctx: PveContext, download: Download) -> Decision:
    """The one decision of ``present`` (module docstring). Raises what the reads raise: never absence."""
    nodes, shared, refusals = live.where_needed(ctx, download)
    if refusals:
        return Decision("refuse", reasons=refusals)
    row = ctx.ownership.row(download.key)
    recorded = (row or {}).get("declared") or {}
    known = dict(recorded.get("sizes") or {}) if isinstance(recorded, dict) else {}
    changed_source = row is not None and row_source(row) != download.source()
    decision = Decision("noop")
    for node in nodes:
        inactive = live.active(ctx, download, node)
        if inactive:
            decision.reasons.append(inactive)
            continue
        found = live.on_node(ctx, download, node)
        if found is None:
            decision.steps.append((node, "download"))
            continue
        decision.sizes[node] = found.size
        if row is None and not download.adopt:
            decision.reasons.append(
                f"{download.label} is on node {node} ({found.size} bytes) and this minion did "
                "not download it. "
                "Nothing is taken over silently: declare adopt: true to manage it (PVE cannot "
                "show its checksum, "
                "so the declared one is recorded as it)."
            )
        elif row is not None and (changed_source or known.get(node) not in (None, found.size)):
            why = (
                "its declared source changed"
                if changed_source
                else (f"its size is {found.size} bytes, not the {known.get(node)} this minion downloaded")
            )
            if not download.replace:
                decision.reasons.append(
                    f"{download.label} on node {node}: {why}. PVE does not overwrite a file "
                    "(pve-common Tools.pm "
                    "download_file_from_url: refusing to override existing file / checksum "
                    "mismatch, aborting), so "
                    "it must be deleted and downloaded again: declare replace: true to do that."
                )
            else:
                decision.steps.append((node, "replace"))
    if decision.reasons:
        return Decision("refuse", reasons=decision.reasons)
    if any(step == "replace" for _node, step in decision.steps):
        users = live.guests_using(ctx, download.volid)
        if users:
            return Decision("refuse", reasons=[
                f"{download.label} cannot be replaced: {', '.join(users)} use(s) it, and PVE "
                "deletes it under "
                "them. Nothing was written: eject it first (qm set <vmid> --<key> none,media=cdrom)."
            ])  # fmt: skip
    if not shared and len(nodes) > 1:
        decision.notes.append(
            f"storage {download.storage} is not shared: {download.volid} is held on each of "
            + ", ".join(nodes)
        )
    if decision.steps:
        decision.action = "write"
        decision.changes = {
            node: {"old": None if step == "download" else decision.sizes[node], "new": step}
            for node, step in decision.steps
        }
        if any(step == "replace" for _n, step in decision.steps):
            decision.changes["source"] = {"old": row_source(row), "new": download.source()}
        return decision
    if row is None or row.get("phase") != "owned" or recorded != stored(download, decision.sizes):
        decision.action = "record"
    return decision


def _download(ctx: PveContext, download: Download, node: str) -> str:
    """Start the download on ``node`` and await it with the credential that started it; a failed task's
    comment carries its log's last lines. Returns the UPID. Raises TaskFailed, TaskUncertain, PveError."""
    what = f"download of {download.volid} on {node}"
    credential = ctx.broker.provision(need_seconds=ctx.task_polls * ctx.poll_interval)
    path = api_path("nodes", node, "storage", download.storage, "download-url")
    upid = start_task(ctx.client, credential, "POST", path, what, download.form())
    try:
        ctx.await_task(credential, node, upid, what, ctx.task_polls)
    except TaskFailed as exc:
        try:
            lines = ctx.client.request("GET", f"{api_path('nodes', node, 'tasks', upid)}/log", credential)
            said = [str(line.get("t")) for line in lines[-LOG_LINES:] if isinstance(line, dict)]
        except (SaltProxmoxError, TypeError):
            said = []
        raise TaskFailed(f"{exc} Its log ends: {' | '.join(said) or '(unreadable)'}") from None
    return upid


def _apply(ctx: PveContext, download: Download, decision: Decision, outcome: Outcome) -> Outcome:
    sizes = dict(decision.sizes)
    if ctx.ownership.row(download.key) is None:
        ctx.ownership.mark_creating(download.key, download.state_id, stored(download, sizes))
    done = []
    try:
        for node, step in decision.steps:
            if step == "replace":
                path = api_path("nodes", node, "storage", download.storage, "content", download.volid)
                ctx.task("DELETE", path, node, f"delete of {download.volid} on {node}")
                sizes.pop(node, None)
            _download(ctx, download, node)
            after = live.on_node(ctx, download, node)
            if after is None:
                return outcome.fail(
                    f"{download.label}: the download on node {node} ended OK, yet the storage "
                    "does not list it: run again."
                )
            sizes[node] = after.size
            done.append(node)
    except SaltProxmoxError as exc:
        if done:
            ctx.ownership.mark_owned(download.key, download.state_id, stored(download, sizes))
        return outcome.fail(
            f"{download.label}: {exc}",
            f"Downloaded on: {', '.join(done) or 'no node'}. PVE downloads to a temporary file "
            "and renames it, "
            "so a file is the whole download or absent.",
        )
    ctx.ownership.mark_owned(download.key, download.state_id, stored(download, sizes))
    outcome.comment.append(
        f"{download.label} downloaded on {', '.join(done)} ("
        + ", ".join(f"{n}: {sizes[n]} bytes" for n in done)
        + ")"
    )
    return outcome


def present(
    ctx: PveContext, test: bool, state_id: str, /, name: object = None, **declared: object
) -> Outcome:
    """Plan (``test``) or apply one downloaded file; never raises for a known failure. Changes: each
    node to write as ``{old: <size or None>, new: download | replace}``, ``source`` (``{old, new}``)
    for a replace, or ``ownership`` when only the row is written."""
    privileges.planning(ctx, test)
    outcome = Outcome()
    try:
        download = declare(state_id, ctx.target.name, name, **declared)
        decision = decide(ctx, download)
        if test and decision.action == "write":
            refusals, notes = privileges.check(
                ctx, [n for node, _s in decision.steps for n in needs(download, node)]
            )
            outcome.comment.extend(notes)
            if refusals:
                return outcome.fail(*refusals, "Nothing was written.")
            first = decision.steps[0][0]
            decision.notes.append(live.download_size(ctx, download, first))
    except DeclarationError as exc:
        return outcome.refuse(exc)
    except SaltProxmoxError as exc:
        return outcome.fail(f"{state_id}: {exc}", "Nothing was written.")
    outcome.comment.extend(decision.notes)
    if decision.action == "refuse":
        return outcome.fail(*decision.reasons, "Nothing was written.")
    if decision.action == "noop":
        outcome.comment.append(f"{download.label} is as declared on {', '.join(decision.sizes) or 'no node'}")
        return outcome
    if decision.action == "record":
        return record_ownership(
            outcome,
            ctx.ownership,
            download.key,
            state_id,
            stored(download, decision.sizes),
            download.label,
            test,
        )
    outcome.changes.update(decision.changes)
    if test:
        outcome.result = None
        for node, step in decision.steps:
            verb = "delete it and download it again" if step == "replace" else "download it"
            outcome.comment.append(f"{download.label}: would {verb} on node {node} from {download.url}")
        return outcome
    return _apply(ctx, download, decision, outcome)


def _destroy_unowned(ctx: PveContext, download: Download, state_id: str, outcome: Outcome) -> Outcome:
    """``removal: destroy`` without a row (destroyed by an earlier run, or forgotten): nothing records
    where it was downloaded, so each node the storage is enabled on is read (``live.where_needed``, as
    pve-storage API2/Storage/Status.pm ``download_url``'s ``storage_check_enabled`` picks them; the file
    by ``live.on_node``, API2/Storage/Content.pm ``index``). A file found is not ours (``destroy_path``);
    none found is absent already, so a destroy applied twice is clean. A read that fails is no absence."""
    try:
        nodes, _shared, refusals = live.where_needed(ctx, download)
        if refusals:
            return outcome.fail(*refusals, "Nothing was deleted.")
        holding = [node for node in nodes if live.on_node(ctx, download, node) is not None]
    except SaltProxmoxError as exc:
        return outcome.fail(f"{state_id}: {exc}", "Nothing was deleted.")
    if holding:
        return outcome.fail(destroy_path(download.label))
    outcome.comment.append(
        f"{download.label} is on none of {', '.join(nodes)} and not ours: nothing to delete"
    )
    return outcome


def absent(ctx: PveContext, test: bool, state_id: str, /, name: object = None, removal: object = "retain",
           **declared: object) -> Outcome:  # fmt: skip
    """Stop managing a downloaded file: ``removal: retain`` (default) forgets its row; ``removal:
    destroy`` deletes it on each node the row records, when no VM names it (module docstring)."""
    outcome = Outcome()
    try:
        problem = removal_problem(removal)
        if problem:
            raise DeclarationError(problem)
        download = identify(state_id, ctx.target.name, name, **declared)
    except DeclarationError as exc:
        return outcome.refuse(exc)
    row = ctx.ownership.row(download.key)
    if removal == "retain":
        return forget_ownership(outcome, ctx.ownership, download.key, row, download.label, test)
    privileges.planning(ctx, test)
    if row is None:
        return _destroy_unowned(ctx, download, state_id, outcome)
    try:
        holding = [node for node in sorted((row.get("declared") or {}).get("sizes") or {})
                   if live.on_node(ctx, download, node) is not None]  # fmt: skip
        if not holding:
            return forget_ownership(outcome, ctx.ownership, download.key, row, download.label, test, True)
        users = live.guests_using(ctx, download.volid)
        if users:
            return outcome.fail(
                f"destroy {download.label}: {', '.join(users)} use(s) it. Nothing was deleted: "
                "eject it first."
            )
        outcome.changes = {node: {"old": download.volid, "new": None} for node in holding}
        if test:
            outcome.result = None
            outcome.comment.append(f"{download.label}: would delete it on {', '.join(holding)}")
            return outcome
        for node in holding:
            path = api_path("nodes", node, "storage", download.storage, "content", download.volid)
            ctx.task("DELETE", path, node, f"delete of {download.volid} on {node}")
    except SaltProxmoxError as exc:
        return outcome.fail(f"{state_id}: {exc}", "Nothing more was deleted.")
    ctx.ownership.forget(download.key)
    outcome.comment.append(f"{download.label} deleted on {', '.join(holding)}")
    return outcome


def declared_keys(chunk, default_target: str | None) -> frozenset[str]:
    """The ownership row key a chunk declares (the one-object-one-state check), or none."""
    target = chunk.target(default_target)
    if target is None:
        return frozenset()
    args = chunk.args
    try:
        found = identify("", target, chunk.name, storage=args.get("storage"), content=args.get("content"),
                         filename=args.get("filename"))  # fmt: skip
    except DeclarationError:
        return frozenset()
    return frozenset({found.key})
