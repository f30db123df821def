"""The life of a guest, shared by containers and VMs (one ``Family`` each: ``guest.family``): the
plan/apply of ``present``/``absent``, the read with proven absence, create, digest-guarded update,
resize, pending changes, read-back and re-judge, retain/destroy.

Read (docs/design.md §6): ``GET nodes/{node}/{lxc|qemu}/{vmid}/pending`` with the ``read``
credential (``salt_proxmox.guest.pending``). A success must carry a non-empty ``digest`` (every real
config has one: pve-guest-common ``AbstractConfig::load_config`` adds it), else it is an error. Only
PVE's exact missing-config answer may lead to absence, and only when the vmid is proven free with the SAME
credential (``salt_proxmox.guest.absence``: the run's guest index as a hint, ``GET cluster/nextid?vmid=``
as the proof): pve-container ``src/PVE/API2/LXC/Config.pm`` (qemu-server ``PVE/API2/Qemu.pm``
likewise) checks VM.Audit on ``/vms/{vmid}`` before the missing-config error, and pve-manager
``src/PVE/API2/Cluster.pm`` filters the index rows by that same privilege. The vmid held nowhere is
absent; listed on the declared node as a guest of the family is PVE's own error; listed elsewhere
is refused naming its type and node (vmids are cluster-wide).

Plan and apply call the same ``_decide``; apply decides again on a fresh read, then writes:
create as the family's tasks (``Family.create``), update as one digest-guarded config write followed
by one resize task per grown disk, each with a freshly minted ``provision`` credential polled by its
owner; then reads back and judges again. The config write is the ``PUT …/config``, or the family's
``POST …/config`` task where ``Family.config_task`` says why (a VM write that allocates a volume or
hot-plugs into the running VM). A failed config write of a family whose writes land in the pending
section first (``Family.pending_first``: qemu-server ``update_vm_api``) is read back and reported
key by key: in effect, pending, not written (``_config_write_failed``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from salt_proxmox.errors import DeclarationError, Refused, SaltProxmoxError, Uncertain
from salt_proxmox.guest import identity, nics
from salt_proxmox.guest.absence import indexed_guest, locate_missing
from salt_proxmox.guest.change import Change, live_text
from salt_proxmox.guest.context import PveContext
from salt_proxmox.guest.family import Declaration, Family
from salt_proxmox.guest.pending import GuestConfig, PendingRowsError
from salt_proxmox.guest.power import (
    Power,
    PowerNotReached,
    apply_power,
    ha_route,
    parse_power,
    paused_route,
    power_lines,
    verify_power,
)
from salt_proxmox.guest.refusals import destroy_refusals, ha_managed, paused_state, read_current
from salt_proxmox.guest.verdict import Verdict, judge_guest, split_by_effect
from salt_proxmox.lowstate import Chunk
from salt_proxmox.outcome import Outcome, forget_ownership
from salt_proxmox.ownership import CREATING, OWNED, claim, row_key
from salt_proxmox.pve.client import Credential, api_path
from salt_proxmox.pve.constraints import check_form, vmid_number
from salt_proxmox.pve.errors import PveConfigMissing, PveError, PveMalformed, PveUnreachable
from salt_proxmox.pve.facts import DEFAULT_TAG_STYLE, TagStyle, tag_style
from salt_proxmox.pve.tasks import TaskFailed, start_task, upid_fields


def chunk_keys(family: Family, chunk: Chunk, default_target: str | None) -> frozenset[str]:
    """The ownership row key (``<target>/<kind>/<vmid>``: ``prod/lxc/150``) a run chunk declares, or
    none when its target or vmid cannot be read (it is refused when it runs). vmids are
    cluster-wide, so the node is no part of it."""
    target = chunk.target(default_target)
    try:
        return (
            frozenset()
            if target is None
            else frozenset({row_key(target, family.kind, vmid_number(chunk.args.get("vmid")))})
        )
    except DeclarationError:
        return frozenset()


def guest_path(family: Family, node: str, vmid: int) -> str:
    """``nodes/{node}/{lxc|qemu}/{vmid}``, labels encoded."""
    return api_path("nodes", node, family.kind, vmid)


def config_path(family: Family, node: str, vmid: int) -> str:
    """``nodes/{node}/{lxc|qemu}/{vmid}/pending``, the read every guest state starts with: the config
    rows with the values in effect and the pending ones (``salt_proxmox.guest.pending``)."""
    return f"{guest_path(family, node, vmid)}/pending"


def read_ahead(ctx: PveContext, family: Family, declarations: Iterable[Mapping[str, object]]) -> int:
    """Read ahead the config of every guest of ``family`` the run declares on this target,
    ``ctx.target.concurrency`` at a time (``salt_proxmox.pve.readahead``); returns how many were
    sent.

    ``declarations``: the arguments of the run's ``<family.state>.present`` states on this target.
    Only ``vmid`` and ``node`` are read; a declaration whose vmid or node ``family.parse``
    refuses is skipped (its state reads nothing). Never raises: without a read credential nothing
    is read ahead, and each state meets that failure on its own.
    """
    paths = []
    for declared in declarations:
        try:
            decl = family.parse(
                "read-ahead", vmid=declared.get("vmid"), node=declared.get("node"), target=ctx.target.name
            )
        except DeclarationError:
            continue
        paths.append(config_path(family, decl.node, decl.vmid))
    if not paths:
        return 0
    try:
        credential = ctx.broker.read()
    except SaltProxmoxError:
        return 0
    return ctx.reads.fill(ctx.client, credential, paths, ctx.target.concurrency)


def operator_config(ctx: PveContext, family: Family, vmid: int, node: str | None = None) -> dict[str, str]:
    """What ``proxmox.lxc_config`` answers for a container: guest ``vmid``'s config with its pending
    changes merged in (what it runs with after its next start, as ``pct config``/``qm config`` shows
    it), description included (``family.operator_view``). ``node`` None: found in the guest index
    (``indexed_guest``).

    Raises Refused with a sentence when no guest of ``family`` holds ``vmid`` (none in the index,
    another type there, or the cluster proves it absent on ``node``), and what read_live raises."""
    if node is None:
        row = indexed_guest(ctx, vmid)
        if row is None:
            raise Refused(
                f"{family.label} {vmid} does not exist: the cluster's guest index lists no guest {vmid}."
            )
        if row["type"] != family.kind:
            raise Refused(f"vmid {vmid} is a {row['type']} guest on node {row['node']}, not a {family.noun}.")
        node = row["node"]
    live = read_live(ctx, family, node, vmid)
    if live is None:
        raise Refused(
            f"{family.label} {vmid} does not exist: the cluster's guest index lists no guest {vmid}."
        )
    return family.operator_view(live.merged())


def read_live(ctx: PveContext, family: Family, node: str, vmid: int) -> GuestConfig | None:
    """The config of guest ``vmid`` of ``family`` on ``node`` (values in effect and pending changes, from one
    ``GET …/pending``: ``salt_proxmox.guest.pending``), or None when the cluster proves it absent.

    Raises PveError (PVE's own answer, including a 403 or a generic 500), PveMalformed (a 200
    without digest-bearing config rows, or a guest index whose rows lack vmid/node/type), Refused
    (the vmid is held elsewhere), PveUnreachable or CredentialError. Never folds a failure into
    absence.
    """
    credential = ctx.broker.read()
    path = config_path(family, node, vmid)
    try:
        rows = ctx.reads.get(ctx.client, path, credential)
    except PveConfigMissing as missing:
        error = missing
    else:
        try:
            return GuestConfig.from_rows(rows)
        except PendingRowsError as exc:
            raise PveMalformed("GET", path, str(exc)) from None
    found = locate_missing(ctx, vmid, credential)
    if found is None:
        return None
    if found["node"] == node and found["type"] == family.kind:
        raise error
    raise Refused(
        f"vmid {vmid} is a {found['type']} guest on node {found['node']}, not a {family.noun} on {node}. "
        "A migration is not an update and vmids are cluster-wide: declare the node it is on, or pick a "
        "free vmid."
    )


def styled(ctx: PveContext, decl: Declaration) -> TagStyle:
    """The tag style to judge ``decl`` with: the datacenter's (read once per run) when it declares
    tags, else the default, so a plan without tags spends no read on it."""
    return tag_style(ctx) if decl.config.get("tags") else DEFAULT_TAG_STYLE


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


def _waiting_changes(family: Family, keys: list[str], config: GuestConfig) -> dict:
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
    #: For a guest HA manages: what the HA manager does with ``power`` (``guest.power.ha_route``).
    ha: str | None = None
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


def _ours(family: Family, decl: Declaration, row: Mapping[str, object] | None) -> Declaration | None:
    """The declaration this state's ownership row recorded (``identity.recorded_declaration``), or
    None when there is no row or it holds none that parses."""
    if not row:
        return None
    try:
        return identity.recorded_declaration(family, decl.state_id, decl.target, row, decl.vmid, decl.node)
    except Refused:
        return None


def _reboot_problem(
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
        decision.reboot_note = _reboot_problem(family, decl, verdict, decision.running, decision.qmp)
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


def _decide(ctx: PveContext, family: Family, decl: Declaration, power: Power) -> Decision:
    """The one decision plan and apply share (docs/design.md §6 Plan, §8). The guest's status is
    read (one ``GET …/status/current``) only when ``power`` declares one and the guest is ours to
    write."""
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
    config = read_live(ctx, family, decl.node, decl.vmid)
    if config is None:
        plan = family.plan_create(ctx, decl)
        if plan.refusals:
            return Decision("refuse", reasons=plan.refusals, row_key=key, row=row)
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
        notes = [note + plan.suffix, *plan.notes, *wired.notes]
        return Decision(
            "create",
            live=None,
            notes=notes,
            row_key=key,
            row=row,
            power=power.action(None),
            create_changes=None if plan.changes is None else dict(plan.changes),
        )
    ours = _ours(family, decl, row)
    verdict = judge_guest(family, decl, config, ours, styled(ctx, decl))
    change = verdict.change
    refused, notes = family.update_checks(ctx, decl, change)
    change.refuse.extend(refused)
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
        refusal, adopted = claim(
            row, decl.adopt, what, matches=not differs, alike="it matches",
            unlike=f"it differs in {', '.join(differs)}",
        )  # fmt: skip
        if refusal:
            return Decision("refuse", **found, reasons=[refusal])
        notes.append(
            str(adopted)
            if differs or decl.adopt
            else f"{what}: our interrupted create is listed in the node's tasks and the guest matches its "
            "declaration; it is recorded as ours"
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
        "update" if change.drift else "noop", **found, notes=notes, record=record, fingerprint=fingerprint
    )
    if power.status is not None:
        current = read_current(ctx, family.kind, decl.node, decl.vmid)
        decision.status = str(current["status"])
        decision.running = decision.status == "running"
        power = decision.shutdown = power.for_guest(family, config.current)
        try:
            decision.power = power.action(decision.status)
        except Refused as exc:
            return Decision("refuse", **found, reasons=[f"{what}: {exc}"], notes=notes)
        ha_state = ha_managed(current)
        qmp = decision.qmp = paused_state(current) if family.pauses else None
        try:
            # vm_shutdown judges a paused VM before it hands one to HA.
            if qmp is not None:
                decision.paused = paused_route(family, decl.vmid, decl.node, decision.power, power, qmp)
            elif decision.power and ha_state is not None:
                timeout, force = power.shutdown_timeout, power.force_stop
                decision.ha = ha_route(family, decl.vmid, decl.node, decision.power, timeout, force, ha_state)
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


def present(ctx: PveContext, family: Family, state_id: str, test: bool, **declared) -> Outcome:
    """Plan (``test``) or apply one guest declaration of ``family``; never raises for a known failure.

    ``declared``: ``vmid``, ``node``, ``adopt``, ``removal``, ``reboot_for_pending``, the power
    state (``status``, ``shutdown_timeout``, ``force_stop``: ``guest.power``) and the config keys
    (``hostname``, ``rootfs``, ``net0``, ...), as the state received them. A task that ended
    ``WARNINGS: N`` is a success whose note ends the comment, whatever happened after it.

    A declared ``status`` is planned (``would start``, ``would shut down``) and applied after the
    config is written and read back: ``POST …/status/start`` or ``…/status/shutdown`` with the
    declared timeout, as a task awaited with the credential that started it; a created guest with
    ``status: running`` is started by its own task after the create (``guest.power``).

    On a running guest PVE keeps most changes pending until its next start (pve-container
    ``src/PVE/LXC/Config.pm`` ``vmconfig_hotplug_pending``; qemu-server ``PVE/QemuServer.pm``
    ``vmconfig_hotplug_pending`` with the VM's ``hotplug`` option): plan and apply say which keys take
    effect at once and which wait (``family.applies_live``); a declared value that waits keeps the
    plan from being clean (result None, ``changes['pending']``) without being written again. Only
    with ``reboot_for_pending: true`` does the apply reboot the guest (``POST …/status/reboot``, a
    task awaited by the credential that started it) so they take effect, and only when every
    pending change is one this state declares.
    """
    vmid, node, pool = declared.get("vmid"), declared.get("node"), declared.get("pool")
    outcome = _present(ctx, family, state_id, test, declared)
    if pool is not None and outcome.result is not False and "created" not in outcome.changes:
        # Validated by _present's parse (a bad pool fails it, result False).
        what = family.what(vmid_number(vmid), str(node))
        outcome = _pool_membership(ctx, what, vmid_number(vmid), str(pool), test, outcome)
    outcome.comment.extend(ctx.take_notes())
    return outcome


def _pool_membership(
    ctx: PveContext, what: str, vmid: int, pool: str, test: bool, outcome: Outcome
) -> Outcome:
    """Keep an existing guest (``what``) in its declared pool (``''``: in none), compared as PVE
    lists membership: the ``pool`` of its row in ``GET cluster/resources`` (pve-manager
    ``PVE/API2/Cluster.pm``).

    A move is one ``PUT /pools/{poolid}`` with ``vms=<vmid>`` (and ``allow-move=1`` when it leaves
    another pool), a removal one ``PUT /pools/{old}`` with ``vms=<vmid>&delete=1``
    (pve-manager ``PVE/API2/Pool.pm`` ``update_pool``), then membership is read again. Members are
    the guest's to declare: ``proxmox_pool`` never compares them, so an owned pool is not drift."""
    try:
        row = indexed_guest(ctx, vmid)
        have = str((row or {}).get("pool") or "")
        if row is None or have == pool:
            return outcome
        moving = f"into pool {pool}" if pool else f"out of pool {have}"
        if pool and have:
            moving += f" (from pool {have})"
        outcome.changes["pool"] = {"old": have or None, "new": pool or None}
        if test:
            outcome.result = None
            outcome.comment.append(f"{what}: would move {moving}")
            return outcome
        if pool:
            form = {"vms": str(vmid), **({"allow-move": "1"} if have else {})}
            ctx.client.request("PUT", api_path("pools", pool), ctx.broker.provision(), form=form)
        else:
            form = {"vms": str(vmid), "delete": "1"}
            ctx.client.request("PUT", api_path("pools", have), ctx.broker.provision(), form=form)
        now = str((indexed_guest(ctx, vmid) or {}).get("pool") or "")
    except SaltProxmoxError as exc:
        return outcome.fail(f"{what}: pool membership: {exc}")
    if now != pool:
        return outcome.fail(
            f"{what}: after the move PVE lists it in pool {now or '(none)'}, not {pool or '(none)'}."
        )
    outcome.comment.append(f"{what}: moved {moving}")
    return outcome


def _refused(outcome: Outcome, family: Family, decl: Declaration, decision: Decision, test: bool) -> Outcome:
    """A refusal that does not hide the rest of the plan: every other change the state would make
    is listed (in ``changes`` under test), and none is written."""
    change = decision.change
    others = [*change.put, *change.clear, *(disk for disk, _ in change.resize)]
    lines = [*decision.notes, *decision.reasons]
    if others and decision.others and decision.live is not None:
        if test:
            outcome.changes = changes_of(family, change, decision.live)
        lines.append(
            f"{family.what(decl.vmid, decl.node)}: besides what is refused, it differs in "
            f"{', '.join(others)}; none of it is written until the refusal is settled."
        )
    if decision.verdict is not None and decision.verdict.waiting and decision.config is not None:
        lines.append(_waiting_line(family, decl, decision.verdict.waiting))
    return outcome.fail(*lines, "Nothing was written.")


def _waiting_line(family: Family, decl: Declaration, keys: list[str]) -> str:
    return (
        f"{family.what(decl.vmid, decl.node)}: {', '.join(keys)} {'is' if len(keys) == 1 else 'are'} written "
        f"but pending until the {family.noun} restarts; reboot it (`{family.command} reboot {decl.vmid}`), "
        "or declare reboot_for_pending: true."
    )


def _effect_lines(family: Family, decl: Declaration, decision: Decision) -> list[str]:
    """What the plan says about when the keys it would write take effect (only when some would
    wait: on a stopped guest, or with only hot-plugged keys, everything is at once)."""
    if not decision.later:
        return []
    now = f"{', '.join(decision.now)} would take effect at once; " if decision.now else ""
    return [
        f"{family.what(decl.vmid, decl.node)}: {now}{', '.join(decision.later)} would stay pending until "
        f"the {family.noun} restarts (it is running; PVE applies only some keys to a running {family.noun})"
    ]


def _task_lines(family: Family, decl: Declaration, decision: Decision) -> list[str]:
    """What the plan says of a config write that goes as a ``POST …/config`` task, and why."""
    path = f"POST /{guest_path(family, decl.node, decl.vmid)}/config"
    return [
        f"{family.what(decl.vmid, decl.node)}: the {which}write goes as a task ({path}): {why}"
        for which, why in (("", decision.task), ("second ", decision.after_task))
        if why
    ]


def _present(ctx: PveContext, family: Family, state_id: str, test: bool, declared: dict) -> Outcome:
    outcome = Outcome()
    try:
        try:
            power, problems = parse_power(declared), []
        except DeclarationError as exc:
            power, problems = Power(), exc.problems
        try:
            decl = family.parse(
                state_id,
                vmid=declared.pop("vmid", None),
                node=declared.pop("node", None),
                target=ctx.target.name,
                adopt=declared.pop("adopt", False),
                removal=declared.pop("removal", "retain"),
                reboot_for_pending=declared.pop("reboot_for_pending", False),
                config=declared,
            )
        except DeclarationError as exc:
            raise DeclarationError([*exc.problems, *problems]) from None
        if problems:
            raise DeclarationError(problems)
        decision = _decide(ctx, family, decl, power)
    except DeclarationError as exc:
        return outcome.refuse(exc)
    except SaltProxmoxError as exc:
        return outcome.fail(f"{state_id}: {exc}", "Nothing was written.")
    if decision.action == "refuse":
        return _refused(outcome, family, decl, decision, test)
    power = decision.shutdown or power
    what = family.what(decl.vmid, decl.node)
    waiting = decision.verdict.waiting if decision.verdict else []
    if decision.action == "create":
        outcome.changes = {"created": {"old": None, "new": what}}
        if decision.create_changes is not None:
            outcome.changes.update(decision.create_changes)
        else:
            form = family.create_form(decl)
            outcome.changes.update(
                {k: family.key_change(k, None, v) for k, v in form.items() if k not in ("vmid",)}
            )
        if decl.secrets:
            outcome.comment.append(f"{what}: {', '.join(sorted(decl.secrets))} {family.secrets_rule}")
    else:
        outcome.changes = changes_of(family, decision.change, decision.live or {})
    if decision.fingerprint is not None:
        outcome.changes["fingerprint"] = {"old": decision.fingerprint, "new": "recorded"}
    elif decision.record and decision.action != "create":
        outcome.changes["ownership"] = {"old": (decision.row or {}).get("phase"), "new": "owned"}
    if test or decision.action != "create":
        outcome.comment.extend(decision.notes)
    if decision.reboot_note:
        outcome.comment.append(decision.reboot_note)
    if test:
        if decision.action == "update":
            outcome.comment.append(f"{what}: would write {', '.join(decision.change.drift)}")
            outcome.comment.extend(_task_lines(family, decl, decision))
            outcome.comment.extend(_effect_lines(family, decl, decision))
            # A family's privileges a write needs beyond the VM's own (a VM's mapped devices).
            outcome.comment.extend(
                f"{what}: the write needs {use}" for use in getattr(decision.change, "uses", ())
            )
        if waiting:
            assert decision.config is not None
            outcome.changes["pending"] = _waiting_changes(family, waiting, decision.config)
            outcome.comment.append(_waiting_line(family, decl, waiting))
        if decision.reboot:
            outcome.changes["rebooted"] = {"old": "pending", "new": "in effect"}
            outcome.comment.append(
                f"{what}: would be rebooted so its pending changes take effect (reboot_for_pending)"
            )
        if decision.power:
            outcome.changes["status"] = {"old": decision.status, "new": power.status}
            outcome.comment.append(
                power_lines(what, decision.power, power, done=False, ha=decision.ha, paused=decision.paused)
            )
        if decision.action == "noop" and not decision.record and not waiting and not decision.power:
            outcome.comment.append(f"{what} is as declared")
        outcome.result = None if (outcome.changes or decision.record) else True
        return outcome
    written: list[str] = []
    # The keys of a config write under way: set while it is sent, emptied once it went through.
    sending: list[str] = []
    try:
        if decision.action == "create":
            _create(ctx, family, decl, written, decision.row, sending)
        elif decision.action == "update":
            _update(ctx, family, decl, decision, written, sending)
        # Read back only what was written; a no-drift apply costs the one read it decided on.
        after = decision.config if decision.action == "noop" else read_live(ctx, family, decl.node, decl.vmid)
    except SaltProxmoxError as exc:
        if sending and family.pending_first:
            return _config_write_failed(ctx, family, decl, decision, outcome, exc, written, sending)
        return _write_failed(outcome, exc, written, decision.action)
    if after is None:
        return outcome.fail(
            f"{family.label} {decl.vmid}: the write returned no error but the guest is absent."
        )
    try:
        ctx.ownership.mark_owned(
            decision.row_key, decl.state_id, decl.stored(), identity.live_fingerprint(family, after.merged())
        )
    except SaltProxmoxError as exc:
        return outcome.fail(f"{what}: {exc}", _unrecorded(decision))
    settled = judge_guest(family, decl, after, decl, styled(ctx, decl))
    left = settled.change.drift
    if left:
        return outcome.fail(
            f"{family.label} {decl.vmid}: after the write, {', '.join(left)} still differ from the "
            "declaration. PVE may store another spelling; declare what it stores."
        )
    if decision.action == "create":
        outcome.comment.append(f"{what} has been created")
    elif decision.action == "update":
        now = [key for key in decision.change.drift if key not in settled.waiting]
        later = [key for key in decision.change.drift if key in settled.waiting]
        outcome.comment.append(
            f"{what} has been updated: {', '.join(decision.change.drift)}"
            + (f"; in effect now: {', '.join(now)}" if later and now else "")
        )
    elif not decision.record and not settled.waiting and not decision.power:
        outcome.comment.append(f"{what} is as declared")
    if decision.power:
        try:
            settled = _power_after(ctx, family, decl, decision, power, settled, outcome)
        except SaltProxmoxError as exc:
            return _power_failed(outcome, family, decl, decision, power, exc)
    if settled.waiting:
        return _pending_after(ctx, family, decl, decision, settled, outcome)
    return outcome


def _power_after(
    ctx: PveContext,
    family: Family,
    decl: Declaration,
    decision: Decision,
    power: Power,
    settled: Verdict,
    outcome: Outcome,
) -> Verdict:
    """Apply the declared power state once the config is written and recorded: one start or
    shutdown task. A start makes pending changes live, so a guest that had some is read and
    judged again; after a shutdown they wait for the next start. Returns the verdict to report
    pending changes from. Raises what ``apply_power`` and ``read_live`` raise."""
    what = family.what(decl.vmid, decl.node)
    assert decision.power is not None
    apply_power(ctx, family, decl.node, decl.vmid, decision.power, power)
    outcome.changes["status"] = {"old": decision.status, "new": power.status}
    outcome.comment.append(
        power_lines(what, decision.power, power, done=True, ha=decision.ha, paused=decision.paused)
    )
    decision.running = decision.power == "start"
    if decision.power == "start" and settled.waiting:
        final = read_live(ctx, family, decl.node, decl.vmid)
        if final is None:
            raise Refused(f"{family.label} {decl.vmid}: after the start the guest is absent.")
        settled = judge_guest(family, decl, final, decl, styled(ctx, decl))
    return settled


def _power_failed(
    outcome: Outcome,
    family: Family,
    decl: Declaration,
    decision: Decision,
    power: Power,
    exc: SaltProxmoxError,
) -> Outcome:
    """The outcome of a power task that failed after the config was written and recorded: the
    config stays written (and in ``changes``), the status is what it was."""
    what = family.what(decl.vmid, decl.node)
    lines = [str(exc)]
    if decision.power == "shutdown" and not power.force_stop and not isinstance(exc, PowerNotReached):
        lines.append(
            f"{what} was not stopped hard: without force_stop: true a shutdown that meets its "
            f"{power.shutdown_timeout} s timeout leaves the {family.noun} running. Find why it does not shut "
            f"down, raise shutdown_timeout, or declare force_stop: true to allow PVE's hard stop."
        )
    if decision.action in ("create", "update"):
        lines.append(f"The config is written and recorded; the {family.noun} was not {power.status}.")
    return outcome.fail(*lines)


def _pending_after(
    ctx: PveContext, family: Family, decl: Declaration, decision: Decision, settled: Verdict, outcome: Outcome
) -> Outcome:
    """An apply that leaves declared values pending: say so, or with ``reboot_for_pending``
    reboot the guest as one task awaited by its owner and judge what it runs with then."""
    what = family.what(decl.vmid, decl.node)
    if not decl.reboot_for_pending:
        outcome.comment.append(_waiting_line(family, decl, settled.waiting))
        return outcome
    problem = decision.reboot_note
    try:
        if not problem:
            current = read_current(ctx, family.kind, decl.node, decl.vmid)
            qmp = paused_state(current) if family.pauses else None
            problem = _reboot_problem(family, decl, settled, current["status"] == "running", qmp)
        if problem:
            outcome.comment.extend([p for p in [problem] if p not in outcome.comment])
            outcome.comment.append(_waiting_line(family, decl, settled.waiting))
            return outcome
        path = guest_path(family, decl.node, decl.vmid)
        ctx.task(
            "POST", f"{path}/status/reboot", decl.node,
            f"reboot {family.label} {decl.vmid} so {', '.join(settled.waiting)} take effect",
            polls=ctx.create_polls,
        )  # fmt: skip
        # qemu-server vm_reboot's task ends once QEMU has exited; qmeventd starts the VM again after it
        # (pve-container's vm_reboot starts the container inside its task). Judge what it runs with.
        verify_power(ctx, family, decl.node, decl.vmid, "reboot", "running", ctx.create_polls, settles=True)
        outcome.changes["rebooted"] = {"old": f"pending: {', '.join(settled.waiting)}", "new": "in effect"}
        final = read_live(ctx, family, decl.node, decl.vmid)
    except SaltProxmoxError as exc:
        return outcome.fail(
            str(exc), f"The config is written; {', '.join(settled.waiting)} wait until {what} restarts."
        )
    if final is None:
        return outcome.fail(f"{family.label} {decl.vmid}: after the reboot the guest is absent.")
    still = judge_guest(family, decl, final, decl, styled(ctx, decl))
    if still.change.drift or still.waiting:
        return outcome.fail(
            f"{what} was rebooted, but {', '.join([*still.change.drift, *still.waiting])} still differ from "
            f"the declaration in what it runs with. Read `{family.command} pending {decl.vmid}` on the node."
        )
    outcome.comment.append(f"{what} has been rebooted; {', '.join(settled.waiting)} in effect")
    return outcome


def _unrecorded(decision: Decision) -> str:
    """What the next run believes when the ``owned`` row could not be written after ``decision``
    went through: the row on disk before the write still stands."""
    done = {"create": "The guest was created", "update": "The write went through"}.get(
        decision.action, "Nothing was written to PVE"
    )
    if decision.action == "create" or (decision.row or {}).get("phase") == CREATING:
        return (
            f"{done}; its row stays {CREATING}, so the next run finishes it as ours when it still matches "
            "the declaration. Make the file writable, then run again."
        )
    if decision.row is None:
        return (
            f"{done}, but without its row it is not recorded as ours: the next run takes it over again "
            "only with adopt: true. Make the file writable, then run again."
        )
    return f"{done}; its earlier row still stands. Make the file writable, then run again."


def _write_failed(outcome: Outcome, exc: SaltProxmoxError, written: list[str], action: str = "") -> Outcome:
    """The outcome of an apply that stopped at ``exc`` after the writes named in ``written``.

    The comment says what the failed step was and what had already been written before it, so an
    operator never has to guess whether a partial apply changed the guest: an uncertain step keeps
    the changes it may have made; otherwise only what was written stays in ``changes``, and with
    nothing written the comment says so.
    """
    lines = [str(exc)]
    if written:
        lines.append(f"Already written: {', '.join(written)}.")
    if action == "create" and written and not isinstance(exc, Uncertain):
        # A later step of a create failed (a VM clone's config write): the guest exists.
        lines.append(
            f"The guest exists; its ownership row stays {CREATING}: the next run records it as ours if it "
            "matches the declaration, else refuses it until the declaration says adopt: true."
        )
        # The return agrees with PVE: a guest was made, whatever step failed after it.
        outcome.changes = {"created": outcome.changes["created"]}
        return outcome.fail(*lines)
    if isinstance(exc, Uncertain):
        if action == "create":
            lines.append(
                f"Its ownership row stays {CREATING}: the next run finishes the create as ours when the "
                "guest is there and matches the declaration, creates it when the cluster proves it absent, "
                "and refuses it when it differs."
            )
        else:
            lines.append("The next run reads the guest again and writes only what still differs.")
        return outcome.fail(*lines)
    outcome.changes = _kept_changes(outcome, written)
    if not written and not isinstance(exc, TaskFailed):
        lines.append("Nothing was written.")
    return outcome.fail(*lines)


#: Why a failed VM config write may have written (``Family.pending_first``).
PENDING_FIRST = (
    "qemu-server update_vm_api writes each value into the pending section before it hot-plugs or applies "
    "it, then raises what failed"
)


def _kept_changes(outcome: Outcome, written: Iterable[str]) -> dict:
    """The part of a return's ``changes`` that ``written`` names: config keys, and the disks of
    ``<disk> grown to <size>`` steps."""
    written = list(written)
    grown = {name.split(" grown to ", 1)[0] for name in written if " grown to " in name}
    kept = {key: change for key, change in outcome.changes.items() if key in written}
    disks = {disk: size for disk, size in outcome.changes.get("disks", {}).items() if disk in grown}
    return {**kept, **({"disks": disks} if disks else {})}


def _config_write_failed(
    ctx: PveContext,
    family: Family,
    decl: Declaration,
    decision: Decision,
    outcome: Outcome,
    exc: SaltProxmoxError,
    written: list[str],
    sending: list[str],
) -> Outcome:
    """The outcome of a config write of ``sending`` (its keys) that failed, PVE's error or a failed
    or unseen task, for a family whose writes land in the pending section first
    (``Family.pending_first``: ``PENDING_FIRST``): never "nothing was written".

    The config is read back (``read_live``: one ``GET …/pending``) and judged against the declaration
    (``guest.verdict.judge_guest``): each key of the write is in effect, pending until the next start
    (the next plan judges it as PVE's pending rules say), or not written. An update keeps in
    ``changes`` what is in effect or pending besides the earlier steps' (``written``), and when any
    of it landed the ownership row records the read-back's fingerprint, as after a write that went
    through (a pending NIC or disk is this state's). A create keeps its ``creating`` row and only
    ``created`` (``_write_failed``). When the read back fails too, the return says the write may
    have been made in part and keeps every change; the next run reads the guest again."""
    what = family.what(decl.vmid, decl.node)
    lines = [str(exc), *([f"Already written: {', '.join(written)}."] if written else [])]
    unseen = " Its task's end was not seen, so it may still be writing." if isinstance(exc, Uncertain) else ""
    after: GuestConfig | None = None
    try:
        after = read_live(ctx, family, decl.node, decl.vmid)
    except SaltProxmoxError as unread:
        lines.append(
            f"{what}: {PENDING_FIRST}, so part of {', '.join(sending)} may be written, and the config could "
            f"not be read back ({unread}).{unseen} The next run reads it again and writes only what still "
            "differs."
        )
    else:
        if after is None:
            lines.append(
                f"{what}: read back after the failed write, the cluster lists no guest at this vmid."
            )
    if decision.action == "create":
        lines.extend(_read_back_lines(ctx, family, decl, after, sending, unseen)[0])
        lines.append(
            f"The guest exists; its ownership row stays {CREATING}: the next run records it as ours if it "
            "matches the declaration, else refuses it until the declaration says adopt: true."
        )
        outcome.changes = {"created": outcome.changes["created"]}
        return outcome.fail(*lines)
    if after is None:
        # Unread (or gone): the write may have been made in part, so every change stays in the return.
        return outcome.fail(*lines)
    said, landed, pending = _read_back_lines(ctx, family, decl, after, sending, unseen)
    lines.extend(said)
    outcome.changes = _kept_changes(outcome, [*written, *landed])
    if pending:
        outcome.changes["pending"] = _waiting_changes(family, pending, after)
    if written or landed:
        try:
            ctx.ownership.mark_owned(
                decision.row_key,
                decl.state_id,
                decl.stored(),
                identity.live_fingerprint(family, after.merged()),
            )
        except SaltProxmoxError as unsaved:
            lines += [f"{what}: {unsaved}", _unrecorded(decision)]
    return outcome.fail(*lines)


def _read_back_lines(
    ctx: PveContext,
    family: Family,
    decl: Declaration,
    after: GuestConfig | None,
    sending: list[str],
    unseen: str = "",
) -> tuple[list[str], list[str], list[str]]:
    """``(lines, landed, pending)`` for the config ``after`` read back after a failed write of
    ``sending``: each key is in effect, pending until the next start, or not written, judged as a
    plan judges (``judge_guest`` with ``decl`` as the declaration applied before); ``landed`` the
    keys in effect or pending, ``pending`` those waiting. Nothing when ``after`` was not read."""
    what = family.what(decl.vmid, decl.node)
    if after is None:
        return [], [], []
    verdict = judge_guest(family, decl, after, decl, styled(ctx, decl))
    in_effect = [key for key in sending if key not in verdict.drift_in_effect]
    pending = [key for key in sending if key in verdict.waiting]
    missing = [key for key in sending if key not in in_effect and key not in pending]
    parts = [
        f"{label}: {', '.join(keys)}"
        for label, keys in (
            ("in effect", in_effect),
            (f"pending until the {family.noun} restarts", pending),
            ("not written", missing),
        )
        if keys
    ]
    if not in_effect and not pending:
        parts.insert(0, "none of it is in effect or pending")
    lines = [f"{what}: read back after the failed write ({PENDING_FIRST}): {'; '.join(parts)}.{unseen}"]
    if pending:
        lines.append(_waiting_line(family, decl, pending))
    lines.append("The next run judges what is pending as written and writes only what still differs.")
    return lines, [*in_effect, *pending], pending


def adhoc_declaration(
    ctx: PveContext, family: Family, vmid: object, config: Mapping[str, object]
) -> tuple[str, dict]:
    """For an ad-hoc write: the state id that owns ``vmid`` and its recorded declaration with
    ``config`` merged over it, so an ad-hoc call never re-labels or shrinks an owned row.

    Raises DeclarationError for a ``vmid`` that is not one (``vmid_number``).
    """
    number = vmid_number(vmid)
    row = ctx.ownership.row(row_key(ctx.target.name, family.kind, number)) or {}
    declared = dict(row.get("declared") or {})
    declared.update(config)
    declared["vmid"] = number
    return str(row.get("state_id") or f"adhoc-{number}"), declared


def owned_guest(
    ctx: PveContext, family: Family, node: object, vmid: object, action: tuple[str, str]
) -> tuple[Declaration, dict]:
    """For an ad-hoc write (``action``: what it does and what is then not done, ``("resize",
    "resized")``) to guest ``vmid`` on ``node``:
    its declaration (vmid, node) and its ``owned`` row, after the checks a state makes before it
    writes: the row is ``owned`` (this minion made or adopted it) and the guest on ``node`` carries
    the row's fingerprint (another guest at a recycled vmid does not: ``identity.check``).

    Raises DeclarationError (vmid or node malformed), Refused (not ours, absent, elsewhere, or not
    carrying the fingerprint), PveError, PveUnreachable, CredentialError.
    """
    number = vmid_number(vmid)
    decl = family.parse("adhoc", vmid=number, node=node, target=ctx.target.name)
    what = family.what(number, decl.node)
    row = ctx.ownership.row(row_key(ctx.target.name, family.kind, number))
    if row is None or row.get("phase") != OWNED:
        why = "its create is recorded as unfinished" if row else "this minion did not create it"
        raise Refused(
            f"{what} is not recorded as ours ({why}), so it is not {action[1]}. Nothing is taken over "
            f"silently: declare it in a {family.state} state with adopt: true first."
        )
    live = read_live(ctx, family, decl.node, number)
    if live is None:
        raise Refused(
            f"{what}: the cluster lists no guest with this vmid, so there is nothing to {action[0]}."
        )
    # The same identity check a state makes: a row authorizes writes to the guest we made only.
    recorded = identity.recorded_declaration(family, "adhoc", ctx.target.name, row, number, decl.node)
    found = identity.check(family, row, live.merged(), recorded, styled(ctx, recorded))
    if found.differs:
        raise Refused(identity.not_ours(what, found, "write"))
    if not identity.generated_keys(family, identity.live_fingerprint(family, live.merged()), recorded.config):
        raise Refused(identity.indistinct(what, "write"))
    return decl, row


def resize(ctx: PveContext, family: Family, node: object, vmid: object, disk: object, size: object) -> str:
    """Grow one volume of a guest this minion owns (``proxmox.lxc_resize``), as a task awaited
    with the provision credential that started it; returns its UPID.

    An ad-hoc write obeys ownership as a state does (``owned_guest``): a guest with no ``owned``
    row is refused, as ``proxmox.lxc_update`` refuses it, and so is a guest that does not carry the
    row's fingerprint. The guest must be on ``node`` (``read_live``). After the task, the row's
    fingerprint is recorded from the read-back.

    Raises DeclarationError (vmid, node, disk or size malformed: ``family.resize``, pve-container
    ``src/PVE/API2/LXC.pm`` ``resize_vm`` schema), Refused (not ours, absent, or elsewhere),
    PveError, TaskFailed, Uncertain.
    """
    number = vmid_number(vmid)
    form = {"disk": str(disk), "size": str(size)}
    check_form(family.resize, form, presence=True)
    decl, row = owned_guest(ctx, family, node, number, ("resize", "resized"))
    key = row_key(ctx.target.name, family.kind, number)
    path = f"{guest_path(family, decl.node, number)}/resize"
    upid = ctx.task("PUT", path, decl.node, f"grow {disk} of {family.label} {number} to {size}", form)
    # Our own write changed a volume's size: the fingerprint follows it, as after a state's write.
    after = read_live(ctx, family, decl.node, number)
    if after is not None:
        ctx.ownership.mark_owned(
            key,
            str(row.get("state_id") or "adhoc"),
            dict(row.get("declared") or {}),
            identity.live_fingerprint(family, after.merged()),
        )
    return upid


def _create(
    ctx: PveContext,
    family: Family,
    decl: Declaration,
    written: list[str] | None = None,
    earlier: Mapping[str, object] | None = None,
    sending: list[str] | None = None,
) -> None:
    """Run the family's create steps (``Family.create``), each a task awaited with the one
    provision credential minted for the create (bounded by ``ctx.create_polls`` polls each).

    The ownership row turns ``creating`` just before the first request, from ``earlier`` (the row
    the decision read: a row another process wrote since refuses the create, nothing sent:
    ``Ownership.mark_creating``), recording the provision ``token`` that sends it; the first
    step's UPID is added once PVE answers it (``Ownership.note_task``), so a later run can tie the
    guest to this create (``identity.creation_tie``). PVE refusing it, or its task failing, restores
    the row that was there when the stored row is still ours (a failed create removes what it
    made: pve-container ``src/PVE/API2/LXC.pm`` ``create_vm`` runs ``destroy_disks`` and
    ``destroy_config`` before it dies, qemu-server ``PVE/API2/Qemu.pm`` ``create_vm`` likewise), so
    no row claims a guest that is not there, and a row another process wrote meanwhile is kept. Once
    the guest exists, a later step that fails keeps the ``creating`` row, as an uncertain end does:
    the next run finishes it when it can tie it to this create. Each step that went through is
    added to ``written`` (its ``what``); ``sending`` holds the keys of a config write step
    (``…/config``) while it is under way."""
    key = row_key(decl.target, family.kind, decl.vmid)
    minted: list[Credential] = []

    def credential() -> Credential:
        if not minted:
            minted.append(ctx.broker.provision(need_seconds=ctx.create_polls * ctx.poll_interval))
        return minted[0]

    steps = family.create(ctx, decl, credential)
    step = next(steps, None)
    ctx.ownership.mark_creating(key, decl.state_id, decl.stored(), token=credential().token_id)
    first = True
    while step is not None:
        if sending is not None and step.path.endswith("/config"):
            sending[:] = form_keys(step.form)
        try:
            upid = start_task(ctx.client, credential(), step.method, step.path, step.what, step.form)
        except (PveError, PveUnreachable):
            # PVE refused, or no member accepted the connection: nothing started, so the row must not
            # claim a create did.
            if first:
                ctx.ownership.restore(key, earlier)
            raise
        if first:
            ctx.ownership.note_task(key, upid)
        try:
            ctx.await_task(credential(), decl.node, upid, step.what, ctx.create_polls)
        except TaskFailed:
            if first:
                ctx.ownership.restore(key, earlier)
            raise
        first = False
        if sending:
            sending.clear()
        if written is not None:
            written.append(step.what)
        step = next(steps, None)


def config_form(
    family: Family, change: Change, secrets: Mapping[str, str], digest: str
) -> dict[str, str] | None:
    """The config write of ``change``: its puts, its clears as ``delete`` (comma-separated), the
    ``digest`` the judged config had (PVE refuses the write when the config changed since:
    pve-common ``PVE/Tools.pm`` ``assert_if_modified``) and ``secrets``; None when it writes
    nothing. Raises DeclarationError (``check_form`` on ``family.update``); nothing is sent."""
    if not (change.put or change.clear or secrets):
        return None
    form = dict(change.put)
    if change.clear:
        form["delete"] = ",".join(change.clear)
    form["digest"] = digest
    form.update(secrets)
    check_form(family.update, form, presence=False, secrets=secrets)
    return form


def _send_config(
    ctx: PveContext,
    family: Family,
    decl: Declaration,
    form: Mapping[str, str],
    task: str | None,
    sending: list[str],
) -> None:
    """Send one digest-guarded config write: ``PUT …/config`` with a fresh provision credential, or,
    when ``task`` says why (``Family.config_task``), ``POST …/config`` as a task awaited with the
    credential that started it (``PveContext.task``). ``sending`` holds the form's keys while it is
    under way and is emptied once it went through. Raises what the client and ``ctx.task`` raise."""
    path = f"{guest_path(family, decl.node, decl.vmid)}/config"
    sending[:] = form_keys(form)
    if task:
        what = f"write {', '.join(sending)} to {family.label} {decl.vmid}"
        ctx.task("POST", path, decl.node, what, form)
    else:
        ctx.client.request("PUT", path, ctx.broker.provision(), form=form)
    sending.clear()


def form_keys(form: Mapping[str, str]) -> list[str]:
    """The config keys a config write's form writes or deletes (``delete`` split; ``digest`` and
    ``revert`` are not keys of the config)."""
    keys = [key for key in form if key not in ("digest", "delete", "revert")]
    return [*keys, *(key for key in str(form.get("delete") or "").split(",") if key)]


def _update(
    ctx: PveContext,
    family: Family,
    decl: Declaration,
    decision: Decision,
    written: list[str],
    sending: list[str],
) -> None:
    """One digest-guarded config write (and a second one for a VM change's ``after`` keys, guarded
    by the digest the first left), each a ``PUT`` or, where ``decision.task``/``after_task`` says
    why, a ``POST …/config`` task (``_send_config``); then a resize task per grown disk. Each step
    that went through is added to ``written`` (the keys the writes wrote; ``<disk> grown to
    <size>``); ``sending`` holds the keys of a config write under way."""
    change = decision.change
    path = guest_path(family, decl.node, decl.vmid)
    # Secret keys the judge asks to write (a VM's ``cipassword``): their values come from the
    # declaration into this one form and nowhere else.
    secrets = {key: decl.secrets[key] for key in getattr(change, "secrets", ())}
    form = config_form(family, change, secrets, str(decision.live["digest"]))
    if form is not None:
        _send_config(ctx, family, decl, form, decision.task, sending)
        written.extend([*change.put, *change.clear, *secrets])
        after = getattr(change, "after", {})
        if after:
            # A second write the plan named (a VM's boot beside a CD-ROM PVE appends to it), guarded
            # by the digest the first one left.
            done = ctx.client.request("GET", f"{path}/config", ctx.broker.read(), params={"current": "1"})
            form = {**after, "digest": str((done or {}).get("digest", ""))}
            check_form(family.update, form, presence=False)
            _send_config(ctx, family, decl, form, decision.after_task, sending)
            written.extend(after)
    for disk, size in change.resize:
        form = {"disk": disk, "size": size}
        check_form(family.resize, form, presence=True)
        ctx.task(
            "PUT",
            f"{path}/resize",
            decl.node,
            f"grow {disk} of {family.label} {decl.vmid} to {size}",
            form=form,
        )
        written.append(f"{disk} grown to {size}")


def absent(
    ctx: PveContext,
    family: Family,
    state_id: str,
    test: bool,
    vmid: object,
    node: object,
    removal: object = "retain",
) -> Outcome:
    """Retain (default: forget ownership, touch nothing) or destroy a guest we made.

    ``removal: destroy`` deletes only a guest that still matches its last declaration, with no
    ``force``/``purge``; PVE's refusal of a running or protected guest (pve-container
    ``src/PVE/API2/LXC.pm`` ``destroy_vm``, qemu-server ``PVE/API2/Qemu.pm`` ``destroy_vm``) is
    predicted at plan (``guest.refusals``).
    A destroy task that ended ``WARNINGS: N`` is a success whose note ends the comment.
    """
    outcome = _absent(ctx, family, state_id, test, vmid, node, removal)
    outcome.comment.extend(ctx.take_notes())
    return outcome


def _absent(
    ctx: PveContext, family: Family, state_id: str, test: bool, vmid: object, node: object, removal: object
) -> Outcome:
    outcome = Outcome()
    try:
        decl = family.parse(state_id, vmid=vmid, node=node, target=ctx.target.name, removal=removal)
    except DeclarationError as exc:
        return outcome.refuse(exc)
    key = row_key(decl.target, family.kind, decl.vmid)
    what = family.what(decl.vmid, decl.node)
    try:
        row = ctx.ownership.row(key)
    except SaltProxmoxError as exc:
        return outcome.fail(f"{state_id}: {exc}", "Nothing was written.")
    if decl.removal == "retain":
        return forget_ownership(outcome, ctx.ownership, key, row, what, test)
    try:
        if row is None:
            # Destroyed already (by an earlier run, or by hand): the same absent state is clean on every
            # later run. A guest that is there is not ours to destroy.
            if read_live(ctx, family, decl.node, decl.vmid) is None:
                outcome.comment.append(f"{what} is absent")
                return outcome
            return outcome.fail(
                f"{what} is not recorded as ours, so it is not destroyed. Nothing was deleted."
            )
        last = identity.recorded_declaration(family, state_id, decl.target, row, decl.vmid, decl.node)
        live = read_live(ctx, family, last.node, last.vmid)
        if live is None:
            return forget_ownership(outcome, ctx.ownership, key, row, what, test, already_absent=True)
        if row.get("phase") == CREATING:
            # Nothing shows the guest there is the one our unfinished create made: never destroyed.
            return outcome.fail(
                f"destroy {what}: its ownership row records a create of ours as unfinished, so nothing "
                "shows the guest at this vmid is the one it made. Nothing was deleted. Run its "
                f"{family.state}.present state first (it records the guest as ours when the node's task list "
                "ties it to our create, or with adopt: true after you checked it), or destroy it by hand "
                f"(`{family.command} destroy {decl.vmid}`)."
            )
        checked = identity.check(family, row, live.merged(), last, styled(ctx, last))
        if checked.differs:
            return outcome.fail(identity.not_ours(what, checked, "delete"))
        # "Still matches" judges what the guest runs with, not what waits for its next start.
        drift = family.judge(last, live.in_effect(), styled(ctx, last)).drift
        if drift:
            return outcome.fail(
                f"destroy {what}: the guest no longer matches its last declaration ({', '.join(drift)}), "
                "so it may not be the guest this state made. Nothing was deleted: delete it by hand if it "
                "should go."
            )
        unknown = identity.unknown_volumes(family, last, live.merged())
        if unknown:
            return outcome.fail(
                f"destroy {what}: it has volumes its declaration does not know: {', '.join(unknown)}. A "
                "destroy deletes every volume the guest's config names, so nothing was deleted. Declare "
                "them, or detach and keep or delete them by hand first."
            )
        if not identity.generated_keys(family, identity.live_fingerprint(family, live.merged()), last.config):
            return outcome.fail(identity.indistinct(what, "delete"))
        if checked.legacy:
            outcome.comment.append(
                f"{what}: its ownership row was written before fingerprints existed; the guest matches the "
                "declaration recorded with it exactly, which is all that could be checked"
            )
        refusals = destroy_refusals(ctx, family, last.node, last.vmid, live.in_effect())
        if refusals:
            return outcome.fail(*refusals, "Nothing was deleted.")
        outcome.changes = {"destroyed": {"old": family.what(last.vmid, last.node), "new": None}}
        if test:
            outcome.result = None
            outcome.comment.append(f"{what}: would be destroyed (no force, no purge)")
            return outcome
        ctx.task(
            "DELETE",
            guest_path(family, last.node, last.vmid),
            last.node,
            f"destroy {family.label} {last.vmid}",
        )
    except SaltProxmoxError as exc:
        outcome.changes = {}
        return outcome.fail(str(exc), "Nothing was deleted unless a task UPID is named above.")
    ctx.ownership.forget(key)
    outcome.comment.append(f"{what} has been destroyed")
    return outcome
