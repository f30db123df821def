"""OpenBao ACL policies against a real OpenBao dev server (``bao server -dev`` on loopback).

Requests are counted twice: by OpenBao itself, in the log of a file audit device declared in the dev
server's config (OpenBao 2.x refuses to enable one through the API: "cannot enable audit device via
API; use declarative, config-based audit device management instead"), and on the client side by
wrapping the hvac adapter's ``request``, for the order of the HTTP calls. Each test uses names of its
own (``salt-proxmox-it-<random>``): the server is shared by the module.
"""

from __future__ import annotations

import json
import secrets
from urllib.parse import urlsplit

import hvac
import pytest

from salt_proxmox.openbao_policy import lifecycle
from salt_proxmox.openbao_policy.policy import sha256
from salt_proxmox.ownership.keeper import Ownership
from salt_proxmox.ownership.rows import row_key
from salt_proxmox.ownership.stores import MemoryStore
from tests.support.openbao import CREDS_POLICY, CREDS_POLICY_HCL, DevOpenBao, creds_token, write_policy

READ = 'path "proxmox/creds/*" {\n  capabilities = ["read"]\n}\n'
LIST = 'path "proxmox/creds" {\n  capabilities = ["list"]\n}\n'
FILES = {"salt://proxmox/files/openbao/read.hcl": "# from the Salt file server\n" + READ}


def recorded(client: hvac.Client) -> list[tuple[str, str]]:
    """Start recording (METHOD, /v1 path) of every request ``client`` sends; returns the live list."""
    sent: list[tuple[str, str]] = []
    adapter = client.adapter
    original = adapter.request

    def request(method, url, *args, **kwargs):
        sent.append((method.upper(), urlsplit(url).path))
        return original(method, url, *args, **kwargs)

    adapter.request = request
    return sent


def writes(sent: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [entry for entry in sent if entry[0] != "GET"]


@pytest.fixture(scope="module")
def openbao():
    """A dev server of this module's own, with a file audit device (shadows the session's server)."""
    with DevOpenBao(audit=True) as server:
        write_policy(server.client(), CREDS_POLICY, CREDS_POLICY_HCL)
        yield server


class Audited:
    """What OpenBao's audit log holds from now on: ``since()`` every (operation, path), ``writes()``
    the ones that are not reads."""

    def __init__(self, server: DevOpenBao) -> None:
        self.server = server
        self.start = len(server.audited())

    def since(self) -> list[tuple[str, str]]:
        return self.server.audited()[self.start :]

    def writes(self) -> list[tuple[str, str]]:
        return [(operation, path) for operation, path in self.since() if operation not in ("read", "list")]


@pytest.fixture
def name() -> str:
    """A policy name of this test's own."""
    return f"salt-proxmox-it-{secrets.token_hex(4)}"


@pytest.fixture
def root(openbao) -> hvac.Client:
    return openbao.client()


def _ctx(client: hvac.Client, store: MemoryStore) -> lifecycle.BaoContext:
    return lifecycle.BaoContext(client=client, ownership=Ownership(store))


def test_create_plan_apply_replan_with_a_salt_file(openbao, root, name):
    store = MemoryStore()
    ctx = _ctx(root, store)
    audit = Audited(openbao)
    sent = recorded(root)
    fragments = ["salt://proxmox/files/openbao/read.hcl", LIST]
    plan = lifecycle.present(ctx, "creds", True, name, fragments, fetch=FILES.get)
    assert plan.result is None, plan.comment
    assert plan.changes["path_grants"] == {"old": None, "new": 2}
    assert sent == [("GET", f"/v1/sys/policy/{name}")] and store.saves == 0, "a plan reads, nothing else"
    assert audit.since() == [("read", f"sys/policy/{name}")], "OpenBao saw one read"

    audit = Audited(openbao)
    sent.clear()
    done = lifecycle.present(ctx, "creds", False, name, fragments, fetch=FILES.get)
    assert done.result is True, done.comment
    assert done.changes == plan.changes, "the apply did what the plan showed"
    assert sent == [
        ("GET", f"/v1/sys/policy/{name}"),
        ("PUT", f"/v1/sys/policy/{name}"),
        ("GET", f"/v1/sys/policy/{name}"),
    ]
    assert [path for _, path in audit.since()] == [f"sys/policy/{name}"] * 3
    assert [operation for operation, _ in audit.writes()] in (["update"], ["create"])
    text = root.sys.read_policy(name)["data"]["rules"]
    assert text == FILES["salt://proxmox/files/openbao/read.hcl"].rstrip() + "\n\n" + LIST
    row = store.rows[row_key("openbao", "policy", name)]
    assert row["declared"] == {"name": name, "sha256": sha256(text), "fragments": 2}
    assert "capabilities" not in json.dumps(store.rows), "the text never goes to grains"

    sent.clear()
    audit = Audited(openbao)
    again = lifecycle.present(ctx, "creds", True, name, fragments, fetch=FILES.get)
    assert (again.result, again.changes) == (True, {}), again.comment
    assert writes(sent) == [] and audit.writes() == []


def test_update_shows_grants_and_diff_and_writes_once(root, name):
    store = MemoryStore()
    ctx = _ctx(root, store)
    assert lifecycle.present(ctx, "p", False, name, [READ]).result is True
    sent = recorded(root)
    plan = lifecycle.present(ctx, "p", True, name, [READ, LIST])
    assert plan.changes["path_grants"] == {"old": 1, "new": 2}
    assert '+path "proxmox/creds" {' in plan.changes["diff"]
    done = lifecycle.present(ctx, "p", False, name, [READ, LIST])
    assert done.result is True and done.changes == plan.changes
    assert writes(sent) == [("PUT", f"/v1/sys/policy/{name}")]


def test_names_are_keyed_in_lower_case(root, name):
    store = MemoryStore()
    ctx = _ctx(root, store)
    assert lifecycle.present(ctx, "p", False, name.upper(), [READ]).result is True
    assert name in root.sys.list_policies()["data"]["policies"]
    sent = recorded(root)
    for spelled, rename_from in ((name, None), (name.title(), name)):
        outcome = lifecycle.present(ctx, "p", False, spelled, [READ], rename_from=rename_from)
        assert (outcome.result, outcome.changes) == (True, {}), outcome.comment
    assert writes(sent) == [], "a case-only change or rename writes nothing"


def test_a_name_with_slashes_is_one_policy(openbao, root, name):
    # OpenBao accepts jenkins/dev/master (sys/policy/(?P<name>.+)); hvac keeps the / in the URL.
    store = MemoryStore()
    ctx = _ctx(root, store)
    nested = f"{name}/dev/Master"
    sent = recorded(root)
    assert lifecycle.present(ctx, "p", True, nested, [READ]).result is None
    done = lifecycle.present(ctx, "p", False, nested, [READ])
    assert done.result is True, done.comment
    assert nested.lower() in root.sys.list_policies()["data"]["policies"]
    assert ("PUT", f"/v1/sys/policy/{nested.lower()}") in writes(sent)
    again = lifecycle.present(ctx, "p", True, nested, [READ])
    assert (again.result, again.changes) == (True, {}), again.comment


def test_rename_writes_the_new_name_first(openbao, root, name):
    new = f"{name}-new"
    store = MemoryStore()
    ctx = _ctx(root, store)
    assert lifecycle.present(ctx, "p", False, name, [READ]).result is True
    audit = Audited(openbao)
    sent = recorded(root)
    plan = lifecycle.present(ctx, "p", True, new, [READ], rename_from=name, removal="destroy")
    assert plan.result is None and plan.changes["renamed"] == {"old": name, "new": new}
    assert writes(sent) == []
    done = lifecycle.present(ctx, "p", False, new, [READ], rename_from=name, removal="destroy")
    assert done.result is True, done.comment
    assert done.changes == plan.changes
    assert writes(sent) == [("PUT", f"/v1/sys/policy/{new}"), ("DELETE", f"/v1/sys/policy/{name}")]
    assert [path for _, path in audit.writes()] == [f"sys/policy/{new}", f"sys/policy/{name}"]
    assert audit.writes()[1][0] == "delete"
    policies = root.sys.list_policies()["data"]["policies"]
    assert new in policies and name not in policies
    assert set(store.rows) == {row_key("openbao", "policy", new)}


def test_rename_onto_a_taken_name_is_refused(root, name):
    taken = f"{name}-taken"
    root.sys.create_or_update_policy(name=taken, policy=LIST)
    store = MemoryStore()
    ctx = _ctx(root, store)
    assert lifecycle.present(ctx, "p", False, name, [READ]).result is True
    sent = recorded(root)
    outcome = lifecycle.present(ctx, "p", False, taken, [READ], rename_from=name, adopt=True)
    assert outcome.result is False and "the name is taken" in outcome.comment[0]
    assert writes(sent) == []
    assert root.sys.read_policy(taken)["data"]["rules"] == LIST


def test_a_policy_not_ours_is_refused_unless_adopted_even_when_empty(root, name):
    """A policy written as "\\n" is stored with an empty text (OpenBao base64-decodes it): it exists."""
    root.sys.create_or_update_policy(name=name, policy="\n")
    assert root.sys.read_policy(name)["data"]["rules"] == ""
    ctx = _ctx(root, MemoryStore())
    sent = recorded(root)
    refused = lifecycle.present(ctx, "p", False, name, [READ])
    assert refused.result is False and "did not write it" in refused.comment[0]
    assert writes(sent) == []
    adopted = lifecycle.present(ctx, "p", False, name, [READ], adopt=True)
    assert adopted.result is True, adopted.comment
    assert adopted.changes["path_grants"] == {"old": 0, "new": 1}
    assert writes(sent) == [("PUT", f"/v1/sys/policy/{name}")]


def test_only_a_404_is_absence(openbao, name):
    """A token that may not read the policy gets a 403: a failure, never a create."""
    token = creds_token(openbao.client())  # policy salt-proxmox-creds: sys/policy/salt-proxmox-* only
    narrow = hvac.Client(url=openbao.url, token=token)
    other = f"other-{name}"
    audit = Audited(openbao)
    sent = recorded(narrow)
    outcome = lifecycle.present(_ctx(narrow, MemoryStore()), "p", False, other, [READ])
    assert outcome.result is False and "permission denied (HTTP 403)" in outcome.comment[0]
    assert writes(sent) == [] and audit.writes() == []
    assert token not in "\n".join(outcome.comment)


def test_the_salt_token_manages_its_own_policies(openbao, name):
    """The demo's token (policy salt-proxmox-creds) may keep salt-proxmox-* policies, and nothing more."""
    token = creds_token(openbao.client())
    client = hvac.Client(url=openbao.url, token=token)
    store = MemoryStore()
    done = lifecycle.present(_ctx(client, store), "p", False, name, [READ])
    assert done.result is True, done.comment
    gone = lifecycle.absent(_ctx(client, store), "p", False, name, removal="destroy")
    assert gone.result is True, gone.comment
    assert name not in openbao.client().sys.list_policies()["data"]["policies"]
    assert CREDS_POLICY in openbao.client().sys.list_policies()["data"]["policies"]


def test_absent_retains_by_default_and_destroys_only_unchanged_text(root, name):
    store = MemoryStore()
    ctx = _ctx(root, store)
    assert lifecycle.present(ctx, "p", False, name, [READ]).result is True
    root.sys.create_or_update_policy(name=name, policy=LIST)  # someone edits it by hand
    sent = recorded(root)
    changed = lifecycle.absent(ctx, "p", False, name, removal="destroy")
    assert changed.result is False and "no longer holds the text" in changed.comment[0]
    kept = lifecycle.absent(ctx, "p", False, name)
    assert kept.result is True and store.rows == {}
    assert writes(sent) == [] and name in root.sys.list_policies()["data"]["policies"]


def test_a_policy_openbao_refuses_is_refused_at_plan_and_its_own_text_shown_at_apply(root, name, monkeypatch):
    """The plan refuses what OpenBao's parser refuses (``grammar_problems``). Should OpenBao refuse a
    text anyway, the apply shows OpenBao's own error and changes nothing: here the plan-time check is
    switched off to let the text reach the real server."""
    text = 'path "proxmox/creds/*" {\n  capabilities = ["read", "lst"]\n}\n'
    ctx = _ctx(root, MemoryStore())
    plan = lifecycle.present(ctx, "p", True, name=name, fragments=[text])
    assert plan.result is False and plan.changes == {}
    assert "fragments[0] line 2: path 'proxmox/creds/*': invalid capability 'lst'" in plan.comment[0]

    monkeypatch.setattr("salt_proxmox.openbao_policy.policy.grammar_problems", lambda fragments: [])
    done = lifecycle.present(ctx, "p", False, name=name, fragments=[text])
    assert (done.result, done.changes) == (False, {})
    said = "\n".join(done.comment)
    assert f"writing policy {name}: OpenBao refused it (HTTP 400): failed to parse policy:" in said
    assert 'invalid capability "lst"' in said
    assert lifecycle.read_policy(ctx, name) is None
