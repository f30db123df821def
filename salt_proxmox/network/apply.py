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
- a plan of the same run that would stage something (an interface of the node, an SDN object) makes
  the apply's plan say it would reload after those writes, so the plan shows every change the apply
  will make.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from salt_proxmox.errors import DeclarationError, SaltProxmoxError
from salt_proxmox.outcome import Outcome
from salt_proxmox.pve.client import api_path
from salt_proxmox.pve.constraints import NODE, Endpoint, check_form
from salt_proxmox.pve.errors import PveMalformed
from salt_proxmox.pve.listing import get_rows, rows_of
from salt_proxmox.pve.tasks import TaskFailed, TaskUncertain, log_command, start_task
from salt_proxmox.simple import lifecycle as simple

#: The run-level record of a failed apply (Salt's ``__context__`` lasts one run).
FAILED = "salt_proxmox.apply_failed/{target}"
#: The run-level list of writes a plan showed for what an apply step reloads (state ids).
PLANNED = "salt_proxmox.planned/{target}/{scope}"
#: The families whose writes an apply step reloads, and the scope of a declaration.
STAGING = {
    "network_interface": lambda declared: f"node {declared.get('node')}",
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


def present(ctx, spec, test: bool, state_id: str, **declared) -> Outcome:
    """``simple.present`` of a staging family (``STAGING``), noting under ``test`` a write it would
    stage, for the apply step's plan."""
    outcome = simple.present(ctx, spec, test, state_id, **declared)
    scope = STAGING.get(spec.family)
    if scope is not None and test and outcome.result is None:
        key = PLANNED.format(target=ctx.target.name, scope=scope(declared))
        ctx.reads.memo.setdefault(key, []).append(state_id)
    return outcome


@dataclass
class Reload:
    """One apply step: what it is (``subject``: ``network of node pve1``; ``scope``: the
    ``STAGING`` scope whose planned writes it reloads), how to read what is
    staged (``pending``: a text, '' for nothing, never stored), how to show it in a plan
    (``show``: the text a plan may carry), and how to start the reload with the provision
    credential (``start``: returns the UPID; raises PveError when PVE refused, TaskUncertain for no
    UPID). ``node_of`` names the node whose task endpoint the UPID is polled on."""

    subject: str
    scope: str
    pending: Callable[[], str]
    show: Callable[[str], object]
    start: Callable[[object], str]
    node_of: Callable[[str], str]


def run(ctx, test: bool, step: Reload) -> Outcome:
    """Plan (``test``) or perform one apply step by the module's rules; never raises for a known
    failure. The Outcome's changes are ``{reload: {diff: <shown>, planned: [state ids]}}`` in a
    plan (each part when there is one; ``diff`` alone is what the ``proxmox_plan`` outputter shows
    as a diff) and ``{reload: {old: '<n> staged line(s)', new: 'applied'}}``
    after an apply."""
    outcome = Outcome()
    marker = FAILED.format(target=ctx.target.name)
    earlier = ctx.reads.memo.get(marker)
    if earlier and not test:
        return outcome.fail(
            f"{step.subject}: not applied, because {earlier} earlier in this run. Nothing was written: "
            "understand and fix that first, then run the state again."
        )
    try:
        pending = step.pending()
    except SaltProxmoxError as exc:
        return outcome.fail(f"{step.subject}: {exc}", "Nothing was written.")
    planned = ctx.reads.memo.get(PLANNED.format(target=ctx.target.name, scope=step.scope)) or []
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
    failure = _apply(ctx, step)
    if failure:
        ctx.reads.memo[marker] = f"the apply of {step.subject} failed"
        return outcome.fail(
            f"{step.subject}: {failure}", "Later network and SDN applies of this run are not run."
        )
    outcome.changes["reload"] = {"old": f"{count} staged line(s)", "new": "applied"}
    outcome.comment.append(f"{step.subject}: {count} staged line(s) applied; the cluster is healthy")
    return outcome


def _apply(ctx, step: Reload) -> str | None:
    """The apply itself; returns None on success, else the failure sentence."""
    try:
        before = cluster_health(ctx, ctx.broker.read())
    except SaltProxmoxError as exc:
        return f"the cluster's health could not be read ({exc}); nothing was written"
    if before:
        return f"refused: {before}. A reload on a degraded cluster can cut it further; nothing was written."
    polls = ctx.task_polls
    try:
        credential = ctx.broker.provision(need_seconds=polls * ctx.poll_interval)
        upid = step.start(credential)
    except TaskUncertain as exc:
        return str(exc)
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


def node_step(ctx, node: str) -> Reload:
    """The apply step of one node's network."""
    path = api_path("nodes", node, "network")

    def start(credential) -> str:
        check_form(RELOAD, {}, presence=True)
        return start_task(ctx.client, credential, "PUT", path, f"reload the network of node {node}")

    return Reload(
        subject=f"network of node {node}",
        scope=f"node {node}",
        pending=lambda: node_pending(ctx, node),
        show=mask,
        start=start,
        node_of=lambda upid: node,
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
    return run(ctx, test, node_step(ctx, node))
