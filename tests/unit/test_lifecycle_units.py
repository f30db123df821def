"""``proxmox_lxc`` plan and apply against a stub PVE that counts every request (docs/design.md §6, §8).

The stub answers by (method, path); an answer is a value, an exception to raise, or a callable
of the request. Credentials are ``source: static``; ownership is a ``MemoryStore``; task polls
never sleep. PVE facts: pve-guest-common ``AbstractConfig::load_config`` (the missing-config
wording, and every real config carries a ``digest``); pve-manager ``src/PVE/API2/Cluster.pm``
(``cluster/resources`` rows, filtered by the caller's VM.Audit); pve-container
``src/PVE/API2/LXC.pm`` (create, resize and destroy answer a UPID; ``destroy_vm`` refuses a
running or protected guest unless forced) and ``src/PVE/API2/LXC/Config.pm`` (a config PUT
answers null and checks ``digest``).
"""

from __future__ import annotations

import copy

import pytest

from salt_proxmox.errors import Refused
from salt_proxmox.guest import lifecycle as guest_lifecycle
from salt_proxmox.guest.pending import GuestConfig
from salt_proxmox.lxc.family import LXC
from salt_proxmox.ownership.rows import CREATING, OWNED
from salt_proxmox.ownership.stores import MemoryStore
from salt_proxmox.pve.errors import PveConfigMissing, PveError, PveMalformed, PveUnreachable, classify
from tests.support.guest_stubs import (
    CONFIG,
    CREATE,
    DECLARED,
    INDEX,
    NEXTID,
    OK,
    READ,
    ROW,
    RUNNING,
    TEMPLATE,
    Sent,
    StubPve,
    context,
    live_config,
    missing,
    plan,
    secret_free,
    status_path,
    stored_row,
    upid,
)

RESIZE = "nodes/pve1/lxc/150/resize"
GUEST = "nodes/pve1/lxc/150"


# ============================================================================================
# read_live: absence is proven, never assumed
# ============================================================================================


def test_absent_only_by_the_missing_config_answer_and_an_index_without_the_vmid() -> None:
    stub = (
        StubPve()
        .on("GET", CONFIG, missing())
        .on(
            "GET",
            INDEX,
            [{"vmid": 120, "node": "pve1", "type": "lxc"}, {"vmid": "300", "node": "pve2", "type": "qemu"}],
        )
    )
    assert guest_lifecycle.read_live(context(stub), LXC, "pve1", 150) is None
    config_read, index_read, nextid = stub.sent
    assert (config_read.path, index_read.path, index_read.params) == (READ, INDEX, {"type": "vm"})
    # The index (filtered by the token's VM.Audit) is the run's hint; nextid proves 150 free now.
    assert (nextid.path, nextid.params) == (NEXTID, {"vmid": "150"})
    # Same credential on every GET.
    assert index_read.credential is config_read.credential is nextid.credential
    assert config_read.credential.role == "read"


def test_a_vmid_nextid_calls_taken_is_not_absent_though_the_index_lists_it_nowhere() -> None:
    # nextid reads the cluster's whole vmlist; the index only what the token may audit.
    taken = PveError("GET", NEXTID, 400, "Parameter verification failed.", {"vmid": "VM 150 already exists"})
    stub = StubPve().on("GET", CONFIG, missing()).on("GET", INDEX, []).on("GET", NEXTID, taken)
    with pytest.raises(Refused, match="vmid 150 is held by a guest the read token cannot see"):
        guest_lifecycle.read_live(context(stub), LXC, "pve1", 150)
    assert [s.path for s in stub.sent] == [READ, INDEX, NEXTID, INDEX, NEXTID]


def test_an_empty_index_proves_absence() -> None:
    stub = StubPve().on("GET", CONFIG, missing()).on("GET", INDEX, [])
    assert guest_lifecycle.read_live(context(stub), LXC, "pve1", 150) is None


def test_a_config_read_returns_the_live_config() -> None:
    stub = StubPve().on("GET", CONFIG, live_config())
    assert guest_lifecycle.read_live(context(stub), LXC, "pve1", 150) == GuestConfig.settled(live_config())
    assert [s.path for s in stub.sent] == [READ]


@pytest.mark.parametrize(
    "error",
    [
        pytest.param(PveError("GET", CONFIG, 403, "Permission check failed (/vms/150, VM.Audit)"), id="403"),
        pytest.param(PveError("GET", CONFIG, 500, "got timeout"), id="generic-500"),
        pytest.param(PveError("GET", CONFIG, 500, ""), id="500-no-message"),
        pytest.param(
            classify(
                "GET", CONFIG, 500, "Configuration file 'nodes/pve1/lxc/150.conf' does not exist.", None
            ),
            id="500-near-miss-wording",
        ),
        pytest.param(
            PveError("GET", CONFIG, 404, "Configuration file 'nodes/pve1/lxc/150.conf' does not exist"),
            id="404",
        ),
        pytest.param(PveUnreachable("GET: no member answered"), id="unreachable"),
    ],
)
def test_a_failed_read_is_a_failure_with_no_index_call_and_no_write(error: Exception) -> None:
    stub = StubPve().on("GET", CONFIG, error)
    with pytest.raises(type(error)):
        guest_lifecycle.read_live(context(stub), LXC, "pve1", 150)
    assert stub.calls(path=INDEX) == []
    store = MemoryStore()
    outcome = plan(StubPve().on("GET", CONFIG, error), store, test=False)
    assert outcome.result is False
    assert "Nothing was written." in outcome.comment
    assert store.saves == 0


@pytest.mark.parametrize(
    "data",
    [
        pytest.param({}, id="empty-object"),
        pytest.param(None, id="null"),
        pytest.param({"hostname": "web"}, id="no-digest"),
        pytest.param({"digest": ""}, id="empty-digest"),
        pytest.param({"digest": 7}, id="digest-not-text"),
        pytest.param([], id="list"),
    ],
)
def test_a_config_without_digest_is_malformed_not_absent(data: object) -> None:
    stub = StubPve().on("GET", CONFIG, data)
    with pytest.raises(PveMalformed, match="no digest"):
        guest_lifecycle.read_live(context(stub), LXC, "pve1", 150)
    assert stub.calls(path=INDEX) == []
    outcome = plan(StubPve().on("GET", CONFIG, data), MemoryStore(), test=False)
    assert outcome.result is False and "would" not in outcome.salt_return("web")["comment"]


@pytest.mark.parametrize(
    "rows",
    [
        pytest.param({"vmid": 120}, id="not-a-list"),
        pytest.param(None, id="null"),
        pytest.param([{"vmid": 0, "node": "pve1", "type": "lxc"}], id="vmid-zero"),
        pytest.param([{"vmid": -1, "node": "pve1", "type": "lxc"}], id="vmid-negative"),
        pytest.param([{"vmid": "abc", "node": "pve1", "type": "lxc"}], id="vmid-word"),
        pytest.param([{"vmid": True, "node": "pve1", "type": "lxc"}], id="vmid-bool"),
        pytest.param([{"vmid": 1.5, "node": "pve1", "type": "lxc"}], id="vmid-float"),
        pytest.param([{"node": "pve1", "type": "lxc"}], id="vmid-missing"),
        pytest.param([{"vmid": 120, "type": "lxc"}], id="node-missing"),
        pytest.param([{"vmid": 120, "node": "", "type": "lxc"}], id="node-empty"),
        pytest.param([{"vmid": 120, "node": "pve1", "type": "openvz"}], id="type-unknown"),
        pytest.param([{"vmid": 120, "node": "pve1"}], id="type-missing"),
        pytest.param([{"vmid": 120, "node": "pve1", "type": "lxc"}, "row"], id="row-not-object"),
    ],
)
def test_malformed_index_rows_fail_instead_of_proving_absence(rows: object) -> None:
    stub = StubPve().on("GET", CONFIG, missing()).on("GET", INDEX, rows)
    with pytest.raises(PveMalformed, match="cannot prove the vmid free"):
        guest_lifecycle.read_live(context(stub), LXC, "pve1", 150)
    store = MemoryStore()
    outcome = plan(StubPve().on("GET", CONFIG, missing()).on("GET", INDEX, rows), store, test=False)
    assert outcome.result is False
    assert store.saves == 0


@pytest.mark.parametrize(
    ("row", "words"),
    [
        pytest.param({"vmid": 150, "node": "pve2", "type": "qemu"}, ("qemu", "pve2"), id="qemu-elsewhere"),
        pytest.param({"vmid": "150", "node": "pve1", "type": "qemu"}, ("qemu", "pve1"), id="qemu-same-node"),
        pytest.param({"vmid": 150, "node": "pve2", "type": "lxc"}, ("lxc", "pve2"), id="lxc-migrated"),
    ],
)
def test_vmid_held_elsewhere_is_refused_naming_type_and_node(row: dict, words: tuple[str, str]) -> None:
    stub = StubPve().on("GET", CONFIG, missing()).on("GET", INDEX, [row])
    with pytest.raises(Refused) as caught:
        guest_lifecycle.read_live(context(stub), LXC, "pve1", 150)
    assert f"vmid 150 is a {words[0]} guest on node {words[1]}" in str(caught.value)
    store = MemoryStore()
    stub = StubPve().on("GET", CONFIG, missing()).on("GET", INDEX, [row])
    outcome = plan(stub, store, test=False)
    assert outcome.result is False and stub.writes == [] and store.saves == 0


def test_listed_on_the_declared_node_as_lxc_is_pves_own_error() -> None:
    stub = (
        StubPve()
        .on("GET", CONFIG, missing())
        .on("GET", INDEX, [{"vmid": "150", "node": "pve1", "type": "lxc"}])
    )
    with pytest.raises(PveConfigMissing):
        guest_lifecycle.read_live(context(stub), LXC, "pve1", 150)


# ============================================================================================
# plan (test=True): the judge's answer, nothing written
# ============================================================================================


def create_stub() -> StubPve:
    return StubPve().on("GET", CONFIG, missing()).on("GET", INDEX, [])


@pytest.mark.parametrize(
    ("stub", "rows", "over", "result"),
    [
        pytest.param(create_stub(), {}, {}, None, id="create"),
        pytest.param(
            StubPve().on("GET", CONFIG, live_config(memory=512)), {ROW: stored_row()}, {}, None, id="update"
        ),
        pytest.param(StubPve().on("GET", CONFIG, live_config()), {ROW: stored_row()}, {}, True, id="clean"),
        pytest.param(StubPve().on("GET", CONFIG, live_config()), {}, {"adopt": True}, None, id="adopt"),
        pytest.param(StubPve().on("GET", CONFIG, live_config()), {}, {}, False, id="unowned"),
        pytest.param(
            StubPve().on("GET", CONFIG, live_config(rootfs="local-zfs:subvol-150-disk-0,size=4G")),
            {ROW: stored_row(live=live_config(rootfs="local-zfs:subvol-150-disk-0,size=4G"))},
            {},
            None,
            id="resize",
        ),
    ],
)
def test_plan_writes_nothing(stub: StubPve, rows: dict, over: dict, result: bool | None) -> None:
    store = MemoryStore(rows)
    outcome = plan(stub, store, test=True, **over)
    assert outcome.result is result
    assert stub.writes == []
    assert store.saves == 0 and store.rows == rows
    secret_free(outcome)


def test_a_plan_uses_only_the_read_credential() -> None:
    # docs/design.md §4: a plan needs only read; provision is minted per write, and a plan writes nothing.
    stub = StubPve().on("GET", CONFIG, live_config(memory=512))
    ctx = context(stub, MemoryStore({ROW: stored_row()}))
    outcome = guest_lifecycle.present(ctx, LXC, "web", True, **DECLARED)
    assert outcome.result is None
    assert ctx.broker.mints == {"read": 1, "provision": 0}
    assert {s.credential.role for s in stub.sent} == {"read"}


def test_plan_create_says_would_be_created_and_shows_the_form() -> None:
    outcome = plan(create_stub(), MemoryStore())
    assert outcome.changes["created"] == {"old": None, "new": "CT 150 on pve1"}
    assert outcome.changes["memory"] == {"old": None, "new": "1024"}
    assert "would be created from " + TEMPLATE in outcome.comment[0]


def test_plan_of_a_guest_we_owned_that_is_gone_says_create_again() -> None:
    outcome = plan(create_stub(), MemoryStore({ROW: stored_row()}))
    assert outcome.result is None
    assert "would CREATE it AGAIN from ostemplate with new, empty volumes" in outcome.comment[0]


def test_plan_of_a_gone_guest_without_ostemplate_is_refused() -> None:
    outcome = plan(create_stub(), MemoryStore({ROW: stored_row()}), ostemplate=None)
    assert outcome.result is False
    assert "has no ostemplate" in outcome.comment[0]


def test_plan_update_shows_old_and_new_per_key() -> None:
    stub = StubPve().on("GET", CONFIG, live_config(memory=512, description="notes\n"))
    outcome = plan(stub, MemoryStore({ROW: stored_row()}), description="other notes")
    assert outcome.changes["memory"] == {"old": "512", "new": "1024"}
    # A description is shown as a unified diff, trailing white space aside (PVE hands each line back
    # with "\n" appended: pve-container Config.pm parse_pct_config).
    assert outcome.changes["description"] == {
        "diff": "--- description (PVE)\n+++ description (declared)\n@@ -1 +1 @@\n-notes\n+other notes\n"
    }


# ============================================================================================
# ownership: no silent adoption
# ============================================================================================


def test_unowned_live_guest_is_refused_without_adopt() -> None:
    store = MemoryStore()
    stub = StubPve().on("GET", CONFIG, live_config(memory=512))
    outcome = plan(stub, store, test=False)
    assert outcome.result is False
    assert "this minion did not create it" in outcome.comment[0]
    assert "declare adopt: true" in outcome.comment[0] and "memory" in outcome.comment[0]
    assert stub.writes == [] and store.saves == 0


def test_adopting_a_matching_guest_records_it_and_writes_nothing() -> None:
    store = MemoryStore()
    stub = StubPve().on("GET", CONFIG, live_config())
    outcome = plan(stub, store, test=False, adopt=True)
    assert outcome.result is True, outcome.comment
    assert stub.writes == []
    assert store.rows[ROW]["phase"] == OWNED
    assert store.rows[ROW]["state_id"] == "web"
    assert "records it as its own" in outcome.comment[0]


def test_adopting_a_guest_that_differs_updates_it() -> None:
    store = MemoryStore()
    stub = (
        StubPve().on("GET", CONFIG, live_config(memory=512), live_config(digest="d2")).on("PUT", CONFIG, None)
    )
    outcome = plan(stub, store, test=False, adopt=True)
    assert outcome.result is True, outcome.comment
    assert [s.form for s in stub.writes] == [{"memory": "1024", "digest": "d1"}]
    assert store.rows[ROW]["phase"] == OWNED


def test_a_state_now_declaring_another_vmid_is_refused_before_any_read() -> None:
    store = MemoryStore(
        {"homelab/lxc/140": {**stored_row(), "declared": {**stored_row()["declared"], "vmid": 140}}}
    )
    stub = StubPve()
    outcome = plan(stub, store, test=False)
    assert outcome.result is False
    assert "vmid: 140 -> 150 is a different guest" in outcome.comment[0]
    assert stub.sent == []


def test_a_changed_node_is_followed_when_the_guest_is_there() -> None:
    # HA or `pct migrate` moved the guest and the declaration caught up: record, write nothing.
    store = MemoryStore({ROW: stored_row()})
    store.rows[ROW]["declared"]["node"] = "pve2"
    stub = StubPve().on("GET", CONFIG, live_config())
    outcome = plan(stub, store, test=False)
    assert outcome.result is True, outcome.comment
    assert stub.writes == []
    assert store.rows[ROW]["declared"]["node"] == "pve1"
    assert "its record follows it, nothing is written" in outcome.comment[0]


def test_a_changed_node_where_the_guest_is_not_fails_naming_where_it_is() -> None:
    # Asking to move a guest is a migration, made only with migrate: true (guest.migrate).
    store = MemoryStore({ROW: stored_row()})
    pve2_config = "nodes/pve2/lxc/150/config"
    stub = (
        StubPve()
        .on("GET", pve2_config, missing(node="pve2"))
        .on("GET", INDEX, [{"vmid": 150, "node": "pve1", "type": "lxc"}])
    )
    outcome = plan(stub, store, test=False, node="pve2")
    assert outcome.result is False
    assert "the guest lives on node pve1, not pve2" in outcome.comment[0]
    assert "declare migrate: true on this guest" in outcome.comment[0]
    assert stub.writes == [] and store.saves == 0


# ============================================================================================
# apply: update, resize, create
# ============================================================================================


def test_no_drift_means_no_write() -> None:
    store = MemoryStore({ROW: stored_row()})
    stub = StubPve().on("GET", CONFIG, live_config())
    outcome = plan(stub, store, test=False)
    assert outcome.result is True and outcome.changes == {}
    assert stub.writes == []
    assert "is as declared" in outcome.comment[-1]


def test_update_carries_the_digest_of_the_read_it_was_judged_against() -> None:
    store = MemoryStore({ROW: stored_row()})
    stub = (
        StubPve()
        .on("GET", CONFIG, live_config(digest="judged", memory=512, tags="old"), live_config(digest="after"))
        .on("PUT", CONFIG, None)
    )
    outcome = plan(stub, store, test=False, tags="")
    assert outcome.result is True, outcome.comment
    (put,) = stub.writes
    assert put.form == {"memory": "1024", "delete": "tags", "digest": "judged"}
    assert put.credential.role == "provision"
    # Read back and judged again after the write.
    assert [s.method for s in stub.sent] == ["GET", "PUT", "GET"]
    assert "has been updated: memory, tags" in outcome.comment[-1]


def test_resize_runs_after_the_put_as_a_task_polled_by_its_owner() -> None:
    store = MemoryStore({ROW: stored_row()})
    grown = live_config(digest="d2", rootfs="local-zfs:subvol-150-disk-0,size=16G")
    stub = (
        StubPve()
        .on("GET", CONFIG, live_config(memory=512), grown)
        .on("PUT", CONFIG, None)
        .on("PUT", RESIZE, upid("resize"))
        .on("GET", status_path("resize"), RUNNING, OK)
    )
    outcome = plan(stub, store, test=False, rootfs="local-zfs:16")
    assert outcome.result is True, outcome.comment
    assert [(s.method, s.path) for s in stub.sent] == [
        ("GET", READ),
        ("PUT", CONFIG),
        ("PUT", RESIZE),
        ("GET", status_path("resize")),
        ("GET", status_path("resize")),
        ("GET", READ),
    ]
    resize = stub.calls("PUT", RESIZE)[0]
    assert resize.form == {"disk": "rootfs", "size": "16G"}
    assert all(s.credential is resize.credential for s in stub.calls(path=status_path("resize")))
    assert outcome.changes["disks"] == {"rootfs": {"old": "8G", "new": "16G"}}


def test_refusals_write_nothing_even_when_other_keys_could_be_written() -> None:
    store = MemoryStore({ROW: stored_row()})
    stub = StubPve().on("GET", CONFIG, live_config(memory=512))
    outcome = plan(stub, store, test=False, dev0="/dev/net/tun")
    assert outcome.result is False
    assert "`pct set 150 --dev0 '/dev/net/tun'`" in outcome.comment[0]
    assert stub.writes == [] and store.saves == 0


def test_drift_left_after_the_write_fails_naming_the_keys() -> None:
    store = MemoryStore({ROW: stored_row()})
    stub = (
        StubPve()
        .on("GET", CONFIG, live_config(memory=512), live_config(digest="d2", memory=512))
        .on("PUT", CONFIG, None)
    )
    outcome = plan(stub, store, test=False)
    assert outcome.result is False
    assert "after the write, memory still differ" in outcome.comment[-1]


def test_create_writes_the_creating_row_before_the_post_and_owned_after() -> None:
    store = MemoryStore()
    seen_at_post: dict = {}

    def accept(call: Sent) -> str:
        seen_at_post.update(copy.deepcopy(store.rows))
        return upid("vzcreate")

    stub = (
        StubPve()
        .on("GET", CONFIG, missing(), live_config())
        .on("GET", INDEX, [])
        .on("POST", CREATE, accept)
        .on("GET", status_path("vzcreate"), RUNNING, RUNNING, OK)
    )
    outcome = plan(stub, store, test=False, start=True)
    assert outcome.result is True, outcome.comment
    assert seen_at_post[ROW]["phase"] == CREATING
    assert seen_at_post[ROW]["state_id"] == "web"
    assert store.rows[ROW]["phase"] == OWNED
    assert store.rows[ROW]["instance"] == seen_at_post[ROW]["instance"]
    (post,) = stub.calls("POST")
    assert post.form == {
        "vmid": "150",
        "ostemplate": TEMPLATE,
        "hostname": "web",
        "memory": "1024",
        "net0": "name=eth0,bridge=vmbr0,ip=dhcp",
        "rootfs": "local-zfs:8",
        "unprivileged": "1",
        "start": "1",
    }
    polls = stub.calls("GET", status_path("vzcreate"))
    assert len(polls) == 3 and all(p.credential is post.credential for p in polls)
    assert post.credential.role == "provision"
    assert "has been created" in outcome.comment[-1]
    secret_free(outcome)


def test_create_refused_by_pve_leaves_no_row() -> None:
    store = MemoryStore()
    refusal = PveError(
        "POST", CREATE, 403, "Permission check failed (/storage/local-zfs, Datastore.AllocateSpace)"
    )
    stub = StubPve().on("GET", CONFIG, missing()).on("GET", INDEX, []).on("POST", CREATE, refusal)
    outcome = plan(stub, store, test=False)
    assert outcome.result is False
    assert "Datastore.AllocateSpace" in outcome.comment[0]
    assert store.rows == {}
    assert len(stub.calls("POST")) == 1


@pytest.mark.parametrize("phase", [OWNED, CREATING])
def test_create_refused_by_pve_restores_the_earlier_row_exactly(phase: str) -> None:
    # A guest we owned (or began creating) is gone; the create again is refused by PVE. Nothing
    # started, so the row must be what it was: same phase, same instance id.
    earlier = stored_row(phase=phase, instance="original-instance")
    store = MemoryStore({ROW: earlier})
    refusal = PveError("POST", CREATE, 403, "Permission check failed")
    stub = StubPve().on("GET", CONFIG, missing()).on("GET", INDEX, []).on("POST", CREATE, refusal)
    outcome = plan(stub, store, test=False)
    assert outcome.result is False
    assert store.rows[ROW] == earlier


@pytest.mark.parametrize(
    "poll",
    [
        pytest.param(PveUnreachable("GET status: no member answered"), id="poll-unreachable"),
        pytest.param(None, id="poll-null"),
        pytest.param({}, id="poll-empty"),
    ],
)
def test_uncertain_create_task_keeps_the_creating_row_and_never_posts_twice(poll: object) -> None:
    store = MemoryStore()
    stub = (
        StubPve()
        .on("GET", CONFIG, missing())
        .on("GET", INDEX, [])
        .on("POST", CREATE, upid("vzcreate"))
        .on("GET", status_path("vzcreate"), RUNNING, poll)
    )
    outcome = plan(stub, store, test=False)
    assert outcome.result is False
    assert upid("vzcreate") in outcome.comment[0]
    assert store.rows[ROW]["phase"] == CREATING
    assert len(stub.calls("POST")) == 1
    assert len(stub.calls("GET", READ)) == 1  # no read-back after uncertainty


def test_failed_create_task_names_the_upid_and_the_log_command() -> None:
    store = MemoryStore()
    stub = (
        StubPve()
        .on("GET", CONFIG, missing())
        .on("GET", INDEX, [])
        .on("POST", CREATE, upid("vzcreate"))
        .on("GET", status_path("vzcreate"), {"status": "stopped", "exitstatus": "unable to create CT 150"})
    )
    outcome = plan(stub, store, test=False)
    assert outcome.result is False
    assert f"`pvesh get /nodes/pve1/tasks/{upid('vzcreate')}/log`" in outcome.comment[0]
    assert len(stub.calls("POST")) == 1


def test_a_resumed_creating_row_with_a_matching_guest_is_finished_as_ours_without_a_write() -> None:
    # The node's task list shows our token's vzcreate of CT 150 (pve-manager PVE/API2/Tasks.pm node_tasks).
    tie = {"started": 1_767_225_600, "token": "p@pve!t"}
    row = {**stored_row(phase=CREATING, instance="resumed-instance"), **tie}
    store = MemoryStore({ROW: row})
    task = {"upid": "UPID:pve1:1:1:6955B900:vzcreate:150:p@pve!t:", "type": "vzcreate", "id": "150",
            "user": "p@pve", "tokenid": "t", "starttime": 1_767_225_600, "status": "OK"}  # fmt: skip
    stub = StubPve().on("GET", CONFIG, live_config()).on("GET", "nodes/pve1/tasks", [task])
    outcome = plan(stub, store, test=False)
    assert outcome.result is True, outcome.comment
    assert stub.writes == []
    assert store.rows[ROW]["phase"] == OWNED
    assert store.rows[ROW]["instance"] == "resumed-instance"
    assert "our interrupted create is listed in the node's tasks and the guest matches" in outcome.comment[0]


def test_a_creating_row_with_a_guest_that_differs_is_refused() -> None:
    store = MemoryStore({ROW: stored_row(phase=CREATING)})
    stub = StubPve().on("GET", CONFIG, live_config(hostname="someone-else"))
    outcome = plan(stub, store, test=False)
    assert outcome.result is False
    # Refused before the match is judged: nothing ties this row to a create task (it records none).
    assert "nothing ties it to that create" in outcome.comment[0]
    assert stub.writes == [] and store.rows[ROW]["phase"] == CREATING


def test_empty_unprivileged_fails_the_state_instead_of_raising() -> None:
    outcome = plan(create_stub(), MemoryStore(), test=True, unprivileged="")
    assert outcome.result is False


# ============================================================================================
# absent: retain forgets, destroy deletes only what still matches
# ============================================================================================


def run_absent(stub: StubPve, store: MemoryStore, removal: str, test: bool = False):
    return guest_lifecycle.absent(
        context(stub, store), LXC, "web", test, vmid=150, node="pve1", removal=removal
    )


def test_absent_retain_forgets_only_the_row() -> None:
    other = {"phase": OWNED, "instance": "x", "state_id": "dns", "declared": {}}
    store = MemoryStore({ROW: stored_row(), "homelab/lxc/151": other})
    stub = StubPve()
    outcome = run_absent(stub, store, "retain")
    assert outcome.result is True
    assert stub.sent == []  # PVE is not touched, not even read
    assert store.rows == {"homelab/lxc/151": other}
    assert outcome.changes == {"ownership": {"old": OWNED, "new": None}}


def test_absent_retain_under_test_writes_nothing() -> None:
    store = MemoryStore({ROW: stored_row()})
    outcome = run_absent(StubPve(), store, "retain", test=True)
    assert outcome.result is None and store.saves == 0 and ROW in store.rows


def test_absent_retain_without_a_row_is_clean() -> None:
    outcome = run_absent(StubPve(), MemoryStore(), "retain")
    assert outcome.result is True and outcome.changes == {}


def test_absent_destroy_refuses_a_guest_that_no_longer_matches() -> None:
    store = MemoryStore({ROW: stored_row()})
    stub = StubPve().on("GET", CONFIG, live_config(hostname="reused-vmid", memory=2048))
    outcome = run_absent(stub, store, "destroy")
    assert outcome.result is False
    assert "no longer matches its last declaration (hostname, memory)" in outcome.comment[0]
    assert stub.writes == []
    assert ROW in store.rows


def test_absent_destroy_deletes_a_matching_guest_without_force_or_purge() -> None:
    store = MemoryStore({ROW: stored_row()})
    stub = (
        StubPve()
        .on("GET", CONFIG, live_config())
        .on("GET", f"{GUEST}/status/current", {"status": "stopped"})
        .on("DELETE", GUEST, upid("vzdestroy"))
        .on("GET", status_path("vzdestroy"), OK)
    )
    outcome = run_absent(stub, store, "destroy")
    assert outcome.result is True, outcome.comment
    (delete,) = stub.writes
    assert (delete.method, delete.path, delete.params, delete.form) == ("DELETE", GUEST, None, None)
    assert delete.credential.role == "provision"
    assert stub.calls("GET", status_path("vzdestroy"))[0].credential is delete.credential
    assert store.rows == {}


def test_absent_destroy_keeps_pves_refusal_of_a_running_guest() -> None:
    # Stopped when the plan read it, started before the DELETE: PVE's refusal, with its remedy.
    store = MemoryStore({ROW: stored_row()})
    refusal = PveError("DELETE", GUEST, 500, "unable to destroy CT 150 - container is running")
    stub = (
        StubPve()
        .on("GET", CONFIG, live_config())
        .on("GET", f"{GUEST}/status/current", {"status": "stopped"})
        .on("DELETE", GUEST, refusal)
    )
    outcome = run_absent(stub, store, "destroy")
    assert outcome.result is False
    assert "container is running" in outcome.comment[0]
    assert "stop it (`pct shutdown <vmid>` on the node)" in outcome.comment[0]
    assert "journal" not in outcome.comment[0]
    assert len(stub.writes) == 1 and ROW in store.rows


@pytest.mark.parametrize(("test", "status"), [(True, "running"), (False, "running"), (False, "paused")])
def test_absent_destroy_of_a_running_guest_is_refused_before_any_write(test: bool, status: str) -> None:
    # pve-container API2/LXC.pm destroy_vm: "unable to destroy CT 150 - container is running" (no
    # force is sent); predicted from GET .../status/current with the read credential.
    store = MemoryStore({ROW: stored_row()})
    stub = StubPve().on("GET", CONFIG, live_config()).on("GET", f"{GUEST}/status/current", {"status": status})
    outcome = run_absent(stub, store, "destroy", test=test)
    assert (outcome.result, outcome.changes, stub.writes) == (False, {}, [])
    assert f"CT 150 on pve1 is {status}, and PVE refuses to destroy a running container" in outcome.comment[0]
    assert stub.calls("GET", f"{GUEST}/status/current")[0].credential.role == "read"
    assert ROW in store.rows


@pytest.mark.parametrize("test", [True, False])
def test_absent_destroy_of_a_protected_guest_is_refused_before_any_read_of_its_state(test: bool) -> None:
    # AbstractConfig::check_protection: "can't remove CT 150 - protection mode enabled".
    store = MemoryStore({ROW: stored_row()})
    stub = StubPve().on("GET", CONFIG, live_config(protection=1))
    outcome = run_absent(stub, store, "destroy", test=test)
    assert (outcome.result, outcome.changes, stub.writes) == (False, {}, [])
    assert "has protection: 1, and PVE refuses to destroy it" in outcome.comment[0]


def test_absent_destroy_under_test_deletes_nothing() -> None:
    store = MemoryStore({ROW: stored_row()})
    stub = (
        StubPve().on("GET", CONFIG, live_config()).on("GET", f"{GUEST}/status/current", {"status": "stopped"})
    )
    outcome = run_absent(stub, store, "destroy", test=True)
    assert outcome.result is None
    assert stub.writes == [] and store.saves == 0


def test_absent_destroy_of_an_unowned_live_guest_is_refused_after_one_read() -> None:
    stub = StubPve().on("GET", CONFIG, live_config())
    store = MemoryStore()
    outcome = run_absent(stub, store, "destroy")
    assert outcome.result is False and "not recorded as ours" in outcome.comment[0]
    assert [(s.method, s.path) for s in stub.sent] == [("GET", READ)] and store.saves == 0


@pytest.mark.parametrize("test", [True, False])
def test_absent_destroy_without_a_row_of_a_guest_proven_gone_is_clean(test: bool) -> None:
    # docs/design.md §6 Absent/removal: a destroy leaves no row, so every later run of the same absent
    # state finds no row and no guest; that is the declared state, not a refusal.
    stub = create_stub()
    store = MemoryStore()
    outcome = run_absent(stub, store, "destroy", test=test)
    assert (outcome.result, outcome.changes) == (True, {}), outcome.comment
    assert outcome.comment == ["CT 150 on pve1 is absent"]
    assert stub.writes == [] and store.saves == 0


def test_absent_destroy_of_a_guest_already_gone_forgets_the_row() -> None:
    store = MemoryStore({ROW: stored_row()})
    stub = create_stub()
    outcome = run_absent(stub, store, "destroy")
    assert outcome.result is True
    assert stub.writes == [] and store.rows == {}
