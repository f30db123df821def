"""PBS targets and datastores against the staging PBS fake (tests/support/pbs.py, written from
proxmox-backup ``src/api2/config/datastore.rs``, ``src/api2/access/*.rs``): the simple lifecycle on a
PBS context, every create a task awaited with the credential that started it."""

from __future__ import annotations

import pytest

from salt_proxmox.errors import DeclarationError
from salt_proxmox.ownership.stores import MemoryStore
from salt_proxmox.pbs.client import parse_pbs_target
from salt_proxmox.pbs.context import pbs_context_for
from salt_proxmox.pbs.datastore import SPEC, absent
from salt_proxmox.simple.lifecycle import present
from tests.support.openbao import publish_pbs
from tests.support.pbs import PBS_CREDS_PATH, PROVISION_TOKEN_ID, ServedPbs, pbs_targets

TARGET = "backup1"


def pbs_context(served: ServedPbs, store: MemoryStore | None = None, cache: dict | None = None):
    ctx = pbs_context_for(
        pbs_targets(served), None, None, {} if cache is None else cache, store or MemoryStore()
    )
    ctx.sleep = lambda _seconds: None
    return ctx


def writes_since(served: ServedPbs, start: int) -> list[tuple[str, str, dict]]:
    assert served.pbs is not None
    return [entry for entry in served.pbs.requests[start:] if entry[0] != "GET"]


def mark(served: ServedPbs) -> int:
    assert served.pbs is not None
    return len(served.pbs.requests)


STORE = {"name": "store1", "path": "/mnt/datastore/store1", "comment": "PVE backups", "gc-schedule": "daily"}


def test_a_member_without_a_port_is_on_8007_and_the_section_is_named():
    """proxmox-backup-proxy listens on 8007; the target's errors name proxmox:pbs_targets."""
    target = parse_pbs_target("b", {"members": ["https://pbs.example"], "credentials": {"source": "static"}})
    assert target.members == ("https://pbs.example:8007",)
    assert target.key != "b"  # a PVE target named b shares no cached token with it
    with pytest.raises(DeclarationError, match=r"proxmox:pbs_targets:b:members"):
        parse_pbs_target("b", {"members": ["http://pbs.example"], "credentials": {}})


def test_a_datastore_created_by_a_task_and_replanned_clean(fresh_pbs):
    """create_datastore answers a UPID; the state waits for the task with the credential that
    started it (get_task_status: the task's owner), then reads the datastore back."""
    ctx = pbs_context(fresh_pbs)
    plan = present(ctx, SPEC, True, "store1", **STORE)
    assert plan.result is None and "created" in plan.changes, plan.comment
    assert writes_since(fresh_pbs, 0) == []
    start = mark(fresh_pbs)
    done = present(ctx, SPEC, False, "store1", **STORE)
    assert done.result is True, done.comment
    sent = fresh_pbs.pbs.requests[start:]
    assert [(m, p) for m, p, _ in sent if m != "GET"] == [("POST", "config/datastore")]
    status = [p for m, p, _ in sent if p.endswith("/status")]
    assert len(status) == 1 and "create-datastore" in status[0]
    (upid,) = fresh_pbs.pbs.tasks
    assert fresh_pbs.pbs.tasks[upid]["user"] == PROVISION_TOKEN_ID
    assert fresh_pbs.pbs.datastores["store1"]["path"] == "/mnt/datastore/store1"
    start = mark(fresh_pbs)
    again = present(ctx, SPEC, True, "store1", **STORE)
    assert (again.result, again.changes) == (True, {}), again.comment
    assert writes_since(fresh_pbs, start) == []


def test_an_update_sends_only_what_differs_with_the_digest_and_a_match_is_no_write(fresh_pbs):
    ctx = pbs_context(fresh_pbs)
    assert present(ctx, SPEC, False, "store1", **STORE).result is True
    start = mark(fresh_pbs)
    changed = {**STORE, "comment": "  PVE backups  ", "gc-schedule": "weekly", "verify-new": True}
    done = present(ctx, SPEC, False, "store1", **changed)
    assert done.result is True, done.comment
    ((method, path, form),) = writes_since(fresh_pbs, start)
    assert (method, path) == ("PUT", "config/datastore/store1")
    # PBS trims a comment (update_datastore), so "  PVE backups  " is the comment it has: not sent.
    assert set(form) == {"gc-schedule", "verify-new", "digest"}
    start = mark(fresh_pbs)
    cleared = present(ctx, SPEC, False, "store1", **{**changed, "comment": None})
    assert cleared.result is True, cleared.comment
    ((_, _, form),) = writes_since(fresh_pbs, start)
    assert form["delete"] == "comment" and "comment" not in fresh_pbs.pbs.datastores["store1"]
    start = mark(fresh_pbs)
    again = present(ctx, SPEC, False, "store1", **{**changed, "comment": None})
    assert (again.result, again.changes) == (True, {}) and writes_since(fresh_pbs, start) == []


def test_path_and_backend_are_fixed_and_refused_at_plan(fresh_pbs):
    """DataStoreConfig: path and backend are #[updater(skip)]; update_datastore takes neither."""
    ctx = pbs_context(fresh_pbs)
    assert present(ctx, SPEC, False, "store1", **STORE).result is True
    start = mark(fresh_pbs)
    for key, value in (("path", "/mnt/datastore/other"), ("backend", "type=s3,client=s3,bucket=b")):
        refused = present(ctx, SPEC, True, "store1", **{**STORE, key: value})
        assert refused.result is False and f"cannot change a datastore's {key}" in " ".join(refused.comment)
    assert writes_since(fresh_pbs, start) == []


def test_prune_settings_are_the_creates_prune_job_and_a_change_is_refused_with_pbss_reason(fresh_pbs):
    """create_datastore makes prune-schedule and keep-* a prune job and clears them; update_datastore
    refuses them: `datastore prune settings have been replaced by prune jobs`."""
    ctx = pbs_context(fresh_pbs)
    declared = {**STORE, "prune-schedule": "daily", "keep-last": 7}
    plan = present(ctx, SPEC, True, "store1", **declared)
    assert "prune job" in " ".join(plan.comment)
    assert present(ctx, SPEC, False, "store1", **declared).result is True
    (job,) = fresh_pbs.pbs.prune_jobs.values()
    assert (job["store"], job["schedule"], job["keep-last"]) == ("store1", "daily", "7")
    assert "keep-last" not in fresh_pbs.pbs.datastores["store1"]
    again = present(ctx, SPEC, True, "store1", **declared)
    assert (again.result, again.changes) == (True, {}), again.comment
    refused = present(ctx, SPEC, True, "store1", **{**declared, "keep-last": 3})
    assert refused.result is False
    assert "replaced by prune jobs" in " ".join(refused.comment)


def test_a_nested_path_is_refused_at_plan_also_against_this_runs_plan(fresh_pbs):
    """DataStoreConfig::ensure_not_nested."""
    ctx = pbs_context(fresh_pbs)
    assert present(ctx, SPEC, False, "store1", **STORE).result is True
    inner = present(ctx, SPEC, True, "inner", name="inner", path="/mnt/datastore/store1/inner")
    assert inner.result is False and "nested with datastore store1" in " ".join(inner.comment)
    ctx = pbs_context(fresh_pbs)
    assert present(ctx, SPEC, True, "outer", name="outer", path="/srv/outer").result is None
    below = present(ctx, SPEC, True, "below", name="below", path="/srv/outer/below")
    assert below.result is False and "nested with datastore outer" in " ".join(below.comment)


def test_a_task_that_fails_fails_the_state_and_claims_nothing(fresh_pbs):
    """do_create_datastore: `datastore path not empty` ends the create-datastore task in error."""
    store = MemoryStore()
    ctx = pbs_context(fresh_pbs, store)
    fresh_pbs.pbs.seed_data("/mnt/datastore/store1")
    done = present(ctx, SPEC, False, "store1", **STORE)
    assert done.result is False and "datastore path not empty" in " ".join(done.comment)
    assert store.rows == {} or all(row.get("phase") != "owned" for row in store.rows.values())


def test_an_invalid_name_a_relative_path_and_a_live_datastore_not_ours_are_refused_at_plan(fresh_pbs):
    """DATASTORE_SCHEMA: 3 to 32 safe characters; create_datastore: `expected an absolute path`; a live
    datastore is taken over only with adopt (create_datastore would answer `already exists.`)."""
    ctx = pbs_context(fresh_pbs)
    bad = present(ctx, SPEC, True, "x", name="x", path="/srv/x")
    assert bad.result is False and "name:" in " ".join(bad.comment)
    relative = present(ctx, SPEC, True, "rel", name="rel", path="srv/rel")
    assert relative.result is False and "absolute path" in " ".join(relative.comment)
    fresh_pbs.pbs.datastores["taken"] = {"name": "taken", "path": "/srv/taken"}
    taken = present(ctx, SPEC, True, "taken", name="taken", path="/srv/taken")
    assert taken.result is False and "adopt: true" in " ".join(taken.comment)
    assert writes_since(fresh_pbs, 0) == []


def test_destroy_removes_the_configuration_only_unless_destroy_data_which_the_plan_shows(fresh_pbs):
    """delete_datastore: destroy-data defaults to false; only it removes the backups."""
    store = MemoryStore()
    ctx = pbs_context(fresh_pbs, store)
    assert present(ctx, SPEC, False, "store1", **STORE).result is True
    plan = absent(ctx, True, "store1", "destroy", name="store1")
    assert plan.result is None and "data" not in plan.changes
    assert "the backups stay" in " ".join(plan.comment)
    start = mark(fresh_pbs)
    done = absent(ctx, False, "store1", "destroy", name="store1")
    assert done.result is True, done.comment
    ((method, path, params),) = writes_since(fresh_pbs, start)
    assert (method, path) == ("DELETE", "config/datastore/store1")
    assert "destroy-data" not in params and "digest" in params
    assert "/mnt/datastore/store1" in fresh_pbs.pbs.data
    ctx = pbs_context(fresh_pbs, store)
    assert present(ctx, SPEC, False, "store2", **{**STORE, "name": "store2", "path": "/srv/store2"}).result
    plan = absent(ctx, True, "store2", "destroy", True, name="store2")
    assert plan.changes["data"] == {"old": "backups", "new": "destroyed"}
    assert any(line.startswith("DATA LOSS") for line in plan.comment)
    start = mark(fresh_pbs)
    assert absent(ctx, False, "store2", "destroy", True, name="store2").result is True
    ((_, _, params),) = writes_since(fresh_pbs, start)
    assert params["destroy-data"] == "1" and "/srv/store2" not in fresh_pbs.pbs.data
    refused = absent(ctx, True, "store2", "retain", True, name="store2")
    assert refused.result is False and "destroy_data" in " ".join(refused.comment)


def test_pbs_tokens_are_minted_from_openbao_per_role_as_pve_ones_are(fresh_pbs, openbao):
    """credentials: {source: openbao, path}: the read token once per run, a provision token per write
    (salt_proxmox.openbao.creds), cached apart from a PVE target of the same name."""
    publish_pbs(openbao.client(), fresh_pbs.read_token, fresh_pbs.provision_token)
    targets = {
        TARGET: {
            "members": [fresh_pbs.url],
            "verify": fresh_pbs.cafile,
            "credentials": {"source": "openbao", "path": PBS_CREDS_PATH},
        }
    }
    cache: dict = {}
    bao = {"url": openbao.url, "auth": {"method": "token", "token": openbao.root_token}}
    ctx = pbs_context_for(targets, None, bao, cache, MemoryStore())
    ctx.sleep = lambda _seconds: None
    assert present(ctx, SPEC, True, "store1", **STORE).result is None
    assert present(ctx, SPEC, False, "store1", **STORE).result is True
    assert cache[f"salt_proxmox.mints/proxmox:pbs_targets:{TARGET}"] == {"read": 1, "provision": 1}
    assert f"salt_proxmox.mints/{TARGET}" not in cache
    (upid,) = fresh_pbs.pbs.tasks
    assert fresh_pbs.pbs.tasks[upid]["user"] == PROVISION_TOKEN_ID
