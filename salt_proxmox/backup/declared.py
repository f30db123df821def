"""What this state run declares that backup jobs and their coverage depend on: its guests and its jobs.

Read from the run's chunks (``run.lowstate.Run``, kept in the run memo by ``run.config.enter_run``),
so a guest or job the run creates counts before (and whether or not) its own state has run, in the
plan as in the apply. A chunk is on this target when it names it, or names none (then it is on the
only target configured; with several it is refused on its own). A chunk whose keys cannot be read
is left out: its own state refuses it. Outside a state run (an ad-hoc call) nothing is declared.

Every guest state asks (its ``backup:`` guard, the run's coverage note), so the run's guests are read
from its chunks once per run and kept in the run's memo: a run of N guests costs N chunk reads, not N².
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from salt_proxmox.errors import DeclarationError
from salt_proxmox.pve.constraints import vmid_number
from salt_proxmox.run.memo import current_run

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.run.context import PveContext
    from salt_proxmox.run.lowstate import Chunk

#: The guest state modules and the PVE ``type`` of their guests.
GUEST_STATES = {"proxmox_lxc": "lxc", "proxmox_qemu": "qemu"}
JOB_STATE = "proxmox_backup_job"


@dataclass(frozen=True)
class Guest:
    """A guest the run declares present: ``kind`` (lxc/qemu), ``vmid``, ``node``, ``pool`` (None when
    not declared), ``backup`` (the declaration's ``backup:``, None when not declared), ``state_id``."""

    kind: str
    vmid: int
    node: str
    pool: str | None
    backup: object
    state_id: str


def _chunks(ctx: PveContext, states: tuple[str, ...]) -> Iterator[Chunk]:
    run = current_run(ctx.memo)
    for chunk in getattr(run, "chunks", ()):
        if chunk.state in states and chunk.target(None) in (None, ctx.target.name):
            yield chunk


#: The run memo's keys of the run's declared guests on a target, ``(the run's chunk list, (Guest,
#: ...))``, and of ``guest``'s index of them, ``((Guest, ...), {vmid: Guest})``.
_GUESTS = "salt_proxmox.backup.declared-guests/{target}"
_BY_VMID = "salt_proxmox.backup.declared-guest-by-vmid/{target}"


def guests(ctx: PveContext) -> tuple[Guest, ...]:
    """Every guest this run declares present on ``ctx``'s target, in run order; read from the run's
    chunks once per run (kept in the run's memo with the chunk list it was read from)."""
    chunks = getattr(current_run(ctx.memo), "chunks", None)
    key = _GUESTS.format(target=ctx.target.name)
    kept = ctx.memo.get(key)
    if kept is not None and kept[0] is chunks:
        return kept[1]
    found = []
    for chunk in _chunks(ctx, tuple(GUEST_STATES)):
        if chunk.fun != "present":
            continue
        try:
            vmid = vmid_number(chunk.args.get("vmid"))
        except DeclarationError:
            continue
        pool = chunk.args.get("pool")
        found.append(
            Guest(
                GUEST_STATES[chunk.state],
                vmid,
                str(chunk.args.get("node") or ""),
                pool if isinstance(pool, str) and pool else None,
                chunk.args.get("backup"),
                chunk.state_id,
            )
        )
    ctx.memo[key] = (chunks, tuple(found))
    return ctx.memo[key][1]


def guest(ctx: PveContext, vmid: int) -> Guest | None:
    """The first guest this run declares present on ``ctx``'s target with ``vmid`` (``guests``), or
    None; indexed once per run."""
    declared = guests(ctx)
    key = _BY_VMID.format(target=ctx.target.name)
    kept = ctx.memo.get(key)
    if kept is None or kept[0] is not declared:
        index: dict[int, Guest] = {}
        for found in declared:
            index.setdefault(found.vmid, found)
        kept = ctx.memo[key] = (declared, index)
    return kept[1].get(vmid)


def jobs(ctx: PveContext) -> list[Chunk]:
    """Every backup job chunk of this run on ``ctx``'s target (present and absent), in run order."""
    return list(_chunks(ctx, (JOB_STATE,)))
