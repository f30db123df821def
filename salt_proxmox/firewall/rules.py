"""Plan and apply of ``proxmox_firewall.rules``: one scope's whole ordered rule list (docs/design.md §7c).

A declaration owns the list of its scope (``cluster``, ``node/<node>``, ``vm/<vmid>``, ``ct/<vmid>``,
``group/<name>``): the judge reads it (``GET …/rules``), compares it rule by rule in PVE's stored
spellings (``salt_proxmox.firewall.ruleset``) and plans the fewest inserts, moves, updates and deletes
(``salt_proxmox.firewall.moves``). The plan shows the list before and after as a diff of the rules'
``.fw`` lines, and the writes in words; the apply sends exactly those writes.

What it refuses at plan, besides a rule PVE would refuse (``ruleset.canonical``):

- **a rule it did not write**: a live list with no ownership row, or rules neither declared nor
  recorded as written by this minion (added by hand since), unless ``adopt: true``; the refusal names
  each. With ``adopt: true`` the declaration owns the whole list;
- **a name that names nothing**: an alias, IP set or security group a rule names that neither exists
  nor is created or declared earlier in this run (the run memo's ``expect``/``remember``, which the
  alias, IP set and group states fill). PVE refuses a missing alias or IP set at the write
  (``verify_rule``: ``no such alias``, ``no such ipset``) but takes a group rule naming a missing group,
  which then matches nothing (``generate_group_rules``);
- **a lockout**: a plan whose end state, or any state its writes pass through, would drop this
  minion's connection to a member's API or a node's SSH that the firewall lets through now
  (``salt_proxmox.firewall.lockout``), unless ``allow_lockout: true``. A change that would drop it
  only in between two writes is sent in another order (the deletes last), or with each insert sent
  disabled and enabled once in place.

Concurrency: PVE's POST takes no digest and always inserts at position 0; a PUT with ``moveto``
ignores every other field. So before every write the list is read again and must be exactly the list
the plan expects at that point (the plan's read with the writes so far carried out): any other rule,
order or value stops the apply, naming how many writes were made, and nothing more is sent. A PUT and
a DELETE carry the digest of that read, so PVE refuses them too if the list changed in between; a POST
cannot, and the read before the next write (or the read-back after the last) catches a change made
around it. A rule somebody added meanwhile is never overwritten or deleted.

The declaration and the pure planning (foreign rules, the writes in words, the diff, the states the
writes pass through) are ``salt_proxmox.firewall.listdiff``; the reads and the checks that read (the
list as read, the names its rules name, the no-lockout check) are ``salt_proxmox.firewall.listcheck``.
This module holds the decision, the writes (pve-firewall ``src/PVE/API2/Firewall/Rules.pm``
``create_rule``, ``update_rule``, ``delete_rule``), ``present``/``absent`` and the export.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from salt_proxmox.access import privileges
from salt_proxmox.errors import DeclarationError, SaltProxmoxError
from salt_proxmox.firewall import moves
from salt_proxmox.firewall import scope as scopes
from salt_proxmox.firewall.listcheck import (
    GROUP,
    Live,
    firewall_of,
    lockout_check,
    read,
    read_rows,
    reference_refusals,
    rules_path,
)
from salt_proxmox.firewall.listdiff import FAMILY, Declared, declare, describe, diff, foreign
from salt_proxmox.firewall.ruleset import Rule, Scope, frozen, line, parse_scope
from salt_proxmox.outcome import Outcome, forget_ownership
from salt_proxmox.ownership.rows import destroy_path, removal_problem, row_key
from salt_proxmox.pve.errors import PveError, PveUnreachable
from salt_proxmox.run.context import PveContext
from salt_proxmox.simple.spec import planned, remember, will_exist

#: What an apply names when it stops on a list somebody changed.
CHANGED = (
    "the rule list changed since it was read (somebody edited it meanwhile): stopped before write "
    "{done_next} of {total}; nothing of theirs was overwritten. Run again to plan anew."
)


def identify(state_id: str, target: str, name: object = None, **extra: object) -> Scope:
    """The scope a state names (``name``). Raises DeclarationError for an unknown key or a bad scope."""
    if extra:
        raise DeclarationError(
            f"unknown key(s) {', '.join(sorted(extra))}: rules_absent has name and removal"
        )
    try:
        return parse_scope(name)
    except ValueError as exc:
        raise DeclarationError(f"name: {exc}") from None


# ------------------------------------------------------------------------------ the judge


@dataclass
class Decision:
    """What a ``rules`` state would do: ``action`` ``noop``, ``write`` or ``refuse``."""

    action: str
    path: str = ""
    live: Live | None = None
    steps: list[moves.Step] = field(default_factory=list)
    changes: dict = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    row: dict | None = None


def decide(ctx: PveContext, decl: Declared) -> Decision:
    """The one decision plan and apply share. A guest an earlier state of the plan's run creates
    (``firewall.scope.run_guests``) starts with no rules, one it clones with its template's (which PVE
    copies: ``Firewall.copied_from``). Raises what the reads raise."""
    row = ctx.ownership.row(decl.key)
    previous = ctx.ownership.for_state(decl.target, FAMILY, decl.state_id)
    if previous is not None and previous[0] != decl.key:
        old = previous[0].split("/", 2)[-1]
        return Decision("refuse", reasons=[
            f"state {decl.state_id} declared the rules of {old} before and now declares {decl.scope.name}: "
            f"declare {old} absent in its own state first, or give this declaration its own state id."
        ])  # fmt: skip
    located = firewall_of(ctx, decl.scope)
    if located is None:
        return Decision("refuse", reasons=[scopes.missing(scopes.parse(decl.scope.name))])
    if located.empty:
        return _planned_guest(ctx, decl, row, located.note(scopes.parse(decl.scope.name)))
    # A guest the plan clones: its list is the template's, which PVE copies (clone_vm: clone_vmfw_conf).
    copied = [located.note(scopes.parse(decl.scope.name))] if located.copied_from else []
    firewall = located.path
    path = rules_path(decl.scope, firewall)
    try:
        live = read(ctx, path)
    except PveError as error:
        if decl.scope.env == "group" and "no such security group" in error.message:
            if will_exist(ctx, GROUP, decl.scope.key) or decl.scope.key in planned(ctx, GROUP):
                return _planned_group(ctx, decl, path, row)
            return Decision("refuse", path=path, reasons=[
                f"security group {decl.scope.key} does not exist and is not declared earlier in this run: "
                "declare it (proxmox:firewall:groups) first."
            ])  # fmt: skip
        raise
    notes = list(decl.notes) + copied + live.errors
    strangers = foreign(live.rules, decl.rules, row)
    if strangers and not decl.adopt:
        named = "; ".join(f"rule {pos} `{line(rule)}`" for pos, rule in strangers)
        why = (
            "this minion has no record of the list" if row is None else "they were not written by this minion"
        )
        return Decision("refuse", path=path, live=live, row=row, notes=copied, reasons=[
            f"{decl.scope.label} hold rules the declaration does not have ({named}): {why}. They are never "
            "deleted or changed silently: declare them, or declare adopt: true to own the whole list."
        ])  # fmt: skip
    if row is None and live.rules and not decl.adopt:
        return Decision("refuse", path=path, live=live, notes=copied, reasons=[
            f"{decl.scope.label} exist and this minion did not write them (they match the declaration). "
            "Nothing is taken over silently: declare adopt: true to manage them."
        ])  # fmt: skip
    refusals = reference_refusals(ctx, decl, firewall)
    if refusals:
        return Decision("refuse", path=path, live=live, row=row, reasons=refusals)
    steps = moves.plan(live.rules, list(decl.rules))
    if decl.allow_lockout:
        lock, more, _ = lockout_check(ctx, decl, live.rules, steps)
        notes += more + [f"allow_lockout: true, so this is not refused: {r}" for r in lock]
    else:
        lock, more, steps = lockout_check(ctx, decl, live.rules, steps)
        notes += more
        if lock:
            return Decision("refuse", path=path, live=live, row=row, notes=notes, reasons=[
                *lock, "Nothing was written: change the declaration, or declare allow_lockout: true if this "
                "minion reaches the cluster another way."
            ])  # fmt: skip
    remember(ctx, FAMILY, decl.scope.name, decl.stored())
    if not steps:
        return Decision("noop", path=path, live=live, notes=notes, row=row)
    return _writing(decl, path, live, steps, notes, row)


def _writing(
    decl: Declared, path: str, live: Live, steps: list[moves.Step], notes: list[str], row
) -> Decision:
    """The ``write`` decision: the diff, the writes in words, and ``created`` for a list written from
    none (the plan's summary counts it as a create)."""
    changes: dict = {"created": {"old": None, "new": decl.scope.label}} if not live.rules else {}
    changes["rules"] = {"diff": diff(live.rules, list(decl.rules), decl.scope.name)}
    changes["writes"] = [describe(step, list(decl.rules)) for step in steps]
    return Decision("write", path=path, live=live, steps=steps, changes=changes, notes=notes, row=row)


def _planned_guest(ctx: PveContext, decl: Declared, row, said: str) -> Decision:
    """A plan's guest created earlier in its run: its list starts empty."""
    return _planned_group(ctx, decl, "", row, said, None)


def _planned_group(
    ctx: PveContext,
    decl: Declared,
    path: str,
    row,
    said: str | None = None,
    firewall: str | None = "cluster/firewall",
) -> Decision:
    """A group (or, ``said``, a guest) created earlier in this run or, in a plan, to be: its list
    starts empty."""
    live = Live([], None)
    steps = moves.plan([], list(decl.rules))
    remember(ctx, FAMILY, decl.scope.name, decl.stored())
    refusals = reference_refusals(ctx, decl, firewall)
    if refusals:
        return Decision("refuse", path=path, live=live, reasons=refusals)
    notes = [*decl.notes, said or f"security group {decl.scope.key} is created earlier in this run"]
    if not steps:
        return Decision("noop", path=path, live=live, notes=notes, row=row)
    return _writing(decl, path, live, steps, notes, row)


# ------------------------------------------------------------------------------ the apply


def _form(rule: Rule) -> dict[str, str]:
    return {key: str(value) for key, value in rule.items()}


def send(ctx: PveContext, path: str, step: moves.Step, digest: str | None) -> None:
    """One write with a fresh provision credential: POST (no digest: ``create_rule`` takes none),
    PUT with ``moveto`` or fields, DELETE; the PUT and DELETE with ``digest``."""
    credential = ctx.broker.provision()
    ctx.reads.drop_listings()
    guard = {"digest": digest} if digest else {}
    if step.op == "insert":
        ctx.client.request("POST", path, credential, form=_form(step.rule))
    elif step.op == "move":
        ctx.client.request(
            "PUT", f"{path}/{step.pos}", credential, form={"moveto": str(step.moveto), **guard}
        )
    elif step.op == "update":
        form = {**step.put, **({"delete": ",".join(step.clear)} if step.clear else {}), **guard}
        ctx.client.request("PUT", f"{path}/{step.pos}", credential, form=form)
    else:
        ctx.client.request("DELETE", f"{path}/{step.pos}", credential, params=guard)


def carry_out(
    ctx: PveContext, decl: Declared, decision: Decision, outcome: Outcome, record: bool = True
) -> Outcome:
    """Send the decision's writes, each after a read that must show the list the plan expects at that
    point (module docstring), then read back and judge again; ``record``: the row is ours after it
    (a destroy forgets it instead). Never raises for a known failure."""
    assert decision.live is not None
    expected = [dict(rule) for rule in decision.live.rules]
    total = len(decision.steps)
    if record and decision.row is None:
        ctx.ownership.mark_creating(decl.key, decl.state_id, decl.stored())
    done = 0
    sending = False
    try:
        for step in decision.steps:
            now = read(ctx, decision.path)
            if [frozen(r) for r in now.rules] != [frozen(r) for r in expected]:
                outcome.changes = {"writes": outcome.changes.get("writes", [])[:done]} if done else {}
                return outcome.fail(CHANGED.format(done_next=done + 1, total=total))
            sending = True
            send(ctx, decision.path, step, now.digest)
            sending = False
            expected = moves.simulate(expected, step)
            done += 1
        after = read(ctx, decision.path)
    except SaltProxmoxError as exc:
        # A write PVE answered with an error wrote nothing; one whose answer was lost may have.
        unsent = not sending or isinstance(exc, PveError | PveUnreachable)
        outcome.changes = {"writes": outcome.changes.get("writes", [])[:done]} if done else {}
        said = f" after {done} of {total} writes" if done else ""
        nothing = ["Nothing was written."] if not done and unsent else []
        return outcome.fail(f"{decl.scope.label}: {exc}{said}", *nothing)
    if [frozen(r) for r in after.rules] != [frozen(r) for r in decl.rules]:
        return outcome.fail(
            f"{decl.scope.label}: after the writes the list is not the declared one (somebody changed it "
            "meanwhile, or PVE stores another spelling): run again to plan anew."
        )
    if record:
        ctx.ownership.mark_owned(decl.key, decl.state_id, decl.stored())
    outcome.comment.append(f"{decl.scope.label}: {total} write(s) made; the list is as declared")
    return outcome


def present(
    ctx: PveContext,
    test: bool,
    state_id: str,
    /,
    name: object = None,
    rules: object = None,
    adopt: object = False,
    allow_lockout: object = False,
    **extra: object,
) -> Outcome:
    """Plan (``test``) or apply one rule list; never raises for a known failure. Changes:
    ``{rules: {diff}, writes: [...]}`` (and ``ownership`` when only the row is written)."""
    privileges.planning(ctx, test)
    outcome = Outcome()
    try:
        decl = declare(state_id, ctx.target.name, name, rules, adopt, allow_lockout, **extra)
        decision = decide(ctx, decl)
    except DeclarationError as exc:
        return outcome.refuse(exc)
    except SaltProxmoxError as exc:
        return outcome.fail(f"{state_id}: {exc}", "Nothing was written.")
    if decision.action == "refuse":
        outcome.comment.extend(decision.notes)
        said = "Nothing was written" in " ".join(decision.reasons)
        return outcome.fail(*decision.reasons, *([] if said else ["Nothing was written."]))
    outcome.comment.extend(decision.notes)
    outcome.changes.update(decision.changes)
    if decision.action == "noop":
        row = decision.row
        if row is None or row.get("phase") != "owned":
            outcome.changes["ownership"] = {"old": (row or {}).get("phase"), "new": "owned"}
            if test:
                outcome.result = None
                outcome.comment.append(f"{decl.scope.label} are as declared; would record them as ours")
                return outcome
            ctx.ownership.mark_owned(decl.key, decl.state_id, decl.stored())
            outcome.comment.append(f"{decl.scope.label} are as declared; recorded as ours")
            return outcome
        if row.get("declared") != decl.stored() and not test:
            ctx.ownership.mark_owned(decl.key, decl.state_id, decl.stored())
        outcome.comment.append(f"{decl.scope.label} are as declared")
        return outcome
    if test:
        outcome.result = None
        counted = ", ".join(f"{n} {op}(s)" for op, n in moves.counts(decision.steps).items())
        outcome.comment.append(f"{decl.scope.label}: would send {len(decision.steps)} write(s): {counted}")
        return outcome
    return carry_out(ctx, decl, decision, outcome)


def absent(ctx: PveContext, test: bool, state_id: str, name: object = None, removal: object = "retain",
           **extra: object) -> Outcome:  # fmt: skip
    """Stop managing a rule list: ``removal: retain`` (default) forgets its row and touches nothing;
    ``removal: destroy`` deletes every rule, only when the row says the list is ours and it is still
    exactly the last declaration (each delete guarded as ``present``'s writes are). Never raises for a
    known failure."""
    outcome = Outcome()
    try:
        problem = removal_problem(removal)
        if problem:
            raise DeclarationError(problem)
        scope = identify(state_id, ctx.target.name, name, **extra)
    except DeclarationError as exc:
        return outcome.refuse(exc)
    key = row_key(ctx.target.name, FAMILY, scope.name)
    row = ctx.ownership.row(key)
    if removal == "retain":
        return forget_ownership(outcome, ctx.ownership, key, row, scope.label, test)
    try:
        privileges.planning(ctx, test)
        located = firewall_of(ctx, scope)
        if located is None or located.empty:
            return forget_ownership(outcome, ctx.ownership, key, row, scope.label, test, already_absent=True)
        path = rules_path(scope, located.path)
        try:
            live = read(ctx, path)
        except PveError as error:
            if scope.env == "group" and "no such security group" in error.message:
                return forget_ownership(
                    outcome, ctx.ownership, key, row, scope.label, test, already_absent=True
                )
            raise
        if row is None:
            if not live.rules:
                outcome.comment.append(f"{scope.label}: none, and none recorded as ours")
                return outcome
            return outcome.fail(destroy_path(scope.label))
        recorded = (row.get("declared") or {}).get("rules", [])
        if [frozen(r) for r in live.rules] != [frozen(dict(r)) for r in recorded]:
            return outcome.fail(
                f"destroy {scope.label}: the list is no longer its last declaration, so it may hold rules "
                "this minion did not write. Nothing was deleted: delete them by hand if they should go."
            )
        if not live.rules:
            return forget_ownership(outcome, ctx.ownership, key, row, scope.label, test, already_absent=True)
        decl = Declared(state_id, ctx.target.name, scope, tuple(), adopt=True)
        steps = moves.plan(live.rules, [])
        lock, notes, steps = lockout_check(ctx, decl, live.rules, steps)
        if lock:
            return outcome.fail(*notes, *lock, "Nothing was deleted.")
        outcome.comment.extend(notes)
    except DeclarationError as exc:
        return outcome.refuse(exc)
    except SaltProxmoxError as exc:
        return outcome.fail(f"{state_id}: {exc}", "Nothing was deleted.")
    outcome.changes = {
        "deleted": {"old": scope.label, "new": None},
        "rules": {"diff": diff(live.rules, [], scope.name)},
        "writes": [describe(step, []) for step in steps],
    }
    if test:
        outcome.result = None
        outcome.comment.append(f"{scope.label}: would delete {len(steps)} rule(s)")
        return outcome
    decision = Decision("write", path=path, live=live, steps=steps, row=row)
    result = carry_out(ctx, decl, decision, outcome, record=False)
    if result.result is not False:
        ctx.ownership.forget(key)
        result.comment[-1] = f"{scope.label}: {len(steps)} rule(s) deleted"
    return result


def declared_keys(chunk, default_target: str | None) -> frozenset[str]:
    """``chunk_keys`` of a run's chunk (``salt_proxmox.run.lowstate.Chunk``): the registry's
    ``Kind.keys`` of rule lists."""
    return chunk_keys(chunk.state, chunk.fun, chunk.name, chunk.target(default_target))


def chunk_keys(state: str, fun: str, name: object, target: str | None) -> frozenset[str]:
    """The ownership row key a ``rules``/``rules_absent`` chunk declares (for the one-object-one-state
    check), or none when its scope cannot be read (it is refused when it runs)."""
    if target is None:
        return frozenset()
    try:
        return frozenset({row_key(target, FAMILY, parse_scope(name).name)})
    except ValueError:
        return frozenset()


def export(ctx: PveContext, bao: object, keep) -> object:
    """``proxmox.export`` of rule lists (the registry's ``Kind.export``): every scope holding rules —
    the cluster, each node (``GET /cluster/status``), each security group, each guest of the cluster's
    index — as ``{name: <scope>, rules: [...], adopt: true}`` in the canonical spellings a declaration
    takes, ``keep({"name": scope})`` true. Returns ``salt_proxmox.export.objects.Found``. Raises what
    the reads raise (PveError, PveMalformed, PveUnreachable): an export never leaves a list out
    silently."""
    from salt_proxmox.export.objects import Exported, Found

    found = Found()
    names = ["cluster"]
    names += [
        f"node/{r['name']}"
        for r in read_rows(ctx, "cluster/status", "status rows")
        if r.get("type") == "node"
    ]
    names += [
        f"group/{r['group']}"
        for r in read_rows(ctx, "cluster/firewall/groups", "security groups")
        if r.get("group")
    ]
    names += [name for name, _path in scopes.guest_firewalls(ctx)]
    for name in names:
        if not keep({"name": name}):
            continue
        scope = parse_scope(name)
        located = firewall_of(ctx, scope)
        if located is None:
            continue
        live = read(ctx, rules_path(scope, located.path))
        if not live.rules:
            continue
        declaration = {"name": name, "rules": [dict(rule) for rule in live.rules], "adopt": True}
        found.objects.append(Exported({"name": name}, declaration, scope.label))
    return found
