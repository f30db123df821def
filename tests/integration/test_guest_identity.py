"""A guest is more than its vmid (docs/design.md §8 Fingerprint), against fakepve: a container created again
at our vmid by somebody else is never written to or destroyed on the strength of our row; the fingerprint
follows our own writes only; rows from before fingerprints are trusted only on an exact match, said in the
plan; a destroy is clean on every later run and never deletes a volume its declaration does not know."""

from __future__ import annotations

import pytest

from salt_proxmox.errors import Refused
from salt_proxmox.guest import lifecycle as guest_lifecycle
from salt_proxmox.lxc.family import LXC
from salt_proxmox.ownership.rows import OWNED, row_key
from salt_proxmox.ownership.stores import MemoryStore
from tests.support.guests import (
    TARGET,
    declaration,
    make_context,
    requests_since,
    static_targets,
    writes,
)

KEY = row_key(TARGET, "lxc", 150)
#: Ours: no mp0, a DHCP NIC whose MAC PVE draws.
OURS = declaration(mp0=None)
DESTROY = {"vmid": 150, "node": "pve1", "removal": "destroy"}


def _ours(cluster, store: MemoryStore) -> dict:
    """Create CT 150 as ours; returns its row."""
    done = guest_lifecycle.present(
        make_context(static_targets(cluster), store=store), LXC, "web", False, **OURS
    )
    assert done.result is True, done.comment
    return store.rows[KEY]


def _recycle(cluster, **over) -> None:
    """Our CT 150 destroyed by hand, and somebody's CT 150 created: same hostname and memory, another
    MAC (PVE draws one per NIC: pve-container Config.pm parse_lxc_network), a static IP, a smaller
    rootfs and an extra 500G mp0."""
    pve = cluster.pve
    pve.cts.remove(pve.ct(150))
    config = {
        "hostname": OURS["hostname"],
        "memory": OURS["memory"],
        "cores": OURS["cores"],
        "unprivileged": 1,
        "ostype": "debian",
        "arch": "amd64",
        "rootfs": "local-zfs:subvol-150-disk-0,size=4G",
        "mp0": "local-zfs:subvol-150-disk-1,mp=/data,size=500G",
        "net0": "name=eth0,bridge=vmbr0,hwaddr=BC:24:11:AB:CD:EF,ip=10.0.0.99/24,type=veth",
        **over,
    }
    pve.add_ct(150, node="pve1", config=config, defaults=False)


def test_a_recycled_vmid_is_neither_updated_nor_destroyed(fresh_cluster):
    store = MemoryStore()
    row = _ours(fresh_cluster, store)
    assert set(row["fingerprint"]) == {"net0", "rootfs"}
    _recycle(fresh_cluster)
    theirs = dict(fresh_cluster.pve.ct(150).config)
    start = len(fresh_cluster.pve.requests)
    for test in (True, False):
        ctx = make_context(static_targets(fresh_cluster), store=store)
        updated = guest_lifecycle.present(ctx, LXC, "web", test, **OURS)
        destroyed = guest_lifecycle.absent(ctx, LXC, "web", test, **DESTROY)
        for outcome in (updated, destroyed):
            text = "\n".join(outcome.comment)
            assert outcome.result is False and outcome.changes == {}, text
            assert "does not carry the fingerprint" in text
            assert "net0 is BC:24:11:AB:CD:EF, recorded " in text, "says what differs"
            assert "mp0 (local-zfs:subvol-150-disk-1 size=500G) was not recorded" in text
            assert (
                "rootfs is local-zfs:subvol-150-disk-0 size=4G, recorded local-zfs:subvol-150-disk-0 size=8G"
                in text
            )
            assert "adopt: true" in text, "names the way forward"
    assert writes(requests_since(fresh_cluster, start)) == [], "no PUT, no resize, no DELETE"
    assert fresh_cluster.pve.ct(150).config == theirs, "their guest is intact"
    assert store.rows[KEY] == row, "our row is untouched"


def test_adopt_takes_the_other_guest_over_and_records_its_fingerprint(fresh_cluster):
    store = MemoryStore()
    _ours(fresh_cluster, store)
    _recycle(fresh_cluster)
    theirs = dict(
        OURS,
        rootfs="local-zfs:4",
        mp0="local-zfs:500,mp=/data",
        net0="name=eth0,bridge=vmbr0,ip=10.0.0.99/24",
    )
    ctx = make_context(static_targets(fresh_cluster), store=store)
    plan = guest_lifecycle.present(ctx, LXC, "web", True, adopt=True, **theirs)
    assert plan.result is None
    assert plan.changes["fingerprint"] == {"old": "another guest's", "new": "recorded"}
    assert "taken over as it is now" in "\n".join(plan.comment)
    start = len(fresh_cluster.pve.requests)
    assert guest_lifecycle.present(ctx, LXC, "web", False, adopt=True, **theirs).result is True
    puts = [(m, p) for m, p, _ in writes(requests_since(fresh_cluster, start))]
    assert puts == [("PUT", "/nodes/pve1/lxc/150/config")], "only what the plan showed: the declared keys"
    assert store.rows[KEY]["fingerprint"]["net0"] == "BC:24:11:AB:CD:EF"
    clean = guest_lifecycle.present(
        make_context(static_targets(fresh_cluster), store=store), LXC, "web", True, **theirs
    )
    assert clean.result is True and clean.changes == {}, clean.comment


def test_the_fingerprint_follows_our_own_writes_only(fresh_cluster):
    store = MemoryStore()
    _ours(fresh_cluster, store)
    grown = dict(OURS, rootfs="local-zfs:10", net1="name=eth1,bridge=vmbr0,ip=dhcp")
    ctx = make_context(static_targets(fresh_cluster), store=store)
    assert guest_lifecycle.present(ctx, LXC, "web", False, **grown).result is True
    prints = store.rows[KEY]["fingerprint"]
    live = fresh_cluster.pve.ct(150).config
    assert prints["rootfs"].endswith("size=10G") and prints["net1"] in live["net1"], (
        "read back after our write"
    )
    assert (
        guest_lifecycle.present(
            make_context(static_targets(fresh_cluster), store=store), LXC, "web", True, **grown
        ).result
        is True
    )
    # A change by hand (another MAC on net1) is not ours: refused, and the row keeps what we wrote.
    live["net1"] = live["net1"].replace(prints["net1"], "BC:24:11:00:00:99")
    refused = guest_lifecycle.present(
        make_context(static_targets(fresh_cluster), store=store), LXC, "web", True, **grown
    )
    assert refused.result is False and "net1 is BC:24:11:00:00:99" in "\n".join(refused.comment)
    assert store.rows[KEY]["fingerprint"] == prints


def test_a_row_from_before_fingerprints_is_recorded_only_on_an_exact_match(fresh_cluster):
    store = MemoryStore()
    row = _ours(fresh_cluster, store)
    legacy = {key: value for key, value in row.items() if key != "fingerprint"}
    store.rows[KEY] = dict(legacy)
    start = len(fresh_cluster.pve.requests)
    plan = guest_lifecycle.present(
        make_context(static_targets(fresh_cluster), store=store), LXC, "web", True, **OURS
    )
    assert plan.result is None and plan.changes == {
        "fingerprint": {"old": "none recorded", "new": "recorded"}
    }
    assert "written before fingerprints existed; the guest matches" in "\n".join(plan.comment)
    assert KEY in store.rows and "fingerprint" not in store.rows[KEY], "a plan records nothing"
    done = guest_lifecycle.present(
        make_context(static_targets(fresh_cluster), store=store), LXC, "web", False, **OURS
    )
    assert done.result is True and store.rows[KEY]["fingerprint"] == row["fingerprint"]
    assert writes(requests_since(fresh_cluster, start)) == []
    again = guest_lifecycle.present(
        make_context(static_targets(fresh_cluster), store=store), LXC, "web", True, **OURS
    )
    assert again.result is True and again.changes == {}

    # The same old row in front of somebody else's guest at the vmid: not an exact match, refused.
    store.rows[KEY] = dict(legacy)
    _recycle(fresh_cluster, rootfs="local-zfs:subvol-150-disk-0,size=8G", net0=None)
    for outcome in (
        guest_lifecycle.present(
            make_context(static_targets(fresh_cluster), store=store), LXC, "web", False, **OURS
        ),
        guest_lifecycle.absent(
            make_context(static_targets(fresh_cluster), store=store), LXC, "web", False, **DESTROY
        ),
    ):
        text = "\n".join(outcome.comment)
        assert outcome.result is False, text
        assert (
            "written before fingerprints existed" in text
            and "mp0 (local-zfs:subvol-150-disk-1 size=500G) is not in it" in text
        )
    assert fresh_cluster.pve.ct(150) is not None and store.rows[KEY] == legacy


@pytest.mark.parametrize("legacy", [False, True], ids=["fingerprint", "row-before-fingerprints"])
def test_destroy_then_the_same_absent_state_is_clean_forever(fresh_cluster, legacy):
    store = MemoryStore()
    _ours(fresh_cluster, store)
    if legacy:
        store.rows[KEY].pop("fingerprint")
    ctx = make_context(static_targets(fresh_cluster), store=store)
    plan = guest_lifecycle.absent(ctx, LXC, "web", True, **DESTROY)
    assert (
        plan.result is None and ("written before fingerprints existed" in "\n".join(plan.comment)) is legacy
    )
    start = len(fresh_cluster.pve.requests)
    done = guest_lifecycle.absent(ctx, LXC, "web", False, **DESTROY)
    assert done.result is True and fresh_cluster.pve.ct(150) is None, done.comment
    assert [(m, p) for m, p, _ in writes(requests_since(fresh_cluster, start))] == [
        ("DELETE", "/nodes/pve1/lxc/150")
    ]
    for test in (True, False, True, False):
        later = guest_lifecycle.absent(
            make_context(static_targets(fresh_cluster), store=store), LXC, "web", test, **DESTROY
        )
        assert (later.result, later.changes) == (True, {}), later.comment
        assert later.comment == ["CT 150 on pve1 is absent"]
    assert len(writes(requests_since(fresh_cluster, start))) == 1 and store.rows == {}


def test_destroy_refuses_volumes_its_declaration_does_not_know(fresh_cluster):
    # Adopted with a mount point the declaration does not name: the fingerprint holds it, the declaration
    # does not, and a destroy would delete it (pve-container destroy_lxc_container deletes every volume).
    _recycle_free = fresh_cluster.pve
    _recycle_free.add_ct(
        150,
        node="pve1",
        config={
            "hostname": "ct150",
            "memory": 1024,
            "unprivileged": 1,
            "rootfs": "local-zfs:subvol-150-disk-0,size=8G",
            "mp1": "local-zfs:subvol-150-disk-1,mp=/keep,size=50G",
        },
        defaults=False,
    )
    store = MemoryStore()
    declared = {"vmid": 150, "node": "pve1", "hostname": "ct150", "memory": 1024, "unprivileged": True,
                "rootfs": "local-zfs:8"}  # fmt: skip
    ctx = make_context(static_targets(fresh_cluster), store=store)
    assert guest_lifecycle.present(ctx, LXC, "web", False, adopt=True, **declared).result is True
    assert store.rows[KEY]["phase"] == OWNED and "mp1" in store.rows[KEY]["fingerprint"]
    start = len(fresh_cluster.pve.requests)
    for test in (True, False):
        refused = guest_lifecycle.absent(ctx, LXC, "web", test, **DESTROY)
        text = "\n".join(refused.comment)
        assert refused.result is False and refused.changes == {}, text
        assert "volumes its declaration does not know: mp1 (local-zfs:subvol-150-disk-1 size=50G)" in text
    assert writes(requests_since(fresh_cluster, start)) == [] and fresh_cluster.pve.ct(150) is not None


def test_an_adhoc_resize_obeys_the_fingerprint_and_moves_it(fresh_cluster):
    """``proxmox.lxc_resize`` is a write like a state's: a recycled vmid is refused with nothing sent,
    and on our own guest the fingerprint follows the grown volume, so the next state run still knows
    the guest as ours."""
    store = MemoryStore()
    row = _ours(fresh_cluster, store)
    ctx = make_context(static_targets(fresh_cluster), store=store)
    assert guest_lifecycle.resize(ctx, LXC, "pve1", 150, "rootfs", "+1G").startswith("UPID:")
    grown = store.rows[KEY]["fingerprint"]["rootfs"]
    assert grown != row["fingerprint"]["rootfs"] and grown.endswith("size=9G"), grown
    grown_decl = {**OURS, "rootfs": OURS["rootfs"].replace(":8", ":9")}
    plan = guest_lifecycle.present(
        make_context(static_targets(fresh_cluster), store=store), LXC, "web", True, **grown_decl
    )
    assert plan.result is True, plan.comment
    _recycle(fresh_cluster)
    theirs = dict(fresh_cluster.pve.ct(150).config)
    start = len(fresh_cluster.pve.requests)
    with pytest.raises(Refused, match="does not carry the fingerprint"):
        guest_lifecycle.resize(
            make_context(static_targets(fresh_cluster), store=store), LXC, "pve1", 150, "rootfs", "+1G"
        )
    assert writes(requests_since(fresh_cluster, start)) == [], "no resize of their guest"
    assert fresh_cluster.pve.ct(150).config == theirs


# --------------------------------------------------------------------------------------------
# a fingerprint that cannot tell two guests apart, and creates whose end we did not see
# --------------------------------------------------------------------------------------------

#: Ours without a NIC: nothing PVE draws for it, only volume ids and sizes.
NO_NIC = declaration(mp0=None, net0=None)


def test_a_container_without_a_nic_is_neither_rewritten_nor_destroyed_when_made_again(fresh_cluster):
    """pve-storage names a new volume with the first free ``vm-<vmid>-disk-N`` (Plugin.pm
    find_free_diskname): the same container made again at our vmid with the same size carries the
    same volume ids and sizes. Its row vouches for no write and no destroy; adopt: true (after a
    check by hand) writes."""
    store = MemoryStore()
    done = guest_lifecycle.present(
        make_context(static_targets(fresh_cluster), store=store), LXC, "web", False, **NO_NIC
    )
    assert done.result is True, done.comment
    row = store.rows[KEY]
    assert set(row["fingerprint"]) == {"rootfs"}
    # Destroyed by hand and made again by somebody: same hostname, same 8G rootfs, same volume id.
    pve = fresh_cluster.pve
    theirs = {k: v for k, v in pve.ct(150).config.items() if k != "digest"}
    pve.cts.remove(pve.ct(150))
    pve.add_ct(150, node="pve1", config=dict(theirs), defaults=False)
    start = len(pve.requests)
    for test in (True, False):
        ctx = make_context(static_targets(fresh_cluster), store=store)
        updated = guest_lifecycle.present(ctx, LXC, "web", test, **dict(NO_NIC, memory=4096))
        destroyed = guest_lifecycle.absent(ctx, LXC, "web", test, **DESTROY)
        for outcome in (updated, destroyed):
            text = "\n".join(outcome.comment)
            assert outcome.result is False and outcome.changes == {}, text
            assert "holds only volume ids and sizes" in text and "cannot vouch" in text, text
        assert "adopt: true" in "\n".join(updated.comment), "names the way forward"
        assert "destroy it by hand" in "\n".join(destroyed.comment)
    assert writes(requests_since(fresh_cluster, start)) == [], "no PUT, no DELETE"
    assert pve.ct(150) is not None and store.rows[KEY] == row
    with pytest.raises(Refused, match="holds only volume ids and sizes"):
        guest_lifecycle.resize(
            make_context(static_targets(fresh_cluster), store=store), LXC, "pve1", 150, "rootfs", "+1G"
        )
    # The operator checked it: adopt: true writes, and says why it had to.
    adopted = guest_lifecycle.present(
        make_context(static_targets(fresh_cluster), store=store),
        LXC,
        "web",
        False,
        adopt=True,
        **dict(NO_NIC, memory=4096),
    )
    assert adopted.result is True and "cannot tell it from another guest" in "\n".join(adopted.comment)
    # A clean plan writes nothing, so it is not refused.
    clean = guest_lifecycle.present(
        make_context(static_targets(fresh_cluster), store=store),
        LXC,
        "web",
        True,
        **dict(NO_NIC, memory=4096),
    )
    assert clean.result is True and clean.changes == {}, clean.comment


def _creating_row(store: MemoryStore, **tie) -> dict:
    """The ``creating`` row of a create of ours whose end was not seen (its guest is not made)."""
    row = {"phase": "creating", "instance": "0" * 8, "state_id": "web", "declared": dict(OURS), **tie}
    store.rows[KEY] = row
    return row


def test_a_creating_row_does_not_vouch_for_a_guest_somebody_else_made(fresh_cluster):
    """Our create's answer was lost and it did not happen; somebody (root@pam) made CT 150 from the
    same declaration. Nothing ties it to our create (pve-manager PVE/API2/Tasks.pm node_tasks lists
    no vzcreate of our token for it), so it is refused, never finished as ours, and never destroyed."""
    import time

    store = MemoryStore()
    row = _creating_row(store, started=int(time.time()), token="salt-provision@pve!apply", host="h", pid=1)
    # Somebody else's create of the same declaration, run by another user.
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    assert guest_lifecycle.present(ctx, LXC, "theirs", False, **OURS).result is True
    for task in fresh_cluster.pve.tasklog:
        if task["type"] == "vzcreate" and task["id"] == "150":
            task["user"] = "root@pam"
    theirs = dict(fresh_cluster.pve.ct(150).config)
    start = len(fresh_cluster.pve.requests)
    for test in (True, False):
        ctx = make_context(static_targets(fresh_cluster), store=store)
        finished = guest_lifecycle.present(ctx, LXC, "web", test, **OURS)
        text = "\n".join(finished.comment)
        assert finished.result is False and finished.changes == {}, text
        assert "nothing ties it to that create" in text and "adopt: true" in text
        destroyed = guest_lifecycle.absent(ctx, LXC, "web", test, **DESTROY)
        text = "\n".join(destroyed.comment)
        assert destroyed.result is False and destroyed.changes == {}, text
        assert "create of ours as unfinished" in text and "Nothing was deleted" in text
    assert writes(requests_since(fresh_cluster, start)) == []
    assert fresh_cluster.pve.ct(150).config == theirs and store.rows[KEY] == row


def test_a_creating_row_is_finished_when_the_task_list_ties_it_and_refused_after_a_remake(fresh_cluster):
    """Our create went through but its end was not seen: the node's task list shows our token's
    vzcreate, so it is finished as ours. Had the guest been destroyed and made again since, the later
    vzdestroy/vzcreate unties it."""
    import time

    store = MemoryStore()
    _creating_row(store, started=int(time.time()), token="salt-provision@pve!apply")
    assert guest_lifecycle.present(
        make_context(static_targets(fresh_cluster), store=MemoryStore()), LXC, "x", False, **OURS
    ).result
    # Destroyed and made again, by root@pam, after our create.
    pve = fresh_cluster.pve
    later = int(time.time()) + 1
    pve.tasklog.append({
        "upid": f"UPID:pve1:00000001:00000007:{later:08X}:vzdestroy:150:root@pam:", "node": "pve1",
        "type": "vzdestroy", "id": "150", "user": "root@pam", "starttime": later, "status": "stopped",
        "exitstatus": "OK",
    })  # fmt: skip
    refused = guest_lifecycle.present(
        make_context(static_targets(fresh_cluster), store=store), LXC, "web", True, **OURS
    )
    assert refused.result is False and "vzdestroy by root@pam" in "\n".join(refused.comment), refused.comment
    pve.tasklog.pop()
    plan = guest_lifecycle.present(
        make_context(static_targets(fresh_cluster), store=store), LXC, "web", True, **OURS
    )
    assert plan.result is None and plan.changes == {"ownership": {"old": "creating", "new": "owned"}}
    assert "listed in the node's tasks" in "\n".join(plan.comment)
    assert (
        guest_lifecycle.present(
            make_context(static_targets(fresh_cluster), store=store), LXC, "web", False, **OURS
        ).result
        is True
    )
    assert store.rows[KEY]["phase"] == OWNED
