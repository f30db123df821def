"""A guest's NICs against the fake (``tests.support.qemu.QemuPve``: a start plugs every NIC into a
live bridge or vnet, a VM write checks SDN.Use as qemu-server ``check_bridge_access`` does), judged
at plan by ``salt_proxmox.guest.nics``: refused when PVE's plug or check would fail, nothing written."""

from __future__ import annotations

from typing import Any

import pytest

from salt_proxmox.guest import lifecycle
from salt_proxmox.lxc.family import LXC
from salt_proxmox.network import apply as network_apply
from salt_proxmox.ownership.stores import MemoryStore
from salt_proxmox.qemu.family import QEMU
from tests.support.cluster import PROVISION_TOKEN_ID
from tests.support.guests import declaration, make_context, requests_since, static_targets, vm, writes
from tests.support.network import write_interfaces


def qemu(ctx, test: bool, **declared: Any):
    return lifecycle.present(ctx, QEMU, "web", test, **declared)


def test_the_fake_fails_a_start_on_a_missing_bridge_as_pve_does(fresh_cluster):
    """pve-common Network.pm read_bridge_mtu: `bridge 'vmbr9' does not exist` ends the start task."""
    ctx = make_context(static_targets(fresh_cluster))
    assert qemu(ctx, False, **vm()).result is True
    # The plan refuses vmbr9, so the VM gets it behind the plan's back.
    fresh_cluster.pve.vm(150).config["net0"] = "virtio=BC:24:11:00:00:01,bridge=vmbr9"
    with pytest.raises(Exception, match="bridge 'vmbr9' does not exist"):
        ctx.task("POST", "nodes/pve1/qemu/150/status/start", "pve1", "start VM 150")


@pytest.mark.parametrize("test", [True, False])
def test_a_vm_declared_running_on_a_missing_bridge_is_refused_and_nothing_is_written(fresh_cluster, test):
    start = len(fresh_cluster.pve.requests)
    ctx = make_context(static_targets(fresh_cluster))
    outcome = qemu(ctx, test, **vm(net0="virtio,bridge=vmbr9", status="running"))
    said = "\n".join(outcome.comment)
    assert outcome.result is False and "bridge 'vmbr9' does not exist on node pve1" in said, said
    assert writes(requests_since(fresh_cluster, start)) == [] and 150 not in fresh_cluster.pve.vms


@pytest.mark.parametrize("test", [True, False])
def test_a_vm_left_stopped_on_a_bridge_no_node_has_is_refused_and_nothing_is_written(fresh_cluster, test):
    """Every start of it would die `bridge 'vmbr9' does not exist` (pve-common Network.pm
    read_bridge_mtu), on pve1 and on pve2 alike: the declaration can never start."""
    start = len(fresh_cluster.pve.requests)
    outcome = qemu(make_context(static_targets(fresh_cluster)), test, **vm(net0="virtio,bridge=vmbr9"))
    said = "\n".join(outcome.comment)
    assert outcome.result is False and "nor on any other node of the cluster" in said, said
    assert writes(requests_since(fresh_cluster, start)) == [] and 150 not in fresh_cluster.pve.vms


def test_a_vm_left_stopped_on_a_bridge_only_another_node_has_is_created_with_a_note(fresh_cluster):
    pve = fresh_cluster.pve
    ifaces = pve.interfaces("pve2")
    ifaces["vmbr5"] = {"type": "bridge", "method": "manual", "families": ["inet"], "autostart": 1}
    pve.node_network("pve2")["running"] = write_interfaces(ifaces)
    planned = qemu(make_context(static_targets(fresh_cluster)), True, **vm(net0="virtio,bridge=vmbr5"))
    assert planned.result is None, planned.comment
    assert any("node pve2 has it" in line for line in planned.comment), planned.comment
    done = qemu(make_context(static_targets(fresh_cluster)), False, **vm(net0="virtio,bridge=vmbr5"))
    assert done.result is True, done.comment


@pytest.mark.parametrize("family", ["qemu", "lxc"])
def test_a_guest_left_stopped_on_a_staged_bridge_is_refused_and_nothing_is_written(fresh_cluster, family):
    """The start's plug reads the running interfaces (pve-common Network.pm tap_plug), which only
    the node's network apply replaces with interfaces.new."""
    pve = fresh_cluster.pve
    ifaces = pve.interfaces("pve1")
    ifaces["vmbr1"] = {"type": "bridge", "method": "manual", "families": ["inet"], "autostart": 1}
    pve.stage("pve1", ifaces)
    start = len(pve.requests)
    ctx = make_context(static_targets(fresh_cluster))
    if family == "qemu":
        outcome = qemu(ctx, False, **vm(net0="virtio,bridge=vmbr1"))
    else:
        declared = declaration(net0="name=eth0,bridge=vmbr1,ip=dhcp")
        outcome = lifecycle.present(ctx, LXC, "web", False, **declared)
    said = "\n".join(outcome.comment)
    assert outcome.result is False and "bridge 'vmbr1' is only staged on node pve1" in said, said
    assert writes(requests_since(fresh_cluster, start)) == []


def test_a_stopped_container_s_nic_moved_to_a_bridge_no_node_has_is_refused(fresh_cluster):
    """pve-container LXC.pm update_net stores the NIC of a stopped container; vzstart's veth_create
    then dies `bridge 'vmbr9' does not exist` on any node."""
    store = MemoryStore()
    declared = declaration()
    assert lifecycle.present(make_context(static_targets(fresh_cluster), store=store), LXC, "web", False,
                             **declared).result is True  # fmt: skip
    start = len(fresh_cluster.pve.requests)
    moved = {**declared, "net0": "name=eth0,bridge=vmbr9,ip=dhcp"}
    outcome = lifecycle.present(
        make_context(static_targets(fresh_cluster), store=store), LXC, "web", False, **moved
    )
    said = "\n".join(outcome.comment)
    assert outcome.result is False and "bridge 'vmbr9' does not exist on node pve1" in said, said
    assert writes(requests_since(fresh_cluster, start)) == []


def test_a_stopped_vm_whose_untouched_nic_lost_its_bridge_is_still_updated(fresh_cluster):
    """Only the NICs a write sends are judged when nothing starts: memory goes through."""
    store = MemoryStore()
    assert qemu(make_context(static_targets(fresh_cluster), store=store), False, **vm()).result is True
    pve = fresh_cluster.pve
    pve.vm(150).config["net0"] = pve.vm(150).config["net0"].replace("bridge=vmbr0", "bridge=vmbr9")
    again = qemu(make_context(static_targets(fresh_cluster), store=store), False, **vm(memory=4096,
                 net0=pve.vm(150).config["net0"]))  # fmt: skip
    assert again.result is True, again.comment


def test_a_staged_bridge_is_refused_until_this_runs_node_apply_makes_it_live(fresh_cluster):
    """interfaces.new holds vmbr1 (NetworkPve.stage): listed, not live. With the node's apply step
    earlier in the run the guest depends on it; applied, the start plugs it."""
    pve = fresh_cluster.pve
    ifaces = pve.interfaces("pve1")
    ifaces["vmbr1"] = {"type": "bridge", "method": "manual", "families": ["inet"], "autostart": 1}
    ifaces["vmbr1"]["bridge_ports"] = "eno2"
    pve.stage("pve1", ifaces)
    declared = vm(net0="virtio,bridge=vmbr1", status="running")
    refused = qemu(make_context(static_targets(fresh_cluster)), True, **declared)
    assert refused.result is False and "bridge 'vmbr1' is only staged on node pve1" in "\n".join(
        refused.comment
    )

    store = MemoryStore()
    ctx = make_context(static_targets(fresh_cluster), store=store)
    assert network_apply.applied(ctx, True, "apply", node="pve1").result is None
    planned = qemu(ctx, True, **declared)
    assert planned.result is None, planned.comment
    assert any("depends on this run's network apply of node pve1" in line for line in planned.comment)

    ctx = make_context(static_targets(fresh_cluster), store=store, cache={})
    assert network_apply.applied(ctx, False, "apply", node="pve1").result is True
    done = qemu(ctx, False, **declared)
    assert done.result is True, done.comment
    assert pve.vm(150).status == "running"


def _sdn(pve, vlanaware: bool, running: bool) -> None:
    zone = {"type": "simple", "ipam": "pve"}
    vnet = {"type": "vnet", "zone": "lab", **({"vlanaware": 1} if vlanaware else {})}
    pve.sdn["zones"]["lab"], pve.sdn["vnets"]["labnet"] = dict(zone), dict(vnet)
    if running:
        pve.sdn_running["zones"]["lab"], pve.sdn_running["vnets"]["labnet"] = dict(zone), dict(vnet)


def test_a_vnet_not_applied_is_refused_for_a_vm_declared_running(fresh_cluster):
    _sdn(fresh_cluster.pve, vlanaware=True, running=False)
    outcome = qemu(
        make_context(static_targets(fresh_cluster)), True, **vm(net0="virtio,bridge=labnet", status="running")
    )
    assert outcome.result is False and "vnet 'labnet' is in the pending SDN configuration only" in "\n".join(
        outcome.comment
    )


def test_a_vnet_not_applied_is_refused_for_a_running_vm_s_hotplug_and_said_for_a_stopped_one(fresh_cluster):
    """qemu-server vmconfig_update_net hot-plugs the changed NIC (pve-network Zones.pm tap_plug reads
    the running SDN configuration); a stopped VM stores it and is told."""
    store = MemoryStore()
    assert qemu(
        make_context(static_targets(fresh_cluster), store=store), False, **vm(status="running")
    ).result
    _sdn(fresh_cluster.pve, vlanaware=False, running=False)
    start = len(fresh_cluster.pve.requests)
    moved = vm(status="running", net0="virtio,bridge=labnet")
    outcome = qemu(make_context(static_targets(fresh_cluster), store=store), False, **moved)
    said = "\n".join(outcome.comment)
    assert outcome.result is False and "in the pending SDN configuration only" in said, said
    assert writes(requests_since(fresh_cluster, start)) == []
    stopped = qemu(
        make_context(static_targets(fresh_cluster)), True, **vm(vmid=151, net0="virtio,bridge=labnet")
    )
    assert stopped.result is None, stopped.comment
    assert any("in the pending SDN configuration only" in line for line in stopped.comment)


def test_a_tag_on_a_vnet_that_is_not_vlan_aware_is_refused_as_the_start_would_fail(fresh_cluster):
    """pve-network Zones/Plugin.pm tap_plug: `vm vlans are not allowed on vnet labnet`."""
    _sdn(fresh_cluster.pve, vlanaware=False, running=True)
    declared = vm(net0="virtio,bridge=labnet,tag=20", status="running")
    outcome = qemu(make_context(static_targets(fresh_cluster)), True, **declared)
    assert outcome.result is False and "vm vlans are not allowed on vnet labnet" in "\n".join(outcome.comment)
    # The fake's start fails the same way once the VM is made without the plan's check.
    ctx = make_context(static_targets(fresh_cluster))
    assert qemu(ctx, False, **vm()).result is True
    fresh_cluster.pve.vm(150).config["net0"] = "virtio=BC:24:11:00:00:01,bridge=labnet,tag=20"
    with pytest.raises(Exception, match="vm vlans are not allowed on vnet labnet"):
        ctx.task("POST", "nodes/pve1/qemu/150/status/start", "pve1", "start VM 150")


@pytest.mark.parametrize("test", [True, False])
def test_a_tag_on_a_vnet_that_is_not_vlan_aware_is_refused_for_a_vm_left_stopped(fresh_cluster, test):
    """Every start dies `vm vlans are not allowed on vnet labnet` (pve-network Zones/Plugin.pm
    tap_plug), so the stopped VM is not created."""
    _sdn(fresh_cluster.pve, vlanaware=False, running=True)
    start = len(fresh_cluster.pve.requests)
    outcome = qemu(
        make_context(static_targets(fresh_cluster)), test, **vm(net0="virtio,bridge=labnet,tag=20")
    )
    said = "\n".join(outcome.comment)
    assert outcome.result is False and "vm vlans are not allowed on vnet labnet" in said, said
    assert writes(requests_since(fresh_cluster, start)) == [] and 150 not in fresh_cluster.pve.vms


def test_trunks_on_a_bridge_without_vlan_filtering_are_refused_for_a_vm_left_stopped(fresh_cluster):
    """pve-common Network.pm tap_plug: `vlan aware feature need to be enabled to use trunks` at every
    start, the fake's too."""
    start = len(fresh_cluster.pve.requests)
    ctx = make_context(static_targets(fresh_cluster))
    outcome = qemu(ctx, False, **vm(net0="virtio,bridge=vmbr0,trunks=10;20"))
    said = "\n".join(outcome.comment)
    assert outcome.result is False and "vlan aware feature need to be enabled to use trunks" in said, said
    assert writes(requests_since(fresh_cluster, start)) == [] and 150 not in fresh_cluster.pve.vms
    assert qemu(ctx, False, **vm()).result is True
    fresh_cluster.pve.vm(150).config["net0"] = "virtio=BC:24:11:00:00:01,bridge=vmbr0,trunks=10;20"
    with pytest.raises(Exception, match="vlan aware feature need to be enabled to use trunks"):
        ctx.task("POST", "nodes/pve1/qemu/150/status/start", "pve1", "start VM 150")


@pytest.mark.parametrize("test", [True, False])
def test_a_provision_token_without_sdn_use_is_refused_at_plan(fresh_cluster, test):
    """qemu-server check_bridge_access → check_vnet_access: SDN.Use on the tagged path."""
    pve = fresh_cluster.pve
    pve.acl[PROVISION_TOKEN_ID] = [(path, privs - {"SDN.Use"}) for path, privs in pve.acl[PROVISION_TOKEN_ID]]
    start = len(pve.requests)
    outcome = qemu(make_context(static_targets(fresh_cluster)), test, **vm())
    said = "\n".join(outcome.comment)
    assert outcome.result is False, said
    assert "Permission check failed (/sdn/zones/localnetwork/vmbr0/20, SDN.Use)" in said
    assert writes(requests_since(fresh_cluster, start)) == []


def test_the_fake_refuses_the_write_without_sdn_use_as_pve_does(fresh_cluster):
    pve = fresh_cluster.pve
    pve.acl[PROVISION_TOKEN_ID] = [(path, privs - {"SDN.Use"}) for path, privs in pve.acl[PROVISION_TOKEN_ID]]
    ctx = make_context(static_targets(fresh_cluster))
    form = {"vmid": "150", "net0": "virtio,bridge=vmbr0,tag=20"}
    with pytest.raises(
        Exception, match=r"Permission check failed \(/sdn/zones/localnetwork/vmbr0/20, SDN.Use\)"
    ):
        ctx.task("POST", "nodes/pve1/qemu", "pve1", "create VM 150", form)


def test_a_container_declared_running_on_a_missing_bridge_is_refused(fresh_cluster):
    """One rule for both families: pve-container's start plugs the veth into the bridge."""
    ctx = make_context(static_targets(fresh_cluster))
    declared = declaration(status="running", net0="name=eth0,bridge=vmbr9,ip=dhcp")
    outcome = lifecycle.present(ctx, LXC, "web", True, **declared)
    assert outcome.result is False and "bridge 'vmbr9' does not exist on node pve1" in "\n".join(
        outcome.comment
    )


def test_a_clean_plan_of_a_guest_whose_nics_and_power_are_left_alone_reads_no_network(fresh_cluster):
    store = MemoryStore()
    assert qemu(make_context(static_targets(fresh_cluster), store=store), False, **vm()).result is True
    start = len(fresh_cluster.pve.requests)
    again = qemu(make_context(static_targets(fresh_cluster), store=store), True, **vm())
    assert again.result is True and again.changes == {}, again.comment
    paths = [path for _, path, _ in requests_since(fresh_cluster, start)]
    assert not [p for p in paths if p.endswith("/network") or "sdn" in p or "permissions" in p], paths


@pytest.mark.parametrize("test", [True, False])
def test_a_vnet_whose_zone_leaves_the_node_out_is_refused_when_plugged_and_said_when_stopped(
    fresh_cluster, test
):
    """pve-network Zones.pm tap_plug: `vnet labnet is not allowed on this node` when the zone's nodes
    (zones.cfg as written, get_plugin_config) do not name the guest's node; the fake's start too."""
    _sdn(fresh_cluster.pve, vlanaware=False, running=True)
    fresh_cluster.pve.sdn["zones"]["lab"]["nodes"] = "pve2"
    start = len(fresh_cluster.pve.requests)
    ctx = make_context(static_targets(fresh_cluster))
    running = qemu(ctx, test, **vm(net0="virtio,bridge=labnet", status="running"))
    said = "\n".join(running.comment)
    assert running.result is False and "vnet labnet is not allowed on this node" in said, said
    assert "limited to node pve2" in said and writes(requests_since(fresh_cluster, start)) == []
    stopped = qemu(make_context(static_targets(fresh_cluster)), test, **vm(net0="virtio,bridge=labnet"))
    said = "\n".join(stopped.comment)
    assert stopped.result is (None if test else True), said
    if test:
        assert "can start on pve2 only" in said
    else:
        with pytest.raises(Exception, match="vnet labnet is not allowed on this node"):
            ctx.task("POST", "nodes/pve1/qemu/150/status/start", "pve1", "start VM 150")
