"""Pools, roles and ACL entries through the one simple-object lifecycle, against a served fake PVE.

Pools are fakepve's own (pve-manager Pool.pm). Roles and ACL entries are not stored by fakepve 0.5.0 —
``test_plain_fakepve_cannot_read_back_roles_or_acl_entries`` shows what it answers — so the cluster is
``tests.support.access.AccessPve``, which stores them as pve-access-control does. Every test counts the
requests the fake saw: a plan only reads, an apply writes what the plan showed, a second plan is clean.
"""

from __future__ import annotations

import json
from urllib.parse import parse_qs

import requests

from salt_proxmox.ownership.rows import row_key
from salt_proxmox.ownership.stores import MemoryStore
from salt_proxmox.simple import acl, pool, role
from salt_proxmox.simple.lifecycle import absent, present
from tests.support.cluster import PROVISION_PRIVS, PROVISION_TOKEN_ID, READ_PRIVS, READ_TOKEN_ID
from tests.support.guests import TARGET, make_context, requests_since, static_targets, writes

READ_ROLE = "SaltProxmoxRead"


def _form(body: bytes) -> dict[str, str]:
    return {key: values[0] for key, values in parse_qs(body.decode(), keep_blank_values=True).items()}


def _plan_apply_replan(served, ctx, spec, state_id, **declared):
    """Plan, apply, plan again; returns (plan, apply, the apply's request log)."""
    start = len(served.pve.requests)
    plan = present(ctx, spec, True, state_id, **declared)
    assert plan.result is None, plan.comment
    assert writes(requests_since(served, start)) == [], "a plan never writes"
    start = len(served.pve.requests)
    done = present(ctx, spec, False, state_id, **declared)
    assert done.result is True, done.comment
    assert done.changes == plan.changes, "the apply did what the plan showed"
    log = requests_since(served, start)
    start = len(served.pve.requests)
    again = present(ctx, spec, True, state_id, **declared)
    assert (again.result, again.changes) == (True, {}), again.comment
    assert writes(requests_since(served, start)) == []
    return plan, done, log


# ------------------------------------------------------------------------------------------- pools


def test_pool_create_update_clear_and_destroy(fresh_cluster):
    store = MemoryStore()
    ctx = make_context(static_targets(fresh_cluster), store=store)
    _, _, log = _plan_apply_replan(fresh_cluster, ctx, pool.SPEC, "prod", name="prod", comment="Production")
    assert [(m, p) for m, p, _ in log] == [("GET", "/pools"), ("POST", "/pools"), ("GET", "/pools")]
    assert _form(writes(log)[0][2]) == {"poolid": "prod", "comment": "Production"}

    _, done, log = _plan_apply_replan(fresh_cluster, ctx, pool.SPEC, "prod", name="prod", comment="")
    assert done.changes == {"comment": {"old": "Production", "new": ""}}
    assert [(m, p) for m, p, _ in writes(log)] == [("PUT", "/pools")]
    assert json.loads(writes(log)[0][2]) == {"poolid": "prod", "comment": ""}, (
        "as JSON, so the empty value arrives"
    )

    start = len(fresh_cluster.pve.requests)
    gone = absent(ctx, pool.SPEC, False, "prod", "destroy", name="prod")
    assert gone.result is True, gone.comment
    assert [(m, p) for m, p, _ in writes(requests_since(fresh_cluster, start))] == [("DELETE", "/pools")]
    assert "prod" not in fresh_cluster.pve.pools and store.rows == {}


def test_a_form_cannot_clear_a_pool_comment(fresh_cluster):
    """pve-http-server decode_urlencoded turns ``comment=`` into a key without a value, which update_pool
    reads as not given; fakepve drops blank form values alike. Hence the JSON body above."""
    pve = fresh_cluster.pve
    pve.pools["prod"] = set()
    pve.pool_info["prod"] = {"comment": "Production", "storage": set()}
    token_id, secret = fresh_cluster.seeded.provision_token
    answer = requests.put(
        f"{fresh_cluster.url}/api2/json/pools",
        data={"poolid": "prod", "comment": ""},
        headers={"Authorization": f"PVEAPIToken={token_id}={secret}"},
        verify=fresh_cluster.cafile,
        timeout=10,
    )
    assert answer.status_code == 200
    assert pve.pool_info["prod"]["comment"] == "Production"


def test_pool_not_ours_refused_unless_adopted(fresh_cluster):
    fresh_cluster.pve.pools["lab"] = set()
    fresh_cluster.pve.pool_info["lab"] = {"comment": "hand made", "storage": set()}
    ctx = make_context(static_targets(fresh_cluster))
    start = len(fresh_cluster.pve.requests)
    refused = present(ctx, pool.SPEC, False, "lab", name="lab", comment="hand made")
    assert refused.result is False and "adopt: true" in refused.comment[0]
    adopted = present(ctx, pool.SPEC, False, "lab", name="lab", comment="hand made", adopt=True)
    assert adopted.result is True and adopted.changes == {"ownership": {"old": None, "new": "owned"}}
    assert writes(requests_since(fresh_cluster, start)) == []


def test_pool_malformed_and_failed_reads(fresh_cluster):
    fresh_cluster.pve.pools["odd"] = set()
    fresh_cluster.pve.pool_info["odd"] = {"comment": 42, "storage": set()}  # a number, not text
    fresh_cluster.pve.fail("GET", "/pools", 500, "cfs-lock 'file-user_cfg' error: got lock timeout", times=1)
    ctx = make_context(static_targets(fresh_cluster))
    start = len(fresh_cluster.pve.requests)
    failed = present(ctx, pool.SPEC, False, "x", name="fresh")
    assert failed.result is False and "got lock timeout" in failed.comment[0]
    odd = present(ctx, pool.SPEC, False, "y", name="odd")
    assert odd.result is False and "malformed answer" in odd.comment[0]
    assert writes(requests_since(fresh_cluster, start)) == []


# ------------------------------------------------------------------------------------------- roles


def test_plain_fakepve_cannot_read_back_roles_or_acl_entries(fakepve, fakepve_cafile):
    """Why the suite serves AccessPve: fakepve 0.5.0 synthesises these answers and stores nothing."""
    fakepve.apitokens["root@pam!probe"] = "s3cret-for-a-plain-fake"
    headers = {"Authorization": "PVEAPIToken=root@pam!probe=s3cret-for-a-plain-fake"}
    base = f"{fakepve.url}/api2/json"
    role_answer = requests.get(
        f"{base}/access/roles/NeverCreated", headers=headers, verify=fakepve_cafile, timeout=10
    )
    assert role_answer.status_code == 200, "a role nobody created reads as present"
    put = requests.put(
        f"{base}/access/acl",
        data={"path": "/", "roles": "PVEAuditor", "tokens": "root@pam!probe"},
        headers=headers,
        verify=fakepve_cafile,
        timeout=10,
    )
    assert put.status_code == 200
    listed = requests.get(f"{base}/access/acl", headers=headers, verify=fakepve_cafile, timeout=10).json()[
        "data"
    ]
    assert all(row["path"] != "/" for row in listed), "the entry just written is not listed"


def test_role_create_set_semantics_update_and_destroy(fresh_cluster):
    store = MemoryStore()
    ctx = make_context(static_targets(fresh_cluster), store=store)
    _, _, log = _plan_apply_replan(
        fresh_cluster, ctx, role.SPEC, "read", name=READ_ROLE, privs=list(READ_PRIVS)
    )
    assert [(m, p) for m, p, _ in writes(log)] == [("POST", "/access/roles")]
    assert fresh_cluster.pve.roles[READ_ROLE] == set(READ_PRIVS)

    start = len(fresh_cluster.pve.requests)
    shuffled = present(ctx, role.SPEC, True, "read", name=READ_ROLE, privs=" ; ".join(reversed(READ_PRIVS)))
    assert (shuffled.result, shuffled.changes) == (True, {}), "order and separators are spelling"
    assert writes(requests_since(fresh_cluster, start)) == []

    _, done, log = _plan_apply_replan(
        fresh_cluster, ctx, role.SPEC, "read", name=READ_ROLE, privs=[*READ_PRIVS, "Sys.Syslog"]
    )
    assert done.changes == {
        "privs": {
            "old": ",".join(sorted(READ_PRIVS)),
            "new": ",".join(sorted([*READ_PRIVS, "Sys.Syslog"])),
        }
    }
    assert [(m, p) for m, p, _ in writes(log)] == [("PUT", f"/access/roles/{READ_ROLE}")]
    assert "append" not in _form(writes(log)[0][2]), "the whole set replaces the role's privileges"

    gone = absent(ctx, role.SPEC, False, "read", "destroy", name=READ_ROLE)
    assert gone.result is True, gone.comment
    assert READ_ROLE not in fresh_cluster.pve.roles and store.rows == {}


def test_role_refusals(fresh_cluster):
    fresh_cluster.pve.roles["HandMade"] = {"VM.Audit"}
    ctx = make_context(static_targets(fresh_cluster))
    start = len(fresh_cluster.pve.requests)
    for declared, said in (
        ({"name": "HandMade", "privs": ["VM.Audit"]}, "adopt: true"),
        ({"name": "PVEAdmin", "privs": ["VM.Audit"]}, "built-in role"),
        ({"name": "Mine", "privs": ["VM.Audit", "VM.Teleport"]}, "invalid privilege 'VM.Teleport'"),
        ({"name": "Mine", "privs": ["VM.Audit"], "colour": "red"}, "unknown key(s) colour"),
    ):
        outcome = present(ctx, role.SPEC, False, "x", **declared)
        assert outcome.result is False and said in outcome.comment[0], outcome.comment
    assert writes(requests_since(fresh_cluster, start)) == []
    fresh_cluster.pve.roles["Odd"] = {"not a privilege"}
    odd = present(ctx, role.SPEC, False, "y", name="Odd")
    assert odd.result is False and "malformed answer" in odd.comment[0]


# --------------------------------------------------------------------------------------------- ACL


def test_acl_entries_grant_the_roles_to_the_tokens(fresh_cluster):
    store = MemoryStore()
    ctx = make_context(static_targets(fresh_cluster), store=store)
    assert present(ctx, role.SPEC, False, "r", name=READ_ROLE, privs=list(READ_PRIVS)).result is True
    assert present(
        ctx, role.SPEC, False, "p", name="SaltProxmoxProvision", privs=list(PROVISION_PRIVS)
    ).result
    for state_id, role_id, token in (
        ("read-on-root", READ_ROLE, READ_TOKEN_ID),
        ("provision-on-root", "SaltProxmoxProvision", PROVISION_TOKEN_ID),
    ):
        _, _, log = _plan_apply_replan(
            fresh_cluster, ctx, acl.SPEC, state_id, path="/", role=role_id, token=token
        )
        assert [(m, p) for m, p, _ in log] == [
            ("GET", "/access/acl"),
            ("GET", "/access/permissions"),
            ("PUT", "/access/acl"),
            ("GET", "/access/acl"),
        ], "absence proven (Sys.Audit on /access) before the write"
        assert _form(writes(log)[0][2]) == {"path": "/", "roles": role_id, "tokens": token, "propagate": "1"}
    assert fresh_cluster.pve.acl_entries == {
        ("/", "token", READ_TOKEN_ID, READ_ROLE): 1,
        ("/", "token", PROVISION_TOKEN_ID, "SaltProxmoxProvision"): 1,
    }

    _, done, log = _plan_apply_replan(
        fresh_cluster,
        ctx,
        acl.SPEC,
        "read-on-root",
        path="/",
        role=READ_ROLE,
        token=READ_TOKEN_ID,
        propagate=False,
    )
    assert done.changes == {"propagate": {"old": True, "new": False}}
    assert _form(writes(log)[0][2])["propagate"] == "0"

    gone = absent(
        ctx, acl.SPEC, False, "read-on-root", "destroy", path="/", role=READ_ROLE, token=READ_TOKEN_ID
    )
    assert gone.result is True, gone.comment
    assert ("/", "token", READ_TOKEN_ID, READ_ROLE) not in fresh_cluster.pve.acl_entries
    assert row_key(TARGET, "acl", f"/:token:{READ_TOKEN_ID}:{READ_ROLE}") not in store.rows


def test_acl_absence_is_not_proven_without_sys_audit_on_access(fresh_cluster):
    pve = fresh_cluster.pve
    pve.apitokens["narrow@pve!plan"] = "narrow-secret-0123456789"
    pve.grant("narrow@pve!plan", "/vms", "VM.Audit")
    targets = static_targets(fresh_cluster)
    targets[TARGET]["credentials"]["read"] = {
        "token_id": "narrow@pve!plan",
        "secret": "narrow-secret-0123456789",
    }
    ctx = make_context(targets)
    start = len(pve.requests)
    outcome = present(ctx, acl.SPEC, False, "x", path="/vms", role="PVEAuditor", user="root@pam")
    assert outcome.result is False and "Sys.Audit on /access" in outcome.comment[0]
    assert writes(requests_since(fresh_cluster, start)) == []


def test_acl_not_ours_refused_unless_adopted(fresh_cluster):
    fresh_cluster.pve.acl_entries[("/pool/lab", "token", READ_TOKEN_ID, "PVEAuditor")] = 1
    ctx = make_context(static_targets(fresh_cluster))
    start = len(fresh_cluster.pve.requests)
    declared = {"path": "/pool/lab/", "role": "PVEAuditor", "token": READ_TOKEN_ID}
    refused = present(ctx, acl.SPEC, False, "x", **declared)
    assert refused.result is False and "adopt: true" in refused.comment[0]
    adopted = present(ctx, acl.SPEC, False, "x", adopt=True, **declared)
    assert adopted.result is True and adopted.changes == {"ownership": {"old": None, "new": "owned"}}
    assert writes(requests_since(fresh_cluster, start)) == []


def test_acl_malformed_listing_is_an_error(fresh_cluster):
    fresh_cluster.pve.acl_entries[("/", "robot", "r2d2", "PVEAuditor")] = 1
    ctx = make_context(static_targets(fresh_cluster))
    start = len(fresh_cluster.pve.requests)
    outcome = present(ctx, acl.SPEC, False, "x", path="/", role="PVEAuditor", token=READ_TOKEN_ID)
    assert outcome.result is False and "malformed answer" in outcome.comment[0]
    assert writes(requests_since(fresh_cluster, start)) == []
