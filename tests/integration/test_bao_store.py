"""Ownership rows and the run lock in a real OpenBao (the ``bao`` dev server, ``tests/support/openbao.py``):
two stores on one path (two hosts running one pillar) share their rows, a check-and-set write never
overwrites another writer's, a held lock blocks the next apply up to its timeout and names its holder,
an expired one is taken over, ``unlock`` breaks one, and two contexts sharing the rows create a guest
exactly once (fakepve's request log shows one create).

OpenBao's answers pinned here (``builtin/logical/kv`` ``path_data.go``): a write whose ``cas`` is not
the entry's version is HTTP 400 "check-and-set parameter did not match the current version"; a read
of an entry that does not exist is a 404 with no error; a sealed server a 503.
"""

from __future__ import annotations

import uuid

import hvac
import pytest

from salt_proxmox.guest import lifecycle as guest_lifecycle
from salt_proxmox.lxc.family import LXC
from salt_proxmox.ownership.bao import OpenBaoStore, OwnershipBaoError, policy_hcl
from salt_proxmox.ownership.keeper import Ownership
from salt_proxmox.ownership.rows import CREATING, OWNED, RowConflict, StoreConflict, row_key
from salt_proxmox.ownership.runlock import LockHeld, RunLock
from salt_proxmox.run import locking
from tests.support.guests import TARGET, declaration, make_context, requests_since, static_targets

MOUNT = "rows-kv"


@pytest.fixture
def kv(openbao) -> tuple[hvac.Client, str]:
    """The dev server's client with a KV version 2 mount, and a path of this test's own."""
    client = openbao.client()
    if f"{MOUNT}/" not in client.sys.list_mounted_secrets_engines()["data"]:
        client.sys.enable_secrets_engine("kv", path=MOUNT, options={"version": "2"})
    return client, f"salt-proxmox/{uuid.uuid4().hex[:8]}"


def bao_store(kv) -> OpenBaoStore:
    client, path = kv
    return OpenBaoStore(client, MOUNT, path, lock_timeout=2, lock_ttl=30)


KEY = row_key(TARGET, "lxc", 150)


def test_two_stores_on_one_path_see_each_others_rows(kv):
    first, second = Ownership(bao_store(kv)), Ownership(bao_store(kv))
    first.mark_owned(KEY, "web", {"vmid": 150})
    second.mark_owned(row_key(TARGET, "firewall_alias", "vm/150/web"), "alias", {"cidr": "10.0.0.1"})
    assert sorted(bao_store(kv).load()) == [row_key(TARGET, "firewall_alias", "vm/150/web"), KEY]
    assert second.row(KEY)["phase"] == OWNED


def test_concurrent_writers_never_overwrite_each_other(kv):
    mine, theirs = bao_store(kv), Ownership(bao_store(kv))
    with mine.locked(KEY):
        theirs.mark_creating(KEY, "web", {"vmid": 150})
        with pytest.raises(StoreConflict):
            # OpenBao itself refuses the stale cas: 400 "check-and-set parameter did not match".
            mine.save({KEY: {"phase": OWNED, "instance": "x", "state_id": "web"}}, KEY)
    assert bao_store(kv).load()[KEY]["phase"] == CREATING, "theirs is kept"
    # Through Ownership: a row read as absent that another host wrote since is a RowConflict.
    late = Ownership(bao_store(kv))
    late.store.load()
    late._seen[KEY] = None  # it read the row as absent before the other host wrote it
    with pytest.raises(RowConflict, match="it is creating"):
        late.mark_creating(KEY, "web", {"vmid": 150})


def test_a_sealed_openbao_is_an_error_naming_the_mount_never_no_rows(kv, openbao):
    # Its own server: sealing the session's would break every later test.
    from tests.support.openbao import DevOpenBao

    with DevOpenBao() as own:
        client = own.client()
        client.sys.enable_secrets_engine("kv", path=MOUNT, options={"version": "2"})
        Ownership(OpenBaoStore(client, MOUNT, "p")).mark_owned(KEY, "web", {"vmid": 150})
        client.sys.seal()
        with pytest.raises(OwnershipBaoError, match=f"OpenBao KV mount {MOUNT}.*sealed") as found:
            OpenBaoStore(client, MOUNT, "p").load()
        assert own.root_token not in str(found.value)


def test_a_token_without_the_row_policy_is_refused_naming_the_path(kv, openbao):
    client, path = kv
    Ownership(bao_store(kv)).mark_owned(KEY, "web", {"vmid": 150})
    narrow = client.auth.token.create(policies=["default"], ttl="10m")["auth"]["client_token"]
    with pytest.raises(OwnershipBaoError, match="permission denied") as found:
        OpenBaoStore(hvac.Client(url=openbao.url, token=narrow), MOUNT, path).load()
    assert narrow not in str(found.value)
    # The policy fragment operators declare grants exactly what the store and the lock use.
    client.sys.create_or_update_policy(name="rows", policy=policy_hcl(MOUNT, path))
    granted = client.auth.token.create(policies=["rows"], ttl="10m")["auth"]["client_token"]
    rows = OpenBaoStore(hvac.Client(url=openbao.url, token=granted), MOUNT, path)
    Ownership(rows).mark_owned(row_key(TARGET, "pool", "prod"), "prod", {})
    assert sorted(rows.load()) == [KEY, row_key(TARGET, "pool", "prod")]
    RunLock(rows.client, MOUNT, path, TARGET).take({"run": "r", "minion": "m"}, 0, 30)


ME = {"minion": "host-a", "host": "a", "pid": 1, "run": "run-a", "jid": None}
OTHER = {"minion": "host-b", "host": "b", "pid": 2, "run": "run-b", "jid": "20260101"}


def test_a_held_lock_blocks_the_other_up_to_the_timeout_and_names_the_holder(kv):
    client, path = kv
    RunLock(client, MOUNT, path, TARGET).take(OTHER, 0, 60)
    slept = []
    waiting = RunLock(client, MOUNT, path, TARGET, sleep=slept.append)
    with pytest.raises(LockHeld, match="minion host-b \\(job 20260101, pid 2 on host b\\)"):
        waiting.take(ME, 1.5, 60)
    assert slept, "it waited before failing"


def test_an_expired_lock_is_taken_over_and_unlock_force_breaks_one(kv):
    client, path = kv
    RunLock(client, MOUNT, path, TARGET).take(OTHER, 0, 0.5)
    clock = iter([10**10] * 10).__next__
    note = RunLock(client, MOUNT, path, TARGET, clock=clock).take(ME, 0, 60)
    assert note and "took over" in note and "minion host-b" in note
    broken = locking.unlock(bao_store(kv), TARGET, True)
    assert broken["broken"] is True and broken["holder"]["minion"] == "host-a"
    assert locking.unlock(bao_store(kv), TARGET, False) == {
        "target": TARGET,
        "held": False,
        "holder": None,
        "broken": False,
    }


def test_two_contexts_sharing_openbao_rows_create_a_guest_exactly_once(fresh_cluster, kv):
    targets = static_targets(fresh_cluster)
    first = make_context(targets, store=bao_store(kv))
    second = make_context(targets, store=bao_store(kv))
    start = len(fresh_cluster.pve.requests)
    made = guest_lifecycle.present(first, LXC, "web", False, **declaration(mp0=None))
    assert made.result is True, made.comment
    again = guest_lifecycle.present(second, LXC, "web", False, **declaration(mp0=None))
    assert again.result is True and again.changes == {}, again.comment
    creates = [
        (method, path)
        for method, path, _body in requests_since(fresh_cluster, start)
        if method == "POST" and path.endswith("/lxc")
    ]
    assert creates == [("POST", "/nodes/pve1/lxc")], "one create: the second host sees it as ours"
    assert bao_store(kv).load()[KEY]["phase"] == OWNED


def test_a_host_that_read_the_rows_before_the_other_created_the_guest_never_creates_it_again(
    fresh_cluster, kv
):
    # Both runs read the rows at once (no run lock between two library contexts): the second one's
    # view says CT 150 has no row, and the guest it finds is refused, never created a second time.
    targets = static_targets(fresh_cluster)
    first = make_context(targets, store=bao_store(kv))
    second = make_context(targets, store=bao_store(kv))
    assert second.ownership.store.load() == {}
    start = len(fresh_cluster.pve.requests)
    assert guest_lifecycle.present(first, LXC, "web", False, **declaration(mp0=None)).result is True
    again = guest_lifecycle.present(second, LXC, "web", False, **declaration(mp0=None))
    creates = [p for m, p, _b in requests_since(fresh_cluster, start) if m == "POST" and p.endswith("/lxc")]
    assert creates == ["/nodes/pve1/lxc"]
    assert again.result is False and again.changes == {}, again.comment
