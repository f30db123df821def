"""The pure rules of a guest's identity and of rows under concurrency (docs/design.md §8): which
fingerprint keys PVE generated, what ties a ``creating`` row to our create task, and an
``Ownership`` that changes only the row it read or wrote."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from salt_proxmox.guest.identity import CLOCK_SKEW, creation_tie, generated_keys
from salt_proxmox.lxc.family import LXC
from salt_proxmox.ownership.keeper import Ownership
from salt_proxmox.ownership.rows import CREATING, RowConflict
from salt_proxmox.ownership.stores import MemoryStore
from salt_proxmox.qemu.family import QEMU

TOKEN = "salt-provision@pve!apply"
T = 1_767_225_600


def test_volumes_never_count_a_drawn_mac_does_a_declared_one_does_not():
    prints = {"rootfs": "local-lvm:vm-150-disk-0 size=8G", "net0": "BC:24:11:00:00:01"}
    assert generated_keys(LXC, prints, {"net0": "name=eth0,bridge=vmbr0,ip=dhcp"}) == ["net0"]
    assert generated_keys(LXC, prints, {"net0": "name=eth0,hwaddr=bc:24:11:00:00:01"}) == []
    assert generated_keys(LXC, {"rootfs": prints["rootfs"]}, {}) == []
    # qemu-server create_vm generates smbios1's uuid and meta's ctime once per VM.
    assert generated_keys(QEMU, {"smbios1": "1f2e", "meta": "1767225600"}, {}) == ["smbios1", "meta"]


def _task(ttype="vzcreate", vmid=150, user="salt-provision@pve", token="apply", at=T, status="OK", n=1):  # noqa: S107
    # PVE's node_tasks splits a token's UPID user into user and tokenid (pve-manager
    # PVE/API2/Tasks.pm convert_token_task); fakepve keeps the whole token in user.
    who = f"{user}!{token}" if token else user
    return {"upid": f"UPID:pve1:{n:08X}:0:{at:08X}:{ttype}:{vmid}:{who}:", "type": ttype, "id": str(vmid),
            "user": user, "tokenid": token, "starttime": at, "status": status}  # fmt: skip


ROW = {"phase": CREATING, "started": T, "token": TOKEN}


def test_a_creating_row_is_tied_by_our_tokens_create_task_alone():
    assert creation_tie(LXC, 150, ROW, [_task()], {}) is None
    assert "does not show" in creation_tie(LXC, 150, ROW, [_task(user="root@pam", token=None)], {})
    assert "does not show" in creation_tie(LXC, 150, ROW, [_task(at=T - CLOCK_SKEW - 1)], {})
    assert "ended" in creation_tie(LXC, 150, ROW, [_task(status="unable to create CT 150")], {})
    later = _task("vzdestroy", user="root@pam", token=None, at=T + 9, n=2)
    assert "vzdestroy by root@pam" in creation_tie(LXC, 150, ROW, [_task(), later], {})
    assert "records no create task" in creation_tie(LXC, 150, {"phase": CREATING}, [_task()], {})
    # A recorded UPID names the task exactly.
    assert creation_tie(LXC, 150, {**ROW, "upid": _task()["upid"]}, [_task()], {}) is None
    assert "does not show" in creation_tie(LXC, 150, {**ROW, "upid": "UPID:x"}, [_task()], {})


def test_a_clone_is_tied_by_its_qmclone_of_the_template_and_a_vm_by_its_meta_ctime():
    clone = _task("qmclone", vmid=9000)
    assert creation_tie(QEMU, 170, ROW, [clone], {}, clone_of=9000) is None
    assert "does not show" in creation_tie(QEMU, 170, ROW, [clone], {})
    old = {"meta": str(T - CLOCK_SKEW - 60)}
    assert "meta ctime" in creation_tie(QEMU, 170, ROW, [clone], old, clone_of=9000)


def test_a_row_another_store_changed_is_neither_restored_over_nor_overwritten():
    store = MemoryStore()
    mine, theirs = Ownership(store), Ownership(store)
    assert mine.row("k") is None and theirs.row("k") is None
    mine.mark_creating("k", "web", {})
    with pytest.raises(RowConflict, match="was not set to creating"):
        theirs.mark_creating("k", "adhoc", {})
    # The other process took it over anyway (it read it now): our restore leaves its row.
    theirs.row("k")
    theirs.mark_owned("k", "adhoc", {})
    assert mine.restore("k", None) is False and store.rows["k"]["state_id"] == "adhoc"
    with pytest.raises(RowConflict):
        mine.forget("k")
    with pytest.raises(RowConflict):
        mine.mark_owned("k", "web", {})


def test_a_creating_row_of_a_process_still_running_is_not_taken_over_one_that_ended_is():
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    for pid, refused in ((os.getppid(), True), (ended.pid, False)):
        row = {
            "phase": CREATING,
            "instance": "x",
            "state_id": "web",
            "host": socket.gethostname(),
            "pid": pid,
        }
        store = MemoryStore({"k": row})
        ownership = Ownership(store)
        assert ownership.row("k") == row
        if refused:
            with pytest.raises(RowConflict, match=f"pid {pid}"):
                ownership.mark_creating("k", "web", {})
        else:
            ownership.mark_creating("k", "web", {})
            assert store.rows["k"]["pid"] == os.getpid()
