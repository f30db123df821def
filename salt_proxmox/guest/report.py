"""What a guest's plan and apply say: the refusal that still lists every other change, when
written keys take effect, a write that goes as a task, and a failed write read back key by key (in
effect, pending, not written), never "nothing was written" when something may have been.
"""

from __future__ import annotations

from collections.abc import Iterable

from salt_proxmox.errors import SaltProxmoxError, Uncertain
from salt_proxmox.guest import identity, lane
from salt_proxmox.guest.decide import Decision, changes_of, waiting_changes
from salt_proxmox.guest.family import Declaration, Family
from salt_proxmox.guest.live import guest_path, read_live, styled
from salt_proxmox.guest.pending import GuestConfig
from salt_proxmox.guest.verdict import judge_guest
from salt_proxmox.outcome import Outcome
from salt_proxmox.ownership.rows import CREATING
from salt_proxmox.pve.tasks import TaskFailed
from salt_proxmox.run.context import PveContext


def refusal_outcome(
    outcome: Outcome, family: Family, decl: Declaration, decision: Decision, test: bool
) -> Outcome:
    """A refusal that does not hide the rest of the plan: every other change the state would make
    is listed (in ``changes`` under test), and none is written."""
    change = decision.change
    if decision.lane is None:
        # Without a root lane the root keys are among the refusals (guest.lane.route).
        change = lane.split(change)[0]
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
        lines.append(waiting_line(family, decl, decision.verdict.waiting))
    return outcome.fail(*lines, "Nothing was written.")


def waiting_line(family: Family, decl: Declaration, keys: list[str]) -> str:
    return (
        f"{family.what(decl.vmid, decl.node)}: {', '.join(keys)} {'is' if len(keys) == 1 else 'are'} written "
        f"but pending until the {family.noun} restarts; reboot it (`{family.command} reboot {decl.vmid}`), "
        "or declare reboot_for_pending: true."
    )


def effect_lines(family: Family, decl: Declaration, decision: Decision) -> list[str]:
    """What the plan says about when the keys it would write take effect (only when some would
    wait: on a stopped guest, or with only hot-plugged keys, everything is at once)."""
    if not decision.later:
        return []
    now = f"{', '.join(decision.now)} would take effect at once; " if decision.now else ""
    return [
        f"{family.what(decl.vmid, decl.node)}: {now}{', '.join(decision.later)} would stay pending until "
        f"the {family.noun} restarts (it is running; PVE applies only some keys to a running {family.noun})"
    ]


def task_lines(family: Family, decl: Declaration, decision: Decision) -> list[str]:
    """What the plan says of a config write that goes as a ``POST …/config`` task, and why."""
    path = f"POST /{guest_path(family, decl.node, decl.vmid)}/config"
    return [
        f"{family.what(decl.vmid, decl.node)}: the {which}write goes as a task ({path}): {why}"
        for which, why in (("", decision.task), ("second ", decision.after_task))
        if why
    ]


def unrecorded(decision: Decision) -> str:
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


def write_failed(outcome: Outcome, exc: SaltProxmoxError, written: list[str], action: str = "") -> Outcome:
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
    outcome.changes = kept_changes(outcome, written)
    if not written and not isinstance(exc, TaskFailed):
        lines.append("Nothing was written.")
    return outcome.fail(*lines)


#: Why a failed VM config write may have written (``Family.pending_first``).
PENDING_FIRST = (
    "qemu-server update_vm_api writes each value into the pending section before it hot-plugs or applies "
    "it, then raises what failed"
)


def kept_changes(outcome: Outcome, written: Iterable[str]) -> dict:
    """The part of a return's ``changes`` that ``written`` names: config keys, and the disks of
    ``<disk> grown to <size>`` steps."""
    written = list(written)
    grown = {name.split(" grown to ", 1)[0] for name in written if " grown to " in name}
    kept = {key: change for key, change in outcome.changes.items() if key in written}
    disks = {disk: size for disk, size in outcome.changes.get("disks", {}).items() if disk in grown}
    return {**kept, **({"disks": disks} if disks else {})}


def config_write_failed(
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
    ``created`` (``write_failed``). When the read back fails too, the return says the write may
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
        lines.extend(read_back_lines(ctx, family, decl, after, sending, unseen)[0])
        lines.append(
            f"The guest exists; its ownership row stays {CREATING}: the next run records it as ours if it "
            "matches the declaration, else refuses it until the declaration says adopt: true."
        )
        outcome.changes = {"created": outcome.changes["created"]}
        return outcome.fail(*lines)
    if after is None:
        # Unread (or gone): the write may have been made in part, so every change stays in the return.
        return outcome.fail(*lines)
    said, landed, pending = read_back_lines(ctx, family, decl, after, sending, unseen)
    lines.extend(said)
    outcome.changes = kept_changes(outcome, [*written, *landed])
    if pending:
        outcome.changes["pending"] = waiting_changes(family, pending, after)
    if written or landed:
        try:
            ctx.ownership.mark_owned(
                decision.row_key,
                decl.state_id,
                decl.stored(),
                identity.live_fingerprint(family, after.merged()),
            )
        except SaltProxmoxError as unsaved:
            lines += [f"{what}: {unsaved}", unrecorded(decision)]
    return outcome.fail(*lines)


def read_back_lines(
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
        lines.append(waiting_line(family, decl, pending))
    lines.append("The next run judges what is pending as written and writes only what still differs.")
    return lines, [*in_effect, *pending], pending
