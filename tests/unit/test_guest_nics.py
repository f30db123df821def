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


def test_a_running_vm_s_nic_write_to_a_missing_bridge_is_refused_a_stopped_one_is_noted():
    """qemu-server vmconfig_update_net hot-plugs the NIC into the bridge on a running VM (its tap
    plug dies `bridge 'vmbr9' does not exist`); a stopped VM stores the value and fails at start."""
    stub = (
        StubPve()
        .on("GET", "cluster/sdn/vnets/vmbr9", PveError("GET", "", 500, "sdn vnet 'vmbr9' does not exist"))
        .on("GET", "nodes/pve1/network/vmbr9", PveError("GET", "", 400, "interface does not exist"))
    )
    ctx = context(stub)
    decl = vm(net0="virtio,bridge=vmbr9")
    live = {"net0": "virtio=BC:24:11:00:00:01,bridge=vmbr0"}
    running = nics.update_plan(
        ctx, QEMU, decl, {"net0": "virtio,bridge=vmbr9"}, [], live, True, ["net0"], False
    )
    assert len(running.refusals) == 1 and "bridge 'vmbr9' does not exist" in running.refusals[0]
    stopped = nics.update_plan(
        ctx, QEMU, decl, {"net0": "virtio,bridge=vmbr9"}, [], live, False, ["net0"], False
    )
    assert stopped.refusals == []
    assert any("the VM will not start until the bridge exists" in note for note in stopped.notes)


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
