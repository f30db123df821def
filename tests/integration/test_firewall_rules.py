"""Firewall rule lists (proxmox_firewall.rules) against the served fake cluster, whose rules API follows
pve-firewall's API2/Firewall/Rules.pm (a POST inserts at the top and checks no digest, a PUT with moveto
moves and ignores every other field, PUT and DELETE check the list's digest) and whose rules read back
as PVE writes and parses them (tests/support/firewall.py)."""

from __future__ import annotations

import pytest

from salt_proxmox.firewall import listcheck, moves, reach, rules
from salt_proxmox.firewall.lifecycle import present as alias_present
from salt_proxmox.firewall.ruleset import canonical, line
from salt_proxmox.ownership.stores import MemoryStore
from salt_proxmox.pve.errors import PveError
from salt_proxmox.run.lowstate import Run
from salt_proxmox.run.memo import keep_run
from tests.support.cluster import ROUTER_NODE, ROUTER_VMID
from tests.support.firewall import firewall_admin
from tests.support.guests import make_context, requests_since, static_targets, writes

SCOPE = f"vm/{ROUTER_VMID}"
GUEST = f"/nodes/{ROUTER_NODE}/qemu/{ROUTER_VMID}/firewall/rules"
SSH = {"type": "in", "action": "ACCEPT", "macro": "SSH", "enable": 1, "comment": "ssh"}
WEB = {"type": "in", "action": "ACCEPT", "proto": "tcp", "dport": "80,443", "enable": 1}
DNS = {"type": "in", "action": "ACCEPT", "macro": "DNS", "enable": 1}
DROP = {"type": "in", "action": "DROP", "enable": 1, "comment": "the rest"}


@pytest.fixture
def admin(fresh_cluster):
    """Another administrator's token, allowed to edit every firewall scope."""
    return firewall_admin(fresh_cluster)


class Minion:
    """One minion's rows, each run a fresh context (a run memo of its own), as salt-call runs do."""

    def __init__(self, served):
        self.served = served
        self.store = MemoryStore()

    def context(self):
        return make_context(static_targets(self.served), store=self.store)

    def run(self, test: bool, scope: str = SCOPE, ctx=None, **declared):
        start = len(self.served.pve.requests)
        outcome = rules.present(ctx or self.context(), test, f"rules-{scope}", name=scope, **declared)
        return outcome, writes(requests_since(self.served, start))


def _live(fresh_cluster, scope_path: str = GUEST) -> list[str]:
    ctx = make_context(static_targets(fresh_cluster))
    return [line(rule) for rule in listcheck.read(ctx, scope_path.lstrip("/")).rules]


def test_a_reordered_list_is_planned_and_applied_with_the_fewest_writes_then_plans_clean(fresh_cluster):
    minion = Minion(fresh_cluster)
    first = [SSH, WEB, DNS, DROP]
    done, sent = minion.run(False, rules=first)
    assert done.result is True, done.comment
    # create_rule unshifts: four POSTs, last rule first, and never a move.
    assert [method for method, *_ in sent] == ["POST"] * 4
    assert _live(fresh_cluster) == [line(canonical(r, "vm")) for r in first]

    reordered = [DROP, SSH, WEB, DNS]  # the last rule to the top: one move, not three
    plan, sent = minion.run(True, rules=reordered)
    assert plan.result is None and sent == []
    assert plan.changes["writes"] == ["move `IN DROP # the rest` to the top"]
    diff = plan.changes["rules"]["diff"]
    assert "-IN DROP # the rest" in diff and "+IN DROP # the rest" in diff and "pos" not in diff

    done, sent = minion.run(False, rules=reordered)
    assert done.result is True, done.comment
    assert [(method, path) for method, path, _ in sent] == [("PUT", f"{GUEST}/3")]
    assert "moveto=0" in str(sent[0][2]) and "digest=" in str(sent[0][2])
    assert _live(fresh_cluster)[0] == "IN DROP # the rest"

    again, sent = minion.run(True, rules=reordered)
    assert again.result is True and again.changes == {} and sent == []


def test_an_insert_in_the_middle_is_a_post_and_one_move_each_after_a_read(fresh_cluster):
    minion = Minion(fresh_cluster)
    assert minion.run(False, rules=[SSH, DROP])[0].result is True
    start = len(fresh_cluster.pve.requests)
    done, sent = minion.run(False, rules=[SSH, WEB, DROP])
    assert done.result is True, done.comment
    assert [m for m, *_ in sent] == ["POST", "PUT"]
    log = requests_since(fresh_cluster, start)
    # Each write follows a read of the list (the POST cannot be digest-guarded: create_rule takes none).
    methods = [m for m, path, _ in log if path == GUEST or path.startswith(GUEST + "/")]
    assert methods[methods.index("POST") - 1] == "GET" and methods[methods.index("PUT") - 1] == "GET"
    assert _live(fresh_cluster) == [line(canonical(r, "vm")) for r in (SSH, WEB, DROP)]


def test_a_concurrent_edit_stops_the_apply_and_nothing_of_it_is_overwritten(
    fresh_cluster, admin, monkeypatch
):
    minion = Minion(fresh_cluster)
    assert minion.run(False, rules=[SSH, DROP])[0].result is True
    real = rules.send
    calls = []

    def send_then_edit(ctx, path, step, digest):
        real(ctx, path, step, digest)
        calls.append(step.op)
        if len(calls) == 1:  # somebody adds a rule between our writes
            admin("POST", GUEST.lstrip("/").removeprefix("api2/json/"), type="in", action="ACCEPT",
                  proto="tcp", dport="3306", enable="1", comment="theirs")  # fmt: skip

    monkeypatch.setattr(rules, "send", send_then_edit)
    done, sent = minion.run(False, rules=[SSH, WEB, DNS, DROP])
    assert done.result is False
    assert (
        "changed since it was read" in " ".join(done.comment)
        and "stopped before write 2 of" in done.comment[-1]
    )
    assert calls == ["insert"], "nothing is sent after the change is seen"
    assert "IN ACCEPT -p tcp -dport 3306 # theirs" in _live(fresh_cluster)

    # The next plan refuses their rule until it is declared or adopted; never deletes it.
    monkeypatch.setattr(rules, "send", real)
    plan, sent = minion.run(True, rules=[SSH, WEB, DNS, DROP])
    assert plan.result is False and sent == []
    assert "`IN ACCEPT -p tcp -dport 3306 # theirs`" in " ".join(plan.comment)


def test_a_stale_digest_is_refused_by_pve_on_a_put(fresh_cluster, admin):
    """update_rule: PVE::Tools::assert_if_modified($digest, $param->{digest})."""
    minion = Minion(fresh_cluster)
    assert minion.run(False, rules=[SSH, DROP])[0].result is True
    ctx = minion.context()
    live = listcheck.read(ctx, GUEST.lstrip("/"))
    admin("POST", GUEST.lstrip("/"), type="in", action="DROP", enable="0")
    step = moves.plan(live.rules, [live.rules[1], live.rules[0]])[0]
    with pytest.raises(PveError, match="detected modified configuration"):
        rules.send(ctx, GUEST.lstrip("/"), step, live.digest)


def test_rules_this_minion_did_not_write_are_refused_without_adopt(fresh_cluster, admin):
    admin("POST", GUEST.lstrip("/"), type="in", action="ACCEPT", macro="HTTP", enable="1")
    minion = Minion(fresh_cluster)
    for test in (True, False):
        done, sent = minion.run(test, rules=[SSH])
        assert done.result is False and sent == []
        text = " ".join(done.comment)
        assert "rule 0 `IN HTTP(ACCEPT)`" in text and "adopt: true" in text
    done, sent = minion.run(False, rules=[SSH], adopt=True)
    assert done.result is True, done.comment
    assert [m for m, *_ in sent] == ["PUT"], "adopted, the HTTP rule is turned into the SSH rule in place"
    assert minion.run(True, rules=[SSH])[0].changes == {}


def test_a_rule_naming_a_missing_alias_ipset_or_group_is_refused_at_plan(fresh_cluster):
    minion = Minion(fresh_cluster)
    declared = [
        {"type": "in", "action": "ACCEPT", "source": "admins_net", "enable": 1},
        {"type": "in", "action": "ACCEPT", "source": "+admins", "enable": 1},
        {"type": "group", "action": "webgrp", "enable": 1},
    ]
    done, sent = minion.run(True, rules=declared)
    assert done.result is False and sent == []
    text = " ".join(done.comment)
    assert "rules[0] `IN ACCEPT -source admins_net`: source names alias admins_net" in text
    assert "rules[1] `IN ACCEPT -source +admins`: source names IP set admins" in text
    assert "rules[2] `GROUP webgrp`: action names security group webgrp" in text
    assert "match nothing (generate_group_rules)" in text


def test_an_alias_created_earlier_in_the_run_counts_as_existing(fresh_cluster):
    minion = Minion(fresh_cluster)
    ctx = minion.context()
    assert alias_present(ctx, True, "admins_net", name="admins_net", cidr="192.0.2.0/24").result is None
    done, _ = minion.run(True, ctx=ctx, rules=[{"type": "in", "action": "ACCEPT", "source": "admins_net"}])
    assert done.result is None, done.comment


# ------------------------------------------------------------------------------------ lockout

MINION = "10.9.9.9"
CLUSTER = "/cluster/firewall/rules"


@pytest.fixture
def guarded(fresh_cluster, admin, monkeypatch):
    """The cluster firewall on, the minion's address in the management IP set, and the minion's route
    to every member and node from that address."""
    monkeypatch.setattr(reach, "route_source", lambda dest: MINION)
    fresh_cluster.pve.firewall_config("cluster")["options"]["enable"] = 1
    admin("POST", "cluster/firewall/ipset", name="management")
    admin("POST", "cluster/firewall/ipset/management", cidr="10.9.9.0/24")
    return fresh_cluster


def test_a_lockout_is_refused_naming_the_rule_and_allowed_with_allow_lockout(guarded):
    minion = Minion(guarded)
    block = {"type": "in", "action": "DROP", "proto": "tcp", "dport": "8006", "enable": 1}
    for test in (True, False):
        done, sent = minion.run(test, scope="cluster", rules=[block])
        assert done.result is False and sent == []
        text = " ".join(done.comment)
        assert (
            "cluster rule 0 `IN DROP -p tcp -dport 8006` would drop this minion's API traffic (tcp 10.9.9.9"
            in text
        )
        assert "allow_lockout: true" in text
    plan, sent = minion.run(True, scope="cluster", rules=[block], allow_lockout=True)
    assert plan.result is None and sent == []
    assert "allow_lockout: true, so this is not refused" in " ".join(plan.comment)
    done, sent = minion.run(False, scope="cluster", rules=[block], allow_lockout=True)
    assert done.result is True and [(m, p) for m, p, _ in sent] == [("POST", CLUSTER)]


def test_an_insert_that_would_drop_the_minion_until_its_move_is_sent_disabled_then_enabled(guarded):
    minion = Minion(guarded)
    guarded.pve.firewall_config("cluster")["options"]["policy_in"] = "ACCEPT"
    allow = {"type": "in", "action": "ACCEPT", "source": "10.9.9.0/24", "enable": 1, "comment": "minion"}
    everything = {"type": "in", "action": "DROP", "enable": 1, "comment": "the rest"}
    assert minion.run(False, scope="cluster", rules=[allow])[0].result is True
    plan, _ = minion.run(True, scope="cluster", rules=[allow, everything])
    assert plan.result is None, plan.comment
    # POST `IN DROP` at the top would drop the API until it is moved: it goes in disabled.
    assert plan.changes["writes"] == [
        "insert `|IN DROP # the rest`",
        "move `|IN DROP # the rest` below `IN ACCEPT -source 10.9.9.0/24 # minion`",
        "update `|IN DROP # the rest` to `IN DROP # the rest`",
    ]
    done, sent = minion.run(False, scope="cluster", rules=[allow, everything])
    assert done.result is True, done.comment
    assert [m for m, *_ in sent] == ["POST", "PUT", "PUT"] and "enable=0" in str(sent[0][2])
    assert minion.run(True, scope="cluster", rules=[allow, everything])[0].changes == {}


def test_a_destroy_deletes_only_a_list_that_is_still_its_last_declaration(fresh_cluster, admin):
    minion = Minion(fresh_cluster)
    assert minion.run(False, rules=[SSH, DROP])[0].result is True
    start = len(fresh_cluster.pve.requests)
    done = rules.absent(minion.context(), False, "rules", name=SCOPE, removal="destroy")
    assert done.result is True, done.comment
    assert [m for m, *_ in writes(requests_since(fresh_cluster, start))] == ["DELETE", "DELETE"]
    assert _live(fresh_cluster) == []
    assert minion.run(False, rules=[SSH])[0].result is True
    admin("POST", GUEST.lstrip("/"), type="in", action="DROP", enable="1")
    done = rules.absent(minion.context(), False, "rules", name=SCOPE, removal="destroy")
    assert done.result is False and "no longer its last declaration" in done.comment[0]


def test_a_guest_the_run_creates_first_plans_its_rules_from_an_empty_list(fresh_cluster):
    """The formula makes a guest's rules require the guest; a plan of both has no guest to read yet."""
    minion = Minion(fresh_cluster)
    start = len(fresh_cluster.pve.requests)
    ctx = minion.context()
    guest = {"state": "proxmox_qemu", "fun": "present", "__id__": "vm290", "vmid": 290, "node": "pve1"}
    ctx.begin("run")
    keep_run(ctx.memo, Run([guest], None, "run"))
    plan = rules.present(ctx, True, "rules-vm/290", name="vm/290", rules=[SSH])
    assert plan.result is None, plan.comment
    assert plan.changes["writes"] == ["insert `IN SSH(ACCEPT) # ssh`"]
    assert any("VM 290 is created earlier in this run (on pve1)" in line for line in plan.comment)
    assert writes(requests_since(fresh_cluster, start)) == []
    # Not in the run, the same guest is refused: its firewall has no place to be written.
    alone = rules.present(minion.context(), True, "rules-vm/290", name="vm/290", rules=[SSH])
    assert alone.result is False and "lists no guest 290" in alone.comment[0]


def test_pve_inserts_at_the_top_whatever_pos_says_and_a_move_ignores_every_other_field(fresh_cluster, admin):
    """create_rule: unshift @$rules (pos is in the schema and ignored); update_rule with moveto: the
    rule moves and copy_rule_data is not reached. So the plan never counts on either."""
    path = GUEST.lstrip("/")
    admin("POST", path, type="in", action="ACCEPT", proto="tcp", dport="22", enable="1")
    admin("POST", path, type="in", action="ACCEPT", proto="tcp", dport="80", enable="1", pos="1")
    assert _live(fresh_cluster) == ["IN ACCEPT -p tcp -dport 80", "IN ACCEPT -p tcp -dport 22"]
    admin("PUT", f"{path}/0", moveto="2", comment="ignored", enable="0")
    assert _live(fresh_cluster) == ["IN ACCEPT -p tcp -dport 22", "IN ACCEPT -p tcp -dport 80"]


def test_deletes_go_last_when_deleting_first_would_cut_the_minion_off_in_between(guarded):
    """Deleting the first ACCEPT before the second one moves above the DROP would drop the minion in
    between, though the end state lets it through: the same writes go with the delete last."""
    minion = Minion(guarded)
    guarded.pve.firewall_config("cluster")["options"]["policy_in"] = "ACCEPT"
    first = {"type": "in", "action": "ACCEPT", "source": "10.9.9.0/24", "enable": 1, "comment": "one"}
    rest = {"type": "in", "action": "DROP", "enable": 1, "comment": "the rest"}
    second = {"type": "in", "action": "ACCEPT", "source": "10.9.9.9", "enable": 1, "comment": "two"}
    assert minion.run(False, scope="cluster", rules=[first, rest, second], allow_lockout=True)[0].result
    plan, sent = minion.run(True, scope="cluster", rules=[second, rest])
    assert plan.result is None and sent == [], plan.comment
    writes_planned = plan.changes["writes"]
    assert writes_planned[0].startswith("move ") and writes_planned[1:] == [
        "delete `IN ACCEPT -source 10.9.9.0/24 # one`"
    ]
    assert any("the deletes are sent last" in line for line in plan.comment)
    done, sent = minion.run(False, scope="cluster", rules=[second, rest])
    assert done.result is True and [m for m, *_ in sent] == ["PUT", "DELETE"], done.comment
