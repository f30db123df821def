"""A master-driven minion reloads the ``salt_proxmox:owned`` grain once per state run, not once per
changed row (salt_proxmox.run.grain, run.config.run_with_grain; docs/design.md §8).

Salt's only reload of the grains a minion daemon serves is ``saltutil.refresh_modules`` (Salt 3008
``salt/minion.py`` ``Minion.module_refresh``: every grains module and every loader again), which
cost a full reload per written row, two per create. The states here run as Salt's ``State.call``
runs them: the run's dunders (``__lowstate__``, ``__low__``, ``__instance_id__``) in the state
module's namespace, one call per chunk in order, a chunk skipped by a failed requisite never
called.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path

import pytest

from salt_proxmox.ownership.keeper import Ownership
from salt_proxmox.run import config as run_config
from salt_proxmox.run import grain

DECLARED = {"vmid": 150, "node": "pve1", "memory": "1024"}


class Minion:
    """One minion's Salt world for ``run_with_grain``: its ``__salt__`` (counting reloads),
    ``__opts__``, ``__context__`` and the grains it serves."""

    def __init__(self, tmp_path: Path, local: bool = False, cli: str = "salt-minion"):
        (tmp_path / "minion").write_text("id: m\n")
        self.opts = {"conf_file": str(tmp_path / "minion"), "local": local, "__cli": cli}
        self.reloads: list[dict] = []
        self.salt = {
            "config.get": lambda key, default=None: default,
            "saltutil.refresh_modules": lambda **kwargs: self.reloads.append(kwargs),
        }
        self.context: dict = {}
        self.grains: dict = {"os": "Debian"}
        self.instance = 0

    def store(self):
        return run_config.salt_store(self.salt, self.opts, self.context, self.grains)

    def state(
        self, chunks: list[dict], low: dict, write: Callable[[Ownership], object] | None, result=True
    ) -> dict:
        dunders = {"__lowstate__": chunks, "__low__": low, "__instance_id__": self.instance}

        def call() -> dict:
            if write is not None:
                write(Ownership(self.store()))
            return {"name": low["name"], "result": result, "changes": {}, "comment": ""}

        return run_config.run_with_grain(
            self.salt, self.opts, self.context, dunders, self.store, lambda: self.grains, call
        )

    def run(
        self, chunks: list[dict], writes: dict[str, Callable[[Ownership], object]], skip=(), fail=()
    ) -> None:
        """One state run of ``chunks``: each of this project's chunks called in order (those in
        ``skip`` never, as Salt skips a state whose requisite failed), ``writes[id]`` its rows."""
        self.instance += 1
        for low in chunks:
            if low["__id__"] in skip or not low["state"].startswith("proxmox_"):
                continue
            self.state(chunks, low, writes.get(low["__id__"]), result=low["__id__"] not in fail)


def chunk(state_id: str, state: str = "proxmox_lxc", fun: str = "present") -> dict:
    return {"state": state, "fun": fun, "__id__": state_id, "name": state_id, "order": 1}


def create(key: str, state_id: str) -> Callable[[Ownership], object]:
    """What a create writes: its row as creating, then as owned (two changed rows)."""

    def write(ownership: Ownership) -> None:
        ownership.mark_creating(key, state_id, DECLARED)
        Ownership(ownership.store).mark_owned(key, state_id, DECLARED)

    return write


def creates(n: int) -> tuple[list[dict], dict]:
    chunks = [chunk(f"ct{i}") for i in range(n)]
    return chunks, {f"ct{i}": create(f"lab/lxc/{1000 + i}", f"ct{i}") for i in range(n)}


def test_a_run_of_creates_reloads_the_grain_once_after_its_last_state_of_this_project(tmp_path: Path) -> None:
    minion = Minion(tmp_path)
    chunks, writes = creates(5)
    # A state of another module after ours: Salt never calls this project for it.
    chunks.append(chunk("motd", state="file", fun="managed"))
    calls = []
    original = minion.state

    def counted(chunks, low, write, result=True):
        calls.append((low["__id__"], len(minion.reloads)))
        return original(chunks, low, write, result)

    minion.state = counted
    minion.run(chunks, writes)
    assert [reloads for _, reloads in calls] == [0] * 5, "no reload before the run's last state"
    # One reload, awaited in a daemon's job: the return reaches the master with the grain current.
    assert minion.reloads == [{"async": False}]
    assert sorted(minion.grains["salt_proxmox"]["owned"]) == [f"lab/lxc/{1000 + i}" for i in range(5)]


def test_a_run_that_writes_nothing_over_a_current_grain_reloads_nothing(tmp_path: Path) -> None:
    minion = Minion(tmp_path)
    chunks, writes = creates(3)
    minion.run(chunks, writes)
    minion.reloads.clear()
    # The daemon now serves the rows on disk (its grains module read them at the reload).
    minion.grains["salt_proxmox"] = {"owned": minion.store().load()}
    minion.run(chunks, {})
    assert minion.reloads == []


def test_a_plan_over_a_grain_left_behind_reloads_it_once(tmp_path: Path) -> None:
    # An earlier run wrote rows the daemon never reloaded (killed, or its last state skipped): the
    # grain it serves lacks them, and the next run, even a plan, reloads it once, at its end.
    first = Minion(tmp_path)
    chunks, writes = creates(2)
    first.run(chunks, writes)
    minion = Minion(tmp_path)  # a job forked from a daemon that still serves no row
    minion.run(chunks, {})
    assert minion.reloads == [{"async": False}]


def test_a_failed_state_reloads_a_due_grain_at_once_as_later_ones_may_be_skipped(tmp_path: Path) -> None:
    minion = Minion(tmp_path)
    chunks, writes = creates(4)
    # ct1 writes its rows, then fails; ct2 requires it and is skipped; ct3 runs and writes.
    minion.run(chunks, writes, skip={"ct2"}, fail={"ct1"})
    assert len(minion.reloads) == 1, "the failed state reloaded; ct2, never called, is still pending"
    assert minion.store().load().keys() == {f"lab/lxc/{1000 + i}" for i in (0, 1, 3)}
    # The next run's first state finds the grain behind the rows ct3 wrote and reloads once.
    served = dict(minion.store().load())
    del served["lab/lxc/1003"]
    minion.grains["salt_proxmox"] = {"owned": served}
    minion.reloads.clear()
    minion.run(chunks, {})
    assert minion.reloads == [{"async": False}]


def test_salt_call_asks_for_the_reload_without_awaiting_it(tmp_path: Path) -> None:
    # salt-call (not --local) may run with no minion daemon to answer the reload: it is asked for,
    # never awaited (saltutil.refresh_modules async=False waits up to 30 s for the daemon).
    minion = Minion(tmp_path, cli="salt-call")
    chunks, writes = creates(2)
    minion.run(chunks, writes)
    assert minion.reloads == [{"async": True}]


def test_local_runs_never_reload(tmp_path: Path) -> None:
    minion = Minion(tmp_path, local=True)
    chunks, writes = creates(2)
    minion.run(chunks, writes)
    minion.grains.clear()
    minion.run(chunks, {})
    assert minion.reloads == []


def test_an_ad_hoc_call_reloads_after_each_row_it_writes(tmp_path: Path) -> None:
    # No state run: nothing says when the caller is done, so each changed row asks at once.
    minion = Minion(tmp_path)
    create("lab/lxc/150", "web")(Ownership(minion.store()))
    assert minion.reloads == [{}, {}]


def test_a_state_that_raises_still_reloads_a_due_grain(tmp_path: Path) -> None:
    minion = Minion(tmp_path)
    chunks, writes = creates(3)
    minion.instance += 1

    def broken(ownership: Ownership) -> None:
        writes["ct0"](ownership)
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        minion.state(chunks, chunks[0], broken)
    assert minion.reloads == [{"async": False}]


def test_a_parallel_state_reloads_when_its_own_process_ends_and_the_run_does_not_wait_for_it(
    tmp_path: Path,
) -> None:
    # Salt runs a parallel: True state in a process of its own (salt/state.py call_parallel): what
    # it writes and that it ran never reach the run's other states, so it reloads a due grain
    # itself, and the run's last sequential state does not wait for it to be crossed off.
    minion = Minion(tmp_path)
    chunks, writes = creates(3)
    chunks[2]["parallel"] = True
    minion.instance += 1
    minion.state(chunks, chunks[0], writes["ct0"])
    forked = Minion(tmp_path)  # the parallel state's process, with a copy of the run's bookkeeping
    forked.instance = minion.instance
    forked.context = {grain.KEY: copy.deepcopy(minion.context[grain.KEY])}
    forked.state(chunks, chunks[2], writes["ct2"])
    assert forked.reloads == [{"async": False}], "the parallel state reloaded its own rows"
    minion.state(chunks, chunks[1], writes["ct1"])
    assert minion.reloads == [{"async": False}], "ct1 was the run's last state it waits for"
