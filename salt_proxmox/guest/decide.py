"""Deciding what a guest's state would do (``decide``), the one decision plan and apply both
consume (``Decision``): create, update, adopt, finish a create, or refuse, with when each written key
takes effect, the power action, the pending keys and the reboot that settles them. Reads only
(the guest's config, status, fingerprint tie); writes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from salt_proxmox.errors import Refused
from salt_proxmox.guest import ha_owned, identity, lane, migrate, nics, restore
from salt_proxmox.guest.absence import indexed_guest
from salt_proxmox.guest.family import Declaration, Family
from salt_proxmox.guest.live import Elsewhere, read_live, styled
from salt_proxmox.guest.pending import GuestConfig
from salt_proxmox.guest.power import Power, paused_route
from salt_proxmox.guest.refusals import ha_managed, paused_state, read_current
from salt_proxmox.guest.verdict import Change, Verdict, judge_guest, live_text, split_by_effect
from salt_proxmox.ownership.rows import CREATING, claim, row_key
from salt_proxmox.pve.client import api_path
from salt_proxmox.pve.errors import PveMalformed
from salt_proxmox.pve.tasks import upid_fields
from salt_proxmox.run.context import PveContext


def changes_of(family: Family, change: Change, live: Mapping[str, object]) -> dict:
    """A return's ``changes`` of a write of ``change`` onto a guest whose config is ``live``:
    ``{key: {old, new}}`` per put, clear and secret (shown as set / not set), ``disks`` per resize."""
    out: dict = {}
    for key, value in [*change.put.items(), *getattr(change, "after", {}).items()]:
        out[key] = family.key_change(key, live_text(live.get(key)), value)
    for key in change.clear:
        out[key] = family.key_change(key, live_text(live.get(key)), "")
    for key in getattr(change, "secrets", ()):
        # A secret is shown as set / unset only (the family's key_change never sees its value).
        out[key] = family.key_change(key, live_text(live.get(key)), None)
    if change.resize:
        out["disks"] = {
            disk: {"old": family.size_of(live_text(live.get(disk))), "new": size}
            for disk, size in change.resize
        }
    return out


def waiting_changes(family: Family, keys: list[str], config: GuestConfig) -> dict:
    """Declared values PVE holds pending: ``old`` in effect, ``new`` waiting for the next start."""
    return {
        key: family.key_change(
            key,
            live_text(config.current.get(key)),
            live_text(config.pending[key]) if key in config.pending else "",
        )
        for key in keys
    }


@dataclass
class Decision:
    """What ``present`` would do: ``action`` is ``create``, ``update``, ``noop`` or ``refuse``.

    ``live``: the config with pending changes merged (``digest`` included), ``config`` the read it
    came from and ``verdict`` the judge's answer on it. ``running``: read only when a change's
    effect depends on it (else None). ``now``/``later``: the keys a write puts in effect at once,
    and those PVE keeps pending until the next start. ``reboot``: the apply reboots the guest
    (``reboot_for_pending``); ``reboot_note`` says why it does not when it was asked.
    """

    action: str
    change: Change = field(default_factory=Change)
    live: dict | None = None
    reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    row_key: str = ""
    row: dict | None = None
    record: bool = False
    #: Why the guest's fingerprint is (re)recorded without a write of ours: ``none recorded`` (a
    #: row from before fingerprints) or ``another guest's`` (taken over with adopt: true).
    fingerprint: str | None = None
    config: GuestConfig | None = None
    verdict: Verdict | None = None
    running: bool | None = None
    now: list[str] = field(default_factory=list)
    later: list[str] = field(default_factory=list)
    reboot: bool = False
    reboot_note: str = ""
    #: A refusal of some keys only: the plan still lists the other changes.
    others: bool = False
    #: What a create writes, as a return's ``changes`` (``CreatePlan.changes``); None: its form.
    create_changes: dict | None = None
    #: The declared power state's action (``start``, ``shutdown``; None: nothing to do) and the
    #: status word it was judged on (read only when ``status`` is declared).
    power: str | None = None
    status: str | None = None
    #: For a paused VM: what PVE does with its forced shutdown (``guest.power.paused_route``).
    paused: str | None = None
    #: A paused VM's qmpstatus, when its status was read (``guest.refusals.paused_state``).
    qmp: str | None = None
    #: The declared power with the shutdown timeout PVE would use for this guest (``Power.for_guest``).
    shutdown: Power | None = None
    #: Why the config write (``after``: the second one) goes as a ``POST …/config`` task
    #: (``Family.config_task``); None: the ``PUT``.
    task: str | None = None
    after_task: str | None = None
    #: The root lane the change's root keys are written through (``pvesh on pve1``, ``ticket for
    #: root@pam``: ``guest.lane.route``); None when it has none.
    lane: str | None = None
    #: A ``migrate`` decision's move (``guest.migrate.Move``): the guest lives on another node.
    move: migrate.Move | None = None


def _ours(family: Family, decl: Declaration, row: Mapping[str, object] | None) -> Declaration | None:
    """The declaration this state's ownership row recorded (``identity.recorded_declaration``), or
    None when there is no row or it holds none that parses."""
    if not row:
        return None
    try:
        return identity.recorded_declaration(family, decl.state_id, decl.target, row, decl.vmid, decl.node)
    except Refused:
        return None


def reboot_problem(
    family: Family, decl: Declaration, verdict: Verdict, running: bool | None, paused: str | None = None
) -> str:
    """Why ``reboot_for_pending`` may not reboot now ('' when it may). A reboot makes EVERY
    pending change live, so one this state does not declare forbids it; a stopped guest
    takes its pending changes when it starts, and is never started here; a paused VM (``paused``:
    its qmpstatus) is not rebooted by PVE (qemu-server ``vm_reboot``: ``VM is paused - cannot
    shutdown``)."""
    what = family.what(decl.vmid, decl.node)
    if paused is not None:
        return (
            f"{what} is not rebooted: it is paused (qmpstatus {paused}), and PVE refuses to reboot it "
            f"(`VM is "
            f"paused - cannot shutdown`, qemu-server vm_reboot). Resume it (`{family.command} resume "
            f"{decl.vmid}`), then run again."
        )
    if verdict.undeclared:
        return (
            f"{what} is not rebooted: changes this state does not declare are pending too, and a reboot "
            "would make them live. Revert or declare them first."
        )
    if running is False:
        return f"{what} is not running; its pending changes take effect when it starts (not started here)."
    return ""


def _effects(ctx: PveContext, family: Family, decl: Declaration, decision: Decision) -> None:
    """Fill ``running``, ``now``, ``later`` and ``reboot`` of an update or noop decision. The
    guest's power state is read only when a key of the write would wait on a running guest, or a
    pending change could be rebooted into effect."""
    verdict, config = decision.verdict, decision.config
    assert verdict is not None and config is not None
    later_if_running = split_by_effect(family, verdict, config, running=True)[1]
    change = verdict.change
    writes = [(change.put, change.clear), (getattr(change, "after", {}), [])]

    def tasks(running: bool | None) -> list[str | None]:
        rule = family.config_task
        return [
            rule(put, clear, config, running) if rule and (put or clear) else None for put, clear in writes
        ]

    if decision.running is None and (
        later_if_running or (verdict.waiting and decl.reboot_for_pending) or tasks(True) != tasks(False)
    ):
        current = read_current(ctx, family.kind, decl.node, decl.vmid)
        decision.running = current["status"] == "running"
        decision.qmp = paused_state(current) if family.pauses else None
    decision.task, decision.after_task = tasks(decision.running)
    decision.now, decision.later = split_by_effect(family, verdict, config, running=bool(decision.running))
    # A start makes every pending change live; after a shutdown they wait for the next start.
    if decl.reboot_for_pending and not decision.power and (decision.later or verdict.waiting):
        decision.reboot_note = reboot_problem(family, decl, verdict, decision.running, decision.qmp)
        decision.reboot = not decision.reboot_note


def _creation_tie(
    ctx: PveContext, family: Family, decl: Declaration, row: Mapping[str, object], live: Mapping[str, object]
) -> str | None:
    """``identity.creation_tie`` on the task lists it needs, read with the ``read`` credential
    (``GET /nodes/{node}/tasks`` with ``vmid``, ``source=all`` and ``since``: pve-manager
    ``PVE/API2/Tasks.pm`` ``node_tasks``): the guest's node, the node of the recorded UPID, and for
    a clone without one the template's node (``qmclone`` carries the template's vmid). Raises what
    the client raises."""
    started = row.get("started")
    if not isinstance(started, int):
        return identity.creation_tie(family, decl.vmid, row, [], {})
    since = str(max(0, started - identity.CLOCK_SKEW))
    clone_of = getattr(decl, "clone", None)
    reads = {(decl.node, decl.vmid, None)}
    upid = upid_fields(str(row["upid"])) if row.get("upid") else None
    if upid is not None and str(upid["id"]).isdigit():
        reads.add((str(upid["node"]), int(str(upid["id"])), None))
    elif clone_of is not None:
        source = indexed_guest(ctx, clone_of)
        if source is not None:
            reads.add((str(source["node"]), clone_of, identity.CLONE))
    credential = ctx.broker.read()
    tasks: list[Mapping[str, object]] = []
    for node, vmid, kind in sorted(reads, key=str):
        params = {"vmid": str(vmid), "source": "all", "since": since, "limit": "1000"}
        if kind:
            params["typefilter"] = kind
        listed = ctx.client.request("GET", f"{api_path('nodes', node)}/tasks", credential, params=params)
        tasks.extend(task for task in listed or [] if isinstance(task, Mapping))
    return identity.creation_tie(
        family, decl.vmid, row, tasks, identity.live_fingerprint(family, live), clone_of
    )


def _moved(
    ctx: PveContext, family: Family, decl: Declaration, power: Power, source: str, opted: bool, key: str
) -> Decision:
    """The decision on a guest declared on ``decl.node`` that lives on ``source``: ``migrate`` with its
    move (``guest.migrate.plan_move``), or ``refuse`` (``opted``: ``migrate.opted_in``)."""
    row = ctx.ownership.row(key)
    if not opted:
        return Decision(
            "refuse", reasons=[migrate.not_opted_in(family, decl, source, ctx.target.name)], row_key=key
        )
    # Judged where it lives: ownership, fingerprint and adopt as for any write to it.
    here = decide(ctx, family, replace(decl, node=source), power)
    if here.action == "refuse":
        return Decision("refuse", reasons=here.reasons, notes=here.notes, row_key=key, row=row)
    if here.action == "create" or here.live is None:
        raise PveMalformed(
            "GET", f"nodes/{source}", "the guest index lists the guest, its node proves it absent"
        )
    deferred = list(here.change.drift) + (["status"] if here.power else [])
    refused, notes, move = migrate.plan_move(ctx, family, decl, power, source, here.live, deferred)
    if move is None:
        return Decision("refuse", reasons=refused, notes=notes, row_key=key, row=row)
    return Decision(
        "migrate",
        live=here.live,
        config=here.config,
        row_key=key,
        row=row,
        notes=[*here.notes, *notes],
        move=move,
    )


def decide(
    ctx: PveContext, family: Family, decl: Declaration, power: Power, moves: bool | None = None
) -> Decision:
    """The one decision plan and apply share (docs/design.md §6 Plan, §8). The guest's status is
    read (one ``GET …/status/current``) only when ``power`` declares one and the guest is ours to
    write. A guest of the family the cluster lists on another node is a ``migrate`` decision, or
    refused naming ``migrate: true``: ``moves`` is the declared ``migrate`` (None: the target's,
    ``guest.migrate.opted_in``)."""
    key = row_key(decl.target, family.kind, decl.vmid)
    row = ctx.ownership.row(key)
    previous = ctx.ownership.for_state(decl.target, family.kind, decl.state_id)
    recorded = (previous[1].get("declared") if previous else None) or (row or {}).get("declared")
    refusals = family.identity_refusals(decl, recorded)
    if refusals:
        return Decision("refuse", reasons=refusals, row_key=key, row=row)
    what = family.what(decl.vmid, decl.node)
    if row and row.get("state_id") not in (None, decl.state_id) and not decl.adopt:
        return Decision("refuse", row_key=key, row=row, reasons=[
            f"{what} is declared by state {row.get('state_id')!r} already; two states cannot manage one "
            "guest. Remove one declaration, or declare adopt: true here to move it to this state."
        ])  # fmt: skip
    if power.status is not None:
        owned = ha_owned.status_refusal(ctx, family.ha_type, what, decl.vmid, power.status)
        if owned:
            return Decision("refuse", reasons=[owned], row_key=key, row=row)
    try:
        config = read_live(ctx, family, decl.node, decl.vmid)
    except Elsewhere as found:
        if found.kind != family.kind:
            raise
        return _moved(ctx, family, decl, power, found.node, migrate.opted_in(ctx, moves), key)
    if config is None:
        plan = family.plan_create(ctx, decl)
        if plan.refusals:
            return Decision("refuse", reasons=plan.refusals, row_key=key, row=row)
        # The create's root keys: a lane write after the token's create, or refused naming the lane.
        rooted = lane.create_change(family, decl)
        via, refused = lane.route(ctx, rooted, decl.node, family.file_keys)
        if refused:
            return Decision("refuse", reasons=refused, row_key=key, row=row)
        wired = nics.create_plan(ctx, family, decl, start=power.action(None) == "start")
        if wired.refusals:
            return Decision("refuse", reasons=wired.refusals, notes=wired.notes, row_key=key, row=row)
        if row and row.get("phase") != CREATING:
            note = (
                f"{what}: the cluster lists no guest with this vmid although it was ours; would CREATE "
                f"it AGAIN {plan.again}"
            )
        elif row:
            note = f"{what}: an earlier create did not finish and the guest is absent; would create it"
        else:
            note = f"{what}: would be created {plan.source}"
        note += plan.suffix + (lane.create_line(rooted, via) if via else "")
        notes = [note, *plan.notes, *wired.notes]
        return Decision(
            "create",
            live=None,
            notes=notes,
            row_key=key,
            row=row,
            lane=via,
            power=power.action(None),
            create_changes=None if plan.changes is None else dict(plan.changes),
        )
    ours = _ours(family, decl, row)
    verdict = judge_guest(family, decl, config, ours, styled(ctx, decl))
    change = verdict.change
    refused, notes = family.update_checks(ctx, decl, change, config)
    change.refuse.extend(refused)
    # The keys only root@pam may write: through the root lane, or refused naming it (guest.lane).
    via, refused = lane.route(ctx, change, decl.node, family.file_keys)
    change.refuse.extend(refused)
    archive = getattr(decl, "restore", None)
    if archive is not None:
        notes.insert(0, restore.ignored_note(family.what(decl.vmid, decl.node), archive))
    live = config.merged()
    # Adopt checks judge what the guest runs with, not what waits for its next start.
    differs = verdict.drift_in_effect
    record = False
    fingerprint = None
    found = {"live": live, "change": change, "config": config, "verdict": verdict, "row_key": key, "row": row}
    if row is None:
        if not decl.adopt:
            return Decision(
                "refuse",
                **found,
                reasons=[
                    f"{what} exists and this minion did not create it. Nothing is taken over silently: "
                    "declare adopt: true to manage it"
                    + (f" (it differs in {', '.join(differs)})." if differs else " (it matches).")
                ],
            )
        notes.append(f"{what}: adopt: true, so this minion records it as its own")
        record = True
    elif row.get("phase") == CREATING:
        # An interrupted create (or a clone whose config write failed) is ours when the node's task
        # list ties it to our create and it matches; otherwise it is taken over only as adopt: true
        # says, the remedy the refusals name.
        untied = None if decl.adopt else _creation_tie(ctx, family, decl, row, live)
        if untied:
            return Decision("refuse", **found, reasons=[identity.not_tied(what, untied)])
        # The keys the create's lane write was to write (guest.lane.create_write) are not a
        # difference: this update writes them through the lane, or refuses them naming it.
        unfinished = [k for k in differs if k in change.root and k in family.create_root(decl)]
        others = [k for k in differs if k not in unfinished]
        refusal, adopted = claim(
            row, decl.adopt, what, matches=not others, alike="it matches",
            unlike=f"it differs in {', '.join(others)}",
        )  # fmt: skip
        if refusal:
            return Decision("refuse", **found, reasons=[refusal])
        notes.append(
            str(adopted)
            if others or decl.adopt
            else f"{what}: our interrupted create is listed in the node's tasks and the guest matches its "
            "declaration"
            + (f" but for {', '.join(unfinished)}, which the root lane writes" if unfinished else "")
            + "; it is recorded as ours"
        )
        record = True
    else:
        # Parsed once above; a row holding no declaration that parses is refused here (Refused).
        last = ours or identity.recorded_declaration(
            family, decl.state_id, decl.target, row, decl.vmid, decl.node
        )
        checked = identity.check(family, row, live, last, styled(ctx, last))
        if checked.differs and not decl.adopt:
            reason = identity.not_ours(what, checked, "write")
            return Decision("refuse", **found, reasons=[reason])
        if checked.differs:
            notes.append(
                f"{what}: adopt: true, so it is taken over as it is now; its fingerprint is recorded anew"
            )
            fingerprint = "another guest's"
        elif checked.legacy:
            notes.append(identity.legacy_note(what))
            fingerprint = "none recorded"
        if (row.get("declared") or {}).get("node") not in (None, decl.node):
            notes.append(
                f"{what}: the guest is on {decl.node} now; its record follows it, nothing is written"
            )
            record = True
        record = record or fingerprint is not None
        if not checked.differs and not identity.generated_keys(
            family, identity.live_fingerprint(family, live), last.config
        ):
            if not decl.adopt:
                indistinct = identity.indistinct(what, "write")
                if change.drift or verdict.refuse or power.status is not None or decl.reboot_for_pending:
                    return Decision("refuse", **found, reasons=[indistinct])
            else:
                notes.append(
                    f"{what}: adopt: true, so it is taken as ours although its fingerprint cannot tell it "
                    "from another guest at this vmid (no MAC PVE drew, no generated id)"
                )
    notes.extend(verdict.undeclared)
    if verdict.refuse:
        return Decision("refuse", **found, reasons=verdict.refuse, notes=notes, others=True)
    decision = Decision(
        "update" if change.drift else "noop", **found, notes=notes, record=record, fingerprint=fingerprint,
        lane=via,
    )  # fmt: skip
    if power.status is not None:
        current = read_current(ctx, family.kind, decl.node, decl.vmid)
        owned = ha_owned.status_refusal(
            ctx, family.ha_type, what, decl.vmid, power.status, live=ha_managed(current)
        )
        if owned:
            return Decision("refuse", **found, reasons=[owned], notes=notes, others=True)
        decision.status = str(current["status"])
        decision.running = decision.status == "running"
        power = decision.shutdown = power.for_guest(family, config.current)
        try:
            decision.power = power.action(decision.status)
        except Refused as exc:
            return Decision("refuse", **found, reasons=[f"{what}: {exc}"], notes=notes)
        qmp = decision.qmp = paused_state(current) if family.pauses else None
        if qmp is not None:
            try:
                decision.paused = paused_route(family, decl.vmid, decl.node, decision.power, power, qmp)
            except Refused as exc:
                return Decision("refuse", **found, reasons=exc.reasons, notes=notes, others=True)
    if decision.running is None and nics.writes_nic(change):
        current = read_current(ctx, family.kind, decl.node, decl.vmid)
        decision.running = current["status"] == "running"
        decision.qmp = paused_state(current) if family.pauses else None
    _effects(ctx, family, decl, decision)
    wired = nics.update_plan(
        ctx, family, decl, change.put, change.clear, live, bool(decision.running), decision.now,
        whole=decision.power == "start" or decision.reboot,
    )  # fmt: skip
    if wired.refusals:
        return Decision("refuse", **found, reasons=wired.refusals, notes=[*notes, *wired.notes], others=True)
    decision.notes.extend(wired.notes)
    return decision
