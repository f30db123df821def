"""A guest under HA has its power state owned by HA: ``status:`` on a guest an HA resource declared in
this run manages is refused, naming the HA ``state`` to declare instead.

pve-ha-manager ``src/PVE/HA/Config.pm`` ``vm_is_ha_managed``/``$service_check_ha_state``: a guest
whose ``vm:<vmid>``/``ct:<vmid>`` resource is configured is HA-managed unless its state is
``ignored``; qemu-server ``API2/Qemu.pm`` ``vm_start``/``vm_shutdown`` (pve-container
``API2/LXC/Status.pm`` alike) then hand a start or shutdown to the HA manager, which carries out
the resource's requested ``state`` and reverts any other. Two declarations of one power state
would fight, so the guest's ``status:`` yields to the HA resource's ``state``: ``started`` for
``running``, ``stopped`` for ``stopped``.

The run's declared HA resources come from the state run (``remember_declared``, once per run and
target, kept in the run's memo); a guest HA manages live without a declaration in this run is
handled by ``guest.power.ha_route``, which routes the declared power through the HA manager and
says so.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

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
    target (``default``: the target of a chunk naming none), once per run; nothing outside a run."""
    if run is None or _DECLARED in ctx.memo:
        return
    chunks = run.declared(STATE, ctx.target.name, default)
    remember_declared(ctx, [{**chunk.args, "name": chunk.name} for chunk in chunks if chunk.fun == "present"])
    ctx.memo[_GUESTS] = {
        f"{ha_type}:{chunk.args.get('vmid')}"
        for ha_type, state in GUEST_STATES.items()
        for chunk in run.declared(state, ctx.target.name, default)
        if chunk.fun == "present"
    }


def guest_declared(ctx: PveContext, sid: str) -> bool:
    """Whether the run declares the guest of HA resource ``sid`` present (``remember_run``), so a
    create earlier in the apply makes it."""
    return sid in (ctx.memo.get(_GUESTS) or ())


def status_refusal(ctx: PveContext, ha_type: str, what: str, vmid: int, status: str) -> str | None:
    """Why ``status`` (``running``/``stopped``) may not be declared on guest ``vmid`` (``ha_type``
    ``ct``/``vm``; ``what``: how messages name it), or None: an HA resource of this run manages it
    (its state is not ``ignored``)."""
    sid = f"{ha_type}:{vmid}"
    state = (ctx.memo.get(_DECLARED) or {}).get(sid)
    if state is None or state == "ignored":
        return None
    return (
        f"{what}: status: {status} is refused: HA resource {sid} (declared in this run, state {state}) owns "
        f"its power state, and PVE hands every start and shutdown of an HA-managed guest to the HA manager "
        f"(pve-ha-manager HA/Config.pm vm_is_ha_managed). Drop status here and declare ha_state: "
        f"{HA_STATE.get(status, status)} on HA resource {sid} instead."
    )
