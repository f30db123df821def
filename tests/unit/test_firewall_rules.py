"""Firewall rule lists without a server: pve-firewall's stored spellings (salt_proxmox.firewall.ruleset),
the fewest writes (salt_proxmox.firewall.moves) and the lockout model (salt_proxmox.firewall.lockout),
each beside the pve-firewall 6.0.4 source it follows (src/PVE/Firewall.pm, src/PVE/API2/Firewall/Rules.pm)."""

from __future__ import annotations

from collections import deque

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from salt_proxmox.errors import DeclarationError
from salt_proxmox.firewall import listdiff, moves
from salt_proxmox.firewall.lockout import Firewall, Traffic, lockout, verdict
from salt_proxmox.firewall.ruleset import canonical, from_live, frozen, line, parse_scope, references
from tests.support.firewall import format_rule, parse_rule, round_trip


def _rule(dport: str, comment: str | None = None, action: str = "ACCEPT", **more) -> dict:
    rule = {"type": "in", "action": action, "proto": "tcp", "dport": dport, "enable": 1, **more}
    if comment:
        rule["comment"] = comment
    return canonical(rule, "cluster")


# ------------------------------------------------------------------------------ spellings


def test_a_macro_is_stored_in_pves_preferred_spelling():
    # verify_rule: $rule->{macro} = $pve_fw_preferred_macro_names->{lc($rule->{macro})}
    assert canonical({"type": "in", "action": "ACCEPT", "macro": "ssh", "enable": 1}, "vm")["macro"] == "SSH"
    assert from_live({"type": "in", "action": "ACCEPT", "macro": "ssh", "enable": 1})["macro"] == "SSH"


def test_a_rule_without_enable_is_disabled_as_create_rule_stores_it():
    # create_rule: $rule->{enable} = 0 if !defined($param->{enable}); parse_fw_rule reads no '|' as 1.
    declared = listdiff.declare("s", "t", "cluster", [{"type": "in", "action": "DROP"}])
    assert declared.rules[0]["enable"] == 0
    assert "declares no enable" in declared.notes[0] and "enable: 1" in declared.notes[0]
    assert from_live({"type": "in", "action": "DROP", "enable": 0}) == declared.rules[0]
    assert canonical({"type": "in", "action": "DROP", "enable": True}, "cluster")["enable"] == 1


def test_nolog_and_no_log_are_one_spelling_and_a_comment_is_trimmed():
    # $format_rules writes "-log nolog" for nolog and nothing without log; both generate no LOG rule.
    assert canonical({"type": "in", "action": "DROP", "log": "nolog"}, "cluster") == canonical(
        {"type": "in", "action": "DROP"}, "cluster"
    )
    # parse_fw_rule: s/#\s*(.*?)\s*$//
    live = from_live({"type": "in", "action": "DROP", "enable": 1, "comment": "  web  ", "log": "nolog"})
    assert live == canonical({"type": "in", "action": "DROP", "enable": 1, "comment": "web"}, "cluster")


@pytest.mark.parametrize(
    ("rule", "env", "words"),
    [
        ({"type": "in", "action": "DROP", "comment": "0"}, "cluster", "comment: $format_rules"),
        ({"type": "in", "action": "DROP", "comment": "a\nb"}, "cluster", "comment: a line feed"),
        ({"type": "in", "action": "DROP", "source": "-"}, "cluster", "source: '-' is how PVE"),
        ({"type": "in", "action": "accept"}, "cluster", "unknown action 'accept'"),
        ({"type": "forward", "action": "REJECT"}, "cluster", "cannot define REJECT rules on forward chain"),
        ({"type": "forward", "action": "DROP"}, "vm", "invalid rule type 'forward' for rule_env 'vm'"),
        ({"type": "group", "action": "web"}, "group", "invalid rule type 'group' for rule_env 'group'"),
        ({"type": "group", "action": "webgrp", "source": "10.0.0.1"}, "vm", "a group rule keeps only"),
        ({"type": "group", "action": "WebGrp"}, "vm", "in lower case"),
        ({"type": "in", "action": "DROP", "iface": "eth0"}, "vm", "net\\d+"),
        ({"type": "in", "action": "DROP", "iface": "net0"}, "group", "-i not allowed"),
        ({"type": "in", "action": "DROP", "dport": "22"}, "cluster", "'dport' requires this property"),
        (
            {"type": "in", "action": "DROP", "proto": "gre", "dport": "22"},
            "cluster",
            "does not support ports",
        ),
        (
            {"type": "in", "action": "DROP", "proto": "tcp", "dport": "70000"},
            "cluster",
            "invalid port '70000'",
        ),
        ({"type": "in", "action": "DROP", "proto": "tcp", "dport": "90:80"}, "cluster", "backwards range"),
        ({"type": "in", "action": "DROP", "proto": "TCP"}, "cluster", "unknown protocol 'TCP'"),
        ({"type": "in", "action": "DROP", "source": "10.0.0.1,::1"}, "cluster", "mixed ipv4/ipv6"),
        (
            {"type": "in", "action": "DROP", "proto": "icmp", "icmp-type": "echo"},
            "cluster",
            "invalid icmp-type",
        ),
        (
            {"type": "in", "action": "ACCEPT", "macro": "SSH", "dport": "23", "proto": "tcp"},
            "cluster",
            "macro",
        ),
        ({"type": "in", "action": "DROP", "macro": "Nope"}, "cluster", "unknown macro 'Nope'"),
        ({"type": "in", "action": "DROP", "source": "a b"}, "cluster", "white space"),
        ({"type": "in", "action": "DROP", "colour": "red"}, "cluster", "unknown key(s) colour"),
    ],
)
def test_what_pve_refuses_or_loses_is_refused_by_field(rule, env, words):
    with pytest.raises(ValueError, match=None) as caught:
        canonical(rule, env)
    assert words in str(caught.value)


def test_a_declaration_names_each_bad_rule_by_its_index():
    with pytest.raises(DeclarationError) as caught:
        listdiff.declare(
            "s", "t", "vm/510", [{"type": "in", "action": "DROP"}, {"type": "in", "action": "x"}]
        )
    assert "rules[1]: action: unknown action 'x'" in " ".join(caught.value.problems)
    with pytest.raises(DeclarationError, match="rules: expected the list"):
        listdiff.declare("s", "t", "cluster", "allow ssh")


@pytest.mark.parametrize(
    ("scope", "env", "key"),
    [
        ("cluster", "cluster", ""),
        ("node/pve1", "host", "pve1"),
        ("vm/510", "vm", "510"),
        ("ct/120", "ct", "120"),
        ("group/webgrp", "group", "webgrp"),
    ],
)
def test_scopes(scope, env, key):
    assert (parse_scope(scope).env, parse_scope(scope).key) == (env, key)


@pytest.mark.parametrize("scope", ["vm/5", "group/Web", "node/", "host/pve1", "cluster/x"])
def test_a_bad_scope_is_refused(scope):
    with pytest.raises(ValueError):
        parse_scope(scope)


def test_references_are_named_as_pve_looks_them_up():
    # verify_rule check_ipset_or_alias_property: an alias lc(), an IP set as written, sdn/ sets are SDN's.
    rule = canonical({"type": "in", "action": "ACCEPT", "source": "+dc/admins", "dest": "Web_Hosts"}, "vm")
    assert references(rule) == [("ipset", "admins", "source", "dc/"), ("alias", "web_hosts", "dest", "")]
    assert references(canonical({"type": "group", "action": "webgrp"}, "vm")) == [
        ("group", "webgrp", "action", "")
    ]
    assert references(canonical({"type": "in", "action": "DROP", "source": "+sdn/x-all"}, "vm")) == []


# ------------------------------------------------------------- what PVE stores (the fake differs)


def test_pve_reads_a_rule_back_through_its_fw_line():
    """$format_rules then parse_fw_rule: fakepve 0.5.0 keeps a rule as sent; PVE keeps the .fw line
    (tests.support.firewall.FirewallRulesPve adds the round trip)."""
    # enable: any defined true value is written without '|' and read back as 1.
    assert round_trip({"type": "in", "action": "DROP", "enable": 5}, "cluster")["enable"] == 1
    # A comment of 0 (false in Perl) and a blank one are not written.
    assert "comment" not in round_trip({"type": "in", "action": "DROP", "comment": "0"}, "cluster")
    assert round_trip({"type": "in", "action": "DROP", "comment": " ssh  "}, "cluster")["comment"] == "ssh"
    # A group rule keeps action, iface, enable and comment only.
    group = round_trip({"type": "group", "action": "web", "source": "10.0.0.1", "iface": "net0"}, "vm")
    assert group == {"type": "group", "action": "web", "iface": "net0", "enable": 1}
    # A security group's rules are saved without -i (save_clusterfw_conf: $format_rules($rules, 0)).
    assert "iface" not in round_trip({"type": "in", "action": "DROP", "iface": "vmbr0"}, "group")
    assert (
        format_rule({"type": "in", "action": "ACCEPT", "macro": "SSH", "enable": 0}, True)
        == "|IN SSH(ACCEPT)"
    )
    parsed = parse_rule("IN SSH(ACCEPT) -source +admins # ssh")
    assert parsed == {"type": "in", "action": "ACCEPT", "macro": "SSH", "source": "+admins", "comment": "ssh",
                      "enable": 1}  # fmt: skip


def test_a_rule_line_is_the_fw_line():
    rule = canonical(
        {"type": "in", "action": "ACCEPT", "macro": "SSH", "source": "+admins", "comment": "ssh"}, "vm"
    )
    assert line(rule) == "|IN SSH(ACCEPT) -source +admins # ssh"


# ------------------------------------------------------------------------------ the writes


def _bfs(live: list[dict], declared: list[dict]) -> int:
    """The fewest writes by exhaustive search over PVE's four writes (create_rule at 0, update in
    place to any declared rule, moveto, delete), lists at most one longer than either end."""
    start, goal = tuple(frozen(r) for r in live), tuple(frozen(r) for r in declared)
    targets = set(goal)
    seen, queue = {start: 0}, deque([start])
    bound = max(len(start), len(goal)) + 1
    while queue:
        here = queue.popleft()
        if here == goal:
            return seen[here]
        nexts = [(t, *here) for t in targets]
        for i in range(len(here)):
            nexts.append(here[:i] + here[i + 1 :])
            nexts += [(*here[:i], t, *here[i + 1 :]) for t in targets if t != here[i]]
            for moveto in range(len(here) + 1):
                step = moves.Step("move", {}, pos=i, moveto=moveto)
                nexts.append(tuple(frozen(r) for r in moves.simulate([dict(r) for r in here], step)))
        for there in nexts:
            if len(there) <= bound and there not in seen:
                seen[there] = seen[here] + 1
                queue.append(there)
    raise AssertionError("unreachable")


RULES = st.builds(_rule, st.sampled_from(["22", "80", "443", "53"]), st.sampled_from([None, "x"]))


@settings(max_examples=60, deadline=None)
@given(st.lists(RULES, max_size=4), st.lists(RULES, max_size=4))
# An alignment as heavy as the best pairs live 80 with the first declared 443, and 22 with the
# second: three updates; the best updates 22 to 443, inserts 22x at the top and moves 80 down.
@example(live=[_rule("80"), _rule("22"), _rule("443")],
         declared=[_rule("22", "x"), _rule("443"), _rule("443"), _rule("80")])  # fmt: skip
@example(live=[_rule("22"), _rule("443", "x"), _rule("443"), _rule("22", "x")],
         declared=[_rule("53"), _rule("443"), _rule("443", "x"), _rule("22")])  # fmt: skip
# Two live rules equal a free declared one: the one off the alignment pairs the 22 below ``first``
# (update 80x to 22x, insert 22 at the top, move 80 up: three), not the 22 above it, left to the insert.
@example(live=[_rule("80", "x"), _rule("22"), _rule("80")],
         declared=[_rule("22"), _rule("22", "x"), _rule("80"), _rule("22")])  # fmt: skip
@example(live=[_rule("22"), _rule("22", "x"), _rule("80"), _rule("22")],
         declared=[_rule("80"), _rule("80", "x"), _rule("22"), _rule("80")])  # fmt: skip
def test_the_plan_reaches_the_declaration_with_the_fewest_writes(live, declared):
    steps = moves.plan(live, declared)
    current = live
    for step in steps:
        current = moves.simulate(current, step)
        assert tuple(frozen(r) for r in current) == step.after
    assert [frozen(r) for r in current] == [frozen(r) for r in declared]
    assert len(steps) == _bfs(live, declared)
    # The lockout check's other order: the same list reached with the deletes sent last.
    current = live
    for step in moves.plan(live, declared, deletes_last=True):
        current = moves.simulate(current, step)
        assert tuple(frozen(r) for r in current) == step.after
    assert [frozen(r) for r in current] == [frozen(r) for r in declared]


def test_the_alignments_of_long_lists_pair_a_free_rule_equal_to_two_with_the_one_below_first() -> None:
    """The pairings ``plan`` uses above ``EVERY_PAIRING`` (``aligned_pairings``), on a list they once
    fell one write short on: live 22 is off the alignment and equals declared 22 above ``first`` and 22
    below it; paired with the one below (the one above left to an insert) the plan takes three writes
    (update 80x to 22x, insert 22, move 80 up), paired with the one above four."""
    live = [_rule("80", "x"), _rule("22"), _rule("80")]
    declared = [_rule("22"), _rule("22", "x"), _rule("80"), _rule("22")]
    tried = moves.aligned_pairings(live, declared)
    best = min(len(moves.steps_for(live, declared, pairs)) for pairs in tried)
    assert best == _bfs(live, declared) == 3


A, B, C, D = (_rule(port) for port in ("22", "80", "443", "53"))


@pytest.mark.parametrize(
    ("live", "declared", "writes"),
    [
        ([A, B, C, D], [B, C, D, A], {"move": 1}),  # the first rule to the end: one move, not three
        ([A, C], [A, B, C], {"insert": 1, "move": 1}),  # POST puts B at the top; one move places it
        ([B, C], [A, B, C], {"insert": 1}),  # a new first rule: the POST alone
        ([A, B, C], [C, B, A], {"move": 2}),
        ([A, B, C], [A, C], {"delete": 1}),
        ([A, B], [A, _rule("80", "web")], {"update": 1}),  # a comment: one PUT, never delete + insert
        ([], [A, B, C], {"insert": 3}),  # inserted last first, each at the top
    ],
)
def test_write_counts_of_the_design_examples(live, declared, writes):
    assert moves.counts(moves.plan(live, declared)) == writes


def test_a_move_down_is_sent_as_pve_counts_moveto():
    # update_rule: the rule goes in front of the one at moveto counted before the move; past the end: last.
    out = moves.simulate([A, B, C], moves.Step("move", A, pos=0, moveto=2))
    assert out == [B, A, C]
    assert moves.simulate([A, B, C], moves.Step("move", A, pos=0, moveto=3)) == [B, C, A]
    (step,) = moves.plan([A, B, C], [B, A, C])
    assert moves.simulate([A, B, C], step) == [B, A, C]


def test_the_plan_shows_a_diff_and_writes_without_positions():
    steps = moves.plan([A, B], [B, A])
    assert listdiff.describe(steps[0], [B, A]).startswith("move `IN ACCEPT -p tcp -dport ")
    assert "@@" in listdiff.diff([A, B], [B, A], "cluster") and "pos" not in listdiff.diff(
        [A, B], [B, A], "cluster"
    )


def test_a_rule_somebody_else_added_is_foreign_until_adopted():
    mine = {"phase": "owned", "declared": {"scope": "cluster", "rules": [A]}}
    assert listdiff.foreign([A, B], (A,), mine) == [(1, B)]
    assert listdiff.foreign([A, B], (A, B), mine) == []  # declared now
    assert (
        listdiff.foreign([B, A], (B,), {"phase": "owned", "declared": {"rules": [A, B]}}) == []
    )  # ours, to delete
    assert listdiff.foreign([A], (A,), None) == []
    assert listdiff.foreign([A, B], (A,), None) == [(1, B)]


# ------------------------------------------------------------------------------ the lockout model

API = Traffic("API traffic", "pve1", "10.0.0.5", "10.0.0.11", 8006)
SSH = Traffic("SSH", "pve1", "10.0.0.5", "10.0.0.11", 22)
ON = {"enable": 1}


def _fw(cluster=(), node=(), **more) -> Firewall:
    opts = more.pop("options", ON)
    return Firewall(opts, more.pop("node_options", {}), [canonical(r, "cluster") for r in cluster],
                    {"pve1": [canonical(r, "host") for r in node]}, **more)  # fmt: skip


def test_nothing_is_filtered_while_the_cluster_firewall_is_off():
    # compile: return ({}, {}, {}, {}) if !$cluster_conf->{options}->{enable}
    assert verdict(_fw([{"type": "in", "action": "DROP", "enable": 1}], options={}), API).accepted
    # compile_iptables_filter: $hostfw_enable is false only for a node's enable: 0.
    fw = _fw([{"type": "in", "action": "DROP", "enable": 1}], node_options={"pve1": {"enable": 0}})
    assert verdict(fw, API).accepted


def test_the_policy_drops_what_no_rule_and_not_the_management_ip_set_accepts():
    # enable_host_firewall: policy_in defaults to DROP; the management IP set is accepted on 8006 and 22.
    by = verdict(_fw(), API)
    assert not by.accepted and "policy_in DROP" in by.by
    assert verdict(_fw(ipsets={"management": [{"cidr": "10.0.0.0/24"}]}), API).accepted
    assert verdict(_fw(aliases={"local_network": "10.0.0.0/16"}), SSH).accepted
    nomatch = [{"cidr": "10.0.0.0/16"}, {"cidr": "10.0.0.5", "nomatch": 1}]
    assert not verdict(_fw(ipsets={"management": nomatch}), API).accepted
    assert verdict(_fw(options={"enable": 1, "policy_in": "ACCEPT"}), API).accepted


def test_node_rules_come_before_the_clusters():
    # enable_host_firewall: foreach my $rule (@$rules, @$cluster_rules) - "add host rules first".
    drop = {"type": "in", "action": "DROP", "proto": "tcp", "dport": "8006", "enable": 1}
    accept = {"type": "in", "action": "ACCEPT", "source": "10.0.0.0/24", "enable": 1}
    assert verdict(_fw([drop], [accept]), API).accepted
    by = verdict(_fw([accept], [drop]), API)
    assert not by.accepted and by.by == "node pve1 rule 0 `IN DROP -p tcp -dport 8006`"


def test_what_the_model_cannot_see_counts_against_the_minion():
    on_iface = {"type": "in", "action": "DROP", "iface": "vmbr0", "enable": 1}
    assert "if it arrives on vmbr0" in verdict(_fw([on_iface]), API).by
    accept_iface = {"type": "in", "action": "ACCEPT", "iface": "vmbr0", "enable": 1}
    assert not verdict(_fw([accept_iface]), API).accepted
    disabled = {"type": "in", "action": "DROP", "enable": 0}
    assert verdict(_fw([disabled], options={"enable": 1, "policy_in": "ACCEPT"}), API).accepted


def test_a_macro_and_a_group_are_followed():
    ssh = {"type": "in", "action": "DROP", "macro": "SSH", "enable": 1}
    assert not verdict(_fw([ssh], options={"enable": 1, "policy_in": "ACCEPT"}), SSH).accepted
    assert verdict(_fw([ssh], options={"enable": 1, "policy_in": "ACCEPT"}), API).accepted
    group = [
        canonical(
            {"type": "in", "action": "REJECT", "proto": "tcp", "dport": "8000:8010", "enable": 1}, "group"
        )
    ]
    fw = _fw([{"type": "group", "action": "admin", "enable": 1}], groups={"admin": group},
             options={"enable": 1, "policy_in": "ACCEPT"})  # fmt: skip
    by = verdict(fw, API)
    assert not by.accepted and "security group admin rule 0" in by.by and "through cluster rule 0" in by.by


def test_lockout_refuses_a_change_that_drops_what_passes_now_and_only_notes_what_the_model_cannot_explain():
    before = _fw(ipsets={"management": [{"cidr": "10.0.0.0/24"}]})
    after = _fw([{"type": "in", "action": "DROP", "proto": "tcp", "dport": "8006", "enable": 1}],
                ipsets={"management": [{"cidr": "10.0.0.0/24"}]})  # fmt: skip
    refusals, notes = lockout(after, [API, SSH], before)
    assert refusals == [
        "cluster rule 0 `IN DROP -p tcp -dport 8006` would drop this minion's API traffic (tcp 10.0.0.5 → "
        "10.0.0.11:8006 on node pve1)"
    ]
    refusals, notes = lockout(after, [API], _fw())
    assert refusals == [] and "dropped already" in notes[0]


# ------------------------------------------------------------------------------ the Salt skin


@pytest.mark.parametrize("test", [True, False])
def test_the_state_passes_test_state_id_and_every_key(test):
    from tests.support.salt_modules import Recorder, load

    salt = Recorder("proxmox.firewall_rules_present", "proxmox.firewall_rules_absent")
    module = load("_states", "proxmox_firewall", salt, test, low={"__id__": "fw-id", "name": "vm/510"})
    assert module.__virtual__() == "proxmox_firewall"
    module.rules("vm/510", rules=[SSH_RULE], colour="red", __pub_fun="state.apply")
    module.rules_absent("vm/510", removal="destroy")
    (present, _, passed), (absent, _, gone) = salt.calls
    assert (present, passed["test"], passed["state_id"], passed["rules"]) == (
        "proxmox.firewall_rules_present", test, "fw-id", [SSH_RULE]
    )  # fmt: skip
    assert passed["colour"] == "red" and "__pub_fun" not in passed
    assert (absent, gone["removal"], gone["state_id"]) == (
        "proxmox.firewall_rules_absent",
        "destroy",
        "fw-id",
    )


SSH_RULE = {"type": "in", "action": "ACCEPT", "macro": "SSH", "enable": 1}


def test_a_state_between_two_writes_that_drops_the_minion_is_named_by_its_write():
    """lockout_check judges every state the writes pass through, not only the end."""
    first = canonical({"type": "in", "action": "ACCEPT", "source": "10.0.0.0/24", "enable": 1}, "cluster")
    rest = canonical({"type": "in", "action": "DROP", "enable": 1}, "cluster")
    second = canonical({"type": "in", "action": "ACCEPT", "source": "10.0.0.5", "enable": 1}, "cluster")
    before = _fw([first, rest, second], options={"enable": 1, "policy_in": "ACCEPT"})
    decl = listdiff.declare("s", "t", "cluster", [second, rest])
    deletes_first = moves.plan([first, rest, second], [second, rest])
    assert [step.op for step in deletes_first] == ["delete", "move"]
    named = listdiff.passing(before, decl, deletes_first, [API])
    assert named == [
        "after write 1 of 2 (delete `IN ACCEPT -source 10.0.0.0/24`): cluster rule 0 `IN DROP` would drop "
        "this minion's API traffic (tcp 10.0.0.5 → 10.0.0.11:8006 on node pve1)"
    ]
    assert (
        listdiff.passing(before, decl, moves.plan([first, rest, second], [second, rest], True), [API]) == []
    )
