"""Power state against fakepve (it models ``status/current``, ``start``, ``shutdown`` with ``timeout``
and ``forceStop``, ``stop`` and ``reboot`` for containers as pve-container ``src/PVE/API2/LXC/Status.pm``
does, and refuses a start of a running guest, a shutdown of a stopped one): the state's ``status``
and the ad-hoc calls of ``salt_proxmox.guest.power``.
"""

from __future__ import annotations

from urllib.parse import parse_qs

import pytest

from salt_proxmox.errors import Refused
from salt_proxmox.guest import lifecycle as guest_lifecycle
from salt_proxmox.guest import power
from salt_proxmox.lxc.family import LXC
from salt_proxmox.ownership.stores import MemoryStore
from salt_proxmox.registry import guests
from tests.support.guests import (
    declaration,
    dns1,
    make_context,
    requests_since,
    static_targets,
    writes,
)

PATH = "/nodes/pve1/lxc/120"

GUESTS = guests()


def _adopted(served):
    store = MemoryStore()
    ctx = make_context(static_targets(served), store=store)
    adopted = guest_lifecycle.present(
        ctx, LXC, "dns", False, adopt=True, **dns1(description="Resolver for the lab")
    )
    assert adopted.result is True, adopted.comment
    return ctx, store


def _form(body: bytes) -> dict[str, str]:
    """A logged form body as ``{key: value}``."""
    return {key: values[0] for key, values in parse_qs(body.decode()).items()}


def _dns(**over):
    return dns1(description="Resolver for the lab", **over)


def test_a_container_created_declared_running_is_started_by_its_own_task_and_replans_clean(fresh_cluster):
    ctx = make_context(static_targets(fresh_cluster))
    start = len(fresh_cluster.pve.requests)
    done = guest_lifecycle.present(ctx, LXC, "web", False, **declaration(status="running"))
    assert done.result is True, done.comment
    assert fresh_cluster.pve.ct(150).status == "running"
    sent = writes(requests_since(fresh_cluster, start))
    assert [(m, p) for m, p, _ in sent] == [
        ("POST", "/nodes/pve1/lxc"),
        ("POST", "/nodes/pve1/lxc/150/status/start"),
    ]
    assert "start" not in _form(sent[0][2]) and "ostemplate" in _form(sent[0][2])
    mark = len(fresh_cluster.pve.requests)
    again = guest_lifecycle.present(ctx, LXC, "web", True, **declaration(status="running"))
    assert again.result is True, again.comment
    lxc = [p for _, p, _ in requests_since(fresh_cluster, mark) if "/lxc/" in p]
    assert lxc == ["/nodes/pve1/lxc/150/pending", "/nodes/pve1/lxc/150/status/current"]


def test_status_stopped_shuts_down_with_its_timeout_then_running_starts_it_again(fresh_cluster):
    ctx, _ = _adopted(fresh_cluster)
    plan = guest_lifecycle.present(ctx, LXC, "dns", True, **_dns(status="stopped", shutdown_timeout=30))
    assert plan.result is None and plan.changes == {"status": {"old": "running", "new": "stopped"}}
    assert fresh_cluster.pve.ct(120).status == "running"
    start = len(fresh_cluster.pve.requests)
    done = guest_lifecycle.present(ctx, LXC, "dns", False, **_dns(status="stopped", shutdown_timeout=30))
    assert done.result is True, done.comment
    assert fresh_cluster.pve.ct(120).status == "stopped"
    ((method, path, body),) = writes(requests_since(fresh_cluster, start))
    assert (method, path) == ("POST", f"{PATH}/status/shutdown")
    assert _form(body) == {"timeout": "30"}
    assert guest_lifecycle.present(ctx, LXC, "dns", True, **_dns(status="stopped")).result is True
    up = guest_lifecycle.present(ctx, LXC, "dns", False, **_dns(status="running"))
    assert up.result is True, up.comment
    assert fresh_cluster.pve.ct(120).status == "running"


def test_a_shutdown_that_times_out_leaves_the_container_running_and_is_never_forced(fresh_cluster):
    ctx, _ = _adopted(fresh_cluster)
    fresh_cluster.pve.ct(120).shutdown_secs = 600
    start = len(fresh_cluster.pve.requests)
    done = guest_lifecycle.present(ctx, LXC, "dns", False, **_dns(status="stopped", shutdown_timeout=5))
    assert done.result is False
    assert "without force_stop: true" in " ".join(done.comment)
    assert fresh_cluster.pve.ct(120).status == "running"
    assert [p for _, p, _ in writes(requests_since(fresh_cluster, start))] == [f"{PATH}/status/shutdown"]


def test_a_running_container_whose_pending_change_a_start_would_apply_is_judged_after_it(fresh_cluster):
    ctx, _ = _adopted(fresh_cluster)
    assert (
        guest_lifecycle.present(ctx, LXC, "dns", False, **_dns(nameserver="10.0.0.1")).result is True
    )  # pending: it runs
    assert (
        guest_lifecycle.present(
            ctx, LXC, "dns", False, **_dns(nameserver="10.0.0.1", status="stopped")
        ).result
        is True
    )
    up = guest_lifecycle.present(ctx, LXC, "dns", False, **_dns(nameserver="10.0.0.1", status="running"))
    assert up.result is True, up.comment
    assert not any("pending until" in line for line in up.comment), up.comment
    assert fresh_cluster.pve.ct(120).config.get("nameserver") == "10.0.0.1"


def test_adhoc_calls_list_read_and_obey_ownership(fresh_cluster):
    ctx = make_context(static_targets(fresh_cluster))
    rows = power.guest_rows(ctx)
    assert {(r["vmid"], r["type"]) for r in rows} >= {(120, "lxc")}
    assert [r["vmid"] for r in rows] == sorted(r["vmid"] for r in rows)
    qemu = [r for r in rows if r["type"] == "qemu"]
    for row in qemu:  # a VM's status is read at its own path, whatever families are managed
        assert power.status_of(ctx, row["vmid"])["type"] == "qemu"
    assert power.status_of(ctx, 120) == {"vmid": 120, "node": "pve1", "type": "lxc", "status": "running"}
    start = len(fresh_cluster.pve.requests)
    with pytest.raises(Refused, match="is not recorded as ours"):
        power.power_call(ctx, GUESTS, "shutdown", 120)
    assert writes(requests_since(fresh_cluster, start)) == []
    ctx, _ = _adopted(fresh_cluster)
    out = power.power_call(ctx, GUESTS, "shutdown", 120, timeout=20)
    assert out["changed"] is True and out["status"] == "stopped" and out["upid"].startswith("UPID:pve1:")
    assert power.power_call(ctx, GUESTS, "shutdown", 120)["changed"] is False
    assert power.power_call(ctx, GUESTS, "start", 120)["status"] == "running"
    assert power.power_call(ctx, GUESTS, "reboot", 120)["status"] == "running"
    assert power.power_call(ctx, GUESTS, "stop", 120)["status"] == "stopped"


def test_a_vm_gets_the_same_power_state_and_calls(fresh_cluster):
    """``status`` on ``proxmox_qemu`` through the shared lifecycle, and the power calls on a VM."""
    from salt_proxmox.guest import lifecycle
    from salt_proxmox.qemu.family import QEMU
    from tests.support.guests import vm

    store = MemoryStore()
    ctx = make_context(static_targets(fresh_cluster), store=store)
    start = len(fresh_cluster.pve.requests)
    done = lifecycle.present(ctx, QEMU, "web", False, **vm(status="running"))
    assert done.result is True, done.comment
    assert "VM 150 on pve1 has been started" in done.comment
    assert [(m, p) for m, p, _ in writes(requests_since(fresh_cluster, start))] == [
        ("POST", "/nodes/pve1/qemu"),
        ("POST", "/nodes/pve1/qemu/150/status/start"),
    ]
    assert fresh_cluster.pve.vm(150).status == "running"
    assert lifecycle.present(ctx, QEMU, "web", True, **vm(status="running")).result is True
    assert power.status_of(ctx, 150) == {"vmid": 150, "node": "pve1", "type": "qemu", "status": "running"}
    down = power.power_call(ctx, GUESTS, "shutdown", 150, timeout=30)
    assert down["status"] == "stopped" and down["type"] == "qemu"
    plan = lifecycle.present(ctx, QEMU, "web", True, **vm(status="running"))
    assert plan.comment[-1] == "VM 150 on pve1: would start"


def test_an_ha_managed_vm_refuses_a_state_s_status_while_the_adhoc_start_goes_to_ha_and_is_read_back(
    fresh_cluster,
):
    """pve-ha-manager ``HA/Config.pm`` ``vm_is_ha_managed``: HA owns an HA-managed VM's power, so the
    state's ``status:`` is refused at plan and at apply, nothing sent. The ad-hoc start is one action
    asked now: qemu-server ``vm_start`` only runs ``ha-manager set vm:<vmid> --state started`` and
    ends OK; the status is read back after the task, and a VM still stopped fails naming what PVE
    reports and that HA decides (the fake's ``ha_holds``: the request is queued, never carried out)."""
    from salt_proxmox.guest import lifecycle
    from salt_proxmox.qemu.family import QEMU
    from tests.support.guests import vm

    store = MemoryStore()
    ctx = make_context(static_targets(fresh_cluster), store=store)
    assert lifecycle.present(ctx, QEMU, "web", False, **vm()).result is True
    fresh_cluster.pve.vm(150).ha_state = "stopped"
    fresh_cluster.pve.ha_holds.add(150)
    start = len(fresh_cluster.pve.requests)
    for test in (True, False):
        refused = lifecycle.present(ctx, QEMU, "web", test, **vm(status="running"))
        assert refused.result is False, refused.comment
        text = " ".join(refused.comment)
        assert (
            "VM 150 on pve1: status: running is refused: HA resource vm:150 (live, ha.state stopped)" in text
        )
        assert "declare proxmox:ha_resources:vm:150: {ha_state: started}" in text
    assert writes(requests_since(fresh_cluster, start)) == []
    with pytest.raises(
        power.PowerNotReached, match=r"PVE reports the VM stopped, not running\. It is HA-managed"
    ):
        power.power_call(ctx, GUESTS, "start", 150)
    assert [(m, p) for m, p, _ in writes(requests_since(fresh_cluster, start))] == [
        ("POST", "/nodes/pve1/qemu/150/status/start")
    ]
    assert fresh_cluster.pve.vm(150).status == "stopped"


def test_an_ha_managed_vm_is_powered_only_through_ha_and_the_adhoc_calls_as_the_ha_manager_acts(
    fresh_cluster,
):
    """qemu-server ``API2/Qemu.pm`` ``vm_start``/``vm_shutdown`` hand an HA-managed VM to the HA
    manager (``ha-manager set vm:<vmid> --state started``, ``ha-manager crm-command stop vm:<vmid>
    <timeout>``) and end once the request is queued; the CRM carries it out rounds later (the fake's
    ``ha_rounds``). The state's ``status:`` is refused whatever it asks, even the status HA holds (two
    owners of one power state); the ad-hoc calls wait, bounded, for the status to turn.
    pve-ha-manager ``Resources/PVEVM.pm`` ``shutdown`` sends ``forceStop=1``: the ad-hoc shutdown
    without force_stop is refused, nothing sent."""
    from salt_proxmox.guest import lifecycle
    from salt_proxmox.qemu.family import QEMU
    from tests.support.guests import vm

    store = MemoryStore()

    def run(test, **over):
        ctx = make_context(static_targets(fresh_cluster), store=store)
        return lifecycle.present(ctx, QEMU, "web", test, **vm(**over))

    ctx = make_context(static_targets(fresh_cluster), store=store)
    assert run(False).result is True
    fresh_cluster.pve.vm(150).ha_state = "stopped"  # ha-manager add vm:150 --state stopped
    fresh_cluster.pve.ha_rounds[150] = 3
    start = len(fresh_cluster.pve.requests)
    started = power.power_call(ctx, GUESTS, "start", 150)
    assert started["status"] == "running" and started["changed"] is True
    assert fresh_cluster.pve.vm(150).ha_state == "started"
    for status in ("running", "stopped"):  # running: what HA holds now
        for test in (True, False):
            refused = run(test, status=status, **({"force_stop": True} if status == "stopped" else {}))
            assert refused.result is False, refused.comment
            text = " ".join(refused.comment)
            assert "HA resource vm:150 (live, ha.state started) owns its power state" in text
            assert "even while both say the same" in text
    with pytest.raises(Refused, match=r"a shutdown never stops a VM hard unless asked"):
        power.power_call(ctx, GUESTS, "shutdown", 150)
    down = power.power_call(ctx, GUESTS, "shutdown", 150, force_stop=True)
    assert down["status"] == "stopped"
    assert [(m, p) for m, p, _ in writes(requests_since(fresh_cluster, start))] == [
        ("POST", "/nodes/pve1/qemu/150/status/start"),
        ("POST", "/nodes/pve1/qemu/150/status/shutdown"),
    ]
    assert fresh_cluster.pve.vm(150).status == "stopped" and fresh_cluster.pve.vm(150).ha_state == "stopped"
    # Without a status the state plans clean: HA's power is left alone.
    assert run(True).changes == {}


def test_a_vm_s_shutdown_waits_its_startup_down_and_a_paused_vm_is_planned_as_pve_acts(fresh_cluster):
    """qemu-server ``QemuServer.pm`` ``_do_vm_stop``: a shutdown without a timeout waits the VM's
    ``startup: down=``, then 60 s; the state sends that timeout and its plan names it. qemu-server
    ``API2/Qemu.pm`` ``vm_shutdown``: a paused VM (``qmpstatus: paused``) is refused (``VM is paused -
    cannot shutdown``) unless ``forceStop`` is given, and then stopped hard; it is neither running nor
    stopped, so ``status: running`` is refused too, each with ``qm resume`` and nothing sent."""
    from salt_proxmox.guest import lifecycle
    from salt_proxmox.qemu.family import QEMU
    from tests.support.guests import vm

    store = MemoryStore()

    def run(test, **over):
        ctx = make_context(static_targets(fresh_cluster), store=store)
        return lifecycle.present(ctx, QEMU, "web", test, **vm(**over))

    assert run(False, status="running").result is True
    served = fresh_cluster.pve.vm(150)
    served.config["startup"] = "order=2,down=180"  # set by hand; the state does not declare startup
    plan = run(True, status="stopped")
    assert (
        plan.comment[-1]
        == "VM 150 on pve1: would shut down (within 180 s (its startup: down=180), never forced)"
    )
    start = len(fresh_cluster.pve.requests)
    done = run(False, status="stopped")
    assert done.result is True, done.comment
    ((method, path, body),) = writes(requests_since(fresh_cluster, start))
    assert path == "/nodes/pve1/qemu/150/status/shutdown" and _form(body) == {"timeout": "180"}

    served.status, served.qmpstatus = "running", "paused"
    for test in (True, False):
        for status in ("stopped", "running"):
            start = len(fresh_cluster.pve.requests)
            refused = run(test, status=status)
            assert refused.result is False, refused.comment
            text = " ".join(refused.comment)
            assert "VM 150 on pve1 is paused (qmpstatus paused)" in text and "`qm resume 150`" in text
            if status == "stopped":
                assert "PVE refuses to shut it down (`VM is paused - cannot shutdown`" in text
            assert writes(requests_since(fresh_cluster, start)) == []
    plan = run(True, status="stopped", force_stop=True)
    assert plan.comment[-1].startswith(
        "VM 150 on pve1: would be stopped hard: it is paused (qmpstatus paused)"
    )
    start = len(fresh_cluster.pve.requests)
    done = run(False, status="stopped", force_stop=True)
    assert done.result is True, done.comment
    ((method, path, body),) = writes(requests_since(fresh_cluster, start))
    assert (method, path) == ("POST", "/nodes/pve1/qemu/150/status/shutdown")
    assert _form(body) == {"timeout": "180", "forceStop": "1"} and served.status == "stopped"
    assert run(True, status="stopped", force_stop=True).changes == {}
