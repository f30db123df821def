"""SDN controllers, IPAMs and DNS servers against the served fake cluster, whose three endpoints are
``tests.support.sdn_extras.SdnExtrasPve`` (pve-network ``API2/Network/SDN/{Controllers,Ipams,Dns}.pm``:
fakepve 0.5.0 stores none). A plan only reads, an apply writes what the plan showed, a second plan is
clean; a controller stays pending until the SDN apply commits it, an IPAM is written at once; objects
made by hand are exported and plan clean with adopt; each plan refusal is PVE's own, shown by sending
the refused write straight to the fake."""

from __future__ import annotations

import json

import requests

from salt_proxmox.export import objects as export
from salt_proxmox.network import apply as staged
from salt_proxmox.ownership.stores import MemoryStore
from salt_proxmox.sdn import apply as sdn_apply
from salt_proxmox.sdn import extras
from salt_proxmox.sdn import objects as sdn_objects
from salt_proxmox.simple.lifecycle import absent, present
from tests.support.guests import make_context, requests_since, static_targets, writes

TOKEN = "netbox-token-7a6b5c"
EVPN = {"name": "evpnctl", "type": "evpn", "asn": 65000, "peers": ["10.0.0.2", "10.0.0.1"]}
NETBOX = {"name": "netbox", "type": "netbox", "url": "https://netbox.example.org/api", "token": TOKEN}


def _ctx(served):
    return make_context(static_targets(served), store=MemoryStore())


def _plan_apply_replan(served, ctx, spec, declared: dict):
    start = len(served.pve.requests)
    plan = present(ctx, spec, True, declared["name"], **declared)
    assert plan.result is None, plan.comment
    assert writes(requests_since(served, start)) == [], "a plan never writes"
    done = present(ctx, spec, False, declared["name"], **declared)
    assert done.result is True and done.changes == plan.changes, done.comment
    again = present(ctx, spec, True, declared["name"], **declared)
    assert (again.result, again.changes) == (True, {}), again.comment
    for said in (plan, done, again):
        assert TOKEN not in json.dumps([said.comment, said.changes], default=str)
    return plan


def _refused(served, ctx, spec, declared: dict, words: str) -> None:
    start = len(served.pve.requests)
    for test in (True, False):
        outcome = present(ctx, spec, test, declared["name"], **declared)
        assert outcome.result is False and words in " ".join(outcome.comment), outcome.comment
    assert writes(requests_since(served, start)) == []


def _pve_says(served, method: str, path: str, form: dict | None = None) -> str:
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


def test_a_controller_is_staged_until_the_sdn_apply_and_an_ipam_written_at_once(fresh_cluster):
    pve, ctx = fresh_cluster.pve, _ctx(fresh_cluster)
    _plan_apply_replan(fresh_cluster, ctx, extras.CONTROLLER, EVPN)
    assert pve.sdn_controllers["evpnctl"]["peers"] == "10.0.0.1,10.0.0.2"
    assert pve.sdn_controllers_running == {}, "written to controllers.cfg, not yet running"
    plan = _plan_apply_replan(fresh_cluster, ctx, extras.IPAM, NETBOX)
    assert any("takes effect without the SDN apply" in line for line in plan.comment)
    assert pve.sdn_ipams["netbox"]["token"] == TOKEN
    # A zone naming both, declared after them in the run, then the commit makes the controller live.
    zone = {"name": "ev", "type": "evpn", "controller": "evpnctl", "vrf-vxlan": 100, "ipam": "netbox"}
    _plan_apply_replan(fresh_cluster, ctx, sdn_objects.ZONE, zone)
    assert sdn_apply.applied(ctx, False, "sdn").result is True
    assert set(pve.sdn_controllers_running) == {"evpnctl"}


def test_a_zone_may_name_a_controller_this_run_only_plans(fresh_cluster):
    # Zones.pm create / EvpnPlugin on_update_hook refuse a missing controller; one this run creates
    # before the zone exists by then.
    ctx = _ctx(fresh_cluster)
    assert present(ctx, extras.CONTROLLER, True, "evpnctl", **EVPN).result is None
    zone = {"name": "ev", "type": "evpn", "controller": "evpnctl", "vrf-vxlan": 100}
    plan = present(ctx, sdn_objects.ZONE, True, "ev", **zone)
    assert plan.result is None, plan.comment


def test_pve_s_controller_refusals_are_refused_at_plan(fresh_cluster):
    pve, ctx = fresh_cluster.pve, _ctx(fresh_cluster)
    pve.sdn_controllers["other"] = {"type": "evpn", "asn": 65001, "peers": "10.0.0.9"}
    _refused(fresh_cluster, ctx, extras.CONTROLLER, EVPN, "only 1 global evpn controller can be defined")
    form = {"controller": "evpnctl", "type": "evpn", "asn": "65000", "peers": "10.0.0.1"}
    assert "only 1 global evpn controller can be defined" in _pve_says(
        fresh_cluster, "POST", "cluster/sdn/controllers", form
    )
    del pve.sdn_controllers["other"]
    both = {**EVPN, "fabric": "underlay"}
    _refused(fresh_cluster, ctx, extras.CONTROLLER, both, "must have exactly one of peers / fabric defined")
    said = _pve_says(fresh_cluster, "POST", "cluster/sdn/controllers", {**form, "fabric": "underlay"})
    assert "must have exactly one of peers / fabric defined" in said


def test_nothing_a_zone_names_is_deleted_and_the_pve_ipam_never(fresh_cluster):
    pve, ctx = fresh_cluster.pve, _ctx(fresh_cluster)
    _plan_apply_replan(fresh_cluster, ctx, extras.CONTROLLER, EVPN)
    zone = {"name": "ev", "type": "evpn", "controller": "evpnctl", "vrf-vxlan": 100}
    _plan_apply_replan(fresh_cluster, ctx, sdn_objects.ZONE, zone)
    start = len(pve.requests)
    for test in (True, False):
        outcome = staged.absent(ctx, extras.CONTROLLER, test, "evpnctl", "destroy", name="evpnctl")
        assert outcome.result is False and "zone(s) ev name it" in " ".join(outcome.comment), outcome.comment
    assert writes(requests_since(fresh_cluster, start)) == []
    # EvpnPlugin on_delete_hook refuses it too.
    assert "controller evpnctl is used by ev" in _pve_says(
        fresh_cluster, "DELETE", "cluster/sdn/controllers/evpnctl"
    )
    # The pve IPAM: adopted, never destroyed (Ipams.pm config adds it to every read).
    adopted = present(ctx, extras.IPAM, False, "pve", name="pve", type="pve", adopt=True)
    assert adopted.result is True, adopted.comment
    refused = absent(ctx, extras.IPAM, False, "pve", "destroy", name="pve")
    assert refused.result is False and "PVE's own IPAM, never deleted" in " ".join(refused.comment)
    assert "pve" in pve.sdn_ipams


def test_hand_made_objects_export_as_declarations_that_plan_clean_with_adopt(fresh_cluster):
    pve = fresh_cluster.pve
    pve.sdn_controllers["bgp1"] = {
        "type": "bgp",
        "node": "pve1",
        "asn": 65010,
        "peers": "10.1.0.2,10.1.0.1",
        "ebgp": 1,
    }
    pve.sdn_ipams["netbox"] = {"type": "netbox", "url": "https://nb.example.org/api", "token": TOKEN}
    pve.sdn_dns["pdns"] = {"type": "powerdns", "url": "https://pdns.example.org", "key": TOKEN, "ttl": 600}
    ctx = _ctx(fresh_cluster)
    for spec, name in ((extras.CONTROLLER, "bgp1"), (extras.IPAM, "netbox"), (extras.DNS_SERVER, "pdns")):
        found = export.export(ctx, spec)
        (exported,) = [each for each in found.objects if each.declaration["name"] == name]
        assert TOKEN not in json.dumps([exported.declaration, found.notes], default=str)
        assert exported.declaration["adopt"] is True
        start = len(pve.requests)
        plan = present(ctx, spec, True, name, **exported.declaration)
        assert set(plan.changes) <= {"ownership"}, plan.changes
        done = present(ctx, spec, False, name, **exported.declaration)
        assert done.result is True and writes(requests_since(fresh_cluster, start)) == [], done.comment
    assert pve.sdn_ipams["netbox"]["token"] == TOKEN, "adopting never touches the token"
