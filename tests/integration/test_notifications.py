"""Notification endpoints and matchers through the simple-object lifecycle, against the served fake cluster,
whose ``notifications.cfg`` is ``tests.support.notifications.NotificationPve`` (pve-manager
``PVE/API2/Cluster/Notifications.pm`` over proxmox-notify: fakepve 0.5.0 stores none). A plan only reads,
an apply writes what the plan showed, a second plan is clean; secrets are written at create and on a
serial bump only and shown nowhere; hand-made objects export as declarations that plan clean with adopt;
what PVE would refuse is refused at plan with nothing written."""

from __future__ import annotations

import json
import logging

from salt_proxmox.datacenter import matchers, notifications
from salt_proxmox.export import objects
from salt_proxmox.ownership.stores import MemoryStore
from salt_proxmox.simple.lifecycle import absent, present
from tests.support.guests import make_context, requests_since, static_targets, writes

PASSWORD = "smtp-password-5a6b7c"
SMTP = {
    "name": "ops-mail",
    "type": "smtp",
    "server": "mail.example.org",
    "mode": "starttls",
    "username": "pve",
    "from-address": "pve@example.org",
    "mailto": ["ops@example.org", "oncall@example.org"],
    "password": PASSWORD,
    "secret_serial": 1,
}
MATCHER = {
    "name": "backups-to-ops",
    "match-field": ["exact:type=vzdump"],
    "match-severity": ["warning,error"],
    "targets": ["ops-mail"],
}


def _plan_apply_replan(served, ctx, spec, state_id, **declared):
    start = len(served.pve.requests)
    plan = present(ctx, spec, True, state_id, **declared)
    assert plan.result is None, plan.comment
    assert writes(requests_since(served, start)) == [], "a plan never writes"
    start = len(served.pve.requests)
    done = present(ctx, spec, False, state_id, **declared)
    assert done.result is True, done.comment
    assert done.changes == plan.changes, "the apply did what the plan showed"
    log = requests_since(served, start)
    again = present(ctx, spec, True, state_id, **declared)
    assert (again.result, again.changes) == (True, {}), again.comment
    for said in (plan, done, again):
        assert PASSWORD not in json.dumps([said.comment, said.changes], default=str)
    return plan, done, log


def test_an_smtp_endpoint_and_its_matcher_plan_apply_and_replan_clean(fresh_cluster, caplog):
    caplog.set_level(logging.DEBUG)
    pve = fresh_cluster.pve
    store = MemoryStore()
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    # One plan of both: the matcher's target is the endpoint this run creates first.
    start = len(pve.requests)
    assert present(ctx, notifications.SPEC, True, "ops-mail", **SMTP).result is None
    matcher_plan = present(ctx, matchers.SPEC, True, "backups", **MATCHER)
    assert matcher_plan.result is None, matcher_plan.comment
    assert writes(requests_since(fresh_cluster, start)) == []

    ctx = make_context(static_targets(fresh_cluster), store=store)
    _, _, log = _plan_apply_replan(fresh_cluster, ctx, notifications.SPEC, "ops-mail", **SMTP)
    (create,) = writes(log)
    assert create[:2] == ("POST", "/cluster/notifications/endpoints/smtp")
    # priv/notifications.cfg keeps the password; notifications.cfg and every read never hold it.
    assert pve.notification_secrets["ops-mail"] == {"password": PASSWORD}
    assert "password" not in pve.notifications["ops-mail"][1]
    _plan_apply_replan(fresh_cluster, ctx, matchers.SPEC, "backups", **MATCHER)
    assert pve.notifications["backups-to-ops"] == (
        "matcher",
        {"match-field": ["exact:type=vzdump"], "match-severity": ["warning,error"], "target": ["ops-mail"]},
    )

    # Another password under the same serial is never written; a serial bump writes it.
    same = present(ctx, notifications.SPEC, True, "ops-mail", **{**SMTP, "password": "other"})
    assert same.changes == {}
    _, _, log = _plan_apply_replan(
        fresh_cluster,
        ctx,
        notifications.SPEC,
        "ops-mail",
        **{**SMTP, "password": "rotated", "secret_serial": 2},
    )
    (rotate,) = writes(log)
    assert rotate[0] == "PUT" and pve.notification_secrets["ops-mail"] == {"password": "rotated"}

    # Back to PVE's defaults: mode tls is written (it cannot be deleted), the port follows the mode.
    _, done, log = _plan_apply_replan(
        fresh_cluster, ctx, notifications.SPEC, "ops-mail", **{**SMTP, "mode": None, "secret_serial": 2}
    )
    assert set(done.changes) == {"mode"}
    assert pve.notifications["ops-mail"][1]["mode"] == "tls"
    # Never in an ownership row, nor in a log line.
    assert PASSWORD not in json.dumps(store.rows) and "rotated" not in json.dumps(store.rows)
    assert PASSWORD not in caplog.text and "rotated" not in caplog.text


def test_the_built_ins_are_adopted_changed_and_never_deleted(fresh_cluster):
    pve = fresh_cluster.pve
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    root = {"name": "mail-to-root", "type": "sendmail", "mailto-user": ["root@pam"], "author": "Lab PVE"}
    refused = present(ctx, notifications.SPEC, True, "root", **root)
    assert refused.result is False  # PVE's own: only with adopt
    _plan_apply_replan(fresh_cluster, ctx, notifications.SPEC, "root", **root, adopt=True)
    # lib.rs Config::new: the changed built-in reads modified-builtin, which is no drift.
    assert pve.sections()["mail-to-root"][2] == "modified-builtin"
    start = len(pve.requests)
    gone = absent(
        ctx, notifications.SPEC, True, "root", removal="destroy", name="mail-to-root", type="sendmail"
    )
    assert gone.result is False and "built into PVE" in " ".join(gone.comment)
    matcher = absent(ctx, matchers.SPEC, False, "dm", removal="destroy", name="default-matcher")
    assert matcher.result is False
    assert writes(requests_since(fresh_cluster, start)) == []


def test_hand_made_endpoints_and_matchers_export_and_plan_clean_with_adopt(fresh_cluster):
    pve = fresh_cluster.pve
    pve.add_notification(
        "hook",
        "webhook",
        secrets={"secret": ["name=token,value=c2VjcmV0"]},
        url="https://hooks.example.org/pve",
        method="post",
        header=["name=Content-Type,value=YXBwbGljYXRpb24vanNvbg=="],
        body="eyJ0ZXh0IjogInt7IHRpdGxlIH19In0=",
    )
    pve.add_notification(
        "pages", "matcher", **{"match-severity": ["error"], "target": ["hook"], "mode": "any"}
    )
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    found = objects.export(ctx, notifications.SPEC)
    (exported,) = found.objects  # mail-to-root is PVE's as it ships it: not exported
    assert exported.declaration == {
        "name": "hook",
        "type": "webhook",
        "url": "https://hooks.example.org/pve",
        "method": "post",
        "header": {"Content-Type": "application/json"},
        "body": '{"text": "{{ title }}"}',
        "adopt": True,
    }
    assert exported.secrets == ("secret",), "left out, noted with its pillar path by export.pillar"
    found_matchers = objects.export(ctx, matchers.SPEC)
    (matcher,) = found_matchers.objects
    assert matcher.declaration == {
        "name": "pages",
        "match-severity": ["error"],
        "targets": ["hook"],
        "mode": "any",
        "adopt": True,
    }
    start = len(pve.requests)
    for spec, declared in ((notifications.SPEC, exported.declaration), (matchers.SPEC, matcher.declaration)):
        plan = present(ctx, spec, True, declared["name"], **declared)
        assert set(plan.changes) <= {"ownership"}, plan.changes
        done = present(ctx, spec, False, declared["name"], **declared)
        assert done.result is True, done.comment
    assert writes(requests_since(fresh_cluster, start)) == []
    assert pve.notification_secrets["hook"] == {"secret": ["name=token,value=c2VjcmV0"]}, "never touched"


def test_what_pve_refuses_is_refused_at_plan_with_nothing_written(fresh_cluster):
    pve = fresh_cluster.pve
    pve.add_notification("pager", "gotify", secrets={"token": "t"}, server="https://gotify.example.org")
    pve.add_notification("pages", "matcher", target=["pager"])
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    start = len(pve.requests)
    # api/mod.rs ensure_endpoints_exist: a target that neither exists nor is declared.
    missing = present(ctx, matchers.SPEC, True, "m", name="to-nowhere", targets=["nowhere"])
    assert missing.result is False and "targets: nowhere: no such notification endpoint" in " ".join(
        missing.comment
    )
    # ensure_unique: the name is a gotify endpoint's.
    clash = present(
        ctx, notifications.SPEC, True, "p", name="pager", type="sendmail", mailto=["a@example.org"]
    )
    assert clash.result is False and "held by a gotify endpoint" in " ".join(clash.comment)
    # ensure_safe_to_delete: an endpoint a matcher targets (owned first, so only the reference stops it).
    owned = {"name": "pager", "type": "gotify", "server": "https://gotify.example.org", "adopt": True}
    assert present(ctx, notifications.SPEC, False, "pager", **owned).result is True
    gone = absent(ctx, notifications.SPEC, False, "pager", removal="destroy", name="pager", type="gotify")
    assert gone.result is False and "referenced by: pages" in " ".join(gone.comment)
    # pve-manager 8.2.9 (PVE 8.3) added webhook endpoints.
    pve.version, pve.release_version = "8.2.7", "8.2"
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    hook = present(
        ctx,
        notifications.SPEC,
        True,
        "h",
        name="hook",
        type="webhook",
        url="https://h.example.org/x",
        method="post",
    )
    assert hook.result is False and "runs PVE 8.2" in " ".join(hook.comment)
    assert writes(requests_since(fresh_cluster, start)) == []
    assert "pager" in pve.notifications
