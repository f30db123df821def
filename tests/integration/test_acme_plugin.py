"""ACME challenge plugins through the simple-object lifecycle, against the served fake cluster, whose plugins
and node certificate configuration are ``tests.support.acme.AcmePve`` (pve-manager ``PVE/API2/ACMEPlugin.pm``,
``PVE/NodeConfig.pm``: fakepve 0.5.0 stores none). A plan only reads, an apply writes what the plan showed,
a second plan is clean; ``data`` is written at create and on a serial bump only and shown nowhere; a plugin
made by hand through the API is exported as a declaration that plans clean with adopt; what PVE would take
and then fail on (an unknown DNS API, a type change, deleting the built-in plugin or one a node names) is
refused at plan with nothing written."""

from __future__ import annotations

import base64
import json
from urllib.parse import parse_qs

import requests

from salt_proxmox.datacenter import acme
from salt_proxmox.export import objects
from salt_proxmox.ownership.stores import MemoryStore
from salt_proxmox.simple.lifecycle import absent, present
from tests.support.guests import make_context, requests_since, static_targets, writes

TOKEN = "cf-token-4b3a2918"
PLUGIN = {
    "name": "lab-dns",
    "type": "dns",
    "api": "cf",
    "validation-delay": 60,
    "nodes": ["pve2", "pve1"],
    "data": {"CF_Token": TOKEN, "CF_Account_ID": "acct"},
    "secret_serial": 1,
}


def _form(body: bytes) -> dict[str, str]:
    return {key: values[0] for key, values in parse_qs(body.decode(), keep_blank_values=True).items()}


def _api(cluster, method: str, path: str, **form):
    """A call to the fake's API with the provision token, as an operator would make it by hand."""
    token_id, secret = cluster.seeded.provision_token
    answer = requests.request(
        method,
        f"{cluster.url}/api2/json/{path}",
        data=form or None,
        headers={"Authorization": f"PVEAPIToken={token_id}={secret}"},
        verify=cluster.cafile,
        timeout=10,
    )
    assert answer.status_code == 200, answer.text
    return answer.json()["data"]


def _plan_apply_replan(served, ctx, state_id, **declared):
    start = len(served.pve.requests)
    plan = present(ctx, acme.SPEC, True, state_id, **declared)
    assert plan.result is None, plan.comment
    assert writes(requests_since(served, start)) == [], "a plan never writes"
    start = len(served.pve.requests)
    done = present(ctx, acme.SPEC, False, state_id, **declared)
    assert done.result is True, done.comment
    assert done.changes == plan.changes, "the apply did what the plan showed"
    log = requests_since(served, start)
    again = present(ctx, acme.SPEC, True, state_id, **declared)
    assert (again.result, again.changes) == (True, {}), again.comment
    for said in (plan, done, again):
        assert TOKEN not in json.dumps([said.comment, said.changes], default=str)
    return plan, done, log


def test_a_dns_plugin_is_created_its_data_sent_base64url_and_rotated_by_serial(fresh_cluster):
    pve = fresh_cluster.pve
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    _, _, log = _plan_apply_replan(fresh_cluster, ctx, "lab-dns", **PLUGIN)
    (create,) = writes(log)
    assert create[:2] == ("POST", "/cluster/acme/plugins")
    sent = _form(create[2])
    # pvenode.pm param_mapping: data is base64url encoded (Challenge.pm encode_value) before it is sent.
    assert base64.urlsafe_b64decode(sent["data"]).decode() == f"CF_Token={TOKEN}\nCF_Account_ID=acct\n"
    assert {k: sent[k] for k in ("id", "type", "api", "validation-delay", "nodes")} == {
        "id": "lab-dns", "type": "dns", "api": "cf", "validation-delay": "60", "nodes": "pve1,pve2",
    }  # fmt: skip

    # Back to PVE's default 30 is a delete (DNSChallenge.pm validation-delay default), with the digest.
    _, done, log = _plan_apply_replan(fresh_cluster, ctx, "lab-dns", **{**PLUGIN, "validation-delay": None})
    assert set(done.changes) == {"validation-delay"}
    (update,) = writes(log)
    assert _form(update[2]) == {"delete": "validation-delay", "digest": _form(update[2])["digest"]}

    # Other data under the same serial is never written: PVE shows it, but it is never compared.
    same = present(ctx, acme.SPEC, True, "lab-dns", **{**PLUGIN, "validation-delay": None, "data": "A=b"})
    assert same.changes == {}
    rotated = {**PLUGIN, "validation-delay": None, "data": "CF_Token=rotated", "secret_serial": 2}
    _, _, log = _plan_apply_replan(fresh_cluster, ctx, "lab-dns", **rotated)
    (rotate,) = writes(log)
    assert base64.urlsafe_b64decode(_form(rotate[2])["data"]) == b"CF_Token=rotated\n"
    assert base64.urlsafe_b64decode(pve.acme_plugins["lab-dns"]["data"]) == b"CF_Token=rotated\n"


def test_a_hand_made_plugin_exports_as_a_declaration_that_plans_clean_with_adopt(fresh_cluster):
    data = base64.urlsafe_b64encode(f"CF_Token={TOKEN}\n".encode()).decode()
    _api(
        fresh_cluster,
        "POST",
        "cluster/acme/plugins",
        id="byhand",
        type="dns",
        api="ovh",
        data=data,
        disable=1,
    )
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    found = objects.export(ctx, acme.SPEC)
    # The built-in standalone plugin is exported too (Challenge.pm parse_config always holds it).
    by_name = {o.declaration["name"]: o.declaration for o in found.objects}
    assert by_name["byhand"] == {"name": "byhand", "type": "dns", "api": "ovh", "disable": 1, "adopt": True}
    assert by_name["standalone"] == {"name": "standalone", "type": "standalone", "adopt": True}
    assert TOKEN not in json.dumps([list(by_name.values()), found.notes])
    start = len(fresh_cluster.pve.requests)
    for name, declaration in by_name.items():
        plan = present(ctx, acme.SPEC, True, name, **declaration)
        assert set(plan.changes) <= {"ownership"}, plan.changes
        assert present(ctx, acme.SPEC, False, name, **declaration).result is True
    assert writes(requests_since(fresh_cluster, start)) == []
    assert fresh_cluster.pve.acme_plugins["byhand"]["data"] == data, "adopting never touches data"


def test_an_unknown_api_and_a_type_change_are_refused_at_plan(fresh_cluster):
    pve = fresh_cluster.pve
    _api(fresh_cluster, "POST", "cluster/acme/plugins", id="byhand", type="dns", api="cf")
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    start = len(pve.requests)
    # GET /cluster/acme/challenge-schema lists the DNS APIs this cluster's proxmox-acme has.
    unknown = present(ctx, acme.SPEC, True, "x", name="newdns", type="dns", api="cf-gone")
    assert unknown.result is False and "api: cf-gone is not a DNS API" in " ".join(unknown.comment)
    other = present(ctx, acme.SPEC, True, "byhand", name="byhand", type="standalone", adopt=True)
    assert other.result is False and "PVE cannot change its type" in " ".join(other.comment)
    assert writes(requests_since(fresh_cluster, start)) == []


def test_the_built_in_plugin_and_one_a_node_names_are_never_deleted(fresh_cluster):
    pve = fresh_cluster.pve
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    plain = {k: v for k, v in PLUGIN.items() if k not in ("data", "secret_serial")}
    assert present(ctx, acme.SPEC, False, "lab-dns", **plain).result is True
    # A node's certificate domain validated through it (NodeConfig.pm acmedomainN: plugin=<id>).
    _api(fresh_cluster, "PUT", "nodes/pve2/config", acmedomain1="pve2.example.org,plugin=lab-dns")
    start = len(pve.requests)
    kept = absent(ctx, acme.SPEC, False, "lab-dns", name="lab-dns", removal="destroy")
    assert kept.result is False, kept.comment
    assert "pve2: acmedomain1 (pve2.example.org)" in " ".join(kept.comment)
    assert present(
        ctx, acme.SPEC, False, "standalone", name="standalone", type="standalone", adopt=True
    ).result
    builtin = absent(ctx, acme.SPEC, False, "standalone", name="standalone", removal="destroy")
    assert builtin.result is False and "built-in standalone plugin" in " ".join(builtin.comment)
    assert [w for w in writes(requests_since(fresh_cluster, start)) if w[0] == "DELETE"] == []
    assert "lab-dns" in pve.acme_plugins
    # Pointed elsewhere, it goes.
    _api(fresh_cluster, "PUT", "nodes/pve2/config", delete="acmedomain1")
    gone = absent(ctx, acme.SPEC, False, "lab-dns", name="lab-dns", removal="destroy")
    assert gone.result is True, gone.comment
    assert "lab-dns" not in pve.acme_plugins
