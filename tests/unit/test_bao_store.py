"""Ownership rows in OpenBao (``salt_proxmox.ownership.bao``) and the run lock
(``ownership.runlock``, ``run.locking``) against a stub of hvac's KV version 2 calls.

``StubKv`` answers as OpenBao's ``builtin/logical/kv`` ``path_data.go`` does (each differing answer
measured against the ``bao`` dev server, ``tests/integration/test_bao_store.py``): a write with a
``cas`` other than the entry's version is HTTP 400 "check-and-set parameter did not match the
current version"; a missing entry or list is a 404 with no error; a missing mount a 404 naming "no
handler for route"; a sealed server a 503.
"""

from __future__ import annotations

import copy

import hvac.exceptions
import pytest

from salt_proxmox.errors import DeclarationError
from salt_proxmox.ownership.bao import (
    CAS_MISMATCH,
    OpenBaoStore,
    OwnershipBaoError,
    parse_ownership,
    policy_hcl,
)
from salt_proxmox.ownership.keeper import Ownership
from salt_proxmox.ownership.rows import OWNED, RowConflict, StoreConflict
from salt_proxmox.ownership.runlock import LockHeld, LockLost, RunLock
from salt_proxmox.run import locking

TOKEN = "s.stub-token-never-shown"


class StubKv:
    """hvac's ``secrets.kv.v2`` over a dict ``{path: [versions]}``; ``fail`` makes every call raise
    it; ``before_write(path)`` runs before a write is judged (another writer getting there first)."""

    def __init__(self):
        self.entries: dict[str, list[dict]] = {}
        self.writes: list[tuple[str, int]] = []
        self.fail: Exception | None = None
        self.before_write = None

    def _check(self):
        if self.fail is not None:
            raise self.fail

    def read_secret_version(self, path, mount_point, raise_on_deleted_version):
        self._check()
        if path not in self.entries:
            raise hvac.exceptions.InvalidPath(errors=[])
        versions = self.entries[path]
        return {"data": {"data": copy.deepcopy(versions[-1]), "metadata": {"version": len(versions)}}}

    def create_or_update_secret(self, path, secret, cas, mount_point):
        self._check()
        if self.before_write is not None:
            hook, self.before_write = self.before_write, None
            hook(path)
        if cas != len(self.entries.get(path, [])):
            raise hvac.exceptions.InvalidRequest(CAS_MISMATCH, errors=[CAS_MISMATCH])
        self.entries.setdefault(path, []).append(copy.deepcopy(secret))
        self.writes.append((path, cas))
        return {"data": {"version": len(self.entries[path])}}

    def list_secrets(self, path, mount_point):
        self._check()
        prefix = path.rstrip("/") + "/"
        names = sorted(
            {
                entry[len(prefix) :].split("/")[0] + ("/" if "/" in entry[len(prefix) :] else "")
                for entry in self.entries
                if entry.startswith(prefix)
            }
        )
        if not names:
            raise hvac.exceptions.InvalidPath(errors=[])
        return {"data": {"keys": names}}


class StubAdapter:
    def __init__(self, version="2"):
        self.version = version

    def get(self, url):
        return {"data": {"type": "kv", "options": {"version": self.version}}}


class StubClient:
    def __init__(self, kv: StubKv, version="2"):
        self.token = TOKEN
        self.adapter = StubAdapter(version)
        self.secrets = type("Secrets", (), {"kv": type("Kv", (), {"v2": kv})()})()


def store(kv: StubKv, version="2") -> OpenBaoStore:
    return OpenBaoStore(StubClient(kv, version), "secret", "salt-proxmox")


KEY = "homelab/lxc/150"


def test_parse_ownership_refuses_bad_keys_by_name():
    assert parse_ownership(None) == {"store": "file"}
    with pytest.raises(DeclarationError, match="proxmox:ownership:store"):
        parse_ownership({"store": "consul"})
    with pytest.raises(DeclarationError, match="proxmox:ownership:mount") as found:
        parse_ownership({"store": "openbao", "path": "p", "lock_timeout": -1, "color": 1})
    text = str(found.value)
    assert "proxmox:ownership:lock_timeout" in text and "proxmox:ownership:color: unknown key" in text
    with pytest.raises(DeclarationError, match="proxmox:ownership:path"):
        parse_ownership({"store": "openbao", "mount": "secret", "path": "a/../b"})
    with pytest.raises(DeclarationError, match="proxmox:ownership:mount: unknown key"):
        parse_ownership({"store": "file", "mount": "secret"})
    assert parse_ownership({"store": "openbao", "mount": "/secret/", "path": "rows"})["mount"] == "secret"


def test_one_entry_per_row_its_key_quoted_and_two_stores_see_each_others_rows():
    kv = StubKv()
    first, second = Ownership(store(kv)), store(kv)
    first.mark_owned("homelab/firewall_alias/vm/150/web", "web", {"cidr": "10.0.0.1"})
    assert list(kv.entries) == ["salt-proxmox/rows/homelab/firewall_alias%2Fvm%2F150%2Fweb"]
    assert list(second.load()) == ["homelab/firewall_alias/vm/150/web"]


def test_every_write_is_check_and_set_against_the_version_read():
    kv = StubKv()
    owner = Ownership(store(kv))
    owner.mark_creating(KEY, "web", {"vmid": 150})
    owner.mark_owned(KEY, "web", {"vmid": 150})
    assert [cas for _path, cas in kv.writes] == [0, 1], "0 for a new entry, then the version it was at"


def test_a_write_another_host_won_is_judged_again_never_written_over():
    # Another host records CT 150 between this store's read and its write: OpenBao refuses our cas
    # (path_data.go), and the row is judged again as it is now: its creating row, not ours.
    kv = StubKv()
    mine, theirs = Ownership(store(kv)), Ownership(store(kv))
    assert mine.row(KEY) is None
    kv.before_write = lambda _path: theirs.mark_creating(KEY, "web", {"vmid": 150})
    with pytest.raises(
        RowConflict, match=f"ownership row {KEY} was not set to creating: it is creating"
    ) as found:
        mine.mark_creating(KEY, "web", {"vmid": 150})
    assert not isinstance(found.value, StoreConflict), "judged again: the row as it is now, by name"
    assert len(kv.entries["salt-proxmox/rows/homelab/lxc%2F150"]) == 1, (
        "theirs alone: nothing written over it"
    )
    assert store(kv).load()[KEY]["instance"] == theirs.row(KEY)["instance"]


def test_a_lost_write_whose_row_now_says_what_ours_would_writes_nothing():
    # Judged again, the row another host wrote is what this one was to write (both record the
    # same adopted pool, instance kept): nothing is left to write, and nothing is retried blindly.
    kv = StubKv()
    Ownership(store(kv)).mark_owned("homelab/pool/prod", "prod", {"comment": "x"})
    mine, theirs = Ownership(store(kv)), Ownership(store(kv))
    mine.row("homelab/pool/prod")
    theirs.row("homelab/pool/prod")
    kv.before_write = lambda _path: theirs.mark_owned("homelab/pool/prod", "prod", {"comment": "y"})
    mine.mark_owned("homelab/pool/prod", "prod", {"comment": "y"})
    assert len(kv.entries["salt-proxmox/rows/homelab/pool%2Fprod"]) == 2, "the first row, then theirs alone"


def test_save_outside_its_rows_lock_is_refused():
    with pytest.raises(ValueError, match="inside locked"):
        store(StubKv()).save({KEY: {"phase": OWNED}}, KEY)


@pytest.mark.parametrize(
    ("failure", "said"),
    [
        (hvac.exceptions.VaultDown(errors=["Vault is sealed"]), "sealed"),
        (hvac.exceptions.Forbidden(errors=["permission denied"]), "permission denied"),
        (hvac.exceptions.InvalidPath(errors=['no handler for route "nope/data"']), "no such path"),
    ],
)
def test_an_openbao_that_cannot_be_read_is_an_error_naming_the_mount_never_no_rows(failure, said):
    kv = StubKv()
    Ownership(store(kv)).mark_owned(KEY, "web", {"vmid": 150})
    kv.fail = failure
    with pytest.raises(OwnershipBaoError, match=said) as found:
        store(kv).load()
    assert "OpenBao KV mount secret" in str(found.value) and "salt-proxmox" in str(found.value)
    assert TOKEN not in str(found.value)
    kv.fail = None
    reader = Ownership(store(kv))
    kv.fail = failure
    with pytest.raises(OwnershipBaoError, match=said):
        reader.row(KEY)


def test_a_kv_version_1_mount_is_refused_it_would_ignore_cas():
    with pytest.raises(OwnershipBaoError, match="not a KV version 2"):
        store(StubKv(), version="1").load()


def test_an_entry_not_written_here_is_an_error_not_a_row():
    kv = StubKv()
    kv.entries["salt-proxmox/rows/homelab/lxc%2F150"] = [{"phase": OWNED}]
    with pytest.raises(OwnershipBaoError, match=r"expected \{key: homelab/lxc/150"):
        store(kv).load()


def test_a_dropped_row_is_written_as_null_check_and_set():
    kv = StubKv()
    owner = Ownership(store(kv))
    owner.mark_owned(KEY, "web", {"vmid": 150})
    assert owner.forget(KEY) is True
    assert kv.entries["salt-proxmox/rows/homelab/lxc%2F150"][-1] == {"key": KEY, "row": None}
    assert kv.writes[-1][1] == 1
    assert store(kv).load() == {}


def test_the_policy_grants_the_row_and_lock_paths_only():
    hcl = policy_hcl("secret", "salt-proxmox")
    assert (
        'path "secret/data/salt-proxmox/rows/*"' in hcl and 'path "secret/data/salt-proxmox/locks/*"' in hcl
    )
    assert '"delete"' not in hcl, "rows are dropped by a check-and-set write, never deleted"


# ------------------------------------------------------------------------------------- the run lock


class Clock:
    def __init__(self):
        self.now = 1_700_000_000.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def lock(kv, clock):
    return RunLock(StubClient(kv), "secret", "salt-proxmox", "homelab", clock=clock, sleep=clock.sleep)


ME = {"minion": "m1", "host": "h1", "pid": 1, "run": "run-1", "jid": None}
OTHER = {"minion": "m2", "host": "elsewhere", "pid": 2, "run": "run-2", "jid": "20240101"}


def test_a_held_lock_blocks_up_to_the_timeout_then_names_its_holder():
    kv, clock = StubKv(), Clock()
    assert lock(kv, clock).take(OTHER, 60, 600) is None
    assert kv.writes == [("salt-proxmox/locks/homelab", 0)], "the first take is cas=0"
    start = clock.now
    with pytest.raises(
        LockHeld, match="locked by another apply: minion m2 \\(job 20240101, pid 2 on host elsewhere\\)"
    ):
        lock(kv, clock).take(ME, 30, 600)
    assert clock.now - start >= 30
    assert kv.entries["salt-proxmox/locks/homelab"][-1]["holder"]["run"] == "run-2"


def test_an_expired_lock_is_taken_over_and_the_return_says_so():
    kv, clock = StubKv(), Clock()
    lock(kv, clock).take(OTHER, 0, 10)
    clock.now += 11
    note = lock(kv, clock).take(ME, 0, 600)
    assert note and "took over" in note and "it had expired" in note and "minion m2" in note
    theirs = lock(kv, clock)
    with pytest.raises(LockLost, match="held by minion m1"):
        theirs.renew(OTHER, 600)
    assert theirs.release(OTHER) is False, "the run that lost it never frees the lock another run holds"


def test_release_frees_it_check_and_set_and_force_breaks_it_naming_the_holder():
    kv, clock = StubKv(), Clock()
    mine = lock(kv, clock)
    mine.take(ME, 0, 600)
    assert mine.release(ME) is True
    assert lock(kv, clock).take(OTHER, 0, 600) is None, "free again (cas = the released version)"
    assert lock(kv, clock).force()["minion"] == "m2"
    assert lock(kv, clock).read()[0] is None


class StubRun:
    def __init__(self, key, chunks):
        self.key, self.chunks, self.current = key, chunks, None


def test_a_plan_takes_no_lock_and_notes_an_apply_holding_one():
    kv, clock = StubKv(), Clock()
    lock(kv, clock).take(OTHER, 0, 600)
    locks = locking.RunLocks(lambda _store, _target: lock(kv, clock))
    locks.enter(None)
    writes = len(kv.writes)
    note = locks.hold(store(kv), "homelab", True, "m1")
    assert note and "an apply holds the run lock of target homelab: minion m2" in note
    assert len(kv.writes) == writes
    assert locks.hold({}, "homelab", False, "m1") is None, "a rows file has no run lock"


def test_an_apply_takes_the_lock_once_renews_it_and_releases_it_after_its_last_state():
    from salt_proxmox.run.lowstate import Run

    kv, clock = StubKv(), Clock()
    chunks = [
        {"state": "proxmox_pool", "fun": "present", "__id__": name, "name": name} for name in ("a", "b")
    ]
    locks = locking.RunLocks(lambda _store, _target: lock(kv, clock))
    run = Run(chunks, key="instance-1")
    rows = store(kv)
    locks.enter(run.at(chunks[0]))
    assert locks.hold(rows, "homelab", False, "m1") is None
    assert locks.left("m1") == []
    assert lock(kv, clock).read()[0]["minion"] == "m1", "held between the states of the run"
    locks.enter(run.at(chunks[1]))
    locks.hold(rows, "homelab", False, "m1")
    locks.left("m1")
    assert lock(kv, clock).read()[0] is None, "released after the run's last state"
