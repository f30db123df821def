"""Cluster firewall aliases, the pure rules and the rename rules, each with PVE's reason beside it.

Sources: pve-firewall 6.0.4 ``src/PVE/Firewall.pm`` (``parse_ip_or_cidr``, ``parse_alias``,
``$format_aliases``, ``pve-fw-alias``) and ``src/PVE/API2/Firewall/Aliases.pm``. Live values below are
spelled as real PVE answers them, where fakepve 0.5.0 would answer otherwise (it keeps ``/32``).
"""

from __future__ import annotations

from urllib.parse import unquote

import pytest
from hypothesis import given
from hypothesis import strategies as st

from salt_proxmox.errors import DeclarationError
from salt_proxmox.firewall import alias, usage
from salt_proxmox.firewall.lifecycle import present
from salt_proxmox.ownership.rows import row_key
from salt_proxmox.ownership.stores import MemoryStore
from salt_proxmox.pve.errors import PveError
from salt_proxmox.simple import lifecycle as simple
from salt_proxmox.simple.spec import Call
from tests.support.stubs import TARGET, AliasPve, pve_context


@pytest.mark.parametrize(
    ("declared", "canonical", "why"),
    [
        ("10.0.0.5/32", "10.0.0.5", "parse_ip_or_cidr strips /32 from an IPv4 address"),
        ("10.0.0.5", "10.0.0.5", "a bare address is kept"),
        ("10.0.0.0/24", "10.0.0.0/24", "a network is kept"),
        ("10.0.0.5/24", "10.0.0.5/24", "host bits are kept: PVE stores the cidr as sent"),
        ("2001:DB8::1/128", "2001:db8::1", "/128 stripped; the address in ipaddress's spelling"),
        ("2001:db8:0:0::/64", "2001:db8::/64", "IPv6 compressed"),
        ("0.0.0.0/0", "0.0.0.0/0", "a zero prefix is a network like any other here"),
        ("::/0", "::/0", "the IPv6 default route too"),
    ],
)
def test_cidr_canonical_spelling(declared: str, canonical: str, why: str) -> None:
    assert alias.canonical_cidr(declared) == canonical, why


@pytest.mark.parametrize(
    "bad",
    [
        "10.0.0.256",  # not an address
        "10.0.0.1/33",  # prefix longer than the address
        "2001:db8::/129",
        "010.0.0.1",  # PVE's IPV4RE takes no leading zeros
        "10.0.0.1-10.0.0.5",  # a range is an IP set entry, not an alias (IPorCIDR)
        " 10.0.0.1",
        "fe80::1%eth0",  # a zone id
        "",
        "10.0.0.0/",
        "10.0.0.0/ab",
        "lan",  # an alias of an alias is not IPorCIDR
        None,
        24,
    ],
)
def test_cidr_refused(bad: object) -> None:
    with pytest.raises(ValueError):
        alias.canonical_cidr(bad)
    assert alias.check_cidr(bad) is not None if isinstance(bad, str) else True


@pytest.mark.parametrize(
    ("comment", "stored"),
    [
        (None, ""),
        ("", ""),
        ("  web tier  ", "web tier"),  # parse_alias: s/\s*#\s*(.*?)\s*$//
        ("\tweb\x0b", "web"),  # Perl's \s includes tab and vertical tab
        ("a  b # c", "a  b # c"),  # inner spacing and a '#' survive the round trip
        ("   ", ""),  # $format_aliases writes no comment that is only white space
    ],
)
def test_comment_as_pve_reads_it_back(comment: str | None, stored: str) -> None:
    assert alias.canonical_comment(comment) == stored


@pytest.mark.parametrize(
    ("comment", "problem"),
    [
        ("one\ntwo", "line feed"),  # pve-fw-comment-spec (PVE 9 API schema)
        ("one\rtwo", "line feed"),
        ("0", "true in Perl"),  # `$data->{comment} = ... if $param->{comment}` drops "0"
        (" 0 ", "true in Perl"),
        ("web", None),
    ],
)
def test_comment_rules(comment: str, problem: str | None) -> None:
    found = alias.check_comment(comment)
    assert (found is None) if problem is None else (problem in found)


@pytest.mark.parametrize(
    ("name", "ok"),
    [
        ("ab", True),
        ("Web_Hosts-1", True),
        ("a", False),  # minLength 2
        ("1ab", False),  # [A-Za-z] first
        ("a b", False),
        ("a.b", False),
        ("a" * 64, True),
        ("a" * 65, False),  # maxLength 64
    ],
)
def test_name_rule(name: str, ok: bool) -> None:
    assert (alias.check_name(name) is None) is ok


def test_names_compare_case_insensitively() -> None:
    """Aliases.pm keys every alias by lc($name)."""
    upper = alias.declare("s", TARGET, name="Web_Hosts", cidr="10.0.0.0/24")
    lower = alias.declare("s", TARGET, name="web_hosts", cidr="10.0.0.0/24")
    assert upper.identity == lower.identity == "web_hosts"
    assert upper.names["name"] == "Web_Hosts", "the declared spelling is what a create sends"


def test_declaration_refuses_each_bad_key_by_name() -> None:
    with pytest.raises(DeclarationError) as caught:
        alias.declare("s", TARGET, name="web", cidr="10.0.0.300", comment="a\nb", adopt="yes", colour="red")
    text = str(caught.value)
    assert "unknown key(s) colour" in text
    with pytest.raises(DeclarationError) as caught:
        alias.declare("s", TARGET, name="web", cidr="10.0.0.300", comment="a\nb", adopt="yes")
    assert [p.split(":")[0] for p in caught.value.problems] == ["cidr", "comment", "adopt"]


def test_live_spelling_of_pve_matches_the_declaration() -> None:
    decl = alias.declare("s", TARGET, name="Web_Hosts", cidr="10.0.0.5/32", comment=" web ")
    pve = {"name": "web_hosts", "cidr": "10.0.0.5", "ipversion": 4, "comment": "web"}
    fakepve = {"name": "Web_Hosts", "cidr": "10.0.0.5/32", "ipversion": 4, "comment": " web "}
    for live in (pve, fakepve):
        parsed = alias.parse_entry(live, "Web_Hosts")
        assert alias.SPEC.differences(parsed, decl) == {}
        assert alias.SPEC.is_match(parsed, decl)


@pytest.mark.parametrize(
    "answer",
    [
        None,
        [],
        "10.0.0.5",
        {"cidr": "10.0.0.5"},  # no name: not an alias
        {"name": "other", "cidr": "10.0.0.5"},  # another alias
        {"name": "web", "cidr": ""},  # an entry without an address
        {"name": "web"},
        {"name": "web", "cidr": "nonsense"},
        {"name": "web", "cidr": "10.0.0.5", "comment": 5},
    ],
)
def test_malformed_read_is_an_error_not_absence(answer: object) -> None:
    with pytest.raises(ValueError):
        alias.parse_entry(answer, "web")


@pytest.mark.parametrize(
    ("error", "absent"),
    [
        (PveError("GET", "p", 400, "Parameter verification failed.", {"name": "no such alias"}), True),
        (PveError("GET", "p", 400, "Parameter verification failed.", {"name": "no such alias\n"}), True),
        (
            PveError("GET", "p", 400, "Parameter verification failed.", {"name": "value does not match"}),
            False,
        ),
        (PveError("GET", "p", 400, "Parameter verification failed.", {}), False),
        (PveError("GET", "p", 500, "no such alias", None), False),
        (PveError("GET", "p", 403, "Permission check failed (/, Sys.Audit)", None), False),
        (PveError("GET", "p", 404, "Not Found", None), False),
    ],
)
def test_only_pves_exact_missing_alias_answer_is_absence(error: PveError, absent: bool) -> None:
    decl = alias.identify("s", TARGET, name="web")
    assert alias.is_absent(error, decl) is absent


def test_forms() -> None:
    decl = alias.declare("s", TARGET, name="Web", cidr="10.0.0.5/32", comment="")
    assert alias.SPEC.create(decl) == Call(
        "POST", "cluster/firewall/aliases", form={"name": "Web", "cidr": "10.0.0.5"}
    )
    update = alias.SPEC.update(decl, {})
    assert update == Call("PUT", "cluster/firewall/aliases/Web", form={"cidr": "10.0.0.5"}), (
        "no comment in the form clears it: update_alias replaces the whole entry"
    )
    assert update.with_extra({"digest": "d"}).form == {"cidr": "10.0.0.5", "digest": "d"}
    delete = alias.SPEC.delete(decl, {}).with_extra({"digest": "d"})
    assert (delete.params, delete.form) == ({"digest": "d"}, None), "a DELETE takes its digest in the query"


# ----------------------------------------------------------------------------------- the lifecycle


def _present(ctx, test=False, **declared):
    declared.setdefault("cidr", "10.0.0.0/24")
    return present(ctx, test, declared.pop("state_id", "aliases"), **declared)


def _writes(ctx) -> list[tuple[str, str]]:
    return [(method, unquote(path)) for method, path, _, _ in ctx.client.writes()]


def test_create_then_nothing_to_write() -> None:
    pve = AliasPve()
    ctx = pve_context(pve)
    plan = _present(ctx, True, name="web")
    assert plan.result is None and "created" in plan.changes
    assert _writes(ctx) == [] and ctx.ownership.store.saves == 0, "a plan writes nothing anywhere"
    done = _present(ctx, name="web")
    assert done.result is True, done.comment
    assert sorted(done.changes) == sorted(plan.changes), "the apply did what the plan showed"
    assert _writes(ctx) == [("POST", "cluster/firewall/aliases")]
    again = _present(ctx, True, name="web")
    assert (again.result, again.changes) == (True, {})


def test_update_carries_the_list_digest_it_was_judged_against() -> None:
    pve = AliasPve()
    ctx = pve_context(pve)
    _present(ctx, name="web")
    digest = pve.digest()
    done = _present(ctx, name="web", cidr="10.0.1.0/24")
    assert done.result is True, done.comment
    assert done.changes == {"cidr": {"old": "10.0.0.0/24", "new": "10.0.1.0/24"}}
    method, path, _, form = ctx.client.writes()[-1]
    assert (method, path, form) == (
        "PUT",
        "cluster/firewall/aliases/web",
        {"cidr": "10.0.1.0/24", "digest": digest},
    )


def test_case_only_change_writes_nothing() -> None:
    pve = AliasPve({"web_hosts": {"cidr": "10.0.0.0/24"}})
    store = MemoryStore(
        {row_key(TARGET, "firewall_alias", "web_hosts"): {"phase": "owned", "state_id": "aliases"}}
    )
    ctx = pve_context(pve, store)
    for kwargs in ({"name": "Web_Hosts"}, {"name": "WEB_HOSTS", "rename_from": "web_hosts"}):
        outcome = _present(ctx, **kwargs)
        assert (outcome.result, outcome.changes) == (True, {}), outcome.comment
    assert _writes(ctx) == []
    assert any("only in case" in line for line in outcome.comment)


def test_rename_creates_the_new_alias_first_and_deletes_the_old_one_after() -> None:
    pve = AliasPve({"old_name": {"cidr": "10.0.0.0/24", "comment": "lab"}})
    old_key = row_key(TARGET, "firewall_alias", "old_name")
    store = MemoryStore({old_key: {"phase": "owned", "state_id": "lab", "declared": {}}})
    ctx = pve_context(pve, store)
    plan = _present(ctx, True, state_id="lab", name="new_name", comment="lab", rename_from="old_name")
    assert plan.result is None and plan.changes["renamed"] == {"old": "old_name", "new": "new_name"}
    assert _writes(ctx) == []
    done = _present(ctx, state_id="lab", name="new_name", comment="lab", rename_from="old_name")
    assert done.result is True, done.comment
    assert sorted(done.changes) == sorted(plan.changes)
    assert _writes(ctx) == [
        ("POST", "cluster/firewall/aliases"),
        ("DELETE", "cluster/firewall/aliases/old_name"),
    ]
    assert set(pve.aliases) == {"new_name"}
    assert set(store.rows) == {row_key(TARGET, "firewall_alias", "new_name")}
    again = _present(ctx, True, state_id="lab", name="new_name", comment="lab", rename_from="old_name")
    assert (again.result, again.changes) == (True, {}), "a finished rename plans clean"


def test_rename_refused_when_the_new_name_is_taken() -> None:
    pve = AliasPve({"old_name": {"cidr": "10.0.0.0/24"}, "NEW_name": {"cidr": "10.9.9.9"}})
    store = MemoryStore(
        {row_key(TARGET, "firewall_alias", "old_name"): {"phase": "owned", "state_id": "lab"}}
    )
    ctx = pve_context(pve, store)
    for adopt in (False, True):
        outcome = _present(ctx, state_id="lab", name="new_name", rename_from="old_name", adopt=adopt)
        assert outcome.result is False
        assert "taken" in outcome.comment[0]
    assert _writes(ctx) == []


def test_rename_of_an_alias_not_ours_needs_adopt() -> None:
    pve = AliasPve({"old_name": {"cidr": "10.0.0.0/24"}})
    ctx = pve_context(pve)
    refused = _present(ctx, name="new_name", rename_from="old_name")
    assert refused.result is False and "adopt: true" in refused.comment[0]
    assert _writes(ctx) == []
    done = _present(ctx, name="new_name", rename_from="old_name", adopt=True)
    assert done.result is True, done.comment
    assert set(pve.aliases) == {"new_name"}


def test_rename_whose_old_alias_is_gone_is_a_create() -> None:
    ctx = pve_context(AliasPve())
    done = _present(ctx, name="new_name", rename_from="old_name")
    assert done.result is True and "renamed" not in done.changes
    assert _writes(ctx) == [("POST", "cluster/firewall/aliases")]


def test_interrupted_rename_is_finished_by_the_next_run() -> None:
    """The create went through, the delete did not: the new alias is ours, the old one still there."""
    pve = AliasPve({"old_name": {"cidr": "10.0.0.0/24"}, "new_name": {"cidr": "10.0.0.0/24"}})
    store = MemoryStore(
        {
            row_key(TARGET, "firewall_alias", "old_name"): {"phase": "owned", "state_id": "lab"},
            row_key(TARGET, "firewall_alias", "new_name"): {"phase": "owned", "state_id": "lab"},
        }
    )
    ctx = pve_context(pve, store)
    done = _present(ctx, state_id="lab", name="new_name", rename_from="old_name")
    assert done.result is True, done.comment
    assert _writes(ctx) == [("DELETE", "cluster/firewall/aliases/old_name")]


def test_same_state_declaring_another_name_without_rename_from_is_refused() -> None:
    pve = AliasPve({"old_name": {"cidr": "10.0.0.0/24"}})
    store = MemoryStore(
        {row_key(TARGET, "firewall_alias", "old_name"): {"phase": "owned", "state_id": "lab"}}
    )
    ctx = pve_context(pve, store)
    outcome = _present(ctx, state_id="lab", name="new_name")
    assert outcome.result is False and "declared firewall alias old_name before" in outcome.comment[0]
    assert _writes(ctx) == []


def test_unowned_alias_refused_unless_adopted() -> None:
    pve = AliasPve({"web": {"cidr": "10.0.0.0/24"}})
    ctx = pve_context(pve)
    refused = _present(ctx, name="web")
    assert refused.result is False and "did not create it (it matches)" in refused.comment[0]
    adopted = _present(ctx, name="web", adopt=True)
    assert adopted.result is True and adopted.changes == {"ownership": {"old": None, "new": "owned"}}
    assert _writes(ctx) == [], "adopting a matching alias writes nothing to PVE"


def test_failed_read_is_not_absence() -> None:
    def answer(method, path, params, form):
        raise PveError(method, path, 500, "got timeout")

    ctx = pve_context(answer)
    outcome = _present(ctx, name="web")
    assert outcome.result is False and "got timeout" in outcome.comment[0]
    assert ctx.client.writes() == []


def test_absent_deletes_only_ours_and_unchanged() -> None:
    pve = AliasPve({"web": {"cidr": "10.0.0.0/24"}, "theirs": {"cidr": "10.0.0.1"}})
    ctx = pve_context(pve)
    _present(ctx, name="web", adopt=True)
    assert simple.absent(ctx, alias.SPEC, False, "x", "destroy", name="theirs").result is False
    pve.aliases["web"]["cidr"] = "10.0.0.9"
    changed = simple.absent(ctx, alias.SPEC, False, "aliases", "destroy", name="web")
    assert changed.result is False and "no longer matches" in changed.comment[0]
    pve.aliases["web"]["cidr"] = "10.0.0.0/24"
    plan = simple.absent(ctx, alias.SPEC, True, "aliases", "destroy", name="WEB")
    assert plan.result is None and _writes(ctx) == []
    gone = simple.absent(ctx, alias.SPEC, False, "aliases", "destroy", name="WEB")
    assert gone.result is True, gone.comment
    assert _writes(ctx) == [("DELETE", "cluster/firewall/aliases/web")]
    assert set(pve.aliases) == {"theirs"} and ctx.ownership.store.rows == {}
    again = simple.absent(ctx, alias.SPEC, False, "aliases", "destroy", name="web")
    assert (again.result, again.changes) == (True, {})


# ------------------------------------------------------------------------------------------ properties

_V4 = st.tuples(st.ip_addresses(v=4), st.one_of(st.none(), st.integers(0, 32)))
_V6 = st.tuples(st.ip_addresses(v=6), st.one_of(st.none(), st.integers(0, 128)))


def _spell(address, prefix, upper: bool) -> str:
    text = address.exploded.upper() if upper else str(address)
    return text if prefix is None else f"{text}/{prefix}"


@given(st.one_of(_V4, _V6), st.booleans())
def test_canonical_cidr_is_stable_and_pve_storing_it_leaves_no_drift(pair, upper):
    """What this family sends is what PVE stores (parse_ip_or_cidr strips only /32 and /128, which the
    canonical spelling never has), so the read-back compares equal: no forever-diff."""
    address, prefix = pair
    sent = alias.canonical_cidr(_spell(address, prefix, upper))
    assert alias.canonical_cidr(sent) == sent
    stored = AliasPve.stored({"cidr": sent}, "x")["cidr"]
    assert alias.canonical_cidr(stored) == sent
    assert not sent.endswith(("/32", "/128")) or (address.version == 6 and sent.endswith("/32"))


def test_names_alias_follows_resolve_alias() -> None:
    # Firewall.pm resolve_alias: lc(name); dc/ is the cluster's, guest/ the guest's own, and a bare
    # name is the guest's own when it has one by that name.
    assert usage.names_alias("Lab_Net", "lab_net")
    assert usage.names_alias("dc/LAB_NET", "lab_net")
    assert not usage.names_alias("guest/lab_net", "lab_net")
    assert not usage.names_alias("lab_net", "lab_net", shadowed=True)
    assert usage.names_alias("dc/lab_net", "lab_net", shadowed=True)
    assert not usage.names_alias("+lab_net", "lab_net"), "an IP set reference is not an alias"
    assert not usage.names_alias("10.0.0.1,lab_net", "lab_net"), "an alias never stands in a list"
    assert not usage.names_alias(None, "lab_net")
