"""A guest's firewall declared in the run that creates the guest, through the state modules and the
``proxmox`` execution module against the served fake cluster: the plan (no guest yet) says what the
apply (after the guest's create) does, and a scope whose guest is neither live nor declared is refused.
A container or a VM made from nothing starts with an empty firewall; a VM cloned from a template starts
with the template's (qemu-server ``clone_vm``: ``clone_vmfw_conf``), which its plan reads; a restored
guest's plan says it cannot see the firewall the archive may hold.

The formula orders a guest's firewall states after the guest (``require``). The guest's firewall path
names its node (pve-firewall ``API2/Firewall/VM.pm``: ``/nodes/{node}/{qemu|lxc}/{vmid}/firewall``), which
a plan takes from the guest's declaration; there is nothing to read there before the create, so each
object is planned as a create on an empty firewall."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cluster import CLOUD_TEMPLATE_NODE, CLOUD_TEMPLATE_VMID, CT_ARCHIVE
from tests.support.firewall import firewall_admin
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


# ------------------------------------------------------------------------------------------ VMs

VM_VMID = 290
VM_SCOPE = f"vm/{VM_VMID}"
VM_BASE = f"/nodes/{NODE}/qemu/{VM_VMID}/firewall"
VM = {"vmid": VM_VMID, "node": NODE, "memory": 1024, "scsi0": "local-lvm:4"}


def _vm_run(vm: dict, adopt: bool = False) -> list[Low]:
    owned = {"adopt": True} if adopt else {}
    return [
        Low("proxmox_qemu", "present", {"name": "vm-web", **vm}),
        Low(
            "proxmox_firewall_alias",
            "present",
            {"name": "gw", "cidr": "10.0.0.1", "scope": VM_SCOPE},
            "alias",
        ),
        Low(
            "proxmox_firewall",
            "ipset",
            {"name": "admins", "scope": VM_SCOPE, "cidrs": ["192.0.2.0/24", "gw"], **owned},
            "ipset",
        ),
        Low(
            "proxmox_firewall",
            "options",
            {"name": VM_SCOPE, "enable": 1, "policy_in": "REJECT", **owned},
            "options",
        ),
        Low("proxmox_firewall", "rules", {"name": VM_SCOPE, "rules": [SSH]}, "rules"),
    ]


def test_a_vm_s_firewall_declared_with_the_vm_plans_what_the_apply_does(fresh_cluster, world):
    start = len(fresh_cluster.pve.requests)
    plan = world.run(_vm_run(VM), test=True)
    assert [r["result"] for r in plan] == [None] * 5, plan
    assert writes(requests_since(fresh_cluster, start)) == [], "a plan writes nothing"
    assert not [p for _, p, _ in requests_since(fresh_cluster, start) if p.startswith(VM_BASE)]
    for ret in plan[1:]:
        assert f"VM {VM_VMID} is created earlier in this run (on {NODE})" in ret["comment"], ret
    assert plan[1]["changes"]["created"]["new"] == f"firewall alias gw of VM {VM_VMID}"
    assert plan[2]["changes"]["created"]["new"] == f"IP set admins of VM {VM_VMID}"
    assert plan[3]["changes"]["created"]["new"] == f"firewall options of VM {VM_VMID}"

    start = len(fresh_cluster.pve.requests)
    done = world.run(_vm_run(VM), test=False)
    assert [r["result"] for r in done] == [True] * 5, done
    sent = [(m, p) for m, p, _ in writes(requests_since(fresh_cluster, start))]
    assert sent == [
        ("POST", f"/nodes/{NODE}/qemu"),
        ("POST", f"{VM_BASE}/aliases"),
        ("POST", f"{VM_BASE}/ipset"),
        ("POST", f"{VM_BASE}/ipset/admins"),
        ("POST", f"{VM_BASE}/ipset/admins"),
        ("PUT", f"{VM_BASE}/options"),
        ("POST", f"{VM_BASE}/rules"),
    ]
    for planned, applied in zip(plan[1:], done[1:], strict=True):
        assert set(applied["changes"]) <= set(planned["changes"]), (planned, applied)

    start = len(fresh_cluster.pve.requests)
    again = world.run(_vm_run(VM), test=True)
    assert [r["result"] for r in again] == [True] * 5 and [r["changes"] for r in again] == [{}] * 5, again
    assert writes(requests_since(fresh_cluster, start)) == []


def test_a_clone_s_firewall_is_planned_from_its_template_s_which_pve_copies(fresh_cluster, world):
    """qemu-server ``API2/Qemu.pm`` ``clone_vm`` copies the template's firewall to the clone
    (``PVE::Firewall::clone_vmfw_conf``, pve-firewall ``src/PVE/Firewall/Helpers.pm``: ``<newid>.fw`` is
    ``<vmid>.fw``), so a clone's firewall is not empty: its plan reads the template's and judges what the
    clone will hold, as the apply does after the clone. Here the template holds IP set admins and
    ``enable: 1``: neither is this minion's, so both are refused until adopted, at plan as at apply; the
    alias the template lacks is planned as a create."""
    admin = firewall_admin(fresh_cluster)
    template = f"nodes/{CLOUD_TEMPLATE_NODE}/qemu/{CLOUD_TEMPLATE_VMID}/firewall"
    admin("POST", f"{template}/ipset", name="admins")
    admin("POST", f"{template}/ipset/admins", cidr="192.0.2.0/24")
    admin("PUT", f"{template}/options", enable="1")
    clone = {**VM, "clone": CLOUD_TEMPLATE_VMID, "scsi0": None}
    clone = {key: value for key, value in clone.items() if value is not None}
    copied = f"VM {VM_VMID} is cloned from VM {CLOUD_TEMPLATE_VMID} earlier in this run (on {NODE})"

    start = len(fresh_cluster.pve.requests)
    plan = world.run(_vm_run(clone), test=True)
    assert [r["result"] for r in plan] == [None, None, False, False, None], plan
    assert writes(requests_since(fresh_cluster, start)) == []
    for ret in plan[1:]:
        assert copied in ret["comment"], ret
    assert f"IP set admins of VM {VM_VMID} exists and this minion did not create it" in plan[2]["comment"]
    assert f"firewall options of VM {VM_VMID} exists" in plan[3]["comment"], plan[3]
    assert plan[1]["changes"]["created"]["new"] == f"firewall alias gw of VM {VM_VMID}"
    # The template's enable: 1 stays: its copy is the clone's, and the rules insert one rule.
    assert plan[4]["changes"]["writes"] == ["insert `IN SSH(ACCEPT) -source +admins`"]

    adopted = world.run(_vm_run(clone, adopt=True), test=True)
    assert [r["result"] for r in adopted] == [None] * 5, adopted
    assert adopted[2]["changes"]["cidrs"] == {"old": ["192.0.2.0/24"], "new": ["192.0.2.0/24", "gw"]}
    assert adopted[3]["changes"]["policy_in"] == {"old": None, "new": "REJECT"}
    assert "enable" not in adopted[3]["changes"]

    start = len(fresh_cluster.pve.requests)
    done = world.run(_vm_run(clone, adopt=True), test=False)
    assert [r["result"] for r in done] == [True] * 5, done
    sent = [(m, p) for m, p, _ in writes(requests_since(fresh_cluster, start))]
    assert sent[0] == ("POST", f"/nodes/{CLOUD_TEMPLATE_NODE}/qemu/{CLOUD_TEMPLATE_VMID}/clone")
    fw = [write for write in sent if write[1].startswith(VM_BASE)]
    assert fw == [
        ("POST", f"{VM_BASE}/aliases"),
        ("POST", f"{VM_BASE}/ipset/admins"),
        ("PUT", f"{VM_BASE}/options"),
        ("POST", f"{VM_BASE}/rules"),
    ]
    for planned, applied in zip(adopted[1:], done[1:], strict=True):
        assert set(applied["changes"]) <= set(planned["changes"]), (planned, applied)

    again = world.run(_vm_run(clone, adopt=True), test=True)
    assert [r["result"] for r in again] == [True] * 5 and [r["changes"] for r in again] == [{}] * 5, again


def test_a_restored_guest_s_firewall_is_planned_from_nothing_and_the_plan_says_what_it_cannot_see(
    fresh_cluster, world
):
    """A restore brings the firewall configuration its archive holds (pve-container
    ``src/PVE/LXC/Create.pm`` ``restore_configuration_from_etc_vzdump`` copies ``pct.fw``; qemu-server
    ``restore_vma_archive`` ``qemu-server.fw``), and no API call shows it before the restore (pve-manager
    ``API2/VZDump.pm`` ``extractconfig`` answers the guest config only): the plan starts from nothing and
    says that it assumes the archive holds none."""
    restored = {"vmid": 160, "node": NODE, "restore": CT_ARCHIVE, "rootfs": "local-lvm:8"}
    start = len(fresh_cluster.pve.requests)
    plan = world.run(
        [
            Low("proxmox_lxc", "present", {"name": "restored", **restored}),
            Low("proxmox_firewall", "options", {"name": "ct/160", "enable": 1}, "options"),
        ],
        test=True,
    )
    assert [r["result"] for r in plan] == [None, None], plan
    assert writes(requests_since(fresh_cluster, start)) == []
    assert "CT 160 is created earlier in this run (on pve1)" in plan[1]["comment"], plan[1]
    assert f"restored from {CT_ARCHIVE}, it also gets the firewall configuration" in plan[1]["comment"]
    assert "this plan assumes none" in plan[1]["comment"]
