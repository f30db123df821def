"""Node interfaces, the node network apply, SDN objects and the SDN apply, against the served fake.

fakepve 0.5.0's node network is a fixed list without the ``changes`` envelope and its SDN stores
nothing, so the cluster is ``tests.support.network.NetworkPve``, which stages interfaces in an
``interfaces.new`` text and keeps SDN pending/running configuration as pve-manager and pve-network
do. Every test counts the requests the fake saw and the credentials minted.
"""

from __future__ import annotations

import json
from urllib.parse import parse_qs

import pytest

from salt_proxmox.network import apply as network_apply
from salt_proxmox.network import interface
from salt_proxmox.ownership.stores import MemoryStore
from salt_proxmox.pve.errors import PveError
from salt_proxmox.sdn import apply as sdn_apply
from salt_proxmox.sdn import objects
from salt_proxmox.simple.lifecycle import absent, present
from tests.support.cluster import PROVISION_TOKEN_ID
from tests.support.guests import (
    TARGET,
    bao_targets,
    make_context,
    requests_since,
    static_targets,
    writes,
)
from tests.support.network import read_interfaces, write_interfaces

VMBR1 = {
    "name": "vmbr1",
    "node": "pve1",
    "type": "bridge",
    "bridge_ports": "eno2",
    "bridge_vlan_aware": True,
    "bridge_vids": "2-100",
    "autostart": True,
    "comments": "VM traffic",
}


def _mints(cache: dict) -> dict:
    return cache[f"salt_proxmox.mints/{TARGET}"]


def _stage(served, ctx, state_id: str = "vmbr1", **over) -> None:
    done = present(ctx, interface.SPEC, False, state_id, **{**VMBR1, **over})
    assert done.result is True, done.comment


def _form(body: bytes) -> dict[str, list[str]]:
    return parse_qs(body.decode(), keep_blank_values=True)


# -------------------------------------------------------------------------------------- interfaces


def test_interface_planned_staged_and_then_clean(fresh_cluster):
    """A write stages (interfaces.new) and reloads nothing; PVE's spellings (ports sorted, comments
    with a newline, vlan-aware as yes) read back equal to the declaration."""
    store = MemoryStore()
    ctx = make_context(static_targets(fresh_cluster), store=store)
    start = len(fresh_cluster.pve.requests)
    plan = present(ctx, interface.SPEC, True, "vmbr1", **VMBR1)
    assert plan.result is None and "created" in plan.changes
    assert writes(requests_since(fresh_cluster, start)) == []
    start = len(fresh_cluster.pve.requests)
    done = present(ctx, interface.SPEC, False, "vmbr1", **VMBR1)
    assert done.result is True, done.comment
    log = requests_since(fresh_cluster, start)
    assert [(m, p) for m, p, _ in writes(log)] == [("POST", "/nodes/pve1/network")]
    files = fresh_cluster.pve.networks["pve1"]
    assert "iface vmbr1" in files["staged"] and "vmbr1" not in files["running"], "staged, not applied"
    again = present(ctx, interface.SPEC, True, "vmbr1", **{**VMBR1, "bridge_ports": ["eno2", "eno2"]})
    assert (again.result, again.changes) == (True, {}), again.comment
    assert f"{TARGET}/network_interface/pve1/vmbr1" in store.rows


def test_interface_update_restates_the_address_and_clears_with_delete(fresh_cluster):
    """update_network recomputes method from the cidr of that PUT, so the live address is restated;
    a false bridge_vlan_aware goes in delete (the writer prints yes for any defined value)."""
    ctx = make_context(static_targets(fresh_cluster))
    _stage(fresh_cluster, ctx, cidr="10.1.0.1/24")
    declared = {**VMBR1, "bridge_vlan_aware": False, "bridge_vids": "", "mtu": 9000}
    declared.pop("bridge_vids")
    start = len(fresh_cluster.pve.requests)
    done = present(ctx, interface.SPEC, False, "vmbr1", **declared)
    assert done.result is True, done.comment
    assert set(done.changes) == {"bridge_vlan_aware", "mtu"}
    (put,) = writes(requests_since(fresh_cluster, start))
    form = _form(put[2])
    assert form["delete"] == ["bridge_vlan_aware"] and "bridge_vlan_aware" not in form
    assert form["cidr"] == ["10.1.0.1/24"], "the address the declaration leaves unmanaged is restated"
    clean = present(ctx, interface.SPEC, True, "vmbr1", **declared)
    assert (clean.result, clean.changes) == (True, {}), clean.comment


@pytest.mark.parametrize(("cleared", "kept"), [("cidr6", "cidr"), ("cidr", "cidr6")])
def test_a_declared_empty_address_is_deleted_and_the_next_plan_is_clean(fresh_cluster, cleared, kept):
    """``cidr6: ''`` (or ``cidr: ''``) on a dual-stack bridge: the plan shows the key cleared, the
    apply sends it in ``delete`` (pve-manager PVE/API2/Network.pm update_network removes the
    address and netmask with it, and the stanza of that family) restating the other address, and
    the read-back is clean. (Comments are left out: an inet6-only interface's comment reads back as
    ``comments6``, Interfaces.pm __read_etc_network_interfaces.)"""
    ctx = make_context(static_targets(fresh_cluster))
    bridge = {key: value for key, value in VMBR1.items() if key != "comments"}
    addresses = {"cidr": "10.1.0.1/24", "cidr6": "fd00::1/64"}
    assert present(ctx, interface.SPEC, False, "vmbr1", **bridge, **addresses).result is True
    declared = {**bridge, cleared: ""}
    start = len(fresh_cluster.pve.requests)
    plan = present(ctx, interface.SPEC, True, "vmbr1", **declared)
    assert plan.result is None, plan.comment
    assert plan.changes == {cleared: {"old": addresses[cleared], "new": ""}}, "the plan shows the clear"
    assert writes(requests_since(fresh_cluster, start)) == []
    done = present(ctx, interface.SPEC, False, "vmbr1", **declared)
    assert done.result is True and set(done.changes) == {cleared}, done.comment
    (put,) = writes(requests_since(fresh_cluster, start))
    assert put[:2] == ("PUT", "/nodes/pve1/network/vmbr1")
    form = _form(put[2])
    assert form["delete"] == [cleared] and cleared not in form and form[kept] == [addresses[kept]]
    staged = fresh_cluster.pve.networks["pve1"]["staged"]
    assert addresses[cleared] not in staged and addresses[kept] in staged
    family = "inet6" if cleared == "cidr6" else "inet"
    assert f"iface vmbr1 {family} " not in staged, "the cleared family's stanza goes with its address"
    clean = present(ctx, interface.SPEC, True, "vmbr1", **declared)
    assert (clean.result, clean.changes) == (True, {}), clean.comment


def test_an_address_cleared_while_its_gateway_stays_is_refused_until_both_are_cleared(fresh_cluster):
    """update_network deletes only what ``delete`` lists and writes no inet6 stanza without an
    address6, so ``cidr6: ''`` alone would drop gateway6 unasked (Interfaces.pm
    __interface_to_string): refused at plan and apply with nothing written; cleared together they
    go in one ``delete`` and the next plan is clean."""
    ctx = make_context(static_targets(fresh_cluster))
    bridge = {key: value for key, value in VMBR1.items() if key != "comments"}
    _stage(fresh_cluster, ctx, comments=None, cidr="10.1.0.1/24", cidr6="fd00::1/64", gateway6="fd00::fe")
    start = len(fresh_cluster.pve.requests)
    for test in (True, False):
        refused = present(ctx, interface.SPEC, test, "vmbr1", **bridge, cidr6="")
        assert refused.result is False, refused.comment
        assert "gateway6: this write leaves no cidr6" in refused.comment[0], refused.comment
        assert "declare gateway6: '' with it" in refused.comment[0]
    assert writes(requests_since(fresh_cluster, start)) == []
    both = {**bridge, "cidr6": "", "gateway6": ""}
    done = present(ctx, interface.SPEC, False, "vmbr1", **both)
    assert done.result is True and set(done.changes) == {"cidr6", "gateway6"}, done.comment
    (put,) = writes(requests_since(fresh_cluster, start))
    assert _form(put[2])["delete"] == ["cidr6,gateway6"]
    clean = present(ctx, interface.SPEC, True, "vmbr1", **both)
    assert (clean.result, clean.changes) == (True, {}), clean.comment


def test_existing_interface_refused_unless_adopted_and_adopted_without_writes(fresh_cluster):
    ctx = make_context(static_targets(fresh_cluster))
    vmbr0 = {"name": "vmbr0", "node": "pve1", "type": "bridge", "bridge_ports": "eno1"}
    vmbr0["cidr"] = "10.0.0.11/24"
    start = len(fresh_cluster.pve.requests)
    refused = present(ctx, interface.SPEC, False, "vmbr0", **vmbr0)
    assert refused.result is False and "adopt: true" in refused.comment[0]
    adopted = present(ctx, interface.SPEC, False, "vmbr0", adopt=True, **vmbr0)
    assert adopted.result is True and adopted.changes == {"ownership": {"old": None, "new": "owned"}}
    assert writes(requests_since(fresh_cluster, start)) == []


def test_physical_nic_is_never_destroyed(fresh_cluster):
    ctx = make_context(static_targets(fresh_cluster))
    eno2 = {"name": "eno2", "node": "pve1", "type": "eth", "mtu": 9000}
    assert present(ctx, interface.SPEC, False, "eno2", adopt=True, **eno2).result is True
    start = len(fresh_cluster.pve.requests)
    refused = absent(ctx, interface.SPEC, False, "eno2", "destroy", name="eno2", node="pve1")
    assert refused.result is False and "physical NIC" in refused.comment[0]
    assert writes(requests_since(fresh_cluster, start)) == []


#: A bridge configured by DHCP and SLAAC, as an operator writes it in /etc/network/interfaces.
DHCP_STANZAS = (
    "auto vmbr1\niface vmbr1 inet dhcp\n\tbridge-ports eno2\n\tbridge-stp off\n\tbridge-fd 0\n#uplink\n\n"
    "iface vmbr1 inet6 auto\n\n"
)
DHCP_VMBR1 = {"name": "vmbr1", "node": "pve1", "type": "bridge", "bridge_ports": "eno2", "autostart": True}


def _dhcp_bridge(served) -> None:
    """pve1 runs vmbr1 by DHCP and SLAAC (written as PVE's writer would keep it)."""
    files = served.pve.node_network("pve1")
    config = read_interfaces(files["running"] + "\n" + DHCP_STANZAS, served.pve.physical)
    files["running"] = write_interfaces(config)
    assert "iface vmbr1 inet dhcp" in files["running"] and "iface vmbr1 inet6 auto" in files["running"]


def test_an_update_through_pve_stages_a_dhcp_bridge_as_inet_manual(fresh_cluster):
    """What the refusal below prevents, as PVE does it (pve-manager update_network): a comment-only
    PUT stages ``inet manual`` and drops the ``inet6 auto`` stanza, and the reload makes it live."""
    _dhcp_bridge(fresh_cluster)
    ctx = make_context(static_targets(fresh_cluster))
    form = {"type": "bridge", "bridge_ports": "eno2", "comments": "uplink, 10G"}
    ctx.client.request("PUT", "nodes/pve1/network/vmbr1", ctx.broker.provision(), form=form)
    staged = fresh_cluster.pve.networks["pve1"]["staged"]
    assert "iface vmbr1 inet manual" in staged and "inet dhcp" not in staged and "inet6" not in staged


def test_a_dhcp_bridge_is_never_rewritten_and_goes_plan_apply_plan_clean(fresh_cluster):
    """An update would stage ``inet manual`` (update_network takes no method): refused at plan and
    apply with nothing written; declared as it is, it is adopted, the node apply has nothing to
    reload, and the next plan is clean — the bridge keeps DHCP and SLAAC."""
    _dhcp_bridge(fresh_cluster)
    ctx = make_context(static_targets(fresh_cluster))
    changed = {**DHCP_VMBR1, "comments": "uplink, 10G", "adopt": True}
    start = len(fresh_cluster.pve.requests)
    for test in (True, False):
        refused = present(ctx, interface.SPEC, test, "vmbr1", **changed)
        assert refused.result is False, refused.comment
        assert "`inet dhcp`, `inet6 auto`" in refused.comment[0] and "update_network" in refused.comment[0]
    assert writes(requests_since(fresh_cluster, start)) == []
    assert fresh_cluster.pve.networks["pve1"]["staged"] is None
    as_it_is = {**DHCP_VMBR1, "comments": "uplink", "adopt": True}
    plan = present(ctx, interface.SPEC, True, "vmbr1", **as_it_is)
    assert plan.result is None and set(plan.changes) == {"ownership"}, plan.comment
    assert present(ctx, interface.SPEC, False, "vmbr1", **as_it_is).result is True
    applied = network_apply.applied(ctx, False, "pve1-network", node="pve1")
    assert (applied.result, applied.changes) == (True, {}), applied.comment
    clean = present(ctx, interface.SPEC, True, "vmbr1", **as_it_is)
    assert (clean.result, clean.changes) == (True, {}), clean.comment
    running = fresh_cluster.pve.networks["pve1"]["running"]
    assert "iface vmbr1 inet dhcp" in running and "iface vmbr1 inet6 auto" in running
    assert writes(requests_since(fresh_cluster, start)) == []


# --------------------------------------------- node rules: refused at plan with the words PVE answers


def _pve_says(ctx, method: str, path: str, form: dict) -> str:
    """What the fake (as PVE) answers a write the plan refuses, sent anyway by hand."""
    with pytest.raises(PveError) as caught:
        ctx.client.request(method, path, ctx.broker.provision(), form=form)
    return str(caught.value)


GATEWAY_BRIDGE = {"type": "bridge", "bridge_ports": "eno2", "cidr": "10.1.0.1/24", "gateway": "10.1.0.254"}


@pytest.mark.parametrize(
    ("declared", "words", "raw"),
    [
        (  # pve-manager PVE/API2/Network.pm $check_duplicate_gateway
            {"name": "vmbr1", **GATEWAY_BRIDGE},
            "Default gateway already exists on interface 'vmbr0'.",
            ("POST", "nodes/pve1/network", {"iface": "vmbr1", **GATEWAY_BRIDGE}),
        ),
        (  # $check_duplicate_ports
            {"name": "vmbr1", "type": "bridge", "bridge_ports": "eno1"},
            "eno1 is already used on interface 'vmbr0'.",
            ("POST", "nodes/pve1/network", {"iface": "vmbr1", "type": "bridge", "bridge_ports": "eno1"}),
        ),
        (  # pve-common Interfaces.pm __write_etc_network_interfaces: a VLAN's raw device
            {"name": "eno9.20", "type": "vlan"},
            "vlan 'eno9.20' - unable to find parent 'eno9'",
            ("POST", "nodes/pve1/network", {"iface": "eno9.20", "type": "vlan"}),
        ),
        (  # ... and an address on a bridge port
            {"name": "eno1", "type": "eth", "cidr": "10.0.0.99/24", "adopt": True},
            "iface eno1 - ip address can't be set on interface if bridged in vmbr0",
            ("PUT", "nodes/pve1/network/eno1", {"type": "eth", "cidr": "10.0.0.99/24"}),
        ),
    ],
)  # fmt: skip
def test_node_writes_pve_refuses_are_refused_at_plan_with_its_words(fresh_cluster, declared, words, raw):
    ctx = make_context(static_targets(fresh_cluster))
    start = len(fresh_cluster.pve.requests)
    for test in (True, False):
        refused = present(ctx, interface.SPEC, test, declared["name"], node="pve1", **declared)
        assert refused.result is False and words in refused.comment[0], refused.comment
    assert writes(requests_since(fresh_cluster, start)) == []
    assert words in _pve_says(ctx, *raw), "the fake answers the write with the same words"
    assert fresh_cluster.pve.networks["pve1"]["staged"] is None


def test_a_bond_slave_keeps_the_autostart_pve_forces_on_it(fresh_cluster):
    """The writer turns autostart on for every bond slave: the bond's plan says it does, and a
    declared false on the slave, which would drift for ever, is refused."""
    ctx = make_context(static_targets(fresh_cluster))
    bond = {"name": "bond1", "node": "pve1", "type": "bond", "slaves": "eno2", "bond_mode": "active-backup"}
    plan = present(ctx, interface.SPEC, True, "bond1", **bond)
    assert plan.result is None and "turns autostart on for its slave(s) eno2" in " ".join(plan.comment)
    assert present(ctx, interface.SPEC, False, "bond1", **bond).result is True
    eno2 = {"name": "eno2", "node": "pve1", "type": "eth", "autostart": False, "adopt": True}
    start = len(fresh_cluster.pve.requests)
    refused = present(ctx, interface.SPEC, True, "eno2", **eno2)
    assert refused.result is False and "slave of bond1" in refused.comment[0], refused.comment
    assert writes(requests_since(fresh_cluster, start)) == []
    # Declared as PVE writes it, the pair goes plan → apply → plan clean.
    eno2["autostart"] = True
    for test in (False, True):
        for state_id, declared in (("bond1", bond), ("eno2", eno2)):
            done = present(ctx, interface.SPEC, test, state_id, **declared)
            assert done.result is True and (not test or done.changes == {}), done.comment


def test_values_the_writer_forces_never_drift(fresh_cluster):
    """A VLAN-aware bridge declared without VLANs gets ``bridge-vids 2-4094``, a bond without a
    mode ``bond-mode balance-rr`` (Interfaces.pm __interface_to_string): declared empty, they are
    compared as written, so the next plan is clean."""
    ctx = make_context(static_targets(fresh_cluster))
    bridge = {**VMBR1, "bridge_vids": ""}
    bond = {"name": "bond1", "node": "pve1", "type": "bond", "slaves": "", "bond_mode": ""}
    for state_id, declared in (("vmbr1", bridge), ("bond1", bond)):
        assert present(ctx, interface.SPEC, False, state_id, **declared).result is True
        clean = present(ctx, interface.SPEC, True, state_id, **declared)
        assert (clean.result, clean.changes) == (True, {}), clean.comment
    staged = fresh_cluster.pve.networks["pve1"]["staged"]
    assert "bridge-vids 2-4094" in staged and "bond-mode balance-rr" in staged


# ------------------------------------------------------------------------------------ node apply


def test_settled_node_adopted_with_zero_writes_and_zero_mints(fresh_cluster, bao_creds):
    targets, openbao = bao_targets(fresh_cluster, bao_creds)
    cache: dict = {}
    ctx = make_context(targets, openbao, cache=cache)
    start = len(fresh_cluster.pve.requests)
    plan = network_apply.applied(ctx, True, "pve1-network", node="pve1")
    done = network_apply.applied(ctx, False, "pve1-network", node="pve1")
    assert (plan.result, plan.changes) == (True, {}) and (done.result, done.changes) == (True, {})
    log = requests_since(fresh_cluster, start)
    # Each step reads the staged diff and the node's last reload task (pve-manager Tasks.pm node_tasks).
    read = ["/nodes/pve1/network", "/nodes/pve1/tasks"]
    assert writes(log) == [] and [p for _, p, _ in log] == read + read
    assert _mints(cache)["provision"] == 0, "no provision credential minted"


def test_staged_change_planned_applied_with_one_put_and_one_credential_then_clean(fresh_cluster, bao_creds):
    targets, openbao = bao_targets(fresh_cluster, bao_creds)
    cache: dict = {}
    ctx = make_context(targets, openbao, cache=cache)
    _stage(fresh_cluster, ctx)
    plan = network_apply.applied(ctx, True, "pve1-network", node="pve1")
    assert plan.result is None
    assert (
        "+iface vmbr1 inet manual" in plan.changes["reload"]["diff"]
        and "+auto vmbr1" in plan.changes["reload"]["diff"]
    )
    provisions = _mints(cache)["provision"]
    start = len(fresh_cluster.pve.requests)
    done = network_apply.applied(ctx, False, "pve1-network", node="pve1")
    assert done.result is True, done.comment
    log = requests_since(fresh_cluster, start)
    assert [(m, p) for m, p, _ in writes(log)] == [("PUT", "/nodes/pve1/network")]
    assert _mints(cache)["provision"] == provisions + 1, "one credential for the reload and its polls"
    polls = [p for m, p, _ in log if "/tasks/" in p]
    (upid,) = {p.split("/tasks/")[1].removesuffix("/status") for p in polls}
    assert fresh_cluster.pve.tasks[upid]["user"] == PROVISION_TOKEN_ID and polls
    assert "iface vmbr1" in fresh_cluster.pve.networks["pve1"]["running"]
    shown = json.dumps(done.changes) + "\n".join(done.comment)
    assert "vmbr1" not in shown and "+auto" not in shown, "the diff stays out of the apply's return"
    again = network_apply.applied(ctx, True, "pve1-network", node="pve1")
    assert (again.result, again.changes) == (True, {})


@pytest.mark.parametrize("fault", ["quorum", "offline"])
def test_degraded_cluster_refused_before_any_write(fresh_cluster, fault):
    cache: dict = {}
    ctx = make_context(static_targets(fresh_cluster), cache=cache)
    _stage(fresh_cluster, ctx)
    if fault == "quorum":
        fresh_cluster.pve.lose_quorum()
    else:
        fresh_cluster.pve.set_node_offline("pve2")
    provisions = _mints(cache)["provision"]
    start = len(fresh_cluster.pve.requests)
    refused = network_apply.applied(ctx, False, "pve1-network", node="pve1")
    assert refused.result is False
    assert ("not quorate" if fault == "quorum" else "pve2 is offline") in refused.comment[0]
    assert writes(requests_since(fresh_cluster, start)) == [] and _mints(cache)["provision"] == provisions
    assert fresh_cluster.pve.networks["pve1"]["staged"] is not None


def test_failed_reload_stops_the_next_node(fresh_cluster):
    cache: dict = {}
    ctx = make_context(static_targets(fresh_cluster), cache=cache)
    _stage(fresh_cluster, ctx)
    _stage(fresh_cluster, ctx, "pve2-vmbr1", node="pve2")
    fresh_cluster.pve.reload_failures["pve1"] = "command 'ifreload -a' failed: exit code 1"
    failed = network_apply.applied(ctx, False, "pve1-network", node="pve1")
    assert failed.result is False and "ifreload -a" in failed.comment[0]
    start = len(fresh_cluster.pve.requests)
    stopped = network_apply.applied(ctx, False, "pve2-network", node="pve2")
    assert stopped.result is False and "not applied" in stopped.comment[0]
    assert "network of node pve1" in stopped.comment[0]
    assert requests_since(fresh_cluster, start) == [], "nothing read or written for the stopped node"
    assert fresh_cluster.pve.networks["pve2"]["staged"] is not None


def test_unreadable_poll_is_reported_unreachable_with_the_upid(fresh_cluster):
    ctx = make_context(static_targets(fresh_cluster))
    _stage(fresh_cluster, ctx)
    fresh_cluster.pve.unreadable_polls.add("pve1")
    done = network_apply.applied(ctx, False, "pve1-network", node="pve1")
    assert done.result is False and "unreachable" in done.comment[0]
    (upid,) = [u for u, task in fresh_cluster.pve.tasks.items() if task["type"] == "srvreload"]
    assert upid in done.comment[0]


def test_node_offline_after_reload_fails_the_apply(fresh_cluster):
    """Another node dropping out is seen by the health check after the reload; the reloaded node
    dropping out makes its own task unreadable (PVE answers 595 for an offline node)."""
    store = MemoryStore()
    ctx = make_context(static_targets(fresh_cluster), store=store)
    _stage(fresh_cluster, ctx)
    fresh_cluster.pve.offline_after_reload["pve1"] = "pve2"
    done = network_apply.applied(ctx, False, "pve1-network", node="pve1")
    assert done.result is False and "ended OK, but now node pve2 is offline" in done.comment[0]
    fresh_cluster.pve.set_node_offline("pve2", offline=False)
    ctx = make_context(static_targets(fresh_cluster), store=store)
    _stage(fresh_cluster, ctx, mtu=9000)
    fresh_cluster.pve.offline_after_reload["pve1"] = "pve1"
    cut = network_apply.applied(ctx, False, "pve1-network", node="pve1")
    assert cut.result is False and "unreachable" in cut.comment[0]


def test_secret_looking_values_are_masked_in_the_plan_and_kept_nowhere(fresh_cluster):
    store = MemoryStore()
    ctx = make_context(static_targets(fresh_cluster), store=store)
    secret = "wpa-psk-do-not-store"
    files = fresh_cluster.pve.networks.setdefault("pve1", fresh_cluster.pve.node_network("pve1"))
    files["staged"] = files["running"] + f"iface wlan0 inet manual\n\twpa-psk {secret}\n"
    plan = network_apply.applied(ctx, True, "pve1-network", node="pve1")
    assert "wpa-psk ***" in plan.changes["reload"]["diff"] and secret not in json.dumps(plan.changes)
    done = network_apply.applied(ctx, False, "pve1-network", node="pve1")
    assert done.result is True and secret not in json.dumps(done.changes) + "\n".join(done.comment)
    assert secret not in json.dumps(store.rows)


# ------------------------------------------------------------------------------------------- SDN

ZONE = {"name": "lab", "type": "vlan", "bridge": "vmbr0", "mtu": 1496}
VNET = {"name": "labnet", "zone": "lab", "tag": 20, "alias": "Lab guests"}
SUBNET = {
    "name": "10.20.0.0/24",
    "vnet": "labnet",
    "gateway": "10.20.0.1",
    "snat": True,
    "dhcp-range": ["start-address=10.20.0.100,end-address=10.20.0.199"],
}


def test_sdn_objects_planned_written_pending_then_applied_under_the_lock(fresh_cluster):
    cache: dict = {}
    ctx = make_context(static_targets(fresh_cluster), cache=cache)
    for spec, declared in ((objects.ZONE, ZONE), (objects.VNET, VNET), (objects.SUBNET, SUBNET)):
        plan = present(ctx, spec, True, declared["name"], **declared)
        assert plan.result is None, plan.comment
        assert present(ctx, spec, False, declared["name"], **declared).result is True
        clean = present(ctx, spec, True, declared["name"], **declared)
        assert (clean.result, clean.changes) == (True, {}), clean.comment
    assert fresh_cluster.pve.sdn_running["zones"] == {}, "written, not yet running"
    plan = sdn_apply.applied(ctx, True, "sdn")
    assert plan.result is None and plan.changes["reload"]["diff"].startswith("zone lab: new")
    start = len(fresh_cluster.pve.requests)
    done = sdn_apply.applied(ctx, False, "sdn")
    assert done.result is True, done.comment
    assert [(m, p) for m, p, _ in writes(requests_since(fresh_cluster, start))] == [
        ("POST", "/cluster/sdn/lock"),
        ("PUT", "/cluster/sdn"),
    ]
    (put,) = [body for m, p, body in requests_since(fresh_cluster, start) if m == "PUT"]
    assert "lock-token" in _form(put), "the commit carries the lock token"
    assert fresh_cluster.pve.sdn_lock is None, "the commit released the lock"
    assert set(fresh_cluster.pve.sdn_running["subnets"]) == {"lab-10.20.0.0-24"}
    assert sdn_apply.applied(ctx, True, "sdn").changes == {}


def test_sdn_update_carries_the_digest_and_a_held_lock_refuses_writes(fresh_cluster):
    ctx = make_context(static_targets(fresh_cluster))
    assert present(ctx, objects.ZONE, False, "lab", **ZONE).result is True
    start = len(fresh_cluster.pve.requests)
    assert present(ctx, objects.ZONE, False, "lab", **{**ZONE, "mtu": 1400}).result is True
    (put,) = writes(requests_since(fresh_cluster, start))
    assert _form(put[2])["mtu"] == ["1400"] and _form(put[2])["digest"]
    # Another client's transaction holds the global lock (pve-network lock_sdn_config): PVE refuses
    # every write without its token, and the state says why and what to do.
    fresh_cluster.pve.sdn_lock = "held-by-someone-else"
    refused = present(ctx, objects.ZONE, False, "lab", **{**ZONE, "mtu": 1300})
    assert refused.result is False and "invalid lock token" in refused.comment[0]
    assert "Another client holds PVE's global SDN lock" in refused.comment[0]
    assert "held-by-someone-else" not in " ".join(refused.comment)
    assert fresh_cluster.pve.sdn["zones"]["lab"]["mtu"] in (1400, "1400")
    # A create refused so leaves no row claiming it: grains and PVE agree.
    rows_before = dict(ctx.ownership.store.rows)
    made = present(ctx, objects.ZONE, False, "lab2", **{**ZONE, "name": "lab2"})
    assert made.result is False and "Another client holds PVE's global SDN lock" in made.comment[0]
    assert "lab2" not in fresh_cluster.pve.sdn["zones"]
    assert ctx.ownership.store.rows == rows_before
    fresh_cluster.pve.sdn_lock = None


def test_sdn_apply_refused_on_a_degraded_cluster_and_failed_task_reported(fresh_cluster):
    store = MemoryStore()
    ctx = make_context(static_targets(fresh_cluster), store=store)
    assert present(ctx, objects.ZONE, False, "lab", **ZONE).result is True
    fresh_cluster.pve.set_node_offline("pve2")
    start = len(fresh_cluster.pve.requests)
    refused = sdn_apply.applied(ctx, False, "sdn")
    assert refused.result is False and "pve2 is offline" in refused.comment[0]
    assert writes(requests_since(fresh_cluster, start)) == []
    fresh_cluster.pve.set_node_offline("pve2", offline=False)
    ctx = make_context(static_targets(fresh_cluster), store=store)
    assert present(ctx, objects.ZONE, False, "lab", **ZONE).result is True, "the run declares what it commits"
    fresh_cluster.pve.sdn_reload_failure = "pvesh set /nodes/pve2/network failed"
    failed = sdn_apply.applied(ctx, False, "sdn")
    assert failed.result is False and "pvesh set" in failed.comment[0]


def _reloads(served, node: str) -> list[dict]:
    return [
        task for task in served.pve.tasks.values() if task["type"] == "srvreload" and task["node"] == node
    ]


def test_an_sdn_commit_a_node_did_not_take_fails_naming_the_node_its_task_and_the_remedy(fresh_cluster):
    """pve-network API2/Network/SDN.pm reload: reloadnetworkall starts each node's reload with
    ``pvesh set /nodes/<node>/network`` and ends OK whatever that reload does; the apply awaits each
    node's ``srvreload`` task the commit started before it says the configuration is applied."""
    ctx = make_context(static_targets(fresh_cluster))
    assert present(ctx, objects.ZONE, False, "lab", **ZONE).result is True
    fresh_cluster.pve.reload_failures["pve2"] = "command 'ifreload -a' failed: exit code 1"
    failed = sdn_apply.applied(ctx, False, "sdn")
    (commit,) = [t for t in fresh_cluster.pve.tasks.values() if t["type"] == "reloadnetworkall"]
    assert commit["exitstatus"] == "OK", "PVE's commit task ends OK (the fake models it so)"
    (theirs,) = _reloads(fresh_cluster, "pve2")
    assert theirs["user"] == "root@pam" and theirs["exitstatus"] != "OK"
    assert failed.result is False, failed.comment
    text = " ".join(failed.comment)
    assert "not live on every node" in text and "node pve2 did not take it" in text
    assert theirs["upid"] in text and "ifreload -a" in text and "`pvesh set /nodes/pve2/network`" in text
    assert "node pve1" not in text, "pve1 took it"
    assert "Later network and SDN applies" in text
    assert fresh_cluster.pve.sdn_running["zones"], "committed: only the node's reload failed"


def test_an_sdn_commit_whose_node_reload_never_started_fails_naming_the_node(fresh_cluster):
    """A node whose ``pvesh set`` fails is a plain ``warn``: reloadnetworkall ends ``WARNINGS: 1``."""
    ctx = make_context(static_targets(fresh_cluster))
    assert present(ctx, objects.ZONE, False, "lab", **ZONE).result is True
    fresh_cluster.pve.sdn_unstarted_reloads.add("pve2")
    failed = sdn_apply.applied(ctx, False, "sdn")
    (commit,) = [t for t in fresh_cluster.pve.tasks.values() if t["type"] == "reloadnetworkall"]
    assert commit["exitstatus"] == "WARNINGS: 1" and _reloads(fresh_cluster, "pve2") == []
    assert failed.result is False, failed.comment
    assert "node pve2 started no reload of its network" in failed.comment[0]
    assert commit["upid"] in failed.comment[0] and "`pvesh set /nodes/pve2/network`" in failed.comment[0]


def test_an_sdn_commit_every_node_took_is_applied_after_each_reload_is_awaited(fresh_cluster):
    ctx = make_context(static_targets(fresh_cluster))
    assert present(ctx, objects.ZONE, False, "lab", **ZONE).result is True
    start = len(fresh_cluster.pve.requests)
    done = sdn_apply.applied(ctx, False, "sdn")
    assert done.result is True, done.comment
    polled = {p for m, p, _ in requests_since(fresh_cluster, start) if p.endswith("/status")}
    for node in ("pve1", "pve2"):
        (theirs,) = _reloads(fresh_cluster, node)
        assert f"/nodes/{node}/tasks/{theirs['upid']}/status" in polled, f"{node}'s reload awaited"


def test_subnet_of_a_missing_vnet_plans_a_create(fresh_cluster):
    """A missing vnet proves its subnet absent; the create is planned when the same run creates the
    vnet first, and refused at plan when nothing does (pve-network SubnetPlugin on_update_hook:
    "<vnet> don't exist")."""
    ctx = make_context(static_targets(fresh_cluster))
    alone = present(ctx, objects.SUBNET, True, "s", **SUBNET)
    assert alone.result is False and "labnet don't exist" in alone.comment[0], alone.comment
    for spec, declared in ((objects.ZONE, ZONE), (objects.VNET, VNET)):
        assert present(ctx, spec, True, declared["name"], **declared).result is None
    plan = present(ctx, objects.SUBNET, True, "s", **SUBNET)
    assert plan.result is None and "created" in plan.changes


def test_a_plan_shows_the_reload_of_what_the_same_run_would_stage(fresh_cluster):
    """The node's apply plans a reload when an interface of that node plans a write in the same run,
    so the plan shows every change the apply makes; another node's apply stays clean."""
    cache: dict = {}
    ctx = make_context(static_targets(fresh_cluster), cache=cache)
    assert network_apply.present(ctx, interface.SPEC, True, "vmbr1", **VMBR1).result is None
    assert network_apply.present(ctx, objects.ZONE, True, "lab", **ZONE).result is None
    plan = network_apply.applied(ctx, True, "pve1-network", node="pve1")
    assert plan.result is None and plan.changes == {"reload": {"planned": ["vmbr1"]}}
    assert network_apply.applied(ctx, True, "pve2-network", node="pve2").changes == {}
    assert sdn_apply.applied(ctx, True, "sdn").changes == {"reload": {"planned": ["lab"]}}


# ------------------------------------------------- an apply makes live only what its plan showed


def _run_sdn_objects(ctx) -> None:
    for spec, declared in ((objects.ZONE, ZONE), (objects.VNET, VNET), (objects.SUBNET, SUBNET)):
        done = network_apply.present(ctx, spec, False, declared["name"], **declared)
        assert done.result is True, done.comment


def _commit(ctx) -> None:
    done = sdn_apply.applied(ctx, False, "sdn")
    assert done.result is True, done.comment


def _adopt_lab(ctx, test: bool) -> None:
    """The run declares the zone the test staged in the fake (adopted: no run of this minion created
    it), so the commit is the run's (``sdn.apply.foreign_changes``)."""
    lab = {"name": "lab", "type": "simple", "adopt": True}
    assert network_apply.present(ctx, objects.ZONE, test, "lab", **lab).result is not False


def test_sdn_commit_refused_while_a_node_has_staged_changes_no_node_apply_covers(fresh_cluster):
    """PUT /cluster/sdn reloads every node (pve-network API2/Network/SDN.pm reload → reloadnetworkall →
    pvesh set /nodes/<node>/network, whose worker renames interfaces.new over interfaces): a bridge
    somebody staged on pve2 would go live under a plan that named only SDN objects."""
    fresh_cluster.pve.sdn["zones"]["lab"] = {"type": "simple"}
    files = fresh_cluster.pve.node_network("pve2")
    files["staged"] = files["running"] + "auto vmbr9\niface vmbr9 inet manual\n\tbridge-ports none\n"
    ctx = make_context(static_targets(fresh_cluster))
    _adopt_lab(ctx, True)
    plan = sdn_apply.applied(ctx, True, "sdn")
    assert plan.result is False, plan.comment
    assert "node pve2 has staged network changes" in plan.comment[0]
    assert "`pvesh delete /nodes/pve2/network`" in plan.comment[0]
    start = len(fresh_cluster.pve.requests)
    _adopt_lab(ctx, False)
    refused = sdn_apply.applied(ctx, False, "sdn")
    assert refused.result is False and "node pve2" in refused.comment[0]
    assert writes(requests_since(fresh_cluster, start)) == []
    assert (
        "vmbr9" not in fresh_cluster.pve.networks["pve2"]["running"]
        and fresh_cluster.pve.sdn_running["zones"] == {}
    )
    # A node apply of the same run covers pve2: its plan shows the diff, then the SDN plan may commit.
    ctx = make_context(static_targets(fresh_cluster))
    assert network_apply.applied(ctx, True, "pve2-network", node="pve2").result is None
    _adopt_lab(ctx, True)
    assert sdn_apply.applied(ctx, True, "sdn").result is None
    ctx = make_context(static_targets(fresh_cluster))
    assert network_apply.applied(ctx, False, "pve2-network", node="pve2").result is True
    _adopt_lab(ctx, False)
    _commit(ctx)
    assert "vmbr9" in fresh_cluster.pve.networks["pve2"]["running"]


def test_sdn_plan_refuses_an_interface_write_of_the_run_on_a_node_without_its_apply(fresh_cluster):
    """An interface this run would stage on pve1, with no node apply for pve1, would be made live by the
    SDN commit's reload: the SDN plan refuses it as it would refuse it staged."""
    ctx = make_context(static_targets(fresh_cluster))
    assert network_apply.present(ctx, interface.SPEC, True, "vmbr1", **VMBR1).result is None
    assert network_apply.present(ctx, objects.ZONE, True, "lab", **ZONE).result is None
    plan = sdn_apply.applied(ctx, True, "sdn")
    assert plan.result is False and "node pve1 would get vmbr1 staged" in plan.comment[0]


def test_a_staged_deletion_this_run_did_not_make_is_refused(fresh_cluster):
    """Somebody staged the deletion of vmbr0 (DELETE /nodes/pve1/network/vmbr0): the node apply would make
    it live while the plan said nothing is destroyed. Refused with the node's revert
    (pve-manager revert_network_changes, DELETE /nodes/{node}/network), plan and apply alike."""
    ctx = make_context(static_targets(fresh_cluster))
    ifaces = fresh_cluster.pve.interfaces("pve1")
    del ifaces["vmbr0"]
    fresh_cluster.pve.stage("pve1", ifaces)
    plan = network_apply.applied(ctx, True, "pve1-network", node="pve1")
    assert plan.result is False and "delete interface(s) vmbr0" in plan.comment[0], plan.comment
    assert "`pvesh delete /nodes/pve1/network`" in plan.comment[0]
    start = len(fresh_cluster.pve.requests)
    refused = network_apply.applied(ctx, False, "pve1-network", node="pve1")
    assert refused.result is False and writes(requests_since(fresh_cluster, start)) == []
    assert "iface vmbr0" in fresh_cluster.pve.networks["pve1"]["running"]


def test_removing_an_interface_plans_its_reload_and_applies_only_that_deletion(fresh_cluster):
    """A removal stages a deletion the node's reload makes live: the node apply's plan says it would
    reload after it (not 'nothing to apply'), and the apply makes live the deletion this run made."""
    store = MemoryStore()
    ctx = make_context(static_targets(fresh_cluster), store=store)
    _stage(fresh_cluster, ctx)
    assert network_apply.applied(ctx, False, "pve1-network", node="pve1").result is True
    ctx = make_context(static_targets(fresh_cluster), store=store)
    gone = network_apply.absent(ctx, interface.SPEC, True, "vmbr1", "destroy", name="vmbr1", node="pve1")
    assert gone.result is None and "deleted" in gone.changes
    plan = network_apply.applied(ctx, True, "pve1-network", node="pve1")
    assert plan.result is None and plan.changes == {"reload": {"planned": ["vmbr1"]}}, plan.comment
    ctx = make_context(static_targets(fresh_cluster), store=store)
    done = network_apply.absent(ctx, interface.SPEC, False, "vmbr1", "destroy", name="vmbr1", node="pve1")
    assert done.result is True, done.comment
    applied = network_apply.applied(ctx, False, "pve1-network", node="pve1")
    assert applied.result is True, applied.comment
    assert "vmbr1" not in fresh_cluster.pve.networks["pve1"]["running"]


def test_sdn_objects_destroyed_without_a_digest_and_the_deletion_is_committed(fresh_cluster):
    """pve-network's zone, vnet and subnet DELETE schemas have no digest (additionalProperties 0): PVE
    answers 400 to one. The deletes send none; the SDN plan shows the commit they cause; a pending
    deletion this run made is committed."""
    store = MemoryStore()
    ctx = make_context(static_targets(fresh_cluster), store=store)
    _run_sdn_objects(ctx)
    _commit(ctx)
    # The fake refuses a digest on an SDN DELETE as PVE's schema validation does.
    with pytest.raises(Exception, match="digest: property is not defined in schema"):
        ctx.client.request("DELETE", "cluster/sdn/zones/lab", ctx.broker.provision(), params={"digest": "0"})
    ctx = make_context(static_targets(fresh_cluster), store=store)
    removals = (
        (objects.SUBNET, "labnet-v4", {"name": SUBNET["name"], "vnet": "labnet"}),
        (objects.VNET, "labnet", {"name": "labnet"}),
        (objects.ZONE, "lab", {"name": "lab"}),
    )
    for spec, state_id, names in removals:
        plan = network_apply.absent(ctx, spec, True, state_id, "destroy", **names)
        assert plan.result is None and "deleted" in plan.changes, plan.comment
    plan = sdn_apply.applied(ctx, True, "sdn")
    assert plan.result is None and plan.changes["reload"]["planned"] == ["labnet-v4", "labnet", "lab"]
    ctx = make_context(static_targets(fresh_cluster), store=store)
    start = len(fresh_cluster.pve.requests)
    for spec, state_id, names in removals:
        done = network_apply.absent(ctx, spec, False, state_id, "destroy", **names)
        assert done.result is True, done.comment
    deletes = [(p, body) for m, p, body in requests_since(fresh_cluster, start) if m == "DELETE"]
    assert len(deletes) == 3 and not any("digest" in p for p, _ in deletes)
    _commit(ctx)
    assert fresh_cluster.pve.sdn_running == {"zones": {}, "vnets": {}, "subnets": {}}


def test_a_pending_sdn_deletion_this_run_did_not_make_is_refused(fresh_cluster):
    """Somebody deleted zone lab in the pending configuration: the commit would make it live while the
    plan said nothing is destroyed. Refused, naming it and PVE 9's POST /cluster/sdn/rollback."""
    ctx = make_context(static_targets(fresh_cluster))
    assert network_apply.present(ctx, objects.ZONE, False, "lab", **ZONE).result is True
    _commit(ctx)
    del fresh_cluster.pve.sdn["zones"]["lab"]
    ctx = make_context(static_targets(fresh_cluster))
    plan = sdn_apply.applied(ctx, True, "sdn")
    assert plan.result is False and "deletes zone lab" in plan.comment[0], plan.comment
    assert "`pvesh create /cluster/sdn/rollback`" in plan.comment[0]
    start = len(fresh_cluster.pve.requests)
    assert sdn_apply.applied(ctx, False, "sdn").result is False
    assert writes(requests_since(fresh_cluster, start)) == []
    assert "lab" in fresh_cluster.pve.sdn_running["zones"]
    # The remedy works: the rollback brings the zone back and the plan is clean.
    ctx.client.request("POST", "cluster/sdn/rollback", ctx.broker.provision())
    assert sdn_apply.applied(make_context(static_targets(fresh_cluster)), True, "sdn").result is True


def test_an_uncertain_commit_releases_the_sdn_lock_it_took(fresh_cluster):
    """The commit's answer is lost (HTTP 502 after the request was sent): PVE released the lock only if
    it committed (reload deletes it inside lock_sdn_config), so the lock is released with our token."""
    store = MemoryStore()
    ctx = make_context(static_targets(fresh_cluster), store=store)
    assert network_apply.present(ctx, objects.ZONE, False, "lab", **ZONE).result is True
    fresh_cluster.pve.fail("PUT", "/cluster/sdn", 502, "Bad Gateway")
    done = sdn_apply.applied(ctx, False, "sdn")
    assert done.result is False, done.comment
    # Released by DELETE /cluster/sdn/lock without force: the fake, as lock_sdn_config, takes only our token.
    assert fresh_cluster.pve.sdn_lock is None, "the lock we took is released"
    assert [p for m, p, _ in writes(requests_since(fresh_cluster, 0))][-1] == "/cluster/sdn/lock"
    assert not any(key.endswith("/sdn_lock/global") for key in store.rows)


def test_a_lock_a_stopped_run_left_is_shown_in_the_plan_and_released_by_the_next_apply(fresh_cluster):
    """A run stopped between the lock and the commit leaves PVE's global SDN lock held with our token; PVE
    has no call that reads it, so the token is recorded. The next plan says the lock is ours and would be
    released; the next apply releases it with the token before writing, instead of blaming another client."""
    token = "0191d7a0-0000-7000-8000-000000000001"
    key = f"{TARGET}/sdn_lock/global"
    row = {"phase": "owned", "instance": "i", "state_id": "sdn", "declared": {"taken": 1, "token": token}}
    store = MemoryStore({key: row})
    fresh_cluster.pve.sdn_lock = token
    ctx = make_context(static_targets(fresh_cluster), store=store)
    plan = network_apply.present(ctx, objects.ZONE, True, "lab", **ZONE)
    assert plan.result is None and plan.changes["sdn_lock"]["new"] == "released", plan.comment
    assert "state sdn of an earlier run took PVE's global SDN lock" in plan.comment[0]
    assert fresh_cluster.pve.sdn_lock == token and key in store.rows, "a plan writes nothing"
    done = network_apply.present(ctx, objects.ZONE, False, "lab", **ZONE)
    assert done.result is True, done.comment
    assert fresh_cluster.pve.sdn_lock is None and key not in store.rows
    assert "lab" in fresh_cluster.pve.sdn["zones"]


def test_a_killed_reload_is_reported_by_the_next_plan(fresh_cluster):
    """A run stopped after PUT /nodes/pve1/network: the worker renamed interfaces.new at its start, so
    nothing is staged, and ifreload failed. The next plan reads the node's last srvreload task and
    reports it, never a silent 'nothing to apply'; the SDN plan (whose commit reloads every node) too."""
    ctx = make_context(static_targets(fresh_cluster))
    _stage(fresh_cluster, ctx)
    fresh_cluster.pve.reload_failures["pve1"] = "command 'ifreload -a' failed: exit code 1"
    upid = ctx.client.request("PUT", "nodes/pve1/network", ctx.broker.provision())
    ctx = make_context(static_targets(fresh_cluster))
    plan = network_apply.applied(ctx, True, "pve1-network", node="pve1")
    assert plan.result is False and upid in plan.comment[0] and "ifreload -a" in plan.comment[0]
    assert "`pvesh get /nodes/pve1/tasks/" in plan.comment[0]
    sdn_plan = sdn_apply.applied(ctx, True, "sdn")
    assert sdn_plan.result is False and upid in sdn_plan.comment[0]
    # Staging a fix, the plan shows the failure beside the reload it would make.
    _stage(fresh_cluster, ctx, "vmbr2", name="vmbr2", bridge_ports="")
    again = network_apply.applied(
        make_context(static_targets(fresh_cluster)), True, "pve1-network", node="pve1"
    )
    assert again.result is None and any(upid in line for line in again.comment)
