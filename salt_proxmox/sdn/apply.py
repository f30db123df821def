"""``proxmox_sdn.applied``: commit the pending SDN configuration and reload every node's network.

Sources: pve-network ``src/PVE/API2/Network/SDN.pm`` (``reload``: ``PUT /cluster/sdn`` commits the
pending configuration to the running one inside the SDN lock, then forks a ``reloadnetworkall``
task that reloads each node; ``lock``/``release_lock``: ``POST``/``DELETE /cluster/sdn/lock``),
``src/PVE/Network/SDN.pm`` (``pending_config``: with ``pending=1`` every object that differs from
the running configuration carries ``state`` — ``new``, ``changed`` or ``deleted`` — and
``pending``, the values not yet running; ``lock_sdn_config``: while a global lock is held, every
SDN write must carry its ``lock-token``) and the zones, vnets and subnets APIs (``pending``).

The apply follows ``salt_proxmox.network.apply.run`` (nothing pending: nothing done; health before
and after; one provision credential for the commit and its task; a poll that cannot be read is
unreachable; anything pending after an OK task fails). The SDN lock is taken where the cluster has
it, so no other SDN write lands between the commit and the release, and released on every exit
path that can (``salt_proxmox.sdn.lock``). No read shows another client's lock, so a plan cannot
refuse it; the apply's ``POST /cluster/sdn/lock`` is then refused naming that lock, nothing written
(``lock.held_by_another``).

What the commit makes live besides the SDN objects, each judged at plan and apply alike:

- ``reloadnetworkall`` runs ``pvesh set /nodes/<node>/network`` on every node of
  ``get_nodelist``, whose worker (pve-manager ``reload_network_config``) first renames each node's
  ``interfaces.new`` over ``interfaces``: a node with staged changes is refused unless a node
  apply of this run covers it (``proxmox_network.applied`` of that node ran before, in plan or
  apply, and was not refused), with the remedy to apply them or revert them
  (``DELETE /nodes/{node}/network``). A write of this run that would stage on a node without its
  apply counts as staged;
- an object pending ``deleted`` that no ``removal: destroy`` state of this run deleted is refused,
  naming it and ``POST /cluster/sdn/rollback`` (PVE 9: pve-network 1.1.3 ``rollback``, which
  reverts every pending change) or, on PVE 8 which has none, re-creating it as it runs;
- an object pending ``new`` or ``changed`` is committed only as a declaration of this run: one no
  ``proxmox_sdn.zone``/``vnet``/``subnet`` state of this run declared before the apply without
  refusal (so ours, or ``adopt: true``; ``simple.spec.declared``) nor removes, and a pending key a
  declared object's declaration does not hold, are somebody else's staging, which ``commit_config``
  would make live with ours: refused, naming each, with the remedies (declare it, or revert it:
  ``rollback`` on PVE 9, by hand on PVE 8). What a state of this run wrote is its declaration, so
  an object this run (or an earlier run of ours) staged and declares is committed (``foreign_changes``);
- each node's last reload task is read as the node apply reads it
  (``salt_proxmox.network.apply.reload_problem``): a reload a stopped run left running, or one that
  failed, is reported.

After the commit: ``reloadnetworkall`` ends OK even when a node's reload failed, or ``WARNINGS``
when one could not start (a plain ``warn``): it does not wait for them. So each node's reload the
commit started is found (its newest ``srvreload`` task, newer than the commit and than the one read
before it) and awaited; a node without one, or whose reload failed, fails the apply, naming the
node, the task and the reload that remedies it (``nodes_reloaded``).

Controllers, zones, vnets and subnets are read (``pending=1``); IPAMs and DNS servers have no pending
state (``Ipams.pm``/``Dns.pm`` write at once), and fabrics are not declared by this product, so a
pending change of theirs is not listed.
"""

from __future__ import annotations

from collections.abc import Mapping

from salt_proxmox.errors import DeclarationError, SaltProxmoxError
from salt_proxmox.network import apply as network_apply
from salt_proxmox.network.apply import Reload, run
from salt_proxmox.outcome import Outcome
from salt_proxmox.pve import facts
from salt_proxmox.pve.client import api_path
from salt_proxmox.pve.errors import PveError
from salt_proxmox.pve.listing import get_rows
from salt_proxmox.pve.tasks import TaskFailed, TaskUncertain, log_command, start_task, upid_fields, upid_node
from salt_proxmox.run.memo import node_applied, note_sdn_applied
from salt_proxmox.sdn import lock
from salt_proxmox.simple.spec import declared


def _rows(ctx, credential, path: str) -> list[Mapping]:
    return get_rows(ctx.client, path, credential, {"pending": "1"})


def _line(kind: str, ident: object, row: Mapping) -> str:
    pending = row.get("pending") if isinstance(row.get("pending"), Mapping) else {}
    what = ", ".join(f"{key}={value}" for key, value in sorted(pending.items()))
    return f"{kind} {ident}: {row.get('state') or 'changed'}" + (f" ({what})" if what else "")


def _lines(kind: str, rows: list[Mapping]) -> list[str]:
    """A line per row not running as it is (a ``state``, or ``pending`` values); ``kind`` is also
    the row's id key (``zone``, ``vnet``, ``subnet``)."""
    return [_line(kind, row.get(kind), row) for row in rows if row.get("state") or "pending" in row]


def pending_rows(ctx) -> list[tuple[str, str, Mapping]]:
    """``(kind, name, row)`` per SDN object whose configuration is not running: ``kind`` controller,
    zone, vnet or subnet, ``name`` as ``salt_proxmox.network.apply.removed_name`` names it (a subnet as
    ``<vnet>/<cidr>``). Reads controllers, zones, vnets and each vnet's subnets with ``pending=1`` (a vnet
    pending deletion still answers its subnets). Raises PveError, PveMalformed, PveUnreachable."""
    credential = ctx.broker.read()
    found = []
    kinds = (
        ("controller", "cluster/sdn/controllers"),
        ("zone", "cluster/sdn/zones"),
        ("vnet", "cluster/sdn/vnets"),
    )
    for kind, path in kinds:
        rows = _rows(ctx, credential, path)
        found += [(kind, str(row.get(kind)), row) for row in rows if row.get("state") or "pending" in row]
        if kind == "vnet":
            vnets = sorted(str(row.get("vnet")) for row in rows)
    for vnet in vnets:
        path = api_path("cluster", "sdn", "vnets", vnet, "subnets")
        try:
            rows = _rows(ctx, credential, path)
        except PveError as error:
            if error.status == 500 and error.message == f"sdn vnet '{vnet}' does not exist":
                continue  # pending deletion: the configuration has it no more
            raise
        for row in rows:
            if row.get("state") or "pending" in row:
                found.append(("subnet", f"{vnet}/{_cidr(row)}", row))
    return found


def _cidr(row: Mapping) -> str:
    """A subnet row's CIDR: ``cidr``, else from its id ``<zone>-<address>-<prefix>``."""
    if isinstance(row.get("cidr"), str):
        return row["cidr"]
    address, _, prefix = str(row.get("subnet") or row.get("id")).split("-", 1)[-1].rpartition("-")
    return f"{address}/{prefix}"


def text(rows: list[tuple[str, str, Mapping]]) -> str:
    """One line per pending object (``zone lab: new (...)``), '' for none."""
    return "\n".join(_line(kind, name, row) for kind, name, row in rows)


def pending(ctx) -> str:
    """``text(pending_rows(ctx))``. Raises what ``pending_rows`` raises."""
    return text(pending_rows(ctx))


def rollback_remedy(ctx, pve8: str) -> str:
    """How to revert SDN pending changes on this cluster's release: PVE 9's ``POST
    /cluster/sdn/rollback`` (pve-network 1.1.3 ``rollback``), or, on PVE 8, which has none, ``pve8``."""
    try:
        major = facts.release(ctx).major
    except SaltProxmoxError:
        major = 9
    if major >= 9:
        return (
            "Revert the pending SDN changes with `pvesh create /cluster/sdn/rollback` "
            "(POST /cluster/sdn/rollback reverts EVERY pending SDN change)"
        )
    return f"PVE 8 has no SDN rollback: {pve8}"


def foreign_deletions(ctx, rows: list[tuple[str, str, Mapping]]) -> list[str]:
    """The refusal of objects pending deletion that no ``removal: destroy`` of this run deleted."""
    ours = network_apply.removed(ctx, "sdn")
    foreign = [f"{kind} {name}" for kind, name, row in rows if row.get("state") == "deleted"]
    foreign = [each for each in foreign if each not in ours]
    if not foreign:
        return []
    remedy = rollback_remedy(ctx, "re-create the object as it runs (Datacenter → SDN, or pvesh create)")
    return [
        f"the pending configuration deletes {', '.join(foreign)}, and no state of this run removes it "
        "(somebody else deleted it). The commit would make that deletion live. "
        f"{remedy}, or, if it should go, declare it absent with removal: destroy."
    ]


def foreign_changes(ctx, rows: list[tuple[str, str, Mapping]]) -> list[str]:
    """The refusal of pending changes (``state`` new or changed) that no state of this run declares:
    an object no ``proxmox_sdn.zone``/``vnet``/``subnet`` state of this run declared without refusal
    (``simple.spec.declared``: ours, or adopted) nor removes (``removal: destroy``), and, of a
    declared object, each pending key its declaration does not hold. ``PUT /cluster/sdn``
    (pve-network ``API2/Network/SDN.pm`` ``reload`` → ``Network/SDN.pm`` ``commit_config``) makes
    the whole pending configuration live, whoever wrote it; what this run declares, its states
    wrote (or found as declared), so only the rest is foreign."""
    removed = network_apply.removed(ctx, "sdn")
    foreign = []
    for kind, name, row in rows:
        if row.get("state") == "deleted" or f"{kind} {name}" in removed:
            continue  # foreign_deletions; or a removal of this run deletes it
        keys = declared(ctx, f"sdn_{kind}").get(name)
        if keys is None:
            foreign.append(_line(kind, name, row))
            continue
        staged = row.get("pending") if isinstance(row.get("pending"), Mapping) else {}
        stray = {key: value for key, value in staged.items() if key not in keys}
        if stray:
            what = ", ".join(f"{key}={value}" for key, value in sorted(stray.items()))
            foreign.append(f"{kind} {name}: {what} (staged, and not in its declaration)")
    if not foreign:
        return []
    remedy = rollback_remedy(
        ctx,
        "delete what is staged new and set what is changed back to its running values (`pvesh get "
        "/cluster/sdn/zones --running 1` and the vnets' and subnets' alike show them)",
    )
    return [
        f"the pending configuration holds SDN changes no state of this run declares: {'; '.join(foreign)} "
        "(somebody else staged them). The commit would make them live with this run's. Declare each in "
        "this run (proxmox:sdn, with adopt: true when this minion did not create it; a staged key, in "
        f"its declaration), or revert them: {remedy}."
    ]


def uncovered_nodes(ctx, test: bool, nodes: list[str]) -> list[str]:
    """The refusal of ``nodes`` whose staged network the commit's reload would make live, which no
    node apply of this run covers (in a plan: also a node a write of this run would stage on)."""
    refusals = []
    for node in nodes:
        staged = network_apply.node_pending(ctx, node)
        memo, target = ctx.memo, ctx.target.name
        planned = memo.get(network_apply.PLANNED.format(target=target, scope=f"node {node}"))
        covered = test and node_applied(memo, target, node)
        if (staged or (test and planned)) and not covered:
            what = "has staged network changes" if staged else f"would get {', '.join(planned)} staged"
            refusals.append(
                f"node {node} {what}, and committing the SDN configuration reloads every node's network "
                "(pve-network reload → reloadnetworkall → pvesh set /nodes/<node>/network), which would make "
                f"them live without a node apply of this run. Apply them first (proxmox:networks:{node}: "
                f"apply: true, or proxmox_network.applied node={node}) or revert them with "
                f"{network_apply.revert_command(node)}."
            )
    return refusals


def step(ctx, state_id: str) -> Reload:
    """The SDN apply step."""
    seen: dict = {}

    def read() -> str:
        seen["rows"] = pending_rows(ctx)
        return text(seen["rows"])

    def check(pending_text: str, test: bool, will_apply: bool) -> tuple[list[str], list[str]]:
        refusals: list[str] = []
        nodes = network_apply.cluster_nodes(ctx)
        offline = [node for node, online in nodes.items() if not online]
        if will_apply:
            refusals += foreign_deletions(ctx, seen.get("rows") or [])
            refusals += foreign_changes(ctx, seen.get("rows") or [])
            if offline:  # the commit reloads every node; the words of network_apply.cluster_health
                down = "; ".join(f"node {node} is offline" for node in offline)
                why = (
                    "The commit reloads every node's network, and a reload on a degraded cluster can cut "
                    "it further."
                )
                return [*refusals, f"refused: {down}. {why}"], []
            refusals += uncovered_nodes(ctx, test, list(nodes))
        notes = []
        seen["nodes"], seen["before"] = list(nodes), {}
        for node in (node for node, online in nodes.items() if online):
            last = network_apply.last_reload(ctx, node)
            seen["before"][node] = last["upid"] if last else None
            problem = network_apply.reload_problem(node, last)
            if problem and (problem[1] or not will_apply):
                refusals.append(problem[0])
            elif problem:
                notes.append(problem[0])
        return refusals, notes

    return Reload(
        subject="the SDN configuration",
        scope="sdn",
        pending=read,
        show=lambda shown: shown,
        start=lambda credential: commit(ctx, credential, state_id),
        node_of=lambda upid: upid_node(upid) or "",
        check=check,
        verify=lambda upid: nodes_reloaded(ctx, upid, seen.get("nodes") or [], seen.get("before") or {}),
    )


def started_by(commit: str, row: Mapping | None, before: str | None) -> str | None:
    """The UPID of the reload the commit ``commit`` started on a node whose newest ``srvreload``
    task row is ``row`` (``last_reload``) and whose newest before the commit was ``before``: the
    row's, when it is another task that started no earlier than the commit (UPIDs carry their
    start time, pve-common ``Tools.pm`` ``upid_decode``); else None (the node started none)."""
    theirs = row.get("upid") if row else None
    fields, start = upid_fields(theirs or ""), upid_fields(commit)
    if not theirs or theirs == before or fields is None or start is None:
        return None
    return theirs if int(fields["starttime"]) >= int(start["starttime"]) else None


def nodes_reloaded(ctx, upid: str, nodes: list[str], before: Mapping[str, str | None]) -> str | None:
    """None when every node of ``nodes`` took the commit ``upid``: its newest ``srvreload`` task
    (``last_reload``) is not ``before[node]`` (its last one before the commit), started no earlier
    than the commit's task, and ended OK (or with warnings), awaited with the read credential (the
    task is root's: Sys.Audit reads it). Else the failure sentence naming each node that did not,
    its task and the remedy. pve-network ``reloadnetworkall`` only starts each node's reload
    (``pvesh set /nodes/<node>/network``, which answers once the worker is forked), ``warn``s when
    one cannot start, and ends OK however they end."""
    problems = []
    for node in nodes:
        remedy = f"reload that node (`pvesh set /nodes/{node}/network`)"
        try:
            theirs = started_by(upid, network_apply.last_reload(ctx, node), before.get(node))
            if theirs is None:
                log = log_command(upid_node(upid) or node, upid)
                problems.append(
                    f"node {node} started no reload of its network for it (reloadnetworkall only warns when "
                    f"`pvesh set /nodes/{node}/network` fails: read {log}); once the node is reachable, "
                    f"{remedy}"
                )
                continue
            what = f"reload of the network of node {node} under the SDN commit"
            ctx.await_task(ctx.broker.read(), node, theirs, what, ctx.task_polls)
        except TaskFailed as exc:
            problems.append(f"node {node} did not take it: {exc} Fix the cause, then {remedy}")
        except SaltProxmoxError as exc:
            problems.append(f"whether node {node} took it is unknown: {exc}")
    if not problems:
        return None
    return (
        f"the SDN configuration is committed (task {upid} ended without error), but it is not live on every "
        f"node: {'; '.join(problems)}."
    )


def commit(ctx, credential, state_id: str = "sdn") -> str:
    """Take the SDN lock (where PVE has it), ``PUT /cluster/sdn`` with its token, return the UPID.
    The lock is released on every exit path that can (``salt_proxmox.sdn.lock``). Raises PveError
    (refused), TaskUncertain (no UPID), PveUnreachable or Uncertain; when the lock could not be
    released, the error says so with the command that releases it."""
    token = lock.take(ctx, credential, state_id)
    form = {"lock-token": token} if token else {}
    try:
        upid = start_task(ctx.client, credential, "PUT", "cluster/sdn", "commit the SDN configuration", form)
    except SaltProxmoxError as exc:
        problem = lock.release(ctx, credential, token) if token else None
        if problem is None:
            raise
        kind = type(exc) if isinstance(exc, TaskUncertain) else SaltProxmoxError
        raise kind(f"{exc} {problem}") from exc
    if token:
        lock.committed(ctx)
    return upid


def applied(ctx, test: bool, state_id: str, **extra: object) -> Outcome:
    """Plan or apply the pending SDN configuration (``proxmox_sdn.applied``). Never raises for a
    known failure."""
    if extra:
        return Outcome().refuse(
            DeclarationError(f"unknown key(s) {', '.join(sorted(extra))}: applied takes none")
        )
    outcome = lock.settled_first(ctx, test, lambda: run(ctx, test, step(ctx, state_id)))
    if outcome.result is not False:
        note_sdn_applied(ctx.memo, ctx.target.name)
    return outcome
