"""The writes of a guest's apply, each as its plan listed it: the create (the family's tasks), the
digest-guarded config write (``PUT …/config``, or the ``POST …/config`` task a family asks for) and
the resize tasks of an update, the power action after them and the reboot that settles pending keys,
each with a freshly minted ``provision`` credential polled by its owner.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from salt_proxmox.errors import Refused, SaltProxmoxError, Uncertain
from salt_proxmox.guest import lane
from salt_proxmox.guest.decide import Decision, reboot_problem
from salt_proxmox.guest.family import CreateStep, Declaration, Family
from salt_proxmox.guest.live import guest_path, read_live, styled
from salt_proxmox.guest.power import (
    Power,
    PowerNotReached,
    apply_power,
    power_lines,
    verify_power,
)
from salt_proxmox.guest.refusals import paused_state, read_current
from salt_proxmox.guest.report import waiting_line
from salt_proxmox.guest.verdict import Change, Verdict, judge_guest
from salt_proxmox.outcome import Outcome
from salt_proxmox.ownership.rows import row_key
from salt_proxmox.pve.client import Credential
from salt_proxmox.pve.constraints import check_form
from salt_proxmox.pve.errors import PveError, PveUnreachable
from salt_proxmox.pve.tasks import TaskFailed, start_task
from salt_proxmox.run.context import PveContext


def power_after(
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
    outcome.comment.append(power_lines(what, decision.power, power, done=True, paused=decision.paused))
    decision.running = decision.power == "start"
    if decision.power == "start" and settled.waiting:
        final = read_live(ctx, family, decl.node, decl.vmid)
        if final is None:
            raise Refused(f"{family.label} {decl.vmid}: after the start the guest is absent.")
        settled = judge_guest(family, decl, final, decl, styled(ctx, decl))
    return settled


def power_failed(
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


def pending_after(
    ctx: PveContext, family: Family, decl: Declaration, decision: Decision, settled: Verdict, outcome: Outcome
) -> Outcome:
    """An apply that leaves declared values pending: say so, or with ``reboot_for_pending``
    reboot the guest as one task awaited by its owner and judge what it runs with then."""
    what = family.what(decl.vmid, decl.node)
    if not decl.reboot_for_pending:
        outcome.comment.append(waiting_line(family, decl, settled.waiting))
        return outcome
    problem = decision.reboot_note
    try:
        if not problem:
            current = read_current(ctx, family.kind, decl.node, decl.vmid)
            qmp = paused_state(current) if family.pauses else None
            problem = reboot_problem(family, decl, settled, current["status"] == "running", qmp)
        if problem:
            outcome.comment.extend([p for p in [problem] if p not in outcome.comment])
            outcome.comment.append(waiting_line(family, decl, settled.waiting))
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


def create_guest(
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
    the next run finishes it when it can tie it to this create. The create's root keys follow in one
    lane write (``guest.lane.create_write``); its failure keeps the row ``creating`` too. Each step
    that went through is
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
        if not step.task:
            ctx.client.request(step.method, step.path, credential(), form=dict(step.form))
            if sending:
                sending.clear()
            if written is not None:
                written.append(step.what)
            first = False
            step = next(steps, None)
            continue
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
        except TaskFailed as exc:
            if step.uncertain:
                # The row stays creating: the guest is neither proven absent nor ours.
                raise Uncertain(f"{exc} {step.uncertain}") from exc
            if first:
                ctx.ownership.restore(key, earlier)
            raise
        first = False
        if sending:
            sending.clear()
        if written is not None:
            written.append(step.what)
        step = next(steps, None)
    # The root keys the token's create left out, through the root lane (guest.lane).
    laned = lane.create_write(ctx, family, decl)
    if laned and written is not None:
        written.append(f"write {', '.join(laned)} via root lane")


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


def send_config(
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


def written_onto(
    family: Family,
    decl: Declaration,
    change: Change,
    made: Mapping[str, object],
    path: str,
    task: bool = True,
) -> Iterator[CreateStep]:
    """The create steps that write ``decl`` onto the guest a clone or a restore made (``made``: its
    config, ``change``: the judge's verdict of ``decl`` against it; ``path``: the guest's path): one
    config write with ``made``'s digest (a ``POST …/config`` task, or with ``task`` False the
    synchronous ``PUT`` of a family that has no task), then a ``PUT …/resize`` task per disk that
    grows. Raises Refused when the guest as made cannot take the declaration (its row stays
    ``creating``), DeclarationError (``check_form``)."""
    if change.refuse or change.root:
        # A restored guest's root keys are not written through a lane here: refused as without one.
        raise Refused(" ".join([*change.refuse, *change.root.values()]))
    secrets = {key: decl.secrets[key] for key in getattr(change, "secrets", ())}
    form = config_form(family, change, secrets, str(made.get("digest", "")))
    what = f"{family.label} {decl.vmid}"
    if form is not None:
        method = "POST" if task else "PUT"
        yield CreateStep(method, f"{path}/config", f"configure {what} as declared", form, task=task)
    for disk, size in change.resize:
        resize = {"disk": disk, "size": size}
        check_form(family.resize, resize, presence=True)
        yield CreateStep("PUT", f"{path}/resize", f"grow {disk} of {what} to {size}", resize)


def form_keys(form: Mapping[str, str]) -> list[str]:
    """The config keys a config write's form writes or deletes (``delete`` split; ``digest`` and
    ``revert`` are not keys of the config)."""
    keys = [key for key in form if key not in ("digest", "delete", "revert")]
    return [*keys, *(key for key in str(form.get("delete") or "").split(",") if key)]


def update_guest(
    ctx: PveContext,
    family: Family,
    decl: Declaration,
    decision: Decision,
    written: list[str],
    sending: list[str],
) -> None:
    """One digest-guarded config write (and a second one for a VM change's ``after`` keys, guarded
    by the digest the first left), each a ``PUT`` or, where ``decision.task``/``after_task`` says
    why, a ``POST …/config`` task (``send_config``); the keys only root@pam may write (``Change.root``)
    in a write of their own through the root lane (``guest.lane.send_root``), guarded by the digest the
    token's write left; then a resize task per grown disk. Each step
    that went through is added to ``written`` (the keys the writes wrote; ``<disk> grown to
    <size>``); ``sending`` holds the keys of a config write under way."""
    change, root_put, root_clear = lane.split(decision.change)
    path = guest_path(family, decl.node, decl.vmid)
    # Secret keys the judge asks to write (a VM's ``cipassword``): their values come from the
    # declaration into this one form and nowhere else.
    secrets = {key: decl.secrets[key] for key in getattr(change, "secrets", ())}
    digest = str(decision.live["digest"])
    form = config_form(family, change, secrets, digest)
    if form is not None:
        send_config(ctx, family, decl, form, decision.task, sending)
        written.extend([*change.put, *change.clear, *secrets])
        after = getattr(change, "after", {})
        if after:
            # A second write the plan named (a VM's boot beside a CD-ROM PVE appends to it), guarded
            # by the digest the first one left.
            done = ctx.client.request("GET", f"{path}/config", ctx.broker.read(), params={"current": "1"})
            form = {**after, "digest": str((done or {}).get("digest", ""))}
            check_form(family.update, form, presence=False)
            send_config(ctx, family, decl, form, decision.after_task, sending)
            written.extend(after)
    if root_put or root_clear:
        # The root keys' own write through the lane (guest.lane), guarded by the digest the token's
        # write left, or the judged one when there was none.
        if form is not None:
            done = ctx.client.request("GET", f"{path}/config", ctx.broker.read(), params={"current": "1"})
            digest = str((done or {}).get("digest", ""))
        sending[:] = [*root_put, *root_clear]
        lane.send_root_keys(ctx, family, decl, f"{path}/config", root_put, root_clear, digest)
        sending.clear()
        written.extend([*root_put, *root_clear])
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
