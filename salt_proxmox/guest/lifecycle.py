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

Plan and apply call the same ``decide``; apply decides again on a fresh read, then writes:
create as the family's tasks (``Family.create``), update as one digest-guarded config write followed
by one resize task per grown disk, each with a freshly minted ``provision`` credential polled by its
owner; then reads back and judges again. The config write is the ``PUT …/config``, or the family's
``POST …/config`` task where ``Family.config_task`` says why (a VM write that allocates a volume or
hot-plugs into the running VM). A failed config write of a family whose writes land in the pending
section first (``Family.pending_first``: qemu-server ``update_vm_api``) is read back and reported
key by key: in effect, pending, not written (``report.config_write_failed``).

Its parts, one concern each: ``live`` (paths, reads ahead, the read with proven absence), ``decide``
(the one decision), ``apply`` (the writes), ``report`` (what plan and apply say), ``pools`` (pool
membership) and ``adhoc`` (the ad-hoc calls on one guest); this module is their door: ``present`` and
``absent``.
"""

from __future__ import annotations

from salt_proxmox import registry
from salt_proxmox.access.privileges import planning
from salt_proxmox.errors import DeclarationError, SaltProxmoxError
from salt_proxmox.guest import identity, lane, migrate

# The door: callers (the execution module, qemu/family.py, the tests) reach the parts through it.
from salt_proxmox.guest.absence import indexed_guest  # noqa: F401
from salt_proxmox.guest.adhoc import adhoc_declaration, resize  # noqa: F401
from salt_proxmox.guest.apply import (
    config_form,  # noqa: F401
    create_guest,
    pending_after,
    power_after,
    power_failed,
    update_guest,
    written_onto,  # noqa: F401
)
from salt_proxmox.guest.decide import changes_of, decide, waiting_changes
from salt_proxmox.guest.family import Family
from salt_proxmox.guest.live import (  # noqa: F401
    chunk_keys,
    config_path,
    guest_path,
    operator_config,
    read_ahead,
    read_live,
    styled,
)
from salt_proxmox.guest.pools import pool_membership
from salt_proxmox.guest.power import (
    Power,
    parse_power,
    power_lines,
)
from salt_proxmox.guest.refusals import destroy_refusals
from salt_proxmox.guest.report import (
    config_write_failed,
    effect_lines,
    refusal_outcome,
    task_lines,
    unrecorded,
    waiting_line,
    write_failed,
)
from salt_proxmox.guest.verdict import judge_guest
from salt_proxmox.outcome import Outcome, forget_ownership
from salt_proxmox.ownership.rows import CREATING, destroy_path, row_key
from salt_proxmox.pve.constraints import vmid_number
from salt_proxmox.run import overlap
from salt_proxmox.run.context import PveContext
from salt_proxmox.run.memo import current_run, note_leaving_pool


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

    Keys another family judges (``registry.GUEST_KEYS``: ``backup``) are taken out first and handed
    to that family's guard: its refusals refuse the state before anything is read or written for
    the guest; its run notes (the run's backup coverage, once per run) ride on the return. Keys
    another family checks (``registry.GUEST_CHECKS``: a VM's devices naming a resource mapping, the
    snippets ``cicustom`` and ``hookscript`` name) stay in the declaration; their refusals refuse the
    state the same way, their notes go in its comment.
    """
    vmid, node, pool = declared.get("vmid"), declared.get("node"), declared.get("pool")
    planning(ctx, test)
    refusals, run_notes = [], []
    for key, guard in registry.guest_guards().items():
        refused, notes = guard(ctx, family.kind, vmid, node, pool, declared.pop(key, None))
        refusals += refused
        run_notes += notes
    checked = []
    for check in registry.guest_checks():
        refused, notes = check(ctx, family.kind, vmid, node, pool, declared)
        refusals += refused
        checked += notes
    if refusals:
        outcome = Outcome(run_notes=run_notes).refuse(DeclarationError(refusals))
        outcome.comment.extend(ctx.take_notes())
        return outcome
    try:
        outcome = _present(ctx, family, state_id, test, declared)
    finally:
        ctx.release_slots()
    if pool is not None and outcome.result is not False and "created" not in outcome.changes:
        # Validated by _present's parse (a bad pool fails it, result False).
        what = family.what(vmid_number(vmid), str(node))
        outcome = pool_membership(ctx, what, vmid_number(vmid), str(pool), test, outcome)
    outcome.comment.extend([*checked, *ctx.take_notes()])
    outcome.run_notes.extend(run_notes)
    return outcome


def _present(ctx: PveContext, family: Family, state_id: str, test: bool, declared: dict) -> Outcome:
    outcome = Outcome()
    try:
        try:
            power, problems = parse_power(declared), []
        except DeclarationError as exc:
            power, problems = Power(), exc.problems
        moves = declared.pop(migrate.KEY, None)
        if moves is not None and (problem := migrate.option_problem(migrate.KEY, moves)):
            problems.append(problem)
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
        if not test and overlap.forked(current_run(ctx.memo)):
            # A create Salt forked waits for its slot before the read it decides on: what it writes is
            # judged on what PVE holds when its turn comes, not when Salt forked it.
            ctx.write_slot(decl.node)
        decision = decide(ctx, family, decl, power, moves)
    except DeclarationError as exc:
        return outcome.refuse(exc)
    except SaltProxmoxError as exc:
        return outcome.fail(f"{state_id}: {exc}", "Nothing was written.")
    if decision.action == "refuse":
        return refusal_outcome(outcome, family, decl, decision, test)
    if decision.action == "migrate":
        return migrate.outcome(ctx, family, decl, decision, test, outcome)
    power = decision.shutdown or power
    what = family.what(decl.vmid, decl.node)
    waiting = decision.verdict.waiting if decision.verdict else []
    if decision.action == "create":
        outcome.changes = {"created": {"old": None, "new": what}}
        if decision.create_changes is not None:
            outcome.changes.update(decision.create_changes)
        else:
            # The token's create form, then the root keys the lane writes after it.
            form = {**family.create_form(decl), **lane.create_change(family, decl).put}
            outcome.changes.update(
                {k: family.key_change(k, None, v) for k, v in form.items() if k not in ("vmid",)}
            )
        if decl.secrets:
            outcome.comment.append(f"{what}: {', '.join(sorted(decl.secrets))} {family.secrets_rule}")
        if test and ctx.target.task_concurrency > 1:
            bounds = (ctx.target.task_concurrency, ctx.target.task_concurrency_per_node)
            leads = overlap.leads_its_kind(current_run(ctx.memo))
            outcome.comment.append(overlap.plan_line(what, ctx.target.name, *bounds, leads=leads))
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
            if decision.lane:
                outcome.comment.append(lane.plan_line(what, decision.change, decision.lane))
            outcome.comment.extend(task_lines(family, decl, decision))
            outcome.comment.extend(effect_lines(family, decl, decision))
            # A family's privileges a write needs beyond the VM's own (a VM's mapped devices).
            outcome.comment.extend(
                f"{what}: the write needs {use}" for use in getattr(decision.change, "uses", ())
            )
        if waiting:
            assert decision.config is not None
            outcome.changes["pending"] = waiting_changes(family, waiting, decision.config)
            outcome.comment.append(waiting_line(family, decl, waiting))
        if decision.reboot:
            outcome.changes["rebooted"] = {"old": "pending", "new": "in effect"}
            outcome.comment.append(
                f"{what}: would be rebooted so its pending changes take effect (reboot_for_pending)"
            )
        if decision.power:
            outcome.changes["status"] = {"old": decision.status, "new": power.status}
            outcome.comment.append(
                power_lines(what, decision.power, power, done=False, paused=decision.paused)
            )
        if decision.action == "noop" and not decision.record and not waiting and not decision.power:
            outcome.comment.append(f"{what} is as declared")
        outcome.result = None if (outcome.changes or decision.record) else True
        return outcome
    written: list[str] = []
    # The keys of a config write under way: set while it is sent, emptied once it went through.
    sending: list[str] = []
    try:
        if decision.action != "noop" or decision.power or decision.reboot:
            # Held to the end of the state (present: release_slots): writes, tasks, read-backs.
            ctx.write_slot(decl.node)
        if decision.action == "create":
            create_guest(ctx, family, decl, written, decision.row, sending)
        elif decision.action == "update":
            update_guest(ctx, family, decl, decision, written, sending)
        # Read back only what was written; a no-drift apply costs the one read it decided on.
        after = decision.config if decision.action == "noop" else read_live(ctx, family, decl.node, decl.vmid)
    except SaltProxmoxError as exc:
        if sending and family.pending_first:
            return config_write_failed(ctx, family, decl, decision, outcome, exc, written, sending)
        return write_failed(outcome, exc, written, decision.action)
    if after is None:
        return outcome.fail(
            f"{family.label} {decl.vmid}: the write returned no error but the guest is absent."
        )
    try:
        ctx.ownership.mark_owned(
            decision.row_key, decl.state_id, decl.stored(), identity.live_fingerprint(family, after.merged())
        )
    except SaltProxmoxError as exc:
        return outcome.fail(f"{what}: {exc}", unrecorded(decision))
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
            settled = power_after(ctx, family, decl, decision, power, settled, outcome)
        except SaltProxmoxError as exc:
            return power_failed(outcome, family, decl, decision, power, exc)
    if settled.waiting:
        return pending_after(ctx, family, decl, decision, settled, outcome)
    return outcome


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
            return outcome.fail(destroy_path(what))
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
        volumes = identity.destroyed_volumes(family, live.merged())
        outcome.changes = {"destroyed": {"old": family.what(last.vmid, last.node), "new": None}}
        if volumes:
            outcome.changes["volumes"] = {"old": volumes, "new": []}
        note_leaving_pool(ctx.memo, ctx.target.name, None, family.kind, last.vmid)
        deletes = f"; it deletes its volumes {', '.join(volumes)}" if volumes else ""
        if test:
            outcome.result = None
            outcome.comment.append(f"{what}: would be destroyed (no force, no purge){deletes}")
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
    outcome.comment.append(f"{what} has been destroyed{deletes.replace('it deletes', 'with')}")
    return outcome
