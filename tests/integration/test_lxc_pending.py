"""Pending changes on a running container, against fakepve (it keeps pending values for a running
container by pve-container ``src/PVE/LXC/Config.pm`` ``vmconfig_hotplug_pending``'s rules, serves
``GET …/pending`` and applies pending values at a start or reboot), and task ``WARNINGS: N``.

Container 120 (``dns1``) runs. ``memory`` is hot-plugged (cgroup); ``nameserver`` is not: PVE keeps
it in ``[pve:pending]`` until the next start.
"""

from __future__ import annotations

from salt_proxmox.guest import lifecycle as guest_lifecycle
from salt_proxmox.lxc.family import LXC
from salt_proxmox.ownership.stores import MemoryStore
from tests.support.cluster import DNS1_VMID
from tests.support.guests import (
    declaration,
    dns1,
    make_context,
    requests_since,
    static_targets,
    writes,
)

PATH = f"/nodes/pve1/lxc/{DNS1_VMID}"


def _adopted(served):
    store = MemoryStore()
    ctx = make_context(static_targets(served), store=store)
    adopted = guest_lifecycle.present(
        ctx, LXC, "dns", False, adopt=True, **dns1(description="Resolver for the lab")
    )
    assert adopted.result is True, adopted.comment
    return store


def _dns(**over):
    return dns1(description="Resolver for the lab", **over)


def _text(outcome) -> str:
    return "\n".join(outcome.comment)


def test_a_change_pve_keeps_pending_is_said_so_and_the_next_plan_reports_it_without_rewriting(fresh_cluster):
    store = _adopted(fresh_cluster)
    ctx = make_context(static_targets(fresh_cluster), store=store)
    start = len(fresh_cluster.pve.requests)
    plan = guest_lifecycle.present(ctx, LXC, "dns", True, **_dns(nameserver="10.0.0.1", memory=768))
    assert plan.result is None, plan.comment
    assert set(plan.changes) == {"nameserver", "memory"}
    assert "memory would take effect at once; nameserver would stay pending until the container restarts" in (
        _text(plan)
    )
    log = requests_since(fresh_cluster, start)
    # The power state is read only because a written key would wait on a running guest.
    # (/cluster/options, read once per run for the declared tags' style, is no read of the guest.)
    assert [p for _, p, _ in log if "/lxc/" in p] == [f"{PATH}/pending", f"{PATH}/status/current"]

    done = guest_lifecycle.present(ctx, LXC, "dns", False, **_dns(nameserver="10.0.0.1", memory=768))
    assert done.result is True, done.comment
    assert "has been updated: memory, nameserver; in effect now: memory" in _text(done)
    assert "nameserver is written but pending until the container restarts" in _text(done)
    ct = fresh_cluster.pve.ct(DNS1_VMID)
    assert ct.pending == {"nameserver": "10.0.0.1"} and ct.config["memory"] in (768, "768")

    start = len(fresh_cluster.pve.requests)
    again = guest_lifecycle.present(
        make_context(static_targets(fresh_cluster), store=store),
        LXC,
        "dns",
        True,
        **_dns(nameserver="10.0.0.1", memory=768),
    )
    assert again.result is None, "a value that only waits is not clean"
    assert again.changes == {"pending": {"nameserver": {"old": None, "new": "10.0.0.1"}}}
    assert "`pct reboot 120`" in _text(again) and "reboot_for_pending: true" in _text(again)
    applied = guest_lifecycle.present(
        make_context(static_targets(fresh_cluster), store=store),
        LXC,
        "dns",
        False,
        **_dns(nameserver="10.0.0.1", memory=768),
    )
    assert applied.result is True and applied.changes == {}, applied.comment
    assert writes(requests_since(fresh_cluster, start)) == [], "a pending value is not written again"


def test_reboot_for_pending_reboots_as_a_task_and_the_change_is_live(fresh_cluster):
    store = _adopted(fresh_cluster)
    ctx = make_context(static_targets(fresh_cluster), store=store)
    plan = guest_lifecycle.present(
        ctx, LXC, "dns", True, reboot_for_pending=True, **_dns(nameserver="10.0.0.1")
    )
    assert plan.result is None and "rebooted" in plan.changes, plan.comment
    start = len(fresh_cluster.pve.requests)
    done = guest_lifecycle.present(
        ctx, LXC, "dns", False, reboot_for_pending=True, **_dns(nameserver="10.0.0.1")
    )
    assert done.result is True, done.comment
    assert done.changes["rebooted"] == {"old": "pending: nameserver", "new": "in effect"}
    log = requests_since(fresh_cluster, start)
    assert [(m, p) for m, p, _ in writes(log)] == [
        ("PUT", f"{PATH}/config"),
        ("POST", f"{PATH}/status/reboot"),
    ]
    assert any("vzreboot" in p and p.endswith("/status") for _, p, _ in log), "the reboot task is awaited"
    ct = fresh_cluster.pve.ct(DNS1_VMID)
    assert ct.pending == {} and ct.config["nameserver"] == "10.0.0.1" and ct.status == "running"
    clean = guest_lifecycle.present(
        make_context(static_targets(fresh_cluster), store=store),
        LXC,
        "dns",
        True,
        reboot_for_pending=True,
        **_dns(nameserver="10.0.0.1"),
    )
    assert clean.result is True and clean.changes == {}, clean.comment


def test_without_reboot_for_pending_nothing_is_rebooted(fresh_cluster):
    store = _adopted(fresh_cluster)
    start = len(fresh_cluster.pve.requests)
    done = guest_lifecycle.present(
        make_context(static_targets(fresh_cluster), store=store),
        LXC,
        "dns",
        False,
        **_dns(nameserver="10.0.0.1"),
    )
    assert done.result is True, done.comment
    assert [p for _, p, _ in writes(requests_since(fresh_cluster, start))] == [f"{PATH}/config"]


def test_a_pending_change_somebody_else_left_is_refused_with_revert_and_the_rest_is_listed(fresh_cluster):
    store = _adopted(fresh_cluster)
    fresh_cluster.pve.ct(DNS1_VMID).pending["nameserver"] = "9.9.9.9"  # `pct set 120 --nameserver 9.9.9.9`
    ctx = make_context(static_targets(fresh_cluster), store=store)
    start = len(fresh_cluster.pve.requests)
    for test in (True, False):
        outcome = guest_lifecycle.present(
            ctx, LXC, "dns", test, **_dns(nameserver="10.0.0.1", memory=768, cores=2)
        )
        assert outcome.result is False
        text = _text(outcome)
        assert "nameserver: a pending change waits" in text and "pending 9.9.9.9" in text
        assert "`pct set 120 --revert nameserver`" in text and "pct set 120 --nameserver" not in text
        # The refusal does not hide the rest of the plan.
        assert "besides what is refused, it differs in cores, memory" in text
        assert outcome.changes == ({"cores": {"old": "1", "new": "2"}, "memory": {"old": "512", "new": "768"}}
                                   if test else {})  # fmt: skip
    assert writes(requests_since(fresh_cluster, start)) == []
    assert fresh_cluster.pve.ct(DNS1_VMID).pending == {"nameserver": "9.9.9.9"}


def test_an_undeclared_pending_change_is_shown_and_blocks_the_reboot(fresh_cluster):
    store = _adopted(fresh_cluster)
    fresh_cluster.pve.ct(DNS1_VMID).pending["searchdomain"] = "lab.example"
    start = len(fresh_cluster.pve.requests)
    done = guest_lifecycle.present(
        make_context(static_targets(fresh_cluster), store=store),
        LXC,
        "dns",
        False,
        reboot_for_pending=True,
        **_dns(nameserver="10.0.0.1"),
    )
    assert done.result is True, done.comment
    text = _text(done)
    assert "searchdomain has a change this state does not declare" in text
    assert "`pct set 120 --revert searchdomain`" in text
    assert "is not rebooted" in text
    assert [p for _, p, _ in writes(requests_since(fresh_cluster, start))] == [f"{PATH}/config"]


def test_adopt_judges_the_values_in_effect(fresh_cluster):
    # The declared nameserver waits in pending: GET …/config would show it, the guest does not run it.
    fresh_cluster.pve.ct(DNS1_VMID).pending["nameserver"] = "10.0.0.1"
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    refused = guest_lifecycle.present(ctx, LXC, "dns", True, **_dns(nameserver="10.0.0.1"))
    assert refused.result is False
    assert "(it differs in nameserver)" in _text(refused)


def test_destroy_judges_the_values_in_effect(fresh_cluster):
    store = MemoryStore()
    ctx = make_context(static_targets(fresh_cluster), store=store)
    assert guest_lifecycle.present(ctx, LXC, "web", False, **declaration()).result
    # A change left pending on the stopped guest (made while it ran) is not what it runs with.
    fresh_cluster.pve.ct(150).pending["memory"] = 4096
    gone = guest_lifecycle.absent(ctx, LXC, "web", False, vmid=150, node="pve1", removal="destroy")
    assert gone.result is True, gone.comment
    assert fresh_cluster.pve.ct(150) is None


def test_a_task_that_ended_with_warnings_is_a_success_naming_the_count_and_the_log(fresh_cluster):
    store = _adopted(fresh_cluster)
    fresh_cluster.pve.task_warnings["resize"] = 2
    done = guest_lifecycle.present(
        make_context(static_targets(fresh_cluster), store=store),
        LXC,
        "dns",
        False,
        **_dns(rootfs="local-zfs:6"),
    )
    assert done.result is True, done.comment
    assert done.changes["disks"] == {"rootfs": {"old": "4G", "new": "6G"}}
    text = _text(done)
    assert "succeeded with 2 warnings (WARNINGS: 2)" in text and "`pvenode task log UPID:pve1:" in text


def test_a_root_only_refusal_still_lists_every_other_change(fresh_cluster):
    # pve-container LXC.pm check_ct_modify_config_perm: a feature other than nesting is root@pam's.
    store = _adopted(fresh_cluster)
    start = len(fresh_cluster.pve.requests)
    plan = guest_lifecycle.present(make_context(static_targets(fresh_cluster), store=store), LXC, "dns", True,
                   **_dns(features="nesting=1,keyctl=1", memory=768, tags="infra;dns;core"))  # fmt: skip
    assert plan.result is False
    assert "`pct set 120 --features 'nesting=1,keyctl=1'`" in _text(plan)
    assert "besides what is refused, it differs in memory, tags" in _text(plan)
    assert set(plan.changes) == {"memory", "tags"}
    assert writes(requests_since(fresh_cluster, start)) == []


def test_a_change_a_running_container_hot_plugs_needs_no_power_state_read(fresh_cluster):
    # vmconfig_hotplug_pending applies memory and cores live: when it starts does not depend on the
    # power state, so the plan spends no GET …/status/current on it.
    store = _adopted(fresh_cluster)
    start = len(fresh_cluster.pve.requests)
    plan = guest_lifecycle.present(make_context(static_targets(fresh_cluster), store=store), LXC, "dns", True,
                   **_dns(memory=768, cores=2))  # fmt: skip
    assert plan.result is None and set(plan.changes) == {"memory", "cores"}, plan.comment
    assert "pending" not in _text(plan)
    assert [p for _, p, _ in requests_since(fresh_cluster, start) if "/lxc/" in p] == [f"{PATH}/pending"]
