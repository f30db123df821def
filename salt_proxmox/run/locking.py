"""One state run's hold on the run locks of its targets (``ownership.runlock``), when the rows live in
OpenBao (docs/design.md §8, "The run lock").

Salt has no hook at a run's end, so the run's states of this project are counted as ``GrainRefresh``
counts them (``run.grain``: the chunks of ``__lowstate__`` whose state module the registry holds, each
crossed off as it runs): an apply's first state that writes takes the lock of its target
(``hold``), each later one renews it, and the last state of this project releases every lock the
run holds (``left``). A run that Salt ends early (its last states skipped by a failed requisite)
or that is killed leaves its lock until it expires (``lock_ttl``) or, on the same host, until its
process is gone: the next apply takes it over then, saying so. A plan takes no lock and notes an
apply holding one. A call outside a state run (``proxmox.pool_present`` from the command line)
holds the lock for that call alone.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Callable, Mapping, MutableMapping

from salt_proxmox.errors import DeclarationError, SaltProxmoxError
from salt_proxmox.ownership.bao import OpenBaoStore
from salt_proxmox.ownership.runlock import RunLock, shown
from salt_proxmox.run.grain import _ours, _tag
from salt_proxmox.run.lowstate import Run

#: Where ``of`` keeps the run's locks in Salt's ``__context__``.
KEY = "salt_proxmox.run_locks"


class RunLocks:
    """The locks one minion's current run holds, and the run's states yet to run.

    ``enter(run)`` before a state of this project, ``left()`` after it (returns notes to add);
    ``hold(store, target, test, minion, jid)`` from the state itself, once its target is known.
    ``lock`` makes the ``RunLock`` (tests inject a clock)."""

    def __init__(self, lock: Callable[[OpenBaoStore, str], RunLock] | None = None) -> None:
        self.lock = lock or (lambda store, target: RunLock(store.client, store.mount, store.path, target))
        self.run: object = None
        self.token = ""
        self.pending: set = set()
        self.current: object = None
        self.held: dict[str, RunLock] = {}
        self.looked: set[str] = set()

    def enter(self, run: Run | None) -> None:
        """A state of ``run`` (None: a call outside a state run) is about to run."""
        if run is None or run.key != self.run:
            self.run = None if run is None else run.key
            # Another holder of this run (a ``parallel`` state's process) shares it: Salt forks it
            # with this object in ``__context__``.
            self.token = str(uuid.uuid4())
            chunks = [] if run is None else run.chunks
            self.pending = {_tag(chunk) for chunk in chunks if _ours(chunk) and not chunk.forked}
            self.held, self.looked = {}, set()
        self.current = None if run is None or run.current is None else _tag(run.current)

    def me(self, minion: str, jid: object) -> dict:
        """Who holds a lock this run takes."""
        return {
            "minion": minion,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "run": self.token,
            "jid": None if jid is None else str(jid),
        }

    def hold(self, store: object, target: str, test: bool, minion: str, jid: object = None) -> str | None:
        """Before a state of ``target`` runs: nothing for a store without a run lock (a rows file);
        under ``test`` the note of another run holding it (read once per run and target); else
        take the lock (the run's first state of ``target``) or renew it. Returns a note for the
        state's comment, or None.

        Raises LockHeld (the holder named) after ``lock_timeout`` seconds, LockLost when the
        run's lock was taken over, OwnershipBaoError when OpenBao cannot be used."""
        if not isinstance(store, OpenBaoStore):
            return None
        me = self.me(minion, jid)
        if test:
            if target in self.held or target in self.looked:
                return None
            self.looked.add(target)
            holder, _version = self.lock(store, target).read()
            if holder is None or holder.get("run") == self.token:
                return None
            return f"an apply holds the run lock of target {target}: {shown(holder)}; it may change this plan"
        if target in self.held:
            self.held[target].renew(me, store.lock_ttl)
            return None
        lock = self.lock(store, target)
        note = lock.take(me, store.lock_timeout, store.lock_ttl)
        self.held[target] = lock
        return note

    def left(self, minion: str) -> list[str]:
        """The state ``enter`` announced has run. After the run's last state of this project (or a
        call outside a run), every lock the run holds is released; returns a note per lock that
        could not be (it expires by itself)."""
        current, self.current = self.current, None
        self.pending.discard(current)
        if self.run is not None and self.pending:
            return []
        notes = []
        me = self.me(minion, None)
        for target, lock in sorted(self.held.items()):
            try:
                lock.release(me)
            except SaltProxmoxError as exc:  # the run is done: the lock expires by itself
                notes.append(f"the run lock of target {target} was not released ({exc}); it expires")
        self.held = {}
        return notes


def of(context: MutableMapping) -> RunLocks:
    """The minion's ``RunLocks``, kept in ``context`` (Salt's ``__context__``)."""
    kept = context.get(KEY)
    if not isinstance(kept, RunLocks):
        kept = context[KEY] = RunLocks()
    return kept


def run_with_locks(
    context: MutableMapping, run: Run | None, minion: str, call: Callable[[], object]
) -> object:
    """``call()`` (one state of this project, or an ad-hoc call) entered in the run's locks
    (``RunLocks.enter``/``left``); a lock left unreleased is noted in its return's comment."""
    locks = of(context)
    locks.enter(run)
    ret = None
    try:
        ret = call()
        return ret
    finally:
        notes = locks.left(minion)
        if notes and isinstance(ret, Mapping) and isinstance(ret, MutableMapping):
            ret["comment"] = "\n".join([str(ret.get("comment") or ""), *notes]).strip()


def locked_return(
    context: MutableMapping,
    run: Run | None,
    store: object,
    target: str,
    plan: bool,
    minion: str,
    jid: object,
    name: str,
    fun: Callable[..., object],
    /,
    *args: object,
    **kwargs: object,
) -> dict:
    """The state return of ``fun(*args, **kwargs)`` (``run.config.outcome_return``) with ``target``'s
    run lock held: taken, renewed, or under ``plan`` only looked at, its note added to the comment; a
    lock that cannot be had refuses the state (``refused_return``), nothing written. Outside a state
    run (``run`` None) the lock is held for this call alone (``run_with_locks``)."""
    from salt_proxmox.run.config import outcome_return, refused_return

    def call() -> dict:
        try:
            note = of(context).hold(store, target, plan, minion, jid)
        except SaltProxmoxError as exc:
            return refused_return(name, exc)
        ret = outcome_return(name, fun, *args, **kwargs)
        if note:
            ret["comment"] = "\n".join(filter(None, [ret.get("comment"), note]))
        return ret

    if run is None:
        return run_with_locks(context, None, minion, call)  # type: ignore[return-value]
    return call()


def unlock(store: object, target: str, force: bool) -> dict:
    """``proxmox.unlock``: ``{target, held, holder, broken}`` of ``target``'s run lock; ``force``
    frees it whoever holds it. Raises DeclarationError when ``store`` keeps no run lock (a rows
    file), OwnershipBaoError when OpenBao cannot be used."""
    if not isinstance(store, OpenBaoStore):
        raise DeclarationError(
            "proxmox.unlock: ownership rows are kept in a file on this minion, which has no run lock "
            "(proxmox:ownership: {store: openbao, ...} keeps them and the lock in OpenBao)"
        )
    lock = RunLock(store.client, store.mount, store.path, target)
    holder = lock.force() if force else lock.read()[0]
    return {"target": target, "held": holder is not None, "holder": holder, "broken": bool(force and holder)}
