"""Long tasks of different guests overlapping within one state run, bounded per target and per node
(docs/design.md §5c).

Salt runs a state marked ``parallel: True`` in a forked process of its own (Salt 3006-3008
``salt/state.py`` ``State.call_parallel``, ``_call_parallel_target``) and makes every state that
requires it wait for its return (``check_requisite`` reconciles the running processes first). The
formula (``formula/proxmox/init.sls`` ``overlap``) marks only the guest creates of an apply, and this
module bounds them:

- ``task_concurrency`` (``proxmox:targets:<t>:task_concurrency``, default 1: no state is marked, the
  run stays sequential) and ``task_concurrency_per_node`` (default: ``task_concurrency``) bound how
  many guest states write at once on a target and on one node. Salt 3006 and 3007 start every
  parallel state at once (3008's ``state_max_parallel`` is a minion-wide count, not a target's or a
  node's), so the bound is the product's: ``TaskSlots``, ``flock``-ed slot files under the minion's
  cachedir, one set per target and one per node, taken by a forked state before the read it decides
  on (by a state of the run's own process before its first write) and held to its last read-back. A
  process that dies lets go of its slot (the kernel drops a dead process's locks).
- A forked state inherits the run memo and reads ahead of its parent as they were when Salt forked
  it, and what it learns dies with it: the formula keeps the first guest state of each kind in the
  run's process (``leads_its_kind``), which reads ahead the run's guests and what the forks would
  each read again (``guest.live.read_ahead``) before any fork, so every fork reads what the
  sequential run would read, no more.
- A forked state must not talk over its parent's connections: ``own_connections`` drops, in a new
  process, the cached sessions and clients it inherited (without closing them: they are its
  parent's) so that it opens its own.
- Ownership rows stay ordered and whole: every change is made under the rows file's lock against
  the rows as stored now (``ownership.keeper.Ownership._change``; ``ownership.files`` re-reads a file
  another process changed), one line appended and fsynced per change.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import time
from collections.abc import Iterator, Mapping, MutableMapping

from salt_proxmox.errors import Refused

#: The most guest tasks a target may run at once (its ``concurrency`` for reads has the same cap).
MAX_TASK_CONCURRENCY = 64
#: The keys of ``proxmox:targets:<t>`` this module reads.
KEYS = ("task_concurrency", "task_concurrency_per_node")
#: Seconds between two looks for a free slot.
SLOT_WAIT = 0.05


def parse_bounds(section: str, name: str, raw: Mapping[str, object]) -> tuple[tuple[int, int], list[str]]:
    """``((task_concurrency, task_concurrency_per_node), problems)`` of target ``raw``: whole numbers
    from 1 to ``MAX_TASK_CONCURRENCY``; 1 and, per node, the target's own bound when left out (a key
    given no value, None, is refused, not left out). A per-node bound above the target's is the
    target's (it can never be reached)."""
    problems = []
    values: list[int] = []
    for key in KEYS:
        value = raw[key] if key in raw else (values[0] if values else 1)
        whole = isinstance(value, int) and not isinstance(value, bool)
        if not whole or not 1 <= value <= MAX_TASK_CONCURRENCY:
            problems.append(
                f"{section}:{name}:{key}: expected a whole number of guest tasks at once, "
                f"1 to {MAX_TASK_CONCURRENCY}"
            )
            value = 1
        values.append(value)
    total, per_node = values
    return (total, min(per_node, total)), problems


def slots_dir(cachedir: object) -> str | None:
    """Where a minion keeps its slot files: ``<cachedir>/salt_proxmox/slots``; None without a cachedir
    (a module loaded outside Salt), where no slot is ever taken."""
    return os.path.join(cachedir, "salt_proxmox", "slots") if isinstance(cachedir, str) and cachedir else None


def _file_label(text: str) -> str:
    # A target or node name as a file name: PVE node names are DNS labels already.
    return re.sub(r"[^A-Za-z0-9_.-]", "_", text)


class TaskSlots:
    """The task slots of one target: ``total`` for the target, ``per_node`` for each node.

    ``held(node)`` takes a slot of ``node`` and then one of the target (always in that order, so
    two processes never wait on each other in a circle), waiting until both are free, and lets go
    of both on leaving. A slot is an exclusive ``flock`` on one of the files
    ``<directory>/<target>/node-<node>.<i>`` and ``…/target.<i>``: held by the open file, so one
    process of a run, another run or an ad-hoc ``salt-call`` count alike, and a killed process
    frees its slots. Raises Refused naming the directory when a slot file cannot be made (nothing
    was sent).
    """

    def __init__(self, directory: str, target: str, total: int, per_node: int, wait: float = SLOT_WAIT):
        self.directory = os.path.join(directory, _file_label(target))
        self.total = total
        self.per_node = per_node
        self.wait = wait

    @contextlib.contextmanager
    def held(self, node: str) -> Iterator[None]:
        taken: list[int] = []
        try:
            try:
                os.makedirs(self.directory, mode=0o700, exist_ok=True)
                taken.append(self._take(f"node-{_file_label(node)}", self.per_node))
                taken.append(self._take("target", self.total))
            except OSError as exc:
                raise Refused(
                    f"the task slots in {self.directory} cannot be taken ({exc.strerror or exc}); nothing "
                    "was sent. Make the minion's cachedir writable, or set task_concurrency: 1"
                ) from None
            yield
        finally:
            for fd in taken:
                os.close(fd)

    def _take(self, name: str, count: int) -> int:
        paths = [os.path.join(self.directory, f"{name}.{index}") for index in range(count)]
        # Each process starts at another slot, so waiting processes do not all try the same one first.
        first = os.getpid() % count
        while True:
            for path in paths[first:] + paths[:first]:
                fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(fd)
                    continue
                return fd
            time.sleep(self.wait)


#: Keys of the run's cache (Salt's ``__context__``) that hold an open connection: the PVE and PBS
#: sessions and clients, OpenBao's client.
CONNECTIONS = ("salt_proxmox.session/", "salt_proxmox.client/", "salt_proxmox.openbao.client")
#: The key of the run's cache naming the process that made its connections.
PROCESS = "salt_proxmox.process"


def own_connections(cache: MutableMapping) -> bool:
    """In a process other than the one that filled ``cache`` (a state Salt forked with ``parallel:
    True``), drop the connections it inherited, so that it opens its own: two processes writing on
    one TLS connection would garble both. They are not closed (their sockets are the parent's too).
    Returns whether any were dropped."""
    pid = os.getpid()
    kept = cache.get(PROCESS)
    if kept == pid:
        return False
    cache[PROCESS] = pid
    if kept is None:
        return False
    inherited = [key for key in cache if isinstance(key, str) and key.startswith(CONNECTIONS)]
    for key in inherited:
        del cache[key]
    return bool(inherited)


def forked(run: object) -> bool:
    """Whether the current state of ``run`` (``run.lowstate.Run``, None outside a state run) is one
    Salt runs in a process of its own (``parallel: True``, which the formula sets on creates)."""
    current = getattr(run, "current", None)
    return current is not None and current.forked


def leads_its_kind(run: object) -> bool:
    """Whether the current state of ``run`` (``run.lowstate.Run``, None outside a state run) is the
    first of its state module and function in the run: the formula never marks it ``parallel``, so it
    runs in the run's own process and reads ahead for the others before Salt forks them."""
    current = getattr(run, "current", None)
    if current is None:
        return False
    chunks = getattr(run, "chunks", [])
    first = next((c for c in chunks if (c.state, c.fun) == (current.state, current.fun)), None)
    return first is not None and first.same_as(current)


def plan_line(what: str, target: str, total: int, per_node: int, leads: bool = False) -> str:
    """The plan's line for a guest create on a target whose creates overlap; ``leads``: the first guest
    state of its kind in the run (``leads_its_kind``), created before the others start."""
    node = f", {per_node} per node" if per_node < total else ""
    bound = f"at most {total} at once on {target}{node} (task_concurrency)"
    if leads:
        return f"{what}: created first, alone; then the run's other creates overlap, {bound}"
    return (
        f"{what}: its create would run beside the run's other creates, {bound}; the states that require "
        "it wait for it"
    )
