"""The run memo (``salt_proxmox.run.memo``): what a run learned once, never carried into the next."""

from __future__ import annotations

from salt_proxmox.run.memo import RunMemo


def test_what_a_run_learned_once_is_dropped_when_another_run_begins():
    """The release, tag style, access names and network markers a run keeps in ``memo`` hold for
    every state of that run and never reach the next: a minion that keeps ``__context__`` between
    jobs (``multiprocessing: False``) must read a PVE upgrade, or forget a failed apply, next run."""
    memo = RunMemo()
    memo.begin("run-1")
    memo["salt_proxmox.facts/lab/version"] = "8.4"
    memo.begin("run-1")
    assert memo == {"salt_proxmox.facts/lab/version": "8.4"}, "kept within its run"
    memo.begin("run-2")
    assert memo == {}, "dropped when another run begins"
    memo["x"] = 1
    memo.begin(None)
    assert memo == {}, "a call outside any run shares nothing"
