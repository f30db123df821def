"""OpenBao ACL policies: names, assembly, comparison and the rename rules, without a server.

Sources: OpenBao 2.6 ``internal/vault/policy/policy_store.go`` (``sanitizeName``, ``immutablePolicies``)
and ``internal/vault/logical_system.go`` (``handlePoliciesSet``: lower-cased name, empty text refused,
base64 decoded; ``handlePoliciesRead``: a missing policy is a 404).
"""

from __future__ import annotations

import json

import hvac.exceptions
import pytest

from salt_proxmox.errors import DeclarationError
from salt_proxmox.openbao_policy import lifecycle
from salt_proxmox.openbao_policy.policy import (
    Fragment,
    assemble,
    assembly_problem,
    check_name,
    fragments_from,
    grants,
    parse_declaration,
    policy_key,
    sha256,
    unified_diff,
)
from salt_proxmox.ownership.keeper import Ownership
from salt_proxmox.ownership.rows import CREATING, row_key
from salt_proxmox.ownership.stores import MemoryStore
from tests.support.stubs import StubBao

READ = 'path "proxmox/creds/*" {\n  capabilities = ["read"]\n}'
MANAGE = 'path "sys/policy/salt-proxmox-*" {\n  capabilities = ["create", "read", "update"]\n}\n\n'


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("salt-proxmox-creds", "salt-proxmox-creds"),
        ("Salt-Proxmox-Creds", "salt-proxmox-creds"),
        ("A.b_C", "a.b_c"),
        # A hierarchical name: OpenBao's route is sys/policy/(?P<name>.+) and it lists by prefix.
        ("Jenkins/Dev/master", "jenkins/dev/master"),
    ],
)
def test_names_are_keyed_in_lower_case(name: str, key: str) -> None:
    """handlePoliciesSet stores strings.ToLower(name); sanitizeName lower-cases every lookup."""
    assert check_name(name) == key == policy_key(name)


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("root", "does not let anyone write"),  # immutablePolicies
        ("Response-Wrapping", "does not let anyone write"),
        ("a b", "not a policy name"),
        ("-lead", "not a policy name"),
        ("", "not a policy name"),
        (None, "not a policy name"),
        # OpenBao cleans the request path: each of these would be stored under another name
        # (a//b as a/b, /x as x, a/../b as b; ../x is refused).
        ("a//b", "would store another name"),
        ("/lead", "would store another name"),
        ("trail/", "would store another name"),
        ("a/../b", "would store another name"),
        ("a/./b", "would store another name"),
        ("../x", "would store another name"),
    ],
)
def test_names_refused(name: object, problem: str) -> None:
    with pytest.raises(DeclarationError, match=problem):
        check_name(name)


def test_assembly_order_trailing_space_and_empty_fragments() -> None:
    text = assemble([Fragment("a", READ + "  \n\n"), Fragment("b", "   \n"), Fragment("c", MANAGE)])
    assert text == READ + "\n\n" + MANAGE.rstrip() + "\n"
    assert assemble([Fragment("c", MANAGE), Fragment("a", READ)]) != text, "fragments keep their order"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "empty"),
        ("\n\n", "empty"),
        ("abcd\n", "base64"),  # handlePoliciesSet would store its decoding
        ("YWJj\r\nZGVm\n", "base64"),  # Go's StdEncoding ignores \r and \n
        (READ + "\n", None),
        ("# only a comment\n", None),  # a policy without grants is still a policy
    ],
)
def test_assembly_problems(text: str, problem: str | None) -> None:
    found = assembly_problem(text)
    assert (found is None) if problem is None else (problem in found)


def test_fragments_from_strings_and_salt_files() -> None:
    files = {"salt://p/read.hcl": READ, "salt://p/empty.hcl": ""}
    parts = fragments_from(["salt://p/read.hcl", MANAGE], files.get)
    assert [p.origin for p in parts] == ["salt://p/read.hcl", "fragments[1]"]
    with pytest.raises(DeclarationError, match=r"fragments\[0\]: salt://p/missing.hcl was not found"):
        fragments_from(["salt://p/missing.hcl"], lambda url: False)  # cp.get_file_str answers False
    with pytest.raises(DeclarationError, match="only be read through Salt"):
        fragments_from(["salt://p/read.hcl"])
    with pytest.raises(DeclarationError, match=r"fragments\[1\]: expected HCL text"):
        fragments_from([READ, {"file": "x"}])
    for bad in ("just a string", [], None, {"a": 1}):
        with pytest.raises(DeclarationError, match="fragments"):
            fragments_from(bad)


def test_empty_assembly_refused() -> None:
    with pytest.raises(DeclarationError, match="empty"):
        parse_declaration("s", "p", ["", "  "])
    with pytest.raises(DeclarationError, match="empty"):
        parse_declaration("s", "p", ["salt://empty.hcl"], fetch=lambda url: "\n")


def test_grants_and_digest() -> None:
    assert grants(None) is None
    assert grants(READ + "\n\n" + MANAGE) == 2
    assert grants('# path "not/a/grant" {}\n' + READ) == 1, "a commented-out block is no grant"
    assert grants(json.dumps({"path": {"a/*": {"capabilities": ["read"]}, "b": {}}})) == 2
    assert sha256("a") == "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb"


def test_unified_diff_of_the_text() -> None:
    diff = unified_diff("p", READ + "\n", READ + "\n" + MANAGE)
    assert diff.startswith("--- p (OpenBao)\n+++ p (declared)\n")
    assert '+path "sys/policy/salt-proxmox-*" {\n' in diff
    assert unified_diff("p", None, READ + "\n").startswith("--- /dev/null\n")


def test_declaration_keeps_no_text_in_grains() -> None:
    decl = parse_declaration("s", "Salt-X", [READ])
    assert decl.stored() == {"name": "salt-x", "sha256": sha256(READ + "\n"), "fragments": 1}


def test_declaration_refuses_each_bad_key() -> None:
    with pytest.raises(DeclarationError) as caught:
        parse_declaration("s", "p", [READ], adopt="yes", removal="shred", colour="red")
    assert [p.split(":")[0] for p in caught.value.problems] == ["unknown key(s) colour", "adopt", "removal"]
    with pytest.raises(DeclarationError, match="delete the 'default' policy"):
        parse_declaration("s", "p", [READ], rename_from="default", removal="destroy")


# ----------------------------------------------------------------------------------- the lifecycle


def _ctx(bao: StubBao, store: MemoryStore | None = None) -> lifecycle.BaoContext:
    return lifecycle.BaoContext(client=bao, ownership=Ownership(store or MemoryStore()))  # type: ignore[arg-type]


def _row(name: str, text: str, state_id: str = "s", phase: str = "owned") -> dict:
    return {
        row_key("openbao", "policy", name): {
            "phase": phase,
            "state_id": state_id,
            "declared": {"name": name, "sha256": sha256(text)},
        }
    }


def test_create_then_nothing_to_write_and_a_plan_writes_nothing() -> None:
    bao = StubBao()
    store = MemoryStore()
    ctx = _ctx(bao, store)
    plan = lifecycle.present(ctx, "s", True, "Salt-X", [READ, MANAGE])
    assert plan.result is None and bao.writes() == [] and store.saves == 0
    assert plan.changes["path_grants"] == {"old": None, "new": 2}
    done = lifecycle.present(ctx, "s", False, "Salt-X", [READ, MANAGE])
    assert done.result is True, done.comment
    assert sorted(done.changes) == sorted(plan.changes)
    assert bao.writes() == [("PUT", "sys/policy/salt-x")], "keyed in lower case"
    assert bao.policies["salt-x"] == READ + "\n\n" + MANAGE.rstrip() + "\n"
    assert READ not in json.dumps(store.rows), "the text never goes to grains"
    again = lifecycle.present(ctx, "s", True, "salt-x", [READ, MANAGE])
    assert (again.result, again.changes) == (True, {})


def test_update_shows_grants_before_and_after_and_a_diff() -> None:
    bao = StubBao({"p": READ + "\n"})
    ctx = _ctx(bao, MemoryStore(_row("p", READ + "\n")))
    plan = lifecycle.present(ctx, "s", True, "p", [READ, MANAGE])
    assert plan.result is None
    assert plan.changes["path_grants"] == {"old": 1, "new": 2}
    assert plan.changes["sha256"]["old"] == sha256(READ + "\n")
    assert '+path "sys/policy/salt-proxmox-*" {' in plan.changes["diff"]
    assert lifecycle.present(ctx, "s", False, "p", [READ, MANAGE]).result is True


def test_only_a_404_is_absent() -> None:
    bao = StubBao(deny={"p"})
    outcome = lifecycle.present(_ctx(bao), "s", False, "p", [READ])
    assert outcome.result is False and "permission denied (HTTP 403)" in outcome.comment[0]
    assert bao.writes() == []


def test_an_existing_empty_policy_still_occupies_its_name() -> None:
    """A policy written as "\\n" is stored as "" (base64-decoded): it exists all the same."""
    bao = StubBao({"p": ""})
    refused = lifecycle.present(_ctx(bao), "s", False, "p", [READ])
    assert refused.result is False and "did not write it" in refused.comment[0]
    adopted = lifecycle.present(_ctx(bao), "s", False, "p", [READ], adopt=True)
    assert adopted.result is True and adopted.changes["path_grants"] == {"old": 0, "new": 1}


def test_adopting_a_matching_policy_records_it_without_a_write() -> None:
    bao = StubBao({"p": READ + "\n"})
    store = MemoryStore()
    outcome = lifecycle.present(_ctx(bao, store), "s", False, "p", [READ], adopt=True)
    assert outcome.result is True and outcome.changes == {"ownership": {"old": None, "new": "owned"}}
    assert bao.writes() == [] and store.rows[row_key("openbao", "policy", "p")]["phase"] == "owned"


def test_an_unfinished_write_of_ours_is_finished_only_when_the_text_matches() -> None:
    bao = StubBao({"p": READ + "\n"})
    finished = lifecycle.present(
        _ctx(bao, MemoryStore(_row("p", READ + "\n", phase=CREATING))), "s", False, "p", [READ]
    )
    assert finished.result is True and finished.changes["ownership"]["old"] == CREATING
    other = lifecycle.present(
        _ctx(bao, MemoryStore(_row("p", "x", phase=CREATING))), "s", False, "p", [MANAGE]
    )
    assert other.result is False and "may not be ours" in other.comment[0]


def test_case_only_rename_is_no_rename() -> None:
    bao = StubBao({"p": READ + "\n"})
    ctx = _ctx(bao, MemoryStore(_row("p", READ + "\n")))
    outcome = lifecycle.present(ctx, "s", False, "P", [READ], rename_from="p")
    assert (outcome.result, outcome.changes) == (True, {})
    assert bao.writes() == []


def test_rename_writes_the_new_name_first_and_retains_the_old_by_default() -> None:
    bao = StubBao({"old": READ + "\n"})
    store = MemoryStore(_row("old", READ + "\n"))
    ctx = _ctx(bao, store)
    plan = lifecycle.present(ctx, "s", True, "new", [READ], rename_from="old")
    assert plan.result is None and plan.changes["renamed"] == {"old": "old", "new": "new"}
    done = lifecycle.present(ctx, "s", False, "new", [READ], rename_from="old")
    assert done.result is True, done.comment
    assert bao.writes() == [("PUT", "sys/policy/new")]
    assert set(bao.policies) == {"old", "new"}, "removal: retain leaves the old policy in place"
    assert set(store.rows) == {row_key("openbao", "policy", "new")}
    again = lifecycle.present(ctx, "s", True, "new", [READ], rename_from="old")
    assert (again.result, again.changes) == (True, {})


def test_rename_with_destroy_deletes_the_old_policy_after_the_new_one_is_written() -> None:
    bao = StubBao({"old": READ + "\n"})
    ctx = _ctx(bao, MemoryStore(_row("old", READ + "\n")))
    done = lifecycle.present(ctx, "s", False, "new", [READ], rename_from="old", removal="destroy")
    assert done.result is True, done.comment
    assert bao.writes() == [("PUT", "sys/policy/new"), ("DELETE", "sys/policy/old")]
    assert set(bao.policies) == {"new"}


def test_rename_with_destroy_refused_when_the_old_text_changed() -> None:
    bao = StubBao({"old": MANAGE})
    ctx = _ctx(bao, MemoryStore(_row("old", READ + "\n")))
    outcome = lifecycle.present(ctx, "s", False, "new", [READ], rename_from="old", removal="destroy")
    assert outcome.result is False and "no longer holds the text we wrote" in outcome.comment[0]
    assert bao.writes() == []


def test_rename_refused_when_the_new_name_is_taken() -> None:
    bao = StubBao({"old": READ + "\n", "new": MANAGE})
    ctx = _ctx(bao, MemoryStore(_row("old", READ + "\n")))
    for adopt in (False, True):
        outcome = lifecycle.present(ctx, "s", False, "new", [READ], rename_from="old", adopt=adopt)
        assert outcome.result is False and "the name is taken" in outcome.comment[0]
    assert bao.writes() == []


def test_same_state_declaring_another_name_is_refused() -> None:
    bao = StubBao({"old": READ + "\n"})
    ctx = _ctx(bao, MemoryStore(_row("old", READ + "\n")))
    outcome = lifecycle.present(ctx, "s", False, "new", [READ])
    assert outcome.result is False and "rename_from: old" in outcome.comment[0]


def test_absent_retains_by_default_and_destroys_only_our_unchanged_text() -> None:
    bao = StubBao({"p": READ + "\n", "theirs": READ + "\n"})
    store = MemoryStore(_row("p", READ + "\n"))
    ctx = _ctx(bao, store)
    assert lifecycle.absent(ctx, "s", False, "theirs", removal="destroy").result is False
    assert lifecycle.absent(ctx, "s", False, "default", removal="destroy").result is False
    plan = lifecycle.absent(ctx, "s", True, "p", removal="destroy")
    assert plan.result is None and bao.writes() == []
    bao.policies["p"] = MANAGE
    assert lifecycle.absent(ctx, "s", False, "p", removal="destroy").result is False
    bao.policies["p"] = READ + "\n"
    gone = lifecycle.absent(ctx, "s", False, "P", removal="destroy")
    assert gone.result is True, gone.comment
    assert bao.writes() == [("DELETE", "sys/policy/p")] and "p" not in bao.policies and store.rows == {}
    kept = lifecycle.absent(_ctx(bao, MemoryStore(_row("theirs", READ + "\n"))), "s", False, "theirs")
    assert kept.result is True and "theirs" in bao.policies, "retain forgets and touches nothing"


# ------------------------------------------------------------------------------ OpenBao's grammar


@pytest.mark.parametrize(
    ("fragments", "problem"),
    [
        pytest.param(
            ['path "a/*" {\n  capabilities = ["read", "lst"]\n}'],
            "fragments: fragments[0] line 2: path 'a/*': invalid capability 'lst' (OpenBao knows deny, "
            "create, read, update, delete, list, sudo, patch, scan)",
            id="unknown-capability",
        ),
        pytest.param(
            ['path "a" {\n  capabilities = ["read"]\n}', 'path "b" {\n  capabilities = ["root"]\n}'],
            "fragments: fragments[1] line 2: path 'b': invalid capability 'root'",
            id="second-fragment-root-is-no-capability",
        ),
        pytest.param(
            ['path "a" {\n  capabilities = ["read"\n}'],
            "fragments: fragments[0] line 3: OpenBao cannot parse it (failed to parse policy:",
            id="does-not-parse",
        ),
        pytest.param(
            ['pth "a" {\n  capabilities = ["read"]\n}'],
            "fragments: fragments[0] line 1: invalid key 'pth'",
            id="unknown-top-key",
        ),
        pytest.param(
            ['path "a" {\n  policy = "admin"\n}'],
            "fragments: fragments[0] line 2: path 'a': invalid policy 'admin'",
            id="old-style-policy",
        ),
    ],
)
def test_a_policy_openbao_would_refuse_is_refused_at_plan(fragments: list[str], problem: str) -> None:
    # OpenBao internal/vault/policy/policy.go ParseACLPolicyWithTemplating (HCL 1, CheckHCLKeys name
    # and path) and parsePaths ("invalid capability", "invalid policy").
    with pytest.raises(DeclarationError) as caught:
        parse_declaration("p", "p", fragments)
    assert len(caught.value.problems) == 1
    assert caught.value.problems[0].startswith(problem)


@pytest.mark.parametrize(
    "text",
    [
        'path "a" {\n  capabilities = ["deny"]\n}',
        'path "a/+/b" {\n  capabilities = ["create", "read", "update", "patch", "delete", "list", "sudo"]\n}',
        'path "a/" {\n  capabilities = ["scan"]\n}',
        'name = "x"\npath "a" { policy = "write" }',
        '{"path": {"a/*": {"capabilities": ["read"]}}}',
        '# only a comment\npath "a" {\n  capabilities = ["read"]\n}',
    ],
)
def test_a_policy_openbao_takes_is_declared(text: str) -> None:
    assert parse_declaration("p", "p", [text]).text.startswith(text.rstrip()[:5])


def test_an_apply_openbao_refuses_anyway_shows_openbaos_text_and_changes_nothing() -> None:
    bao = StubBao()
    error = hvac.exceptions.InvalidRequest(
        errors=['failed to parse policy: path "a": invalid capability "x"']
    )
    bao.sys.create_or_update_policy = lambda name, policy: (_ for _ in ()).throw(error)
    ctx = lifecycle.BaoContext(client=bao, ownership=Ownership(MemoryStore()))
    outcome = lifecycle.present(
        ctx, "p", False, name="p", fragments=['path "a" {\n  capabilities = ["read"]\n}']
    )
    assert (outcome.result, outcome.changes) == (False, {})
    said = 'OpenBao refused it (HTTP 400): failed to parse policy: path "a": invalid capability "x".'
    assert f"writing policy p: {said}" in "\n".join(outcome.comment)
