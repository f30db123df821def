"""PVE's SDN rules refused at plan (salt_proxmox.sdn.rules), against the suite's SDN fake, which
refuses the same writes as pve-network does (tests/support/network.py ``_zone_hooks``, ``_vnet_hook``,
``_subnet_hook``): each plan refusal is shown to be PVE's own by sending the refused write straight
to the fake, and nothing is written by a refused plan or apply."""

from __future__ import annotations

import pytest
import requests

from salt_proxmox.sdn import objects
from salt_proxmox.simple.lifecycle import present
from tests.support.guests import make_context, requests_since, static_targets, writes

VLAN = {"name": "lab", "type": "vlan", "bridge": "vmbr0"}
SIMPLE = {"name": "flat", "type": "simple"}
VXLAN = {"name": "ovl", "type": "vxlan", "peers": "10.0.0.1,10.0.0.2"}


def _ctx(served):
    return make_context(static_targets(served))


def _apply(ctx, spec, declared: dict) -> None:
    outcome = present(ctx, spec, False, declared["name"], **declared)
    assert outcome.result is True, outcome.comment


def _refused(served, ctx, spec, declared: dict, words: str) -> str:
    """The plan and the apply both refuse ``declared`` with PVE's ``words``, writing nothing."""
    start = len(served.pve.requests)
    for test in (True, False):
        outcome = present(ctx, spec, test, declared["name"], **declared)
        assert outcome.result is False, outcome.comment
        assert words in " ".join(outcome.comment), outcome.comment
    assert writes(requests_since(served, start)) == []
    return " ".join(outcome.comment)


def _pve_says(served, method: str, path: str, form: dict) -> str:
    """What the fake (as pve-network) answers to the write sent straight to it."""
    token_id, secret = served.seeded.provision_token
    answer = requests.request(
        method,
        f"{served.url}/api2/json/{path}",
        data=form,
        headers={"Authorization": f"PVEAPIToken={token_id}={secret}"},
        verify=served.cafile,
        timeout=10,
    )
    assert answer.status_code in (400, 500), answer.text
    return answer.text


def test_a_tag_in_a_simple_zone(fresh_cluster):
    ctx = _ctx(fresh_cluster)
    _apply(ctx, objects.ZONE, SIMPLE)
    vnet = {"name": "flatnet", "zone": "flat", "tag": 5}
    _refused(fresh_cluster, ctx, objects.VNET, vnet, "vlan tag is not allowed on simple zone")
    said = _pve_says(
        fresh_cluster, "POST", "cluster/sdn/vnets", {"vnet": "flatnet", "zone": "flat", "tag": "5"}
    )
    assert "vlan tag is not allowed on simple zone" in said


def test_vlan_zone_tags(fresh_cluster):
    ctx = _ctx(fresh_cluster)
    _apply(ctx, objects.ZONE, VLAN)
    _refused(fresh_cluster, ctx, objects.VNET, {"name": "untag", "zone": "lab"}, "missing vlan tag")
    _refused(
        fresh_cluster, ctx, objects.VNET, {"name": "big", "zone": "lab", "tag": 5000}, "max value is 4096"
    )
    _apply(ctx, objects.VNET, {"name": "one", "zone": "lab", "tag": 20})
    text = _refused(
        fresh_cluster, ctx, objects.VNET, {"name": "two", "zone": "lab", "tag": 20}, "already exist"
    )
    assert "vnet one" in text
    said = _pve_says(fresh_cluster, "POST", "cluster/sdn/vnets", {"vnet": "two", "zone": "lab", "tag": "20"})
    assert "tag 20 already exist in vnet one" in said


def test_a_tag_taken_by_a_vnet_the_same_run_plans_is_refused(fresh_cluster):
    ctx = _ctx(fresh_cluster)
    assert present(ctx, objects.ZONE, True, "lab", **VLAN).result is None
    assert present(ctx, objects.VNET, True, "one", name="one", zone="lab", tag=30).result is None
    plan = present(ctx, objects.VNET, True, "two", name="two", zone="lab", tag=30)
    assert plan.result is False and "tag 30 is vnet one's already" in plan.comment[0]


def test_vxlan_ids_are_unique_across_vxlan_zones_and_need_a_tag(fresh_cluster):
    ctx = _ctx(fresh_cluster)
    _apply(ctx, objects.ZONE, VXLAN)
    _apply(ctx, objects.ZONE, {**VXLAN, "name": "ovl2"})
    _refused(fresh_cluster, ctx, objects.VNET, {"name": "v0", "zone": "ovl"}, "missing vxlan tag")
    _apply(ctx, objects.VNET, {"name": "v1", "zone": "ovl", "tag": 100000})
    text = _refused(
        fresh_cluster, ctx, objects.VNET, {"name": "v2", "zone": "ovl2", "tag": 100000}, "vxlan tag 100000"
    )
    assert "unique across every vxlan and evpn zone" in text


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        pytest.param({"fabric": "f1"}, "exactly one of peers and fabric", id="both"),
        pytest.param({"peers": None}, "exactly one of peers and fabric", id="neither"),
    ],
)
def test_a_vxlan_zone_has_peers_or_a_fabric(fresh_cluster, extra, words):
    ctx = _ctx(fresh_cluster)
    declared = {key: value for key, value in {**VXLAN, **extra}.items() if value is not None}
    _refused(fresh_cluster, ctx, objects.ZONE, declared, words)


def test_on_pve_8_a_vxlan_zone_needs_peers_and_has_no_fabric(fresh_cluster):
    fresh_cluster.pve.version, fresh_cluster.pve.release_version = "8.4.14", "8.4"
    ctx = _ctx(fresh_cluster)
    _refused(fresh_cluster, ctx, objects.ZONE, {"name": "ovl", "type": "vxlan", "fabric": "f1"}, "PVE 9's")
    _refused(fresh_cluster, ctx, objects.ZONE, {"name": "ovl", "type": "vxlan"}, "needs peers on PVE 8")


def test_zone_references_must_exist(fresh_cluster):
    ctx = _ctx(fresh_cluster)
    _refused(fresh_cluster, ctx, objects.ZONE, {**SIMPLE, "dns": "powerdns"}, "powerdns don't exist")
    _refused(fresh_cluster, ctx, objects.ZONE, {**SIMPLE, "ipam": "netbox"}, "netbox not existing")
    _refused(fresh_cluster, ctx, objects.ZONE, {**SIMPLE, "dnszone": "lab.example"}, "missing dns server")
    said = _pve_says(
        fresh_cluster, "POST", "cluster/sdn/zones", {"zone": "flat", "type": "simple", "ipam": "netbox"}
    )
    assert "netbox not existing" in said
    _apply(ctx, objects.ZONE, {**SIMPLE, "ipam": "pve"})  # PVE's own IPAM is there from the start


def test_an_evpn_zone_needs_an_evpn_controller_and_its_own_vrf_vxlan(fresh_cluster):
    ctx = _ctx(fresh_cluster)
    evpn = {"name": "ev", "type": "evpn", "controller": "ctl", "vrf-vxlan": 5000}
    _refused(fresh_cluster, ctx, objects.ZONE, evpn, "controller ctl don't exist")
    # Each step is a run of its own (a run reads a listing once): a fresh context each time.
    fresh_cluster.pve.sdn_controllers["ctl"] = {"type": "bgp"}
    ctx = _ctx(fresh_cluster)
    _refused(fresh_cluster, ctx, objects.ZONE, evpn, "ctl is not a evpn controller type")
    fresh_cluster.pve.sdn_controllers["ctl"] = {"type": "evpn", "asn": 65000}
    ctx = _ctx(fresh_cluster)
    _apply(ctx, objects.ZONE, evpn)
    _refused(
        fresh_cluster, ctx, objects.ZONE, {**evpn, "name": "ev2"}, "vrf-vxlan 5000 is already declared in ev"
    )
    _refused(
        fresh_cluster,
        ctx,
        objects.VNET,
        {"name": "evn", "zone": "ev", "tag": 7, "vlanaware": True},
        "vlan-aware option can't be enabled with evpn",
    )


def test_a_vnet_in_a_zone_nobody_creates(fresh_cluster):
    ctx = _ctx(fresh_cluster)
    _refused(fresh_cluster, ctx, objects.VNET, {"name": "lost", "zone": "nozone", "tag": 3}, "zone nozone")


def test_subnets_and_vlan_aware_vnets(fresh_cluster):
    ctx = _ctx(fresh_cluster)
    _apply(ctx, objects.ZONE, VLAN)
    _apply(ctx, objects.VNET, {"name": "aware", "zone": "lab", "tag": 40, "vlanaware": True})
    subnet = {"name": "10.40.0.0/24", "vnet": "aware"}
    _refused(fresh_cluster, ctx, objects.SUBNET, subnet, "you can't add a subnet on a vlanaware vnet")
    said = _pve_says(
        fresh_cluster, "POST", "cluster/sdn/vnets/aware/subnets", {"subnet": "10.40.0.0/24", "type": "subnet"}
    )
    assert "vlanaware vnet" in said

    _apply(ctx, objects.VNET, {"name": "plain", "zone": "lab", "tag": 41})
    _apply(ctx, objects.SUBNET, {"name": "10.41.0.0/24", "vnet": "plain"})
    _refused(
        fresh_cluster,
        ctx,
        objects.VNET,
        {"name": "plain", "zone": "lab", "tag": 41, "vlanaware": True},
        "vlanaware vnet is not compatible with subnets",
    )


def test_a_slash_32_subnet_takes_a_gateway_outside_it(fresh_cluster):
    # SubnetPlugin on_update_hook: an IPv4 /32 is point-to-point, its gateway lies outside it.
    ctx = _ctx(fresh_cluster)
    _apply(ctx, objects.ZONE, VLAN)
    _apply(ctx, objects.VNET, {"name": "ptp", "zone": "lab", "tag": 50})
    subnet = {"name": "192.0.2.10/32", "vnet": "ptp", "gateway": "192.0.2.1"}
    _apply(ctx, objects.SUBNET, subnet)
    again = present(ctx, objects.SUBNET, True, subnet["name"], **subnet)
    assert (again.result, again.changes) == (True, {}), again.comment


def test_the_plan_says_a_subnet_is_registered_in_ipam_at_write_time(fresh_cluster):
    ctx = _ctx(fresh_cluster)
    _apply(ctx, objects.ZONE, {**VLAN, "ipam": "pve"})
    _apply(ctx, objects.VNET, {"name": "ipn", "zone": "lab", "tag": 60})
    subnet = {"name": "10.60.0.0/24", "vnet": "ipn", "gateway": "10.60.0.1"}
    for test in (True, False):
        outcome = present(ctx, objects.SUBNET, test, subnet["name"], **subnet)
        text = " ".join(outcome.comment)
        if test:
            assert outcome.result is None
            assert "registers the subnet and its gateway 10.60.0.1 in IPAM pve" in text, text
    plain = {"name": "10.61.0.0/24", "vnet": "ipn"}
    _apply(ctx, objects.ZONE, {**SIMPLE})
    _apply(ctx, objects.VNET, {"name": "noipam", "zone": "flat"})
    quiet = present(ctx, objects.SUBNET, True, plain["name"], **{**plain, "vnet": "noipam"})
    assert "IPAM" not in " ".join(quiet.comment)


def test_ipam_and_zone_stay_while_subnets_exist(fresh_cluster):
    ctx = _ctx(fresh_cluster)
    _apply(ctx, objects.ZONE, {**VLAN, "ipam": "pve"})
    _apply(ctx, objects.ZONE, {**VLAN, "name": "lab2"})
    _apply(ctx, objects.VNET, {"name": "held", "zone": "lab", "tag": 70})
    _apply(ctx, objects.SUBNET, {"name": "10.70.0.0/24", "vnet": "held"})
    _refused(
        fresh_cluster,
        ctx,
        objects.ZONE,
        {**VLAN, "ipam": ""},
        "can't change ipam if a subnet is already defined",
    )
    _refused(
        fresh_cluster,
        ctx,
        objects.VNET,
        {"name": "held", "zone": "lab2", "tag": 70},
        "can't change zone if subnets exist",
    )
