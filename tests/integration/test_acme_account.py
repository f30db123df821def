"""ACME accounts through the simple-object lifecycle and the root lane, against the served fake cluster,
whose accounts are ``tests.support.acme.AcmePve`` (pve-manager ``PVE/API2/ACMEAccount.pm``: every method
but the index is root@pam's only). Without a lane the read token proves an account absent by the index and
every write is refused naming the lane and the command; with a fake ``pvesh`` (``tests.support.pvesh``,
forwarding as root@pam) a plan only reads, an apply registers through the lane and awaits the task there,
a second plan is clean; a contact change is an update; a deactivate is said irreversible and refused while
a node's certificate configuration uses the account; an EAB account is refused through pvesh (its HMAC key
would be in pvesh's argv)."""

from __future__ import annotations

import json
import logging

import requests

from salt_proxmox.datacenter import acme_account
from salt_proxmox.export import objects
from salt_proxmox.ownership.stores import MemoryStore
from salt_proxmox.simple.lifecycle import absent, present
from tests.support.acme import LE_TOS
from tests.support.guests import TARGET, make_context
from tests.support.lanes import lane_targets, ticket_lane, writes_since
from tests.support.pvesh import write_fake_pvesh

ACCOUNT = {"name": "lab", "contact": ["ops@lab.example", "pki@lab.example"], "tos_url": LE_TOS}
HMAC = "c2VjcmV0LWhtYWMta2V5LTQ0Mzg"


def _lane(served, tmp_path) -> dict:
    return {"via": "pvesh", "pvesh": str(write_fake_pvesh(served, tmp_path))}


def _root_writes(served, start):
    """The writes since ``start`` (``SendersPve``), the task polls and ticket logins left out."""
    return [(m, p, who) for m, p, who in writes_since(served, start)]


def _api(cluster, method: str, path: str, **form):
    """A call as root@pam (a ticket), as an operator registers an account by hand."""
    base = f"{cluster.url}/api2/json"
    login = requests.post(
        f"{base}/access/ticket",
        data={"username": cluster.pve.user, "password": cluster.pve.password},
        verify=cluster.cafile,
        timeout=10,
    ).json()["data"]
    answer = requests.request(
        method,
        f"{base}/{path}",
        data=form or None,
        cookies={"PVEAuthCookie": login["ticket"]},
        headers={"CSRFPreventionToken": login["CSRFPreventionToken"]},
        verify=cluster.cafile,
        timeout=10,
    )
    assert answer.status_code == 200, answer.text
    return answer.json()["data"]


def test_without_a_lane_a_token_is_refused_and_the_plan_names_the_lane_and_the_command(fresh_cluster):
    # fakepve, as RPCEnvironment.pm check_api2_permissions: a method without permissions is root@pam's.
    token_id, secret = fresh_cluster.seeded.provision_token
    answer = requests.get(
        f"{fresh_cluster.url}/api2/json/cluster/acme/account/lab",
        headers={"Authorization": f"PVEAPIToken={token_id}={secret}"},
        verify=fresh_cluster.cafile,
        timeout=10,
    )
    assert (answer.status_code, answer.json().get("message", "").strip()) == (
        403,
        "Permission check failed (user != root@pam)",
    )
    ctx = make_context(lane_targets(fresh_cluster), store=MemoryStore())
    start = len(fresh_cluster.pve.senders)
    for test in (True, False):
        outcome = present(ctx, acme_account.SPEC, test, "lab", **ACCOUNT)
        assert outcome.result is False, outcome.comment
        text = " ".join(outcome.comment)
        assert f"proxmox:targets:{TARGET}:root_lane: pvesh" in text
        assert (
            "`pvesh create /cluster/acme/account --name lab --contact ops@lab.example,pki@lab.example" in text
        )
    # The read token proved it absent by the index (account_index: any user), and nothing was written.
    reads = [(m, p) for m, p, _ in fresh_cluster.pve.senders[start:]]
    assert ("GET", "/cluster/acme/account") in reads
    assert ("GET", "/cluster/acme/account/lab") not in reads
    assert _root_writes(fresh_cluster, start) == []


def test_an_account_the_index_lists_cannot_be_read_without_a_lane(fresh_cluster):
    _api(fresh_cluster, "POST", "cluster/acme/account", name="lab", contact="ops@lab.example", tos_url=LE_TOS)
    ctx = make_context(lane_targets(fresh_cluster), store=MemoryStore())
    outcome = present(ctx, acme_account.SPEC, True, "lab", **ACCOUNT, adopt=True)
    assert outcome.result is False
    assert "exists (GET /cluster/acme/account lists it)" in " ".join(outcome.comment)
    gone = absent(ctx, acme_account.SPEC, True, "lab", name="lab", removal="destroy")
    assert gone.result is False and "root_lane" in " ".join(gone.comment)


def test_an_account_is_planned_registered_through_the_lane_and_replans_clean(fresh_cluster, tmp_path):
    pve = fresh_cluster.pve
    ctx = make_context(lane_targets(fresh_cluster, _lane(fresh_cluster, tmp_path)), store=MemoryStore())
    start = len(pve.senders)
    plan = present(ctx, acme_account.SPEC, True, "lab", **ACCOUNT)
    assert plan.result is None, plan.comment
    assert set(plan.changes) == {"created", "contact", "directory", "tos_url"}
    assert "ACME account lab: read as root@pam through the root lane (pvesh on pve1)" in " ".join(
        plan.comment
    )
    assert _root_writes(fresh_cluster, start) == [], "a plan writes nothing"

    done = present(ctx, acme_account.SPEC, False, "lab", **ACCOUNT)
    assert done.result is True, done.comment
    assert done.changes == plan.changes
    # The register went as root@pam, never with a token; its task was awaited through the lane.
    assert _root_writes(fresh_cluster, start) == [("POST", "/cluster/acme/account", "root@pam")]
    polls = [(m, p, who) for m, p, who in pve.senders[start:] if "/tasks/" in p]
    assert polls and {who for _, _, who in polls} == {"root@pam"}
    saved = pve.acme_accounts["lab"]
    assert saved["account"]["contact"] == ["mailto:ops@lab.example", "mailto:pki@lab.example"]
    assert (saved["directory"], saved["tos"]) == (acme_account.DEFAULT_DIRECTORY, LE_TOS)

    start = len(pve.senders)
    again = present(
        ctx, acme_account.SPEC, True, "lab", **{**ACCOUNT, "contact": ["pki@lab.example", "ops@lab.example"]}
    )
    assert (again.result, again.changes) == (True, {}), again.comment
    assert _root_writes(fresh_cluster, start) == []


def test_a_contact_change_is_an_update_and_the_directory_is_fixed(fresh_cluster, tmp_path):
    pve = fresh_cluster.pve
    ctx = make_context(lane_targets(fresh_cluster, _lane(fresh_cluster, tmp_path)), store=MemoryStore())
    assert present(ctx, acme_account.SPEC, False, "lab", **ACCOUNT).result is True
    start = len(pve.senders)
    changed = {**ACCOUNT, "contact": ["ops@lab.example"]}
    plan = present(ctx, acme_account.SPEC, True, "lab", **changed)
    assert (plan.result, set(plan.changes)) == (None, {"contact"}), plan.comment
    done = present(ctx, acme_account.SPEC, False, "lab", **changed)
    assert done.result is True, done.comment
    assert _root_writes(fresh_cluster, start) == [("PUT", "/cluster/acme/account/lab", "root@pam")]
    assert pve.acme_accounts["lab"]["account"]["contact"] == ["mailto:ops@lab.example"]
    # update_account takes contact only: another directory is refused naming a new account.
    staging = {**changed, "directory": "https://acme-staging-v02.api.letsencrypt.org/directory"}
    start = len(pve.senders)
    moved = present(ctx, acme_account.SPEC, True, "lab", **staging)
    assert moved.result is False
    assert "directory is" in " ".join(moved.comment) and "under a new name" in " ".join(moved.comment)
    assert _root_writes(fresh_cluster, start) == []


def test_a_register_without_the_ca_s_terms_of_service_is_refused_at_plan(fresh_cluster, tmp_path):
    ctx = make_context(lane_targets(fresh_cluster, _lane(fresh_cluster, tmp_path)), store=MemoryStore())
    start = len(fresh_cluster.pve.senders)
    plan = present(ctx, acme_account.SPEC, True, "lab", name="lab", contact=["ops@lab.example"])
    assert plan.result is False
    assert f"declare tos_url: {LE_TOS} to agree" in " ".join(plan.comment)
    assert _root_writes(fresh_cluster, start) == []


def test_a_deactivate_is_said_irreversible_and_refused_while_a_node_uses_the_account(fresh_cluster, tmp_path):
    pve = fresh_cluster.pve
    ctx = make_context(lane_targets(fresh_cluster, _lane(fresh_cluster, tmp_path)), store=MemoryStore())
    assert present(ctx, acme_account.SPEC, False, "lab", **ACCOUNT).result is True
    pve.node_configs["pve2"] = {"acme": "account=lab,domains=pve2.lab.example"}
    start = len(pve.senders)
    kept = absent(ctx, acme_account.SPEC, True, "lab", name="lab", removal="destroy")
    assert kept.result is False
    assert "pve2: acme (account=lab)" in " ".join(kept.comment)
    assert _root_writes(fresh_cluster, start) == []

    pve.node_configs["pve2"] = {"acme": "account=other,domains=pve2.lab.example"}
    plan = absent(ctx, acme_account.SPEC, True, "lab", name="lab", removal="destroy")
    assert plan.result is None, plan.comment
    assert "irreversible" in " ".join(plan.comment) and "_deactivated_lab_<n>" in " ".join(plan.comment)
    done = absent(ctx, acme_account.SPEC, False, "lab", name="lab", removal="destroy")
    assert done.result is True, done.comment
    assert _root_writes(fresh_cluster, start) == [("DELETE", "/cluster/acme/account/lab", "root@pam")]
    assert "lab" not in pve.acme_accounts and "_deactivated_lab_0" in pve.deactivated_accounts


def test_an_eab_account_is_refused_through_pvesh_and_its_key_goes_nowhere(fresh_cluster, tmp_path):
    ctx = make_context(lane_targets(fresh_cluster, _lane(fresh_cluster, tmp_path)), store=MemoryStore())
    start = len(fresh_cluster.pve.senders)
    eab = {**ACCOUNT, "eab-kid": "kid-1", "eab-hmac-key": HMAC}
    for test in (True, False):
        outcome = present(ctx, acme_account.SPEC, test, "lab", **eab)
        assert outcome.result is False
        text = " ".join(outcome.comment)
        assert "pvesh's argv" in text and "pvenode acme account register lab" in text
        assert HMAC not in json.dumps([outcome.comment, outcome.changes], default=str)
    assert _root_writes(fresh_cluster, start) == []
    assert fresh_cluster.pve.eab_sent == []


def test_a_hand_registered_account_exports_and_adopts_through_the_lane(fresh_cluster, tmp_path):
    _api(
        fresh_cluster,
        "POST",
        "cluster/acme/account",
        name="byhand",
        contact="ops@lab.example",
        tos_url=LE_TOS,
    )
    ctx = make_context(lane_targets(fresh_cluster, _lane(fresh_cluster, tmp_path)), store=MemoryStore())
    found = objects.export(ctx, acme_account.SPEC)
    (one,) = found.objects
    assert one.declaration == {
        "name": "byhand",
        "contact": ["ops@lab.example"],
        "directory": acme_account.DEFAULT_DIRECTORY,
        "tos_url": LE_TOS,
        "adopt": True,
    }
    start = len(fresh_cluster.pve.senders)
    plan = present(ctx, acme_account.SPEC, True, "byhand", **one.declaration)
    assert set(plan.changes) == {"ownership"}, plan.comment
    assert present(ctx, acme_account.SPEC, False, "byhand", **one.declaration).result is True
    assert _root_writes(fresh_cluster, start) == []


def test_an_eab_account_is_registered_through_the_ticket_lane_its_key_in_the_https_form_only(
    fresh_cluster, openbao, bao_creds, caplog
):
    """The ticket lane sends the register over the target's HTTPS API as root@pam: the EAB key goes in
    the form (ACMEAccount.pm register_account ``eab-hmac-key``), as a token's write would, never in an
    argv; it is in no return and no log line."""
    caplog.set_level(logging.DEBUG)
    targets, bao = ticket_lane(fresh_cluster, openbao, bao_creds)
    ctx = make_context(targets, bao, store=MemoryStore())
    eab = {**ACCOUNT, "eab-kid": "kid-1", "eab-hmac-key": HMAC}
    plan = present(ctx, acme_account.SPEC, True, "lab", **eab)
    assert plan.result is None, plan.comment
    start = len(fresh_cluster.pve.senders)
    done = present(
        make_context(targets, bao, store=ctx.ownership.store), acme_account.SPEC, False, "lab", **eab
    )
    assert done.result is True, done.comment
    assert _root_writes(fresh_cluster, start) == [("POST", "/cluster/acme/account", "root@pam")]
    assert fresh_cluster.pve.eab_sent == ["kid-1"]
    (body,) = [
        str(b) for m, p, b in fresh_cluster.pve.requests if m == "POST" and p.endswith("/acme/account")
    ]
    assert "eab-hmac-key" in body, "the key reached PVE in the register's form"
    again = present(
        make_context(targets, bao, store=ctx.ownership.store), acme_account.SPEC, True, "lab", **eab
    )
    assert again.result is True and again.changes == {}, again.comment
    said = json.dumps([o.comment for o in (plan, done, again)] + [o.changes for o in (plan, done, again)])
    assert HMAC not in said and HMAC not in caplog.text
