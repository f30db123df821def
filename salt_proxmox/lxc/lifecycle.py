"""The calls a container makes, and the plan/apply of ``proxmox_lxc.present``/``absent``.

Read (docs/design.md §6): ``GET nodes/{node}/lxc/{vmid}/config`` with the ``read`` credential. A success
must carry a non-empty ``digest`` (every real config has one: pve-guest-common
``AbstractConfig::load_config`` adds it), else it is an error. Only PVE's exact missing-config
answer may lead to absence, and only after ONE ``GET cluster/resources?type=vm`` with the SAME
credential: pve-container ``src/PVE/API2/LXC/Config.pm`` checks VM.Audit on ``/vms/{vmid}``
before the missing-config error, and pve-manager ``src/PVE/API2/Cluster.pm`` filters the index
rows by that same privilege, so only the same token's index speaks for this vmid. The vmid
listed nowhere is absent; listed on the declared node as an lxc is PVE's own error; listed
elsewhere is refused naming its type and node (vmids are cluster-wide).

Plan and apply call the same ``_decide``; apply decides again on a fresh read, then writes:
create as a POST task, update as one digest-guarded config PUT followed by one resize task per
grown disk, each with a freshly minted ``provision`` credential polled by its owner; then reads
back and judges again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from salt_proxmox.errors import DeclarationError, Refused, SaltProxmoxError, Uncertain
from salt_proxmox.guest.pending import GuestConfig, PendingRowsError
from salt_proxmox.lowstate import Chunk
from salt_proxmox.lxc import guest, schema
from salt_proxmox.lxc.judge import (
    Change,
    Verdict,
    create_form,
    create_refusals,
    creates_unprivileged,
    identity_refusals,
    judge,
    judge_guest,
    key_change,
    live_text,
    operator_view,
    release_refusals,
    split_by_effect,
    uses_new_options,
)
from salt_proxmox.lxc.props import LxcDeclaration, parse_declaration, vmid_number
from salt_proxmox.lxc.refusals import (
    check_own_sys_modify,
    destroy_refusals,
    privileged_create_check,
    read_status,
)
from salt_proxmox.openbao.creds import CredentialBroker
from salt_proxmox.outcome import Outcome, forget_ownership
from salt_proxmox.ownership import CREATING, OWNED, Ownership, row_key
from salt_proxmox.pve.client import Credential, PveClient, Target, api_path
from salt_proxmox.pve.constraints import check_form
from salt_proxmox.pve.errors import PveConfigMissing, PveError, PveMalformed, PveUnreachable
from salt_proxmox.pve.facts import DEFAULT_TAG_STYLE, Release, TagStyle, release, tag_style
from salt_proxmox.pve.readahead import ReadAhead
from salt_proxmox.pve.tasks import (
    CREATE_POLLS,
    POLL_INTERVAL,
    TASK_POLLS,
    TaskFailed,
    await_task,
    start_task,
    warnings_note,
)

FAMILY = "lxc"
#: The Salt state module that declares containers.
STATE = "proxmox_lxc"


@dataclass
class PveContext:
    """Everything one target's calls need within one Salt run.

    ``client`` sends; ``broker`` hands out credentials; ``ownership`` keeps rows; ``sleep`` and
    ``poll_interval`` (seconds) drive task polling (tests pass a no-op sleep). ``create_polls``
    and ``task_polls`` bound the polls of a create and of any other task (``pve.tasks``'
    ``CREATE_POLLS``/``TASK_POLLS``; tests lower them to meet a task still running at its bound).
    ``reads`` holds the run's reads ahead and what the run learned once for all its states (its
    ``memo``: the cluster's release and tag style, a failed network apply), both dropped when
    another run begins (``salt_proxmox.pve.readahead``).
    ``notes`` collects what a task that succeeded with warnings left to say (``take_notes``).
    """

    target: Target
    client: PveClient
    broker: CredentialBroker
    ownership: Ownership
    sleep: Callable[[float], None] | None = None
    poll_interval: float = POLL_INTERVAL
    create_polls: int = CREATE_POLLS
    task_polls: int = TASK_POLLS
    reads: ReadAhead = field(default_factory=ReadAhead)
    notes: list[str] = field(default_factory=list)

    def task(self, method: str, path: str, node: str, what: str, form=None, polls: int | None = None) -> str:
        """Run one task with a fresh provision credential, polled by that same credential
        (at most ``polls`` polls, ``task_polls`` unless given)."""
        polls = self.task_polls if polls is None else polls
        credential = self.broker.provision(need_seconds=polls * self.poll_interval)
        upid = start_task(self.client, credential, method, path, what, form)
        self.await_task(credential, node, upid, what, polls)
        return upid

    def await_task(self, credential, node: str, upid: str, what: str, polls: int) -> None:
        """Poll ``upid`` with ``credential`` (its owner), bounded by ``polls``; a task that ended
        ``WARNINGS: N`` succeeded, and its note goes to ``notes``."""
        kwargs = {"sleep": self.sleep} if self.sleep is not None else {}
        count = await_task(self.client, credential, node, upid, what, polls, self.poll_interval, **kwargs)
        if count:
            self.notes.append(warnings_note(what, node, upid, count))

    def take_notes(self) -> list[str]:
        """The task notes gathered since the last call, handed over once."""
        notes, self.notes = self.notes, []
        return notes


def chunk_keys(chunk: Chunk, default_target: str | None) -> frozenset[str]:
    """The ownership row key (``<target>/lxc/<vmid>``) a run chunk declares, or none when its
    target or vmid cannot be read (it is refused when it runs). vmids are cluster-wide, so the
    node is no part of it."""
    target = chunk.target(default_target)
    try:
        return (
            frozenset()
            if target is None
            else frozenset({row_key(target, FAMILY, vmid_number(chunk.args.get("vmid")))})
        )
    except DeclarationError:
        return frozenset()


def guest_path(node: str, vmid: int) -> str:
    """``nodes/{node}/lxc/{vmid}``, labels encoded."""
    return api_path("nodes", node, "lxc", vmid)


def config_path(node: str, vmid: int) -> str:
    """``nodes/{node}/lxc/{vmid}/pending``, the read every container state starts with: the config
    rows with the values in effect and the pending ones (``salt_proxmox.guest.pending``)."""
    return f"{guest_path(node, vmid)}/pending"


def read_ahead(ctx: PveContext, declarations: Iterable[Mapping[str, object]]) -> int:
    """Read ahead the config of every container the run declares on this target,
    ``ctx.target.concurrency`` at a time (``salt_proxmox.pve.readahead``); returns how many were
    sent.

    ``declarations``: the arguments of the run's ``proxmox_lxc.present`` states on this target.
    Only ``vmid`` and ``node`` are read; a declaration whose vmid or node ``parse_declaration``
    refuses is skipped (its state reads nothing). Never raises: without a read credential nothing
    is read ahead, and each state meets that failure on its own.
    """
    paths = []
    for declared in declarations:
        try:
            decl = parse_declaration(
                "read-ahead", vmid=declared.get("vmid"), node=declared.get("node"), target=ctx.target.name
            )
        except DeclarationError:
            continue
        paths.append(config_path(decl.node, decl.vmid))
    if not paths:
        return 0
    try:
        credential = ctx.broker.read()
    except SaltProxmoxError:
        return 0
    return ctx.reads.fill(ctx.client, credential, paths, ctx.target.concurrency)


def _valid_row(row: object) -> bool:
    if not isinstance(row, Mapping):
        return False
    vmid = row.get("vmid")
    if isinstance(vmid, bool):
        return False
    try:
        number = int(vmid) if isinstance(vmid, int | str) else None
    except ValueError:
        number = None
    node = row.get("node")
    return (
        number is not None
        and number > 0
        and str(number) == str(vmid).strip()
        and isinstance(node, str)
        and node != ""
        and row.get("type") in ("lxc", "qemu")
    )


def indexed_guest(ctx: PveContext, vmid: int, credential: Credential | None = None) -> dict | None:
    """The row of ``vmid`` in the cluster's guest index (one ``GET cluster/resources?type=vm``, with
    ``credential`` or the read one), or None when no guest holds it. pve-manager
    ``PVE/API2/Cluster.pm`` ``resources`` lists every guest of every node the caller may audit.

    Raises PveMalformed when a row lacks a positive vmid, a node or a type of lxc/qemu (such an index
    cannot prove a vmid free), and what the client raises."""
    rows = ctx.client.request(
        "GET", "cluster/resources", credential or ctx.broker.read(), params={"type": "vm"}
    )
    if not isinstance(rows, list) or not all(_valid_row(row) for row in rows):
        raise PveMalformed(
            "GET",
            "cluster/resources?type=vm",
            "the guest index has rows without a positive vmid, a node or a type of lxc/qemu, so it cannot "
            "prove the vmid free",
        )
    return next((row for row in rows if int(row["vmid"]) == vmid), None)


def operator_config(ctx: PveContext, vmid: int, node: str | None = None) -> dict[str, str]:
    """What ``proxmox.lxc_config`` answers: CT ``vmid``'s config with its pending changes merged in (what
    it runs with after its next start, as ``pct config`` shows it), description included
    (``judge.operator_view``). ``node`` None: found in the guest index (``indexed_guest``).

    Raises Refused with a sentence when no container holds ``vmid`` (none in the index, a VM there, or
    the cluster proves it absent on ``node``), and what read_live raises."""
    if node is None:
        row = indexed_guest(ctx, vmid)
        if row is None:
            raise Refused(f"CT {vmid} does not exist: the cluster's guest index lists no guest {vmid}.")
        if row["type"] != "lxc":
            raise Refused(f"vmid {vmid} is a {row['type']} guest on node {row['node']}, not a container.")
        node = row["node"]
    live = read_live(ctx, node, vmid)
    if live is None:
        raise Refused(f"CT {vmid} does not exist: the cluster's guest index lists no guest {vmid}.")
    return operator_view(live.merged())


def read_live(ctx: PveContext, node: str, vmid: int) -> GuestConfig | None:
    """The config of CT ``vmid`` on ``node`` (values in effect and pending changes, from one
    ``GET …/pending``: ``salt_proxmox.guest.pending``), or None when the cluster proves it absent.

    Raises PveError (PVE's own answer, including a 403 or a generic 500), PveMalformed (a 200
    without digest-bearing config rows, or a guest index whose rows lack vmid/node/type), Refused
    (the vmid is held elsewhere), PveUnreachable or CredentialError. Never folds a failure into
    absence.
    """
    credential = ctx.broker.read()
    path = config_path(node, vmid)
    try:
        rows = ctx.reads.get(ctx.client, path, credential)
    except PveConfigMissing as missing:
        error = missing
    else:
        try:
            return GuestConfig.from_rows(rows)
        except PendingRowsError as exc:
            raise PveMalformed("GET", path, str(exc)) from None
    found = indexed_guest(ctx, vmid, credential)
    if found is None:
        return None
    if found["node"] == node and found["type"] == "lxc":
        raise error
    raise Refused(
        f"vmid {vmid} is a {found['type']} guest on node {found['node']}, not a container on {node}. "
        "A migration is not an update and vmids are cluster-wide: declare the node it is on, or pick a "
        "free vmid."
    )


def styled(ctx: PveContext, decl: LxcDeclaration) -> TagStyle:
    """The tag style to judge ``decl`` with: the datacenter's (read once per run) when it declares
    tags, else the default, so a plan without tags spends no read on it."""
    return tag_style(ctx) if decl.config.get("tags") else DEFAULT_TAG_STYLE


def _changes(change: Change, live: Mapping[str, object]) -> dict:
    out: dict = {}
    for key, value in change.put.items():
        out[key] = key_change(key, live_text(live.get(key)), value)
    for key in change.clear:
        out[key] = key_change(key, live_text(live.get(key)), "")
    if change.resize:
        out["disks"] = {
            disk: {"old": _size_of(live_text(live.get(disk))), "new": size} for disk, size in change.resize
        }
    return out


def _waiting_changes(keys: list[str], config: GuestConfig) -> dict:
    """Declared values PVE holds pending: ``old`` in effect, ``new`` waiting for the next start."""
    return {
        key: key_change(
            key,
            live_text(config.current.get(key)),
            live_text(config.pending[key]) if key in config.pending else "",
        )
        for key in keys
    }


def _size_of(value: str | None) -> str | None:
    if not value:
        return None
    return dict(part.split("=", 1) for part in value.split(",")[1:] if "=" in part).get("size")


def read_running(ctx: PveContext, node: str, vmid: int) -> bool:
    """Whether CT ``vmid`` runs: ``GET …/status/current`` with the ``read`` credential (VM.Audit,
    pve-container ``src/PVE/API2/LXC/Status.pm`` ``vm_status``). Read only when a change's effect
    depends on it. Raises PveMalformed for an answer without a ``status`` word, and what the client
    raises."""
    return read_status(ctx, node, vmid) == "running"


@dataclass
class Decision:
    """What ``present`` would do: ``action`` is ``create``, ``update``, ``noop`` or ``refuse``.

    ``live``: the config with pending changes merged (``digest`` included), ``config`` the read it
    came from and ``verdict`` the judge's answer on it. ``running``: read only when a change's
    effect depends on it (else None). ``now``/``later``: the keys a write puts in effect at once,
    and those PVE keeps pending until the next start. ``reboot``: the apply reboots the container
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


def _ours(decl: LxcDeclaration, row: Mapping[str, object] | None) -> LxcDeclaration | None:
    """The declaration this state's ownership row recorded (``guest.recorded_declaration``), or
    None when there is no row or it holds none that parses."""
    if not row:
        return None
    try:
        return guest.recorded_declaration(decl.state_id, decl.target, row, decl.vmid, decl.node)
    except Refused:
        return None


def _reboot_problem(decl: LxcDeclaration, verdict: Verdict, running: bool | None) -> str:
    """Why ``reboot_for_pending`` may not reboot now ('' when it may). A reboot makes EVERY
    pending change live, so one this state does not declare forbids it; a stopped container
    takes its pending changes when it starts, and is never started here."""
    what = f"CT {decl.vmid} on {decl.node}"
    if verdict.undeclared:
        return (
            f"{what} is not rebooted: changes this state does not declare are pending too, and a reboot "
            "would make them live. Revert or declare them first."
        )
    if running is False:
        return f"{what} is not running; its pending changes take effect when it starts (not started here)."
    return ""


def _effects(ctx: PveContext, decl: LxcDeclaration, decision: Decision) -> None:
    """Fill ``running``, ``now``, ``later`` and ``reboot`` of an update or noop decision. The
    guest's power state is read only when a key of the write would wait on a running guest, or a
    pending change could be rebooted into effect."""
    verdict, config = decision.verdict, decision.config
    assert verdict is not None and config is not None
    later_if_running = split_by_effect(verdict, config, running=True)[1]
    if later_if_running or (verdict.waiting and decl.reboot_for_pending):
        decision.running = read_running(ctx, decl.node, decl.vmid)
    decision.now, decision.later = split_by_effect(verdict, config, running=bool(decision.running))
    if decl.reboot_for_pending and (decision.later or verdict.waiting):
        decision.reboot_note = _reboot_problem(decl, verdict, decision.running)
        decision.reboot = not decision.reboot_note


def _decide(ctx: PveContext, decl: LxcDeclaration) -> Decision:
    """The one decision plan and apply share (docs/design.md §6 Plan, §8)."""
    key = row_key(decl.target, FAMILY, decl.vmid)
    row = ctx.ownership.row(key)
    previous = ctx.ownership.for_state(decl.target, FAMILY, decl.state_id)
    recorded = (previous[1].get("declared") if previous else None) or (row or {}).get("declared")
    identity = identity_refusals(decl, recorded)
    if identity:
        return Decision("refuse", reasons=identity, row_key=key, row=row)
    what = f"CT {decl.vmid} on {decl.node}"
    if row and row.get("state_id") not in (None, decl.state_id) and not decl.adopt:
        return Decision("refuse", row_key=key, row=row, reasons=[
            f"{what} is declared by state {row.get('state_id')!r} already; two states cannot manage one "
            "guest. Remove one declaration, or declare adopt: true here to move it to this state."
        ])  # fmt: skip
    config = read_live(ctx, decl.node, decl.vmid)
    if config is None:
        cluster = release(ctx)
        refusals = create_refusals(decl, cluster)
        checked: list[str] = []
        if not refusals and _needs_sys_modify(decl, cluster):
            refusals, checked = privileged_create_check(ctx)
        if refusals:
            return Decision("refuse", reasons=refusals, row_key=key, row=row)
        if row and row.get("phase") != CREATING:
            note = (
                f"{what}: the cluster lists no guest with this vmid although it was ours; would CREATE "
                "it AGAIN from ostemplate with new, empty volumes"
            )
        elif row:
            note = f"{what}: an earlier create did not finish and the guest is absent; would create it"
        else:
            note = f"{what}: would be created from {decl.ostemplate}"
        if "unprivileged" not in decl.config:
            kind = "unprivileged" if creates_unprivileged(decl, cluster) else "privileged"
            note += f" as {kind} (PVE {cluster.release}'s default: unprivileged is not declared)"
        return Decision("create", live=None, notes=[note, *checked], row_key=key, row=row)
    verdict = judge_guest(decl, config, _ours(decl, row), styled(ctx, decl))
    change = verdict.change
    if uses_new_options(decl):
        change.refuse.extend(release_refusals(decl, release(ctx)))
    live = config.merged()
    # Adopt checks judge what the guest runs with, not what waits for its next start.
    differs = verdict.drift_in_effect
    notes: list[str] = []
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
        if differs:
            return Decision(
                "refuse",
                **found,
                reasons=[
                    f"{what} exists with a create of ours recorded as unfinished, but it differs in "
                    f"{', '.join(differs)}, so it may not be ours. Check it, then declare "
                    "adopt: true or pick another vmid."
                ],
            )
        notes.append(f"{what}: our interrupted create matches its declaration; it is recorded as ours")
        record = True
    else:
        recorded = guest.recorded_declaration(decl.state_id, decl.target, row, decl.vmid, decl.node)
        checked = guest.check(row, live, recorded, styled(ctx, recorded))
        if checked.differs and not decl.adopt:
            reason = guest.not_ours(what, checked, "write")
            return Decision("refuse", **found, reasons=[reason])
        if checked.differs:
            notes.append(
                f"{what}: adopt: true, so it is taken over as it is now; its fingerprint is recorded anew"
            )
            fingerprint = "another guest's"
        elif checked.legacy:
            notes.append(guest.legacy_note(what))
            fingerprint = "none recorded"
        if (row.get("declared") or {}).get("node") not in (None, decl.node):
            notes.append(
                f"{what}: the guest is on {decl.node} now; its record follows it, nothing is written"
            )
            record = True
        record = record or fingerprint is not None
    notes.extend(verdict.undeclared)
    if verdict.refuse:
        return Decision("refuse", **found, reasons=verdict.refuse, notes=notes, others=True)
    decision = Decision(
        "update" if change.drift else "noop", **found, notes=notes, record=record, fingerprint=fingerprint
    )
    _effects(ctx, decl, decision)
    return decision


def present(ctx: PveContext, state_id: str, test: bool, **declared) -> Outcome:
    """Plan (``test``) or apply one container declaration; never raises for a known failure.

    ``declared``: ``vmid``, ``node``, ``adopt``, ``removal``, ``reboot_for_pending`` and the config
    keys (``hostname``, ``rootfs``, ``net0``, ...), as the state received them. A task that ended
    ``WARNINGS: N`` is a success whose note ends the comment, whatever happened after it.

    On a running container PVE keeps most changes pending until its next start (pve-container
    ``src/PVE/LXC/Config.pm`` ``vmconfig_hotplug_pending``): plan and apply say which keys take
    effect at once and which wait; a declared value that waits keeps the plan from being clean
    (result None, ``changes['pending']``) without being written again. Only with
    ``reboot_for_pending: true`` does the apply reboot the container (``POST …/status/reboot``, a
    task awaited by the credential that started it) so they take effect, and only when every
    pending change is one this state declares.
    """
    vmid, node, pool = declared.get("vmid"), declared.get("node"), declared.get("pool")
    outcome = _present(ctx, state_id, test, declared)
    if pool is not None and outcome.result is not False and "created" not in outcome.changes:
        # Validated by _present's parse (a bad pool fails it, result False).
        outcome = _pool_membership(ctx, vmid_number(vmid), str(node), str(pool), test, outcome)
    outcome.comment.extend(ctx.take_notes())
    return outcome


def _pool_membership(
    ctx: PveContext, vmid: int, node: str, pool: str, test: bool, outcome: Outcome
) -> Outcome:
    """Keep an existing CT in its declared pool (``''``: in none), compared as PVE lists membership:
    the ``pool`` of its row in ``GET cluster/resources`` (pve-manager ``PVE/API2/Cluster.pm``).

    A move is one ``PUT /pools/{poolid}`` with ``vms=<vmid>`` (and ``allow-move=1`` when it leaves
    another pool), a removal one ``PUT /pools/{old}`` with ``vms=<vmid>&delete=1``
    (pve-manager ``PVE/API2/Pool.pm`` ``update_pool``), then membership is read again. Members are
    the guest's to declare: ``proxmox_pool`` never compares them, so an owned pool is not drift."""
    what = f"CT {vmid} on {node}"
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


def _refused(outcome: Outcome, decl: LxcDeclaration, decision: Decision, test: bool) -> Outcome:
    """A refusal that does not hide the rest of the plan: every other change the state would make
    is listed (in ``changes`` under test), and none is written."""
    change = decision.change
    others = [*change.put, *change.clear, *(disk for disk, _ in change.resize)]
    lines = [*decision.notes, *decision.reasons]
    if others and decision.others and decision.live is not None:
        if test:
            outcome.changes = _changes(change, decision.live)
        lines.append(
            f"CT {decl.vmid} on {decl.node}: besides what is refused, it differs in {', '.join(others)}; "
            "none of it is written until the refusal is settled."
        )
    if decision.verdict is not None and decision.verdict.waiting and decision.config is not None:
        lines.append(_waiting_line(decl, decision.verdict.waiting))
    return outcome.fail(*lines, "Nothing was written.")


def _waiting_line(decl: LxcDeclaration, keys: list[str]) -> str:
    return (
        f"CT {decl.vmid} on {decl.node}: {', '.join(keys)} {'is' if len(keys) == 1 else 'are'} written but "
        f"pending until the container restarts; reboot it (`pct reboot {decl.vmid}`), or declare "
        "reboot_for_pending: true."
    )


def _effect_lines(decl: LxcDeclaration, decision: Decision) -> list[str]:
    """What the plan says about when the keys it would write take effect (only when some would
    wait: on a stopped container, or with only hot-plugged keys, everything is at once)."""
    if not decision.later:
        return []
    now = f"{', '.join(decision.now)} would take effect at once; " if decision.now else ""
    return [
        f"CT {decl.vmid} on {decl.node}: {now}{', '.join(decision.later)} would stay pending until the "
        "container restarts (it is running; PVE applies only some keys to a running container)"
    ]


def _present(ctx: PveContext, state_id: str, test: bool, declared: dict) -> Outcome:
    outcome = Outcome()
    try:
        decl = parse_declaration(
            state_id,
            vmid=declared.pop("vmid", None),
            node=declared.pop("node", None),
            target=ctx.target.name,
            adopt=declared.pop("adopt", False),
            removal=declared.pop("removal", "retain"),
            reboot_for_pending=declared.pop("reboot_for_pending", False),
            config=declared,
        )
        decision = _decide(ctx, decl)
    except DeclarationError as exc:
        return outcome.refuse(exc)
    except SaltProxmoxError as exc:
        return outcome.fail(f"{state_id}: {exc}", "Nothing was written.")
    if decision.action == "refuse":
        return _refused(outcome, decl, decision, test)
    what = f"CT {decl.vmid} on {decl.node}"
    waiting = decision.verdict.waiting if decision.verdict else []
    if decision.action == "create":
        outcome.changes = {"created": {"old": None, "new": what}}
        form = create_form(decl)
        outcome.changes.update({k: key_change(k, None, v) for k, v in form.items() if k not in ("vmid",)})
        if decl.secrets:
            outcome.comment.append(
                f"{what}: {', '.join(sorted(decl.secrets))} sent with the create only; never shown, kept or "
                "compared"
            )
    else:
        outcome.changes = _changes(decision.change, decision.live or {})
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
            outcome.comment.extend(_effect_lines(decl, decision))
        if waiting:
            assert decision.config is not None
            outcome.changes["pending"] = _waiting_changes(waiting, decision.config)
            outcome.comment.append(_waiting_line(decl, waiting))
        if decision.reboot:
            outcome.changes["rebooted"] = {"old": "pending", "new": "in effect"}
            outcome.comment.append(
                f"{what}: would be rebooted so its pending changes take effect (reboot_for_pending)"
            )
        if decision.action == "noop" and not decision.record and not waiting:
            outcome.comment.append(f"{what} is as declared")
        outcome.result = None if (outcome.changes or decision.record) else True
        return outcome
    written: list[str] = []
    try:
        if decision.action == "create":
            _create(ctx, decl)
        elif decision.action == "update":
            _update(ctx, decl, decision, written)
        # Read back only what was written; a no-drift apply costs the one read it decided on.
        after = decision.config if decision.action == "noop" else read_live(ctx, decl.node, decl.vmid)
    except SaltProxmoxError as exc:
        return _write_failed(outcome, exc, written, decision.action)
    if after is None:
        return outcome.fail(f"CT {decl.vmid}: the write returned no error but the guest is absent.")
    try:
        ctx.ownership.mark_owned(
            decision.row_key, decl.state_id, decl.stored(), guest.live_fingerprint(after.merged())
        )
    except SaltProxmoxError as exc:
        return outcome.fail(f"CT {decl.vmid} on {decl.node}: {exc}", _unrecorded(decision))
    settled = judge_guest(decl, after, decl, styled(ctx, decl))
    left = settled.change.drift
    if left:
        return outcome.fail(
            f"CT {decl.vmid}: after the write, {', '.join(left)} still differ from the declaration. PVE may "
            "store another spelling; declare what it stores."
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
    elif not decision.record and not settled.waiting:
        outcome.comment.append(f"{what} is as declared")
    if settled.waiting:
        return _pending_after(ctx, decl, decision, settled, outcome)
    return outcome


def _pending_after(
    ctx: PveContext, decl: LxcDeclaration, decision: Decision, settled: Verdict, outcome: Outcome
) -> Outcome:
    """An apply that leaves declared values pending: say so, or with ``reboot_for_pending``
    reboot the container as one task awaited by its owner and judge what it runs with then."""
    what = f"CT {decl.vmid} on {decl.node}"
    if not decl.reboot_for_pending:
        outcome.comment.append(_waiting_line(decl, settled.waiting))
        return outcome
    problem = decision.reboot_note
    try:
        if not problem:
            running = decision.running
            if running is None:
                running = read_running(ctx, decl.node, decl.vmid)
            problem = _reboot_problem(decl, settled, running)
        if problem:
            outcome.comment.extend([p for p in [problem] if p not in outcome.comment])
            outcome.comment.append(_waiting_line(decl, settled.waiting))
            return outcome
        path = guest_path(decl.node, decl.vmid)
        ctx.task(
            "POST", f"{path}/status/reboot", decl.node,
            f"reboot CT {decl.vmid} so {', '.join(settled.waiting)} take effect", polls=ctx.create_polls,
        )  # fmt: skip
        outcome.changes["rebooted"] = {"old": f"pending: {', '.join(settled.waiting)}", "new": "in effect"}
        final = read_live(ctx, decl.node, decl.vmid)
    except SaltProxmoxError as exc:
        return outcome.fail(
            str(exc), f"The config is written; {', '.join(settled.waiting)} wait until {what} restarts."
        )
    if final is None:
        return outcome.fail(f"CT {decl.vmid}: after the reboot the guest is absent.")
    still = judge_guest(decl, final, decl, styled(ctx, decl))
    if still.change.drift or still.waiting:
        return outcome.fail(
            f"{what} was rebooted, but {', '.join([*still.change.drift, *still.waiting])} still differ from "
            f"the declaration in what it runs with. Read `pct pending {decl.vmid}` on the node."
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
    grown = {name.split(" grown to ", 1)[0] for name in written if " grown to " in name}
    kept = {key: change for key, change in outcome.changes.items() if key in written}
    disks = {disk: size for disk, size in outcome.changes.get("disks", {}).items() if disk in grown}
    outcome.changes = {**kept, **({"disks": disks} if disks else {})}
    if not written and not isinstance(exc, TaskFailed):
        lines.append("Nothing was written.")
    return outcome.fail(*lines)


def adhoc_declaration(ctx: PveContext, vmid: object, config: Mapping[str, object]) -> tuple[str, dict]:
    """For an ad-hoc write: the state id that owns ``vmid`` and its recorded declaration with
    ``config`` merged over it, so an ad-hoc call never re-labels or shrinks an owned row.

    Raises DeclarationError for a ``vmid`` that is not one (``vmid_number``).
    """
    number = vmid_number(vmid)
    row = ctx.ownership.row(row_key(ctx.target.name, FAMILY, number)) or {}
    declared = dict(row.get("declared") or {})
    declared.update(config)
    declared["vmid"] = number
    return str(row.get("state_id") or f"adhoc-{number}"), declared


def resize(ctx: PveContext, node: object, vmid: object, disk: object, size: object) -> str:
    """Grow one mount point of a container this minion owns (``proxmox.lxc_resize``), as a task
    awaited with the provision credential that started it; returns its UPID.

    An ad-hoc write obeys ownership as a state does: a guest with no ``owned`` row is refused, as
    ``proxmox.lxc_update`` refuses it, and so is a guest that does not carry the row's fingerprint
    (another guest at a recycled vmid: ``lxc.guest.check``). The guest must be on ``node``
    (``read_live``). After the task, the row's fingerprint is recorded from the read-back.

    Raises DeclarationError (vmid, node, disk or size malformed: pve-container
    ``src/PVE/API2/LXC.pm`` ``resize_vm`` schema), Refused (not ours, absent, or elsewhere),
    PveError, TaskFailed, Uncertain.
    """
    number = vmid_number(vmid)
    form = {"disk": str(disk), "size": str(size)}
    check_form(schema.RESIZE, form, presence=True)
    decl = parse_declaration("adhoc", vmid=number, node=node, target=ctx.target.name)
    what = f"CT {number} on {decl.node}"
    row = ctx.ownership.row(row_key(ctx.target.name, FAMILY, number))
    if row is None or row.get("phase") != OWNED:
        why = "its create is recorded as unfinished" if row else "this minion did not create it"
        raise Refused(
            f"{what} is not recorded as ours ({why}), so it is not resized. Nothing is taken over silently: "
            "declare it in a proxmox_lxc state with adopt: true (or run proxmox.lxc_update with adopt=true) "
            "first."
        )
    live = read_live(ctx, decl.node, number)
    if live is None:
        raise Refused(f"{what}: the cluster lists no guest with this vmid, so there is nothing to resize.")
    # The same identity check a state makes: a row authorizes writes to the guest we made only.
    recorded = guest.recorded_declaration("adhoc", ctx.target.name, row, number, decl.node)
    found = guest.check(row, live.merged(), recorded, styled(ctx, recorded))
    if found.differs:
        raise Refused(guest.not_ours(what, found, "write"))
    key = row_key(ctx.target.name, FAMILY, number)
    path = f"{guest_path(decl.node, number)}/resize"
    upid = ctx.task("PUT", path, decl.node, f"grow {disk} of CT {number} to {size}", form)
    # Our own write changed a volume's size: the fingerprint follows it, as after a state's write.
    after = read_live(ctx, decl.node, number)
    if after is not None:
        ctx.ownership.mark_owned(
            key,
            str(row.get("state_id") or "adhoc"),
            dict(row.get("declared") or {}),
            guest.live_fingerprint(after.merged()),
        )
    return upid


def _needs_sys_modify(decl: LxcDeclaration, cluster: Release) -> bool:
    """A create PVE lets only a caller with Sys.Modify on / make (``lxc.refusals``)."""
    return cluster.privileged_create_needs_sys_modify and not creates_unprivileged(decl, cluster)


def _create(ctx: PveContext, decl: LxcDeclaration) -> None:
    # The create secrets go with this one POST and nowhere else (schema.CREATE_SECRETS).
    form = {**create_form(decl), **decl.secrets}
    check_form(schema.CREATE, form, presence=True)
    path = api_path("nodes", decl.node, "lxc")
    what = f"create CT {decl.vmid} on {decl.node}"
    key = row_key(decl.target, FAMILY, decl.vmid)
    credential = ctx.broker.provision(need_seconds=ctx.create_polls * ctx.poll_interval)
    if _needs_sys_modify(decl, release(ctx)):
        check_own_sys_modify(ctx, credential)
    earlier = ctx.ownership.row(key)
    ctx.ownership.mark_creating(key, decl.state_id, decl.stored())
    try:
        upid = start_task(ctx.client, credential, "POST", path, what, form)
    except (PveError, PveUnreachable):
        # PVE refused, or no member accepted the connection: nothing started, so the row must not
        # claim a create did.
        ctx.ownership.restore(key, earlier)
        raise
    try:
        ctx.await_task(credential, decl.node, upid, what, ctx.create_polls)
    except TaskFailed:
        # The task ended with an error, and a failed create removes what it made: pve-container
        # ``src/PVE/API2/LXC.pm`` create_vm runs ``destroy_disks`` and ``destroy_config`` before it
        # dies. The guest is not there, so no row may claim it (a stale ``creating`` row would let a
        # later run take over a guest somebody else creates at this vmid). Only an uncertain end
        # keeps the ``creating`` row.
        ctx.ownership.restore(key, earlier)
        raise


def _update(ctx: PveContext, decl: LxcDeclaration, decision: Decision, written: list[str]) -> None:
    """One digest-guarded config PUT, then a resize task per grown disk; each step that went
    through is added to ``written`` (the keys the PUT wrote; ``<disk> grown to <size>``)."""
    change = decision.change
    path = guest_path(decl.node, decl.vmid)
    if change.put or change.clear:
        form = dict(change.put)
        if change.clear:
            form["delete"] = ",".join(change.clear)
        form["digest"] = str(decision.live["digest"])
        check_form(schema.UPDATE, form, presence=False)
        credential = ctx.broker.provision()
        ctx.client.request("PUT", f"{path}/config", credential, form=form)
        written.extend([*change.put, *change.clear])
    for disk, size in change.resize:
        form = {"disk": disk, "size": size}
        check_form(schema.RESIZE, form, presence=True)
        ctx.task("PUT", f"{path}/resize", decl.node, f"grow {disk} of CT {decl.vmid} to {size}", form=form)
        written.append(f"{disk} grown to {size}")


def absent(
    ctx: PveContext, state_id: str, test: bool, vmid: object, node: object, removal: object = "retain"
) -> Outcome:
    """Retain (default: forget ownership, touch nothing) or destroy a container we made.

    ``removal: destroy`` deletes only a guest that still matches its last declaration, with no
    ``force``/``purge``; PVE's refusal of a running or protected guest (pve-container
    ``src/PVE/API2/LXC.pm`` ``destroy_vm``) is predicted at plan (``lxc.refusals``).
    A destroy task that ended ``WARNINGS: N`` is a success whose note ends the comment.
    """
    outcome = _absent(ctx, state_id, test, vmid, node, removal)
    outcome.comment.extend(ctx.take_notes())
    return outcome


def _absent(
    ctx: PveContext, state_id: str, test: bool, vmid: object, node: object, removal: object
) -> Outcome:
    outcome = Outcome()
    try:
        decl = parse_declaration(state_id, vmid=vmid, node=node, target=ctx.target.name, removal=removal)
    except DeclarationError as exc:
        return outcome.refuse(exc)
    key = row_key(decl.target, FAMILY, decl.vmid)
    what = f"CT {decl.vmid} on {decl.node}"
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
            if read_live(ctx, decl.node, decl.vmid) is None:
                outcome.comment.append(f"{what} is absent")
                return outcome
            return outcome.fail(
                f"{what} is not recorded as ours, so it is not destroyed. Nothing was deleted."
            )
        last = guest.recorded_declaration(state_id, decl.target, row, decl.vmid, decl.node)
        live = read_live(ctx, last.node, last.vmid)
        if live is None:
            return forget_ownership(outcome, ctx.ownership, key, row, what, test, already_absent=True)
        checked = (
            guest.check(row, live.merged(), last, styled(ctx, last))
            if row.get("phase") != CREATING
            else guest.Check()
        )
        if checked.differs:
            return outcome.fail(guest.not_ours(what, checked, "delete"))
        # "Still matches" judges what the guest runs with, not what waits for its next start.
        drift = judge(last, live.in_effect(), styled(ctx, last)).drift
        if drift:
            return outcome.fail(
                f"destroy {what}: the guest no longer matches its last declaration ({', '.join(drift)}), "
                "so it may not be the guest this state made. Nothing was deleted: delete it by hand if it "
                "should go."
            )
        unknown = guest.unknown_volumes(last, live.merged())
        if unknown:
            return outcome.fail(
                f"destroy {what}: it has volumes its declaration does not know: {', '.join(unknown)}. A "
                "destroy deletes every volume the guest's config names, so nothing was deleted. Declare "
                "them, or detach and keep or delete them by hand first."
            )
        if checked.legacy:
            outcome.comment.append(
                f"{what}: its ownership row was written before fingerprints existed; the guest matches the "
                "declaration recorded with it exactly, which is all that could be checked"
            )
        refusals = destroy_refusals(ctx, last.node, last.vmid, live.in_effect())
        if refusals:
            return outcome.fail(*refusals, "Nothing was deleted.")
        outcome.changes = {"destroyed": {"old": f"CT {last.vmid} on {last.node}", "new": None}}
        if test:
            outcome.result = None
            outcome.comment.append(f"{what}: would be destroyed (no force, no purge)")
            return outcome
        ctx.task("DELETE", guest_path(last.node, last.vmid), last.node, f"destroy CT {last.vmid}")
    except SaltProxmoxError as exc:
        outcome.changes = {}
        return outcome.fail(str(exc), "Nothing was deleted unless a task UPID is named above.")
    ctx.ownership.forget(key)
    outcome.comment.append(f"{what} has been destroyed")
    return outcome
