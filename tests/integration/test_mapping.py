"""Resource mappings through the simple-object lifecycle, against the served fake cluster, whose mappings
are ``tests.support.mappings.MappingPve`` (pve-manager ``PVE/API2/Cluster/Mapping/{PCI,USB,Dir}.pm``:
fakepve 0.5.0 stores none). A plan only reads, an apply writes what the plan showed, a second plan is clean;
a mapping made by hand is exported as a declaration that plans clean with adopt; a destroy is refused while
a VM names the mapping; a VM declaring a mapped device is refused at plan on a node the mapping lacks."""

from __future__ import annotations

import json

from salt_proxmox.datacenter import mappings
from salt_proxmox.export import objects
from salt_proxmox.guest import lifecycle as guest_lifecycle
from salt_proxmox.ownership.stores import MemoryStore
from salt_proxmox.qemu.family import QEMU
from salt_proxmox.simple.lifecycle import absent, present
from tests.support.cluster import ROUTER_CONFIG, ROUTER_NODE, ROUTER_VMID
from tests.support.guests import make_context, requests_since, static_targets, writes

GPU = {
    "name": "gpu",
    "description": "Lab GPUs",
    "map": [
        "node=pve1,path=0000:01:00.0,id=10DE:1EB8,iommugroup=14",
        {"node": "pve2", "path": "0000:02:00.0", "id": "10de:1eb8", "iommugroup": 20},
    ],
}


def _plan_apply_replan(served, ctx, spec, state_id, **declared):
    start = len(served.pve.requests)
    plan = present(ctx, spec, True, state_id, **declared)
    assert plan.result is None, plan.comment
    assert writes(requests_since(served, start)) == [], "a plan never writes"
    start = len(served.pve.requests)
    done = present(ctx, spec, False, state_id, **declared)
    assert done.result is True, done.comment
    assert done.changes == plan.changes, "the apply did what the plan showed"
    log = requests_since(served, start)
    again = present(ctx, spec, True, state_id, **declared)
    assert (again.result, again.changes) == (True, {}), again.comment
    return plan, done, log


def test_a_pci_mapping_is_created_updated_as_a_set_and_replans_clean(fresh_cluster):
    pve = fresh_cluster.pve
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    _, _, log = _plan_apply_replan(fresh_cluster, ctx, mappings.PCI, "gpu", **GPU)
    (create,) = writes(log)
    assert create[:2] == ("POST", "/cluster/mapping/pci")
    # Written in sysfs's lowercase hex (PCI.pm assert_valid compares by `ne`), keys in one order.
    assert pve.mappings["pci"]["gpu"]["map"] == [
        "node=pve1,id=10de:1eb8,iommugroup=14,path=0000:01:00.0",
        "node=pve2,id=10de:1eb8,iommugroup=20,path=0000:02:00.0",
    ]
    # The same entries in another order and key order are no change.
    same = present(ctx, mappings.PCI, True, "gpu", **{**GPU, "map": list(reversed(GPU["map"]))})
    assert (same.result, same.changes) == (True, {}), same.comment
    # One node's entry dropped and the description cleared: the whole map and delete=, with the digest.
    smaller = {**GPU, "map": GPU["map"][:1], "description": None}
    _, _, log = _plan_apply_replan(fresh_cluster, ctx, mappings.PCI, "gpu", **smaller)
    (update,) = writes(log)
    assert update[:2] == ("PUT", "/cluster/mapping/pci/gpu")
    body = json.loads(update[2])
    assert body["delete"] == "description" and len(body["map"]) == 1 and body["digest"]
    assert "description" not in pve.mappings["pci"]["gpu"]


def test_a_hand_made_mapping_exports_as_a_declaration_that_plans_clean_with_adopt(fresh_cluster):
    fresh_cluster.pve.add_mapping(
        "usb", "key", ["id=1050:0407,node=pve1", "node=pve2,path=1-2,id=1050:0407"], description="YubiKey"
    )
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    (exported,) = objects.export(ctx, mappings.USB).objects
    assert exported.declaration == {
        "name": "key",
        "map": ["node=pve1,id=1050:0407", "node=pve2,id=1050:0407,path=1-2"],
        "description": "YubiKey",
        "adopt": True,
    }
    start = len(fresh_cluster.pve.requests)
    plan = present(ctx, mappings.USB, True, "key", **exported.declaration)
    assert set(plan.changes) <= {"ownership"}, plan.changes
    done = present(ctx, mappings.USB, False, "key", **exported.declaration)
    assert done.result is True and writes(requests_since(fresh_cluster, start)) == []


def test_a_destroy_is_refused_while_a_vm_names_the_mapping(fresh_cluster):
    pve = fresh_cluster.pve
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    assert present(ctx, mappings.PCI, False, "gpu", **GPU).result is True
    # A VM made by hand naming it (PVE's Mapping/PCI.pm delete would remove it without a word).
    pve.vm(ROUTER_VMID).config["hostpci0"] = "mapping=gpu,pcie=1"
    start = len(pve.requests)
    refused = absent(ctx, mappings.PCI, False, "gpu", name="gpu", removal="destroy")
    assert refused.result is False
    assert f"VM {ROUTER_VMID} hostpci0 name it" in " ".join(refused.comment), refused.comment
    assert writes(requests_since(fresh_cluster, start)) == [] and "gpu" in pve.mappings["pci"]
    del pve.vm(ROUTER_VMID).config["hostpci0"]
    done = absent(ctx, mappings.PCI, False, "gpu", name="gpu", removal="destroy")
    assert done.result is True, done.comment
    assert "gpu" not in pve.mappings["pci"]


def test_dir_mappings_are_refused_on_pve_8_before_8_3_6(fresh_cluster):
    pve = fresh_cluster.pve
    pve.version, pve.release_version = "8.3.5", "8.3"
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    start = len(pve.requests)
    refused = present(ctx, mappings.DIR, True, "share", name="share", map=["node=pve1,path=/srv/share"])
    assert refused.result is False and "pve-manager 8.3.5" in " ".join(refused.comment), refused.comment
    assert writes(requests_since(fresh_cluster, start)) == []
    pve.version, pve.release_version = "8.4.1", "8.4"
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    _plan_apply_replan(
        fresh_cluster, ctx, mappings.DIR, "share", name="share", map=["node=pve1,path=/srv/share"]
    )


def test_a_vm_naming_a_mapping_its_node_lacks_is_refused_at_plan(fresh_cluster):
    pve = fresh_cluster.pve
    pve.add_mapping("pci", "nic", ["node=pve1,path=0000:03:00.0,id=8086:1533"])
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    router = {**ROUTER_CONFIG, "vmid": ROUTER_VMID, "node": ROUTER_NODE, "adopt": True}
    start = len(pve.requests)
    refused = guest_lifecycle.present(ctx, QEMU, "router", True, **{**router, "hostpci0": "mapping=nic"})
    assert refused.result is False
    said = " ".join(refused.comment)
    assert f"hostpci0: pci mapping nic has no entry for node {ROUTER_NODE} (it maps pve1)" in said, said
    missing = guest_lifecycle.present(ctx, QEMU, "router", True, **{**router, "usb0": "mapping=nokey"})
    assert "usb0: usb mapping nokey does not exist" in " ".join(missing.comment), missing.comment
    assert writes(requests_since(fresh_cluster, start)) == []
    pve.add_mapping(
        "pci",
        "nic",
        ["node=pve1,path=0000:03:00.0,id=8086:1533", f"node={ROUTER_NODE},path=0000:04:00.0,id=8086:1533"],
    )
    planned = guest_lifecycle.present(ctx, QEMU, "router", True, **{**router, "hostpci0": "mapping=nic"})
    assert planned.result is None and "hostpci0" in json.dumps(planned.changes), planned.comment


def test_a_destroy_is_refused_while_a_vm_state_of_the_run_names_the_mapping(fresh_cluster):
    from salt_proxmox.run.lowstate import Run
    from salt_proxmox.run.memo import keep_run

    pve = fresh_cluster.pve
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    assert present(ctx, mappings.PCI, False, "gpu", **GPU).result is True
    gone = {"state": "proxmox_mapping", "fun": "pci_absent", "__id__": "gpu", "name": "gpu"}
    app = {"state": "proxmox_qemu", "fun": "present", "__id__": "app", "name": "app", "vmid": 210}
    chunks = [{**gone, "removal": "destroy"}, {**app, "node": "pve1", "hostpci0": "mapping=gpu"}]
    run = Run(chunks, chunks[0], key="run-1")
    ctx.begin(run.key)
    keep_run(ctx.memo, run)
    refused = absent(ctx, mappings.PCI, True, "gpu", name="gpu", removal="destroy")
    assert refused.result is False
    assert "VM states of this run name it (app (hostpci0))" in " ".join(refused.comment), refused.comment
    assert "gpu" in pve.mappings["pci"]
