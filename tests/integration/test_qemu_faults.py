"""VMs under faults and bad input, against fakepve (``tests.support.qemu.QemuPve``): a create by clone
that fails after the clone exists, values the plan must refuse because qemu-server refuses them, and
the password that must never come back out.

After every failure the return, the ownership rows and the cluster agree, and a re-run either
converges or refuses naming the remedy that then works."""

from __future__ import annotations

from typing import Any

import pytest

from salt_proxmox.guest import lifecycle
from salt_proxmox.ownership.rows import CREATING, OWNED, row_key
from salt_proxmox.ownership.stores import MemoryStore
from salt_proxmox.qemu.family import QEMU
from tests.support.cluster import CLOUD_TEMPLATE_VMID, PROVISION_TOKEN_ID
from tests.support.guests import TARGET, make_context, requests_since, static_targets, vm, writes


def present(ctx, state_id: str, test: bool, **declared: Any):
    return lifecycle.present(ctx, QEMU, state_id, test, **declared)


def clone_of_template(**over: Any) -> dict[str, Any]:
    declared: dict[str, Any] = {
        "vmid": 151,
        "node": "pve1",
        "clone": CLOUD_TEMPLATE_VMID,
        "full": True,
        "name": "app",
        "cores": 4,
        "memory": 3072,
        "ipconfig0": "ip=10.0.0.51/24,gw=10.0.0.1",
    }
    declared.update(over)
    return declared


@pytest.mark.parametrize(
    ("method", "suffix"),
    [
        pytest.param("POST", "/qemu/151/config", id="config-write-after-clone"),
        pytest.param("GET", "/qemu/151/config", id="read-of-the-clone"),
    ],
)
def test_a_clone_whose_configuration_fails_says_the_vm_exists_and_adopt_finishes_it(
    fresh_cluster, method, suffix
):
    """qemu-server ``clone_vm`` made VM 151 (its task ended OK); the next request failed. The VM
    exists, so the return must not say nothing was written nor drop ``created``; the row stays
    ``creating``; a re-run refuses (the clone differs from the declaration, so it may not be ours)
    naming adopt: true, and adopt: true then takes it over and writes what differs."""
    store = MemoryStore()
    ctx = make_context(static_targets(fresh_cluster), store=store)
    fresh_cluster.pve.fail(method, suffix, 500, "got timeout", times=1)
    failed = present(ctx, "app", False, **clone_of_template())
    text = "\n".join(failed.comment)
    assert failed.result is False, text
    assert fresh_cluster.pve.vm(151) is not None, "the clone task ran"
    assert "Nothing was written" not in text, text
    assert "clone VM 9000 to VM 151" in text and "The guest exists" in text, text
    assert failed.changes.get("created", {}).get("new"), failed.changes
    key = row_key(TARGET, "qemu", 151)
    assert store.rows[key]["phase"] == CREATING

    again = present(
        make_context(static_targets(fresh_cluster), store=store), "app", False, **clone_of_template()
    )
    assert again.result is False and "adopt: true" in "\n".join(again.comment), again.comment
    assert store.rows[key]["phase"] == CREATING

    start = len(fresh_cluster.pve.requests)
    taken = present(
        make_context(static_targets(fresh_cluster), store=store),
        "app",
        False,
        **clone_of_template(adopt=True),
    )
    assert taken.result is True, taken.comment
    assert next((m, p) for m, p, _ in writes(requests_since(fresh_cluster, start))) == (
        "PUT",
        "/nodes/pve1/qemu/151/config",
    )
    assert store.rows[key]["phase"] == OWNED
    live = fresh_cluster.pve.vm(151).config
    assert str(live["cores"]) == "4" and str(live["memory"]).endswith("3072")
    clean = present(
        make_context(static_targets(fresh_cluster), store=store), "app", True, **clone_of_template()
    )
    assert clean.result is True and clean.changes == {}, clean.comment


@pytest.mark.parametrize(
    ("value", "rule"),
    [
        # pve-common JSONSchema.pm pve_verify_ipv4_config -> pve_verify_cidrv4: octets 0-255, prefix 8-32.
        pytest.param("ip=999.1.1.1/24", "IPv4 address/prefix", id="octet-over-255"),
        pytest.param("ip=10.0.0.1/33", "IPv4 address/prefix", id="prefix-33"),
        pytest.param("ip=10.0.0.5/4", "prefix 8-32", id="prefix-under-8"),
        pytest.param("ip=10.0.0.5/255.255.255.0", "prefix length", id="netmask-not-prefix"),
        # format ipv4 / ipv6 (pve_verify_ipv4/pve_verify_ipv6).
        pytest.param("ip=10.0.0.5/24,gw=10.0.0.256", "not an IPv4 address", id="gateway-octet"),
        pytest.param("ip6=fd00::5/64,gw6=::::", "not an IPv6 address", id="gateway6-malformed"),
        pytest.param("ip=10.0.0.5/24,gw=fd00::1", "not an IPv4 address", id="gateway-other-family"),
        # qemu-server $ipconfig_fmt: gw requires ip, gw6 requires ip6.
        pytest.param("gw=10.0.0.1", "gw= requires ip=", id="gateway-without-address"),
        pytest.param("ip=dhcp,gw6=fd00::1", "gw6= requires ip6=", id="gateway6-without-address6"),
    ],
)
def test_an_ipconfig_pve_refuses_is_refused_at_plan_and_writes_nothing(fresh_cluster, value, rule):
    store = MemoryStore()
    ctx = make_context(static_targets(fresh_cluster), store=store)
    start = len(fresh_cluster.pve.requests)
    for test in (True, False):
        outcome = present(ctx, "app", test, **clone_of_template(ipconfig0=value))
        text = "\n".join(outcome.comment)
        assert outcome.result is False and "ipconfig0" in text and rule in text, text
    assert writes(requests_since(fresh_cluster, start)) == [] and store.rows == {}
    assert fresh_cluster.pve.vm(151) is None


def test_ipconfig_manual_is_taken_as_pve_takes_it(fresh_cluster):
    """``pve-ipv4-config`` takes ``manual`` (pve_verify_ipv4_config), so a plan must not refuse it."""
    ctx = make_context(static_targets(fresh_cluster))
    outcome = present(ctx, "app", True, **clone_of_template(ipconfig0="ip=manual,ip6=auto"))
    assert outcome.result is None, outcome.comment


def test_an_efi_disk_and_a_tpm_state_keep_the_size_pve_gives_them(fresh_cluster):
    """qemu-server ``create_disks`` sizes ``efidisk0`` from the OVMF vars file (528K for
    ``efitype=4m``) and ``tpmstate0`` as ``TPMSTATE_DISK_SIZE`` (4M), whatever ``storage:N`` says;
    ``resize_vm`` then has nothing to grow. The create must read back as declared, and the next plan
    must be clean, not a grow to N GiB forever."""
    store = MemoryStore()
    declared = {
        "vmid": 152,
        "node": "pve1",
        "name": "uefi",
        "bios": "ovmf",
        "machine": "q35",
        "scsi0": "local-lvm:4",
        "efidisk0": "local-lvm:1,efitype=4m,pre-enrolled-keys=1",
        "tpmstate0": "local-lvm:1,version=v2.0",
    }
    ctx = make_context(static_targets(fresh_cluster), store=store)
    done = present(ctx, "uefi", False, **declared)
    assert done.result is True, done.comment
    live = fresh_cluster.pve.vm(152).config
    assert "size=528K" in live["efidisk0"] and "size=4M" in live["tpmstate0"], live
    start = len(fresh_cluster.pve.requests)
    for test in (True, False):
        again = present(make_context(static_targets(fresh_cluster), store=store), "uefi", test, **declared)
        assert again.result is True and again.changes == {}, again.comment
    assert writes(requests_since(fresh_cluster, start)) == []
    moved = present(ctx, "uefi", True, **{**declared, "efidisk0": "other:1,efitype=4m,pre-enrolled-keys=1"})
    assert moved.result is False and "qm disk move" in "\n".join(moved.comment)


def test_a_clone_onto_another_node_is_awaited_on_the_node_that_runs_it(fresh_cluster):
    """qemu-server ``clone_vm`` runs its worker on the template's node (its UPID names pve1) even
    when ``target`` puts the clone on pve2; pve-manager ``read_task_status`` answers only on the
    node that ran the task. The create must be awaited there, then configured on pve2."""
    # clone_vm clones to another node only a VM whose volumes are all on shared storage
    # ($check_storage_access_clone: "VM uses local storage"): the template's storage is shared here.
    fresh_cluster.pve.storages["local-lvm"]["shared"] = 1
    store = MemoryStore()
    declared = {
        "vmid": 160,
        "node": "pve2",
        "clone": CLOUD_TEMPLATE_VMID,
        "full": True,
        "name": "far",
        "cores": 3,
    }
    ctx = make_context(static_targets(fresh_cluster), store=store)
    start = len(fresh_cluster.pve.requests)
    done = present(ctx, "far", False, **declared)
    assert done.result is True, done.comment
    steps = [(m, p) for m, p, _ in writes(requests_since(fresh_cluster, start))]
    assert steps == [("POST", "/nodes/pve1/qemu/9000/clone"), ("POST", "/nodes/pve2/qemu/160/config")]
    assert store.rows[row_key(TARGET, "qemu", 160)]["phase"] == OWNED
    assert str(fresh_cluster.pve.vm(160).config["cores"]) == "3"
    again = present(make_context(static_targets(fresh_cluster), store=store), "far", True, **declared)
    assert again.result is True and again.changes == {}, again.comment


def _owned_vm_150(served) -> MemoryStore:
    """VM 150 created from scratch by its state (``test_qemu.vm``), owned; returns the rows."""
    store = MemoryStore()
    assert present(make_context(static_targets(served), store=store), "web", False, **vm()).result
    return store


def test_a_running_vm_whose_hot_plug_fails_reports_what_is_pending_and_the_next_plan_sees_it(fresh_cluster):
    """qemu-server ``update_vm_api`` writes every value into ``[PENDING]`` before
    ``vmconfig_hotplug_pending`` runs, and raises the hot-plug errors after (``raise_param_exc``), so a
    failed write has written. A hot-plug goes as the ``POST …/config`` task (``update_vm_async``); when
    it fails the apply reads the config back and says what is in effect (``tags``: ``$fast_plug_option``),
    what is pending (``net1``: its hot-plug failed) and never "Nothing was written"; the row follows the
    read-back (net1's MAC), and the next plan judges net1 as pending, not as a write to make again."""
    store = _owned_vm_150(fresh_cluster)
    served = fresh_cluster.pve.vm(150)
    served.status = "running"
    fresh_cluster.pve.hotplug_errors[150] = {"net1": "VM 150 qmp command 'netdev_add' failed - got timeout"}
    changed = vm(tags="web;canary", net1="virtio,bridge=vmbr0")

    def run(test: bool):
        return present(make_context(static_targets(fresh_cluster), store=store), "web", test, **changed)

    plan = run(True)
    said = "\n".join(plan.comment)
    assert "VM 150 on pve1: would write net1, tags" in said, plan.comment
    assert (
        "the write goes as a task (POST /nodes/pve1/qemu/150/config): it hot-plugs net1 into the running VM"
        in said
    ), plan.comment
    start = len(fresh_cluster.pve.requests)
    done = run(False)
    text = "\n".join(done.comment)
    log = requests_since(fresh_cluster, start)
    assert [(m, p) for m, p, _ in writes(log)] == [("POST", "/nodes/pve1/qemu/150/config")]
    assert any(m == "GET" and ":qmconfig:150:" in p and p.endswith("/status") for m, p, _ in log), log
    assert done.result is False, text
    assert "net1: hotplug problem - VM 150 qmp command 'netdev_add' failed" in text, text
    assert "in effect: tags; pending until the VM restarts: net1." in text, text
    assert "`qm reboot 150`" in text and "Nothing was written" not in text, text
    assert set(done.changes) == {"tags", "net1", "pending"}, done.changes
    assert "net1" in served.pending and "canary" in served.config["tags"]

    again = run(True)
    assert again.result is None, again.comment
    assert set(again.changes) == {"pending"} and set(again.changes["pending"]) == {"net1"}, again.changes
    assert "net1 is written but pending until the VM restarts" in "\n".join(again.comment)


def test_a_disk_added_by_post_config_is_awaited_as_a_task_and_only_the_planned_write_is_sent(fresh_cluster):
    """A new disk is allocated by ``create_disks`` inside ``update_vm_api``: the write goes as the
    ``POST …/config`` task, awaited with the credential that started it (its status read), and the
    request log holds exactly the write the plan listed; the next plan is clean."""
    store = _owned_vm_150(fresh_cluster)
    changed = vm(scsi1="local-lvm:4,iothread=1")

    def run(test: bool):
        return present(make_context(static_targets(fresh_cluster), store=store), "web", test, **changed)

    plan = run(True)
    assert plan.comment == [
        "VM 150 on pve1: would write scsi1",
        "VM 150 on pve1: the write goes as a task (POST /nodes/pve1/qemu/150/config): it allocates scsi1 "
        "(create_disks)",
    ], plan.comment
    start = len(fresh_cluster.pve.requests)
    done = run(False)
    assert done.result is True, done.comment
    log = requests_since(fresh_cluster, start)
    ((method, path, form),) = writes(log)
    assert (method, path) == ("POST", "/nodes/pve1/qemu/150/config") and "scsi1" in str(form)
    polls = [p for m, p, _ in log if m == "GET" and ":qmconfig:150:" in p and p.endswith("/status")]
    assert polls, log
    task = fresh_cluster.pve.tasks[polls[-1].split("/")[4]]
    assert task["exitstatus"] == "OK" and task["user"] == PROVISION_TOKEN_ID, task
    assert "size=4G" in fresh_cluster.pve.vm(150).config["scsi1"]
    again = run(True)
    assert again.result is True and again.changes == {}, again.comment


def test_a_failed_sync_config_write_is_read_back_never_nothing_was_written(fresh_cluster):
    """A simple change to a stopped VM goes as the synchronous ``PUT …/config``; when it fails the
    apply reads the config back (``update_vm_api`` may have written part of it) and says what it
    found: here none of it, so ``cores`` is named as not written, and the next plan writes it."""
    store = _owned_vm_150(fresh_cluster)
    fresh_cluster.pve.fail("PUT", "/qemu/150/config", 500, "got timeout", times=1)
    changed = vm(cores=4)
    start = len(fresh_cluster.pve.requests)
    done = present(make_context(static_targets(fresh_cluster), store=store), "web", False, **changed)
    text = "\n".join(done.comment)
    log = requests_since(fresh_cluster, start)
    assert [(m, p) for m, p, _ in writes(log)] == [("PUT", "/nodes/pve1/qemu/150/config")]
    assert done.result is False and "got timeout" in text, text
    assert "read back after the failed write" in text and "none of it is in effect or pending" in text
    assert "not written: cores." in text and "Nothing was written" not in text, text
    assert done.changes == {}, done.changes
    assert log[-1][0] == "GET" and log[-1][1].endswith("/qemu/150/pending"), log[-1]
    again = present(make_context(static_targets(fresh_cluster), store=store), "web", True, **changed)
    assert again.result is None and set(again.changes) == {"cores"}, again.changes
