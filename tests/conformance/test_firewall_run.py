"""Through the state module and the ``proxmox`` execution module (not the contract, which runs each
family's first kind): an alias, an IP set or a security group that a ``proxmox_firewall.rules`` state
(or an IP set entry) of the same run still names is neither deleted nor renamed, so the run's declared
rules reach the usage scan (``salt_proxmox.firewall.usage.declared_places``, read from the state run
``run.memo.current_run`` keeps), and the refusal names the declaring state."""

from __future__ import annotations

from tests.conformance.conftest import Minion
from tests.support.cluster import ROUTER_VMID
from tests.support.saltworld import Low


def test_a_group_a_rule_of_the_same_run_uses_is_not_deleted(minion: Minion) -> None:
    made, _ = minion.run([Low("proxmox_firewall", "group", {"name": "webgrp"})], test=False)
    assert made[0]["result"] is True, made
    gone = Low("proxmox_firewall", "group_absent", {"name": "webgrp", "removal": "destroy"})
    rules = Low(
        "proxmox_firewall",
        "rules",
        {"name": f"vm/{ROUTER_VMID}", "rules": [{"type": "group", "action": "webgrp", "enable": 1}]},
        "guest-rules",
    )
    (refused, _rules), log = minion.run([gone, rules], test=True)
    assert refused["result"] is False and f"declared VM {ROUTER_VMID} rule 0 (group)" in refused["comment"]
    assert [method for method, _, _ in log if method != "GET"] == []
    (planned,), _ = minion.run([gone], test=True)
    assert planned["result"] is None and "deleted" in planned["changes"], planned


# A rule declared in this run counts as much as a live one (docs/design.md §7, "In use"): PVE deletes an
# alias, an IP set or a security group whatever names it, and the rule then silently stops matching
# (pve-firewall src/PVE/Firewall.pm resolve_alias `no such alias`, ipt_gen_src_or_dst_match `no such
# ipset`, generate_group_rules `no such security group`). Each case: the object made and owned first, then
# one plan holding its removal and a proxmox_firewall.rules state of the same run naming it.

_GUEST_RULES = f"vm/{ROUTER_VMID}"


def _rules_state(rule: dict) -> Low:
    return Low(
        "proxmox_firewall", "rules", {"name": _GUEST_RULES, "rules": [{**rule, "enable": 1}]}, "guest-rules"
    )


def _refused_naming_the_rules_state(minion: Minion, made: Low, removal: Low, rule: dict, phrase: str) -> None:
    done, _ = minion.run([made], test=False)
    assert done[0]["result"] is True, done
    rows = minion.rows()
    (refused, _rules), log = minion.run([removal, _rules_state(rule)], test=True)
    assert refused["result"] is False, refused
    assert f"declared VM {ROUTER_VMID} rule 0 ({phrase})" in refused["comment"], refused["comment"]
    assert "state guest-rules" in refused["comment"], refused["comment"]
    assert [method for method, _, _ in log if method != "GET"] == []
    assert minion.rows() == rows
    (planned,), _ = minion.run([removal], test=True)
    assert planned["result"] is None and planned["changes"], planned


def test_an_alias_a_rule_of_the_same_run_names_is_not_deleted(minion: Minion) -> None:
    alias = {"name": "webnet", "cidr": "10.9.4.0/24"}
    _refused_naming_the_rules_state(
        minion,
        Low("proxmox_firewall_alias", "present", alias),
        Low("proxmox_firewall_alias", "absent", {"name": "webnet", "removal": "destroy"}),
        {"type": "in", "action": "ACCEPT", "source": "webnet"},
        "source",
    )


def test_an_ip_set_a_rule_of_the_same_run_names_is_not_deleted(minion: Minion) -> None:
    _refused_naming_the_rules_state(
        minion,
        Low("proxmox_firewall", "ipset", {"name": "webset", "cidrs": ["10.9.5.0/24"]}),
        Low("proxmox_firewall", "ipset_absent", {"name": "webset", "removal": "destroy"}),
        {"type": "in", "action": "ACCEPT", "dest": "+webset"},
        "dest",
    )


def test_a_group_a_rule_of_the_same_run_uses_is_refused_naming_the_rules_state(minion: Minion) -> None:
    _refused_naming_the_rules_state(
        minion,
        Low("proxmox_firewall", "group", {"name": "webgrp"}),
        Low("proxmox_firewall", "group_absent", {"name": "webgrp", "removal": "destroy"}),
        {"type": "group", "action": "webgrp"},
        "group",
    )


def test_an_alias_a_rule_of_the_same_run_names_is_not_renamed(minion: Minion) -> None:
    alias = {"name": "webnet", "cidr": "10.9.4.0/24"}
    renamed = Low("proxmox_firewall_alias", "present", {**alias, "name": "webnet2", "rename_from": "webnet"})
    done, _ = minion.run([Low("proxmox_firewall_alias", "present", alias)], test=False)
    assert done[0]["result"] is True, done
    rows = minion.rows()
    rule = {"type": "in", "action": "ACCEPT", "source": "webnet"}
    (refused, _rules), log = minion.run([renamed, _rules_state(rule)], test=True)
    assert refused["result"] is False, refused
    assert f"declared VM {ROUTER_VMID} rule 0 (source)" in refused["comment"], refused["comment"]
    assert "state guest-rules" in refused["comment"], refused["comment"]
    assert [method for method, _, _ in log if method != "GET"] == []
    assert minion.rows() == rows
    (planned,), _ = minion.run([renamed], test=True)
    assert planned["result"] is None and planned["changes"].get("renamed"), planned


def test_an_alias_an_ip_set_entry_of_the_same_run_names_is_not_deleted(minion: Minion) -> None:
    # An IP set entry names an alias as a rule does (pve-firewall API2/Firewall/IPSet.pm create_ip:
    # resolve_alias `no such alias`): deleted first, the alias would fail the set's create in the apply.
    alias = {"name": "webnet", "cidr": "10.9.4.0/24"}
    done, _ = minion.run([Low("proxmox_firewall_alias", "present", alias)], test=False)
    assert done[0]["result"] is True, done
    rows = minion.rows()
    gone = Low("proxmox_firewall_alias", "absent", {"name": "webnet", "removal": "destroy"})
    admins = Low("proxmox_firewall", "ipset", {"name": "admins", "cidrs": ["webnet"]}, "admins-set")
    (refused, _set), log = minion.run([gone, admins], test=True)
    assert refused["result"] is False, refused
    assert "declared cluster IP set admins entry webnet in state admins-set" in refused["comment"], refused
    assert [method for method, _, _ in log if method != "GET"] == []
    assert minion.rows() == rows


def test_a_guest_s_own_ip_set_a_rule_of_the_same_run_names_is_not_deleted(minion: Minion) -> None:
    # In a guest's rules a bare +<name> is the guest's own set when it has one (pve-firewall
    # ipt_gen_src_or_dst_match: the guest's configuration first), so deleting it is refused as well.
    scoped = {"name": "webset", "scope": _GUEST_RULES}
    _refused_naming_the_rules_state(
        minion,
        Low("proxmox_firewall", "ipset", {**scoped, "cidrs": ["10.9.5.0/24"]}),
        Low("proxmox_firewall", "ipset_absent", {**scoped, "removal": "destroy"}),
        {"type": "in", "action": "ACCEPT", "source": "+webset"},
        "source",
    )
