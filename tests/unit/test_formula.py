"""The formula (``formula/proxmox/init.sls``, Salt's ``py`` renderer) as a function of pillar: which states
it declares, with which arguments and requisites, and how it answers pillar that is not the shape it needs.
Loaded here as Salt's renderer loads it (``salt/utils/templates.py`` ``py``), with ``__pillar__`` set;
``tests/functional`` renders it through a real salt-call."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import salt.state as salt_state
import yaml

from tests.support.formula import formula

REPO = Path(__file__).resolve().parents[2]


def render(pillar: dict) -> dict:
    module = formula()
    module.__pillar__ = pillar
    return module.run()


def args(state: dict) -> tuple[str, dict]:
    """(function, {argument: value}) of one rendered state."""
    ((function, arguments),) = state.items()
    merged: dict = {}
    for argument in arguments:
        merged.update(argument)
    return function, merged


def failing(states: dict) -> dict[str, str]:
    """{state id: comment} of the formula's failing pillar states."""
    return {
        sid: args(state)[1]["comment"]
        for sid, state in states.items()
        if args(state)[0] == "proxmox_pillar.refused"
    }


EXAMPLES = yaml.safe_load((REPO / "pillar_examples" / "proxmox.sls").read_text())


def test_examples_render_every_entry_once_with_only_real_requisites():
    states = render(EXAMPLES)
    assert not failing(states)
    assert [sid for sid in states] == [
        "openbao-policy-salt-proxmox-creds",
        "proxmox-firewall-alias-db",
        "proxmox-firewall-alias-dns1",
        "proxmox-firewall-alias-lab_net",
        "proxmox-cluster-options-datacenter",
        "proxmox-pool-lab",
        "proxmox-pool-prod",
        "proxmox-role-CiDeploy",
        "proxmox-role-SaltProxmoxArchiveRead",
        "proxmox-role-SaltProxmoxProvision",
        "proxmox-role-SaltProxmoxRead",
        "proxmox-group-automation",
        "proxmox-user-ci@pve",
        "proxmox-token-ci@pve!deploy",
        "proxmox-acl-automation-on-prod",
        "proxmox-acl-ci-deploy-on-prod",
        "proxmox-acl-salt-provision-on-root",
        "proxmox-acl-salt-read-on-backups",
        "proxmox-acl-salt-read-on-root",
        "proxmox-acl-salt-read-on-web-backups",
        "proxmox-ceph-pool-vmdisks",
        "proxmox-storage-backups",
        "proxmox-storage-ceph-vm",
        "proxmox-ha-resource-ct:120",
        "proxmox-ha-rule-dns-on-pve1",
        "proxmox-content-alpine-virt-iso",
        "proxmox-network-pve1-vmbr1",
        "proxmox-network-apply-pve1",
        "proxmox-network-apply-pve2",
        "proxmox-sdn-controller-evpnctl",
        "proxmox-sdn-ipam-pve",
        "proxmox-sdn-zone-lab",
        "proxmox-sdn-vnet-labnet",
        "proxmox-sdn-apply",
        "proxmox-node-pve1-dns",
        "proxmox-node-pve1-hosts",
        "proxmox-node-pve1-time",
        "proxmox-node-pve1-apt",
        "proxmox-notification-endpoint-ops-mail",
        "proxmox-notification-matcher-backups-to-ops",
        "proxmox-mapping-pci-lab-gpu",
        "proxmox-acme-plugin-lab-dns",
        "proxmox-lxc-db",
        "proxmox-lxc-dns",
        "proxmox-lxc-web",
        "proxmox-lxc-web2",
        "proxmox-qemu-app",
        "proxmox-qemu-build",
        "proxmox-qemu-ci",
        "proxmox-backup-job-nightly",
        "proxmox-metric-server-influx",
        "proxmox-replication-120-0",
        "proxmox-firewall-group-webgrp",
        "proxmox-firewall-ipset-admins",
        "proxmox-firewall-options-cluster",
        "proxmox-firewall-rules-ct/120",
        "proxmox-snapshot-web-first-boot",
    ], (
        "policies first, the datacenter's options, downloads, networks, SDN, node settings, notifications, "
        "resource mappings and ACME plugins before the guests, then containers and VMs, backup jobs, metric "
        "servers, replication jobs, then "
        "the firewall (a guest's firewall needs its guest): its objects, then the rule lists naming them, "
        "then the guests' snapshots, each family in key order"
    )
    requisites = {sid: args(state)[1].get("require") for sid, state in states.items()}
    # Only an ACL entry needs what it names: PVE refuses an entry for a role that does not exist
    # (pve-access-control src/PVE/API2/ACL.pm update_acl). A policy is no requisite of the PVE states.
    # A node's apply reloads what its interfaces staged, after the node before it; the SDN apply commits
    # every SDN object and reloads every node (pve-network PVE/API2/Network/SDN.pm reload).
    assert {sid: need for sid, need in requisites.items() if need} == {
        # A user needs its groups, a token its user, an ACL entry the group or token it names and the
        # pool of its /pool/<poolid> path (User.pm create_user, generate_token; ACL.pm update_acl).
        "proxmox-user-ci@pve": [{"proxmox_group": "proxmox-group-automation"}],
        "proxmox-token-ci@pve!deploy": [{"proxmox_user": "proxmox-user-ci@pve"}],
        "proxmox-acl-automation-on-prod": [
            {"proxmox_role": "proxmox-role-CiDeploy"},
            {"proxmox_group": "proxmox-group-automation"},
            {"proxmox_pool": "proxmox-pool-prod"},
        ],
        "proxmox-acl-ci-deploy-on-prod": [
            {"proxmox_role": "proxmox-role-CiDeploy"},
            {"proxmox_token": "proxmox-token-ci@pve!deploy"},
            {"proxmox_pool": "proxmox-pool-prod"},
        ],
        "proxmox-acl-salt-provision-on-root": [{"proxmox_role": "proxmox-role-SaltProxmoxProvision"}],
        "proxmox-acl-salt-read-on-root": [{"proxmox_role": "proxmox-role-SaltProxmoxRead"}],
        "proxmox-acl-salt-read-on-backups": [{"proxmox_role": "proxmox-role-SaltProxmoxArchiveRead"}],
        "proxmox-acl-salt-read-on-web-backups": [{"proxmox_role": "proxmox-role-SaltProxmoxArchiveRead"}],
        "proxmox-network-apply-pve1": [{"proxmox_network": "proxmox-network-pve1-vmbr1"}],
        "proxmox-network-apply-pve2": [{"proxmox_network": "proxmox-network-apply-pve1"}],
        # An rbd storage needs the Ceph pool it names (pve-storage RBDPlugin: pool).
        "proxmox-storage-ceph-vm": [{"proxmox_ceph_pool": "proxmox-ceph-pool-vmdisks"}],
        "proxmox-sdn-vnet-labnet": [{"proxmox_sdn": "proxmox-sdn-zone-lab"}],
        # A matcher needs the endpoints it targets (proxmox-notify api/mod.rs ensure_endpoints_exist).
        "proxmox-notification-matcher-backups-to-ops": [
            {"proxmox_notification": "proxmox-notification-endpoint-ops-mail"}
        ],
        # The controller is staged too; the pve IPAM is written at once (Ipams.pm), nothing to commit.
        "proxmox-sdn-apply": [
            {"proxmox_sdn": "proxmox-sdn-controller-evpnctl"},
            {"proxmox_sdn": "proxmox-sdn-zone-lab"},
            {"proxmox_sdn": "proxmox-sdn-vnet-labnet"},
            {"proxmox_network": "proxmox-network-apply-pve1"},
            {"proxmox_network": "proxmox-network-apply-pve2"},
        ],
        # web is created in pool prod, and PVE refuses a create into a pool that does not exist.
        "proxmox-lxc-web": [{"proxmox_pool": "proxmox-pool-prod"}],
        # PVE refuses a rule naming an alias that does not exist (pve-firewall verify_rule: no such
        # alias), and a guest's firewall is the guest's.
        "proxmox-firewall-rules-ct/120": [
            {"proxmox_firewall_alias": "proxmox-firewall-alias-lab_net"},
            {"proxmox_lxc": "proxmox-lxc-dns"},
        ],
        # An HA resource needs its guest (pve-ha-manager Resources/PVECT.pm exists), a rule the HA
        # resources it names (API2/HA/Rules.pm: `cannot use unmanaged resource(s)`).
        "proxmox-ha-resource-ct:120": [{"proxmox_lxc": "proxmox-lxc-dns"}],
        "proxmox-ha-rule-dns-on-pve1": [{"proxmox_ha_resource": "proxmox-ha-resource-ct:120"}],
        # A backup job waits for its storage and the guests it lists; a snapshot for its guest.
        "proxmox-backup-job-nightly": [
            {"proxmox_storage": "proxmox-storage-backups"},
            {"proxmox_lxc": "proxmox-lxc-db"},
            {"proxmox_lxc": "proxmox-lxc-dns"},
            {"proxmox_lxc": "proxmox-lxc-web"},
            {"proxmox_lxc": "proxmox-lxc-web2"},
            {"proxmox_qemu": "proxmox-qemu-app"},
            {"proxmox_qemu": "proxmox-qemu-build"},
            {"proxmox_qemu": "proxmox-qemu-ci"},
        ],
        "proxmox-snapshot-web-first-boot": [{"proxmox_lxc": "proxmox-lxc-web"}],
    }
    assert not any("require_in" in args(state)[1] for state in states.values())
    function, web = args(states["proxmox-lxc-web"])
    assert function == "proxmox_lxc.present" and web["vmid"] == 150 and web["name"] == "web"
    assert web["description"] == "Public web front end" and "ensure" not in web
    function, ci = args(states["proxmox-qemu-ci"])
    assert function == "proxmox_qemu.present" and (ci["name"], ci["vmid"], ci["clone"]) == ("ci", 211, 9000)
    assert "cipassword" not in args(states["proxmox-qemu-app"])[1], "the secret lives in secrets.sls"
    # The power state is passed as the state's status argument: web and app run, the others declare none.
    status = {
        sid: args(state)[1].get("status")
        for sid, state in states.items()
        if "-lxc-" in sid or "-qemu-" in sid
    }
    assert status == {
        "proxmox-lxc-db": None,
        "proxmox-lxc-dns": None,
        "proxmox-lxc-web": "running",
        "proxmox-lxc-web2": None,
        "proxmox-qemu-app": "running",
        "proxmox-qemu-build": None,
        "proxmox-qemu-ci": None,
    }


def test_a_rule_list_requires_what_its_rules_name_and_its_guest():
    pillar = {
        "proxmox": {
            "qemu": {"app": {"vmid": 510, "node": "pve1"}},
            "firewall_aliases": {"Lab_Net": {"cidr": "10.0.0.0/24"}},
            "firewall": {
                "target": "homelab",
                "rules": {
                    "vm/510": {
                        "rules": [
                            {"type": "in", "action": "ACCEPT", "source": "+dc/admins", "dest": "dc/lab_net"},
                            {"type": "group", "action": "webgrp"},
                        ]
                    },
                    "group/webgrp": {"rules": [{"type": "in", "action": "ACCEPT", "source": "other"}]},
                    "node/pve2": {"ensure": "absent", "removal": "destroy", "rules": []},
                },
            },
        }
    }
    rendered = render(pillar)
    function, vm = args(rendered["proxmox-firewall-rules-vm/510"])
    assert function == "proxmox_firewall.rules" and vm["name"] == "vm/510" and vm["target"] == "homelab"
    assert vm["require"] == [
        {"proxmox_firewall_alias": "proxmox-firewall-alias-Lab_Net"},
        {"proxmox_qemu": "proxmox-qemu-app"},
    ]
    function, absent = args(rendered["proxmox-firewall-rules-node/pve2"])
    assert (function, absent) == (
        "proxmox_firewall.rules_absent",
        {"name": "node/pve2", "removal": "destroy", "target": "homelab"},
    )
    # An IP set's and a group's states, when the pillar declares them, are required by name.
    declared = {"ipsets": {"admins": {"scope": "cluster", "cidrs": []}}, "groups": {"webgrp": {}}}
    with_objects: dict = {}
    formula()._firewall(
        {"proxmox": {"firewall": {**pillar["proxmox"]["firewall"], **declared}}}, with_objects, {}, {}
    )
    assert args(with_objects["proxmox-firewall-rules-vm/510"])[1]["require"] == [
        {"proxmox_firewall": "proxmox-firewall-ipset-admins"},
        {"proxmox_firewall": "proxmox-firewall-group-webgrp"},
    ]
    assert args(with_objects["proxmox-firewall-rules-group/webgrp"])[1]["require"] == [
        {"proxmox_firewall": "proxmox-firewall-group-webgrp"}
    ]


def test_a_restored_guest_requires_its_archive_s_storage_and_an_ha_resource_its_guest_and_group():
    pillar = {
        "proxmox": {
            "storage": {"nas": {"type": "nfs"}},
            "lxc": {"web2": {"vmid": 160, "node": "pve1", "restore": "nas:backup/vzdump-lxc-150-x.tar.zst"}},
            "qemu": {"app": {"vmid": 210, "node": "pve1"}},
            "ha_groups": {"prefer-pve1": {"nodes": ["pve1:2"]}},
            "ha_resources": {"ct:160": {}, "vm:210": {"group": "prefer-pve1"}, "vm:999": {}},
        }
    }
    states = render(pillar)
    assert not failing(states)
    requisites = {sid: args(state)[1].get("require") for sid, state in states.items()}
    # The restore reads its archive from storage nas (salt_proxmox.guest.restore).
    assert requisites["proxmox-lxc-web2"] == [{"proxmox_storage": "proxmox-storage-nas"}]
    assert requisites["proxmox-ha-resource-ct:160"] == [{"proxmox_lxc": "proxmox-lxc-web2"}]
    assert requisites["proxmox-ha-resource-vm:210"] == [
        {"proxmox_qemu": "proxmox-qemu-app"},
        {"proxmox_ha_group": "proxmox-ha-group-prefer-pve1"},
    ]
    assert requisites["proxmox-ha-resource-vm:999"] is None, "a guest this pillar does not declare"


def test_a_container_requires_its_declared_pool_and_an_acl_its_pool():
    pillar = {
        "proxmox": {
            "pools": {"prod": {}, "gone": {"ensure": "absent"}},
            "acls": {"ops": {"path": "/pool/prod", "role": "PVEAuditor", "group": "ops"}},
            "lxc": {
                "web": {"vmid": 150, "pool": "prod"},
                "db": {"vmid": 151, "pool": "gone"},
                "dns": {"vmid": 120, "pool": "elsewhere"},
            },
        }
    }
    states = render(pillar)
    need = {sid: args(state)[1].get("require") for sid, state in states.items()}
    assert need["proxmox-lxc-web"] == [{"proxmox_pool": "proxmox-pool-prod"}]
    assert need["proxmox-acl-ops"] == [{"proxmox_pool": "proxmox-pool-prod"}]
    # A pool this pillar removes or does not declare is no requisite: the state judges it.
    assert need["proxmox-lxc-db"] is None and need["proxmox-lxc-dns"] is None


def test_vms_run_after_containers_and_wait_for_their_pool_and_bridge():
    pillar = {
        "proxmox": {
            "pools": {"prod": {}},
            "networks": {"pve1": {"apply": True, "interfaces": {"vmbr1": {"type": "bridge"}}}},
            "sdn": {"zones": {"lab": {"type": "vlan"}}, "vnets": {"labnet": {"zone": "lab"}}},
            "lxc": {"web": {"vmid": 150, "node": "pve1"}},
            "qemu": {
                "app": {"vmid": 201, "node": "pve1", "pool": "prod", "net0": "virtio,bridge=vmbr1"},
                "lab": {
                    "vmid": 202,
                    "node": "pve2",
                    "net0": "virtio,bridge=labnet",
                    "net1": "e1000,bridge=vmbr1",
                },
            },
        }
    }
    states = render(pillar)
    assert not failing(states)
    assert list(states)[-3:] == ["proxmox-lxc-web", "proxmox-qemu-app", "proxmox-qemu-lab"]
    need = {sid: args(state)[1].get("require") for sid, state in states.items()}
    assert need["proxmox-qemu-app"] == [
        {"proxmox_pool": "proxmox-pool-prod"},
        {"proxmox_network": "proxmox-network-pve1-vmbr1"},
        {"proxmox_network": "proxmox-network-apply-pve1"},
    ]
    # vmbr1 is declared on pve1 only: a VM on pve2 waits for the vnet, not for another node's bridge.
    assert need["proxmox-qemu-lab"] == [{"proxmox_sdn": "proxmox-sdn-vnet-labnet"}]


def test_a_vm_state_is_named_by_its_key_or_its_name_and_passes_its_keys_as_data():
    pillar = {
        "proxmox": {
            "qemu": {
                "app": {"vmid": 201, "node": "pve1", "memory": 2048, "cipassword": {"secret": "x"}},
                "db-vm": {"name": "db", "vmid": 202, "node": "pve2", "clone": 9000, "full": True},
            }
        }
    }
    states = {sid: args(s) for sid, s in render(pillar).items()}
    # The secret is passed as the pillar path of its entry, never as a value (Salt keeps a highstate's
    # arguments in highstate.cache.p).
    assert states["proxmox-qemu-app"] == (
        "proxmox_qemu.present",
        {
            "name": "app",
            "vmid": 201,
            "node": "pve1",
            "memory": 2048,
            "secrets_pillar": ["proxmox", "qemu", "app"],
            # No name: declared: the key is the state id only, so a live VM keeps its own name.
            "name_from_id": True,
        },
    )
    function, db = states["proxmox-qemu-db-vm"]
    assert function == "proxmox_qemu.present" and db["name"] == "db", "the state's name: the name: key"
    assert "name_from_id" not in db, "a declared name: is the VM's name"
    assert (db["clone"], db["full"]) == (9000, True)


def test_absent_entries_pass_only_what_removal_reads():
    pillar = {
        "proxmox": {
            "lxc": {"old": {"ensure": "absent", "vmid": 160, "memory": 512, "removal": "destroy"}},
            "qemu": {"vm": {"ensure": "absent", "vmid": 260, "node": "pve1", "clone": 9000, "cores": 2}},
            "pools": {"lab": {"ensure": "absent", "comment": "x", "removal": "destroy"}},
            "acls": {"x": {"ensure": "absent", "path": "/", "role": "R", "token": "a@pve!t", "propagate": 1}},
        },
        "openbao": {"policies": {"p": {"ensure": "absent", "fragments": ["x"], "name": "q"}}},
    }
    states = {sid: args(state) for sid, state in render(pillar).items()}
    assert states["proxmox-lxc-old"] == (
        "proxmox_lxc.absent",
        {"name": "old", "vmid": 160, "removal": "destroy"},
    )
    assert states["proxmox-qemu-vm"] == ("proxmox_qemu.absent", {"name": "vm", "vmid": 260, "node": "pve1"})
    assert states["proxmox-pool-lab"] == ("proxmox_pool.absent", {"name": "lab", "removal": "destroy"})
    assert states["proxmox-acl-x"] == (
        "proxmox_acl.absent",
        {"name": "x", "path": "/", "role": "R", "token": "a@pve!t"},
    )
    assert states["openbao-policy-p"] == ("openbao_policy.absent", {"name": "q"})


INJECTED = "x\nproxmox-lxc-evil:\n  proxmox_lxc.absent:\n    - vmid: 120\n    - removal: destroy"


@pytest.mark.parametrize("section", ["lxc", "qemu", "pools", "roles", "acls", "firewall_aliases"])
def test_a_key_with_a_newline_and_yaml_is_one_failing_state(section):
    # Pasted into YAML text, this key would declare a second state destroying CT 120.
    states = render({"proxmox": {section: {INJECTED: {"comment": "c"}, "fine": {"comment": "c"}}}})
    problems = failing(states)
    assert len(states) == 2 and len(problems) == 1, states
    ((sid, comment),) = problems.items()
    assert "\n" not in sid and sid.endswith(
        "x\\nproxmox-lxc-evil:\\n  proxmox_lxc.absent:\\n    - vmid: 120\\n    - removal: destroy"
    )
    assert f"proxmox:{section}:x\\nproxmox-lxc-evil" in comment and "control character" in comment
    assert "Nothing was written." in comment
    assert all("evil" not in s or s == sid for s in states)


def test_a_hash_in_a_key_is_part_of_the_name():
    # YAML would read `lab #prod:` as `lab` and a comment; data keeps it whole for the pool rule to judge.
    states = render({"proxmox": {"pools": {"lab #prod": {"comment": "c"}}}})
    assert {sid: args(s) for sid, s in states.items()} == {
        "proxmox-pool-lab #prod": ("proxmox_pool.present", {"name": "lab #prod", "comment": "c"})
    }


@pytest.mark.parametrize(
    ("key", "shown", "words"),
    [(150, "150", "is a number"), (True, "True", "is a boolean"), (None, "None", "is empty")],
)
def test_a_key_yaml_did_not_read_as_a_string_is_refused(key, shown, words):
    states = render({"proxmox": {"lxc": {key: {"vmid": 150}}}})
    assert failing(states) == {
        f"proxmox-lxc-{shown}": f"pillar key proxmox:lxc:{shown} {words}, not a string: YAML reads an "
        f"unquoted 150, on or null as a number, a boolean or nothing; quote the key ('{shown}':). "
        "Nothing was written."
    }


@pytest.mark.parametrize(
    ("pillar", "sid", "words"),
    [
        ({"proxmox": ["lxc"]}, "proxmox-pillar", "pillar proxmox is a list, not a mapping of sections"),
        ({"proxmox": {"lxc": ["web"]}}, "proxmox-lxc-pillar", "pillar proxmox:lxc is a list"),
        ({"proxmox": {"lxc": {"web": [150]}}}, "proxmox-lxc-web", "pillar proxmox:lxc:web is a list"),
        ({"proxmox": {"lxc": {"web": "vmid=150"}}}, "proxmox-lxc-web", "is a string, not a mapping"),
        ({"openbao": "x"}, "openbao-policy-pillar", "pillar openbao is a string, not a mapping"),
    ],
)
def test_pillar_of_another_shape_is_one_failing_state(pillar, sid, words):
    problems = failing(render(pillar))
    assert list(problems) == [sid] and words in problems[sid]


def test_values_of_any_shape_render():
    # Names other entries point at may be lists or mappings: the formula passes them on for the state
    # to refuse by name, and renders the rest.
    pillar = {
        "proxmox": {
            "roles": {"r": {"name": ["R"]}},
            "acls": {"a": {"role": {"x": 1}, "path": ["/pool/p"]}},
            "lxc": {"web": {"pool": ["p"], "net0": "name=eth0\nbridge=vmbr0"}},
        }
    }
    states = {sid: args(s) for sid, s in render(pillar).items()}
    assert states["proxmox-role-r"] == ("proxmox_role.present", {"name": ["R"]})
    assert states["proxmox-lxc-web"][1]["net0"] == "name=eth0\nbridge=vmbr0"
    assert "require" not in states["proxmox-acl-a"][1]


def test_empty_pillar_declares_nothing():
    assert render({}) == {} and render({"proxmox": {"lxc": None}}) == {}


def test_networks_and_sdn_order_and_what_a_container_waits_for():
    """Interfaces before their node's apply, node applies one after the other, zones → vnets → subnets
    → SDN apply after the node applies; a container waits for the interface on its node or the vnet its
    netN bridge names, and the apply that runs it, and for nothing else."""
    pillar = {
        "proxmox": {
            "networks": {
                "pve1": {"apply": True, "interfaces": {"vmbr1": {"type": "bridge", "bridge_ports": "eno2"}}},
                "pve2": {"apply": True, "target": "lab", "interfaces": {"vmbr1": {"type": "bridge"}}},
            },
            "sdn": {
                "apply": True,
                "zones": {"lab": {"type": "simple"}},
                "vnets": {"labnet": {"zone": "lab"}},
                "subnets": {
                    "labnet-v4": {"cidr": "10.2.0.0/24", "vnet": "labnet"},
                    "10.3.0.0/24": {"vnet": "x"},
                },
            },
            "lxc": {
                "web": {
                    "vmid": 150,
                    "node": "pve1",
                    "net0": "name=eth0,bridge=vmbr1",
                    "net1": "bridge=labnet",
                },
                "db": {"vmid": 151, "node": "pve2", "net0": "name=eth0,bridge=vmbr0"},
            },
        }
    }
    states = render(pillar)
    assert not failing(states)
    need = {sid: args(state)[1].get("require") for sid, state in states.items()}
    assert need["proxmox-network-apply-pve2"] == [
        {"proxmox_network": "proxmox-network-pve2-vmbr1"},
        {"proxmox_network": "proxmox-network-apply-pve1"},
    ]
    assert need["proxmox-sdn-subnet-labnet-v4"] == [{"proxmox_sdn": "proxmox-sdn-vnet-labnet"}]
    assert need["proxmox-sdn-subnet-10.3.0.0/24"] is None, (
        "a vnet this pillar does not declare is no requisite"
    )
    assert need["proxmox-lxc-web"] == [
        {"proxmox_network": "proxmox-network-pve1-vmbr1"},
        {"proxmox_network": "proxmox-network-apply-pve1"},
        {"proxmox_sdn": "proxmox-sdn-vnet-labnet"},
        {"proxmox_sdn": "proxmox-sdn-apply"},
    ], "pve1's vmbr1, not pve2's"
    assert need["proxmox-lxc-db"] is None
    function, vmbr1 = args(states["proxmox-network-pve2-vmbr1"])
    assert function == "proxmox_network.interface" and vmbr1 == {
        "name": "vmbr1",
        "node": "pve2",
        "target": "lab",
        "type": "bridge",
    }
    assert args(states["proxmox-network-apply-pve2"])[1] == {
        "name": "network of pve2",
        "node": "pve2",
        "target": "lab",
        "require": need["proxmox-network-apply-pve2"],
    }
    assert args(states["proxmox-sdn-subnet-labnet-v4"])[1]["name"] == "10.2.0.0/24"


def test_absent_interfaces_and_sdn_objects_pass_only_their_identity_target_and_removal():
    pillar = {
        "proxmox": {
            "networks": {
                "pve1": {
                    "interfaces": {"vmbr9": {"ensure": "absent", "type": "bridge", "removal": "destroy"}}
                }
            },
            "sdn": {
                "vnets": {"old": {"ensure": "absent", "zone": "lab", "tag": 9}},
                "subnets": {
                    "s": {"ensure": "absent", "cidr": "10.9.0.0/24", "vnet": "old", "gateway": "10.9.0.1"}
                },
            },
        }
    }
    states = {sid: args(state) for sid, state in render(pillar).items()}
    assert states["proxmox-network-pve1-vmbr9"] == (
        "proxmox_network.interface_absent",
        {"name": "vmbr9", "node": "pve1", "removal": "destroy"},
    )
    assert states["proxmox-sdn-vnet-old"] == ("proxmox_sdn.vnet_absent", {"name": "old"})
    assert states["proxmox-sdn-subnet-s"] == (
        "proxmox_sdn.subnet_absent",
        {"name": "10.9.0.0/24", "vnet": "old"},
    )


def test_present_interfaces_and_sdn_objects_are_not_given_removal():
    """``removal`` says what turning the entry absent will do; the present states remove nothing and
    refuse it (proxmox_network.interface, proxmox_sdn.*), so the formula keeps it for absent."""
    pillar = {
        "proxmox": {
            "networks": {"pve1": {"interfaces": {"vmbr9": {"type": "bridge", "removal": "destroy"}}}},
            "sdn": {
                "zones": {"lab": {"type": "simple", "removal": "destroy"}},
                "subnets": {"s": {"cidr": "10.9.0.0/24", "vnet": "v", "removal": "destroy"}},
            },
        }
    }
    states = {sid: args(state) for sid, state in render(pillar).items()}
    assert states["proxmox-network-pve1-vmbr9"] == (
        "proxmox_network.interface",
        {"name": "vmbr9", "node": "pve1", "type": "bridge"},
    )
    assert states["proxmox-sdn-zone-lab"] == ("proxmox_sdn.zone", {"name": "lab", "type": "simple"})
    assert states["proxmox-sdn-subnet-s"] == ("proxmox_sdn.subnet", {"name": "10.9.0.0/24", "vnet": "v"})


@pytest.mark.parametrize(
    ("pillar", "words"),
    [
        ({"networks": {"pve1": {"aply": True}}}, "proxmox:networks:pve1 has unknown key(s) aply"),
        (
            {"networks": {"pve1": {"apply": "yes"}}},
            "proxmox:networks:pve1:apply is a string, not true or false",
        ),
        ({"networks": {"pve1": {"interfaces": ["vmbr1"]}}}, "proxmox:networks:pve1:interfaces is a list"),
        ({"networks": {"pve1": {"interfaces": {INJECTED: {}}}}}, "control character"),
        ({"sdn": ["lab"]}, "proxmox:sdn is a list"),
        ({"sdn": {"zone": {}}}, "proxmox:sdn has unknown key(s) zone"),
        ({"sdn": {"vnets": {"v": "lab"}}}, "proxmox:sdn:vnets:v is a string"),
    ],
)
def test_network_and_sdn_pillar_of_another_shape_is_one_failing_state(pillar, words):
    states = render({"proxmox": pillar})
    problems = failing(states)
    assert len(problems) == 1 and words in next(iter(problems.values())), states
    assert not any("evil" in sid and sid not in problems for sid in states)


# Salt's own keywords, as the Salt running the formula defines them (salt/state.py), and the arguments
# its compiler and runner read besides (names, provider, aggregate, env, any __-prefixed key).
SALT = sorted(
    set().union(
        salt_state.STATE_REQUISITE_KEYWORDS,
        salt_state.STATE_REQUISITE_IN_KEYWORDS,
        salt_state.STATE_RUNTIME_KEYWORDS,
        salt_state.STATE_INTERNAL_KEYWORDS,
    )
    | {"names", "provider", "aggregate", "env", "__agg__", "__anything__"}
)


@pytest.mark.parametrize("keyword", SALT)
def test_each_salt_keyword_in_an_entry_is_one_failing_state_naming_it(keyword):
    # unless/onlyif would run a command even under test=True, names would declare a second VM, retry
    # re-send a create, require_in add a requisite to another state (salt/state.py).
    states = render(
        {"proxmox": {"qemu": {"app": {"vmid": 201, keyword: "touch /tmp/x"}, "ok": {"vmid": 202}}}}
    )
    assert failing(states) == {
        "proxmox-qemu-app": f"pillar proxmox:qemu:app: {keyword} is a Salt keyword an entry cannot carry: "
        "Salt acts on it before the state runs (runs a command, repeats or skips the state, adds states or "
        "requisites), and an entry is data only. Remove it: the formula adds the requisites an entry "
        "needs. Nothing was written."
    }
    assert args(states["proxmox-qemu-ok"]) == (
        "proxmox_qemu.present",
        {"name": "ok", "vmid": 202, "name_from_id": True},
    )


def test_the_keywords_come_from_salt_itself():
    module = formula()
    assert {"unless", "onlyif", "creates", "check_cmd", "retry", "parallel", "require", "watch_in"} <= (
        module.SALT_KEYWORDS
    )
    assert module.SALT_KEYWORDS == salt_state.STATE_INTERNAL_KEYWORDS | salt_state.STATE_REQUISITE_KEYWORDS


KEYWORD_ENTRIES = [
    ({"proxmox": {"lxc": {"e": {"vmid": 150, "unless": "true"}}}}, "proxmox-lxc-e"),
    (
        {"proxmox": {"firewall_aliases": {"e": {"cidr": "10.0.0.1", "onlyif": "false"}}}},
        "proxmox-firewall-alias-e",
    ),
    ({"proxmox": {"pools": {"e": {"retry": {"attempts": 3}}}}}, "proxmox-pool-e"),
    ({"proxmox": {"roles": {"e": {"privs": ["VM.Audit"], "order": 1}}}}, "proxmox-role-e"),
    ({"proxmox": {"acls": {"e": {"path": "/", "role": "R", "group": "g", "require": []}}}}, "proxmox-acl-e"),
    (
        {"proxmox": {"networks": {"pve1": {"interfaces": {"e": {"type": "bridge", "creates": "/x"}}}}}},
        "proxmox-network-pve1-e",
    ),
    ({"proxmox": {"sdn": {"zones": {"e": {"type": "simple", "parallel": True}}}}}, "proxmox-sdn-zone-e"),
    (
        {"proxmox": {"sdn": {"vnets": {"e": {"zone": "z", "watch_in": [{"test": "x"}]}}}}},
        "proxmox-sdn-vnet-e",
    ),
    (
        {"proxmox": {"sdn": {"subnets": {"e": {"cidr": "10.0.0.0/24", "vnet": "v", "failhard": True}}}}},
        "proxmox-sdn-subnet-e",
    ),
    ({"openbao": {"policies": {"e": {"fragments": ["x"], "names": ["a", "b"]}}}}, "openbao-policy-e"),
    ({"proxmox": {"lxc": {"e": {"ensure": "absent", "vmid": 150, "check_cmd": "true"}}}}, "proxmox-lxc-e"),
    ({"proxmox": {"pools": {"e": {"ensure": "absent", "fire_event": True}}}}, "proxmox-pool-e"),
]


@pytest.mark.parametrize(("pillar", "sid"), KEYWORD_ENTRIES)
def test_every_section_refuses_salt_keywords_present_or_absent(pillar, sid):
    states = render(pillar)
    assert list(states) == [sid] and list(failing(states)) == [sid], states
    assert "is a Salt keyword an entry cannot carry" in failing(states)[sid]


def test_a_salt_keyword_in_a_node_or_sdn_mapping_is_named_as_one():
    # A node's mapping is the entry holding its interfaces: refused whole, none of them is staged.
    pillar = {
        "networks": {"pve1": {"unless": "true", "apply": True, "interfaces": {"vmbr1": {"type": "bridge"}}}},
        "sdn": {"onlyif": "false"},
    }
    states = render({"proxmox": pillar})
    problems = failing(states)
    assert set(states) == set(problems) == {"proxmox-network-pve1", "proxmox-sdn-pillar"}, states
    assert "pillar proxmox:networks:pve1: unless is a Salt keyword" in problems["proxmox-network-pve1"]
    assert problems["proxmox-sdn-pillar"].startswith(
        "pillar proxmox:sdn has unknown key(s) onlyif: it takes apply, controllers, dns, ipams, subnets, "
        "target, vnets, zones "
        "(onlyif is a Salt keyword an entry cannot carry"
    )


@pytest.mark.parametrize(
    "value",
    ["__slot__:salt:cmd.run(touch /tmp/x)", ["a", "__slot__:salt:test.echo(x)"], {"k": "__slot__:salt:x()"}],
)
def test_a_value_salt_would_run_as_a_slot_is_refused(value):
    # salt/state.py format_slots calls the function a __slot__: string names and passes its answer on.
    states = render({"proxmox": {"lxc": {"web": {"vmid": 150, "description": value}}}})
    ((sid, comment),) = failing(states).items()
    assert sid == "proxmox-lxc-web" and "description" in comment and "starts with __slot__:" in comment


@pytest.mark.parametrize(
    ("pillar", "sid"),
    [
        ({"lxc": {"web": {"vmid": 150, "name": "other"}}}, "proxmox-lxc-web"),
        ({"acls": {"a": {"path": "/", "role": "R", "group": "g", "name": "b"}}}, "proxmox-acl-a"),
        (
            {"sdn": {"subnets": {"s": {"cidr": "10.0.0.0/24", "vnet": "v", "name": "n"}}}},
            "proxmox-sdn-subnet-s",
        ),
    ],
)
def test_name_where_the_key_is_only_a_state_id_is_refused(pillar, sid):
    # Passed on, name would rename a container's state; an ACL entry and a subnet dropped it silently.
    problems = failing(render({"proxmox": pillar}))
    assert list(problems) == [sid] and "name: the key of this entry is its state id" in problems[sid]


@pytest.mark.parametrize(
    ("pillar", "sid", "words"),
    [
        (
            {"lxc": {"web": {"vmid": 150, "ensure": "Absent"}}},
            "proxmox-lxc-web",
            'ensure: expected present or absent, got "Absent"',
        ),
        ({"qemu": {"app": {"vmid": 210, "ensure": "absnet"}}}, "proxmox-qemu-app", 'got "absnet"'),
        (
            {"pools": {"lab": {"ensure": True}}},
            "proxmox-pool-lab",
            "ensure: expected present or absent, got true",
        ),
        (
            {"pools": {"lab": {"removal": "destory"}}},
            "proxmox-pool-lab",
            'removal: expected retain or destroy, got "destory"',
        ),
        (
            {"lxc": {"old": {"ensure": "absent", "vmid": 1, "removal": "Destroy"}}},
            "proxmox-lxc-old",
            'got "Destroy"',
        ),
        (
            {"networks": {"pve1": {"interfaces": {"v": {"ensure": "gone"}}}}},
            "proxmox-network-pve1-v",
            'got "gone"',
        ),
        (
            {"sdn": {"zones": {"z": {"type": "simple", "removal": "delete"}}}},
            "proxmox-sdn-zone-z",
            'got "delete"',
        ),
        (
            {"lxc": {"old": {"ensure": "absent", "vmid": 1, "adopt": "yes"}}},
            "proxmox-lxc-old",
            'adopt: expected true or false, got "yes"',
        ),
        (
            {"qemu": {"old": {"ensure": "absent", "vmid": 1, "adopt": True, "removal": "destroy"}}},
            "proxmox-qemu-old",
            "adopt: true with ensure: absent and removal: destroy: absent deletes only what this minion "
            "created or adopted",
        ),
        (
            {"pools": {"p": {"ensure": "absent", "adopt": True, "removal": "destroy"}}},
            "proxmox-pool-p",
            "adopt: true with ensure: absent and removal: destroy",
        ),
    ],
)
def test_a_value_that_steers_a_state_is_checked(pillar, sid, words):
    # Before, anything but "absent" read as present (Absent created the guest), a misspelt removal on a
    # present entry was dropped, and adopt on an absent entry was dropped without a word.
    states = render({"proxmox": pillar})
    problems = failing(states)
    assert list(states) == [sid] and list(problems) == [sid], states
    assert words in problems[sid] and problems[sid].endswith("Nothing was written.")


def test_adopt_on_an_absent_entry_that_retains_is_its_kept_declaration():
    # removal: retain touches nothing, so adopt changes nothing: the entry keeps its old declaration.
    states = render({"proxmox": {"lxc": {"old": {"ensure": "absent", "vmid": 1, "adopt": True}}}})
    assert {sid: args(s) for sid, s in states.items()} == {
        "proxmox-lxc-old": ("proxmox_lxc.absent", {"name": "old", "vmid": 1})
    }


@pytest.mark.parametrize(
    ("pillar", "sid", "words"),
    [
        (
            {"proxmox": {"lxcs": {"web": {"vmid": 150}}}},
            "proxmox-pillar",
            "pillar proxmox has unknown section(s) lxcs",
        ),
        (
            {"proxmox": {"vms": {}, "firewall_alias": {}}},
            "proxmox-pillar",
            "unknown section(s) firewall_alias, vms",
        ),
        (
            {"openbao": {"policy": {"p": {}}}},
            "openbao-pillar",
            "pillar openbao has unknown section(s) policy",
        ),
    ],
)
def test_a_misspelt_section_is_one_failing_state_naming_the_known_ones(pillar, sid, words):
    problems = failing(render(pillar))
    assert list(problems) == [sid] and words in problems[sid]
    if sid == "proxmox-pillar":
        assert (
            "the sections are acls, acme, backup_jobs, ceph_pools, certificates, cluster_options, content, "
            "firewall, firewall_aliases, groups, ha_groups, ha_resources, ha_rules, lxc, mappings, "
            "metric_servers, networks, nodes, notifications, pbs, pools, qemu, realms, replication, roles, "
            "sdn, snippets, storage, tokens, users, and ownership, ownership_file, pbs_targets, "
            "targets are the configuration read with config.get." in problems[sid]
        )


def test_a_misspelt_pbs_section_is_refused_by_name_and_a_pbs_storage_requires_its_datastore():
    """proxmox:pbs holds datastores only; a pbs storage backs up to the datastore it names."""
    problems = failing(render({"proxmox": {"pbs": {"datastore": {"store1": {"path": "/srv/s"}}}}}))
    assert (
        list(problems) == ["proxmox-pbs-pillar"]
        and "unknown section(s) datastore" in problems["proxmox-pbs-pillar"]
    )
    states = render(
        {
            "proxmox": {
                "pbs_targets": {"backup1": {}},
                "pbs": {"datastores": {"store1": {"path": "/srv/s", "target": "backup1"}}},
                "storage": {"backups": {"type": "pbs", "server": "pbs", "datastore": "store1"}},
            }
        }
    )
    assert not failing(states)
    assert args(states["pbs-datastore-store1"])[0] == "pbs_datastore.present"
    assert {"require": [{"pbs_datastore": "pbs-datastore-store1"}]} in states["proxmox-storage-backups"][
        "proxmox_storage.present"
    ]


def test_the_configuration_read_with_config_get_is_no_section():
    pillar = {
        "proxmox": {"targets": {"lab": {}}, "ownership_file": "/x.json", "lxc": {"web": {"vmid": 150}}},
        "openbao": {"url": "https://b", "verify": True, "auth": {}, "timeout": 5, "policies": {}},
    }
    assert not failing(render(pillar))
    # Rows in OpenBao for every host of one pillar: proxmox:ownership is read with config.get too.
    shared = {"proxmox": {"ownership": {"store": "openbao", "mount": "secret", "path": "p"}, "lxc": {}}}
    assert not failing(render(shared))


def test_a_refused_entry_is_no_requisite_and_the_others_render():
    pillar = {
        "proxmox": {
            "pools": {"prod": {"comment": "c", "unless": "true"}},
            "lxc": {"web": {"vmid": 150, "pool": "prod"}, "db": {"vmid": 151, "ensure": "Absent"}},
        }
    }
    states = render(pillar)
    assert set(failing(states)) == {"proxmox-pool-prod", "proxmox-lxc-db"}
    assert args(states["proxmox-lxc-web"]) == (
        "proxmox_lxc.present",
        {"name": "web", "vmid": 150, "pool": "prod"},
    )


def test_the_formula_checks_what_the_library_checks():
    # The formula cannot import salt_proxmox (synced from file_roots it is importable only by Salt's
    # loader), so these pin its copies to the library's.
    from salt_proxmox.access import realm, user
    from salt_proxmox.certificate import spec as certificate
    from salt_proxmox.datacenter import acme, acme_account, dcformats, metrics, options
    from salt_proxmox.lxc import schema as lxc_schema
    from salt_proxmox.ownership.rows import REMOVALS
    from salt_proxmox.qemu import schema as qemu_schema
    from salt_proxmox.storage.types import LEGACY_SENSITIVE

    module = formula()
    assert module.REMOVALS == REMOVALS
    assert {
        "proxmox:lxc": tuple(sorted(lxc_schema.SECRETS)),
        "proxmox:qemu": tuple(sorted(qemu_schema.SECRETS)),
        "proxmox:storage": tuple(sorted(LEGACY_SENSITIVE)),
        "proxmox:users": tuple(sorted(user.SECRETS)),
        "proxmox:realms": tuple(sorted(realm.SECRETS)),
        "proxmox:metric_servers": tuple(sorted(metrics.SECRETS)),
        "proxmox:cluster_options": tuple(sorted(options.SECRETS)),
        "proxmox:acme:plugins": tuple(sorted(acme.SECRETS)),
        "proxmox:acme:accounts": tuple(sorted(acme_account.SECRETS)),
        "proxmox:certificates": tuple(sorted(certificate.SECRETS)),
    } == module.SECRETS
    assert set(dcformats.KEYS) == module.CLUSTER_OPTIONS


def test_an_acme_account_renders_with_its_hmac_key_read_from_pillar_never_an_argument():
    # ACMEAccount.pm register_account: eab-hmac-key is the EAB secret; Salt caches a state's arguments.
    pillar = {
        "proxmox": {
            "acme": {
                "accounts": {
                    "lab": {
                        "contact": ["ops@lab.example"],
                        "eab-kid": "kid-1",
                        "eab-hmac-key": "never-shown",
                    },
                    "old": {"ensure": "absent", "removal": "destroy"},
                }
            }
        }
    }
    states = render(pillar)
    args = states["proxmox-acme-account-lab"]["proxmox_acme.account"]
    assert {"secrets_pillar": ["proxmox", "acme", "accounts", "lab"]} in args
    assert "never-shown" not in str(args) and {"eab-kid": "kid-1"} in args
    assert states["proxmox-acme-account-old"] == {
        "proxmox_acme.account_absent": [{"name": "old"}, {"removal": "destroy"}]
    }


def test_notifications_render_endpoints_then_matchers_requiring_them_then_endpoints_absent():
    # proxmox-notify api/mod.rs: a matcher's targets must exist (ensure_endpoints_exist) and an endpoint a
    # matcher targets cannot be deleted (ensure_safe_to_delete); secrets are never state arguments.
    from salt_proxmox.datacenter import notifications

    pillar = {
        "proxmox": {
            "notifications": {
                "target": "lab",
                "endpoints": {
                    "old": {"type": "gotify", "ensure": "absent", "removal": "destroy", "server": "x"},
                    "ops": {"type": "smtp", "server": "m", "password": "s3cret", "secret_serial": 1},
                },
                "matchers": {"m": {"targets": ["ops", "mail-to-root"], "mode": "any"}},
            }
        }
    }
    states = render(pillar)
    assert list(states) == [
        "proxmox-notification-endpoint-ops",
        "proxmox-notification-matcher-m",
        "proxmox-notification-endpoint-old",
    ]
    assert args(states["proxmox-notification-endpoint-ops"]) == (
        "proxmox_notification.endpoint",
        {
            "name": "ops",
            "type": "smtp",
            "server": "m",
            "secret_serial": 1,
            "target": "lab",
            "secrets_pillar": ["proxmox", "notifications", "endpoints", "ops"],
        },
    )
    assert args(states["proxmox-notification-matcher-m"])[1]["require"] == [
        {"proxmox_notification": "proxmox-notification-endpoint-ops"}
    ]
    assert args(states["proxmox-notification-endpoint-old"]) == (
        "proxmox_notification.endpoint_absent",
        {"name": "old", "type": "gotify", "target": "lab", "removal": "destroy"},
    )
    assert set(formula().NOTIFICATION_SECRETS) == set(notifications.SECRETS)
    unknown = failing(render({"proxmox": {"notifications": {"endpoint": {}}}}))
    assert "unknown key(s) endpoint" in unknown["proxmox-notification-pillar"]


def test_a_secret_is_passed_as_its_pillar_path():
    pillar = {
        "proxmox": {"lxc": {"a:b": {"vmid": 150, "password": "s3cret", "ssh-public-keys": "ssh-ed25519 K"}}}
    }
    function, passed = args(render(pillar)["proxmox-lxc-a:b"])
    assert function == "proxmox_lxc.present"
    assert passed == {
        "name": "a:b",
        "vmid": 150,
        "ssh-public-keys": "ssh-ed25519 K",
        "secrets_pillar": ["proxmox", "lxc", "a:b"],
    }, "a list of keys: a key holding a colon is still one key"


def test_a_present_entry_keeps_its_checked_removal_for_when_it_turns_absent():
    # removal says what ensure: absent will do: present states that remove nothing are not given it (an
    # alias's present refused it as an unknown key), and the formula checks its value all the same.
    pillar = {"proxmox": {"firewall_aliases": {"a": {"cidr": "10.0.0.1", "removal": "destroy"}}}}
    assert args(render(pillar)["proxmox-firewall-alias-a"]) == (
        "proxmox_firewall_alias.present",
        {"name": "a", "cidr": "10.0.0.1"},
    )


def test_an_rbd_storage_requires_the_ceph_pool_it_names():
    # pve-storage RBDPlugin: pool (default rbd) names the Ceph pool the storage's images live in; the
    # pool state runs first and a failed pool stops the storage, never the rest.
    pillar = {
        "proxmox": {
            "ceph_pools": {"vmdata": {"node": "pve1", "size": 3}, "rbd": {"node": "pve1"}},
            "storage": {
                "ceph-vm": {"type": "rbd", "pool": "vmdata", "content": "images"},
                "ceph-default": {"type": "rbd", "content": "images"},
                "backups": {"type": "nfs", "server": "192.0.2.20", "export": "/e", "content": "backup"},
            },
        }
    }
    states = render(pillar)

    def needs(state_id):
        (args,) = states[state_id].values()
        return [arg["require"] for arg in args if "require" in arg]

    assert needs("proxmox-storage-ceph-vm") == [[{"proxmox_ceph_pool": "proxmox-ceph-pool-vmdata"}]]
    assert needs("proxmox-storage-ceph-default") == [[{"proxmox_ceph_pool": "proxmox-ceph-pool-rbd"}]]
    assert needs("proxmox-storage-backups") == []
    order = list(states)
    assert order.index("proxmox-ceph-pool-vmdata") < order.index("proxmox-storage-ceph-vm")


def test_a_guest_rule_list_requires_the_guests_own_ip_set_and_alias_before_the_clusters():
    """pve-firewall src/PVE/Firewall.pm resolves a name in a guest's rules and IP sets in the guest's own
    configuration first, then the cluster's (``ipt_gen_src_or_dst_match`` for ``+<set>``, ``resolve_alias``
    for an alias; ``dc/`` is the cluster's, ``guest/`` the guest's own), and a cluster rule, a node rule
    and a security group's rules only in the cluster's: each rule list requires the state of the object
    PVE will resolve, whatever the entries' keys, and a guest's and the cluster's of one name are two
    states."""
    states = render(
        {
            "proxmox": {
                "lxc": {"web": {"vmid": 150, "node": "pve1"}},
                "firewall_aliases": {
                    "gw": {"cidr": "10.9.9.9"},
                    "ct-150-gw": {"name": "gw", "cidr": "10.0.0.1", "scope": "ct/150"},
                    "lab": {"cidr": "10.0.0.0/24"},
                },
                "firewall": {
                    "ipsets": {
                        "admins": {"cidrs": ["192.0.2.0/24"]},
                        "ct-150-admins": {"name": "admins", "scope": "ct/150", "cidrs": ["GW", "dc/gw"]},
                        "peers": {"scope": "cluster", "cidrs": ["gw"]},
                    },
                    "rules": {
                        "ct/150": {
                            "rules": [
                                {"type": "in", "action": "ACCEPT", "source": "+admins", "dest": "gw"},
                                {"type": "in", "action": "ACCEPT", "source": "+dc/peers", "dest": "lab"},
                            ]
                        },
                        "vm/151": {
                            "rules": [
                                {"type": "in", "action": "ACCEPT", "source": "+dc/admins", "dest": "dc/gw"}
                            ]
                        },
                        "cluster": {
                            "rules": [{"type": "in", "action": "ACCEPT", "source": "+admins", "dest": "gw"}]
                        },
                    },
                },
            }
        }
    )
    assert not failing(states)
    guest_set = {"proxmox_firewall": "proxmox-firewall-ipset-ct-150-admins"}
    guest_alias = {"proxmox_firewall_alias": "proxmox-firewall-alias-ct-150-gw"}
    cluster_set = {"proxmox_firewall": "proxmox-firewall-ipset-admins"}
    cluster_alias = {"proxmox_firewall_alias": "proxmox-firewall-alias-gw"}
    assert args(states["proxmox-firewall-rules-ct/150"])[1]["require"] == [
        guest_set,
        guest_alias,
        {"proxmox_firewall": "proxmox-firewall-ipset-peers"},
        {"proxmox_firewall_alias": "proxmox-firewall-alias-lab"},
        {"proxmox_lxc": "proxmox-lxc-web"},
    ]
    # VM 151 declares no set or alias of its own here: a name resolves to the cluster's.
    assert args(states["proxmox-firewall-rules-vm/151"])[1]["require"] == [cluster_set, cluster_alias]
    assert args(states["proxmox-firewall-rules-cluster"])[1]["require"] == [cluster_set, cluster_alias]
    # A guest's IP set entry: a bare alias (any case) is the guest's own, dc/ the cluster's.
    assert args(states["proxmox-firewall-ipset-ct-150-admins"])[1]["require"] == [
        {"proxmox_lxc": "proxmox-lxc-web"},
        guest_alias,
        cluster_alias,
    ]
    assert args(states["proxmox-firewall-ipset-peers"])[1]["require"] == [cluster_alias]


def test_the_firewall_runs_after_the_guests_a_guest_scope_requiring_its_guest():
    """proxmox:firewall: options by scope, IP sets, groups; a guest scope's state requires the guest of that
    vmid, an IP set the aliases its entries name; ensure: absent passes only the identity keys."""
    states = render(
        {
            "proxmox": {
                "lxc": {"web": {"vmid": 150, "node": "pve1"}},
                "firewall_aliases": {
                    "Lab": {"cidr": "10.0.0.0/24"},
                    "own": {"cidr": "10.9.0.1", "scope": "ct/150"},
                },
                "firewall": {
                    "options": {"ct/150": {"enable": 1}, "cluster": {"ebtables": 0}},
                    "ipsets": {
                        "peers": {"scope": "ct/150", "cidrs": [{"cidr": "dc/lab"}]},
                        "old": {"ensure": "absent", "scope": "cluster", "cidrs": [], "removal": "destroy"},
                    },
                    "groups": {"webgrp": {"comment": "web"}},
                },
            }
        }
    )
    assert not failing(states)
    assert list(states)[-5:] == [
        "proxmox-firewall-group-webgrp",
        "proxmox-firewall-ipset-old",
        "proxmox-firewall-ipset-peers",
        "proxmox-firewall-options-cluster",
        "proxmox-firewall-options-ct/150",
    ]
    assert args(states["proxmox-firewall-options-ct/150"]) == (
        "proxmox_firewall.options",
        {"name": "ct/150", "enable": 1, "require": [{"proxmox_lxc": "proxmox-lxc-web"}]},
    )
    function, peers = args(states["proxmox-firewall-ipset-peers"])
    assert function == "proxmox_firewall.ipset"
    assert peers["require"] == [
        {"proxmox_lxc": "proxmox-lxc-web"},
        {"proxmox_firewall_alias": "proxmox-firewall-alias-Lab"},
    ]
    assert args(states["proxmox-firewall-ipset-old"]) == (
        "proxmox_firewall.ipset_absent",
        {"name": "old", "scope": "cluster", "removal": "destroy"},
    )
    assert args(states["proxmox-firewall-alias-own"])[1]["require"] == [{"proxmox_lxc": "proxmox-lxc-web"}]
    bad = render({"proxmox": {"firewall": {"option": {}}}})
    assert "proxmox:firewall has unknown key(s) option" in " ".join(failing(states=bad).values())


def test_access_objects_require_what_they_name():
    # A token needs its user (User.pm generate_token: "no such user"), a user its realm and groups
    # (create_user: "no such group"), an ACL entry its user, group or token (ACL.pm update_acl); each
    # only when this pillar declares it present, and each runs after what it requires.
    pillar = {
        "proxmox": {
            "realms": {"corp": {"type": "ldap", "server1": "l", "base_dn": "dc=x", "user_attr": "uid"}},
            "groups": {"automation": {}, "ops": {}, "old": {"ensure": "absent"}},
            "users": {
                "ci@pve": {"groups": ["automation", "elsewhere"]},
                "jo@corp": {"groups": "ops,old"},
            },
            "tokens": {"ci@pve!deploy": {"store": "secret/data/ci"}, "nobody@pve!x": {"store": "s/x"}},
            "acls": {
                "ci": {"path": "/vms", "role": "PVEAuditor", "token": "ci@pve!deploy"},
                "ops": {"path": "/vms", "role": "PVEAuditor", "group": "ops"},
                "jo": {"path": "/", "role": "PVEAuditor", "user": "jo@corp"},
            },
        }
    }
    states = render(pillar)
    need = {sid: args(state)[1].get("require") for sid, state in states.items()}
    assert need["proxmox-user-ci@pve"] == [{"proxmox_group": "proxmox-group-automation"}]
    assert need["proxmox-user-jo@corp"] == [
        {"proxmox_realm": "proxmox-realm-corp"},
        {"proxmox_group": "proxmox-group-ops"},
    ]
    assert need["proxmox-token-ci@pve!deploy"] == [{"proxmox_user": "proxmox-user-ci@pve"}]
    assert need["proxmox-token-nobody@pve!x"] is None
    assert need["proxmox-acl-ci"] == [{"proxmox_token": "proxmox-token-ci@pve!deploy"}]
    assert need["proxmox-acl-ops"] == [{"proxmox_group": "proxmox-group-ops"}]
    assert need["proxmox-acl-jo"] == [{"proxmox_user": "proxmox-user-jo@corp"}]
    order = list(states)
    assert (
        order.index("proxmox-realm-corp")
        < order.index("proxmox-group-ops")
        < order.index("proxmox-user-jo@corp")
    )
    assert (
        order.index("proxmox-user-ci@pve")
        < order.index("proxmox-token-ci@pve!deploy")
        < order.index("proxmox-acl-ci")
    )


def test_a_user_password_and_a_realm_bind_password_go_as_their_pillar_path():
    pillar = {
        "proxmox": {
            "users": {"ci@pve": {"password": "s3cret-pass", "password_serial": 1}},
            "realms": {
                "corp": {
                    "type": "ldap",
                    "server1": "l",
                    "base_dn": "d",
                    "user_attr": "uid",
                    "bind_password": "b1nd-pass",
                }
            },
        }
    }
    text = repr(render(pillar))
    assert "s3cret-pass" not in text and "b1nd-pass" not in text
    assert "['proxmox', 'users', 'ci@pve']" in text and "['proxmox', 'realms', 'corp']" in text


def test_two_entries_for_one_firewall_object_are_one_failing_state_naming_both():
    """One firewall object (kind, scope, name, target) declared by two pillar entries would be two states
    of one object, each undoing the other: the formula renders neither, and one failing state names both
    entries. Names are compared as PVE keys them: an alias ``lc`` (pve-firewall API2/Firewall/Aliases.pm),
    an IP set's and a security group's lower-cased too (src/PVE/Firewall.pm ``parse_fw_config`` reads
    ``[IPSET <name>]`` and ``[group <name>]`` back ``lc``); an alias's ``rename_from`` declares its old
    name as well (a rename deletes it). A guest's and the cluster's object of one name, or objects on
    two targets, are two objects."""
    states = render(
        {
            "proxmox": {
                "lxc": {"web": {"vmid": 150, "node": "pve1"}},
                "firewall_aliases": {
                    "gw": {"cidr": "10.0.0.1"},
                    "gateway": {"name": "GW", "cidr": "10.0.0.2"},
                    "ct-gw": {"name": "gw", "scope": "ct/150", "cidr": "10.0.0.3"},
                    "other-gw": {"name": "gw", "target": "other", "cidr": "10.0.0.4"},
                    "lab": {"cidr": "10.1.0.0/24"},
                    "lab2": {"cidr": "10.1.0.0/24", "rename_from": "lab"},
                },
                "firewall": {
                    "ipsets": {
                        "admins": {"cidrs": ["192.0.2.0/24"]},
                        "ops": {
                            "name": "admins",
                            "scope": "cluster",
                            "ensure": "absent",
                            "removal": "destroy",
                        },
                        "ct-admins": {"name": "admins", "scope": "ct/150", "cidrs": ["192.0.2.1"]},
                    },
                    "groups": {"webgrp": {"comment": "web"}, "web": {"name": "WebGrp"}},
                    "options": {"ct/150": {"enable": 1}, "web-options": {"name": "ct/150", "enable": 0}},
                    "rules": {
                        "cluster": {"rules": [{"type": "in", "action": "ACCEPT", "source": "+admins"}]},
                        "everyone": {"name": "cluster", "rules": []},
                        "ct/150": {
                            "rules": [{"type": "in", "action": "ACCEPT", "source": "+admins", "dest": "gw"}]
                        },
                    },
                },
            }
        }
    )
    refused = failing(states)
    twins = {
        "proxmox-firewall-alias-gateway": ("proxmox:firewall_aliases:gateway", "proxmox:firewall_aliases:gw"),
        "proxmox-firewall-alias-lab": ("proxmox:firewall_aliases:lab", "proxmox:firewall_aliases:lab2"),
        "proxmox-firewall-ipset-admins": ("proxmox:firewall:ipsets:admins", "proxmox:firewall:ipsets:ops"),
        "proxmox-firewall-group-web": ("proxmox:firewall:groups:web", "proxmox:firewall:groups:webgrp"),
        "proxmox-firewall-options-ct/150": (
            "proxmox:firewall:options:ct/150",
            "proxmox:firewall:options:web-options",
        ),
        "proxmox-firewall-rules-cluster": (
            "proxmox:firewall:rules:cluster",
            "proxmox:firewall:rules:everyone",
        ),
    }
    assert set(refused) == set(twins), refused
    for sid, (first, second) in twins.items():
        assert f"pillar {first} and {second} declare one" in refused[sid], refused[sid]
        assert args(states[sid])[1]["name"] == f"pillar {first} and {second}"
    # Neither entry of a pair is rendered, nor a requisite of another state.
    for gone in (
        "proxmox-firewall-alias-gw",
        "proxmox-firewall-alias-lab2",
        "proxmox-firewall-ipset-ops",
        "proxmox-firewall-group-webgrp",
        "proxmox-firewall-options-web-options",
        "proxmox-firewall-rules-everyone",
    ):
        assert gone not in states, gone
    # Another scope's or another target's object of one name is its own, and renders.
    assert args(states["proxmox-firewall-alias-ct-gw"])[0] == "proxmox_firewall_alias.present"
    assert args(states["proxmox-firewall-alias-other-gw"])[0] == "proxmox_firewall_alias.present"
    assert args(states["proxmox-firewall-ipset-ct-admins"])[0] == "proxmox_firewall.ipset"
    assert args(states["proxmox-firewall-rules-ct/150"])[1]["require"] == [
        {"proxmox_firewall": "proxmox-firewall-ipset-ct-admins"},
        {"proxmox_firewall_alias": "proxmox-firewall-alias-ct-gw"},
        {"proxmox_lxc": "proxmox-lxc-web"},
    ]


def test_sdn_controllers_ipams_and_dns_run_before_the_zones_naming_them_their_secrets_from_pillar():
    """A zone requires the controller, IPAM and DNS servers it names (pve-network Zones.pm create refuses
    one that does not exist); an IPAM's token and a DNS server's key are never state arguments but read
    from the entry's pillar path; the SDN apply waits for the staged controller, not for IPAMs and DNS
    servers, which Ipams.pm/Dns.pm write at once."""
    from salt_proxmox.sdn import extras

    module = formula()
    assert module.SDN_SECRETS == {"ipams": extras.IPAM_SECRETS, "dns": extras.DNS_SECRETS}
    pillar = {
        "proxmox": {
            "sdn": {
                "apply": True,
                "controllers": {"evpnctl": {"type": "evpn", "asn": 65000, "peers": "10.0.0.1"}},
                "ipams": {"nb": {"type": "netbox", "url": "https://nb", "token": "t0k3n"}},
                "dns": {"pdns": {"type": "powerdns", "url": "https://p", "key": "k3y"}},
                "zones": {
                    "ev": {
                        "type": "evpn",
                        "controller": "evpnctl",
                        "vrf-vxlan": 10,
                        "ipam": "nb",
                        "dns": "pdns",
                    }
                },
            }
        }
    }
    states = render(pillar)
    assert not failing(states)
    fun, ipam = args(states["proxmox-sdn-ipam-nb"])
    assert fun == "proxmox_sdn.ipam" and "token" not in ipam
    assert ipam["secrets_pillar"] == ["proxmox", "sdn", "ipams", "nb"]
    assert "key" not in args(states["proxmox-sdn-dns-pdns"])[1]
    assert args(states["proxmox-sdn-zone-ev"])[1]["require"] == [
        {"proxmox_sdn": "proxmox-sdn-controller-evpnctl"},
        {"proxmox_sdn": "proxmox-sdn-dns-pdns"},
        {"proxmox_sdn": "proxmox-sdn-ipam-nb"},
    ]
    assert args(states["proxmox-sdn-apply"])[1]["require"] == [
        {"proxmox_sdn": "proxmox-sdn-controller-evpnctl"},
        {"proxmox_sdn": "proxmox-sdn-zone-ev"},
    ]
    assert "t0k3n" not in json.dumps(states) and "k3y" not in json.dumps(states)
