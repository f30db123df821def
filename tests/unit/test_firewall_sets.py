"""The pure rules of firewall options, IP sets, security groups and the usage scan, beside the
pve-firewall 6.0.4 (git 6f1311f) source of each; where fakepve answers otherwise than PVE, PVE's
spelling is the live value here."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from salt_proxmox.errors import DeclarationError
from salt_proxmox.firewall import group, ipset, options, usage
from salt_proxmox.firewall.scope import parse as parse_scope


def _opts(name="cluster", **values):
    return options.declare("s", "t", name=name, **values)


def test_each_scope_takes_its_own_option_table():
    # $cluster_option_properties has no nf_conntrack_max; $host_option_properties no policy_in.
    with pytest.raises(DeclarationError, match="nf_conntrack_max: property is not defined in schema"):
        _opts(nf_conntrack_max=262144)
    with pytest.raises(DeclarationError, match="policy_in: property is not defined in schema"):
        _opts("node/pve1", policy_in="DROP")
    with pytest.raises(DeclarationError, match="minimum value of 32768"):
        _opts("node/pve1", nf_conntrack_max=1024)
    assert _opts("ct/120", macfilter=0).values == {"macfilter": 0}


def test_pve_defaults_and_spellings_are_no_drift():
    # policy_in DROP (generate_tap_rules_direction: `|| 'DROP'`), dhcp on unless 0 (ruleset_create_vm_chain,
    # though the schema says default 0), log levels lower-cased and policies upper-cased (parse_vmfw_option).
    decl = _opts("vm/510", policy_in="drop", dhcp=True, log_level_in="INFO", enable="yes")
    assert decl.values == {"policy_in": None, "dhcp": None, "log_level_in": "info", "enable": 1}
    live = options.parse({"enable": 1, "log_level_in": "info", "dhcp": 1, "digest": "x"}, decl)
    assert live == decl.values
    assert options.parse({"policy_in": "DROP", "digest": "x"}, _opts("vm/510", policy_in="DROP")) == {
        "policy_in": None
    }


def test_the_cluster_enable_time_stamp_is_enabled_and_never_declared():
    # set_options stores time() for enable > 1; parse_clusterfw_option reads it as 0 once 60 s old. fakepve
    # keeps the time stamp forever: a live time stamp reads as enabled here, and a declared one is refused.
    decl = _opts(enable=1)
    assert options.parse({"enable": 1764600000, "digest": "x"}, decl) == {"enable": 1}
    # A minute later PVE answers 0: the firewall went off, so declaring 1 writes 1 (stored as 1, no stamp).
    assert options.parse({"enable": 0, "digest": "x"}, decl) == {"enable": None} != decl.values
    with pytest.raises(DeclarationError, match="time stamp"):
        _opts(enable=2)


def test_log_ratelimit_compares_with_its_defaults_filled_in():
    # $cluster_option_properties log_ratelimit: enable (default_key, 1), rate 1/second, burst 5.
    assert _opts(log_ratelimit="1,burst=5").values == {"log_ratelimit": None}
    assert _opts(log_ratelimit="enable=1,burst=10").values == {
        "log_ratelimit": "enable=1,rate=1/second,burst=10"
    }
    with pytest.raises(DeclarationError, match="rate"):
        _opts(log_ratelimit="rate=fast")


def test_a_dropping_options_change_is_handed_to_the_lockout_check(monkeypatch):
    seen = []
    from salt_proxmox.firewall import guard

    monkeypatch.setattr(
        guard, "options_lockout", lambda ctx, scope, cut: seen.append((scope, dict(cut))) or ["no"]
    )
    decl = _opts(enable=1, policy_in="REJECT", ebtables=0)
    assert options.refusals(None, decl, "update", {"enable": None, "policy_in": None, "ebtables": None}) == [
        "no"
    ]
    assert seen == [("cluster", {"enable": 1, "policy_in": "REJECT"})]
    allowed = _opts(enable=1, allow_lockout=True)
    assert options.refusals(None, allowed, "update", {"enable": None}) == []
    assert options.refusals(None, _opts(ebtables=0), "create", None) == []


def test_ip_set_entries_compare_as_pve_normalises_them():
    # create_ip: clean_cidr drops host bits, parse_ip_or_cidr drops /32 and /128; a bare IPv6 address is
    # stored as sent (clean_cidr returns it untouched), so PVE may hold 2001:DB8::1 where ipaddress says
    # 2001:db8::1: compared in one spelling, never a forever diff.
    assert ipset.canonical_cidr("10.0.0.5/24") == "10.0.0.0/24"
    assert ipset.canonical_cidr("10.0.0.5/32") == "10.0.0.5"
    assert ipset.canonical_cidr("2001:DB8::1") == "2001:db8::1"
    assert ipset.canonical_cidr("2001:DB8::1:0/112") == "2001:db8::1:0/112"
    assert ipset.canonical_cidr("dc/Lab_Net") == "dc/Lab_Net"
    with pytest.raises(ValueError, match="zero prefix"):
        ipset.canonical_cidr("10.0.0.0/0")
    entries = ipset.live_entries(
        [{"cidr": "2001:DB8::1", "digest": "d"}, {"cidr": "10.0.0.0/8", "nomatch": 1}],
        ipset.identify("s", "t", name="xs"),
    )
    assert entries == [
        {"cidr": "10.0.0.0/8", "nomatch": 1, "comment": ""},
        {"cidr": "2001:db8::1", "nomatch": 0, "comment": ""},
    ]


def test_ip_set_declarations_refuse_what_pve_would_not_keep():
    with pytest.raises(DeclarationError, match="already exists"):
        ipset.declare("s", "t", name="admins", cidrs=["10.0.0.5/24", "10.0.0.0/24"])
    # parse_fw_config reads [IPSET Admins] back as admins; a rule's +Admins then finds nothing.
    with pytest.raises(DeclarationError, match="declare admins"):
        ipset.declare("s", "t", name="Admins")
    with pytest.raises(DeclarationError, match="scope"):
        ipset.declare("s", "t", name="admins", scope="node/pve1")
    assert ipset.identify("s", "t", name="admins", scope="vm/510").identity == "vm/510/admins"
    assert ipset.identify("s", "t", name="admins", scope=None).identity == "admins"  # a chunk without scope


def test_ip_set_steps_guard_each_entry_write_with_what_pve_checks():
    # IPSet.pm: update_ip and remove_ip check the entry list's digest; create_ip takes none.
    decl = ipset.declare("s", "t", name="aa", cidrs=["10.0.0.0/8", {"cidr": "10.1.0.0/16", "nomatch": True}])
    live = {
        "comment": "",
        "cidrs": [
            {"cidr": "10.1.0.0/16", "nomatch": 0, "comment": ""},
            {"cidr": "10.2.0.0/16", "nomatch": 0, "comment": ""},
        ],
    }
    plan = ipset.steps("cluster/firewall", decl, live)
    assert [(s.call.method, s.call.path, s.guard) for s in plan] == [
        ("DELETE", "cluster/firewall/ipset/aa/10.2.0.0%2F16", "entries"),
        ("PUT", "cluster/firewall/ipset/aa/10.1.0.0%2F16", "entries"),
        ("POST", "cluster/firewall/ipset/aa", "check"),
    ]
    assert plan[-1].after == decl.values["cidrs"]


def test_group_names_are_lower_case_and_18_long():
    # $max_group_name_length 18; parse_fw_config reads [group WebGrp] back as webgrp.
    with pytest.raises(DeclarationError, match="declare webgrp"):
        group.declare("s", "t", name="WebGrp")
    with pytest.raises(DeclarationError, match="2 to 18"):
        group.declare("s", "t", name="a" * 19)
    assert group.declare("s", "t", name="web-grp_1", comment=" tier ").values == {"comment": "tier"}


def test_usage_matches_ip_sets_and_groups_as_pve_resolves_them():
    # ipt_gen_src_or_dst_match: +name is the guest's own set when it has one, else the cluster's.
    assert usage.names_ipset("+admins", "admins", guest_own=False)
    assert usage.names_ipset("+dc/admins", "admins", guest_own=False, shadowed=True)
    assert not usage.names_ipset("+admins", "admins", guest_own=False, shadowed=True)
    assert not usage.names_ipset("+guest/admins", "admins", guest_own=False)
    assert usage.names_ipset("+guest/admins", "admins", guest_own=True)
    place = usage.Place(
        "VM 510",
        "vm/510",
        rules=[{"pos": 0, "type": "group", "action": "web"}, {"pos": 1, "type": "in", "action": "web"}],
    )
    assert usage._users_in(place, usage.Target("group", "web")) == ["VM 510 rule 0 (group) [group web]"]
    assert usage._users_in(place, usage.Target("ipset", "x", "vm/511")) == []


def test_scopes_parse_as_pve_paths_name_them():
    assert str(parse_scope("vm/510")) == "vm/510" and parse_scope("node/pve-1").node == "pve-1"
    for bad in ("vm/5", "group/x", "cluster/x", "node/-x", 510):
        with pytest.raises(DeclarationError):
            parse_scope(bad)


@given(st.ip_addresses(v=4) | st.ip_addresses(v=6), st.integers(min_value=1, max_value=128))
def test_an_entry_settles_in_one_spelling_that_is_the_network_pve_stores(address, length):
    # clean_cidr (host bits dropped, Net::IP compressed) then parse_ip_or_cidr (full length bare): the
    # spelling is a fixed point and names the network ipaddress computes, so a re-plan never sees a diff.
    length = min(length, address.max_prefixlen)
    spelled = ipset.canonical_cidr(f"{address.exploded.upper()}/{length}")
    assert ipset.canonical_cidr(spelled) == spelled
    network = ipaddress.ip_network(f"{address}/{length}", strict=False)
    assert ipaddress.ip_network(spelled) == network
