"""A privilege the provision token lacks is predicted at plan for every PVE family, with the command that
grants it (salt_proxmox/access/privileges.py, from each method's ``permissions``): each family's example
create (``registry.Family.examples``) is planned through its state against a fake cluster whose provision
token lacks one privilege the create needs; PVE would refuse the apply with
``403 Permission check failed (<path>, <privilege>)``."""

from __future__ import annotations

import copy

import pytest

from salt_proxmox.registry import FAMILIES
from tests.conformance.examples import SECRETS_PILLAR, examples_of
from tests.support.cluster import PROVISION_TOKEN_ID
from tests.support.guests import static_targets
from tests.support.saltworld import Low, SaltWorld, chunks_of

#: family → (the privilege taken away, the path PVE checks it on) for the family's example create.
MISSING = {
    # pve-firewall API2/Firewall/Aliases.pm create_alias: Sys.Modify on /.
    "firewall_alias": ("Sys.Modify", "/"),
    # pve-manager API2/Pool.pm create_pool: Pool.Allocate on /pool/{poolid}.
    "pool": ("Pool.Allocate", "/pool/example"),
    # pve-access-control API2/Role.pm create_role: Sys.Modify on /access.
    "role": ("Sys.Modify", "/access"),
    # Domains.pm create: Realm.Allocate on /access/realm.
    "realm": ("Realm.Allocate", "/access/realm"),
    # Group.pm create_group: Group.Allocate on /access/groups.
    "group": ("Group.Allocate", "/access/groups"),
    # User.pm create_user: Realm.AllocateUser on /access/realm/<realm>.
    "user": ("Realm.AllocateUser", "/access/realm/pve"),
    # User.pm generate_token: User.Modify on the user's groups (/access/groups).
    "token": ("User.Modify", "/access/groups"),
    # ACL.pm update_acl: Permissions.Modify on the entry's path.
    "acl": ("Permissions.Modify", "/vms"),
    # pve-manager API2/Ceph/Pool.pm createpool: Sys.Modify on /.
    "ceph_pool": ("Sys.Modify", "/"),
    # pve-storage API2/Storage/Config.pm create: Datastore.Allocate on /storage.
    "storage": ("Datastore.Allocate", "/storage"),
    # pve-manager API2/Backup.pm create_job: Sys.Modify on /.
    "backup_job": ("Sys.Modify", "/"),
    # pve-manager API2/Cluster/MetricServer.pm create: Sys.Modify on /.
    "metric_server": ("Sys.Modify", "/"),
    # pve-manager API2/ReplicationConfig.pm create: VM.Replicate on /vms/<vmid>.
    "replication": ("VM.Replicate", "/vms/191"),
    # pve-manager API2/Cluster/Mapping/PCI.pm create: Mapping.Modify on /mapping/pci.
    "mapping": ("Mapping.Modify", "/mapping/pci"),
    # pve-manager API2/Cluster/Notifications.pm create_sendmail_endpoint: Mapping.Modify there.
    "notification": ("Mapping.Modify", "/mapping/notifications"),
    # pve-manager API2/Cluster.pm set_options: Sys.Modify on /.
    "cluster_options": ("Sys.Modify", "/"),
    # pve-manager API2/ACMEPlugin.pm add_plugin: Sys.Modify on /.
    "acme": ("Sys.Modify", "/"),
    # pve-container API2/LXC/Snapshot.pm snapshot: VM.Snapshot on /vms/<vmid>.
    "snapshot": ("VM.Snapshot", "/vms/120"),
    # pve-firewall API2/Firewall/Groups.pm create_security_group: Sys.Modify on /.
    "firewall": ("Sys.Modify", "/"),
    # pve-ha-manager API2/HA/{Resources,Groups,Rules}.pm create: Sys.Console on /.
    "ha_resource": ("Sys.Console", "/"),
    "ha_group": ("Sys.Console", "/"),
    "ha_rule": ("Sys.Console", "/"),
    # pve-manager API2/Network.pm create_network: Sys.Modify on /nodes/{node}.
    "network": ("Sys.Modify", "/nodes/pve1"),
    # pve-network API2/Network/SDN/Controllers.pm create (its first kind): SDN.Allocate on /sdn/controllers.
    "sdn": ("SDN.Allocate", "/sdn/controllers"),
    # pve-manager API2/Nodes.pm update_dns (the node family's first kind): Sys.Modify on /nodes/{node}.
    "node": ("Sys.Modify", "/nodes/pve1"),
    # pve-manager API2/Certificates.pm upload_custom_cert: Sys.Modify on /nodes/{node}.
    "certificate": ("Sys.Modify", "/nodes/pve1"),
    # pve-storage API2/Storage/Status.pm download_url: Datastore.AllocateTemplate on /storage/{storage}.
    "content": ("Datastore.AllocateTemplate", "/storage/local"),
    # pve-container LXC.pm check_ct_modify_config_perm: memory needs VM.Config.Memory on /vms/<vmid>.
    "lxc": ("VM.Config.Memory", "/vms/190"),
    # qemu-server Qemu.pm $check_vm_modify_config_perm: memory needs VM.Config.Memory on /vms/<vmid>.
    "qemu": ("VM.Config.Memory", "/vms/290"),
}


def _without(pve, privilege: str) -> None:
    pve.acl[PROVISION_TOKEN_ID] = [(path, privs - {privilege}) for path, privs in pve.acl[PROVISION_TOKEN_ID]]


#: The PVE families: a PBS datastore's privileges are the PBS server's own (proxmox-backup
#: ``src/api2/config/datastore.rs``: Datastore.Allocate on /datastore), which GET /access/permissions of
#: PVE does not answer for. A snippet is a file the root lane writes on the node: no token privilege
#: writes it (tests/integration/test_snippet.py refuses it without a lane).
PVE_FAMILIES = [
    f
    for f in FAMILIES
    if f.module == "proxmox" and not f.section.startswith("proxmox:pbs:") and f.name != "snippet"
]


@pytest.mark.parametrize("family", PVE_FAMILIES, ids=lambda f: f.name)
def test_a_missing_provision_privilege_is_predicted_at_plan_with_its_grant(
    family, fresh_cluster, openbao, tmp_path
):
    privilege, path = MISSING[family.name]
    _without(fresh_cluster.pve, privilege)
    if family.name == "ha_group":  # HA groups are PVE 8's (PVE 9 migrated them to rules)
        fresh_cluster.pve.version, fresh_cluster.pve.release_version = "8.4.14", "8.4"
    config = {
        "proxmox": {"targets": static_targets(fresh_cluster)},
        "openbao": {"url": openbao.url, "auth": {"method": "token", "token": openbao.root_token}},
    }
    world = SaltWorld(config, copy.deepcopy(SECRETS_PILLAR), tmp_path / "owned.json")
    start = len(fresh_cluster.pve.requests)
    returns = world.run(
        [Low(family.state, family.kinds[0].present, examples_of(family.kinds[0].name).create)], True
    )
    said = returns[0]["comment"]
    assert returns[0]["result"] is False, said
    assert f"lacks {privilege} on {path}" in said, said
    assert f"pveum acl modify {path} --tokens '{PROVISION_TOKEN_ID}'" in said, said
    assert not [r for r in fresh_cluster.pve.requests[start:] if r[0] != "GET"]


#: The other kinds of a family whose first kind the test above tries: pve-network
#: API2/Network/SDN/{Zones,Ipams,Dns}.pm create check SDN.Allocate on /sdn/zones, /sdn/ipams, /sdn/dns.
MISSING_KINDS = {
    "sdn_zone": ("SDN.Allocate", "/sdn/zones"),
    "sdn_ipam": ("SDN.Allocate", "/sdn/ipams"),
    "sdn_dns": ("SDN.Allocate", "/sdn/dns"),
}


@pytest.mark.parametrize("kind", sorted(MISSING_KINDS))
def test_a_missing_provision_privilege_of_another_kind_is_predicted_at_plan(
    kind, fresh_cluster, openbao, tmp_path
):
    privilege, path = MISSING_KINDS[kind]
    _without(fresh_cluster.pve, privilege)
    (family,) = [f for f in FAMILIES if any(k.name == kind for k in f.kinds)]
    (found,) = [k for k in family.kinds if k.name == kind]
    config = {
        "proxmox": {"targets": static_targets(fresh_cluster)},
        "openbao": {"url": openbao.url, "auth": {"method": "token", "token": openbao.root_token}},
    }
    world = SaltWorld(config, copy.deepcopy(SECRETS_PILLAR), tmp_path / "owned.json")
    start = len(fresh_cluster.pve.requests)
    returns = world.run([Low(family.state, found.present, examples_of(kind).create)], True)
    said = returns[0]["comment"]
    assert returns[0]["result"] is False and f"lacks {privilege} on {path}" in said, said
    assert f"pveum acl modify {path} --tokens '{PROVISION_TOKEN_ID}'" in said, said
    assert not [r for r in fresh_cluster.pve.requests[start:] if r[0] != "GET"]


def _lowstate(world: SaltWorld, pillar: dict) -> list[dict]:
    """The formula's chunks as Salt's low data (``state``, ``fun``, ``__id__``, ``name``, arguments)."""
    return [
        {"state": low.state, "fun": low.fun, "__id__": low.id, **low.args}
        for low in chunks_of(world.formula(pillar))
    ]


ESTATE = {
    "proxmox": {
        "groups": {"automation": {"comment": "CI"}},
        "users": {"ci@pve": {"groups": ["automation"]}},
        "tokens": {"ci@pve!deploy": {"store": "secret/data/ci", "privsep": 1}},
        "pools": {"prod": {"comment": "Production"}},
        "lxc": {
            "web": {
                "vmid": 150,
                "node": "pve1",
                "ostemplate": "local:vztmpl/debian-13-standard_13.0-1_amd64.tar.zst",
                "rootfs": "local-zfs:8",
                "memory": 1024,
                "net0": "name=eth0,bridge=vmbr0,ip=dhcp",
                "pool": "prod",
            }
        },
        "qemu": {
            "vm": {"vmid": 290, "node": "pve1", "memory": 2048, "scsi0": "local-lvm:4", "startup": "order=1"}
        },
    }
}


def test_the_estate_needs_a_least_role_per_credential_and_lists_what_is_missing(fresh_cluster, tmp_path):
    """proxmox.privileges_needed's library half: the roles as pillar, and per credential and path what the
    token lacks with the pveum lines (qemu-server $check_vm_modify_config_perm, pve-container
    check_ct_modify_config_perm, GuestHelpers.pm check_vnet_access, User.pm, Group.pm, Pool.pm)."""
    from salt_proxmox.access import estate
    from tests.support.guests import make_context

    world = SaltWorld({"proxmox": {"targets": static_targets(fresh_cluster)}}, {}, tmp_path / "owned.json")
    ctx = make_context(static_targets(fresh_cluster))
    found = estate.needed(ctx, _lowstate(world, ESTATE))
    roles = found["proxmox"]["roles"]
    provision = set(roles["SaltProxmoxProvision"]["privs"])
    assert {"VM.Allocate", "VM.Config.Memory", "VM.Config.Disk", "VM.Config.Network", "SDN.Use",
            "Datastore.AllocateSpace", "Pool.Allocate", "User.Modify", "Group.Allocate",
            "Realm.AllocateUser", "Sys.Modify"} <= provision  # fmt: skip
    assert {"VM.Audit", "Sys.Audit", "Pool.Audit"} <= set(roles["SaltProxmoxRead"]["privs"])
    acls = found["proxmox"]["acls"]
    assert any(
        e["path"] == "/sdn/zones/localnetwork/vmbr0" and e["token"] == PROVISION_TOKEN_ID
        for e in acls.values()
    )
    assert found["missing"] == {}, found["missing"]
    _without(fresh_cluster.pve, "SDN.Use")
    ctx = make_context(static_targets(fresh_cluster))
    found = estate.needed(ctx, _lowstate(world, ESTATE))
    lacking = found["missing"]["provision"]["/sdn/zones/localnetwork/vmbr0"]
    assert lacking["lacks"] == ["SDN.Use"]
    assert (
        f"pveum acl modify /sdn/zones/localnetwork/vmbr0 --tokens '{PROVISION_TOKEN_ID}'" in lacking["grant"]
    )


def test_the_example_estates_roles_hold_what_the_estate_needs(fresh_cluster, tmp_path):
    """pillar_examples declares the two roles of its own credentials: each holds every privilege
    proxmox.privileges_needed derives from that same estate."""
    from pathlib import Path

    import yaml

    from salt_proxmox.access import estate
    from tests.support.guests import make_context

    pillar = yaml.safe_load((Path(__file__).parents[2] / "pillar_examples" / "proxmox.sls").read_text())
    world = SaltWorld({"proxmox": {"targets": static_targets(fresh_cluster)}}, {}, tmp_path / "owned.json")
    found = estate.needed(make_context(static_targets(fresh_cluster)), _lowstate(world, pillar))
    declared = pillar["proxmox"]["roles"]
    for role, entry in found["proxmox"]["roles"].items():
        assert set(entry["privs"]) <= set(declared[role]["privs"]), (
            role,
            set(entry["privs"]) - set(declared[role]["privs"]),
        )


def test_the_execution_functions_print_the_roles_and_run_a_sync_ad_hoc(fresh_cluster, tmp_path):
    """proxmox.privileges_needed reads the run's lowstate (state.show_low_sls) and prints the roles as a
    proxmox: pillar entry; proxmox.realm_sync runs Domains.pm sync as a task, a dry run by default."""
    world = SaltWorld({"proxmox": {"targets": static_targets(fresh_cluster)}}, {}, tmp_path / "owned.json")
    lowstate = _lowstate(world, ESTATE)
    world.salt["state.show_low_sls"] = lambda mods, **_: lowstate
    found = world.salt["proxmox.privileges_needed"](mods="proxmox")
    assert "VM.Allocate" in found["proxmox"]["roles"]["SaltProxmoxProvision"]["privs"]
    assert found["missing"] == {}
    corp = {"type": "ldap", "server1": "ldap.example.org", "base_dn": "dc=example,dc=org", "user_attr": "uid"}
    (made,) = world.run([Low("proxmox_realm", "present", {"name": "corp", **corp})], False)
    assert made["result"] is True, made["comment"]
    synced = world.salt["proxmox.realm_sync"](realm="corp")
    assert synced["dry_run"] is True and fresh_cluster.pve.syncs == [{"realm": "corp", "dry-run": 1}]
