"""The cluster's ``management`` and ``blacklist`` IP sets and the no-lockout check, against the served fake
cluster: a change that would cut this minion off is refused naming the set and the traffic, and goes
through with ``allow_lockout: true``, which the plan then says, as a rule list's and the options' do.

pve-firewall 6.0.4 ``Firewall.pm``: ``enable_host_firewall`` accepts the ``management`` set's sources on
the API (8006) and SSH before the cluster's ``policy_in`` (default DROP); ``PVEFW-blacklist`` drops the
``blacklist`` set's sources before any rule once the cluster firewall is on."""

from __future__ import annotations

import pytest

from salt_proxmox.firewall import ipset, reach
from salt_proxmox.ownership.stores import MemoryStore
from tests.support.firewall import firewall_admin
from tests.support.guests import make_context, requests_since, static_targets, writes

MINION = "10.9.9.9"


@pytest.fixture
def guarded(fresh_cluster, monkeypatch):
    """The cluster firewall on, the minion's network in the management IP set (made by hand), and the
    minion's route to every member and node from its address."""
    monkeypatch.setattr(reach, "route_source", lambda dest: MINION)
    admin = firewall_admin(fresh_cluster)
    fresh_cluster.pve.firewall_config("cluster")["options"]["enable"] = 1
    admin("POST", "cluster/firewall/ipset", name="management")
    admin("POST", "cluster/firewall/ipset/management", cidr="10.9.9.0/24")
    return fresh_cluster


@pytest.mark.parametrize(
    ("declared", "said"),
    [
        (
            {"name": "management", "cidrs": ["10.0.0.0/24"], "adopt": True},
            "IP set management: the cluster's policy_in DROP (no rule accepts it first, and the management",
        ),
        (
            {"name": "blacklist", "cidrs": [MINION]},
            f"IP set blacklist: entry {MINION} would drop this minion's",
        ),
    ],
    ids=["management without the minion", "blacklist holding the minion"],
)
def test_an_ip_set_change_that_locks_out_is_refused_and_allowed_with_allow_lockout(guarded, declared, said):
    store = MemoryStore()
    start = len(guarded.pve.requests)
    for test in (True, False):
        done = ipset.present(make_context(static_targets(guarded), store=store), test, "set", **declared)
        text = "\n".join(done.comment)
        assert done.result is False and said in text, text
        assert "declare allow_lockout: true" in text and "Nothing was written." in text
        assert "recorded as ours" not in text and "would record" not in text, "a refusal takes nothing over"
    assert writes(requests_since(guarded, start)) == []

    allowed = {**declared, "allow_lockout": True}
    plan = ipset.present(make_context(static_targets(guarded), store=store), True, "set", **allowed)
    assert plan.result is None, plan.comment
    assert any(line.startswith("allow_lockout: true, so this is not refused: ") for line in plan.comment)
    assert said in "\n".join(plan.comment)
    done = ipset.present(make_context(static_targets(guarded), store=store), False, "set", **allowed)
    assert done.result is True, done.comment
    assert writes(requests_since(guarded, start)), "the change was written"
    again = ipset.present(make_context(static_targets(guarded), store=store), True, "set", **allowed)
    assert again.result is True and again.changes == {}, again.comment


def test_allow_lockout_is_a_switch():
    with pytest.raises(ipset.DeclarationError, match="allow_lockout"):
        ipset.declare("set", "lab", name="management", cidrs=[], allow_lockout="yes")


def test_destroying_the_management_set_that_lets_the_minion_in_is_refused_unless_it_allowed_lockout(guarded):
    """pve-firewall compiles the management set as its entries plus the local network
    (``enable_host_firewall``), so deleting it drops what only its entries let in."""
    from salt_proxmox.simple import lifecycle as simple

    store = MemoryStore()
    declared = {"name": "management", "cidrs": ["10.9.9.0/24"], "adopt": True}
    assert ipset.present(make_context(static_targets(guarded), store=store), False, "mgmt", **declared).result
    start = len(guarded.pve.requests)
    for test in (True, False):
        ctx = make_context(static_targets(guarded), store=store)
        done = simple.absent(ctx, ipset.SPEC, test, "mgmt", removal="destroy", name="management")
        text = "\n".join(done.comment)
        assert done.result is False and "IP set management: the cluster's policy_in DROP" in text, text
        assert "declare allow_lockout: true" in text and "Nothing was deleted." in text
    assert writes(requests_since(guarded, start)) == []

    allowed = {**declared, "allow_lockout": True}
    assert ipset.present(make_context(static_targets(guarded), store=store), False, "mgmt", **allowed).result
    ctx = make_context(static_targets(guarded), store=store)
    done = simple.absent(ctx, ipset.SPEC, False, "mgmt", removal="destroy", name="management")
    assert done.result is True, done.comment
    assert [(m, p) for m, p, _ in writes(requests_since(guarded, start))] == [
        ("DELETE", "/cluster/firewall/ipset/management")
    ]
