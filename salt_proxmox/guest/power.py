"""A guest's power state: the declared ``status`` of a state (running or stopped) and the ad-hoc
power calls (``proxmox.guest_start``/``guest_shutdown``/``guest_stop``/``guest_reboot``/
``guest_status``, ``proxmox.guests``); shared by containers and VMs.

PVE's calls (pve-container ``src/PVE/API2/LXC/Status.pm``, qemu-server ``PVE/API2/Qemu.pm``, the
same paths under ``/nodes/{node}/{lxc|qemu}/{vmid}/status``): ``GET current`` (VM.Audit) answers
the ``status`` word; ``POST start``, ``shutdown``, ``stop`` and ``reboot`` (VM.PowerMgmt) each
answer a UPID, awaited with the credential that started it. ``shutdown`` takes ``timeout``
(seconds, minimum 0; pve-container's default 60) and ``forceStop`` (default 0): without it a guest
still running at the timeout makes the task fail and keeps running; with it PVE hard-stops it.
``start`` of a running guest and ``shutdown``/``reboot`` of a stopped one are errors ("CT 150
already running", "CT 150 not running"), so each call reads the status first and does nothing when
the guest already is where it is asked to be.

A state's ``status: stopped`` is always a ``shutdown`` with ``shutdown_timeout`` (default 60 s)
and never a silent hard stop: only ``force_stop: true`` sends ``forceStop=1``. A created guest
with ``status: running`` is started by its own ``POST …/status/start`` task after the create,
not by ``start=1`` on the create: pve-container ``create_vm`` runs ``vm_start`` inside the create's
own worker, so a failed start would fail the create task after the guest was made (and a failed
create is one PVE cleaned up: ``guest.apply.create_guest``), and a VM clone (qemu-server
``clone_vm``) has no ``start`` at all.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from salt_proxmox.errors import DeclarationError, Refused, boolean_problem, shown
from salt_proxmox.guest.absence import index_rows, indexed_guest
from salt_proxmox.guest.refusals import ha_managed, paused_state, read_current, read_status, status_path
from salt_proxmox.pve.client import api_path
from salt_proxmox.pve.constraints import vmid_number
from salt_proxmox.wire.propstring import pairs, pve_boolean

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.guest.family import Family
    from salt_proxmox.run.context import PveContext

#: The power states a state may declare (``GET …/status/current`` ``status``).
STATUSES = ("running", "stopped")
#: Seconds a shutdown waits by default: pve-container ``vm_shutdown`` ``timeout`` default.
SHUTDOWN_TIMEOUT = 60
#: The state arguments this module reads (never config keys of a family).
KEYS = ("status", "shutdown_timeout", "force_stop")


@dataclass(frozen=True)
class Power:
    """A state's declared power state: ``status`` None leaves it alone (nothing read);
    ``shutdown_timeout`` in seconds; ``force_stop`` allows PVE's hard stop after it."""

    status: str | None = None
    shutdown_timeout: int = SHUTDOWN_TIMEOUT
    force_stop: bool = False
    #: Whether ``shutdown_timeout`` was declared; else where the one used comes from (``for_guest``).
    timeout_declared: bool = True
    timeout_from: str = ""

    def for_guest(self, family: Family, config: Mapping[str, object]) -> Power:
        """This power with the shutdown timeout PVE would use for the guest whose config in effect
        is ``config`` when none is declared: a VM's ``startup: down=`` (qemu-server ``QemuServer.pm``
        ``_do_vm_stop``: ``$timeout = $opts->{down}`` when no timeout is given, then 60), a
        container's 60 (pve-container ``API2/LXC/Status.pm`` ``vm_shutdown``: ``timeout // 60``;
        ``startup: down=`` is only ``pve-manager``'s stopall order for them). The timeout is always
        sent, so the plan names the one PVE will use."""
        if self.timeout_declared or not family.startup_down:
            return self
        try:
            down = dict(pairs(str(config.get("startup") or ""), "order")).get("down")
        except ValueError:
            down = None
        if down is None or not str(down).isdigit() or int(down) == 0:
            return self
        return replace(self, shutdown_timeout=int(down), timeout_from=f"its startup: down={int(down)}")

    def action(self, now: str | None) -> str | None:
        """``start``, ``shutdown`` or None (nothing to do) for a guest whose status is ``now``
        (None: it is being created, so stopped). Raises Refused for a status word that is
        neither running nor stopped (PVE starts only a stopped guest, shuts down only a running
        one)."""
        if self.status is None:
            return None
        now = now or "stopped"
        if now == self.status:
            return None
        if now not in STATUSES:
            raise Refused(
                f"it is {now}, neither running nor stopped; PVE starts only a stopped guest and shuts down "
                "only a running one. Settle it by hand first."
            )
        return "start" if self.status == "running" else "shutdown"

    def shutdown_form(self) -> dict[str, str]:
        """The ``POST …/status/shutdown`` form: ``timeout``, and ``forceStop=1`` only when declared."""
        return {"timeout": str(self.shutdown_timeout), **({"forceStop": "1"} if self.force_stop else {})}

    def polls(self, ctx: PveContext) -> int:
        """Polls of a shutdown task: the timeout's worth on top of a create's bound."""
        return ctx.create_polls + math.ceil(self.shutdown_timeout / ctx.poll_interval)


def _seconds_problem(key: str, value: object) -> str | None:
    """Why ``value`` is not a shutdown timeout (pve-container ``vm_shutdown`` ``timeout``: an
    integer, minimum 0), or None."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return f"{key}: {shown(value)} is not a whole number of seconds, at least 0"
    return None


def parse_power(declared: dict) -> Power:
    """Take ``status``, ``shutdown_timeout`` and ``force_stop`` out of a state's ``declared``
    arguments (they are no config keys) and check them.

    Raises DeclarationError naming each key and its rule: ``status`` one of running/stopped;
    ``shutdown_timeout`` an integer of seconds, at least 0 (pve-container ``vm_shutdown``
    ``timeout`` minimum 0); ``force_stop`` a boolean as PVE spells ``forceStop``
    (``wire.propstring.pve_boolean``); both only with ``status: stopped`` (they
    shape a shutdown and nothing else); ``start`` (a create key) not together with ``status``.
    """
    status = declared.pop("status", None)
    timeout = declared.pop("shutdown_timeout", None)
    force = declared.pop("force_stop", None)
    problems: list[str] = []
    if status is not None and status not in STATUSES:
        problems.append(f"status: {shown(status)} is not one of {', '.join(STATUSES)}")
    if timeout is not None and (problem := _seconds_problem("shutdown_timeout", timeout)):
        problems.append(problem)
    if force is not None:
        force, problem = pve_boolean("force_stop", force)
        if problem:
            problems.append(problem)
    for key, value in (("shutdown_timeout", timeout), ("force_stop", force)):
        if value is not None and status != "stopped":
            problems.append(
                f"{key}: it shapes the shutdown of status: stopped; declare that, or leave {key} out"
            )
    if status is not None and "start" in declared:
        problems.append(
            "start: status: running starts the guest after its create; declare status and leave start out"
        )
    if problems:
        raise DeclarationError(problems)
    return Power(
        status=status,
        shutdown_timeout=SHUTDOWN_TIMEOUT if timeout is None else timeout,
        force_stop=force is True,
        timeout_declared=timeout is not None,
    )


class PowerNotReached(Refused):
    """A power task ended OK, and the guest's status read back after it is not the one asked for."""


#: The HA manager's service states (``status/current`` ``ha.state``: pve-ha-manager ``Config.pm``
#: ``get_service_status`` reads the CRM's ``manager_status``) in which it carries out a request
#: now. A start (``ha-manager set <sid> --state started``): a service ``stopped``, ``request_stop``
#: or ``started`` is (re)started by the CRM's next rounds (``Manager.pm`` ``next_state_stopped``,
#: ``next_state_request_stop``, ``next_state_started``). A stop (``ha-manager crm-command stop <sid>
#: <timeout>``): the queued command is read only by ``next_state_started``.
HA_ACTS = {"start": ("stopped", "request_stop", "started"), "shutdown": ("started",), "stop": ("started",)}


def ha_route(
    family: Family, vmid: int, node: str, action: str, timeout: int, force_stop: bool, state: str
) -> str:
    """What the HA manager does with an ad-hoc ``action`` (``start``, ``shutdown``, ``stop``:
    ``power_call``) on guest ``vmid`` it manages (``state``: its ``ha.state``). A state's ``status:``
    on such a guest is refused instead (``guest.ha_owned.status_refusal``): HA owns its power.
    ``timeout``: the shutdown's seconds. PVE hands the call to HA (qemu-server ``API2/Qemu.pm``
    ``vm_start``/``vm_shutdown``/``vm_stop``, pve-container ``API2/LXC/Status.pm`` alike, when
    ``PVE::HA::Config::vm_is_ha_managed``): a start runs ``ha-manager set <sid> --state started``; a
    shutdown ``ha-manager crm-command stop <sid> <timeout>`` (``forceStop`` ignored), a stop the same
    with ``0``; the task ends once the request is queued. The CRM then sets the resource's
    requested state to ``stopped`` and its agent shuts the guest down (``Resources/PVEVM.pm``
    ``shutdown``: ``vm_shutdown`` with ``forceStop=1``, a hard stop at the timeout;
    ``Resources/PVECT.pm``: without it, a container still up at the timeout puts the service in
    ``error``); a timeout of 0 is an immediate hard stop (``vm_stop``; ``Manager.pm``: "request
    immediate service hard-stop").

    Raises Refused when HA will not carry it out now (``HA_ACTS``), and when it would stop the guest
    hard while ``force_stop`` is not declared (never a silent hard stop); each with the remedy."""
    what, sid = family.what(vmid, node), f"{family.ha_type}:{vmid}"
    manages = (
        f"{what} is HA-managed (ha.state {state or 'not given'}): PVE hands a {action} to the HA manager"
    )
    wanted = "started" if action == "start" else "stopped"
    if state not in HA_ACTS[action]:
        remedy = (
            f"`ha-manager set {sid} --state disabled`, fix what put it in error, then run again"
            if state == "error"
            else f"wait until `ha-manager status` shows {sid} settled, or set its state yourself "
            f"(`ha-manager set {sid} --state {wanted}`), then run again"
        )
        raise Refused(
            f"{manages}, which carries out a {action} only for a service it holds "
            f"{' or '.join(HA_ACTS[action])} (pve-ha-manager Manager.pm). Remedy: {remedy}."
        )
    if action == "start":
        return f"`ha-manager set {sid} --state started`: the HA manager starts it in a later round"
    hard = action == "stop" or timeout == 0
    if hard or family.ha_forces_stop:
        does = "stops it hard at once" if hard else f"shuts it down within {timeout} s, then stops it hard"
        source = "Manager.pm: a timeout of 0" if hard else "Resources/PVEVM.pm shutdown: forceStop=1"
        if not force_stop and action == "shutdown":
            raise Refused(
                f"{manages} (`ha-manager crm-command stop {sid} {timeout}`), which {does} "
                f"(pve-ha-manager {source}); "
                f"a shutdown never stops a {family.noun} hard unless asked. Pass force_stop=True to "
                f"accept it, or take it out of HA first (`ha-manager remove {sid}`)."
            )
    else:
        does = (
            f"shuts it down within {timeout} s, never forced (force_stop is ignored); a {family.noun} still "
            "up then leaves the service in error state"
        )
    return f"`ha-manager crm-command stop {sid} {0 if action == 'stop' else timeout}`: the HA manager {does}"


def paused_route(family: Family, vmid: int, node: str, action: str | None, power: Power, qmp: str) -> str:
    """What PVE does with the declared power of a VM that runs paused (``qmp``: its ``qmpstatus``,
    ``guest.refusals.paused_state``), which is neither running nor stopped. qemu-server
    ``API2/Qemu.pm`` ``vm_shutdown`` (before any HA hand-over): without ``forceStop`` it dies ``VM is
    paused - cannot shutdown`` (a shutdown request would reach the guest when it is resumed, and
    power it off then); with it it warns ``VM is paused - stop instead of shutdown`` and stops it
    hard. ``vm_start`` refuses a VM whose QEMU runs (``VM <vmid> already running``). Returns the
    plan's words for the hard stop ``force_stop`` allows; raises Refused otherwise, naming the
    remedy ``qm resume``."""
    what, command = family.what(vmid, node), f"`{family.command} resume {vmid}`"
    if action != "shutdown":
        raise Refused(
            f"{what} is paused (qmpstatus {qmp}), neither running nor stopped, and PVE does not start it "
            f"(`VM {vmid} already running`). Resume it ({command} on node {node}), then run again."
        )
    if not power.force_stop:
        raise Refused(
            f"{what} is paused (qmpstatus {qmp}), and PVE refuses to shut it down (`VM is paused - cannot "
            f"shutdown`, qemu-server vm_shutdown). Resume it first ({command} on node {node}), or declare "
            "force_stop: true to let PVE stop it hard instead."
        )
    return (
        f"it is paused (qmpstatus {qmp}): PVE stops it hard instead of shutting it down (`VM is paused - "
        "stop instead of shutdown`)"
    )


def verify_power(
    ctx: PveContext,
    family: Family,
    node: str,
    vmid: int,
    action: str,
    wanted: str,
    polls: int = 0,
    settles: bool = False,
) -> str:
    """The status read back (``GET …/status/current``) once the ``action`` task on guest ``vmid``
    ended OK; it must be ``wanted``. A task's OK is no proof: for a guest HA manages the task only
    queued a request (``ha_route``) and the HA manager carries it out in its later rounds, and
    (``settles``) a VM's reboot task ends once QEMU has exited, ``qmeventd`` starting it again after
    it (qemu-server ``QemuServer.pm`` ``vm_reboot``: "qmeventd starts it again on a stop event"); so
    its status is then read again, ``ctx.poll_interval`` apart, up to ``polls`` more times.

    Raises PowerNotReached naming the status PVE reports and, for an HA-managed guest, that HA
    decides its power (``ha-manager status``); what ``read_current`` raises."""
    current = read_current(ctx, family.kind, node, vmid)
    waited = 0
    while (
        str(current["status"]) != wanted and (settles or ha_managed(current) is not None) and waited < polls
    ):
        (ctx.sleep or time.sleep)(ctx.poll_interval)
        waited += 1
        current = read_current(ctx, family.kind, node, vmid)
    now = str(current["status"])
    if now == wanted:
        return now
    said = (
        f"{family.what(vmid, node)}: the {action} task ended OK, but PVE reports the {family.noun} {now}, "
        f"not {wanted}."
    )
    ha_state = ha_managed(current)
    if ha_state is not None:
        raise PowerNotReached(
            f"{said} It is HA-managed (ha.managed: 1, ha.state {ha_state or 'not given'}): the HA "
            f"manager decides its power, and the {action} task only queued a request to it; its status "
            f"was read {waited + 1} times over {waited * ctx.poll_interval:g} s. See "
            f"`ha-manager status` on a node for what HA does with {family.ha_type}:{vmid}; it is not "
            f"reported {wanted} until PVE says so."
        )
    raise PowerNotReached(
        f"{said} Read the task's log and `{family.command} status {vmid}` on node {node}, then run it again."
    )


def apply_power(ctx: PveContext, family: Family, node: str, vmid: int, action: str, power: Power) -> str:
    """Run ``action`` (``start`` or ``shutdown``) on guest ``vmid`` as one task awaited by the
    provision credential that started it, then read its status back (``verify_power``, waiting as
    long as the task's own bound for an HA-managed guest): it must be ``power.status``. Returns the
    task's UPID. Raises TaskFailed (a shutdown that met its timeout without ``force_stop``
    included: the guest still runs), PowerNotReached, Uncertain, PveError."""
    path = f"{status_path(family.kind, node, vmid)}/{action}"
    what = f"{action} {family.label} {vmid}"
    if action == "start":
        polls = ctx.create_polls
        upid = ctx.task("POST", path, node, what, polls=polls)
    else:
        polls = power.polls(ctx)
        upid = ctx.task("POST", path, node, what, power.shutdown_form(), polls=polls)
    verify_power(ctx, family, node, vmid, action, str(power.status), polls)
    return upid


def power_lines(what: str, action: str, power: Power, done: bool, paused: str | None = None) -> str:
    """What a plan (``done`` False) or an apply says of a state's power action; ``paused``: what PVE
    does with a paused VM (``paused_route``). A guest HA manages never gets here: its ``status:`` is
    refused (``guest.ha_owned.status_refusal``)."""
    if paused is not None:
        return (
            f"{what} has been stopped hard: {paused}" if done else f"{what}: would be stopped hard: {paused}"
        )
    if action == "start":
        return f"{what} has been started" if done else f"{what}: would start"
    seconds = f"{power.shutdown_timeout} s" + (f" ({power.timeout_from})" if power.timeout_from else "")
    how = (
        f"within {seconds}, then stopped hard (force_stop)"
        if power.force_stop
        else f"within {seconds}, never forced"
    )
    return f"{what} has been shut down ({how})" if done else f"{what}: would shut down ({how})"


# --------------------------------------------------------------------------- ad-hoc calls


def guest_rows(ctx: PveContext) -> list[dict]:
    """Every guest of the cluster the read credential may audit, from one ``GET
    cluster/resources?type=vm`` (pve-manager ``PVE/API2/Cluster.pm`` ``resources``), sorted by
    vmid: ``{vmid, name, node, type (lxc|qemu), status, template}``. Raises PveMalformed for rows
    without vmid/node/type (``guest.absence.indexed_guest``'s rule), and what the client raises."""
    rows = index_rows(ctx)
    return [
        {
            "vmid": int(row["vmid"]),
            "name": str(row.get("name") or ""),
            "node": row["node"],
            "type": row["type"],
            "status": str(row.get("status") or ""),
            "template": str(row.get("template") or "0") not in ("0", ""),
        }
        for row in sorted(rows, key=lambda row: int(row["vmid"]))
    ]


def _indexed(ctx: PveContext, vmid: object, node: object) -> dict:
    """The guest index row of ``vmid``, on ``node`` when given. Raises DeclarationError (vmid
    malformed), Refused (no such guest, or another node)."""
    number = vmid_number(vmid)
    row = indexed_guest(ctx, number)
    if row is None:
        raise Refused(f"vmid {number}: the cluster's guest index lists no guest {number}.")
    if node is not None and row["node"] != node:
        raise Refused(
            f"vmid {number} is a {row['type']} guest on node {row['node']}, not on {node}. Name the node it "
            "is on, or leave node out."
        )
    return row


def locate(
    ctx: PveContext, families: Mapping[str, Family], vmid: object, node: object = None
) -> tuple[Family, str, int]:
    """The family, node and vmid of guest ``vmid`` from the cluster's guest index; ``node`` given
    must be where it is. Raises DeclarationError (vmid malformed), Refused (no such guest, another
    node, or a type no family here manages)."""
    row = _indexed(ctx, vmid, node)
    family = families.get(row["type"])
    if family is None:
        raise Refused(f"vmid {row['vmid']} is a {row['type']} guest, a type this module does not manage.")
    return family, row["node"], int(row["vmid"])


def status_of(ctx: PveContext, vmid: object, node: object = None) -> dict:
    """``proxmox.guest_status``: ``{vmid, node, type, status}`` of guest ``vmid`` (any type the
    guest index lists), the status from one ``GET …/status/current``
    (``guest.refusals.read_status``). Raises DeclarationError (vmid malformed), Refused (no such
    guest, or not on ``node``), and what ``read_status`` raises."""
    row = _indexed(ctx, vmid, node)
    number, where, kind = int(row["vmid"]), row["node"], row["type"]
    return {"vmid": number, "node": where, "type": kind, "status": read_status(ctx, kind, where, number)}


#: What each ad-hoc call does: (status it needs, status it leaves, status path, past tense).
CALLS = {
    "start": ("stopped", "running", "start", "started"),
    "shutdown": ("running", "stopped", "shutdown", "shut down"),
    "stop": ("running", "stopped", "stop", "stopped"),
    "reboot": ("running", "running", "reboot", "rebooted"),
}


def power_call(
    ctx: PveContext,
    families: Mapping[str, Family],
    call: str,
    vmid: object,
    node: object = None,
    adopt: object = False,
    timeout: object = None,
    force_stop: object = False,
) -> dict:
    """An ad-hoc power call (``call`` in ``CALLS``) on guest ``vmid``: returns ``{vmid, node, type,
    status, changed, upid}`` (``upid`` None when the guest already was where ``call`` leaves it,
    nothing sent; a reboot is sent to a running guest only).

    It obeys ownership as ``proxmox.lxc_resize`` does (``guest.adhoc.owned_guest``): a guest
    this minion did not create or adopt, or one that does not carry its row's fingerprint, is
    refused unless ``adopt`` is True (the call is then made without taking the guest over).
    ``stop`` is PVE's hard stop (``POST …/status/stop``), made only because it is asked for;
    ``shutdown`` sends ``timeout`` (seconds) and ``forceStop=1`` only with ``force_stop``.

    ``adopt`` is a boolean (``errors.boolean_problem``) and ``force_stop`` a boolean as PVE spells
    its ``forceStop`` (``wire.propstring.pve_boolean``): anything else is refused before any
    request, as a quoted ``'false'`` or an ``n`` would otherwise act as true.

    Raises DeclarationError (vmid, node, timeout, adopt, force_stop malformed), Refused, PveError,
    TaskFailed, Uncertain.
    """
    from salt_proxmox.guest.adhoc import owned_unless_adopted

    needs, leaves, segment, done = CALLS[call]
    force_stop, force_problem = pve_boolean("force_stop", force_stop)
    problems = [boolean_problem("adopt", adopt), force_problem]
    if timeout is not None:
        problems.append(_seconds_problem("timeout", timeout))
    if any(problems):
        raise DeclarationError([problem for problem in problems if problem])
    family, where, number = locate(ctx, families, vmid, node)
    owned_unless_adopted(ctx, family, where, number, (call, done), bool(adopt))
    current = read_current(ctx, family.kind, where, number)
    now = str(current["status"])
    out = {"vmid": number, "node": where, "type": family.kind, "status": now, "changed": False, "upid": None}
    if now != needs:
        if call == "reboot" or now != leaves:
            raise Refused(
                f"{family.what(number, where)} is {now}, and a {call} needs a {needs} {family.noun}; "
                "nothing was sent."
            )
        return out
    shutdown = Power("stopped", SHUTDOWN_TIMEOUT if timeout is None else int(timeout), force_stop)
    if call == "shutdown" and timeout is None and family.startup_down:
        # The VM's startup: down= is the timeout PVE would use; it is sent, so the return names it.
        config = ctx.client.request(
            "GET", f"{api_path('nodes', where, family.kind, number)}/config", ctx.broker.read(),
            params={"current": "1"},
        )  # fmt: skip
        shutdown = replace(shutdown, timeout_declared=False).for_guest(family, config or {})
    qmp = paused_state(current) if family.pauses else None
    if qmp is not None and call == "reboot":
        raise Refused(
            f"{family.what(number, where)} is paused (qmpstatus {qmp}), and PVE refuses to reboot it (`VM is "
            f"paused - cannot shutdown`, qemu-server vm_reboot). Resume it first (`{family.command} resume "
            f"{number}`); nothing was sent."
        )
    if qmp is not None and call == "shutdown":
        paused_route(family, number, where, call, shutdown, qmp)
    ha_state = ha_managed(current)
    if ha_state is not None and call in HA_ACTS:
        # vm_reboot has no HA branch; the others only queue a request the HA manager carries out.
        ha_route(
            family, number, where, call, shutdown.shutdown_timeout, force_stop or call == "stop", ha_state
        )
    form = shutdown.shutdown_form() if call == "shutdown" else {}
    polls = ctx.create_polls if call == "start" else shutdown.polls(ctx)
    if call == "reboot" and timeout is not None:
        form["timeout"] = str(timeout)  # vm_reboot: the timeout of its shutdown
    what = f"{call} {family.label} {number}"
    path = f"{status_path(family.kind, where, number)}/{segment}"
    upid = ctx.task("POST", path, where, what, form or None, polls)
    after = verify_power(ctx, family, where, number, call, leaves, polls)
    return {**out, "status": after, "changed": True, "upid": upid}
