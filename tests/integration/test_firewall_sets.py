"""Firewall options, IP sets, security groups and guest-scope aliases (salt_proxmox.firewall) against
fakepve's stateful firewall: plan, apply, clean re-plan, the fewest writes, each write guarded, and the
deletes PVE would let through while rules still name the object refused at plan.

pve-firewall 6.0.4 (git 6f1311f): API2/Firewall/{Cluster,Host,VM}.pm set_options, IPSet.pm,
Groups.pm, Rules.pm delete_security_group, Aliases.pm; Firewall.pm for the spellings."""

from __future__ import annotations

import pytest

from salt_proxmox.errors import Refused
from salt_proxmox.firewall import group, ipset, options, usage
from salt_proxmox.firewall import lifecycle as alias_lifecycle
from salt_proxmox.firewall.alias import SPEC as ALIAS
from salt_proxmox.ownership.stores import MemoryStore
from salt_proxmox.simple import lifecycle as simple
from tests.support.cluster import DNS1_NODE, DNS1_VMID, ROUTER_NODE, ROUTER_VMID
from tests.support.firewall import firewall_admin
from tests.support.guests import make_context, requests_since, static_targets, writes


@pytest.fixture
def admin(fresh_cluster):
    """Another administrator's token, allowed to edit every firewall scope."""
    return firewall_admin(fresh_cluster)


@pytest.fixture
def ctx(fresh_cluster):
    return make_context(static_targets(fresh_cluster), store=MemoryStore())


def _written(fresh_cluster, start: int) -> list[str]:
    return [f"{method} {path}" for method, path, _ in writes(requests_since(fresh_cluster, start))]


# ------------------------------------------------------------------------------------ options


def test_cluster_options_plan_apply_replan_clean_with_one_digest_guarded_put(fresh_cluster, ctx):
    declared = {
        "name": "cluster",
        "ebtables": False,
        "policy_in": "drop",
        "log_ratelimit": "enable=1,burst=10",
    }
    plan = simple.present(ctx, options.SPEC, True, "fw-cluster", **declared)
    assert plan.result is None, plan.comment
    assert plan.changes["policy_in"] == {"old": None, "new": None} or "policy_in" not in plan.changes
    assert plan.changes["ebtables"] == {"old": None, "new": 0}
    start = len(fresh_cluster.pve.requests)
    done = simple.present(ctx, options.SPEC, False, "fw-cluster", **declared)
    assert done.result is True, done.comment
    sent = writes(requests_since(fresh_cluster, start))
    assert [(m, p) for m, p, _ in sent] == [("PUT", "/cluster/firewall/options")]
    body = sent[0][2].decode() if isinstance(sent[0][2], bytes) else str(sent[0][2])
    assert "digest=" in body and "ebtables=0" in body and "policy_in" not in body  # DROP is PVE's default
    stored = fresh_cluster.pve.firewall_config("cluster")["options"]
    assert stored["ebtables"] == 0 and stored["log_ratelimit"] == "enable=1,rate=1/second,burst=10"
    again = simple.present(ctx, options.SPEC, True, "fw-cluster", **declared)
    assert again.result is True and again.changes == {}, again.comment


def test_an_option_back_to_its_default_is_a_delete_and_set_by_hand_needs_adopt(fresh_cluster, ctx, admin):
    admin("PUT", "cluster/firewall/options", ebtables="0")
    refused = simple.present(ctx, options.SPEC, True, "fw-cluster", name="cluster", ebtables=True)
    assert refused.result is False and "adopt: true" in " ".join(refused.comment)
    start = len(fresh_cluster.pve.requests)
    done = simple.present(ctx, options.SPEC, False, "fw-cluster", name="cluster", ebtables=None, adopt=True)
    assert done.result is True, done.comment
    (sent,) = writes(requests_since(fresh_cluster, start))
    body = sent[2].decode() if isinstance(sent[2], bytes) else str(sent[2])
    assert "delete=ebtables" in body and "digest=" in body
    assert "ebtables" not in fresh_cluster.pve.firewall_config("cluster")["options"]


def test_a_guest_scope_reads_its_node_from_the_guest_index(fresh_cluster, ctx):
    declared = {"name": f"vm/{ROUTER_VMID}", "enable": 1, "dhcp": 0, "log_level_in": "INFO"}
    done = simple.present(ctx, options.SPEC, False, "fw-vm", **declared)
    assert done.result is True, done.comment
    assert fresh_cluster.pve.firewall_config("vm", ROUTER_NODE, ROUTER_VMID)["options"] == {
        "enable": 1,
        "dhcp": 0,
        "log_level_in": "info",
    }
    assert simple.present(ctx, options.SPEC, True, "fw-vm", **declared).changes == {}
    wrong = simple.present(ctx, options.SPEC, True, "fw-ct", name=f"ct/{ROUTER_VMID}", enable=1)
    assert wrong.result is False and f"vm/{ROUTER_VMID}" in " ".join(wrong.comment)


def test_options_destroy_puts_the_declared_keys_back_to_pve_defaults(fresh_cluster, ctx):
    node = f"node/{ROUTER_NODE}"
    assert simple.present(ctx, options.SPEC, False, "fw-node", name=node, nf_conntrack_max=524288).result
    gone = simple.absent(ctx, options.SPEC, False, "fw-node", "destroy", name=node)
    assert gone.result is True, gone.comment
    assert "nf_conntrack_max" not in fresh_cluster.pve.firewall_config("host", ROUTER_NODE)["options"]


# ------------------------------------------------------------------------------------ IP sets


def test_an_ip_set_is_created_with_entries_as_pve_normalises_them_and_replans_clean(fresh_cluster, ctx):
    declared = {
        "name": "admins",
        "comment": "admin hosts",
        "cidrs": [
            {"cidr": "192.0.2.7/24", "comment": "admin lan"},  # clean_cidr: 192.0.2.0/24
            {"cidr": "192.0.2.128/25", "nomatch": True},
            "2001:DB8::1/128",  # parse_ip_or_cidr drops /128
        ],
    }
    plan = ipset.present(ctx, True, "set", **declared)
    assert plan.result is None and "created" in plan.changes, plan.comment
    assert plan.changes["cidrs"]["new"] == ["192.0.2.0/24 (admin lan)", "!192.0.2.128/25", "2001:db8::1"]
    start = len(fresh_cluster.pve.requests)
    done = ipset.present(ctx, False, "set", **declared)
    assert done.result is True, done.comment
    assert _written(fresh_cluster, start) == [
        "POST /cluster/firewall/ipset",
        "POST /cluster/firewall/ipset/admins",
        "POST /cluster/firewall/ipset/admins",
        "POST /cluster/firewall/ipset/admins",
    ]
    again = ipset.present(ctx, True, "set", **declared)
    assert again.result is True and again.changes == {}, again.comment


def test_an_ip_set_change_is_the_fewest_entry_writes_each_guarded(fresh_cluster, ctx):
    first = {"name": "admins", "cidrs": ["192.0.2.0/24", "198.51.100.0/24", "203.0.113.5"]}
    assert ipset.present(ctx, False, "set", **first).result is True
    changed = {
        "name": "admins",
        "comment": "admins",
        "cidrs": ["192.0.2.0/24", {"cidr": "198.51.100.0/24", "nomatch": True}, "203.0.113.9"],
    }
    start = len(fresh_cluster.pve.requests)
    done = ipset.present(ctx, False, "set", **changed)
    assert done.result is True, done.comment
    sent = writes(requests_since(fresh_cluster, start))
    assert [f"{m} {p}" for m, p, _ in sent] == [
        "POST /cluster/firewall/ipset",  # the comment: rename=name
        "DELETE /cluster/firewall/ipset/admins/203.0.113.5",
        "PUT /cluster/firewall/ipset/admins/198.51.100.0/24",
        "POST /cluster/firewall/ipset/admins",
    ]
    # The comment POST and the entry PUT carry the digest in their body, the DELETE in its query string
    # (fakepve logs no query: the step's guard is pinned in the unit tests); PVE's entry POST takes none.
    bodies = [body.decode() if isinstance(body, bytes) else str(body or "") for _, _, body in sent]
    assert ["digest" in body for body in bodies] == [True, False, True, False], bodies
    assert ipset.present(ctx, True, "set", **changed).changes == {}


def test_an_entry_added_by_someone_between_the_plan_read_and_a_write_stops_the_apply(
    fresh_cluster, ctx, admin
):
    assert ipset.present(ctx, False, "set", name="admins", cidrs=["192.0.2.0/24"]).result is True
    decl = ipset.declare("set", ctx.target.name, name="admins", cidrs=["198.51.100.0/24"])
    live = simple.read(ctx, ipset.SPEC, decl)
    plan = ipset.steps("cluster/firewall", decl, live)
    admin("POST", "cluster/firewall/ipset/admins", cidr="203.0.113.1")
    with pytest.raises(Refused, match="changed since the plan's read"):
        ipset._send(ctx, decl, "cluster/firewall", plan[0], list(live["cidrs"]))
    assert {e["cidr"] for e in fresh_cluster.pve.firewall_config("cluster")["ipset"]["admins"]} == {
        "192.0.2.0/24",
        "203.0.113.1",
    }


def test_an_entry_naming_a_missing_alias_is_refused_at_plan(fresh_cluster, ctx):
    refused = ipset.present(ctx, True, "set", name="admins", cidrs=["dc/nowhere"])
    assert refused.result is False and "no such alias 'nowhere'" in " ".join(refused.comment)
    assert alias_lifecycle.present(ctx, False, "a", name="nowhere", cidr="10.1.0.0/16").result is True
    assert ipset.present(ctx, False, "set", name="admins", cidrs=["dc/nowhere"]).result is True


def test_an_ip_set_named_by_a_rule_is_not_deleted_and_a_guest_set_shadows_it(fresh_cluster, ctx, admin):
    assert ipset.present(ctx, False, "set", name="admins", cidrs=["192.0.2.0/24"]).result is True
    guest = f"nodes/{ROUTER_NODE}/qemu/{ROUTER_VMID}/firewall"
    admin("POST", f"{guest}/ipset", name="admins")
    admin("POST", f"{guest}/rules", type="in", action="ACCEPT", source="+admins")  # the guest's own set
    plan = simple.absent(ctx, ipset.SPEC, True, "set", "destroy", name="admins")
    assert plan.result is None and "deleted" in plan.changes, plan.comment
    admin("POST", "cluster/firewall/rules", type="in", action="ACCEPT", source="+dc/admins", enable="1")
    refused = simple.absent(ctx, ipset.SPEC, False, "set", "destroy", name="admins")
    assert refused.result is False
    text = " ".join(refused.comment)
    assert "cluster rule 0 (source) [in ACCEPT source=+dc/admins]" in text and "no such ipset" in text
    assert f"VM {ROUTER_VMID}" not in text
    assert "admins" in fresh_cluster.pve.firewall_config("cluster")["ipset"]
    admin("DELETE", "cluster/firewall/rules/0")
    start = len(fresh_cluster.pve.requests)
    gone = simple.absent(ctx, ipset.SPEC, False, "set", "destroy", name="admins")
    assert gone.result is True, gone.comment
    assert _written(fresh_cluster, start) == [
        "DELETE /cluster/firewall/ipset/admins"
    ]  # force=1: it holds ours
    assert "admins" not in fresh_cluster.pve.firewall_config("cluster")["ipset"]


def test_a_guest_ip_set_lives_under_its_guest(fresh_cluster, ctx):
    scope = f"ct/{DNS1_VMID}"
    done = ipset.present(ctx, False, "set", name="ipfilter-net0", scope=scope, cidrs=["10.0.0.5"])
    assert done.result is True, done.comment
    assert "NIC net0" in " ".join(done.comment)
    assert fresh_cluster.pve.firewall_config("ct", DNS1_NODE, DNS1_VMID)["ipset"]["ipfilter-net0"] == [
        {"cidr": "10.0.0.5"}
    ]
    assert (
        ipset.present(ctx, True, "set", name="ipfilter-net0", scope=scope, cidrs=["10.0.0.5"]).changes == {}
    )


# ------------------------------------------------------------------------------ security groups


def test_a_group_used_by_a_rule_or_holding_rules_is_not_deleted(fresh_cluster, ctx, admin):
    assert simple.present(ctx, group.SPEC, False, "grp", name="webgrp", comment="web tier").result is True
    admin("POST", f"nodes/{DNS1_NODE}/lxc/{DNS1_VMID}/firewall/rules", type="group", action="webgrp")
    admin("POST", "cluster/firewall/groups/webgrp", type="in", action="ACCEPT", proto="tcp", dport="80")
    refused = simple.absent(ctx, group.SPEC, False, "grp", "destroy", name="webgrp")
    text = " ".join(refused.comment)
    assert refused.result is False
    assert f"CT {DNS1_VMID} rule 0 (group, disabled)" in text and "generate_group_rules" in text
    assert "Security group 'webgrp' is not empty" in text
    assert "webgrp" in fresh_cluster.pve.firewall_config("cluster")["groups"]


def test_a_group_a_rule_declared_in_this_run_uses_is_not_deleted(fresh_cluster, ctx):
    assert simple.present(ctx, group.SPEC, False, "grp", name="webgrp").result is True
    usage.declare_rules(
        ctx,
        [(f"vm/{ROUTER_VMID}", [{"type": "in", "action": "ACCEPT"}, {"type": "group", "action": "webgrp"}])],
    )
    refused = simple.absent(ctx, group.SPEC, True, "grp", "destroy", name="webgrp")
    assert refused.result is False and f"declared VM {ROUTER_VMID} rule 1 (group)" in " ".join(
        refused.comment
    )
    usage.declare_rules(ctx, [])
    assert simple.absent(ctx, group.SPEC, False, "grp", "destroy", name="webgrp").result is True
    assert "webgrp" not in fresh_cluster.pve.firewall_config("cluster")["groups"]


# --------------------------------------------------------------------------- guest-scope aliases


def test_a_guest_alias_is_written_under_its_guest_and_kept_while_its_guest_rules_name_it(
    fresh_cluster, ctx, admin
):
    scope = f"vm/{ROUTER_VMID}"
    done = alias_lifecycle.present(ctx, False, "ga", name="lab_net", cidr="192.0.2.0/24", scope=scope)
    assert done.result is True, done.comment
    assert "lab_net" in fresh_cluster.pve.firewall_config("vm", ROUTER_NODE, ROUTER_VMID)["aliases"]
    assert "lab_net" not in fresh_cluster.pve.firewall_config("cluster")["aliases"]
    again = alias_lifecycle.present(ctx, True, "ga", name="lab_net", cidr="192.0.2.0/24", scope=scope)
    assert again.result is True and again.changes == {}, again.comment
    assert ctx.ownership.row(f"{ctx.target.name}/firewall_alias/{scope}/lab_net") is not None
    guest = f"nodes/{ROUTER_NODE}/qemu/{ROUTER_VMID}/firewall"
    admin("POST", f"{guest}/rules", type="in", action="ACCEPT", source="guest/lab_net")
    admin("POST", "cluster/firewall/aliases", name="lab_net", cidr="198.51.100.0/24")
    admin("POST", "cluster/firewall/rules", type="in", action="ACCEPT", source="dc/lab_net")
    refused = simple.absent(ctx, ALIAS, False, "ga", "destroy", name="lab_net", scope=scope)
    text = " ".join(refused.comment)
    assert refused.result is False and f"VM {ROUTER_VMID} rule 0 (source, disabled)" in text
    assert "cluster rule" not in text  # dc/lab_net is the cluster's alias, not this one


def test_a_guest_alias_its_guest_rules_name_is_not_renamed(fresh_cluster, ctx, admin):
    scope = f"vm/{ROUTER_VMID}"
    assert alias_lifecycle.present(ctx, False, "ga", name="old_net", cidr="192.0.2.0/24", scope=scope).result
    admin(
        "POST",
        f"nodes/{ROUTER_NODE}/qemu/{ROUTER_VMID}/firewall/rules",
        type="in",
        action="ACCEPT",
        dest="old_net",
    )
    start = len(fresh_cluster.pve.requests)
    renamed = alias_lifecycle.present(
        ctx, False, "ga", name="new_net", cidr="192.0.2.0/24", scope=scope, rename_from="old_net"
    )
    assert renamed.result is False and f"VM {ROUTER_VMID} rule 0 (dest, disabled)" in " ".join(
        renamed.comment
    )
    assert _written(fresh_cluster, start) == []
