"""Applying staged network configuration: ``proxmox_network.applied`` per node, and the reload
flow ``proxmox_sdn.applied`` shares (docs/design.md §7b).

Sources: pve-manager ``PVE/API2/Network.pm`` (``index`` puts the staged diff beside ``data`` with
``set_result_attrib('changes', ...)``; ``reload_network_config`` is ``PUT /nodes/{node}/network``,
a ``srvreload`` task whose worker first renames ``interfaces.new`` over ``interfaces`` and then
runs ``ifreload -a`` whether anything was staged or not), pve-common ``src/PVE/INotify.pm``
(``read_file``: ``changes`` is ``diff -b -N -u interfaces interfaces.new``, undef when empty),
pve-manager ``PVE/API2/Cluster.pm`` (``GET /cluster/status``: a ``cluster`` row with ``quorate``
and one ``node`` row per member with ``online``) and ``PVE/API2/Tasks.pm`` (a task's owner may
read it).

The rules, one place for both apply states:

- **nothing staged, nothing done**: no reload, no write, no provision credential. Adopting a
  settled node costs nothing — and the worker reloads even with nothing staged, so this is a
  safety rule, not a saving;
- the plan shows what is staged, secret-looking values masked (``mask``); the diff reaches the
  plan's return and nothing else: never grains, a log, a file or an apply's return;
- the apply checks cluster health first (quorate, every node online) and refuses a degraded
  cluster; reloads with ONE provision credential that also polls the task (a new mint is another
  token, which may not read the task); requires a UPID; awaits the task, where a poll that cannot
  be read is **unreachable**, not failed (the node being reloaded may drop the connection that
  serves the poll); requires ``OK``; checks health again; re-reads: anything still staged after
  an OK reload is a failure (the staged file disappears when the worker STARTS, so only the task
  says whether the reload worked);
- one node at a time: the first failure in a run stops every later apply of the run (node or
  SDN), each saying it was not applied and why;
- a plan of the same run that would stage something (an interface of the node, an SDN object, or
  the removal of one: ``removal: destroy``) makes the apply's plan say it would reload after those
  writes, so the plan shows every change the apply will make;
- a staged deletion this run did not make is refused, plan and apply alike: the staged diff removes
  an ``iface`` stanza no ``removal: destroy`` state of this run removed (somebody's ``vmbr0``
  deletion). The remedy names ``DELETE /nodes/{node}/network`` (pve-manager ``revert_network_changes``:
  it unlinks ``interfaces.new``, every staged change of the node);
- the node's last reload task is read (``GET /nodes/{node}/tasks``, type ``srvreload``, the type
  ``reload_network_config`` forks; ``source=all`` so a running one is listed): one still running is
  refused (wait for it); one that ended in error fails a step with nothing to apply, and is said
  in the plan of a step that reloads again — so a reload whose run was killed is reported by the
  next run, never a silent clean plan;
- a task that reloads others (the SDN commit's ``reloadnetworkall``) ends OK without waiting for
  them: the step's ``verify`` then judges what it started before the apply is reported done.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from salt_proxmox.errors import DeclarationError, Refused, SaltProxmoxError
from salt_proxmox.outcome import Outcome
from salt_proxmox.pve.client import api_path
from salt_proxmox.pve.constraints import NODE, Endpoint, check_form
from salt_proxmox.pve.errors import PveMalformed
from salt_proxmox.pve.listing import get_rows, rows_of
from salt_proxmox.pve.tasks import TaskFailed, TaskUncertain, log_command, start_task, warnings_of
from salt_proxmox.run.memo import note_node_applied, note_removed
from salt_proxmox.run.memo import removed as memo_removed
from salt_proxmox.sdn import lock as sdn_lock
from salt_proxmox.simple import lifecycle as simple
from salt_proxmox.wire.ifdiff import staged_deletions

#: The run-level record of a failed apply (Salt's ``__context__`` lasts one run).
FAILED = "salt_proxmox.apply_failed/{target}"
#: The run-level list of writes a plan showed for what an apply step reloads (state ids).
PLANNED = "salt_proxmox.planned/{target}/{scope}"
#: The run-level set of objects a ``removal: destroy`` of this run deleted (or, under ``test``,
#: would delete), per scope: the staged or pending deletions an apply step may make live.
#: pve-manager ``PVE/API2/Network.pm`` ``reload_network_config``: ``fork_worker('srvreload', ...)``.
RELOAD_TASK = "srvreload"
#: The families whose writes an apply step reloads, and the scope of a declaration.
STAGING = {
    "network_interface": lambda declared: f"node {declared.get('node')}",
    "sdn_controller": lambda declared: "sdn",
    "sdn_zone": lambda declared: "sdn",
    "sdn_vnet": lambda declared: "sdn",
    "sdn_subnet": lambda declared: "sdn",
}
RELOAD = Endpoint("PUT /nodes/{node}/network", (), lambda key: None)
#: An option whose value is a secret in an interfaces file (``wpa-psk``, ``wpa-password``, ...).
_SECRET_LINE = re.compile(
    r"^(?P<lead>[-+ ]\s*)(?P<key>[A-Za-z0-9_.-]*(?:psk|pass|secret|key|token)[A-Za-z0-9_.-]*)"
    r"(?P<gap>\s+)\S.*$",
    re.IGNORECASE,
)


def mask(diff: str) -> str:
    """``diff`` with the value of every secret-looking option replaced by ``***``."""
    return "\n".join(
        _SECRET_LINE.sub(lambda m: f"{m['lead']}{m['key']}{m['gap']}***", line)
        if not line.startswith(("---", "+++"))
        else line
        for line in diff.split("\n")
    )


def staged_lines(diff: str) -> int:
    """How many lines a diff adds or removes (its ``---``/``+++`` headers left out)."""
    return sum(1 for line in diff.splitlines() if line[:1] in "+-" and not line.startswith(("---", "+++")))


def cluster_health(ctx, credential) -> str | None:
    """None when ``GET /cluster/status`` shows a quorate cluster with every node online, else
    what is wrong (``not quorate``, ``pve2 offline``). A standalone node (no ``cluster`` row) is
    judged by its node row. Raises PveError, PveMalformed, PveUnreachable."""
    rows = get_rows(ctx.client, "cluster/status", credential, what="status rows")
    problems = []
    clusters = [row for row in rows if row.get("type") == "cluster"]
    if clusters and str(clusters[0].get("quorate")) != "1":
        problems.append("the cluster is not quorate")
    nodes = [row for row in rows if row.get("type") == "node"]
    if not nodes:
        raise PveMalformed("GET", "cluster/status", "no node rows")
    problems += [f"node {row.get('name')} is offline" for row in nodes if str(row.get("online")) != "1"]
    return "; ".join(problems) or None


def cluster_nodes(ctx) -> dict[str, bool]:
    """``{node: online}`` for every node of the cluster (``GET /cluster/status`` node rows, read
    credential): the nodes ``reloadnetworkall`` reloads (pve-cluster ``get_nodelist``). Raises
    PveError, PveMalformed, PveUnreachable."""
    rows = get_rows(ctx.client, "cluster/status", ctx.broker.read(), what="status rows")
    nodes = {str(row.get("name")): str(row.get("online")) == "1" for row in rows if row.get("type") == "node"}
    if not nodes:
        raise PveMalformed("GET", "cluster/status", "no node rows")
    return dict(sorted(nodes.items()))


def present(ctx, spec, test: bool, state_id: str, **declared) -> Outcome:
    """``simple.present`` of a staging family (``STAGING``), noting under ``test`` a write it would
    stage, for the apply step's plan. An SDN object first settles a global SDN lock a stopped run
    of this minion left (``salt_proxmox.sdn.lock``)."""
    scope = STAGING.get(spec.family)
    outcome = _sdn_lock_settled(
        ctx, spec, test, lambda: simple.present(ctx, spec, test, state_id, **declared)
    )
    if scope is not None and test and outcome.result is None:
        key = PLANNED.format(target=ctx.target.name, scope=scope(declared))
        ctx.memo.setdefault(key, []).append(state_id)
    return outcome


def absent(ctx, spec, test: bool, state_id: str, removal: object = "retain", **names) -> Outcome:
    """``simple.absent`` of a staging family (``STAGING``), noting a deletion it would stage (under
    ``test``: for the apply step's plan) and one it staged or would stage (``run.memo.REMOVED``: the apply
    step makes that deletion live, and only that one)."""
    outcome = _sdn_lock_settled(
        ctx, spec, test, lambda: simple.absent(ctx, spec, test, state_id, removal, **names)
    )
    scope = STAGING.get(spec.family)
    if scope is None or outcome.result is False or "deleted" not in outcome.changes:
        return outcome
    key = scope(names)
    if test:
        ctx.memo.setdefault(PLANNED.format(target=ctx.target.name, scope=key), []).append(state_id)
    note_removed(ctx.memo, ctx.target.name, key, removed_name(spec.family, names))
    return outcome


def _sdn_lock_settled(ctx, spec, test: bool, act: Callable[[], Outcome]) -> Outcome:
    """``act()``; for an SDN object, after settling a global SDN lock a stopped run of this minion
    left (``salt_proxmox.sdn.lock.settled_first``), which would refuse every SDN write."""
    if STAGING.get(spec.family, lambda declared: None)({}) != "sdn":
        return act()
    return sdn_lock.settled_first(ctx, test, act)


def removed_name(family: str, names: Mapping[str, object]) -> str:
    """How an apply step names a deleted object: the iface (``vmbr1``), ``zone lab``, ``vnet
    labnet``, ``subnet labnet/10.2.0.0/24`` (its vnet and CIDR)."""
    if family == "network_interface":
        return str(names.get("name"))
    kind = family.removeprefix("sdn_")
    if kind == "subnet":
        return f"subnet {names.get('vnet')}/{names.get('name')}"
    return f"{kind} {names.get('name')}"


def removed(ctx, scope: str) -> set[str]:
    """What ``removal: destroy`` states of this run deleted (or would) in ``scope``
    (``run.memo.removed``)."""
    return memo_removed(ctx.memo, ctx.target.name, scope)


def last_reload(ctx, node: str) -> Mapping | None:
    """The node's newest ``srvreload`` task row (``upid``, ``starttime``, ``status`` once ended), or
    None when it lists none. Read with the read credential, which holds Sys.Audit, so every user's
    tasks are listed (pve-manager ``PVE/API2/Tasks.pm`` ``node_tasks``). Raises PveError,
    PveMalformed, PveUnreachable."""
    params = {"typefilter": RELOAD_TASK, "source": "all", "limit": "20"}
    rows = get_rows(ctx.client, api_path("nodes", node, "tasks"), ctx.broker.read(), params, what="tasks")
    mine = [row for row in rows if row.get("type") == RELOAD_TASK and isinstance(row.get("upid"), str)]
    return max(mine, key=lambda row: (float(row.get("starttime") or 0), row["upid"]), default=None)


def reload_problem(node: str, row: Mapping | None) -> tuple[str, bool] | None:
    """What is wrong with a node's last reload task: ``(sentence, blocking)`` — blocking when it is
    still running (no ``status`` in the listing) — or None when it ended OK (or with warnings:
    pve-common ``UPID.pm`` ``status_is_error``)."""
    if row is None:
        return None
    upid, status = row["upid"], row.get("status")
    if status is None or status == "running":
        return (
            f"a reload of the network of node {node} is still running (task {upid}): it may be one whose run "
            f"was stopped. Wait for it to end ({log_command(node, upid)}), then run the state again.",
            True,
        )
    if warnings_of(status) is not None:
        return None
    return (
        f"the last reload of the network of node {node} (task {upid}) ended with {status!r}: the running "
        f"network may not be the configured one. Read {log_command(node, upid)}, fix the cause, then reload "
        f"the node (this apply, or `pvesh set /nodes/{node}/network`).",
        False,
    )


@dataclass
class Reload:
    """One apply step: what it is (``subject``: ``network of node pve1``; ``scope``: the
    ``STAGING`` scope whose planned writes it reloads), how to read what is
    staged (``pending``: a text, '' for nothing, never stored), how to show it in a plan
    (``show``: the text a plan may carry), and how to start the reload with the provision
    credential (``start``: returns the UPID; raises PveError when PVE refused, TaskUncertain for no
    UPID). ``node_of`` names the node whose task endpoint the UPID is polled on. ``check(pending,
    test, will_apply)`` returns ``(refusals, notes)``: what refuses the step (plan and apply alike)
    and what its plan must say besides the diff; it raises what ``pending`` raises. ``verify(upid)``
    runs once the task ended OK: None when what it started took effect, else the failure sentence
    (the SDN commit's reload of each node, which its task does not wait for)."""

    subject: str
    scope: str
    pending: Callable[[], str]
    show: Callable[[str], object]
    start: Callable[[object], str]
    node_of: Callable[[str], str]
    check: Callable[[str, bool, bool], tuple[list[str], list[str]]] = lambda pending, test, will: ([], [])
    verify: Callable[[str], str | None] = lambda upid: None


def run(ctx, test: bool, step: Reload) -> Outcome:
    """Plan (``test``) or perform one apply step by the module's rules; never raises for a known
    failure. The Outcome's changes are ``{reload: {diff: <shown>, planned: [state ids]}}`` in a
    plan (each part when there is one; ``diff`` alone is what the ``proxmox_plan`` outputter shows
    as a diff) and ``{reload: {old: '<n> staged line(s)', new: 'applied'}}``
    after an apply."""
    outcome = Outcome()
    marker = FAILED.format(target=ctx.target.name)
    earlier = ctx.memo.get(marker)
    if earlier and not test:
        return outcome.fail(
            f"{step.subject}: not applied, because {earlier} earlier in this run. Nothing was written: "
            "understand and fix that first, then run the state again."
        )
    planned = ctx.memo.get(PLANNED.format(target=ctx.target.name, scope=step.scope)) or []
    try:
        pending = step.pending()
        refusals, notes = step.check(pending, test, bool(pending or (test and planned)))
    except SaltProxmoxError as exc:
        return outcome.fail(f"{step.subject}: {exc}", "Nothing was written.")
    if refusals:
        return outcome.fail(*(f"{step.subject}: {line}" for line in refusals), "Nothing was written.")
    outcome.comment.extend(f"{step.subject}: {line}" for line in notes)
    if not pending and not (test and planned):
        outcome.comment.append(f"{step.subject}: nothing is staged; nothing to apply")
        return outcome
    count = staged_lines(pending) or len(pending.splitlines())
    if test:
        shown: dict = {}
        if pending:
            shown["diff"] = step.show(pending)
            outcome.comment.append(f"{step.subject}: would apply {count} staged line(s)")
        if planned:
            shown["planned"] = list(planned)
            outcome.comment.append(f"{step.subject}: would apply what {', '.join(planned)} would stage")
        outcome.changes["reload"] = shown
        outcome.result = None
        return outcome
    try:
        failure = _apply(ctx, step)
    except Refused as exc:  # refused before anything was written (the SDN lock another client holds)
        return outcome.fail(*(f"{step.subject}: {line}" for line in exc.reasons), "Nothing was written.")
    if failure:
        ctx.memo[marker] = f"the apply of {step.subject} failed"
        return outcome.fail(
            f"{step.subject}: {failure}", "Later network and SDN applies of this run are not run."
        )
    outcome.changes["reload"] = {"old": f"{count} staged line(s)", "new": "applied"}
    outcome.comment.append(f"{step.subject}: {count} staged line(s) applied; the cluster is healthy")
    return outcome


def _apply(ctx, step: Reload) -> str | None:
    """The apply itself; returns None on success, else the failure sentence. Raises Refused when
    ``step.start`` refused before writing anything."""
    try:
        before = cluster_health(ctx, ctx.broker.read())
    except SaltProxmoxError as exc:
        return f"the cluster's health could not be read ({exc}); nothing was written"
    if before:
        return f"refused: {before}. A reload on a degraded cluster can cut it further; nothing was written."
    polls = ctx.task_polls
    # What the run's listings say (a bridge staged, a vnet pending) changes with the reload.
    ctx.reads.drop_listings()
    try:
        credential = ctx.broker.provision(need_seconds=polls * ctx.poll_interval)
        upid = step.start(credential)
    except TaskUncertain as exc:
        return str(exc)
    except Refused:
        raise
    except SaltProxmoxError as exc:
        return f"the reload was not started: {exc}"
    node = step.node_of(upid)
    try:
        ctx.await_task(credential, node, upid, f"reload of {step.subject}", polls)
    except TaskFailed as exc:
        return f"{exc} Do not apply the next node until this one is understood."
    except TaskUncertain:
        return (
            f"unreachable: task {upid} could not be read after the reload started. The node being reloaded "
            f"may have dropped the connection, or lost it. Read {log_command(node, upid)} from another "
            "node before running the state again; nothing is retried."
        )
    failure = step.verify(upid)
    if failure:
        return failure
    try:
        after = cluster_health(ctx, ctx.broker.read())
        left = step.pending()
    except SaltProxmoxError as exc:
        return f"the reload {upid} ended OK, but the state after it could not be read: {exc}"
    if after:
        return f"the reload {upid} ended OK, but now {after}. Restore it before anything else is reloaded."
    if left:
        return (
            f"the reload {upid} ended OK, but {staged_lines(left) or 'some'} staged line(s) remain: "
            "the running configuration is not the declared one."
        )
    return None


# ------------------------------------------------------------------------------------ node network


def node_pending(ctx, node: str) -> str:
    """The staged diff of ``node`` ('' when nothing is staged), read with the read credential.
    Raises PveError, PveMalformed (an answer whose ``changes`` is not text), PveUnreachable."""
    path = api_path("nodes", node, "network")
    body = ctx.client.request("GET", path, ctx.broker.read(), envelope=True)
    try:
        rows_of(body.get("data") if isinstance(body, Mapping) else None, "interfaces")
    except ValueError as why:
        raise PveMalformed("GET", path, f"data: {why}") from None
    changes = body.get("changes")
    if changes is None:
        return ""
    if not isinstance(changes, str):
        raise PveMalformed("GET", path, "changes is not text")
    return changes


def revert_command(node: str) -> str:
    """pve-manager ``revert_network_changes`` (``DELETE /nodes/{node}/network``) as a command."""
    return f"`pvesh delete /nodes/{node}/network`"


def foreign_deletions(ctx, node: str, diff: str) -> list[str]:
    """The refusal of interfaces the staged diff deletes that no ``removal: destroy`` of this run
    removed ([] when there is none)."""
    foreign = [name for name in staged_deletions(diff) if name not in removed(ctx, f"node {node}")]
    if not foreign:
        return []
    return [
        f"the staged changes delete interface(s) {', '.join(foreign)}, and no state of this run removes "
        "them (somebody else staged it). A reload would make that deletion live. Revert the node's staged "
        f"changes with {revert_command(node)} (DELETE /nodes/{node}/network drops every staged change of "
        "the node), or, if it should go, declare the interface absent with removal: destroy (adopt: true "
        "first for one this minion did not create)."
    ]


def node_step(ctx, node: str) -> Reload:
    """The apply step of one node's network."""
    path = api_path("nodes", node, "network")

    def start(credential) -> str:
        check_form(RELOAD, {}, presence=True)
        return start_task(ctx.client, credential, "PUT", path, f"reload the network of node {node}")

    def check(pending: str, test: bool, will_apply: bool) -> tuple[list[str], list[str]]:
        refusals = foreign_deletions(ctx, node, pending)
        problem = reload_problem(node, last_reload(ctx, node))
        if problem and (problem[1] or not will_apply):
            refusals.append(problem[0])
        return refusals, [problem[0]] if problem and not refusals else []

    return Reload(
        subject=f"network of node {node}",
        scope=f"node {node}",
        pending=lambda: node_pending(ctx, node),
        show=mask,
        start=start,
        node_of=lambda upid: node,
        check=check,
    )


def applied(ctx, test: bool, state_id: str, node: object = None, **extra: object) -> Outcome:
    """Plan or apply what is staged on ``node`` (``proxmox_network.applied``). Never raises for a
    known failure."""
    if extra:
        return Outcome().refuse(
            DeclarationError(f"unknown key(s) {', '.join(sorted(extra))}: applied takes node")
        )
    if not isinstance(node, str) or not NODE.match(node):
        return Outcome().refuse(DeclarationError(f"node: {node!r} is not a node name"))
    outcome = run(ctx, test, node_step(ctx, node))
    if outcome.result is not False:
        note_node_applied(ctx.memo, ctx.target.name, node)
    return outcome
