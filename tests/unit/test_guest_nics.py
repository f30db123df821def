"""PVE's NIC rules (``salt_proxmox.guest.nics``), each beside the PVE source it follows, judged on
PVE's own answers given by a stub client."""

from __future__ import annotations

import pytest

from salt_proxmox.guest import nics
from salt_proxmox.lxc.family import LXC
from salt_proxmox.lxc.props import parse_declaration as parse_lxc
from salt_proxmox.pve.errors import PveError
from salt_proxmox.qemu.family import QEMU
from salt_proxmox.qemu.props import parse_declaration as parse_qemu
from salt_proxmox.run.memo import note_node_applied, note_sdn_applied
from salt_proxmox.simple.spec import remember
from tests.support.guest_stubs import StubPve, context

NETWORK = "nodes/pve1/network"
#: pve-manager Network.pm index: the listing of a node whose interfaces.new adds vmbr1, with the
#: staged diff (pve-common INotify.pm read_file: diff -u interfaces interfaces.new) beside it.
STAGED = {
    "data": [{"iface": "vmbr0", "type": "bridge"}, {"iface": "vmbr1", "type": "bridge"}],
    "changes": "--- /etc/network/interfaces\n+++ /etc/network/interfaces.new\n@@ -1 +1,3 @@\n"
    "+auto vmbr1\n+iface vmbr1 inet manual\n+\tbridge-ports none\n",
}


def vm(**config: str):
    return parse_qemu("web", vmid=150, node="pve1", target="homelab", config=config)


def ct(**config: str):
    return parse_lxc("web", vmid=150, node="pve1", target="homelab", config={"hostname": "web", **config})


def test_a_nic_reads_as_both_families_spell_it():
    """qemu-server Network.pm $net_fmt (the model first, no key) and pve-container Config.pm
    $netconf_desc name bridge, tag and trunks alike; get_tags_from_trunk expands ranges."""
    assert nics.parse_nic("net0", "virtio=BC:24:11:00:00:01,bridge=vmbr0,tag=20,host-tunnel=1") == nics.Nic(
        "net0", "vmbr0", "20", "", True
    )
    assert nics.parse_nic("net1", "name=eth1,bridge=lab,trunks=10;20-22") == nics.Nic(
        "net1", "lab", "", "10;20-22"
    )
    assert nics.trunk_tags("10;20-22") == ["10", "20", "21", "22"]


def test_a_bridge_only_staged_is_not_there_until_this_runs_node_apply():
    """pve-common INotify.pm read_file lists interfaces.new; the changes diff adding the stanza says
    it is not in the running file, where pve-common Network.pm tap_plug looks."""
    stub = StubPve().on("GET", NETWORK, STAGED)
    ctx = context(stub)
    assert nics.bridge_state(ctx, "pve1", "vmbr1").state == "staged"
    assert nics.bridge_state(ctx, "pve1", "vmbr0").state == "live"
    note_node_applied(ctx.memo, "homelab", "pve1")
    made = nics.bridge_state(ctx, "pve1", "vmbr1")
    assert (made.state, made.by) == ("made", "this run's network apply of node pve1")
    # One listing read (shared), one vnet listing read.
    assert [call.path for call in stub.sent] == ["cluster/sdn/vnets", NETWORK]


def test_a_vnet_not_applied_is_pending_until_this_runs_sdn_apply():
    """pve-network SDN.pm pending_config: a vnet only in the pending configuration is state new;
    Zones.pm tap_plug reads get_vnet(<vnet>, 1), the running one."""
    row = {"vnet": "labnet", "type": "vnet", "state": "new", "pending": {"zone": "lab", "vlanaware": 1}}
    ctx = context(StubPve().on("GET", "cluster/sdn/vnets", [row]))
    pending = nics.bridge_state(ctx, "pve1", "labnet")
    assert (pending.state, pending.vnet, pending.zone) == ("pending", True, "lab")
    note_sdn_applied(ctx.memo, "homelab")
    made = nics.bridge_state(ctx, "pve1", "labnet")
    assert (made.state, made.vlan_aware) == ("made", True)


def test_a_name_no_listing_shows_is_proven_absent_by_pves_own_answers():
    """pve-network API2/Network/SDN/Vnets.pm read: "sdn vnet '<id>' does not exist" for anyone;
    pve-manager Network.pm network_config: 400 interface does not exist. A 403 is not known."""
    missing = PveError("GET", "", 500, "sdn vnet 'vmbr9' does not exist")
    gone = PveError("GET", "", 400, "Parameter verification failed.")
    stub = (
        StubPve()
        .on("GET", "cluster/sdn/vnets/vmbr9", missing)
        .on("GET", "nodes/pve1/network/vmbr9", gone)
        .on("GET", "cluster/sdn/vnets/vmbr8", PveError("GET", "", 403, "Permission check failed"))
    )
    ctx = context(stub)
    assert nics.bridge_state(ctx, "pve1", "vmbr9").state == "missing"
    assert nics.bridge_state(ctx, "pve1", "vmbr8").state == "unchecked"


#: A bridge no node has: pve-network Vnets.pm read and pve-manager Network.pm network_config (each
#: node's) say it does not exist.
NOWHERE = {
    ("GET", "cluster/sdn/vnets/vmbr9"): PveError("GET", "", 500, "sdn vnet 'vmbr9' does not exist"),
    ("GET", "nodes/pve1/network/vmbr9"): PveError("GET", "", 400, "interface does not exist"),
    ("GET", "nodes/pve2/network/vmbr9"): PveError("GET", "", 400, "interface does not exist"),
    ("GET", "nodes"): [{"node": "pve1"}, {"node": "pve2"}],
}


def stub_with(routes) -> StubPve:
    stub = StubPve()
    for (method, path), answer in routes.items():
        stub.on(method, path, answer)
    return stub


def test_a_nic_write_to_a_bridge_on_no_node_is_refused_running_or_stopped():
    """qemu-server vmconfig_update_net hot-plugs the NIC into the bridge on a running VM (its tap
    plug dies `bridge 'vmbr9' does not exist`, pve-common Network.pm read_bridge_mtu); a stopped VM
    stores the value and every start dies the same way: the declaration can never start."""
    ctx = context(stub_with(NOWHERE))
    decl = vm(net0="virtio,bridge=vmbr9")
    live = {"net0": "virtio=BC:24:11:00:00:01,bridge=vmbr0"}
    for running in (True, False):
        found = nics.update_plan(
            ctx, QEMU, decl, {"net0": "virtio,bridge=vmbr9"}, [], live, running, ["net0"], False
        )
        assert len(found.refusals) == 1, running
        assert "bridge 'vmbr9' does not exist on node pve1" in found.refusals[0]
    assert "nor on any other node of the cluster" in found.refusals[0], found.refusals
    # A create left stopped likewise.
    created = nics.create_plan(ctx, QEMU, decl, start=False)
    assert created.refusals and "bridge 'vmbr9' does not exist" in created.refusals[0]


def test_a_stopped_guest_s_nic_on_a_bridge_another_node_has_is_noted():
    """The guest can start on pve2 (pve-manager Network.pm network_config lists vmbr9 there), so a
    write to the stopped guest on pve1 goes through with a note."""
    stub = stub_with({**NOWHERE, ("GET", "nodes/pve2/network/vmbr9"): {"type": "bridge"}})
    found = nics.create_plan(context(stub), LXC, ct(net0="name=eth0,bridge=vmbr9"), start=False)
    assert found.refusals == []
    assert any(
        "node pve2 has it: the container can start there" in note and "cannot start on pve1" in note
        for note in found.notes
    )
    # Plugged on pve1 it is refused all the same.
    found = nics.create_plan(context(stub), LXC, ct(net0="name=eth0,bridge=vmbr9"), start=True)
    assert found.refusals and "bridge 'vmbr9' does not exist on node pve1" in found.refusals[0]


def test_a_stopped_guest_s_nic_on_a_staged_bridge_is_refused_unless_this_run_applies_the_node():
    """pve-common Network.pm tap_plug/read_bridge_mtu look at the running bridge; only the node's
    network apply (pve-manager Network.pm reload_network_config) makes interfaces.new live."""
    ctx = context(StubPve().on("GET", NETWORK, STAGED))
    decl = vm(net0="virtio,bridge=vmbr1")
    stopped = nics.create_plan(ctx, QEMU, decl, start=False)
    assert len(stopped.refusals) == 1 and "is only staged on node pve1" in stopped.refusals[0]
    assert "proxmox_network.applied node=pve1" in stopped.refusals[0]
    note_node_applied(ctx.memo, "homelab", "pve1")
    applied = nics.create_plan(ctx, QEMU, decl, start=False)
    assert applied.refusals == [] and any("depends on this run's network apply" in n for n in applied.notes)


def test_a_pending_vnet_is_refused_for_a_running_guest_and_said_for_a_stopped_one():
    """pve-network Zones.pm tap_plug reads get_vnet(<vnet>, 1), the running SDN configuration: a
    hot-plug into a vnet of the pending one only dies; a stopped guest stores it and cannot start
    until the SDN apply commits it."""
    row = {"vnet": "labnet", "type": "vnet", "state": "new", "pending": {"zone": "lab"}}
    ctx = context(StubPve().on("GET", "cluster/sdn/vnets", [row]))
    decl = vm(net0="virtio,bridge=labnet")
    live = {"net0": "virtio=BC:24:11:00:00:01,bridge=vmbr0"}
    put = {"net0": "virtio,bridge=labnet"}
    running = nics.update_plan(ctx, QEMU, decl, put, [], live, True, ["net0"], False)
    assert running.refusals and "in the pending SDN configuration only" in running.refusals[0]
    stopped = nics.update_plan(ctx, QEMU, decl, put, [], live, False, ["net0"], False)
    assert stopped.refusals == []
    assert any("in the pending SDN configuration only" in note for note in stopped.notes)


def test_a_vlan_on_a_vnet_is_refused_unless_the_config_it_will_have_is_vlan_aware():
    """pve-network Zones/Plugin.pm tap_plug reads the running vnet's vlan_filtering: a tag on a vnet
    that is not VLAN-aware dies at every plug, so a stopped guest is refused too; a vnet made
    VLAN-aware in the pending configuration is that configuration's apply away (said when stopped,
    refused when plugged, nothing when this run applies SDN)."""
    plain = {"vnet": "labnet", "type": "vnet", "zone": "lab"}
    zones = [{"zone": "lab", "type": "simple"}]  # every node: the plug's node check passes
    ctx = context(StubPve().on("GET", "cluster/sdn/vnets", [plain]).on("GET", "cluster/sdn/zones", zones))
    decl = vm(net0="virtio,bridge=labnet,tag=20")
    stopped = nics.create_plan(ctx, QEMU, decl, start=False)
    assert len(stopped.refusals) == 1 and "vm vlans are not allowed on vnet labnet" in stopped.refusals[0]
    aware = {**plain, "state": "changed", "pending": {"vlanaware": 1}}
    ctx = context(StubPve().on("GET", "cluster/sdn/vnets", [aware]).on("GET", "cluster/sdn/zones", zones))
    stopped = nics.create_plan(ctx, QEMU, decl, start=False)
    assert stopped.refusals == [] and any("vm vlans are not allowed" in note for note in stopped.notes)
    started = nics.create_plan(ctx, QEMU, decl, start=True)
    assert started.refusals and "until the SDN apply" in started.refusals[0]
    note_sdn_applied(ctx.memo, "homelab")
    assert nics.create_plan(ctx, QEMU, decl, start=True).refusals == []


def test_trunks_on_a_plain_bridge_without_vlan_filtering_are_refused_for_a_stopped_guest():
    """pve-common Network.pm tap_plug dies `vlan aware feature need to be enabled to use trunks` at
    every plug into a bridge without vlan_filtering."""
    decl = ct(net0="name=eth0,bridge=vmbr0,trunks=10;20")
    found = nics.create_plan(context(StubPve()), LXC, decl, start=False)
    assert len(found.refusals) == 1 and "vlan aware feature need to be enabled" in found.refusals[0]


def test_a_nic_the_write_leaves_alone_is_not_judged_on_a_stopped_guest():
    """Only the NICs a write sends are stored by it; net0 on a bridge gone since is PVE's at the
    next start, not this write's."""
    stub = stub_with(NOWHERE)
    decl = vm(net0="virtio,bridge=vmbr9", net1="virtio,bridge=vmbr0")
    live = {"net0": "virtio=BC:24:11:00:00:01,bridge=vmbr9"}
    found = nics.update_plan(
        context(stub), QEMU, decl, {"net1": "virtio,bridge=vmbr0"}, [], live, False, ["net1"], False
    )
    assert found.refusals == [] and not any("vmbr9" in note for note in found.notes)
    assert not [call for call in stub.sent if "vmbr9" in call.path]


def test_a_container_declared_running_is_refused_when_an_unchanged_nic_s_bridge_is_gone():
    """pve-container LXC.pm update_net / Zones.pm veth_create at start: every NIC is plugged."""
    stub = (
        StubPve()
        .on("GET", "cluster/sdn/vnets/vmbr7", PveError("GET", "", 500, "sdn vnet 'vmbr7' does not exist"))
        .on("GET", "nodes/pve1/network/vmbr7", PveError("GET", "", 400, "interface does not exist"))
    )
    decl = ct(net0="name=eth0,bridge=vmbr7")
    found = nics.update_plan(
        context(stub), LXC, decl, {}, [], {"net0": "name=eth0,bridge=vmbr7"}, False, [], whole=True
    )
    assert found.refusals and "bridge 'vmbr7' does not exist on node pve1" in found.refusals[0]
    # Nothing written and nothing started: nothing read.
    quiet = StubPve()
    assert nics.update_plan(context(quiet), LXC, decl, {}, [], {}, True, [], False) == nics.NicPlan()
    assert quiet.sent == []


@pytest.mark.parametrize(
    ("nic", "words"),
    [
        # pve-network Zones/Plugin.pm tap_plug.
        (nics.Nic("net0", "labnet", tag="20"), "vm vlans are not allowed on vnet labnet"),
        (nics.Nic("net0", "labnet", trunks="20"), "vm vlans are not allowed on vnet labnet"),
    ],
)
def test_a_vlan_on_a_vnet_that_is_not_vlan_aware_is_refused_in_pves_words(nic, words):
    assert words in nics._vlan_problem(nic, nics.Bridge("labnet", "live", True, "lab", False))
    assert nics._vlan_problem(nic, nics.Bridge("labnet", "live", True, "lab", True)) == ""


def test_trunks_on_a_plain_bridge_need_vlan_filtering_a_tag_does_not():
    """pve-common Network.pm tap_plug: trunks die without vlan_filtering; a tag gets vmbr0v<tag>."""
    plain = nics.Bridge("vmbr0", "live", vlan_aware=False)
    assert "vlan aware feature need to be enabled to use trunks" in nics._vlan_problem(
        nics.Nic("net0", "vmbr0", trunks="10"), plain
    )
    assert nics._vlan_problem(nics.Nic("net0", "vmbr0", tag="10"), plain) == ""


def test_the_access_pve_checks_is_sdn_use_on_the_bridge_or_its_tag():
    """pve-guest-common GuestHelpers.pm check_vnet_access: /sdn/zones/<zone>/<bridge>[/<tag>], each
    trunk tag, zone localnetwork for a plain bridge."""
    assert nics._access_paths(nics.Nic("net0", "vmbr0"), "localnetwork") == ["/sdn/zones/localnetwork/vmbr0"]
    assert nics._access_paths(nics.Nic("net0", "labnet", "20", "30;31"), "lab") == [
        "/sdn/zones/lab/labnet/20",
        "/sdn/zones/lab/labnet/30",
        "/sdn/zones/lab/labnet/31",
    ]


def test_a_provision_token_without_sdn_use_is_refused_for_the_old_and_the_new_bridge():
    """qemu-server update_vm_api checks the NIC's old value and the new one (check_bridge_access)."""
    stub = StubPve().on(
        "GET", "access/permissions", lambda call: {call.params["path"]: {"VM.Config.Network": 1}}
    )
    decl = vm(net0="virtio,bridge=vmbr0,tag=20")
    found = nics.access_checks(
        context(stub),
        QEMU,
        decl,
        [nics.Nic("net0", "vmbr1"), nics.Nic("net0", "vmbr0", "20")],
    )
    assert [r.split("(`")[1].split("`")[0] for r in found.refusals] == [
        "Permission check failed (/sdn/zones/localnetwork/vmbr1, SDN.Use)",
        "Permission check failed (/sdn/zones/localnetwork/vmbr0/20, SDN.Use)",
    ]


def test_host_tunnel_needs_qemu_server_9_1_18_which_the_release_alone_cannot_tell():
    """qemu-server debian/changelog 9.1.18 ("fix #7627") added $net_fmt's host-tunnel; pve-manager
    9.2.0 came before it, so /version's pve-manager version does not say; apt/versions does."""
    nic = [nics.Nic("net0", "vmbr0", host_tunnel=True)]
    decl = vm(net0="virtio,bridge=vmbr0,host-tunnel=1")
    eight = StubPve().on("GET", "version", {"release": "8.4", "version": "8.4.1"})
    assert (
        "this cluster runs PVE 8.4" in nics.host_tunnel_refusals(context(eight), QEMU, decl, nic).refusals[0]
    )
    for installed, refused in (("9.1.17", True), ("9.1.18", False), ("9.2.6", False)):
        stub = StubPve().on(
            "GET", "nodes/pve1/apt/versions", [{"Package": "qemu-server", "OldVersion": installed}]
        )
        found = nics.host_tunnel_refusals(context(stub), QEMU, decl, nic)
        assert bool(found.refusals) is refused, installed
    hidden = StubPve().on(
        "GET", "nodes/pve1/apt/versions", PveError("GET", "", 403, "Permission check failed")
    )
    found = nics.host_tunnel_refusals(context(hidden), QEMU, decl, nic)
    assert found.refusals == [] and "checked by PVE when the write is sent" in found.notes[0]
    # A container has no host-tunnel: nothing is read.
    quiet = StubPve()
    assert nics.host_tunnel_refusals(context(quiet), LXC, ct(), nic) == nics.NicPlan() and quiet.sent == []


def test_a_zone_limited_to_other_nodes_bars_its_vnet_and_this_run_s_zone_write_counts():
    """pve-network Zones.pm tap_plug: `vnet labnet is not allowed on this node`, the zone's nodes from
    zones.cfg as written (get_plugin_config), this run's zone update included."""
    vnet = {"vnet": "labnet", "type": "vnet", "zone": "lab"}
    zones = [{"zone": "lab", "type": "simple", "nodes": "pve2,pve3"}]
    ctx = context(StubPve().on("GET", "cluster/sdn/vnets", [vnet]).on("GET", "cluster/sdn/zones", zones))
    decl = vm(net0="virtio,bridge=labnet")
    started = nics.create_plan(ctx, QEMU, decl, start=True)
    assert len(started.refusals) == 1 and "vnet labnet is not allowed on this node" in started.refusals[0]
    assert "limited to node pve2, pve3" in started.refusals[0]
    stopped = nics.create_plan(ctx, QEMU, decl, start=False)
    assert stopped.refusals == [] and any("can start on pve2, pve3 only" in note for note in stopped.notes)
    remember(ctx, "sdn_zone", "lab", {"nodes": "pve1,pve2"})
    assert nics.create_plan(ctx, QEMU, decl, start=True).refusals == []
