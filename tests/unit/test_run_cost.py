"""What a state costs does not grow with the size of its run: what every state of a run needs is
worked out once per run (docs/performance.md), and what Salt hands a state is read without making
Salt do work per state it would not do anyway."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import SimpleNamespace

from salt_proxmox.backup import declared
from salt_proxmox.run.lowstate import Run
from salt_proxmox.run.memo import RunMemo, keep_run


def _low(vmid: int, state: str = "proxmox_lxc", fun: str = "present", **args) -> dict:
    """A guest chunk as Salt 3008 builds it (``salt/state.py`` ``compile_high_data``)."""
    return {
        "__id__": f"ct{vmid}",
        "name": f"ct{vmid}",
        "state": state,
        "fun": fun,
        "__sls__": "proxmox",
        "__env__": "base",
        "order": 10000,
        "vmid": vmid,
        "node": "pve1",
        **args,
    }


def _ctx(run: Run, target: str = "lab") -> SimpleNamespace:
    memo = RunMemo()
    memo.begin(run.key)
    keep_run(memo, run)
    return SimpleNamespace(memo=memo, target=SimpleNamespace(name=target))


def test_the_runs_declared_guests_are_read_from_its_chunks_once_per_run(monkeypatch):
    """Every guest state asks what the run declares (its ``backup:`` guard and the run's coverage
    note): reading every chunk each time made a run of N guests read N² chunks (4.6 of 10.6 s under
    the profiler at N = 1000). Read once per run, the answer is the same at every state, and another
    run reads its own."""
    reads = []
    real = declared.vmid_number
    monkeypatch.setattr(declared, "vmid_number", lambda value: reads.append(value) or real(value))
    chunks = [_low(vmid, pool="prod" if vmid == 102 else None) for vmid in range(100, 150)]
    chunks.append(_low(150, state="proxmox_qemu"))
    chunks.append(_low(151, fun="absent"))
    chunks.append(_low(152, target="other"))
    run = Run(chunks, None, "run-1")
    ctx = _ctx(run)
    first = declared.guests(ctx)
    for low in chunks:
        ctx.memo.chunks = run.at(low)  # what enter_run keeps at each state of the run
        assert declared.guests(ctx) == first
    assert len(reads) == 51, "each declared guest's vmid read once in the run"
    assert [guest.vmid for guest in first] == [*range(100, 150), 150]
    assert declared.guest(ctx, 102) == declared.Guest("lxc", 102, "pve1", "prod", None, "ct102")
    assert declared.guest(ctx, 150).kind == "qemu"
    assert declared.guest(ctx, 151) is None, "declared absent"
    assert declared.guest(ctx, 152) is None, "declared on another target"

    later = Run([_low(200)], None, "run-2")
    ctx.memo.begin(later.key)
    keep_run(ctx.memo, later)
    assert [guest.vmid for guest in declared.guests(ctx)] == [200], "another run reads its own"
    assert declared.guest(ctx, 102) is None


class _CountingOpts(Mapping):
    """A mapping that counts how often its size is asked, as Salt 3008's ``OptsDict`` computes it
    (``salt/utils/optsdict.py`` ``__len__``: every key of every layer, about 0.3 ms)."""

    def __init__(self, **values: object):
        self.values = values
        self.sized = 0

    def __getitem__(self, key: str) -> object:
        return self.values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.values)

    def __len__(self) -> int:
        self.sized += 1
        return len(self.values)


def test_the_skin_reads_salts_opts_without_sizing_them():
    """``__opts__`` is read for ``test`` only: asking its truth value made Salt count every option of
    every layer once per state."""
    from salt_proxmox.run.skin import state_call

    opts = _CountingOpts(test=True)
    dunders = {"__virtualname__": "proxmox_lxc", "__opts__": opts, "__low__": {"__id__": "web"}}
    function, kwargs = state_call(
        dunders, "present", {"name": "web", "vmid": 150, "node": "pve1", "kwargs": {}}
    )
    assert (function, kwargs["test"], kwargs["vmid"]) == ("proxmox.lxc_present", True, 150)
    assert opts.sized == 0


def test_a_state_that_asks_for_its_run_several_times_parses_its_chunk_once(monkeypatch):
    """Each guest state asks for its run four times (config read once per run, entering the run,
    the check of twin declarations, the read ahead): the chunk running is parsed once per state, and
    the run's chunks once per run."""
    from salt_proxmox.run import lowstate

    parsed = []
    real = lowstate.Chunk.of.__func__
    monkeypatch.setattr(
        lowstate.Chunk, "of", classmethod(lambda cls, low: parsed.append(1) or real(cls, low))
    )
    chunks = [_low(vmid) for vmid in range(100, 110)]
    cache: dict = {}
    for low in chunks:
        kwargs = {"__lowstate__": chunks, "__low__": low, "__instance_id__": 7}
        runs = [lowstate.Run.of(kwargs, cache) for _ in range(4)]
        assert all(run.current.state_id == f"ct{low['vmid']}" for run in runs)
        assert {run.key for run in runs} == {7}
    assert len(parsed) == 10 + 10, "the run's 10 chunks once, then each state's own chunk once"


def test_a_state_reads_its_own_ownership_row_without_copying_every_row(tmp_path, monkeypatch):
    """``Ownership.row`` reads the rows as stored (the store's ``derived``) and copies only the row it
    returns: copying every row for each state cost N² at N states."""
    from salt_proxmox.ownership import files
    from salt_proxmox.ownership.keeper import Ownership

    rows = {
        f"lab/lxc/{vmid}": {"phase": "owned", "instance": f"i{vmid}", "state_id": f"ct{vmid}", "declared": {}}
        for vmid in range(100, 150)
    }
    store = files.FileStore(tmp_path / "owned.json")
    store.save(rows)
    loads = []
    real = files.FileStore.load
    monkeypatch.setattr(files.FileStore, "load", lambda self: loads.append(1) or real(self))
    row = Ownership(store).row("lab/lxc/107")
    assert row == rows["lab/lxc/107"] and loads == []
    row["instance"] = "changed"
    assert Ownership(store).row("lab/lxc/107")["instance"] == "i107", "the row returned is a copy"
    assert Ownership(store).row("lab/lxc/999") is None


def test_the_note_of_undeclared_rows_reads_the_rows_for_the_first_state_of_a_run_only():
    """Every state of a run asks for the note of owned objects the run no longer declares; only the
    first gives it, so only the first reads the rows, and a read that fails leaves the note to a
    later state of the run."""
    import pytest

    from salt_proxmox.errors import SaltProxmoxError
    from salt_proxmox.owned.declared import undeclared_once

    rows = {"lab/lxc/200": {"phase": "owned", "instance": "a", "state_id": "old", "declared": {}}}
    reads = []

    def failing():
        raise SaltProxmoxError("owned.json: cannot be read")

    def reading():
        reads.append(1)
        return rows

    run = Run([_low(100)], _low(100), "run-1")
    cache: dict = {}
    with pytest.raises(SaltProxmoxError):
        undeclared_once(run, cache, failing, "lab")
    notes = [undeclared_once(run, cache, reading, "lab") for _ in range(5)]
    assert notes[0] == [
        "owned by this minion, no longer declared: lxc 200 on lab (state old); declare it, or ensure: "
        "absent to forget it (removal: destroy to delete it)"
    ]
    assert notes[1:] == [[]] * 4 and reads == [1]


def test_the_formula_checks_printable_keys_without_reading_each_characters_category(monkeypatch):
    """Every key of every entry is checked for control characters and named in the slot check: a
    printable key is known free of them at once (a control character is never printable), so a
    pillar of N entries is not read character by character; a key that is not printable is still
    read so, and only its control characters are escaped."""
    import unicodedata

    from tests.support.formula import formula

    categories = []
    real = unicodedata.category
    monkeypatch.setattr(unicodedata, "category", lambda char: categories.append(char) or real(char))
    module = formula()
    module.__pillar__ = {
        "proxmox": {
            "lxc": {f"ct{vmid}": {"vmid": vmid, "node": "pve1", "memory": 512} for vmid in range(100, 150)}
        }
    }
    states = module.run()
    assert len(states) == 50 and categories == []
    assert module._printable("web\u00a0x") == "web\u00a0x", "printable or not, only Cc is escaped"
    assert module._printable("a\tb") == "a\\tb"
    assert module._key_problem("web\u00a0x") is None and "control character" in module._key_problem("a\nb")


def test_a_row_that_would_not_change_is_confirmed_without_copying_every_row(tmp_path, monkeypatch):
    """A no-drift apply confirms each guest's row (``mark_owned`` with what it already says): under
    the lock it reads the rows as stored and writes nothing, copying no row; a row that changes is
    written with every other row kept."""
    from salt_proxmox.ownership import files
    from salt_proxmox.ownership.keeper import Ownership

    rows = {
        f"lab/lxc/{vmid}": {"phase": "owned", "instance": f"i{vmid}", "state_id": f"ct{vmid}", "declared": {}}
        for vmid in range(100, 150)
    }
    store = files.FileStore(tmp_path / "owned.json")
    store.save(rows)
    loads, saves = [], []
    real_load, real_save = files.FileStore.load, files.FileStore.save
    monkeypatch.setattr(files.FileStore, "load", lambda self: loads.append(1) or real_load(self))
    monkeypatch.setattr(
        files.FileStore, "save", lambda self, *a, **k: saves.append(1) or real_save(self, *a, **k)
    )
    Ownership(store).mark_owned("lab/lxc/107", "ct107", {})
    assert (loads, saves) == ([], []), "nothing copied, nothing written"
    Ownership(store).mark_owned("lab/lxc/107", "ct107", {"memory": 512})
    assert saves == [1]
    after = real_load(files.FileStore(tmp_path / "owned.json"))
    assert after["lab/lxc/107"]["declared"] == {"memory": 512} and after["lab/lxc/107"]["instance"] == "i107"
    assert {key: row for key, row in after.items() if key != "lab/lxc/107"} == {
        key: row for key, row in rows.items() if key != "lab/lxc/107"
    }
