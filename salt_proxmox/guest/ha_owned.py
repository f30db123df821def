"""A guest under HA has its power state owned by HA: ``status:`` on a guest an HA resource manages,
declared in this run or live, is refused, naming the HA ``state`` to declare instead.

pve-ha-manager ``src/PVE/HA/Config.pm`` ``vm_is_ha_managed``/``$service_check_ha_state``: a guest
whose ``vm:<vmid>``/``ct:<vmid>`` resource is configured is HA-managed unless its state is
``ignored`` (or the cluster is disarmed with ``--resource-mode ignore``); qemu-server ``API2/Qemu.pm``
``vm_start``/``vm_shutdown`` (pve-container ``API2/LXC/Status.pm`` alike) then hand a start or
shutdown to the HA manager, which carries out the resource's requested ``state`` and reverts any
other. Two declarations of one power state would fight, so the guest's ``status:`` yields to the HA
resource's ``state`` (``started`` for ``running``, ``stopped`` for ``stopped``), even when both say
the same today: one of them would be edited alone later.

Two sources, one refusal (``status_refusal``):

- declared: the run's ``proxmox_ha_resource.present`` chunks (``remember_declared``, once per run and
  target, kept in the run's memo: read from the state run, ``run.memo.current_run``, the first time a
  state of the run asks), judged before anything is read;
- live: ``GET …/status/current``'s ``ha`` (pve-ha-manager ``Config.pm`` ``get_service_status``:
  ``managed: 1`` exactly when ``$service_check_ha_state`` holds, so an ``ignored`` resource or a
  disarmed cluster reads ``managed: 0``), read by the guest's decision when ``status:`` is declared
  (``guest.refusals.ha_managed``). A guest that does not exist has no live resource: PVE refuses a
  resource for a missing guest (``Resources/PVEVM.pm``/``PVECT.pm`` ``exists``) and ``destroy_vm``
  refuses an HA-managed guest without ``purge``, which removes the resource with it.

The ad-hoc power calls (``proxmox.guest_start``, …) ask for one action now and do not own the
guest's power: they keep ``guest.power.ha_route``, which says what the HA manager does with them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from salt_proxmox.pve.client import api_path
from salt_proxmox.pve.errors import PveError
from salt_proxmox.run.memo import current_run

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.run.context import PveContext
    from salt_proxmox.run.lowstate import Run

#: The HA resource family's state module (``salt_proxmox.registry``).
STATE = "proxmox_ha_resource"

#: An HA resource id of a guest: ``vm:<vmid>`` or ``ct:<vmid>`` (``HA/Config.pm`` ``parse_sid`` also
#: takes a bare vmid, which it then looks up; this product always names the type).
SID = re.compile(r"^(vm|ct):([1-9][0-9]{2,8})$", re.ASCII)
#: The run memo's key of the run's declared HA resources: ``{sid: state}``.
_DECLARED = "salt_proxmox.ha-declared"
#: The run memo's key of the guests the run declares present: ``{"ct:<vmid>", "vm:<vmid>"}``.
_GUESTS = "salt_proxmox.ha-declared-guests"
#: The run memo's key of the HA groups the run declares present (PVE 8): ``{group}``.
_GROUPS = "salt_proxmox.ha-declared-groups"
#: The HA group family's state module (``salt_proxmox.registry``).
GROUP_STATE = "proxmox_ha_group"
#: The guest state modules by the HA type of their guests.
GUEST_STATES = {"ct": "proxmox_lxc", "vm": "proxmox_qemu"}
#: The HA state a guest's ``status`` maps to.
HA_STATE = {"running": "started", "stopped": "stopped"}


def remember_declared(ctx: PveContext, declarations: Iterable[Mapping[str, object]]) -> None:
    """Keep the HA resources this run declares present on ``ctx``'s target (``declarations``: the
    arguments of its ``proxmox_ha_resource.present`` chunks, ``name`` the sid) as ``{sid: state}``
    in the run's memo; a state not declared is PVE's default, ``started``."""
    found = {}
    for args in declarations:
        sid = args.get("name")
        if isinstance(sid, str) and SID.match(sid):
            state = args.get("ha_state") or "started"
            found[sid] = "started" if state == "enabled" else str(state)
    ctx.memo[_DECLARED] = found


def remember_run(ctx: PveContext, run: Run | None, default: str | None) -> None:
    """``remember_declared`` with the ``proxmox_ha_resource.present`` chunks of ``run`` on ``ctx``'s
    target (``default``: the target of a chunk naming none), and the guests and HA groups it declares
    present, once per run; nothing outside a run."""
    if run is None or _DECLARED in ctx.memo:
        return
    chunks = run.declared(STATE, ctx.target.name, default)
    remember_declared(ctx, [{**chunk.args, "name": chunk.name} for chunk in chunks if chunk.fun == "present"])
    ctx.memo[_GROUPS] = {
        chunk.name for chunk in run.declared(GROUP_STATE, ctx.target.name, default) if chunk.fun == "present"
    }
    ctx.memo[_GUESTS] = {
        f"{ha_type}:{chunk.args.get('vmid')}"
        for ha_type, state in GUEST_STATES.items()
        for chunk in run.declared(state, ctx.target.name, default)
        if chunk.fun == "present"
    }


def _remembered(ctx: PveContext) -> Mapping:
    """The run's memo, holding what the run declares about HA (``remember_run`` with the state run the
    memo keeps, once; a chunk naming no target counts as ``ctx``'s: one naming none on a minion of
    several targets is refused by its own state)."""
    if _DECLARED not in ctx.memo:
        remember_run(ctx, current_run(ctx.memo), ctx.target.name)
    return ctx.memo


def guest_declared(ctx: PveContext, sid: str) -> bool:
    """Whether the run declares the guest of HA resource ``sid`` present (``remember_run``), so a
    create earlier in the apply makes it."""
    return sid in (_remembered(ctx).get(_GUESTS) or ())


def group_declared(ctx: PveContext, group: str) -> bool:
    """Whether the run declares HA group ``group`` present (``remember_run``), so the resource naming
    it, which requires it, finds it made."""
    return group in (_remembered(ctx).get(_GROUPS) or ())


def declared_state(ctx: PveContext, sid: str) -> str | None:
    """The ``ha_state`` this run declares for HA resource ``sid`` (``remember_declared``), or None."""
    return (_remembered(ctx).get(_DECLARED) or {}).get(sid)


def status_refusal(
    ctx: PveContext, ha_type: str, what: str, vmid: int, status: str, live: str | None = None
) -> str | None:
    """Why ``status`` (``running``/``stopped``) may not be declared on guest ``vmid`` (``ha_type``
    ``ct``/``vm``; ``what``: how messages name it), or None: an HA resource manages it, declared in
    this run in a state other than ``ignored``, or live (``live``: the ``ha.state`` PVE reports for a
    guest it reports ``managed: 1``, ``guest.refusals.ha_managed``; None when not managed or not
    read). A resource declared ``ignored`` while PVE still reports it managed is refused too: the
    guest's state runs before its HA resource's (the formula makes the resource require its guest),
    so PVE would still hand the power to HA."""
    sid = f"{ha_type}:{vmid}"
    declared = declared_state(ctx, sid)
    wanted = HA_STATE.get(status, status)
    said = f"{what}: status: {status} is refused: HA resource {sid}"
    why = (
        "owns its power state, and PVE hands every start and shutdown of an HA-managed guest to the HA "
        "manager (pve-ha-manager HA/Config.pm vm_is_ha_managed), which keeps its own requested state"
    )
    if declared == "ignored" and live is not None:
        return (
            f"{said} (live, ha.state {live or 'not given'}) {why}. It is declared ignored in this run, but "
            f"that is written after this guest's state (the resource requires its guest), so PVE would "
            f"still hand this power to HA. Set it ignored first (`ha-manager set {sid} --state ignored`, "
            "or one run with status left out here), then declare status."
        )
    if declared is not None and declared != "ignored":
        owner = f"declared in this run, state {declared}"
    elif live is not None and declared is None:
        owner = f"live, ha.state {live or 'not given'}"
    else:
        return None
    return (
        f"{said} ({owner}) {why}. Two owners of one power state would fight, even while both say the "
        f"same. Drop status here and declare proxmox:ha_resources:{sid}: {{ha_state: {wanted}}} (or "
        f"`ha-manager set {sid} --state {wanted}`), or set the resource to ignored (ha_state: ignored, "
        f"`ha-manager set {sid} --state ignored`) to manage its power here."
    )


def destroy_refusal(ctx: PveContext, ha_type: str, what: str, vmid: int) -> str | None:
    """Why PVE refuses to destroy guest ``vmid`` for its HA resource, or None: qemu-server
    ``API2/Qemu.pm`` and pve-container ``API2/LXC.pm`` ``destroy_vm`` die ``unable to remove <VM|CT>
    <vmid> - used in HA resources and purge parameter not set.`` when ``HA/Config.pm``
    ``service_is_configured`` (any state, ``ignored`` included, so ``status/current``'s ``ha`` cannot
    tell), and this product never sends ``purge``. Read with the read credential (``GET
    /cluster/ha/resources/<sid>``, Sys.Audit on ``/``); a read token without it learns nothing here,
    and PVE's own refusal then reaches the apply. Raises what the client raises otherwise."""
    sid = f"{ha_type}:{vmid}"
    try:
        ctx.client.request("GET", api_path("cluster", "ha", "resources", sid), ctx.broker.read())
    except PveError as exc:
        if exc.status == 403 or (exc.status == 500 and f"no such resource '{sid}'" in exc.message):
            return None
        raise
    return (
        f"{what} is HA resource {sid}, and PVE refuses to destroy it (`used in HA resources and purge "
        f"parameter not set`, destroy_vm; purge is never sent). Take it out of HA first (its "
        f"proxmox:ha_resources:{sid} entry with ensure: absent and removal: destroy, or `ha-manager remove "
        f"{sid}`), then destroy it."
    )
