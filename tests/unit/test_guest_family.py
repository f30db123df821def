"""The shared guest lifecycle (``salt_proxmox.guest.lifecycle``) driven by a family other than
containers, against the counting stub PVE of ``test_lifecycle_units``.

The family here is the container family with a VM's words and path segment and a create of two
requests (a clone, then a config write), as qemu-server has them: ``POST /nodes/{node}/qemu/{vmid}/clone``
and ``POST /nodes/{node}/qemu/{vmid}/config`` both answer a UPID (qemu-server ``PVE/API2/Qemu.pm``
``clone_vm``, ``update_vm_async``). It proves that the shared code takes its paths, words and create
steps from the family alone, and how a create of several tasks keeps the ownership row honest.
"""

from __future__ import annotations

import dataclasses

from salt_proxmox.guest import lifecycle
from salt_proxmox.guest.family import CreatePlan, CreateStep
from salt_proxmox.guest.pending import GuestConfig
from salt_proxmox.lxc.family import LXC
from salt_proxmox.ownership.rows import CREATING, OWNED
from salt_proxmox.ownership.stores import MemoryStore
from salt_proxmox.pve.errors import PveError
from tests.support.guest_stubs import (
    DECLARED,
    OK,
    RUNNING,
    StubPve,
    context,
    live_config,
    missing,
    status_path,
    upid,
)

ROW = "homelab/qemu/150"
CONFIG = "nodes/pve1/qemu/150/config"
READ = "nodes/pve1/qemu/150/pending"
INDEX = "cluster/resources"
CLONE = "nodes/pve1/qemu/9000/clone"
FAILED = {"status": "stopped", "exitstatus": "clone failed: out of space"}


def _create(ctx, decl, credential):
    """A clone, then the declared config onto it: the second step is asked for only once the first
    task has ended (``events`` records the order)."""
    ctx.events.append("first asked")
    yield CreateStep("POST", CLONE, f"clone VM 9000 to {decl.vmid}", {"newid": str(decl.vmid)})
    ctx.events.append("second asked")
    yield CreateStep("POST", CONFIG, f"configure VM {decl.vmid}", {"memory": decl.config["memory"]})


VM_LIKE = dataclasses.replace(
    LXC,
    words=dataclasses.replace(
        LXC.words, kind="qemu", state="proxmox_qemu", noun="VM", label="VM", command="qm"
    ),
    plan_create=lambda ctx, decl: CreatePlan(source="by cloning VM 9000", again="by cloning VM 9000"),
    create=_create,
)


def run(stub: StubPve, store: MemoryStore, test: bool):
    ctx = context(stub, store)
    ctx.events = []  # type: ignore[attr-defined]
    declared = {k: v for k, v in DECLARED.items() if k != "unprivileged"}
    outcome = lifecycle.present(ctx, VM_LIKE, "web", test, **declared, unprivileged=1)
    return ctx, outcome


def _absent_stub() -> StubPve:
    return StubPve().on("GET", CONFIG, missing()).on("GET", INDEX, [])


def test_the_plan_reads_and_speaks_as_the_family_does() -> None:
    stub = StubPve().on("GET", CONFIG, missing()).on("GET", INDEX, [])
    _, outcome = run(stub, MemoryStore(), test=True)
    assert outcome.result is None
    # The create writes net0: its bridge's vnet zone, the provision token's SDN.Use on it and the
    # node's listing are read once each (guest.nics).
    assert [s.path for s in stub.sent] == [
        READ, INDEX, "cluster/nextid", "cluster/sdn/vnets", "access/permissions", "nodes/pve1/network"
    ]  # fmt: skip
    assert outcome.comment == ["VM 150 on pve1: would be created by cloning VM 9000"]
    assert outcome.changes["created"] == {"old": None, "new": "VM 150 on pve1"}


def test_each_create_step_is_a_task_awaited_by_the_one_credential_before_the_next_is_asked() -> None:
    store = MemoryStore()
    seen: list[str] = []

    def clone(call):
        seen.append(store.rows[ROW]["phase"])
        return upid("qmclone")

    stub = (
        StubPve()
        .on("GET", CONFIG, missing(), live_config())
        .on("GET", INDEX, [])
        .on("POST", CLONE, clone)
        .on("POST", CONFIG, upid("qmconfig"))
        .on("GET", status_path("qmclone"), RUNNING, OK)
        .on("GET", status_path("qmconfig"), OK)
    )
    ctx, outcome = run(stub, store, test=False)
    assert outcome.result is True, outcome.comment
    assert seen == [CREATING]  # the row says creating before the first request
    posts = stub.calls("POST")
    assert [p.path for p in posts] == [CLONE, CONFIG]
    polls = [*stub.calls("GET", status_path("qmclone")), *stub.calls("GET", status_path("qmconfig"))]
    assert len(polls) == 3
    assert all(call.credential is posts[0].credential for call in [*posts, *polls])
    assert posts[0].credential.role == "provision"
    # The second step is asked for only after the clone's task ended.
    order = [s.path for s in stub.sent]
    assert order.index(CONFIG) > max(i for i, p in enumerate(order) if p == status_path("qmclone"))
    assert ctx.events == ["first asked", "second asked"]
    assert store.rows[ROW]["phase"] == OWNED
    assert outcome.comment[-1] == "VM 150 on pve1 has been created"


def test_a_failed_first_task_restores_the_row_it_found() -> None:
    store = MemoryStore()
    stub = _absent_stub().on("POST", CLONE, upid("qmclone")).on("GET", status_path("qmclone"), FAILED)
    ctx, outcome = run(stub, store, test=False)
    assert outcome.result is False
    assert store.rows == {}
    assert ctx.events == ["first asked"]  # nothing after a failed step is asked for
    assert stub.calls("POST", CONFIG) == []


def test_a_refused_first_request_restores_the_row_it_found() -> None:
    store = MemoryStore()
    stub = _absent_stub().on("POST", CLONE, PveError("POST", CLONE, 403, "Permission check failed"))
    _, outcome = run(stub, store, test=False)
    assert outcome.result is False
    assert store.rows == {}


def test_a_failed_later_step_keeps_the_creating_row_because_the_guest_exists() -> None:
    store = MemoryStore()
    stub = (
        _absent_stub()
        .on("POST", CLONE, upid("qmclone"))
        .on("GET", status_path("qmclone"), OK)
        .on("POST", CONFIG, upid("qmconfig"))
        .on("GET", status_path("qmconfig"), {"status": "stopped", "exitstatus": "unable to parse value"})
    )
    _, outcome = run(stub, store, test=False)
    assert outcome.result is False
    assert upid("qmconfig") in outcome.comment[0]
    assert store.rows[ROW]["phase"] == CREATING


def test_read_live_refuses_a_guest_of_the_other_family_at_the_vmid() -> None:
    stub = (
        StubPve()
        .on("GET", CONFIG, missing())
        .on("GET", INDEX, [{"vmid": 150, "node": "pve1", "type": "lxc"}])
    )
    _, outcome = run(stub, MemoryStore(), test=True)
    assert outcome.result is False
    assert "vmid 150 is a lxc guest on node pve1, not a VM on pve1." in outcome.comment[0]


#: A family whose config writes land in the pending section before PVE applies them, as qemu-server's
#: ``update_vm_api`` writes them (``Family.pending_first``).
PENDING_FIRST = dataclasses.replace(VM_LIKE, pending_first=True)
HOTPLUG_FAILED = PveError(
    "PUT", CONFIG, 400, "Parameter verification failed.", {"memory": "hotplug problem - out of DIMM slots"}
)


def _adopt_with_memory(stub: StubPve, store: MemoryStore):
    declared = {k: v for k, v in DECLARED.items() if k != "unprivileged"}
    return lifecycle.present(
        context(stub, store),
        PENDING_FIRST,
        "web",
        False,
        **{**declared, "memory": 2048},
        adopt=True,
        unprivileged=1,
    )


def test_a_failed_write_of_a_pending_first_family_is_read_back_key_by_key() -> None:
    # update_vm_api: write_config of [PENDING] per key, vmconfig_hotplug_pending, then raise_param_exc.
    before = GuestConfig.settled(live_config()).rows()
    waiting = GuestConfig(
        current=GuestConfig.settled(live_config()).current, digest="d2", pending={"memory": 2048}
    ).rows()
    store = MemoryStore()
    stub = StubPve().on("GET", READ, before, waiting).on("PUT", CONFIG, HOTPLUG_FAILED)
    outcome = _adopt_with_memory(stub, store)
    text = "\n".join(outcome.comment)
    assert outcome.result is False
    assert "memory: hotplug problem - out of DIMM slots" in text
    assert "read back after the failed write" in text and "pending until the VM restarts: memory." in text
    assert "Nothing was written" not in text
    assert outcome.changes["memory"] == {"old": "1024", "new": "2048"}, outcome.changes
    assert outcome.changes["pending"]["memory"]["new"] == "2048"
    assert [s.path for s in stub.calls("GET", READ)] == [READ, READ]
    assert store.rows[ROW]["phase"] == OWNED, "the row follows the read-back, as after a write"


def test_a_failed_write_whose_read_back_fails_too_keeps_every_change_and_says_so() -> None:
    store = MemoryStore()
    unread = PveError("GET", READ, 500, "got timeout")
    stub = StubPve().on("GET", READ, GuestConfig.settled(live_config()).rows(), unread)
    stub.on("PUT", CONFIG, HOTPLUG_FAILED)
    outcome = _adopt_with_memory(stub, store)
    text = "\n".join(outcome.comment)
    assert outcome.result is False and "so part of memory may be written" in text, text
    assert "could not be read back" in text and "Nothing was written" not in text
    assert "memory" in outcome.changes and ROW not in store.rows


def test_a_failed_write_of_a_family_that_raises_before_it_writes_is_nothing_written() -> None:
    # pve-container update_vm: "don't write to config if we get any errors" (raise_param_exc first).
    store = MemoryStore()
    stub = (
        StubPve().on("GET", READ, GuestConfig.settled(live_config()).rows()).on("PUT", CONFIG, HOTPLUG_FAILED)
    )
    declared = {k: v for k, v in DECLARED.items() if k != "unprivileged"}
    outcome = lifecycle.present(
        context(stub, store),
        VM_LIKE,
        "web",
        False,
        **{**declared, "memory": 2048},
        adopt=True,
        unprivileged=1,
    )
    assert outcome.result is False and outcome.comment[-1] == "Nothing was written."
    assert stub.calls("GET", READ) and len(stub.calls("GET", READ)) == 1
