"""A VM's PVE ``name`` when its declaration names none (the formula's entry without ``name:``, passed
as ``name_from_id: true``): a live VM keeps its own name, whatever state id adopts it, and a create
names the VM after its state id and the plan says so. qemu-server ``PVE/API2/Qemu.pm``
``create_vm``/``clone_vm`` take ``name`` as given (a VM created without one shows as ``VM <vmid>``);
``update_vm_api`` writes only the keys sent, so an undeclared ``name`` is never touched.

Driven through ``_modules/proxmox.py`` ``qemu_present`` (what ``proxmox_qemu.present`` calls)."""

from __future__ import annotations

from tests.support.cluster import CLOUD_TEMPLATE_VMID, ROUTER_CONFIG, ROUTER_VMID
from tests.support.guests import requests_since, static_targets, writes
from tests.support.salt_modules import execution_module

#: VM 300 as the cluster holds it, declared under another state id, without ``name``.
ROUTER = {
    key: value
    for key, value in ROUTER_CONFIG.items()
    if key in ("memory", "cores", "sockets", "ostype", "scsihw", "boot", "onboot")
}


def _module(cluster, tmp_path):
    return execution_module(
        {"proxmox:targets": static_targets(cluster), "proxmox:ownership_file": str(tmp_path / "owned.json")}
    )


def test_adopting_a_vm_under_another_state_id_keeps_its_name(fresh_cluster, tmp_path):
    proxmox = _module(fresh_cluster, tmp_path)
    declared = {"vmid": ROUTER_VMID, "node": "pve2", "adopt": True, "name_from_id": True, **ROUTER}
    plan = proxmox.qemu_present("edge", test=True, **declared)
    assert "name" not in plan["changes"], plan
    start = len(fresh_cluster.pve.requests)
    done = proxmox.qemu_present("edge", test=False, **declared)
    assert done["result"] is True and "name" not in done["changes"], done
    assert fresh_cluster.pve.vm(ROUTER_VMID).config["name"] == "router"
    assert not any("name" in str(form) for _, _, form in writes(requests_since(fresh_cluster, start)))
    again = proxmox.qemu_present("edge", test=True, **declared)
    assert again["result"] is True and again["changes"] == {}, again


def test_a_declared_name_still_renames_an_adopted_vm(fresh_cluster, tmp_path):
    """The contrast: ``name`` declared (the state's name without ``name_from_id``) is judged as any key."""
    proxmox = _module(fresh_cluster, tmp_path)
    plan = proxmox.qemu_present("edge", test=True, vmid=ROUTER_VMID, node="pve2", adopt=True, **ROUTER)
    assert plan["changes"]["name"] == {"old": "router", "new": "edge"}, plan


def test_a_create_without_a_name_is_named_after_its_state_id_and_the_plan_says_so(fresh_cluster, tmp_path):
    proxmox = _module(fresh_cluster, tmp_path)
    declared = {"vmid": 170, "node": "pve1", "memory": 512, "scsi0": "local-lvm:4", "name_from_id": True}
    plan = proxmox.qemu_present("cache", test=True, **declared)
    assert plan["result"] is None, plan
    assert "VM 170 on pve1: named cache, its state id, since the declaration names none" in plan["comment"]
    start = len(fresh_cluster.pve.requests)
    done = proxmox.qemu_present("cache", test=False, **declared)
    assert done["result"] is True, done
    ((method, path, form),) = writes(requests_since(fresh_cluster, start))
    assert (method, path) == ("POST", "/nodes/pve1/qemu") and "name=cache" in str(form)
    assert fresh_cluster.pve.vm(170).config["name"] == "cache"
    assert proxmox.qemu_present("cache", test=True, **declared)["changes"] == {}


def test_a_clone_without_a_name_is_named_after_its_state_id(fresh_cluster, tmp_path):
    proxmox = _module(fresh_cluster, tmp_path)
    declared = {"vmid": 171, "node": "pve1", "clone": CLOUD_TEMPLATE_VMID, "name_from_id": True}
    plan = proxmox.qemu_present("ci", test=True, **declared)
    assert "VM 171 on pve1: named ci, its state id" in plan["comment"], plan
    assert proxmox.qemu_present("ci", test=False, **declared)["result"] is True
    assert fresh_cluster.pve.vm(171).config["name"] == "ci"
