"""A guest's firewall declared in the run that creates the guest, through the state modules and the
``proxmox`` execution module against the served fake cluster: the plan (no guest yet) says what the
apply (after the guest's create) does, and a scope whose guest is neither live nor declared is refused.

The formula orders a guest's firewall states after the guest (``require``). The guest's firewall path
names its node (pve-firewall ``API2/Firewall/VM.pm``: ``/nodes/{node}/{qemu|lxc}/{vmid}/firewall``), which
a plan takes from the guest's declaration; there is nothing to read there before the create, so each
object is planned as a create on an empty firewall."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.guests import declaration, requests_since, static_targets, writes
from tests.support.saltworld import Low, SaltWorld

VMID, NODE = 150, "pve1"
SCOPE = f"ct/{VMID}"
BASE = f"/nodes/{NODE}/lxc/{VMID}/firewall"
SSH = {"type": "in", "action": "ACCEPT", "macro": "SSH", "source": "+admins", "enable": 1}


@pytest.fixture
def world(fresh_cluster, tmp_path: Path) -> SaltWorld:
    return SaltWorld(
        {"proxmox": {"targets": static_targets(fresh_cluster)}}, {}, tmp_path / "salt_proxmox_owned.json"
    )


def _run(scope: str = SCOPE, vmid: int | None = VMID) -> list[Low]:
    guest = [Low("proxmox_lxc", "present", {"name": "web", **declaration(vmid, NODE)})] if vmid else []
    return [
        *guest,
        Low("proxmox_firewall_alias", "present", {"name": "gw", "cidr": "10.0.0.1", "scope": scope}, "alias"),
        Low("proxmox_firewall", "ipset", {"name": "admins", "scope": scope, "cidrs": ["gw"]}, "ipset"),
        Low("proxmox_firewall", "options", {"name": scope, "enable": 1, "policy_in": "REJECT"}, "options"),
        Low("proxmox_firewall", "rules", {"name": scope, "rules": [SSH]}, "rules"),
    ]


def test_a_guest_firewall_declared_with_its_guest_plans_what_the_apply_does(fresh_cluster, world):
    start = len(fresh_cluster.pve.requests)
    plan = world.run(_run(), test=True)
    assert [r["result"] for r in plan] == [None] * 5, plan
    assert writes(requests_since(fresh_cluster, start)) == [], "a plan writes nothing"
    # Nothing is read under a guest that does not exist yet.
    assert not [p for _, p, _ in requests_since(fresh_cluster, start) if p.startswith(BASE)]
    alias, ipset, opts, rules = plan[1:]
    assert alias["changes"]["created"] == {"old": None, "new": f"firewall alias gw of CT {VMID}"}
    assert ipset["changes"]["created"]["new"] == f"IP set admins of CT {VMID}"
    assert ipset["changes"]["cidrs"] == {"old": None, "new": ["gw"]}
    assert opts["changes"]["created"] and opts["changes"]["enable"] == {"old": None, "new": 1}
    assert opts["changes"]["policy_in"] == {"old": None, "new": "REJECT"}
    assert rules["changes"]["writes"] == ["insert `IN SSH(ACCEPT) -source +admins`"]
    for ret in plan[1:]:
        assert f"CT {VMID} is created earlier in this run (on {NODE})" in ret["comment"], ret

    start = len(fresh_cluster.pve.requests)
    done = world.run(_run(), test=False)
    assert [r["result"] for r in done] == [True] * 5, done
    sent = [(m, p) for m, p, _ in writes(requests_since(fresh_cluster, start))]
    assert sent[0] == ("POST", f"/nodes/{NODE}/lxc")
    assert sent[1:] == [
        ("POST", f"{BASE}/aliases"),
        ("POST", f"{BASE}/ipset"),
        ("POST", f"{BASE}/ipset/admins"),
        ("PUT", f"{BASE}/options"),
        ("POST", f"{BASE}/rules"),
    ]
    # The apply made exactly the changes the plan listed.
    for planned, applied in zip(plan[1:], done[1:], strict=True):
        assert set(applied["changes"]) <= set(planned["changes"]), (planned, applied)

    start = len(fresh_cluster.pve.requests)
    again = world.run(_run(), test=True)
    assert [r["result"] for r in again] == [True] * 5, again
    assert [r["changes"] for r in again] == [{}] * 5
    assert writes(requests_since(fresh_cluster, start)) == []


@pytest.mark.parametrize("test", [True, False])
def test_a_guest_scope_neither_live_nor_declared_is_refused(fresh_cluster, world, test):
    start = len(fresh_cluster.pve.requests)
    refused = world.run(_run(vmid=None), test=test)
    assert [r["result"] for r in refused] == [False] * 4, refused
    for ret in refused:
        assert f"lists no guest {VMID}" in ret["comment"], ret
    assert writes(requests_since(fresh_cluster, start)) == []


def test_a_guest_the_run_declares_as_the_other_kind_is_refused_naming_its_scope(fresh_cluster, world):
    refused = world.run(_run(scope=f"vm/{VMID}"), test=True)
    assert refused[0]["result"] is None
    for ret in refused[1:]:
        assert ret["result"] is False and f"declare it as ct/{VMID}" in ret["comment"], ret
