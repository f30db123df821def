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
