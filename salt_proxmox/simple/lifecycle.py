"""One lifecycle for every simple PVE object family (docs/design.md §7, §8).

Plan and apply call the same ``decide``; an apply is a fresh call, so it decides on a fresh read:

- read with the run's ``read`` credential; only the family's exact absence answer (confirmed,
  for listing families) means absent; any other failure, or a 200 without the promised shape,
  fails the state;
- absent → create (the create form must pass the vendor constraints and the family's predicted
  ``refusals``, or the plan is refused);
- present and not ours → refused unless ``adopt: true`` (an unfinished create of ours that
  matches is finished as ours);
- present and matching → nothing to write;
- present and different → one update, whose form must pass the vendor constraints and the
  family's ``refusals`` and must not be empty (a family with no update path refuses instead).

A write uses a freshly minted ``provision`` credential and carries the family's write guard (a
digest read right before it). After every write the object is read back and judged again: a
difference left over fails the state, naming the keys.

``absent`` retains by default (forgets the ownership row, touches nothing); ``removal:
destroy`` deletes only an object this minion owns that still matches its last declaration,
and reads it back to prove it gone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from salt_proxmox.access import privileges
from salt_proxmox.errors import DeclarationError, Refused, SaltProxmoxError
from salt_proxmox.outcome import Outcome, forget_ownership
from salt_proxmox.ownership.rows import absent_note, claim, destroy_path, removal_problem, row_key
from salt_proxmox.pve.constraints import check_form
from salt_proxmox.pve.errors import PveError, PveMalformed, PveUnreachable
from salt_proxmox.pve.tasks import TaskUncertain, await_task, upid_node
from salt_proxmox.run.context import PveContext
from salt_proxmox.run.lowstate import Chunk
from salt_proxmox.simple.spec import Call, Declared, ObjectSpec, expect, note_declared, remember

#: How a recorded serial beside a secret is named (``_last_declaration``).
SERIAL = "_serial"


def read(ctx: PveContext, spec: ObjectSpec, decl: Declared, shared: bool = False) -> dict | None:
    """The live object's canonical attributes, or None when PVE proves it absent.

    ``shared``: take them from the family's listing as the run read it (``ObjectSpec.listing``)
    when it holds the object; a plan's and an apply's judgement do, the read-back after a write
    does not.

    An object whose parent an earlier state of this plan creates (``ObjectSpec.unborn``) is absent
    without a read.

    Raises PveError (any answer but the family's exact absence answer), PveMalformed (a 200
    without the promised shape), Refused (a listing that cannot be proven complete),
    PveUnreachable or CredentialError. Never folds a failure into absence.
    """
    if spec.unborn is not None and spec.unborn(ctx, decl):
        return None
    credential = spec.credential(ctx)
    if shared and spec.listing is not None and spec.listed is not None:
        live = _listed(ctx, spec, decl, credential)
        if live is not None:
            return live
    spec = spec.on(ctx, decl)
    call = spec.read(decl)
    # A root_lane family's object is read as root@pam through the lane (ObjectSpec.reader).
    transport, credential = spec.reader(ctx)
    try:
        data = transport.request("GET", call.path, credential, params=call.params)
    except PveError as error:
        if spec.is_absent(error, decl):
            return None
        raise
    try:
        live = spec.parse(data, decl)
    except ValueError as why:
        raise PveMalformed("GET", call.path, str(why)) from None
    if live is None:
        if spec.confirm_absent is None:
            raise PveMalformed("GET", call.path, f"the answer does not hold {decl.label}")
        spec.confirm_absent(ctx, credential, decl)
    return live


def _listed(ctx: PveContext, spec: ObjectSpec, decl: Declared, credential) -> dict | None:
    """The object's canonical attributes from the run's listing, or None when the listing does
    not hold it (then only its own read may prove it absent). Raises what ``PveClient.request``
    raises for the listing (this state's error; the next state reads the listing again), and
    PveMalformed when the listing, or this object's row in it, has not the promised shape."""
    listing = spec.listing
    assert listing is not None and spec.listed is not None
    rows = ctx.reads.shared(ctx.client, listing.path, credential, params=listing.params)
    try:
        return spec.listed(rows, decl)
    except ValueError as why:
        raise PveMalformed("GET", listing.path, str(why)) from None


def with_recorded(spec: ObjectSpec, live: dict | None, row: Mapping | None) -> dict | None:
    """``live`` with the values ``spec.recorded`` names taken from ``row``'s recorded declaration
    (absent from it: ``None``, so a declared one differs), or None when ``live`` is None."""
    if live is None or not spec.recorded:
        return live
    declared = (row or {}).get("declared")
    recorded = declared if isinstance(declared, Mapping) else {}
    return {**live, **{key: recorded.get(key) for key in spec.recorded}}


@dataclass
class Decision:
    """What ``present`` would do: ``action`` is ``create``, ``update``, ``noop`` or ``refuse``.

    ``call`` is the planned write; ``changes`` what the state return shows for it; ``record``
    whether the ownership row must be written (adoption, a finished create).
    """

    action: str
    live: dict | None = None
    call: Call | None = None
    changes: dict = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    row_key: str = ""
    row: dict | None = None
    record: bool = False


def chunk_keys(spec: ObjectSpec, chunk: Chunk, default_target: str | None) -> frozenset[str]:
    """The ownership row keys (``<target>/<family>/<identity>``) of the objects a run chunk of
    ``spec``'s family declares: its own, and the old one its ``rename_from`` names (a rename deletes
    it). Identities as ``spec.identify`` keys them (a firewall alias name lower-cased, as PVE keys
    it); ``name`` is the state's name, the other ``identity_keys`` its arguments. A key that cannot
    be read is left out (the chunk is refused when it runs)."""
    target = chunk.target(default_target)
    if target is None:
        return frozenset()
    names = {key: chunk.name if key == "name" else chunk.args.get(key) for key in spec.identity_keys}
    old = chunk.args.get("rename_from")
    keys = set()
    for each in (names, {**names, "name": old} if old is not None and "name" in names else None):
        try:
            keys.add(row_key(target, spec.family, spec.identify(chunk.state_id, target, **each).identity))
        except (DeclarationError, TypeError):
            continue
    return frozenset(keys)


def identity_refusal(
    ctx: PveContext, spec: ObjectSpec, decl: Declared, allowed: Iterable[str] = ()
) -> str | None:
    """The refusal when this state id recorded another object of the family (docs/design.md §8), else None.

    ``allowed``: row keys that are not a different object (a rename's old name)."""
    previous = ctx.ownership.for_state(decl.target, spec.family, decl.state_id)
    key = row_key(decl.target, spec.family, decl.identity)
    if previous is None or previous[0] == key or previous[0] in set(allowed):
        return None
    old = previous[0].split("/", 2)[-1]
    return (
        f"state {decl.state_id} declared {spec.noun} {old} before and now declares {decl.label}. Another "
        f"{spec.noun} is another object, not an update: declare {old} absent in its own state first, or "
        "give this declaration its own state id."
    )


def decide(
    ctx: PveContext,
    spec: ObjectSpec,
    decl: Declared,
    allowed_previous: Iterable[str] = (),
    plan: bool = True,
) -> Decision:
    """The one decision plan and apply share. ``plan``: also judge the provision token's privileges
    (``provision_check``); an apply leaves that to PVE, which checks them before it writes. Raises what
    ``read`` raises."""
    key = row_key(decl.target, spec.family, decl.identity)
    row = ctx.ownership.row(key)
    refusal = identity_refusal(ctx, spec, decl, allowed_previous)
    if refusal:
        return Decision("refuse", reasons=[refusal], row_key=key, row=row)
    if plan and spec.reads_with == "provision":
        # The provision credential reads this family (``ObjectSpec.reads_with``): a privilege it
        # lacks for the read is refused with its grant before PVE answers 403.
        lacking, _ = provision_check(ctx, spec, decl, "read")
        if lacking:
            return Decision("refuse", reasons=lacking, row_key=key, row=row)
    live = with_recorded(spec, read(ctx, spec, decl, shared=True), row)
    # Where only root@pam may read the object, the plan says the read went through the lane.
    said = [lane_read_note(ctx, spec, decl)] if spec.reads_with == "root_lane" and ctx.lane else []
    if live is None:
        call = (spec.on(ctx, decl) if spec.create_on_cluster else spec).create(decl)
        try:
            check_form(spec.create_endpoint, call.payload(), presence=True)
        except DeclarationError as exc:
            return Decision("refuse", reasons=exc.refusals(), row_key=key, row=row)
        refusals = spec.refusals(ctx, decl, "create", None) if spec.refusals else []
        lacking, unchecked = provision_check(ctx, spec, decl, "create") if plan else ([], [])
        if refusals or lacking:
            return Decision("refuse", reasons=[*refusals, *lacking], row_key=key, row=row)
        expect(ctx, spec.family, decl.identity)
        remember(ctx, spec.family, decl.identity, decl.values)
        note = absent_note(row, decl.label, "PVE")
        unborn = spec.unborn(ctx, decl) if spec.unborn is not None else None
        changes = {"created": {"old": None, "new": decl.label}}
        # A value left at PVE's default (a cleared flag, an empty text) is not sent by a create
        # (``simple.fields.form_values``), so the plan does not list it either; recorded values (a
        # secret's serial, a token's store) are no field PVE is sent: a note says them.
        sent = call.payload()
        changes.update(
            {
                k: {"old": None, "new": v}
                for k, v in decl.values.items()
                if k not in spec.recorded and (k in sent or v not in ("", 0, []))
            }
        )
        effects = spec.side_effects(ctx, decl, "create") if spec.side_effects else []
        kept = [f"{key} {decl.values[key]}" for key in spec.recorded if key in decl.values]
        if kept:
            effects.append(f"{decl.label}: recorded with it, never sent to PVE: {', '.join(kept)}")
        notes = [note, *said, *([unborn] if unborn else []), *effects, *unchecked]
        return Decision("create", call=call, changes=changes, notes=notes, row_key=key, row=row)
    diffs = spec.differences(live, decl)
    matches = spec.is_match(live, decl)
    refusal, note = claim(
        row,
        decl.adopt,
        decl.label,
        matches=matches,
        alike="it matches",
        unlike=f"it differs in {', '.join(diffs)}",
    )
    if refusal:
        return Decision("refuse", live=live, row_key=key, row=row, reasons=[refusal])
    notes = [*([note] if note else []), *said]
    record = note is not None
    if matches:
        return Decision("noop", live=live, notes=notes, row_key=key, row=row, record=record)
    call = spec.on(ctx, decl).update(decl, live) if spec.update is not None else None
    if call is None or not call.payload():
        # The family's own reason first (a Ceph pool's application is the create's), else the plain one.
        refusals = spec.refusals(ctx, decl, "update", live) if spec.refusals else []
        if refusals:
            return Decision("refuse", live=live, reasons=refusals, row_key=key, row=row)
        return Decision(
            "refuse",
            live=live,
            row_key=key,
            row=row,
            reasons=[
                f"{decl.label} differs in {', '.join(diffs)}, and PVE cannot change that in place. "
                f"Declare it as it is, or declare it absent (removal: destroy) and create it anew."
            ],
        )
    try:
        check_form(spec.update_endpoint, call.payload(), presence=False)
    except DeclarationError as exc:
        return Decision("refuse", reasons=exc.refusals(), row_key=key, row=row)
    refusals = spec.refusals(ctx, decl, "update", live) if spec.refusals else []
    lacking, unchecked = provision_check(ctx, spec, decl, "update") if plan else ([], [])
    if refusals or lacking:
        return Decision("refuse", live=live, reasons=[*refusals, *lacking], row_key=key, row=row)
    remember(ctx, spec.family, decl.identity, decl.values)
    notes += spec.side_effects(ctx, decl, "update") if spec.side_effects else []
    notes += unchecked
    return Decision(
        "update", live=live, call=call, changes=diffs, notes=notes, row_key=key, row=row, record=record
    )


def lane_read_note(ctx: PveContext, spec: ObjectSpec, decl: Declared) -> str:
    """The plan's note that ``decl`` was read as root@pam through the target's lane (a ``root_lane``
    family: ``ObjectSpec.reads_with``). Reads nothing."""
    via = getattr(ctx.lane, "label", "root lane")
    return f"{decl.label}: read as root@pam through the root lane ({via}): PVE shows it to root@pam only"


def provision_check(
    ctx: PveContext, spec: ObjectSpec, decl: Declared, action: str
) -> tuple[list[str], list[str]]:
    """``(refusals, notes)`` for the privileges ``action`` (create, update, delete) on ``decl`` needs of
    the provision token, as PVE checks them (``access.privileges.SIMPLE``): a privilege it lacks is
    refused at plan with the command that grants it. Raises what the permission reads raise."""
    major = privileges.cluster_major(ctx, spec.family)
    needs = [
        need
        for need in privileges.simple_needs(spec.family, action, decl, major)
        if need.credential == "provision"
    ]
    return privileges.check(ctx, needs)


def write(ctx: PveContext, spec: ObjectSpec, decl: Declared, decision: Decision) -> None:
    """Send the decision's write with a fresh provision credential.

    A create first records the row as ``creating`` and, when PVE refuses it, puts back the earlier
    row exactly (``Ownership.restore``: phase and instance id); an update first reads the family's
    write guard (digest). The form is checked against the vendor constraints once more right before
    it is sent. Raises PveError, DeclarationError, Refused, Uncertain, CredentialError.
    """
    call = decision.call
    assert call is not None
    if decision.action == "create":
        if spec.create_guard and spec.write_guard is not None:
            call = call.with_extra(spec.write_guard(ctx, spec.credential(ctx), decl, {}))
        check_form(spec.create_endpoint, call.payload(), presence=True)
        earlier = ctx.ownership.row(decision.row_key)
        ctx.ownership.mark_creating(decision.row_key, decl.state_id, decl.stored())
        try:
            _send_write(ctx, spec, decl, call, f"create {decl.label}")
        except (PveError, PveUnreachable):
            # PVE refused, or no member accepted the connection: nothing was created, so the row
            # must not claim it was.
            ctx.ownership.restore(decision.row_key, earlier)
            raise
        return
    if spec.write_guard is not None:
        call = call.with_extra(spec.write_guard(ctx, spec.credential(ctx), decl, decision.live or {}))
    check_form(spec.update_endpoint, call.payload(), presence=False)
    _send_write(ctx, spec, decl, call, f"update {decl.label}")


def _send_write(ctx: PveContext, spec: ObjectSpec, decl: Declared, call: Call, what: str) -> None:
    """Send one write of ``spec``'s family with a fresh provision credential: as PVE's task on
    ``spec.task_node`` when the family's writes of this kind (``what``'s first word: ``create``,
    ``update``, ``delete``; ``spec.task_writes``) are tasks (``PveContext.task``: started and awaited
    by that credential), else as one call (``send``). Raises what those raise (PveError, TaskFailed,
    TaskUncertain, Uncertain, PveUnreachable, CredentialError). A family that sends its writes itself
    (``spec.send``) is handed the call."""
    if spec.send is not None:
        spec.send(ctx, decl, call, what)
        return
    if spec.writes_with == "root_lane":
        lane_write(ctx, spec, decl, call, what)
        return
    if (
        spec.task_node is None
        or what.split(" ", 1)[0] not in spec.task_writes
        or call.method not in spec.task_methods
    ):
        send(ctx, ctx.broker.provision(), call)
        return
    if call.json:
        raise ValueError(f"{call}: a task's form goes as a form")  # pragma: no cover - no such family
    ctx.reads.drop_listings()
    ctx.task(call.method, call.path, spec.task_node(decl), what, form=call.form, params=call.params)


def lane_write(ctx: PveContext, spec: ObjectSpec, decl: Declared, call: Call, what: str) -> None:
    """Send one write of a ``root_lane`` family (``ObjectSpec.writes_with``) through the target's root
    lane as root@pam; the declaration's secrets are named to the lane, which refuses to carry them
    (``pve.lane.SecretInLane``: pvesh's argv is readable by every user of the node). A UPID it answers
    is awaited through the lane by its owner, root@pam (``pve.tasks.await_task``, on the node the UPID
    names: PVE forks the worker where the call was served); a family whose writes are tasks
    (``task_node``) that answers none is uncertain. Raises Refused (no lane), SecretInLane, PveError,
    TaskFailed, TaskUncertain, Uncertain."""
    lane = ctx.lane
    if lane is None:
        raise Refused(f"{what}: only root@pam may write it, and target {ctx.target.name} has no root lane")
    ctx.reads.drop_listings()
    answer = lane.request(
        call.method, call.path, params=call.params, form=call.form, secrets=tuple(decl.secrets)
    )
    upid = answer if isinstance(answer, str) and answer.startswith("UPID:") else None
    node = upid_node(upid) if upid else None
    if upid is None or node is None:
        if spec.task_node is not None:
            raise TaskUncertain(
                f"{what}: the root lane answered no task id, so the write cannot be confirmed and is not "
                "claimed. Read the object before running the state again."
            )
        return
    kwargs = {"sleep": ctx.sleep} if ctx.sleep is not None else {}
    await_task(lane, None, node, upid, what, ctx.task_polls, ctx.poll_interval, **kwargs)


def send(ctx: PveContext, credential, call: Call) -> object:
    """Send ``call`` with ``credential`` (JSON body when ``call.json``) and return PVE's ``data``.
    Raises what ``PveClient.request`` raises: PveError, PveMalformed, PveUnreachable, Uncertain.
    The run's shared listings are dropped first: the write may change what they list."""
    ctx.reads.drop_listings()
    if call.json:
        return ctx.client.request(
            call.method, call.path, credential, params=call.params, form=call.form, as_json=True
        )
    return ctx.client.request(call.method, call.path, credential, params=call.params, form=call.form)


def _plan_lines(decision: Decision, decl: Declared) -> list[str]:
    if decision.action == "update":
        return [f"{decl.label}: would write {', '.join(decision.changes)}"]
    if decision.action == "noop" and not decision.record:
        return [f"{decl.label} is as declared"]
    return []


def present(ctx: PveContext, spec: ObjectSpec, test: bool, state_id: str, **declared) -> Outcome:
    """Plan (``test``) or apply one declaration of ``spec``'s family; never raises for a known
    failure. ``declared``: the state's arguments (``adopt`` and the family's keys). A declaration
    not refused is recorded for the run (``simple.spec.note_declared``)."""
    privileges.planning(ctx, test)
    outcome = Outcome()
    try:
        declared, resolved = spec.resolve(ctx, declared) if spec.resolve is not None else (declared, [])
        decl = spec.declare(state_id, ctx.target.name, **declared)
        decision = decide(ctx, spec, decl, plan=test)
    except DeclarationError as exc:
        return outcome.refuse(exc)
    except SaltProxmoxError as exc:
        return outcome.fail(f"{state_id}: {exc}", "Nothing was written.")
    decision.notes[:0] = resolved
    outcome = carry_out(ctx, spec, decl, decision, test, outcome)
    if outcome.result is not False:
        note_declared(ctx, spec.family, decl.identity, decl.values)
    return outcome


def carry_out(
    ctx: PveContext, spec: ObjectSpec, decl: Declared, decision: Decision, test: bool, outcome: Outcome
) -> Outcome:
    """Report (``test``) or perform ``decision``, read back and judge again. A plan of an object under a
    copy the run makes (``ObjectSpec.copied``) says so, refused or not."""
    copy = spec.copied(ctx, decl) if test and spec.copied is not None else None
    inherited = [copy] if copy else []
    if decision.action == "refuse":
        return outcome.fail(*decision.reasons, *inherited, "Nothing was written.")
    outcome.changes.update(decision.changes)
    if decision.record:
        outcome.changes["ownership"] = {"old": (decision.row or {}).get("phase"), "new": "owned"}
    if test or decision.action != "create":
        outcome.comment.extend(decision.notes)
    if test:
        outcome.comment.extend(inherited)
        outcome.comment.extend(_plan_lines(decision, decl))
        outcome.result = None if outcome.changes else True
        return outcome
    try:
        if decision.action in ("create", "update"):
            write(ctx, spec, decl, decision)
            after = read(ctx, spec, decl)
        else:
            after = decision.live
    except DeclarationError as exc:
        outcome.changes = {}
        return outcome.refuse(exc)
    except SaltProxmoxError as exc:
        outcome.changes = {}
        return outcome.fail(str(exc))
    if after is None:
        outcome.changes = {}
        return outcome.fail(f"{decl.label}: the write returned no error but PVE does not have it.")
    if decision.action != "noop" or decision.record:
        ctx.ownership.mark_owned(decision.row_key, decl.state_id, decl.stored())
    after = with_recorded(spec, after, ctx.ownership.row(decision.row_key))
    left = spec.differences(after, decl)
    if left or not spec.is_match(after, decl):
        return outcome.fail(
            f"{decl.label}: after the write, {', '.join(left) or 'the object'} still differ(s) from the "
            "declaration. PVE may store another spelling; declare what it stores."
        )
    if decision.action == "create":
        outcome.comment.append(f"{decl.label} has been created")
    elif decision.action == "update":
        outcome.comment.append(f"{decl.label} has been updated: {', '.join(decision.changes)}")
    elif not decision.record:
        outcome.comment.append(f"{decl.label} is as declared")
    return outcome


def absent(
    ctx: PveContext, spec: ObjectSpec, test: bool, state_id: str, removal: object = "retain", **names
) -> Outcome:
    """Stop managing one object: ``removal: retain`` (default) forgets its ownership row and
    touches nothing; ``removal: destroy`` deletes it, only when this minion owns it and it still
    matches its last declaration, then reads it back to prove it gone. ``names``: the family's
    identity keys. Never raises for a known failure."""
    privileges.planning(ctx, test)
    outcome = Outcome()
    try:
        problem = removal_problem(removal)
        if problem:
            raise DeclarationError(problem)
        probe = spec.identify(state_id, ctx.target.name, **names)
    except DeclarationError as exc:
        return outcome.refuse(exc)
    key = row_key(probe.target, spec.family, probe.identity)
    row = ctx.ownership.row(key)
    if removal == "retain":
        return forget_ownership(outcome, ctx.ownership, key, row, probe.label, test)
    try:
        if spec.resolve is not None and row is None:
            probe = spec.identify(state_id, ctx.target.name, **spec.resolve(ctx, names)[0])
        last = _last_declaration(spec, probe, row)
        live = read(ctx, spec, last)
        if live is None:
            if row is None:
                outcome.comment.append(f"{probe.label} is absent")
                return outcome
            return forget_ownership(outcome, ctx.ownership, key, row, probe.label, test, already_absent=True)
        if row is None:
            return outcome.fail(destroy_path(probe.label))
        live = with_recorded(spec, live, row)
        drift = spec.differences(live, last)
        if drift or not spec.is_match(live, last):
            return outcome.fail(
                f"destroy {probe.label}: it no longer matches its last declaration ({', '.join(drift)}), so "
                "it may not be what this state made. Nothing was deleted: delete it by hand if it should go."
            )
        refusals = spec.refusals(ctx, last, "delete", live) if spec.refusals else []
        lacking, unchecked = provision_check(ctx, spec, last, "delete") if test else ([], [])
        if refusals or lacking:
            return outcome.fail(*refusals, *lacking, "Nothing was deleted.")
        outcome.comment.extend(unchecked)
        outcome.changes = {"deleted": {"old": probe.label, "new": None}}
        outcome.comment.extend(spec.side_effects(ctx, last, "delete") if spec.side_effects else [])
        if test:
            outcome.result = None
            outcome.comment.append(f"{probe.label}: would be deleted")
            return outcome
        delete(ctx, spec, last, live)
    except DeclarationError as exc:
        return outcome.refuse(exc)
    except SaltProxmoxError as exc:
        outcome.changes = {}
        return outcome.fail(str(exc), "Nothing was deleted unless said above.")
    ctx.ownership.forget(key)
    outcome.comment.append(f"{probe.label} has been deleted")
    return outcome


def delete(ctx: PveContext, spec: ObjectSpec, decl: Declared, live: Mapping[str, object]) -> None:
    """Delete one object (with its write guard where the family's DELETE takes one: ``delete_guard``)
    and prove it gone with a read.

    Raises PveError, Refused, Uncertain, or SaltProxmoxError when it is still there."""
    call = spec.on(ctx, decl).delete(decl, live)
    if spec.write_guard is not None and spec.delete_guard:
        call = call.with_extra(spec.write_guard(ctx, spec.credential(ctx), decl, live))
    _send_write(ctx, spec, decl, call, f"delete {decl.label}")
    if read(ctx, spec, decl) is not None:
        raise SaltProxmoxError(f"{decl.label}: the delete returned no error but PVE still has it.")


def _last_declaration(spec: ObjectSpec, probe: Declared, row: dict | None) -> Declared:
    """The declaration ``row`` recorded, declared again for the checks before a delete, or ``probe``
    without a row. A serial ``spec.recorded`` keeps beside a secret (``secret_serial``,
    ``password_serial``) is left out: the row never holds the secret, so the family would refuse the
    serial alone, and a recorded value is compared with the row, which is this declaration."""
    if row is None or not isinstance(row.get("declared"), Mapping):
        return probe
    recorded = {
        key: value
        for key, value in row["declared"].items()
        if not (key in spec.recorded and str(key).endswith(SERIAL))
    }
    try:
        return spec.declare(probe.state_id, probe.target, **recorded)
    except (DeclarationError, TypeError):
        raise Refused(
            f"{probe.label}: its ownership row does not hold a readable declaration, so it cannot be checked "
            "before a delete. Nothing was deleted."
        ) from None
