"""Power state of a guest (``salt_proxmox.guest.power``): a state's ``status``, and the ad-hoc power
calls, against the counting stub PVE of ``test_lifecycle_units``.

PVE facts: pve-container ``src/PVE/API2/LXC/Status.pm`` (qemu-server ``PVE/API2/Qemu.pm`` alike):
``GET status/current`` answers the ``status`` word; ``POST status/start|shutdown|stop|reboot`` answer
a UPID; ``vm_shutdown`` takes ``timeout`` (minimum 0, default 60) and ``forceStop`` (default 0), and
without ``forceStop`` a guest still running at the timeout makes the task fail and keeps running;
``create_vm`` runs ``vm_start`` inside the create's own worker when given ``start=1``.
"""

from __future__ import annotations

import pytest

from salt_proxmox.errors import DeclarationError, Refused
from salt_proxmox.guest import power
from salt_proxmox.ownership.rows import OWNED
from salt_proxmox.ownership.stores import MemoryStore
from salt_proxmox.registry import guests
from tests.support.guest_stubs import (
    CONFIG,
    CREATE,
    INDEX,
    OK,
    READ,
    ROW,
    RUNNING,
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

STATUS = "nodes/pve1/lxc/150/status/current"
START = "nodes/pve1/lxc/150/status/start"
SHUTDOWN = "nodes/pve1/lxc/150/status/shutdown"
STOP = "nodes/pve1/lxc/150/status/stop"
REBOOT = "nodes/pve1/lxc/150/status/reboot"
INDEXED = [{"vmid": 150, "node": "pve1", "type": "lxc", "name": "web", "status": "running"}]
TIMED_OUT = {"status": "stopped", "exitstatus": "container did not stop"}

GUESTS = guests()


def owned(stub: StubPve) -> tuple[StubPve, MemoryStore]:
    return stub.on("GET", CONFIG, live_config()), MemoryStore({ROW: stored_row()})


# ============================================================================================
# The declaration: status, shutdown_timeout, force_stop
# ============================================================================================


@pytest.mark.parametrize(
    ("over", "words"),
    [
        pytest.param(
            {"status": "paused"}, "status: 'paused' is not one of running, stopped", id="status-word"
        ),
        pytest.param({"status": True}, "status: True is not one of running, stopped", id="status-bool"),
        pytest.param(
            {"status": "stopped", "shutdown_timeout": -1},
            "shutdown_timeout: -1 is not a whole number",
            id="neg",
        ),
        pytest.param(
            {"status": "stopped", "shutdown_timeout": "60"},
            "shutdown_timeout: '60' is not a whole",
            id="text",
        ),
        pytest.param(
            {"status": "stopped", "shutdown_timeout": True},
            "shutdown_timeout: True is not a whole",
            id="bool",
        ),
        pytest.param(
            {"status": "stopped", "force_stop": "n"},
            "force_stop: expected a boolean as PVE spells it",
            id="force",
        ),
        pytest.param(
            {"force_stop": True}, "force_stop: it shapes the shutdown of status: stopped", id="no-status"
        ),
        pytest.param(
            {"status": "running", "shutdown_timeout": 30},
            "shutdown_timeout: it shapes the shutdown of status: stopped",
            id="timeout-with-running",
        ),
        pytest.param(
            {"status": "running", "start": True}, "start: status: running starts the guest", id="start"
        ),
    ],
)
def test_bad_power_arguments_are_refused_by_name_before_any_request(over: dict, words: str) -> None:
    stub = StubPve()
    outcome = plan(stub, MemoryStore(), test=False, **over)
    assert outcome.result is False
    assert any(words in line for line in outcome.comment), outcome.comment
    assert stub.sent == []


def test_a_power_problem_is_listed_with_the_family_s_own_problems() -> None:
    stub = StubPve()
    outcome = plan(stub, MemoryStore(), test=True, status="up", memory="lots")
    text = " ".join(outcome.comment)
    assert "status: 'up'" in text and "memory" in text
    assert stub.sent == []


def test_without_a_declared_status_the_power_state_is_never_read() -> None:
    stub, store = owned(StubPve())
    outcome = plan(stub, store, test=True)
    assert outcome.result is True
    assert [s.path for s in stub.sent] == [READ]


# ============================================================================================
# Plan
# ============================================================================================


def test_plan_of_a_stopped_guest_declared_running_says_would_start_after_one_status_read() -> None:
    stub, store = owned(StubPve().on("GET", STATUS, {"status": "stopped"}))
    outcome = plan(stub, store, test=True, status="running")
    assert outcome.result is None
    assert outcome.changes == {"status": {"old": "stopped", "new": "running"}}
    assert outcome.comment == ["CT 150 on pve1: would start"]
    # The start plugs net0: the SDN vnets and the node's listing say its bridge is live (guest.nics).
    assert [s.path for s in stub.sent] == [READ, STATUS, "cluster/sdn/vnets", "nodes/pve1/network"]
    assert stub.calls("GET", STATUS)[0].credential.role == "read"


def test_plan_of_a_running_guest_declared_stopped_says_would_shut_down_never_forced() -> None:
    stub, store = owned(StubPve().on("GET", STATUS, {"status": "running"}))
    outcome = plan(stub, store, test=True, status="stopped", shutdown_timeout=30)
    assert outcome.result is None
    assert outcome.changes == {"status": {"old": "running", "new": "stopped"}}
    assert outcome.comment == ["CT 150 on pve1: would shut down (within 30 s, never forced)"]
    assert stub.writes == []


def test_plan_with_force_stop_says_the_hard_stop() -> None:
    stub, store = owned(StubPve().on("GET", STATUS, {"status": "running"}))
    outcome = plan(stub, store, test=True, status="stopped", force_stop=True)
    assert outcome.comment == [
        "CT 150 on pve1: would shut down (within 60 s, then stopped hard (force_stop))"
    ]


@pytest.mark.parametrize("status", ["running", "stopped"])
def test_a_guest_in_its_declared_state_is_clean_with_one_status_read(status: str) -> None:
    stub, store = owned(StubPve().on("GET", STATUS, {"status": status}))
    outcome = plan(stub, store, test=True, status=status)
    assert outcome.result is True
    assert outcome.changes == {}
    assert outcome.comment == ["CT 150 on pve1 is as declared"]
    assert [s.path for s in stub.sent] == [READ, STATUS]


def test_a_status_neither_running_nor_stopped_is_refused() -> None:
    stub, store = owned(StubPve().on("GET", STATUS, {"status": "paused"}))
    outcome = plan(stub, store, test=False, status="running")
    assert outcome.result is False
    assert "it is paused, neither running nor stopped" in " ".join(outcome.comment)
    assert stub.writes == []


def test_the_status_of_a_guest_that_is_not_ours_is_not_read() -> None:
    stub = StubPve().on("GET", CONFIG, live_config())
    outcome = plan(stub, MemoryStore(), test=True, status="running")
    assert outcome.result is False
    assert stub.calls("GET", STATUS) == []


def test_the_plan_of_a_create_declared_running_says_would_start() -> None:
    stub = StubPve().on("GET", CONFIG, missing()).on("GET", INDEX, [])
    outcome = plan(stub, MemoryStore(), test=True, status="running")
    assert outcome.changes["status"] == {"old": None, "new": "running"}
    assert outcome.comment[-1] == "CT 150 on pve1: would start"
    assert "start" not in outcome.changes  # not sent with the create
    assert stub.calls("GET", STATUS) == []


# ============================================================================================
# Apply
# ============================================================================================


def test_apply_starts_a_stopped_guest_as_a_task_awaited_by_its_credential() -> None:
    stub, store = owned(
        StubPve()
        .on("GET", STATUS, {"status": "stopped"}, {"status": "running"})
        .on("POST", START, upid("vzstart"))
        .on("GET", status_path("vzstart"), RUNNING, OK)
    )
    outcome = plan(stub, store, test=False, status="running")
    assert outcome.result is True, outcome.comment
    assert outcome.changes == {"status": {"old": "stopped", "new": "running"}}
    assert outcome.comment[-1] == "CT 150 on pve1 has been started"
    (post,) = stub.writes
    assert post.path == START and post.form is None and post.credential.role == "provision"
    polls = stub.calls("GET", status_path("vzstart"))
    assert len(polls) == 2 and all(p.credential is post.credential for p in polls)
    assert len(stub.calls("GET", STATUS)) == 2, "the status is read back after the task"
    secret_free(outcome)


@pytest.mark.parametrize(
    ("over", "form"),
    [
        pytest.param({}, {"timeout": "60"}, id="default-60"),
        pytest.param({"shutdown_timeout": 5}, {"timeout": "5"}, id="declared"),
        pytest.param({"force_stop": True}, {"timeout": "60", "forceStop": "1"}, id="force"),
        pytest.param({"force_stop": False}, {"timeout": "60"}, id="force-false"),
        # force_stop mirrors PVE's forceStop: pve-common parse_boolean's spellings, nothing else.
        pytest.param({"force_stop": "yes"}, {"timeout": "60", "forceStop": "1"}, id="force-yes"),
        pytest.param({"force_stop": 1}, {"timeout": "60", "forceStop": "1"}, id="force-1"),
        pytest.param({"force_stop": "false"}, {"timeout": "60"}, id="force-quoted-false"),
        pytest.param({"force_stop": "0"}, {"timeout": "60"}, id="force-0"),
    ],
)
def test_apply_shuts_a_running_guest_down_with_its_timeout_and_never_forces_unless_declared(
    over: dict, form: dict
) -> None:
    stub, store = owned(
        StubPve()
        .on("GET", STATUS, {"status": "running"}, {"status": "stopped"})
        .on("POST", SHUTDOWN, upid("vzshutdown"))
        .on("GET", status_path("vzshutdown"), OK)
    )
    outcome = plan(stub, store, test=False, status="stopped", **over)
    assert outcome.result is True, outcome.comment
    (post,) = stub.writes
    assert (post.path, post.form) == (SHUTDOWN, form)
    assert stub.calls("POST", STOP) == []


def test_a_shutdown_that_meets_its_timeout_fails_and_is_not_forced() -> None:
    stub, store = owned(
        StubPve()
        .on("GET", STATUS, {"status": "running"})
        .on("POST", SHUTDOWN, upid("vzshutdown"))
        .on("GET", status_path("vzshutdown"), RUNNING, TIMED_OUT)
    )
    outcome = plan(stub, store, test=False, status="stopped", shutdown_timeout=10)
    assert outcome.result is False
    text = " ".join(outcome.comment)
    assert "container did not stop" in text
    assert "was not stopped hard: without force_stop: true" in text
    assert [s.path for s in stub.writes] == [SHUTDOWN]  # no stop, no second try
    assert "status" not in outcome.changes
    assert store.rows[ROW]["phase"] == OWNED


def test_a_shutdown_is_polled_for_its_timeout_on_top_of_the_create_bound() -> None:
    ctx = context(StubPve())
    ctx.create_polls, ctx.poll_interval = 10, 2.0
    assert power.Power("stopped", shutdown_timeout=30).polls(ctx) == 25


def test_config_writes_go_before_the_power_change_and_stay_when_it_fails() -> None:
    stub = (
        StubPve()
        .on("GET", CONFIG, live_config(), live_config(memory=2048))
        .on("PUT", CONFIG, None)
        .on("GET", STATUS, {"status": "stopped"})
        .on("POST", START, upid("vzstart"))
        .on(
            "GET",
            status_path("vzstart"),
            {"status": "stopped", "exitstatus": "startup for container '150' failed"},
        )
    )
    store = MemoryStore({ROW: stored_row()})
    outcome = plan(stub, store, test=False, status="running", memory=2048)
    assert outcome.result is False
    assert [s.path for s in stub.writes] == [CONFIG, START]
    assert outcome.changes["memory"] == {"old": "1024", "new": "2048"}
    assert "The config is written and recorded; the container was not running." in outcome.comment
    assert store.rows[ROW]["declared"]["memory"] == "2048"


def test_a_create_declared_running_starts_with_its_own_task_after_the_create() -> None:
    store = MemoryStore()
    stub = (
        StubPve()
        .on("GET", CONFIG, missing(), live_config())
        .on("GET", INDEX, [])
        .on("POST", CREATE, upid("vzcreate"))
        .on("GET", status_path("vzcreate"), OK)
        .on("POST", START, lambda call: store.rows[ROW]["phase"] == OWNED and upid("vzstart"))
        .on("GET", status_path("vzstart"), OK)
        .on("GET", STATUS, {"status": "running"})
    )
    outcome = plan(stub, store, test=False, status="running")
    assert outcome.result is True, outcome.comment
    create, start = stub.writes
    assert create.path == CREATE and "start" not in create.form
    assert start.path == START  # its answer was a UPID only because the row was owned by then
    assert outcome.comment[-2:] == ["CT 150 on pve1 has been created", "CT 150 on pve1 has been started"]
    # A guest just created is stopped: its status is read once, back after the start task.
    (read,) = stub.calls("GET", STATUS)
    assert stub.sent.index(read) > stub.sent.index(start)


def test_a_start_after_a_create_that_fails_keeps_the_guest_recorded_as_ours() -> None:
    store = MemoryStore()
    stub = (
        StubPve()
        .on("GET", CONFIG, missing(), live_config())
        .on("GET", INDEX, [])
        .on("POST", CREATE, upid("vzcreate"))
        .on("GET", status_path("vzcreate"), OK)
        .on("POST", START, upid("vzstart"))
        .on("GET", status_path("vzstart"), {"status": "stopped", "exitstatus": "startup failed"})
    )
    outcome = plan(stub, store, test=False, status="running")
    assert outcome.result is False
    assert store.rows[ROW]["phase"] == OWNED
    assert "The config is written and recorded; the container was not running." in outcome.comment


def test_a_start_makes_pending_changes_live_so_the_guest_is_judged_again() -> None:
    pending = [
        {"key": "digest", "value": "d1"},
        *({"key": k, "value": v} for k, v in live_config().items() if k not in ("digest", "memory")),
        {"key": "memory", "value": 512, "pending": 1024},
    ]
    stub = (
        StubPve()
        .on("GET", READ, pending, [{"key": k, "value": v} for k, v in live_config().items()])
        .on("GET", STATUS, {"status": "stopped"}, {"status": "running"})
        .on("POST", START, upid("vzstart"))
        .on("GET", status_path("vzstart"), OK)
    )
    outcome = plan(stub, MemoryStore({ROW: stored_row()}), test=False, status="running")
    assert outcome.result is True, outcome.comment
    assert len(stub.calls("GET", READ)) == 2  # the decision's read, then one after the start
    assert not any("pending until" in line for line in outcome.comment)


HA_STARTED = {"status": "stopped", "ha": {"managed": 1, "state": "started", "group": ""}}


@pytest.mark.parametrize(
    ("after", "words"),
    [
        pytest.param(
            HA_STARTED,
            "It is HA-managed (ha.managed: 1, ha.state started): the HA manager decides its power, "
            "and the start task only queued a request to it; its status was read 181 times over 180 s. "
            "See `ha-manager status` on a node for what HA does with ct:150",
            id="ha-managed",
        ),
        pytest.param(
            {"status": "stopped", "ha": {"managed": 0}},
            "Read the task's log and `pct status 150` on node pve1",
            id="not-ha",
        ),
    ],
)
def test_a_start_task_that_ends_ok_with_the_guest_still_stopped_fails_naming_what_pve_reports(
    after: dict, words: str
) -> None:
    # qemu-server vm_start / pve-container vm_start: for an HA-managed guest the task only runs
    # `ha-manager set <sid> --state started` (an hastart task) and ends OK; the guest starts when,
    # and if, the HA manager starts it.
    stub, store = owned(
        StubPve()
        .on("GET", STATUS, {"status": "stopped"}, after)
        .on("POST", START, upid("hastart"))
        .on("GET", status_path("hastart"), OK)
    )
    outcome = plan(stub, store, test=False, status="running")
    assert outcome.result is False
    text = " ".join(outcome.comment)
    assert (
        "CT 150 on pve1: the start task ended OK, but PVE reports the container stopped, not running." in text
    )
    assert words in text
    assert "has been started" not in text and "status" not in outcome.changes
    assert store.rows[ROW]["phase"] == OWNED


def test_a_shutdown_task_that_ends_ok_with_the_guest_still_running_fails() -> None:
    # qemu-server vm_shutdown: for an HA-managed guest `ha-manager crm-command stop <sid> <timeout>`.
    stub, store = owned(
        StubPve()
        .on(
            "GET",
            STATUS,
            {"status": "running"},
            {"status": "running", "ha": {"managed": 1, "state": "started"}},
        )
        .on("POST", SHUTDOWN, upid("hastop"))
        .on("GET", status_path("hastop"), OK)
    )
    outcome = plan(stub, store, test=False, status="stopped")
    assert outcome.result is False
    text = " ".join(outcome.comment)
    assert "the shutdown task ended OK, but PVE reports the container running, not stopped" in text
    assert "It is HA-managed (ha.managed: 1, ha.state started)" in text
    assert "has been shut down" not in text


def test_an_adhoc_start_of_an_ha_managed_guest_that_stays_stopped_fails() -> None:
    stub, store = owned(
        StubPve()
        .on("GET", INDEX, INDEXED)
        .on("GET", STATUS, {"status": "stopped"}, HA_STARTED)
        .on("POST", START, upid("hastart"))
        .on("GET", status_path("hastart"), OK)
    )
    with pytest.raises(
        power.PowerNotReached, match=r"PVE reports the container stopped, not running\. It is HA"
    ):
        adhoc(stub, store, "start")


# ============================================================================================
# Ad-hoc calls
# ============================================================================================


def adhoc(stub: StubPve, store: MemoryStore, call: str, **kwargs):
    return power.power_call(context(stub, store), GUESTS, call, 150, **kwargs)


def test_guest_rows_list_every_guest_sorted_with_type_and_status() -> None:
    rows = [
        {"vmid": "300", "node": "pve2", "type": "qemu", "name": "db", "status": "stopped", "template": 1},
        {"vmid": 150, "node": "pve1", "type": "lxc", "name": "web", "status": "running"},
    ]
    stub = StubPve().on("GET", INDEX, rows)
    assert power.guest_rows(context(stub)) == [
        {"vmid": 150, "name": "web", "node": "pve1", "type": "lxc", "status": "running", "template": False},
        {"vmid": 300, "name": "db", "node": "pve2", "type": "qemu", "status": "stopped", "template": True},
    ]
    assert stub.sent[0].params == {"type": "vm"}


def test_guest_status_finds_the_node_and_reads_status_current() -> None:
    stub = StubPve().on("GET", INDEX, INDEXED).on("GET", STATUS, {"status": "running", "uptime": 5})
    assert power.status_of(context(stub), "150") == {
        "vmid": 150,
        "node": "pve1",
        "type": "lxc",
        "status": "running",
    }


def test_guest_status_refuses_a_node_the_guest_is_not_on() -> None:
    stub = StubPve().on("GET", INDEX, INDEXED)
    with pytest.raises(Refused, match="on node pve1, not on pve2"):
        power.status_of(context(stub), 150, "pve2")


def test_a_power_call_on_a_guest_of_a_type_no_family_manages_is_refused_by_name() -> None:
    stub = StubPve().on("GET", INDEX, [{"vmid": 150, "node": "pve1", "type": "qemu"}])
    with pytest.raises(Refused, match="a qemu guest, a type this module does not manage"):
        power.power_call(context(stub), {"lxc": GUESTS["lxc"]}, "start", 150, adopt=True)
    assert stub.writes == []


def test_the_status_of_any_guest_the_index_lists_is_read_at_its_type_s_path() -> None:
    stub = (
        StubPve()
        .on("GET", INDEX, [{"vmid": 300, "node": "pve2", "type": "qemu"}])
        .on("GET", "nodes/pve2/qemu/300/status/current", {"status": "stopped", "qmpstatus": "stopped"})
    )
    assert power.status_of(context(stub), 300)["status"] == "stopped"


def test_an_adhoc_power_call_on_a_guest_not_ours_is_refused_with_nothing_sent() -> None:
    stub = StubPve().on("GET", INDEX, INDEXED)
    with pytest.raises(Refused, match=r"is not recorded as ours .*so it is not shut down"):
        adhoc(stub, MemoryStore(), "shutdown")
    assert stub.writes == []


def test_a_refused_vm_power_call_names_only_remedies_that_exist() -> None:
    # The execution module has no proxmox.qemu_update: the remedy is the proxmox_qemu state.
    stub = StubPve().on("GET", INDEX, [{"vmid": 300, "node": "pve2", "type": "qemu"}])
    with pytest.raises(Refused) as refused:
        power.power_call(context(stub, MemoryStore()), GUESTS, "stop", 300)
    assert "proxmox_qemu state with adopt: true" in str(refused.value)
    assert "qemu_update" not in str(refused.value)
    assert stub.writes == []


def test_an_adhoc_power_call_on_a_recycled_vmid_is_refused() -> None:
    other = live_config(net0="name=eth0,bridge=vmbr0,hwaddr=BC:24:11:99:99:99,ip=dhcp,type=veth")
    stub = StubPve().on("GET", INDEX, INDEXED).on("GET", CONFIG, other)
    with pytest.raises(Refused, match="does not carry the fingerprint"):
        adhoc(stub, MemoryStore({ROW: stored_row()}), "stop")
    assert stub.writes == []


def test_adopt_lets_an_adhoc_call_act_on_a_guest_not_ours_without_taking_it_over() -> None:
    store = MemoryStore()
    stub = (
        StubPve()
        .on("GET", INDEX, INDEXED)
        .on("GET", STATUS, {"status": "running"}, {"status": "stopped"})
        .on("POST", STOP, upid("vzstop"))
        .on("GET", status_path("vzstop"), OK)
    )
    out = adhoc(stub, store, "stop", adopt=True)
    assert out == {
        "vmid": 150,
        "node": "pve1",
        "type": "lxc",
        "status": "stopped",
        "changed": True,
        "upid": upid("vzstop"),
    }
    assert store.rows == {}


def test_an_adhoc_start_of_a_running_guest_sends_nothing() -> None:
    stub, store = owned(StubPve().on("GET", INDEX, INDEXED).on("GET", STATUS, {"status": "running"}))
    out = adhoc(stub, store, "start")
    assert out["changed"] is False and out["upid"] is None
    assert stub.writes == []


def test_an_adhoc_shutdown_sends_its_timeout_and_force_only_when_asked() -> None:
    stub, store = owned(
        StubPve()
        .on("GET", INDEX, INDEXED)
        .on("GET", STATUS, {"status": "running"}, {"status": "stopped"})
        .on("POST", SHUTDOWN, upid("vzshutdown"))
        .on("GET", status_path("vzshutdown"), OK)
    )
    adhoc(stub, store, "shutdown", timeout=20)
    assert stub.calls("POST", SHUTDOWN)[0].form == {"timeout": "20"}


def test_an_adhoc_reboot_of_a_stopped_guest_is_refused() -> None:
    stub, store = owned(StubPve().on("GET", INDEX, INDEXED).on("GET", STATUS, {"status": "stopped"}))
    with pytest.raises(Refused, match="is stopped, and a reboot needs a running container"):
        adhoc(stub, store, "reboot")
    assert stub.writes == []


def test_an_adhoc_timeout_that_is_no_number_of_seconds_is_refused() -> None:
    with pytest.raises(DeclarationError, match="timeout: -5"):
        adhoc(StubPve(), MemoryStore(), "shutdown", timeout=-5)


@pytest.mark.parametrize("value", ["false", "n", "no", "0", 0, 1, None])
def test_an_adhoc_adopt_that_is_not_a_boolean_is_refused_before_any_request(value: object) -> None:
    # bool('false') and bool('n') are True: taken as given, adopt='false' acted on a guest not ours.
    # adopt is the product's own switch: errors.boolean_problem, a real boolean only.
    stub = StubPve()
    with pytest.raises(DeclarationError) as refused:
        adhoc(stub, MemoryStore(), "shutdown", adopt=value)
    assert refused.value.problems == [f"adopt: expected true or false (a boolean, unquoted), got {value!r}"]
    assert stub.sent == []


@pytest.mark.parametrize("value", ["n", "2", "maybe", None])
def test_an_adhoc_force_stop_pve_would_not_read_as_a_boolean_is_refused_before_any_request(
    value: object,
) -> None:
    # force_stop=n sent forceStop=1 (bool('n') is True). force_stop mirrors PVE's forceStop, so it
    # takes what pve-common JSONSchema.pm parse_boolean takes, and nothing else.
    stub = StubPve()
    with pytest.raises(DeclarationError) as refused:
        adhoc(stub, MemoryStore(), "shutdown", force_stop=value)
    assert refused.value.problems[0].startswith("force_stop: expected a boolean as PVE spells it")
    assert stub.sent == []


# ============================================================================================
# HA-managed guests: what the HA manager does with a start or a shutdown
# ============================================================================================


def test_ha_route_plans_what_the_ha_manager_does() -> None:
    """qemu-server ``API2/Qemu.pm`` ``vm_start``: ``ha-manager set vm:<vmid> --state started``;
    ``vm_shutdown``: ``ha-manager crm-command stop vm:<vmid> <timeout // 60>`` (forceStop ignored);
    pve-ha-manager ``Resources/PVEVM.pm`` ``shutdown`` then runs ``vm_shutdown`` with
    ``forceStop => 1`` (a hard stop at the timeout) and ``vm_stop`` for a timeout of 0;
    ``Resources/PVECT.pm`` ``shutdown`` sends no forceStop (a container still up fails the stop:
    ``Manager.pm`` ``next_state_request_stop`` puts the service in ``error``)."""
    qemu, lxc = GUESTS["qemu"], GUESTS["lxc"]
    assert power.ha_route(qemu, 150, "pve1", "start", 60, False, "stopped") == (
        "`ha-manager set vm:150 --state started`: the HA manager starts it in a later round"
    )
    assert power.ha_route(qemu, 150, "pve1", "shutdown", 90, True, "started") == (
        "`ha-manager crm-command stop vm:150 90`: the HA manager shuts it down within 90 s, then stops it "
        "hard"
    )
    with pytest.raises(Refused, match=r"forceStop=1\); a shutdown never stops a VM hard unless asked"):
        power.ha_route(qemu, 150, "pve1", "shutdown", 90, False, "started")
    assert power.ha_route(lxc, 120, "pve1", "shutdown", 60, True, "started") == (
        "`ha-manager crm-command stop ct:120 60`: the HA manager shuts it down within 60 s, never forced "
        "(force_stop is ignored); a container still up then leaves the service in error state"
    )
    assert "never forced" in power.ha_route(lxc, 120, "pve1", "shutdown", 60, False, "started")
    # Manager.pm: "request immediate service hard-stop" for a timeout of 0, whatever the guest.
    with pytest.raises(
        Refused, match=r"which stops it hard at once \(pve-ha-manager Manager.pm: a timeout of 0\)"
    ):
        power.ha_route(lxc, 120, "pve1", "shutdown", 0, False, "started")
    assert "stops it hard at once" in power.ha_route(lxc, 120, "pve1", "shutdown", 0, True, "started")


@pytest.mark.parametrize(
    ("action", "state", "remedy"),
    [
        # Manager.pm next_state_error acts only once the resource is disabled.
        ("start", "error", "`ha-manager set vm:150 --state disabled`, fix what put it in error"),
        # next_state_started reads a queued crm-command stop; a service being fenced or moved does not.
        ("shutdown", "fence", "or set its state yourself (`ha-manager set vm:150 --state stopped`)"),
        ("start", "migrate", "or set its state yourself (`ha-manager set vm:150 --state started`)"),
    ],
)
def test_ha_route_refuses_what_the_ha_manager_will_not_carry_out_now(
    action: str, state: str, remedy: str
) -> None:
    with pytest.raises(Refused) as refused:
        power.ha_route(GUESTS["qemu"], 150, "pve1", action, 60, True, state)
    text = str(refused.value)
    assert f"VM 150 on pve1 is HA-managed (ha.state {state}): PVE hands a {action} to the HA manager" in text
    assert remedy in text


@pytest.mark.parametrize(
    ("now", "status", "over"),
    [
        pytest.param("running", "stopped", {"shutdown_timeout": 0}, id="stop-hard"),
        pytest.param("running", "stopped", {"force_stop": True}, id="stop-forced"),
        pytest.param("stopped", "running", {}, id="start"),
        # Two owners of one power state, even while both say the same.
        pytest.param("running", "running", {}, id="as-ha-holds-it"),
    ],
)
def test_a_state_status_on_a_guest_a_live_ha_resource_manages_is_refused(
    now: str, status: str, over: dict
) -> None:
    """pve-ha-manager ``HA/Config.pm`` ``vm_is_ha_managed``: PVE hands every start and shutdown of
    a guest whose resource is not ``ignored`` to the HA manager, and ``get_service_status`` shows it
    as ``status/current``'s ``ha.managed: 1``. HA owns that guest's power: a declared ``status`` is
    refused at plan and at apply (the one decision), naming the HA state to declare, nothing sent."""
    ha = {"status": now, "ha": {"managed": 1, "state": "started"}}
    for test in (True, False):
        stub, store = owned(StubPve().on("GET", STATUS, ha))
        outcome = plan(stub, store, test=test, status=status, **over)
        assert outcome.result is False, outcome.comment
        text = " ".join(outcome.comment)
        wanted = "started" if status == "running" else "stopped"
        assert (
            f"CT 150 on pve1: status: {status} is refused: HA resource ct:150 (live, ha.state started) owns "
            "its power state" in text
        )
        assert "(pve-ha-manager HA/Config.pm vm_is_ha_managed)" in text
        assert "even while both say the same" in text
        assert f"declare proxmox:ha_resources:ct:150: {{ha_state: {wanted}}}" in text
        assert f"`ha-manager set ct:150 --state {wanted}`" in text
        assert "set the resource to ignored" in text
        assert stub.calls("POST") == [] and stub.calls("PUT") == []


def test_a_guest_whose_ha_resource_is_ignored_takes_its_declared_status() -> None:
    """``HA/Config.pm`` ``$service_check_ha_state``: an ``ignored`` resource does not manage its
    guest, and ``get_service_status`` reads it ``managed: 0``: PVE starts it itself."""
    stub, store = owned(StubPve().on("GET", STATUS, {"status": "stopped", "ha": {"managed": 0}}))
    outcome = plan(stub, store, test=True, status="running")
    assert outcome.result is None, outcome.comment
    assert outcome.comment[-1] == "CT 150 on pve1: would start"


@pytest.mark.parametrize(
    "ha",
    [
        pytest.param({"managed": "maybe", "state": "started"}, id="managed-not-a-flag"),
        pytest.param("managed", id="not-a-mapping"),
        pytest.param({"state": "started"}, id="managed-missing"),
    ],
)
def test_a_status_read_whose_ha_is_malformed_is_an_error_not_an_unmanaged_guest(ha: object) -> None:
    """pve-ha-manager ``HA/Config.pm`` ``get_service_status`` always answers ``{managed: 0|1, ...}``
    in ``status/current``'s ``ha`` (qemu-server ``API2/Qemu.pm`` and pve-container
    ``API2/LXC/Status.pm`` ``vm_status``). An ``ha`` of another shape says nothing of whether HA owns
    the guest's power: read as unmanaged, the apply would send a start HA then takes over. It is a
    malformed answer, at plan and at apply, and nothing is sent."""
    for test in (True, False):
        stub, store = owned(StubPve().on("GET", STATUS, {"status": "stopped", "ha": ha}))
        outcome = plan(stub, store, test=test, status="running")
        assert outcome.result is False, outcome.comment
        text = " ".join(outcome.comment)
        assert f"GET {STATUS}" in text and "malformed answer" in text and "ha" in text, text
        assert stub.calls("POST") == [] and stub.calls("PUT") == []


def test_a_vm_s_shutdown_timeout_defaults_to_its_startup_down_a_container_s_to_60() -> None:
    """qemu-server ``QemuServer.pm`` ``_do_vm_stop``: ``$timeout = $opts->{down} if $opts->{down}``
    when the shutdown names no timeout, then 60; pve-container ``API2/LXC/Status.pm``
    ``vm_shutdown``: ``timeout // 60``, whatever ``startup`` says."""
    undeclared = power.parse_power({"status": "stopped"})
    qemu, lxc = GUESTS["qemu"], GUESTS["lxc"]
    vm = undeclared.for_guest(qemu, {"startup": "order=2,up=30,down=180"})
    assert (vm.shutdown_timeout, vm.timeout_from) == (180, "its startup: down=180")
    assert vm.shutdown_form() == {"timeout": "180"}
    assert undeclared.for_guest(qemu, {"startup": "down=0"}).shutdown_timeout == 60, "0 is Perl-false"
    assert undeclared.for_guest(qemu, {}).shutdown_timeout == 60
    assert undeclared.for_guest(lxc, {"startup": "down=180"}).shutdown_timeout == 60
    declared = power.parse_power({"status": "stopped", "shutdown_timeout": 30})
    assert declared.for_guest(qemu, {"startup": "down=180"}).shutdown_timeout == 30


def test_a_paused_vm_is_neither_running_nor_stopped() -> None:
    """qemu-server ``API2/Qemu.pm`` ``vm_shutdown``: ``vm_is_paused($vmid, 1)`` (qmpstatus paused,
    prelaunch, suspended) dies ``VM is paused - cannot shutdown`` without ``forceStop`` and stops it
    hard with it; ``vm_start`` refuses a VM whose QEMU runs (``VM <vmid> already running``)."""
    from salt_proxmox.guest.refusals import paused_state

    assert paused_state({"status": "running", "qmpstatus": "paused"}) == "paused"
    assert paused_state({"status": "running", "qmpstatus": "running"}) is None
    assert paused_state({"status": "stopped", "qmpstatus": "stopped"}) is None
    qemu, stop = GUESTS["qemu"], power.parse_power({"status": "stopped"})
    with pytest.raises(Refused, match=r"`VM is paused - cannot shutdown`.*`qm resume 150`.*force_stop: true"):
        power.paused_route(qemu, 150, "pve1", "shutdown", stop, "paused")
    with pytest.raises(
        Refused, match=r"neither running nor stopped.*`VM 150 already running`.*`qm resume 150`"
    ):
        power.paused_route(qemu, 150, "pve1", None, power.parse_power({"status": "running"}), "prelaunch")
    forced = power.parse_power({"status": "stopped", "force_stop": True})
    assert "PVE stops it hard instead of shutting it down" in power.paused_route(
        qemu, 150, "pve1", "shutdown", forced, "suspended"
    )


def test_a_reboot_is_judged_once_the_guest_runs_again() -> None:
    """qemu-server ``QemuServer.pm`` ``vm_reboot``: the task ends when QEMU has exited ("qmeventd
    starts it again on a stop event"), so after it the status is read again, bounded, until it runs."""
    stub = StubPve().on("GET", STATUS, {"status": "stopped"}, {"status": "stopped"}, {"status": "running"})
    ctx = context(stub, MemoryStore())
    assert (
        power.verify_power(ctx, GUESTS["lxc"], "pve1", 150, "reboot", "running", 5, settles=True) == "running"
    )
    assert len(stub.calls("GET", STATUS)) == 3
    stub = StubPve().on("GET", STATUS, {"status": "stopped"})
    with pytest.raises(
        power.PowerNotReached, match="the reboot task ended OK, but PVE reports the container stopped"
    ):
        power.verify_power(
            context(stub, MemoryStore()), GUESTS["lxc"], "pve1", 150, "reboot", "running", 2, True
        )
    assert len(stub.calls("GET", STATUS)) == 3, "the first read and two more, then no more"
