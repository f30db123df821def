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


def test_a_pool_knows_the_guests_this_run_moves_out_of_it_or_destroys():
    """A pool's delete later in the run does not count them (PVE drops a destroyed guest from its pool:
    pve-access-control ``PVE/AccessControl.pm`` ``remove_vm_access``); another pool's members, another
    target's, and another run's do not leave."""
    from salt_proxmox.run.memo import leaving_pool, note_leaving_pool

    memo = RunMemo()
    memo.begin("run-1")
    note_leaving_pool(memo, "demo", "prod", "lxc", 150)
    note_leaving_pool(memo, "demo", None, "qemu", 210)  # destroyed: it leaves every pool
    note_leaving_pool(memo, "demo", "lab", "lxc", 151)
    assert leaving_pool(memo, "demo", "prod") == {("lxc", 150), ("qemu", 210)}
    assert leaving_pool(memo, "other", "prod") == set()
    memo.begin("run-2")
    assert leaving_pool(memo, "demo", "prod") == set()
