"""A cluster firewall alias that rules or IP sets still name is never deleted or renamed out from under
them (salt_proxmox.firewall.usage), against fakepve's stateful firewall (rules, IP sets and security
groups at cluster, node and guest scope, as pve-firewall's API2/Firewall/*.pm keep them).

PVE itself has no usage check: DELETE /cluster/firewall/aliases/{name} succeeds while a rule names the
alias, and pve-firewall's compiler then leaves that rule out (Firewall.pm resolve_alias: "no such
alias"), so the rule silently stops matching."""

from __future__ import annotations

import pytest

from salt_proxmox.firewall import alias, usage
from salt_proxmox.firewall.lifecycle import present
from salt_proxmox.ownership.stores import MemoryStore
from salt_proxmox.simple import lifecycle as simple
from tests.support.cluster import DNS1_NODE, DNS1_VMID, ROUTER_NODE, ROUTER_VMID
from tests.support.firewall import firewall_admin
from tests.support.guests import make_context, requests_since, static_targets, writes


@pytest.fixture
def admin(fresh_cluster):
    """Another administrator's token, allowed to edit every firewall scope."""
    return firewall_admin(fresh_cluster)


def _owned_alias(fresh_cluster, name: str = "lab_net"):
    store = MemoryStore()
    ctx = make_context(static_targets(fresh_cluster), store=store)
    assert present(ctx, False, name, name=name, cidr="10.0.0.0/24").result is True
    return ctx


def _aliases(fresh_cluster) -> set[str]:
    return set(fresh_cluster.pve.firewall_config("cluster")["aliases"])


def test_a_named_alias_is_not_deleted_and_the_plan_names_every_user(fresh_cluster, admin):
    ctx = _owned_alias(fresh_cluster)
    admin("POST", "cluster/firewall/rules", type="in", action="ACCEPT", source="dc/lab_net", enable="1")
    admin("POST", "cluster/firewall/groups", group="webs")
    admin("POST", "cluster/firewall/groups/webs", type="in", action="ACCEPT", dest="lab_net")
    admin("POST", "cluster/firewall/ipset", name="admins")
    admin("POST", "cluster/firewall/ipset/admins", cidr="lab_net")
    admin("POST", f"nodes/{ROUTER_NODE}/firewall/rules", type="in", action="DROP", source="LAB_NET")
    guest = f"nodes/{DNS1_NODE}/lxc/{DNS1_VMID}/firewall"
    admin("POST", f"{guest}/rules", type="out", action="ACCEPT", dest="lab_net")
    admin("POST", f"{guest}/ipset", name="peers")
    admin("POST", f"{guest}/ipset/peers", cidr="dc/lab_net")

    start = len(fresh_cluster.pve.requests)
    for test in (True, False):
        outcome = simple.absent(ctx, alias.SPEC, test, "lab_net", "destroy", name="lab_net")
        assert outcome.result is False, outcome.comment
        text = " ".join(outcome.comment)
        for user in (
            "cluster rule 0 (source)",
            "security group webs rule 0 (dest, disabled)",
            "cluster IP set admins entry lab_net",
            f"node {ROUTER_NODE} rule 0 (source, disabled)",
            f"CT {DNS1_VMID} rule 0 (dest, disabled)",
            f"CT {DNS1_VMID} IP set peers entry dc/lab_net",
        ):
            assert user in text, (user, text[:900])
        assert "silently stop matching" in text and "Nothing was deleted." in text
        assert outcome.changes == {}
    assert writes(requests_since(fresh_cluster, start)) == []
    assert "lab_net" in _aliases(fresh_cluster)


def test_a_guest_alias_of_the_same_name_shadows_a_bare_reference(fresh_cluster, admin):
    ctx = _owned_alias(fresh_cluster)
    guest = f"nodes/{ROUTER_NODE}/qemu/{ROUTER_VMID}/firewall"
    admin("POST", f"{guest}/aliases", name="lab_net", cidr="192.0.2.0/24")
    admin("POST", f"{guest}/rules", type="in", action="ACCEPT", source="lab_net")
    admin("POST", f"{guest}/rules", type="in", action="ACCEPT", source="guest/lab_net")
    users, scanned = usage.alias_users(ctx, "lab_net")
    assert users == [] and scanned >= 2
    plan = simple.absent(ctx, alias.SPEC, True, "lab_net", "destroy", name="lab_net")
    assert plan.result is None and plan.changes == {"deleted": {"old": "firewall alias lab_net", "new": None}}

    admin("POST", f"{guest}/rules", type="in", action="ACCEPT", source="dc/lab_net")
    refused = simple.absent(ctx, alias.SPEC, True, "lab_net", "destroy", name="lab_net")
    assert refused.result is False and f"VM {ROUTER_VMID} rule 0 (source, disabled)" in " ".join(
        refused.comment
    )


def test_once_nothing_names_it_the_delete_goes_through(fresh_cluster, admin):
    ctx = _owned_alias(fresh_cluster)
    admin("POST", "cluster/firewall/rules", type="in", action="ACCEPT", source="lab_net")
    assert simple.absent(ctx, alias.SPEC, False, "lab_net", "destroy", name="lab_net").result is False
    admin("PUT", "cluster/firewall/rules/0", source="10.0.0.0/24")
    done = simple.absent(ctx, alias.SPEC, False, "lab_net", "destroy", name="lab_net")
    assert done.result is True, done.comment
    assert "lab_net" not in _aliases(fresh_cluster)


def test_a_named_alias_is_not_renamed(fresh_cluster, admin):
    ctx = _owned_alias(fresh_cluster)
    admin("POST", f"nodes/{ROUTER_NODE}/qemu/{ROUTER_VMID}/firewall/ipset", name="lab")
    admin("POST", f"nodes/{ROUTER_NODE}/qemu/{ROUTER_VMID}/firewall/ipset/lab", cidr="lab_net")
    start = len(fresh_cluster.pve.requests)
    for test in (True, False):
        outcome = present(ctx, test, "lab", name="lab_v4", cidr="10.0.0.0/24", rename_from="lab_net")
        assert outcome.result is False, outcome.comment
        text = " ".join(outcome.comment)
        assert f"VM {ROUTER_VMID} IP set lab entry lab_net" in text
        assert "declare lab_v4 on its own (without rename_from)" in text and "Nothing was written" in text
    assert writes(requests_since(fresh_cluster, start)) == []
    assert _aliases(fresh_cluster) == {"lab_net"}


def test_a_scan_that_cannot_read_a_node_refuses_rather_than_deletes(fresh_cluster):
    ctx = _owned_alias(fresh_cluster)
    fresh_cluster.pve.fail("GET", f"/nodes/{ROUTER_NODE}/firewall/rules", status=500, message="node busy")
    start = len(fresh_cluster.pve.requests)
    outcome = simple.absent(ctx, alias.SPEC, False, "lab_net", "destroy", name="lab_net")
    assert outcome.result is False and "node busy" in " ".join(outcome.comment), outcome.comment
    assert writes(requests_since(fresh_cluster, start)) == []
    assert "lab_net" in _aliases(fresh_cluster)
