"""``proxmox.export`` of a guest's own firewall objects (IP sets, aliases, options) beside the cluster's,
against the served fake cluster: each is exported with its ``scope``, keyed apart from a cluster object of
the same name, and the exported pillar, rendered by the formula and planned as it is, plans only the
ownership rows it records; applied, the next plan is clean.

pve-firewall ``API2/Firewall/VM.pm`` registers the same ``IPSet.pm``, ``Aliases.pm`` and options handlers
under ``/nodes/{node}/{qemu|lxc}/{vmid}/firewall`` as ``Cluster.pm`` does under ``/cluster/firewall``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cluster import DNS1_NODE, DNS1_VMID, ROUTER_NODE, ROUTER_VMID
from tests.support.guests import requests_since, static_targets, writes
from tests.support.saltworld import Low, SaltWorld, chunks_of

SCOPE = f"vm/{ROUTER_VMID}"


@pytest.fixture
def world(fresh_cluster, tmp_path: Path) -> SaltWorld:
    return SaltWorld(
        {"proxmox": {"targets": static_targets(fresh_cluster)}}, {}, tmp_path / "salt_proxmox_owned.json"
    )


def _shown(returns: list[dict]) -> str:
    return json.dumps([{k: r.get(k) for k in ("__id__", "result", "changes", "comment")} for r in returns])


def test_guest_ip_sets_aliases_and_options_are_exported_with_their_scope(fresh_cluster, world):
    made = world.run(
        [
            Low("proxmox_firewall_alias", "present", {"name": "gw", "cidr": "10.0.0.1", "scope": SCOPE}, "a"),
            Low("proxmox_firewall_alias", "present", {"name": "gw", "cidr": "10.9.9.9"}, "b"),
            Low("proxmox_firewall", "ipset", {"name": "admins", "scope": SCOPE, "cidrs": ["gw"]}, "c"),
            Low("proxmox_firewall", "ipset", {"name": "admins", "cidrs": ["192.0.2.0/24"]}, "d"),
            Low("proxmox_firewall", "options", {"name": SCOPE, "enable": 1, "policy_in": "REJECT"}, "e"),
        ],
        test=False,
    )
    assert all(r["result"] is True for r in made), _shown(made)
    world.rows_file.unlink()  # objects this minion did not make

    pillar = world.salt["proxmox.export"](family="firewall,firewall_alias")
    aliases = pillar["proxmox"]["firewall_aliases"]
    assert aliases["gw"] == {"cidr": "10.9.9.9", "adopt": True}
    own = {"name": "gw", "scope": SCOPE, "cidr": "10.0.0.1", "adopt": True}
    assert aliases[f"vm-{ROUTER_VMID}-gw"] == own
    firewall = pillar["proxmox"]["firewall"]
    assert firewall["ipsets"]["admins"]["cidrs"] == [{"cidr": "192.0.2.0/24", "nomatch": 0, "comment": ""}]
    guest_set = firewall["ipsets"][f"vm-{ROUTER_VMID}-admins"]
    assert guest_set["name"] == "admins" and guest_set["scope"] == SCOPE and guest_set["adopt"] is True
    assert [entry["cidr"] for entry in guest_set["cidrs"]] == ["gw"]
    assert firewall["options"][SCOPE] == {"enable": 1, "policy_in": "REJECT", "adopt": True}

    lows = chunks_of(world.formula(pillar))
    start = len(fresh_cluster.pve.requests)
    plan = world.run(lows, test=True)
    assert all(r["result"] in (None, True) for r in plan), _shown(plan)
    assert all(set(r["changes"]) <= {"ownership"} for r in plan), _shown(plan)
    taken = {r["__id__"] for r in plan if r["changes"]}
    assert {
        f"proxmox-firewall-alias-vm-{ROUTER_VMID}-gw",
        f"proxmox-firewall-ipset-vm-{ROUTER_VMID}-admins",
        f"proxmox-firewall-options-{SCOPE}",
    } <= taken, _shown(plan)
    applied = world.run(lows, test=False)
    assert all(r["result"] is True for r in applied), _shown(applied)
    again = world.run(lows, test=True)
    assert all(r["result"] is True and not r["changes"] for r in again), _shown(again)
    assert writes(requests_since(fresh_cluster, start)) == [], "adopting writes nothing to PVE"


def test_vmid_and_node_filters_keep_a_guests_own_firewall_objects_by_its_scope(fresh_cluster, world):
    """``vmid=`` keeps the firewall objects of that guest's scope (its options, rule list, IP sets and
        aliases carry ``scope``/``name`` ``vm/<vmid>``, not ``vmid``), ``node=`` those of the guests on that
        node (the guest index's ``node``) and that node's own options and rules, ``pool=`` those of the guests
    in that pool; the cluster's objects have no
        node or vmid and are left out, as a filter leaves out every object without the attribute."""
    dns = f"ct/{DNS1_VMID}"
    made = world.run(
        [
            Low("proxmox_firewall_alias", "present", {"name": "gw", "cidr": "10.0.0.1", "scope": SCOPE}, "a"),
            Low("proxmox_firewall_alias", "present", {"name": "gw", "cidr": "10.9.9.9"}, "b"),
            Low("proxmox_firewall", "ipset", {"name": "admins", "scope": SCOPE, "cidrs": ["gw"]}, "c"),
            Low("proxmox_firewall", "ipset", {"name": "admins", "cidrs": ["192.0.2.0/24"]}, "d"),
            Low("proxmox_firewall", "ipset", {"name": "peers", "scope": dns, "cidrs": ["192.0.2.7"]}, "e"),
            Low("proxmox_firewall", "options", {"name": SCOPE, "policy_in": "REJECT"}, "f"),
            Low("proxmox_firewall", "options", {"name": f"node/{ROUTER_NODE}", "log_level_in": "info"}, "g"),
            Low(
                "proxmox_firewall",
                "rules",
                {"name": SCOPE, "rules": [{"type": "in", "action": "ACCEPT", "macro": "SSH", "enable": 1}]},
                "h",
            ),
        ],
        test=False,
    )
    assert all(r["result"] is True for r in made), _shown(made)

    def exported(**filters) -> dict:
        pillar = world.salt["proxmox.export"](family="firewall,firewall_alias", **filters)
        found = pillar.get("proxmox", {})
        sections = {"aliases": found.get("firewall_aliases", {}), **found.get("firewall", {})}
        return {section: sorted(entries) for section, entries in sections.items() if entries}

    router = {
        "aliases": [f"vm-{ROUTER_VMID}-gw"],
        "ipsets": [f"vm-{ROUTER_VMID}-admins"],
        "options": [SCOPE],
        "rules": [SCOPE],
    }
    assert exported(vmid=ROUTER_VMID) == router
    assert exported(vmid=DNS1_VMID) == {"ipsets": [f"ct-{DNS1_VMID}-peers"]}
    assert exported(node=ROUTER_NODE) == {**router, "options": [f"node/{ROUTER_NODE}", SCOPE]}
    assert exported(node=DNS1_NODE) == {"ipsets": [f"ct-{DNS1_VMID}-peers"]}
    fresh_cluster.pve.vm(ROUTER_VMID).pool = "lab"  # the guest index row's pool
    assert exported(pool="lab") == router


def test_a_cluster_object_named_as_a_guest_s_label_and_the_guest_s_own_are_both_exported(
    fresh_cluster, world
):
    """pve-firewall names an alias or IP set ``[A-Za-z][A-Za-z0-9-_]+`` (``Firewall.pm``
    ``$ip_alias_pattern``, ``pve-fw-ipset-name``): a cluster alias may be called ``vm-<vmid>-gw``, the
    label a guest's own alias ``gw`` is exported under. Each is its own object: the export keeps both,
    neither overwrites the other."""
    guest_first = f"vm-{ROUTER_VMID}-gw"
    made = world.run(
        [
            Low("proxmox_firewall_alias", "present", {"name": "gw", "cidr": "10.0.0.1", "scope": SCOPE}, "a"),
            Low("proxmox_firewall_alias", "present", {"name": guest_first, "cidr": "10.9.9.9"}, "b"),
            Low(
                "proxmox_firewall", "ipset", {"name": "admins", "scope": SCOPE, "cidrs": ["10.0.0.0/24"]}, "c"
            ),
            Low(
                "proxmox_firewall",
                "ipset",
                {"name": f"vm-{ROUTER_VMID}-admins", "cidrs": ["10.1.0.0/24"]},
                "d",
            ),
        ],
        test=False,
    )
    assert all(r["result"] is True for r in made), _shown(made)
    pillar = world.salt["proxmox.export"](family="firewall,firewall_alias")
    aliases = pillar["proxmox"]["firewall_aliases"]
    assert sorted((a.get("scope", "cluster"), a["cidr"]) for a in aliases.values()) == [
        ("cluster", "10.9.9.9"),
        (SCOPE, "10.0.0.1"),
    ], aliases
    assert aliases[guest_first] == {"cidr": "10.9.9.9", "adopt": True}, "a cluster alias is keyed by its name"
    sets = pillar["proxmox"]["firewall"]["ipsets"]
    cidrs = sorted((s.get("scope", "cluster"), s["cidrs"][0]["cidr"]) for s in sets.values())
    assert cidrs == [("cluster", "10.1.0.0/24"), (SCOPE, "10.0.0.0/24")], sets
