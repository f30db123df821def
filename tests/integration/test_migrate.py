"""Migration as declared intent (``salt_proxmox.guest.migrate``) against the fake cluster
(``tests.support.migrate.MigratePve`` for VMs, fakepve's own container migration): a guest declared on
pve2 while it lives on pve1 plans its move with PVE's preflight, applies it as one awaited migrate task,
then plans clean; without ``migrate: true`` it is refused naming it; what PVE refuses is refused at plan."""

from __future__ import annotations

from typing import Any

from salt_proxmox.guest import lifecycle
from salt_proxmox.lxc.family import LXC
from salt_proxmox.ownership.rows import row_key
from salt_proxmox.ownership.stores import MemoryStore
from salt_proxmox.qemu.family import QEMU
from tests.support.guests import TARGET, declaration, make_context, requests_since, static_targets, vm, writes

#: A VM with one 16 GiB local disk and a cloud-init drive (regenerated on the target, never copied).
MOVED = {"scsi0": "local-lvm:16,discard=on,iothread=1", "ide2": None}


def present(served, store, family, test: bool, **declared: Any):
    ctx = make_context(static_targets(served), store=store)
    return lifecycle.present(ctx, family, "guest", test, **declared)


def made(served, family, **declared: Any) -> MemoryStore:
    """A guest of ours, created on pve1 by its own state."""
    store = MemoryStore()
    done = present(served, store, family, False, **declared)
    assert done.result is True, done.comment
    return store


def test_a_vm_declared_on_another_node_is_migrated_offline_then_plans_clean(fresh_cluster):
    store = made(fresh_cluster, QEMU, **vm(**MOVED))
    refused = present(fresh_cluster, store, QEMU, True, **vm(**MOVED, node="pve2"))
    # Without the opt-in: refused as before, naming migrate: true as the remedy.
    assert refused.result is False and "declare migrate: true on this guest" in " ".join(refused.comment)

    start = len(fresh_cluster.pve.requests)
    plan = present(fresh_cluster, store, QEMU, True, **vm(**MOVED, node="pve2", migrate=True))
    assert plan.result is None, plan.comment
    assert "VM 150 on pve1: would migrate to pve2 (offline, 1 disk of 16 GiB copied)" in plan.comment
    assert plan.changes == {"node": {"old": "pve1", "new": "pve2"}}
    assert writes(requests_since(fresh_cluster, start)) == [] and fresh_cluster.pve.vm(150).node == "pve1"

    start = len(fresh_cluster.pve.requests)
    done = present(fresh_cluster, store, QEMU, False, **vm(**MOVED, node="pve2", migrate=True))
    assert done.result is True, done.comment
    # qemu-server migrate_vm: one POST, offline (the VM is stopped), awaited as a task.
    assert writes(requests_since(fresh_cluster, start)) == [
        ("POST", "/nodes/pve1/qemu/150/migrate", b"target=pve2")
    ]
    assert fresh_cluster.pve.vm(150).node == "pve2"
    assert store.rows[row_key(TARGET, "qemu", 150)]["declared"]["node"] == "pve2"

    again = present(fresh_cluster, store, QEMU, True, **vm(**MOVED, node="pve2", migrate=True))
    assert again.result is True and again.changes == {}, again.comment


def test_a_local_iso_is_refused_at_plan_with_pves_words(fresh_cluster):
    # QemuMigrate.pm scan_local_volumes dies `local cdrom image` for a CD-ROM on a local storage.
    store = made(fresh_cluster, QEMU, **vm())
    plan = present(fresh_cluster, store, QEMU, True, **vm(node="pve2", migrate=True))
    assert plan.result is False
    assert "`local cdrom image`" in " ".join(plan.comment), plan.comment


def test_a_storage_the_target_lacks_is_refused_with_pves_reason(fresh_cluster):
    # migrate_vm_precondition: the node is in not_allowed_nodes with its unavailable_storages.
    store = made(fresh_cluster, QEMU, **vm(**MOVED))
    fresh_cluster.pve.storages["local-lvm"]["nodes"] = "pve1"
    plan = present(fresh_cluster, store, QEMU, True, **vm(**MOVED, node="pve2", migrate=True))
    assert plan.result is False
    assert "PVE does not allow a migration to pve2 (unavailable_storages: local-lvm" in " ".join(plan.comment)


def test_an_ha_managed_vm_is_refused_naming_its_ha_resource(fresh_cluster):
    # qemu-server migrate_vm hands an HA-managed VM's move to `ha-manager migrate vm:<vmid> <target>`.
    store = made(fresh_cluster, QEMU, **vm(**MOVED))
    fresh_cluster.pve.vm(150).ha_state = "stopped"
    plan = present(fresh_cluster, store, QEMU, True, **vm(**MOVED, node="pve2", migrate=True))
    text = " ".join(plan.comment)
    assert plan.result is False and "managed by HA as vm:150" in text and "ha-manager relocate" in text


def test_a_failed_migrate_task_leaves_the_vm_and_its_row(fresh_cluster):
    store = made(fresh_cluster, QEMU, **vm(**MOVED))
    before = dict(store.rows[row_key(TARGET, "qemu", 150)])
    fresh_cluster.pve.migrate_failures[150] = "storage migration for 'local-lvm:vm-150-disk-0' failed"
    done = present(fresh_cluster, store, QEMU, False, **vm(**MOVED, node="pve2", migrate=True))
    assert done.result is False and "storage migration for" in " ".join(done.comment)
    assert fresh_cluster.pve.vm(150).node == "pve1"
    assert store.rows[row_key(TARGET, "qemu", 150)] == before


def test_a_running_container_is_moved_in_restart_mode(fresh_cluster):
    store = made(fresh_cluster, LXC, **declaration(status="running"))
    declared = declaration(status="running", node="pve2", migrate=True)
    plan = present(fresh_cluster, store, LXC, True, **declared)
    assert plan.result is None, plan.comment
    assert (
        "CT 150 on pve1: would migrate to pve2 (restart mode: it is shut down on pve1 (timeout 180 s), "
        "moved, and started on pve2, 2 disks of 18 GiB copied)"
    ) in plan.comment
    start = len(fresh_cluster.pve.requests)
    done = present(fresh_cluster, store, LXC, False, **declared)
    assert done.result is True, done.comment
    assert writes(requests_since(fresh_cluster, start)) == [
        ("POST", "/nodes/pve1/lxc/150/migrate", b"target=pve2&restart=1&timeout=180")
    ]
    ct = fresh_cluster.pve.guest(150)
    assert (ct.node, ct.status) == ("pve2", "running")
    again = present(fresh_cluster, store, LXC, True, **declared)
    assert again.result is True and again.changes == {}, again.comment


def test_a_migrate_value_that_is_not_a_boolean_is_refused_by_name(fresh_cluster):
    store = made(fresh_cluster, QEMU, **vm(**MOVED))
    plan = present(fresh_cluster, store, QEMU, True, **vm(**MOVED, node="pve2", migrate="yes"))
    assert plan.result is False and "migrate: expected true or false" in " ".join(plan.comment)
    assert fresh_cluster.pve.vm(150).node == "pve1"


def test_a_target_node_s_storage_listing_that_is_no_list_fails_the_plan_never_reads_as_not_available(
    fresh_cluster,
):
    # pve-storage API2/Storage/Status.pm index answers a list of rows; a 200 without one is no proof that
    # the container's storages are missing on pve2 (LXC/Migrate.pm prepare's storage_check_enabled).
    store = made(fresh_cluster, LXC, **declaration())
    fresh_cluster.pve.fail("GET", "/nodes/pve2/storage", 200, "")
    start = len(fresh_cluster.pve.requests)
    plan = present(fresh_cluster, store, LXC, True, **declaration(node="pve2", migrate=True))
    said = " ".join(plan.comment)
    assert plan.result is False and "nodes/pve2/storage" in said, said
    assert "is not available on node" not in said, said
    assert writes(requests_since(fresh_cluster, start)) == []
