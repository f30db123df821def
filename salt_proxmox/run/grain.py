"""When a minion driven by a master reloads the ``salt_proxmox:owned`` grain: once per state run,
after the run's last state of this project has run (docs/design.md §8, "Grains still show the rows,
reloaded once per run").

A master-driven minion serves every job from grains its main process loaded (a job is a fork of
it, or with ``multiprocessing: False`` a thread whose state run works on a copy of its options),
and only ``saltutil.refresh_modules`` makes that process load them again: Salt 3008
``salt/minion.py`` ``Minion.module_refresh`` runs every grains module (this package's reads the
rows file) and rebuilds every loader. ``saltutil.refresh_grains`` is no cheaper: it refreshes the
pillar too, or with ``refresh_pillar=False`` calls ``refresh_modules``
(``salt/modules/saltutil.py``). Asking for it after every changed row cost a full reload per row,
two per create, and made creates through a master several times slower than with
``salt-call --local`` (docs/performance.md, "Through a master").

So a changed row inside a state run only marks the reload due (``GrainRefresh.row_changed``), and
the reload is asked for once, when the run's last state of this project (a chunk whose state
module the registry holds) has run (``left``). A state Salt skips (a failed requisite) never calls
this project, so its run may end before that last state: a state that fails asks for a due reload
at once, and the first state of every run compares the grain its minion serves with the rows on
disk (``enter``'s ``stale``), so a grain left behind by a run that ended early, a killed run or an
ad-hoc call is reloaded at the end of the next run. A state declared ``parallel: True`` runs in a
process of its own (Salt 3008 ``salt/state.py`` ``State.call_parallel``,
``_call_parallel_target``), whose bookkeeping the run never sees: the run does not wait for it, and
it asks for a due reload itself when it ends. Outside a state run (an ad-hoc
``proxmox.lxc_create``) each changed row asks at once, as nothing tells when the caller is done.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping

from salt_proxmox import registry
from salt_proxmox.run.lowstate import Chunk, Run

#: Where ``of`` keeps the refresh bookkeeping in Salt's ``__context__``.
KEY = "salt_proxmox.grain_refresh"


def _tag(chunk: Chunk) -> tuple[str, str, str, str]:
    return (chunk.state, chunk.state_id, chunk.name, chunk.fun)


def _ours(chunk: Chunk) -> bool:
    try:
        registry.family_of(chunk.state)
    except LookupError:
        return False
    return True


class GrainRefresh:
    """The grain reload of one minion's runs: which of the current run's states of this project have
    yet to run, and whether a changed row (or a stale grain) makes a reload due.

    ``enter(run, stale)`` before a state of this project runs, ``left(failed)`` after it;
    ``row_changed()`` from the store after each row written. ``left`` and ``row_changed`` return
    True when the caller is to ask Salt for the reload now; the due mark is then cleared.
    """

    def __init__(self) -> None:
        self.run: object = None
        self.pending: set[tuple[str, str, str, str]] = set()
        self.due = False
        self.current: tuple[str, str, str, str] | None = None
        self.alone = False

    def enter(self, run: Run | None, stale: Callable[[], bool]) -> None:
        """A state of this project of ``run`` (None: a call outside a state run) is about to run.
        On the first of a run, ``stale()`` (the served grain differs from the rows on disk) marks
        the reload due."""
        if run is None:
            self.current = None
            return
        if run.key != self.run:
            self.run = run.key
            self.pending = {_tag(chunk) for chunk in run.chunks if _ours(chunk) and not chunk.forked}
            self.due = stale()
        self.current = _tag(run.current) if run.current is not None else None
        self.alone = run.current is not None and run.current.forked

    def row_changed(self) -> bool:
        """A row was written. True (reload now) outside a state run; inside one, the reload is due."""
        if self.current is None:
            return True
        self.due = True
        return False

    def left(self, failed: bool) -> bool:
        """The state ``enter`` announced has run (``failed``: its result is False). True when the
        reload is due and it was the run's last state of this project, or it failed (Salt may skip
        every later one), or it ran in a process of its own (``parallel: True``)."""
        current, self.current = self.current, None
        if current is None:
            return False
        self.pending.discard(current)
        if self.due and (failed or self.alone or not self.pending):
            self.due = False
            return True
        return False


def of(context: MutableMapping) -> GrainRefresh:
    """The minion's ``GrainRefresh``, kept in ``context`` (Salt's ``__context__``)."""
    kept = context.get(KEY)
    if not isinstance(kept, GrainRefresh):
        kept = context[KEY] = GrainRefresh()
    return kept
