"""Overlapping guest tasks (``salt_proxmox.run.overlap``, docs/design.md §5c) without a server: the
target's bounds, the task slots that enforce them across processes, a forked state's own connections,
which states the formula marks ``parallel`` (Salt ``salt/state.py`` ``State.call_parallel`` forks
each), and the rows file under processes that write at once."""

from __future__ import annotations

import fcntl
import multiprocessing
import os
import signal
import time
from pathlib import Path

import pytest
import requests

from salt_proxmox.errors import DeclarationError, Refused
from salt_proxmox.ownership.files import FileStore
from salt_proxmox.ownership.keeper import Ownership
from salt_proxmox.ownership.stores import MemoryStore
from salt_proxmox.pbs.client import parse_pbs_target
from salt_proxmox.pve.client import parse_target
from salt_proxmox.run import overlap
from salt_proxmox.run.config import context_for
from salt_proxmox.run.overlap import TaskSlots, own_connections
from tests.support.formula import formula
from tests.support.overlap import rows_problem

RAW = {"members": ["https://pve1:8006"], "credentials": {"source": "static"}}
FORK = multiprocessing.get_context("fork")


# ------------------------------------------------------------------------------------------- bounds


def test_task_concurrency_defaults_to_one_and_the_node_bound_to_the_targets():
    """Left out, guest tasks run one at a time (today's behaviour); a node's bound defaults to the
    target's, and one above the target's is the target's (it could never be reached)."""
    target = parse_target("homelab", RAW)
    assert (target.task_concurrency, target.task_concurrency_per_node) == (1, 1)
    target = parse_target("homelab", {**RAW, "task_concurrency": 8})
    assert (target.task_concurrency, target.task_concurrency_per_node) == (8, 8)
    target = parse_target("homelab", {**RAW, "task_concurrency": 8, "task_concurrency_per_node": 3})
    assert (target.task_concurrency, target.task_concurrency_per_node) == (8, 3)
    target = parse_target("homelab", {**RAW, "task_concurrency": 2, "task_concurrency_per_node": 5})
    assert target.task_concurrency_per_node == 2


@pytest.mark.parametrize("key", ["task_concurrency", "task_concurrency_per_node"])
@pytest.mark.parametrize("bad", [0, -1, overlap.MAX_TASK_CONCURRENCY + 1, "4", True, 2.5, None])
def test_a_task_bound_that_is_no_whole_number_in_range_is_refused_by_name(key, bad):
    # None is a key written with no value (`task_concurrency:` in YAML): not left out, so refused as
    # `concurrency: ` and `timeout: ` are, not taken for the default.
    with pytest.raises(DeclarationError, match=f"proxmox:targets:homelab:{key}: expected a whole number"):
        parse_target("homelab", {**RAW, "task_concurrency": 2, key: bad})


def test_a_pbs_target_has_no_guest_tasks_to_overlap():
    with pytest.raises(DeclarationError, match="unknown key"):
        parse_pbs_target("backup1", {**RAW, "members": ["https://pbs:8007"], "task_concurrency": 4})


# --------------------------------------------------------------------------------------- task slots


def _hold(directory: str, node: str, seconds: float, counter, lock, peaks) -> None:
    slots = TaskSlots(directory, "lab", total=3, per_node=2, wait=0.005)
    with slots.held(node):
        with lock:
            counter["all"] = counter.get("all", 0) + 1
            counter[node] = counter.get(node, 0) + 1
            peaks["all"] = max(peaks.get("all", 0), counter["all"])
            peaks[node] = max(peaks.get(node, 0), counter[node])
        time.sleep(seconds)
        with lock:
            counter["all"] -= 1
            counter[node] -= 1


def test_task_slots_bound_processes_per_target_and_per_node(tmp_path):
    """Ten processes on two nodes, each holding a slot a while: never more than the target's 3 at once,
    never more than 2 on one node, and more than one at once (they do overlap)."""
    with FORK.Manager() as manager:
        counter, peaks, lock = manager.dict(), manager.dict(), manager.Lock()
        procs = [
            FORK.Process(target=_hold, args=(str(tmp_path), f"pve{i % 2 + 1}", 0.2, counter, lock, peaks))
            for i in range(10)
        ]
        for proc in procs:
            proc.start()
        for proc in procs:
            proc.join(30)
            assert proc.exitcode == 0
        peaks = dict(peaks)
    assert 1 < peaks["all"] <= 3, peaks
    assert peaks["pve1"] <= 2 and peaks["pve2"] <= 2, peaks


def _hold_forever(directory: str, ready) -> None:
    with TaskSlots(directory, "lab", total=1, per_node=1).held("pve1"):
        ready.set()
        time.sleep(60)


def test_a_killed_process_frees_its_slot(tmp_path):
    """A slot is a lock of the open file: the kernel drops it with the process, so a killed apply never
    leaves a target without slots."""
    ready = FORK.Event()
    holder = FORK.Process(target=_hold_forever, args=(str(tmp_path), ready))
    holder.start()
    assert ready.wait(30)
    slots = TaskSlots(str(tmp_path), "lab", total=1, per_node=1, wait=0.01)
    os.kill(holder.pid, signal.SIGKILL)
    holder.join(30)
    with slots.held("pve1"):
        pass


def test_a_slot_that_cannot_be_made_is_refused_naming_the_directory(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with (
        pytest.raises(Refused, match=f"{blocker}.*nothing was sent"),
        TaskSlots(str(blocker), "lab", 2, 2).held("pve1"),
    ):
        pass


def _locked(directory: Path) -> list[str]:
    """The slot files of ``directory`` someone holds (another open file's flock conflicts, even in
    this process)."""
    held = []
    for path in sorted(directory.iterdir()):
        fd = os.open(path, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            held.append(path.name.rsplit(".", 1)[0])
        finally:
            os.close(fd)
    return held


STATIC = {
    "source": "static",
    "read": {"token_id": "r@pve!r", "secret": "s"},
    "provision": {"token_id": "p@pve!p", "secret": "s"},
}


def test_a_context_holds_slots_only_when_tasks_overlap(tmp_path):
    """``task_concurrency: 1`` (the default) takes no slot at all; above 1 a write holds one slot of
    its node and one of the target until the state ends (``release_slots``)."""
    targets = {"lab": {**RAW, "credentials": STATIC}}
    ctx = context_for(targets, "lab", None, {}, MemoryStore(), str(tmp_path))
    assert ctx.slots is None
    ctx.write_slot("pve1")
    assert not (tmp_path / "lab").exists()
    targets["lab"]["task_concurrency"] = 2
    ctx = context_for(targets, "lab", None, {}, MemoryStore(), str(tmp_path))
    ctx.write_slot("pve1")
    ctx.write_slot("pve1")  # held once per state
    assert _locked(tmp_path / "lab") == ["node-pve1", "target"]
    ctx.release_slots()
    assert _locked(tmp_path / "lab") == []


# ---------------------------------------------------------------------------------- connections


def test_a_forked_state_drops_the_connections_it_inherited_and_keeps_the_rest():
    """Two processes writing on one TLS connection garble both: a process Salt forked for a parallel
    state makes its own sessions, clients and OpenBao client (the inherited ones are not closed: they
    are the parent's). The run's reads, memo and credentials stay."""
    session = requests.Session()
    cache = {
        "salt_proxmox.session/lab": session,
        "salt_proxmox.client/lab": object(),
        "salt_proxmox.openbao.client": object(),
        "salt_proxmox.reads/lab": "reads",
        "salt_proxmox.read/lab": "credential",
    }
    assert own_connections(cache) is False, "the first process keeps what it made"
    assert "salt_proxmox.session/lab" in cache
    cache[overlap.PROCESS] = os.getpid() + 1  # as a forked child finds it
    assert own_connections(cache) is True
    assert sorted(cache) == [overlap.PROCESS, "salt_proxmox.read/lab", "salt_proxmox.reads/lab"]
    assert cache[overlap.PROCESS] == os.getpid()


def test_a_context_built_in_a_forked_process_has_a_session_of_its_own():
    targets = {"lab": {**RAW, "credentials": STATIC}}
    cache: dict = {}
    parent = context_for(targets, "lab", None, cache, MemoryStore())
    cache[overlap.PROCESS] = os.getpid() + 1
    child = context_for(targets, "lab", None, cache, MemoryStore())
    assert child.client.session is not parent.client.session


# -------------------------------------------------------------------------------------- formula


def _render(pillar: dict, opts: dict, targets: dict, rows: list[dict] | Exception) -> dict:
    module = formula()
    module.__pillar__ = pillar
    module.__opts__ = opts

    def owned(sls=None):
        assert sls == "", "the rows only, no second render of the formula"
        if isinstance(rows, Exception):
            raise rows
        return rows

    module.__salt__ = {"config.get": lambda key, default=None: targets, "proxmox.owned": owned}
    return module.run()


def _parallel(states: dict) -> list[str]:
    return [sid for sid, state in states.items() for args in state.values() if {"parallel": True} in args]


GUESTS = {
    "proxmox": {
        "lxc": {f"ct{vmid}": {"vmid": vmid, "node": "pve1"} for vmid in (101, 102, 103, 104)},
        "qemu": {f"vm{vmid}": {"vmid": vmid, "node": "pve2"} for vmid in (201, 202)},
        "pools": {"prod": {}},
    }
}
ROWS = [{"target": "lab", "family": "lxc", "id": "103", "phase": "owned"}]
ROWS_CREATING = [{"target": "lab", "family": "lxc", "id": "104", "phase": "creating"}]


def test_the_formula_marks_parallel_only_the_creates_after_the_first_guest_of_each_kind():
    """Owned guests stay in the run's process (a fork per guest would cost a no-drift run of 1000
    guests seconds), and so does the first guest state of each kind, which reads ahead for the others
    before Salt forks them; a guest with a creating row (a create to finish) is marked."""
    states = _render(GUESTS, {"test": False}, {"lab": {"task_concurrency": 4}}, ROWS + ROWS_CREATING)
    assert _parallel(states) == ["proxmox-lxc-ct102", "proxmox-lxc-ct104", "proxmox-qemu-vm202"]


@pytest.mark.parametrize(
    ("opts", "targets", "rows"),
    [
        ({"test": True}, {"lab": {"task_concurrency": 4}}, ROWS),  # a plan runs in one process
        ({"test": False}, {"lab": {}}, ROWS),  # task_concurrency 1: today's sequential apply
        ({"test": False}, {"lab": {"task_concurrency": 1}}, ROWS),
        ({"test": False, "_ssh_version": (8, 9)}, {"lab": {"task_concurrency": 4}}, ROWS),  # salt-ssh
        ({"test": False}, {"lab": {"task_concurrency": 4}}, RuntimeError("rows unreadable")),
        ({"test": False}, {"lab": {"task_concurrency": 4}, "other": {}}, ROWS),  # guests name no target
    ],
)
def test_the_formula_marks_nothing_where_the_apply_stays_sequential(opts, targets, rows):
    assert _parallel(_render(GUESTS, opts, targets, rows)) == []


def test_the_formula_marks_a_guest_on_a_named_target_by_that_targets_bound():
    pillar = {"proxmox": {"lxc": {f"ct{v}": {"vmid": v, "node": "pve1", "target": "b"} for v in (1, 2, 3)}}}
    targets = {"a": {"task_concurrency": 4}, "b": {"task_concurrency": 2}}
    assert _parallel(_render(pillar, {"test": False}, targets, [])) == ["proxmox-lxc-ct2", "proxmox-lxc-ct3"]
    targets["b"] = {}
    assert _parallel(_render(pillar, {"test": False}, targets, [])) == []


def test_rendered_without_salt_the_formula_marks_nothing():
    module = formula()
    module.__pillar__ = GUESTS
    assert _parallel(module.run()) == []


# ----------------------------------------------------------------------------------------- rows


def _create_rows(path: str, first: int, count: int) -> None:
    store = FileStore(path)
    for vmid in range(first, first + count):
        key = f"lab/lxc/{vmid}"
        ownership = Ownership(store)
        ownership.row(key)
        ownership.mark_creating(key, f"ct{vmid}", {"vmid": vmid}, token="t")
        ownership.note_task(key, f"UPID:pve1:0:0:0:vzcreate:{vmid}:t:")
        ownership.mark_owned(key, f"ct{vmid}", {"vmid": vmid})


def test_processes_writing_rows_at_once_never_interleave_a_row(tmp_path):
    """Four processes each take 40 rows through creating, its UPID and owned in one rows file at once
    (as the states Salt forks do): every line is whole, each row's lines are in order, none is lost,
    across the file's rewrites as a snapshot (``FileStore.COMPACT_AFTER``)."""
    path = tmp_path / "rows.json"
    procs = [FORK.Process(target=_create_rows, args=(str(path), 1000 + 100 * i, 40)) for i in range(4)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(60)
        assert proc.exitcode == 0
    keys = [f"lab/lxc/{1000 + 100 * i + n}" for i in range(4) for n in range(40)]
    assert not rows_problem(path, keys), rows_problem(path, keys)
    assert len(FileStore(path).load()) == 160


def test_without_the_rows_lock_processes_would_lose_rows(tmp_path, monkeypatch):
    """The test above can fail: with the lock taken away, processes writing at once lose rows (each
    appends or rewrites against the rows it read before another's change)."""
    import contextlib

    monkeypatch.setattr(FileStore, "locked", lambda self: contextlib.nullcontext())
    lost = 0
    for attempt in range(5):
        path = tmp_path / f"rows{attempt}.json"
        procs = [FORK.Process(target=_create_rows, args=(str(path), 1000 + 100 * i, 40)) for i in range(4)]
        for proc in procs:
            proc.start()
        for proc in procs:
            proc.join(60)
        keys = [f"lab/lxc/{1000 + 100 * i + n}" for i in range(4) for n in range(40)]
        lost += bool(rows_problem(path, keys))
    assert lost, "without the lock, some run lost or tore a row"


def test_rows_problem_names_a_torn_line_and_a_row_out_of_order(tmp_path):
    path = tmp_path / "rows.json"
    path.write_text('{"owned": {}}\n{"key": "lab/lxc/1", "row": {"phase": "owned"}}\n')
    assert "went through ['owned']" not in rows_problem(path, ["lab/lxc/1"])
    path.write_text(
        '{"owned": {}}\n{"key": "lab/lxc/1", "row": {"phase": "owned"}}\n'
        '{"key": "lab/lxc/1", "row": {"phase": "creating"}}\n'
    )
    assert "is not owned" in rows_problem(path, ["lab/lxc/1"])
    path.write_text('{"owned": {}}\n{"key": "lab/lxc/1", "row"\n')
    assert "not JSON" in rows_problem(path, ["lab/lxc/1"])
    Path(path).write_text('{"owned": {}}\n{"key": "lab/lxc/1", "row": {"phase": "owned"}}')
    assert "unfinished line" in rows_problem(path, ["lab/lxc/1"])


def test_the_plan_says_which_create_runs_first_and_alone_and_which_overlap():
    """The plan names the bound on each create, and which one leads (the first guest state of its kind,
    which the formula never marks ``parallel``): it is created alone, the others beside each other."""
    from salt_proxmox.run.lowstate import Run

    lowstate = [
        {"__id__": "pool", "state": "proxmox_pool", "fun": "present", "name": "prod"},
        *({"__id__": f"ct{v}", "state": "proxmox_lxc", "fun": "present", "name": f"ct{v}"} for v in (1, 2)),
        {"__id__": "vm3", "state": "proxmox_qemu", "fun": "present", "name": "vm3"},
    ]
    run = Run(lowstate)
    assert [overlap.leads_its_kind(run.at(low)) for low in lowstate] == [True, True, False, True]
    assert overlap.leads_its_kind(None) is False
    marked = {**lowstate[2], "parallel": True}
    assert [overlap.forked(Run([*lowstate, marked]).at(low)) for low in (lowstate[1], marked)] == [
        False,
        True,
    ]
    assert overlap.forked(None) is False
    assert overlap.plan_line("CT 2 on pve1", "lab", 8, 8) == (
        "CT 2 on pve1: its create would run beside the run's other creates, at most 8 at once on lab "
        "(task_concurrency); the states that require it wait for it"
    )
    assert overlap.plan_line("CT 1 on pve1", "lab", 8, 2, leads=True) == (
        "CT 1 on pve1: created first, alone; then the run's other creates overlap, at most 8 at once on lab, "
        "2 per node (task_concurrency)"
    )
