"""Users, groups, API tokens and realms through the simple lifecycle, against the served fake cluster
(``tests.support.usercfg.UserCfgPve``, written from pve-access-control) and a real OpenBao dev server.
Each test counts the requests the fake saw."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, unquote

import pytest
import requests

from salt_proxmox.access import group, realm, token, user
from salt_proxmox.ownership.stores import MemoryStore
from salt_proxmox.simple.lifecycle import absent, present
from tests.faults.harness import debug_log, leaks
from tests.support.guests import make_context, requests_since, static_targets, writes

STORE = "secret/data/salt-proxmox/test-token"


def _form(body: bytes | None) -> dict[str, str]:
    if not body:
        return {}
    text = body.decode()
    if text.startswith("{"):
        return {k: str(v) for k, v in json.loads(text).items()}
    return {key: values[0] for key, values in parse_qs(text, keep_blank_values=True).items()}


def _lines(requests_log) -> list[tuple[str, str]]:
    return [(method, unquote(path)) for method, path, _ in writes(requests_log)]


def _bao(openbao) -> dict:
    return {"url": openbao.url, "auth": {"method": "token", "token": openbao.root_token}}


def _stored(openbao, path: str = STORE) -> dict:
    return openbao.client().read(path)["data"]["data"]


def _works(cluster, full: str, secret: str) -> bool:
    """Whether PVE takes ``full``'s secret: ``GET /version`` with it (any authenticated caller may)."""
    answer = requests.get(
        f"{cluster.url}/api2/json/version",
        headers={"Authorization": f"PVEAPIToken={full}={secret}"},
        verify=cluster.cafile,
        timeout=10,
    )
    return answer.status_code == 200


# ----------------------------------------------------------------------------------------- tokens


def test_a_token_is_created_its_secret_in_openbao_and_in_no_return_log_row_or_cache(fresh_cluster, openbao):
    """generate_token answers the secret once (pve-access-control API2/User.pm): it is stored at
    ``store`` ({token_id, secret}, the pair the credential broker reads), works against PVE, and reaches
    no return, log line, ownership row or run cache."""
    cache, store = {}, MemoryStore()
    ctx = make_context(static_targets(fresh_cluster), openbao=_bao(openbao), cache=cache, store=store)
    full = "salt-read@pve!ci"
    declared = {"name": full, "privsep": 1, "comment": "CI", "store": STORE, "secret_serial": 1}
    with debug_log() as lines:
        plan = present(ctx, token.SPEC, True, full, **declared)
        assert plan.result is None, plan.comment
        assert any(f"stored at OpenBao {STORE}" in line for line in plan.comment)
        start = len(fresh_cluster.pve.requests)
        done = present(ctx, token.SPEC, False, full, **declared)
        assert done.result is True, done.comment
        again = present(ctx, token.SPEC, True, full, **declared)
    assert (again.result, again.changes) == (True, {}), again.comment
    assert _lines(requests_since(fresh_cluster, start)) == [("POST", "/access/users/salt-read@pve/token/ci")]
    pair = _stored(openbao)
    assert pair["token_id"] == full and _works(fresh_cluster, full, pair["secret"])
    assert pair["secret"] == fresh_cluster.pve.apitokens[full]
    places = {
        "returns": repr([(o.comment, o.changes) for o in (plan, done, again)]),
        "log": "\n".join(lines),
        "rows": repr(store.rows),
        "cache": repr(cache) + repr(ctx.memo),
    }
    assert leaks(places, [pair["secret"]]) == []


def test_the_read_credential_sees_a_token_through_its_user(fresh_cluster, openbao):
    """The read token holds Sys.Audit, not User.Modify: read_user lists the user's tokens, so the plan
    reads GET /access/users/<userid> and never the token's own endpoints (token_index, read_token)."""
    ctx = make_context(static_targets(fresh_cluster), openbao=_bao(openbao))
    start = len(fresh_cluster.pve.requests)
    plan = present(ctx, token.SPEC, True, "t", name="salt-read@pve!plan", store=STORE, adopt=True)
    assert plan.result is None and "secret_serial" not in plan.changes, plan.comment
    gets = [unquote(p) for m, p, _ in requests_since(fresh_cluster, start) if m == "GET"]
    assert "/access/users/salt-read@pve" in gets
    assert not [p for p in gets if "/token" in p]
    # and PVE does refuse the read token the token's own endpoint (userid-param self / User.Modify):
    read_id, read_secret = fresh_cluster.seeded.read_token
    answer = requests.get(
        f"{fresh_cluster.url}/api2/json/access/users/salt-provision@pve/token/apply",
        headers={"Authorization": f"PVEAPIToken={read_id}={read_secret}"},
        verify=fresh_cluster.cafile,
        timeout=10,
    )
    assert answer.status_code == 403


def _acl(pve, full: str) -> set:
    return {key for key in pve.acl_entries if key[2] == full}


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        # pve-access-control 9.1.0 (debian/changelog): update_token_info takes regenerate, ACLs kept.
        ("9.1.1", [("PUT", "/access/users/salt-read@pve/token/ci")]),
        # Before it: delete, create anew, restore the token's ACL entries.
        (
            "9.0.7",
            [
                ("DELETE", "/access/users/salt-read@pve/token/ci"),
                ("POST", "/access/users/salt-read@pve/token/ci"),
                ("PUT", "/access/acl"),
                ("PUT", "/access/acl"),
            ],
        ),
    ],
)
def test_a_new_secret_serial_rotates_the_secret_and_keeps_its_acl_entries(
    fresh_cluster, openbao, version, expected
):
    pve = fresh_cluster.pve
    pve.access_control_version = version
    ctx = make_context(static_targets(fresh_cluster), openbao=_bao(openbao))
    full = "salt-read@pve!ci"
    declared = {"name": full, "privsep": 1, "store": STORE, "secret_serial": 1}
    assert present(ctx, token.SPEC, False, full, **declared).result is True
    old = _stored(openbao)["secret"]
    pve.acl_entries[("/vms", "token", full, "PVEAuditor")] = 1
    pve.acl_entries[("/storage", "token", full, "PVEAuditor")] = 0
    before = _acl(pve, full)
    plan = present(ctx, token.SPEC, True, full, **{**declared, "secret_serial": 2})
    assert plan.result is None and plan.changes == {"secret_serial": {"old": 1, "new": 2}}, plan.comment
    said = " ".join(plan.comment)
    assert ("in place" in said) if version == "9.1.1" else ("restores its 2 ACL entries" in said), said
    start = len(pve.requests)
    done = present(ctx, token.SPEC, False, full, **{**declared, "secret_serial": 2})
    assert done.result is True, done.comment
    assert _lines(requests_since(fresh_cluster, start)) == expected
    new = _stored(openbao)["secret"]
    assert new != old and _works(fresh_cluster, full, new) and not _works(fresh_cluster, full, old)
    assert _acl(pve, full) == before
    again = present(ctx, token.SPEC, True, full, **{**declared, "secret_serial": 2})
    assert (again.result, again.changes) == (True, {}), again.comment


def test_a_store_openbao_refuses_is_refused_before_pve_draws_a_secret(fresh_cluster, openbao):
    """sys/capabilities-self says the token may not write there: nothing is sent to PVE."""
    client = openbao.client()
    client.sys.create_or_update_policy(
        "salt-proxmox-test-read-only", 'path "secret/*" { capabilities = ["read"] }'
    )
    limited = client.auth.token.create(policies=["salt-proxmox-test-read-only"], ttl="10m")["auth"][
        "client_token"
    ]
    bao = {"url": openbao.url, "auth": {"method": "token", "token": limited}}
    ctx = make_context(static_targets(fresh_cluster), openbao=bao)
    start = len(fresh_cluster.pve.requests)
    try:
        done = present(ctx, token.SPEC, False, "t", name="salt-read@pve!ci", store=STORE)
    finally:
        # The session's OpenBao is shared: an export run later must not find this test's policy.
        client.sys.delete_policy("salt-proxmox-test-read-only")
    assert done.result is False and "may not write" in " ".join(done.comment), done.comment
    assert writes(requests_since(fresh_cluster, start)) == []
    assert "salt-read@pve!ci" not in fresh_cluster.pve.apitokens


def test_a_secret_that_cannot_be_stored_is_uncertain_with_what_to_check(fresh_cluster, openbao, monkeypatch):
    ctx = make_context(static_targets(fresh_cluster), openbao=_bao(openbao))
    client = ctx.broker.openbao_client()

    def refuse(path, data=None, **_):
        raise requests.exceptions.ConnectionError("refused")

    monkeypatch.setattr(client, "write_data", refuse)
    done = present(ctx, token.SPEC, False, "t", name="salt-read@pve!ci", store=STORE)
    text = " ".join(done.comment)
    assert done.result is False and "PVE created the token" in text and "raise secret_serial" in text, text
    assert "Nothing was written" not in text
    assert "salt-read@pve!ci" in fresh_cluster.pve.apitokens
    assert fresh_cluster.pve.apitokens["salt-read@pve!ci"] not in text


def test_a_token_of_a_user_neither_there_nor_declared_is_refused_at_plan(fresh_cluster, openbao):
    ctx = make_context(static_targets(fresh_cluster), openbao=_bao(openbao))
    plan = present(ctx, token.SPEC, True, "t", name="nobody@pve!ci", store=STORE)
    assert plan.result is False and "no such user ('nobody@pve')" in " ".join(plan.comment), plan.comment
    # declared earlier in the run: not refused (the formula makes the token require its user)
    assert present(ctx, user.SPEC, True, "u", name="nobody@pve").result is None
    assert present(ctx, token.SPEC, True, "t", name="nobody@pve!ci", store=STORE).result is None


# ------------------------------------------------------------------------------------------ users


def test_a_users_password_is_sent_at_create_only_and_never_compared_or_shown(fresh_cluster):
    pve, store = fresh_cluster.pve, MemoryStore()
    ctx = make_context(static_targets(fresh_cluster), store=store)
    declared = {"name": "ci@pve", "email": "ci@example.org", "password_serial": 1}
    secret = "correct-horse-battery"
    start = len(pve.requests)
    done = present(ctx, user.SPEC, False, "u", **declared, password=secret)
    assert done.result is True, done.comment
    (write,) = writes(requests_since(fresh_cluster, start))
    assert "password" in _form(write[2]) and pve.passwords["ci@pve"] == secret
    # another password in pillar, same serial: nothing to do (a password is never read or compared)
    start = len(pve.requests)
    again = present(ctx, user.SPEC, False, "u", **declared, password="another-password-1")
    assert (again.result, again.changes) == (True, {}), again.comment
    assert writes(requests_since(fresh_cluster, start)) == []
    # a new serial: PVE lets no API token change a password (change_password: allowtoken => 0)
    refused = present(ctx, user.SPEC, True, "u", **{**declared, "password_serial": 2}, password="another-1")
    assert refused.result is False and "pveum passwd ci@pve" in " ".join(refused.comment)
    for outcome in (done, again, refused):
        assert secret not in repr((outcome.comment, outcome.changes))
    assert secret not in repr(store.rows)


def test_root_at_pam_and_a_password_outside_the_pve_realm_are_refused_by_name(fresh_cluster):
    ctx = make_context(static_targets(fresh_cluster))
    root = present(ctx, user.SPEC, True, "r", name="root@pam")
    assert root.result is False and "root@pam" in " ".join(root.comment)
    gone = absent(ctx, user.SPEC, True, "r", name="root@pam", removal="destroy")
    assert gone.result is False and "root@pam" in " ".join(gone.comment)
    pam = present(ctx, user.SPEC, True, "p", name="ops@pam", password="long-enough-1")
    assert pam.result is False and "password: a user of realm pam" in " ".join(pam.comment)
    assert "long-enough-1" not in " ".join(pam.comment)


def test_groups_are_a_set_and_a_missing_group_is_refused_unless_declared(fresh_cluster):
    ctx = make_context(static_targets(fresh_cluster))
    refused = present(ctx, user.SPEC, True, "u", name="ci@pve", groups=["ops", "automation"])
    assert refused.result is False and "no such group 'automation'" in " ".join(refused.comment)
    for name in ("automation", "ops"):
        assert present(ctx, group.SPEC, False, name, name=name).result is True
    assert present(ctx, user.SPEC, False, "u", name="ci@pve", groups=["ops", "automation"]).result is True
    assert fresh_cluster.pve.user_cfg["ci@pve"]["groups"] == {"ops", "automation"}
    again = present(ctx, user.SPEC, True, "u", name="ci@pve", groups="automation,ops")
    assert (again.result, again.changes) == (True, {}), again.comment


def test_a_group_never_compares_its_members(fresh_cluster):
    """Membership is the user's (update_user): a group with members is as declared by its comment."""
    ctx = make_context(static_targets(fresh_cluster))
    assert present(ctx, group.SPEC, False, "g", name="automation", comment="CI").result is True
    assert present(ctx, user.SPEC, False, "u", name="ci@pve", groups=["automation"]).result is True
    start = len(fresh_cluster.pve.requests)
    again = present(ctx, group.SPEC, False, "g", name="automation", comment="CI")
    assert (again.result, again.changes) == (True, {}), again.comment
    assert writes(requests_since(fresh_cluster, start)) == []


# ----------------------------------------------------------------------------------------- realms


LDAP = {
    "name": "corp",
    "type": "ldap",
    "server1": "ldap.example.org",
    "base_dn": "dc=example,dc=org",
    "user_attr": "uid",
    "bind_dn": "cn=pve,dc=example,dc=org",
    "sync-defaults-options": "full=1,enable-new=1,scope=users",
    "bind_password_serial": 1,
}


def test_a_realms_bind_password_is_sent_at_create_and_on_a_new_serial_and_never_read_back(fresh_cluster):
    pve, store = fresh_cluster.pve, MemoryStore()
    ctx = make_context(static_targets(fresh_cluster), store=store)
    secret = "b1nd-Secret"
    start = len(pve.requests)
    done = present(ctx, realm.SPEC, False, "corp", **LDAP, bind_password=secret)
    assert done.result is True, done.comment
    assert "password" in _form(writes(requests_since(fresh_cluster, start))[0][2])
    assert pve.realm_passwords["corp"] == secret and "password" not in pve.domains["corp"]
    # PVE prints sync-defaults-options its own way (Domains.pm $map_sync_default_options): no drift
    again = present(ctx, realm.SPEC, True, "corp", **LDAP, bind_password="another")
    assert (again.result, again.changes) == (True, {}), again.comment
    start = len(pve.requests)
    rotated = present(
        ctx, realm.SPEC, False, "corp", **{**LDAP, "bind_password_serial": 2}, bind_password="n3w"
    )
    assert rotated.result is True and rotated.changes == {"bind_password_serial": {"old": 1, "new": 2}}
    assert "password" in _form(writes(requests_since(fresh_cluster, start))[0][2])
    assert pve.realm_passwords["corp"] == "n3w"
    for outcome in (done, again, rotated):
        assert secret not in repr((outcome.comment, outcome.changes)) and "n3w" not in repr(outcome.comment)
    assert secret not in repr(store.rows)


def test_an_openid_client_key_pve_returns_is_kept_out_of_every_value(fresh_cluster):
    """OpenId.pm keeps client-key in domains.cfg, and Domains.pm read returns it."""
    ctx = make_context(static_targets(fresh_cluster))
    declared = {"name": "sso", "type": "openid", "issuer-url": "https://id.example.org", "client-id": "pve"}
    done = present(ctx, realm.SPEC, False, "sso", **declared, **{"client-key": "k3y-Secret"})
    assert done.result is True and fresh_cluster.pve.domains["sso"]["client-key"] == "k3y-Secret"
    live = present(ctx, realm.SPEC, True, "sso", **declared, **{"client-key": "k3y-Secret"})
    assert (live.result, live.changes) == (True, {})
    assert "k3y-Secret" not in repr((done.comment, done.changes, live.comment, ctx.memo))


def test_pam_and_pve_are_never_declared_and_type_is_identity(fresh_cluster):
    ctx = make_context(static_targets(fresh_cluster))
    for name in ("pam", "pve"):
        gone = absent(ctx, realm.SPEC, True, name, name=name, removal="destroy")
        assert gone.result is False and "built-in realm" in " ".join(gone.comment)
    assert present(ctx, realm.SPEC, False, "corp", **{**LDAP, "bind_password_serial": None}).result is True
    ad = present(ctx, realm.SPEC, True, "corp", name="corp", type="ad", server1="dc1", domain="example.org")
    assert ad.result is False and "type is its identity" in " ".join(ad.comment)


def test_a_realm_sync_is_ad_hoc_and_a_dry_run_writes_nothing(fresh_cluster):
    ctx = make_context(static_targets(fresh_cluster))
    assert present(ctx, realm.SPEC, False, "corp", **{**LDAP, "bind_password_serial": None}).result is True
    assert fresh_cluster.pve.syncs == [], "a plan or an apply never syncs"
    found = realm.sync(ctx, "corp", dry_run=True, scope="users")
    assert found["dry_run"] is True and found["upid"].startswith("UPID:")
    assert fresh_cluster.pve.syncs == [{"realm": "corp", "dry-run": 1}]


def test_sync_defaults_options_in_pves_spelling():
    """Domains.pm $map_sync_default_options: full/purge become remove-vanished and are dropped."""
    assert (
        realm.sync_options("full=1,purge=1,scope=both") == "remove-vanished=entry;properties;acl,scope=both"
    )
    assert realm.sync_options("scope=users,enable-new=yes") == "enable-new=1,scope=users"
    with pytest.raises(ValueError, match="not a realm sync option"):
        realm.sync_options("scope=users,colour=red")


def test_a_rotation_logs_no_secret_at_debug(fresh_cluster, openbao):
    ctx = make_context(static_targets(fresh_cluster), openbao=_bao(openbao))
    declared = {"name": "salt-read@pve!log", "store": STORE, "secret_serial": 1}
    with debug_log() as lines:
        assert present(ctx, token.SPEC, False, "t", **declared).result is True
        first = fresh_cluster.pve.apitokens["salt-read@pve!log"]
        assert present(ctx, token.SPEC, False, "t", **{**declared, "secret_serial": 2}).result is True
    second = fresh_cluster.pve.apitokens["salt-read@pve!log"]
    assert leaks({"log": "\n".join(lines)}, [first, second]) == []


def test_an_acl_entry_naming_a_user_group_or_token_the_run_creates_is_not_refused(fresh_cluster, openbao):
    """update_acl refuses a missing user, group or token (API2/ACL.pm); one a create earlier in the run
    makes is not missing by the time the entry is written."""
    from salt_proxmox.simple import acl

    ctx = make_context(static_targets(fresh_cluster), openbao=_bao(openbao))
    entry = {"path": "/vms", "role": "PVEAuditor"}
    refused = present(ctx, acl.SPEC, True, "a", user="ci@pve", **entry)
    assert refused.result is False and "user 'ci@pve' does not exist" in " ".join(refused.comment)
    assert present(ctx, user.SPEC, True, "u", name="ci@pve").result is None
    assert present(ctx, group.SPEC, True, "g", name="automation").result is None
    assert present(ctx, token.SPEC, True, "t", name="ci@pve!deploy", store=STORE).result is None
    for kind, ugid in (("user", "ci@pve"), ("group", "automation"), ("token", "ci@pve!deploy")):
        plan = present(ctx, acl.SPEC, True, kind, **{kind: ugid}, **entry)
        assert plan.result is None, plan.comment
