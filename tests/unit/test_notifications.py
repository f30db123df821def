"""Pure rules of notification endpoints and matchers (salt_proxmox.datacenter.notifications, .matchers),
each beside its pve-manager (``PVE/API2/Cluster/Notifications.pm``) or proxmox-notify (proxmox-rs
``proxmox-notify/src``) source."""

from __future__ import annotations

import base64
from types import SimpleNamespace

import pytest

from salt_proxmox.datacenter import matchers, notifications
from salt_proxmox.errors import DeclarationError, Refused
from salt_proxmox.pve.facts import Release
from salt_proxmox.simple.spec import expect, remember

PASSWORD = "smtp-password-never-shown"


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _endpoint(**options):
    return notifications.declare("sid", "lab", **options)


def _smtp(**options):
    return _endpoint(
        name="ops-mail",
        type="smtp",
        server="mail.example.org",
        **{"from-address": "pve@example.org"},
        mailto=["ops@example.org"],
        **options,
    )


def _matcher(**options):
    return matchers.declare("sid", "lab", name="backups", **options)


def _ctx():
    return SimpleNamespace(memo={}, target=SimpleNamespace(name="lab"))


@pytest.fixture
def rows(monkeypatch):
    """The run's notification listings (``GET /cluster/notifications/targets`` and ``…/matchers``)."""
    found = {
        notifications.TARGETS: [{"name": "mail-to-root", "type": "sendmail", "origin": "builtin"}],
        notifications.MATCHERS: [
            {"name": "default-matcher", "target": ["mail-to-root"], "origin": "builtin"}
        ],
    }
    monkeypatch.setattr(notifications, "listing", lambda ctx, path, what: found[path])
    return found


def test_mail_recipients_are_sets_and_one_is_required():
    # Notifications.pm mailto/mailto-user are arrays; proxmox-notify api/sendmail.rs add_endpoint: "must at
    # least provide one recipient, either in mailto or in mailto-user".
    decl = _endpoint(name="ops", type="sendmail", mailto=["b@example.org", "a@example.org", "a@example.org"])
    live = notifications.parse({"name": "ops", "mailto": ["a@example.org", "b@example.org"]}, decl)
    assert decl.values["mailto"] == ["a@example.org", "b@example.org"]
    assert notifications.SPEC.differences(live, decl) == {}
    with pytest.raises(DeclarationError, match="must at least provide one recipient"):
        _endpoint(name="ops", type="sendmail", author="PVE")


def test_pve_s_defaults_are_no_drift_and_a_cleared_key_is_deleted():
    # api/sendmail.rs update_endpoint: DeleteableSendmailProperty drops the key (disable false by default).
    decl = _endpoint(name="ops", type="sendmail", mailto=["a@example.org"], comment=None, disable=False)
    live = notifications.parse({"name": "ops", "mailto": ["a@example.org"], "comment": "old"}, decl)
    call = notifications.update(decl, live)
    assert call.form == {"delete": ["comment"]} and call.json
    clean = notifications.parse({"name": "ops", "mailto": ["a@example.org"]}, decl)
    assert notifications.update(decl, clean) is None


def test_smtp_mode_is_never_deleted_and_the_port_follows_it():
    # DeleteableSmtpProperty has no mode: going back to tls is written as mode=tls; endpoints/smtp.rs send:
    # port unwrap_or 25 insecure, 587 starttls, 465 tls.
    decl = _smtp(mode=None, port=465)
    live = notifications.parse(
        {
            "name": "ops-mail",
            "server": "mail.example.org",
            "mode": "starttls",
            "from-address": "pve@example.org",
            "mailto": ["ops@example.org"],
        },
        decl,
    )
    assert live["port"] == 587
    call = notifications.update(decl, live)
    assert call.form == {"mode": "tls", "delete": ["port"]}
    starttls = _smtp(mode="starttls", port=None)
    assert starttls.values["port"] == 587
    assert notifications.SPEC.differences(live, starttls) == {}


def test_keys_of_another_type_and_bad_values_are_refused_by_key():
    with pytest.raises(DeclarationError, match="url: not a key of a sendmail endpoint"):
        _endpoint(name="ops", type="sendmail", mailto=["a@example.org"], url="https://h")
    with pytest.raises(DeclarationError, match="type: 'pager' is not a notification endpoint type"):
        _endpoint(name="ops", type="pager")
    with pytest.raises(DeclarationError, match="server: a gotify endpoint requires it"):
        _endpoint(name="push", type="gotify")
    with pytest.raises(DeclarationError, match="method: a webhook endpoint requires it"):
        _endpoint(name="hook", type="webhook", url="https://h.example.org/x")
    with pytest.raises(DeclarationError, match="url: expected an http"):
        _endpoint(name="hook", type="webhook", url="ftp://h", method="post")
    # Notifications.pm name: pve-configid; proxmox-notify schema.rs ENTITY_NAME_SCHEMA: at most 32.
    with pytest.raises(DeclarationError, match="name: invalid name"):
        _endpoint(name="x" * 33, type="sendmail", mailto=["a@example.org"])


def test_webhook_headers_and_body_compare_decoded():
    # endpoints/webhook.rs: header entries name=<name>,value=<base64>, body base64 (base64_decode before
    # rendering): declared as text, compared by meaning whatever the padding PVE keeps.
    decl = _endpoint(
        name="hook",
        type="webhook",
        url="https://hooks.example.org/pve",
        method="post",
        header={"Content-Type": "application/json"},
        body='{"text": "{{ title }}"}',
    )
    live = notifications.parse(
        {
            "name": "hook",
            "url": "https://hooks.example.org/pve",
            "method": "post",
            "header": [f"name=Content-Type,value={_b64('application/json')}"],
            "body": _b64('{"text": "{{ title }}"}'),
        },
        decl,
    )
    assert notifications.SPEC.differences(live, decl) == {}
    form = notifications.create(decl).form
    assert form["header"] == [f"name=Content-Type,value={_b64('application/json')}"]
    assert form["body"] == _b64('{"text": "{{ title }}"}')
    # The ownership row keeps the canonical list; it declares the same headers again.
    again = notifications.declare("sid", "lab", **decl.stored())
    assert again.values == decl.values


def test_secrets_are_sent_at_create_and_on_a_serial_bump_only_and_never_shown():
    # Notifications.pm: password/token/secret go to priv/notifications.cfg; a GET never shows them.
    decl = _smtp(password=PASSWORD, username="pve", secret_serial=2)
    assert PASSWORD not in repr(decl) and PASSWORD not in str(decl.stored())
    assert notifications.create(decl).form["password"] == PASSWORD
    live = {
        **notifications.parse({"name": "ops-mail", "server": "mail.example.org"}, decl),
        "secret_serial": 2,
    }
    live.update({"mailto": ["ops@example.org"], "from-address": "pve@example.org", "username": "pve"})
    assert notifications.update(decl, live) is None
    assert notifications.update(decl, {**live, "secret_serial": 1}).form == {"password": PASSWORD}
    # A webhook's secrets: {name: value} sent as name=<name>,value=<base64> (KeyAndBase64Val).
    hook = _endpoint(
        name="hook", type="webhook", url="https://h.example.org/x", method="post", secret={"token": "s3cret"}
    )
    assert notifications.create(hook).form["secret"] == [f"name=token,value={_b64('s3cret')}"]
    with pytest.raises(DeclarationError, match="secret_serial: the declaration holds no secret"):
        _smtp(secret_serial=1)


def test_a_gotify_create_needs_its_token(monkeypatch, rows):
    # Notifications.pm $gotify_properties: token is not optional for create_gotify_endpoint.
    decl = _endpoint(name="push", type="gotify", server="https://gotify.example.org")
    (refusal,) = notifications.refusals(_ctx(), decl, "create", None)
    assert refusal.startswith("token: a gotify endpoint is created with its token")
    with_token = _endpoint(name="push", type="gotify", server="https://gotify.example.org", token="t")
    assert notifications.refusals(_ctx(), with_token, "create", None) == []
    assert notifications.refusals(_ctx(), decl, "update", {"origin": "user-created"}) == []


def test_a_webhook_is_refused_before_pve_8_3(monkeypatch):
    # pve-manager 8.2.9 (released with PVE 8.3): "api: add routes for webhook notification endpoints"; before,
    # even the read has no path, so the refusal comes before it (for_cluster).
    decl = _endpoint(name="hook", type="webhook", url="https://h.example.org/x", method="post")
    monkeypatch.setattr(notifications, "release", lambda ctx: Release("8.2"))
    with pytest.raises(Refused, match=r"type: the cluster runs PVE 8\.2, which has no webhook"):
        notifications.SPEC.on(_ctx(), decl)
    sendmail = _endpoint(name="ops", type="sendmail", mailto=["a@example.org"])
    assert notifications.SPEC.on(_ctx(), sendmail) is notifications.SPEC
    monkeypatch.setattr(notifications, "release", lambda ctx: Release("8.3"))
    assert notifications.SPEC.on(_ctx(), decl) is notifications.SPEC


def test_a_name_another_entity_holds_is_refused_at_create(rows):
    # api/mod.rs ensure_unique: one namespace for endpoints and matchers.
    rows[notifications.TARGETS].append({"name": "ops", "type": "gotify", "origin": "user-created"})
    decl = _endpoint(name="ops", type="sendmail", mailto=["a@example.org"])
    (refusal,) = notifications.refusals(_ctx(), decl, "create", None)
    assert "held by a gotify endpoint" in refusal and "Cannot create 'ops'" in refusal
    (refusal,) = matchers.refusals(_ctx(), matchers.declare("sid", "lab", name="ops"), "create", None)
    assert "held by a gotify endpoint" in refusal
    clash = _endpoint(name="default-matcher", type="sendmail", mailto=["a@example.org"])
    (refusal,) = notifications.refusals(_ctx(), clash, "create", None)
    assert "held by a matcher" in refusal


def test_the_built_ins_are_never_deleted(rows):
    # proxmox-notify api/mod.rs ensure_safe_to_delete: "Built-ins are never actually removed, only reset".
    root = notifications.identify("sid", "lab", name="mail-to-root", type="sendmail")
    (refusal,) = notifications.refusals(_ctx(), root, "delete", {"origin": "modified-builtin"})
    assert "built into PVE (origin modified-builtin)" in refusal
    default = matchers.identify("sid", "lab", name="default-matcher")
    (refusal,) = matchers.refusals(_ctx(), default, "delete", {"origin": "builtin"})
    assert "built into PVE" in refusal


def test_origin_is_never_drift():
    # lib.rs Config::new: a built-in section that differs from DEFAULT_CONFIG reads modified-builtin.
    decl = _endpoint(name="mail-to-root", type="sendmail", **{"mailto-user": ["root@pam"]}, adopt=True)
    live = notifications.parse(
        {"name": "mail-to-root", "mailto-user": ["root@pam"], "origin": "modified-builtin"}, decl
    )
    assert notifications.SPEC.differences(live, decl) == {}


def test_an_endpoint_a_matcher_targets_is_never_deleted(rows):
    # api/mod.rs ensure_safe_to_delete: "cannot delete '<name>', referenced by: <matchers>".
    rows[notifications.TARGETS].append({"name": "ops", "type": "sendmail", "origin": "user-created"})
    rows[notifications.MATCHERS].append({"name": "live-one", "target": ["ops"], "origin": "user-created"})
    decl = notifications.identify("sid", "lab", name="ops", type="sendmail")
    ctx = _ctx()
    (refusal,) = notifications.refusals(ctx, decl, "delete", {"origin": "user-created"})
    assert "matcher(s) live-one" in refusal and "referenced by: live-one" in refusal
    # This run changes live-one to target another endpoint, and declares one that targets ops.
    remember(ctx, matchers.FAMILY, "live-one", {"targets": ["mail-to-root"]})
    remember(ctx, matchers.FAMILY, "declared-one", {"targets": ["ops"]})
    (refusal,) = notifications.refusals(ctx, decl, "delete", {"origin": "user-created"})
    assert "matcher(s) declared-one" in refusal
    remember(ctx, matchers.FAMILY, "declared-one", {"targets": []})
    assert notifications.refusals(ctx, decl, "delete", {"origin": "user-created"}) == []


def test_a_matcher_target_must_exist_or_be_declared_by_this_run(rows):
    # api/mod.rs ensure_endpoints_exist: "endpoint '<name>' does not exist" (add_matcher, update_matcher).
    decl = _matcher(targets=["mail-to-root", "pager"])
    ctx = _ctx()
    (refusal,) = matchers.refusals(ctx, decl, "create", None)
    assert (
        refusal.startswith("targets: pager: no such notification endpoint")
        and "'pager' does not exist" in refusal
    )
    expect(ctx, notifications.FAMILY, "pager")
    assert matchers.refusals(ctx, decl, "create", None) == []


def test_match_entries_compare_by_meaning():
    # matcher.rs FieldMatcher::from_str: exact values split on ',' and trimmed, any of them matches;
    # SeverityMatcher: a comma list; entries combine by mode, so order never matters.
    decl = _matcher(
        **{
            "match-field": ["exact:type=vzdump, replication", "regex:hostname=^pve\\d$"],
            "match-severity": ["error,warning"],
            "targets": ["ops-b", "ops-a"],
        }
    )
    live = matchers.parse(
        {
            "name": "backups",
            "match-field": ["regex:hostname=^pve\\d$", "exact:type=replication,vzdump"],
            "match-severity": ["warning,error"],
            "target": ["ops-a", "ops-b"],
            "mode": "all",
            "origin": "user-created",
        },
        decl,
    )
    assert matchers.SPEC.differences(live, decl) == {}
    assert decl.values["targets"] == ["ops-a", "ops-b"]


@pytest.mark.parametrize(
    ("options", "key", "words"),
    [
        ({"match-field": ["type=vzdump"]}, "match-field", "invalid match-field statement"),
        ({"match-field": ["regex:type=("]}, "match-field", "invalid regex"),
        ({"match-severity": ["fatal"]}, "match-severity", "fatal: not a severity"),
        ({"mode": "some"}, "mode", "mode"),
        ({"invert-match": "maybe"}, "invert-match", "invert-match"),
        ({"targets": ["-bad"]}, "targets", "invalid name"),
        ({"target_list": ["a"]}, "target_list", "unknown key"),
    ],
)
def test_bad_matcher_declarations_are_refused_by_key(options, key, words):
    with pytest.raises(DeclarationError) as caught:
        _matcher(**options)
    assert str(caught.value).startswith(f"{key}:") and words in str(caught.value)


def test_a_matcher_writes_pve_s_target_and_deletes_defaults():
    # Notifications.pm update_matcher: delete list; MatchModeOperator default all.
    decl = _matcher(targets=["mail-to-root"], mode="all", comment=None)
    live = matchers.parse({"name": "backups", "target": ["ops"], "mode": "any", "comment": "x"}, decl)
    call = matchers.update(decl, live)
    assert call.form == {"target": ["mail-to-root"], "delete": ["comment", "mode"]}
    create = matchers.create(_matcher(targets=["mail-to-root"], mode="any"))
    assert create.form == {"name": "backups", "target": ["mail-to-root"], "mode": "any"}


def test_the_export_leaves_out_pristine_built_ins_and_secrets():
    # Like a role PVE ships: an unmodified built-in is PVE's, a modified one is exported to adopt.
    assert (
        notifications.export_name({"name": "mail-to-root", "type": "sendmail", "origin": "builtin"}) is None
    )
    assert notifications.export_name(
        {"name": "mail-to-root", "type": "sendmail", "origin": "modified-builtin"}
    ) == {
        "name": "mail-to-root",
        "type": "sendmail",
    }
    decl = _smtp(password=PASSWORD)
    live = notifications.parse(
        {
            "name": "ops-mail",
            "server": "mail.example.org",
            "from-address": "pve@example.org",
            "mailto": ["o@x.org"],
        },
        decl,
    )
    exported = notifications.export_values(live, decl)
    assert exported == {
        "type": "smtp",
        "server": "mail.example.org",
        "from-address": "pve@example.org",
        "mailto": ["o@x.org"],
    }
    assert notifications.SPEC.export_secrets(live) == {"password"}


def _job(**values):
    return SimpleNamespace(label="backup job nightly", values=values)


def test_a_backup_job_whose_notifications_reach_nobody_is_noted(rows):
    # pve-manager PVE/VZDump.pm send_notification: auto with mailto and legacy-sendmail mail the job's
    # mailto; notification-system (and auto without mailto) go through the matchers with type=vzdump.
    ctx = _ctx()
    (note,) = matchers.vzdump_note(ctx, _job(**{"notification-mode": "legacy-sendmail"}), "create")
    assert "legacy-sendmail without mailto sends no notification" in note
    assert matchers.vzdump_note(ctx, _job(mailto="ops@example.org"), "create") == []
    # The built-in default-matcher routes everything to mail-to-root.
    assert matchers.vzdump_note(ctx, _job(), "create") == []
    rows[notifications.MATCHERS][:] = [
        {"name": "default-matcher", "target": ["mail-to-root"], "disable": True},
        {"name": "replication", "match-field": ["exact:type=replication"], "target": ["mail-to-root"]},
        {"name": "empty", "match-field": ["regex:type=^vz"]},
    ]
    (note,) = matchers.vzdump_note(ctx, _job(**{"notification-mode": "notification-system"}), "update")
    assert "no enabled matcher with a target matches a vzdump notification" in note
    # A matcher this run declares counts as it will be.
    remember(ctx, matchers.FAMILY, "empty", {"match-field": ["regex:type=^vz"], "targets": ["mail-to-root"]})
    assert matchers.vzdump_note(ctx, _job(), "create") == []
