"""VMs under faults and bad input, against fakepve (``tests.support.qemu.QemuPve``): a create by clone
that fails after the clone exists, values the plan must refuse because qemu-server refuses them, and
the password that must never come back out.

After every failure the return, the ownership rows and the cluster agree, and a re-run either
converges or refuses naming the remedy that then works."""

from __future__ import annotations

from typing import Any

import pytest

from salt_proxmox.guest import lifecycle
from salt_proxmox.ownership import CREATING, OWNED, MemoryStore, row_key
from salt_proxmox.qemu.family import QEMU
from tests.integration.lxc_support import TARGET, make_context, requests_since, static_targets, writes
from tests.support.cluster import CLOUD_TEMPLATE_VMID


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
