"""The conformance suite's declarations of every kind of every registered family (``EXAMPLES``, keyed by
the kind's ownership row family, ``registry.Kind.name``), as its state takes them: ``name`` plus the
state's arguments. A registered kind without an entry here fails the suite (``contract.missing``), and an
entry naming no registered kind fails ``test_contract.py`` — the registry says what exists, this file
holds the data each family is tried with. The node-scoped families' examples are ``examples_node``'s; the
shapes they are written in (``Examples``, re-exported here) are ``shapes``'.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from types import MappingProxyType

from tests.conformance.examples_node import CERTIFICATE, CERTIFICATE_SECRETS, CONTENT, NODE_EXAMPLES
from tests.conformance.shapes import Examples, _bad, _simple, _with_bad

__all__ = ["EXAMPLES", "SECRETS_PILLAR", "Examples", "examples_of"]


_POLICY = {
    "name": "salt-proxmox-example",
    "fragments": ['path "secret/data/example" {\n  capabilities = ["read"]\n}\n'],
}
_ALIAS = {"name": "example_net", "cidr": "10.9.0.0/24", "comment": "Example"}
_POOL = {"name": "example", "comment": "Example pool"}
_ROLE = {"name": "SaltExample", "privs": ["VM.Audit"]}
#: Access control: an LDAP realm, a user of the pve realm, and an API token of a user the
#: cluster has, its secret kept in the OpenBao dev server's KV version 2 mount.
_REALM = {
    "name": "example-ldap",
    "type": "ldap",
    "server1": "ldap.example.org",
    "base_dn": "dc=example,dc=org",
    "user_attr": "uid",
    "comment": "Example directory",
}
_USER = {"name": "example@pve", "email": "example@example.org", "firstname": "Example"}
_TOKEN = {
    "name": "salt-read@pve!example",
    "privsep": 1,
    "comment": "Example",
    "store": "secret/data/salt-proxmox/example-token",
}
#: An ACL entry for a user the cluster has (PVE refuses one naming a missing user or group:
#: pve-access-control ``API2/ACL.pm`` ``update_acl``).
_ACL = {"name": "example-acl", "path": "/vms", "role": "PVEAuditor", "user": "salt-read@pve"}
#: A directory storage (pve-storage ``DirPlugin.pm``): path fixed, content and prune-backups changeable.
_STORAGE = {"name": "example-dir", "type": "dir", "path": "/srv/example", "content": "iso,backup"}
#: A replicated pool of the Ceph cluster, managed through node pve1.
_CEPH_POOL = {
    "name": "example-pool",
    "node": "pve1",
    "size": 3,
    "min_size": 2,
    "pg_num": 32,
    "application": "rbd",
    "target_size_ratio": 0.2,
}
#: An erasure-coded pool (pve-manager API2/Ceph/Pool.pm createpool erasure-coding).
_CEPH_EC = {"name": "example-ec", "node": "pve1", "erasure_coding": {"k": 2, "m": 1}}


#: A hook script in storage ``snippets`` (a dir storage at the test's temporary path, written through the
#: fake root lane: contract.ON_DISK), executable as PVE requires of a hookscript (GuestHelpers.pm
#: check_hookscript). Its content is read from pillar (``SECRETS_PILLAR``), never an argument; the update
#: names another entry holding other content.
_SNIPPET = {
    "name": "example-hook.sh",
    "storage": "snippets",
    "secrets_pillar": "conformance:snippet",
    "executable": True,
}


#: An IP set of the cluster (pve-firewall API2/Firewall/IPSet.pm), one entry a ``nomatch``.
_IPSET = {
    "name": "examples",
    "comment": "Example set",
    "cidrs": ["10.9.0.0/24", {"cidr": "10.9.1.7", "nomatch": True}],
}
#: A node's firewall options (pve-firewall Firewall.pm ``$host_option_properties``).
_NODE_OPTIONS = {"name": "node/pve1", "nf_conntrack_max": 524288, "tcpflags": True}
#: A security group (pve-firewall API2/Firewall/Groups.pm), its name lower case as PVE reads it back; the
#: access group example is the same declaration (a valid pve-access-control groupid too).
_GROUP = {"name": "examplegrp", "comment": "Example group"}
#: A datastore of the PBS target (proxmox-backup ``src/api2/config/datastore.rs``): path fixed, the rest
#: changeable.
_PBS_DATASTORE = {
    "name": "example-store",
    "path": "/srv/pbs/example",
    "comment": "Example",
    "gc-schedule": "daily",
}
#: HA (pve-ha-manager): a resource for the seeded container 120; a PVE 9 node-affinity rule naming the
#: seeded router VM 300 once it is an HA resource; a PVE 8 group (its conformance cluster runs PVE 8).
_HA_RESOURCE = {"name": "ct:120", "ha_state": "started", "max_restart": 2, "comment": "Example"}
_HA_RULE = {
    "name": "example-rule",
    "type": "node-affinity",
    "resources": ["ct:120"],
    "nodes": ["pve1:2", "pve2:1"],
    "comment": "Example",
}
_HA_GROUP = {"name": "example-group", "nodes": ["pve1:2", "pve2:1"], "restricted": 0, "comment": "Example"}
#: A nightly job backing up the cluster's container 120 to a storage the
#: cluster has (pve-manager ``PVE/API2/Backup.pm`` ``create_job``).
_BACKUP_JOB = {
    "name": "example-nightly",
    "schedule": "02:00",
    "storage": "local",
    "vmid": "120",
    "mode": "snapshot",
    "compress": "zstd",
    "comment": "Example",
}
#: A snapshot of the cluster's container 120, whose volumes are on zfspool (snapshots: pve-storage
#: ZFSPoolPlugin.pm volume_has_feature).
_SNAPSHOT = {"name": "example-snap", "vmid": 120, "node": "pve1", "type": "lxc", "description": "Example"}
#: The cluster's datacenter.cfg (pve-cluster DataCenterConfig.pm): a scalar key and a property string.
_CLUSTER_OPTIONS = {
    "name": "datacenter",
    "keyboard": "en-us",
    "migration": "type=insecure,network=10.0.0.0/24",
}
#: A graphite metric server (pve-manager ``PVE/Status/Graphite.pm``): its port declared, as every write
#: sends it (``updateSchema`` requires it); clearing ``path`` is PVE's default path ``proxmox``.
#: A replication job of a container on ZFS (only a zfspool volume replicates: pve-storage ZFSPoolPlugin.pm
#: volume_has_feature), which the given state makes so that it is ours.
_REPL_CT = {
    "name": "example-repl-ct",
    "vmid": 191,
    "node": "pve1",
    "ostemplate": "local:vztmpl/debian-13-standard_13.0-1_amd64.tar.zst",
    "rootfs": "local-zfs:4",
    "memory": 512,
    "net0": "name=eth0,bridge=vmbr0,ip=dhcp",
}
_REPLICATION = {"name": "191-0", "target_node": "pve2", "schedule": "*/30", "rate": 50, "comment": "Example"}
_METRIC_SERVER = {
    "name": "example-graphite",
    "type": "graphite",
    "server": "192.0.2.40",
    "port": 2003,
    "path": "proxmox.example",
    "proto": "udp",
}
_MAPPINGS = {
    "pci": {
        "name": "example-gpu",
        "description": "Example GPU",
        "map": ["node=pve1,path=0000:01:00.0,id=10de:1eb8,iommugroup=14"],
    },
    "usb": {"name": "example-key", "description": "Example key", "map": ["node=pve1,id=1050:0407"]},
    "dir": {"name": "example-share", "description": "Example share", "map": ["node=pve1,path=/srv/example"]},
}
_MAPPING_UPDATE = {
    "pci": [
        "node=pve1,path=0000:01:00.0,id=10de:1eb8,iommugroup=14",
        "node=pve2,path=0000:02:00.0,id=10de:1eb8",
    ],
    "usb": ["node=pve1,id=1050:0407", "node=pve2,id=1050:0407,path=1-2"],
    "dir": ["node=pve1,path=/srv/example", "node=pve2,path=/srv/example"],
}


def _mapping(kind: str) -> Examples:
    """The examples of a resource mapping kind (``pci``, ``usb``, ``dir``): a second node's entry, a
    cleared description, an entry without its node."""
    create = _MAPPINGS[kind]
    absent = {"name": create["name"]}
    return Examples(
        create=create,
        update={**create, "map": _MAPPING_UPDATE[kind]},
        clear={**create, "description": None},
        delete={**absent, "removal": "destroy"},
        bad={
            **_bad(create, absent, kind, f"{kind}_absent"),
            "wrong type": (kind, {**create, "map": 7}, "map"),
        },
    )


#: A DNS challenge plugin of one of PVE's DNS APIs (proxmox-acme ``DNSChallenge.pm``), on one node.
_ACME_PLUGIN = {"name": "example-dns", "type": "dns", "api": "cf", "validation-delay": 60, "nodes": ["pve1"]}
#: An ACME account (pve-manager API2/ACMEAccount.pm), agreeing to Let's Encrypt's Terms of Service as the
#: fake's directory meta names them (tests.support.acme.LE_TOS); read and written through the fake root
#: lane (contract.LANE): only root@pam may.
_ACME_ACCOUNT = {
    "name": "example-acct",
    "contact": ["ops@example.org"],
    "tos_url": "https://letsencrypt.org/documents/LE-SA-v1.5-February-24-2025.pdf",
}
#: A sendmail notification endpoint and a matcher routing backup errors to the built-in mail-to-root
#: (pve-manager API2/Cluster/Notifications.pm, proxmox-notify).
_NOTIFY_ENDPOINT = {
    "name": "example-mail",
    "type": "sendmail",
    "mailto": ["ops@example.org"],
    "author": "Example PVE",
    "comment": "Example",
}
_NOTIFY_MATCHER = {
    "name": "example-matcher",
    "match-field": ["exact:type=vzdump"],
    "match-severity": ["error"],
    "targets": ["mail-to-root"],
    "comment": "Example",
}
_IFACE = {"name": "vmbr9", "node": "pve1", "type": "bridge", "autostart": True, "comments": "Example"}
_ZONE = {"name": "example", "type": "simple", "mtu": 1450}
#: A vnet of a simple zone (no tag: pve-network ``SimplePlugin.pm`` ``vnet_update_hook`` refuses one).
_VNET = {"name": "exvnet", "zone": "exzone", "alias": "Example"}
#: A subnet of that vnet; its gateway inside it (pve-network ``SubnetPlugin.pm`` ``on_update_hook``).
_SUBNET = {"name": "10.9.8.0/24", "vnet": "exvnet", "gateway": "10.9.8.1", "snat": False}
#: The zone (and for a subnet the vnet) the vnet and subnet examples are made in.
_SDN_GIVEN = (("proxmox_sdn", "zone", {"name": "exzone", "type": "simple"}),)
#: A bgp controller (pve-network ``Controllers/BgpPlugin.pm``: node, asn and peers required), an IPAM
#: and a DNS server, whose token and key are read from pillar (``SECRETS_PILLAR``), never arguments.
_CONTROLLER = {
    "name": "exbgp",
    "type": "bgp",
    "node": "pve1",
    "asn": 65001,
    "peers": "10.9.0.1",
    "loopback": "lo0",
}
_IPAM = {
    "name": "exnetbox",
    "type": "netbox",
    "url": "https://netbox.example.org/api",
    "fingerprint": ":".join(["AB"] * 32),
    "secrets_pillar": "conformance:sdn_ipam",
}
_DNS = {
    "name": "expdns",
    "type": "powerdns",
    "url": "https://pdns.example.org/api/v1/servers/localhost",
    "ttl": 3600,
    "secrets_pillar": "conformance:sdn_dns",
}
#: The minion's pillar in the suite: the IPAM's token, the DNS server's key, the snippet's content and the
#: node certificates' keys (``examples_node``), never shown.
SECRETS_PILLAR = {
    "conformance": {
        "sdn_ipam": {"token": "nb-token-0123456789"},
        "sdn_dns": {"key": "pdns-key-9876"},
        "snippet": {"content": '#!/bin/sh\necho "$1 $2" # hook-4Fq8\n'},
        "snippet_update": {"content": '#!/bin/sh\nlogger "guest $1: $2" # hook-7Kd2\n'},
        **CERTIFICATE_SECRETS,
    }
}
#: One cluster rule (a rule list whose scope is ``cluster``): PVE's POST puts it at the top of the empty
#: list (pve-firewall ``API2/Firewall/Rules.pm`` ``create_rule``), a comment change is one PUT.
_FW_RULES = {
    "name": "cluster",
    "rules": [
        {"type": "in", "action": "ACCEPT", "proto": "tcp", "dport": "22", "enable": 1, "comment": "Example"}
    ],
}
_CT = {
    "name": "example-ct",
    "vmid": 190,
    "node": "pve1",
    "ostemplate": "local:vztmpl/debian-13-standard_13.0-1_amd64.tar.zst",
    "rootfs": "local-lvm:4",
    "memory": 512,
    # A NIC: the MAC PVE draws for it is what tells this container apart from another made at its vmid
    # (salt_proxmox.guest.fingerprint), so the row vouches for it and later writes are allowed.
    "net0": "name=eth0,bridge=vmbr0,ip=dhcp",
    "description": "Example",
}
_VM = {
    "name": "example-vm",
    "name_from_id": True,  # the pillar entry names no VM: the formula passes its key as the state id
    "vmid": 290,
    "node": "pve1",
    "memory": 1024,
    "scsi0": "local-lvm:4",
    "description": "Example",
}


def _guest(create: Mapping[str, object]) -> Examples:
    """The examples of a guest kind (``lxc``, ``qemu``): ``create``, a doubled ``memory``, a cleared
    ``description``."""
    return Examples(
        create=create,
        update={**create, "memory": 2 * int(create["memory"])},
        clear={**create, "description": ""},
        delete={key: create[key] for key in ("name", "vmid", "node")} | {"removal": "destroy"},
        bad={
            "salt keyword": ("present", {**create, "unless": "true"}, "unless"),
            "unknown key": ("present", {**create, "colour": "red"}, "colour"),
            "misspelt ensure": ("present", {**create, "ensure": "absnet"}, "ensure"),
            "misspelt removal": ("present", {**create, "removal": "destory"}, "removal"),
            "wrong type": ("present", {**create, "memory": "lots"}, "memory"),
        },
    )


#: ``{kind name: Examples}``, in the registry's order.
EXAMPLES: Mapping[str, Examples] = MappingProxyType(
    {
        "policy": Examples(
            create=_POLICY,
            update={**_POLICY, "fragments": ['path "secret/data/example" {\n  capabilities = ["list"]\n}\n']},
            clear={**_POLICY, "fragments": ['path "secret/data/example" {}\n']},
            delete={"name": _POLICY["name"], "removal": "destroy"},
            bad={
                **_bad(_POLICY, {"name": _POLICY["name"]}),
                "empty policy": ("present", {**_POLICY, "fragments": []}, "fragments"),
                "wrong type": ("present", {**_POLICY, "fragments": 7}, "fragments"),
            },
        ),
        "firewall_alias": _simple(_ALIAS, {"cidr": "10.9.1.0/24"}, {"comment": None}, {"cidr": 10}),
        "cluster_options": _simple(
            _CLUSTER_OPTIONS, {"keyboard": "de"}, {"migration": None}, {"max_workers": "x"}
        ),
        "pool": _simple(
            _POOL, {"comment": "Example pool, renamed"}, {"comment": ""}, {"comment": ["Example", "pool"]}
        ),
        "role": _simple(_ROLE, {"privs": ["VM.Audit", "Sys.Audit"]}, {"privs": []}, {"privs": 7}),
        "realm": _simple(
            _REALM, {"comment": "Example directory, moved"}, {"comment": None}, {"port": "ldaps"}
        ),
        "group": _simple(
            _GROUP, {"comment": "Example group, renamed"}, {"comment": ""}, {"comment": ["Example", "group"]}
        ),
        "user": _simple(_USER, {"email": "ops@example.org"}, {"firstname": None}, {"enable": "maybe"}),
        "token": _simple(_TOKEN, {"comment": "Example, changed"}, {"comment": None}, {"privsep": "maybe"}),
        "acl": _simple(
            _ACL,
            {"propagate": False},
            {"propagate": True},
            # "yes" is one of PVE's boolean spellings (parse_boolean), so not a wrong type.
            {"propagate": "maybe"},
            ("name", "path", "role", "user"),
        ),
        "ceph_pool": _with_bad(
            _simple(
                _CEPH_POOL, {"pg_num": 64}, {"target_size_ratio": None}, {"size": "three"}, ("name", "node")
            ),
            # pve-manager API2/Ceph/Pool.pm $ec_format: k minimum 2; a failure domain is a CRUSH type.
            {
                "erasure k below 2": (
                    "present",
                    {**_CEPH_EC, "erasure_coding": {"k": 1, "m": 1}},
                    "erasure_coding",
                ),
                "erasure failure-domain": (
                    "present",
                    {**_CEPH_EC, "erasure_coding": {"k": 2, "m": 1, "failure-domain": "shelf"}},
                    "erasure_coding",
                ),
            },
        ),
        "pbs_datastore": Examples(
            create=_PBS_DATASTORE,
            update={**_PBS_DATASTORE, "gc-schedule": "weekly"},
            clear={**_PBS_DATASTORE, "comment": None},
            delete={"name": _PBS_DATASTORE["name"], "removal": "destroy"},
            bad={
                **_bad(_PBS_DATASTORE, {"name": _PBS_DATASTORE["name"]}),
                "wrong type": ("present", {**_PBS_DATASTORE, "keep-last": "many"}, "keep-last"),
            },
        ),
        "storage": _simple(
            _STORAGE,
            {"content": "iso,backup,vztmpl"},
            {"prune-backups": ""},
            {"max-protected-backups": "many"},
        ),
        "ha_group": _simple(_HA_GROUP, {"restricted": 1}, {"comment": ""}, {"nodes": 7}),
        "ha_resource": _simple(_HA_RESOURCE, {"max_restart": 3}, {"comment": ""}, {"max_restart": "often"}),
        "ha_rule": _simple(_HA_RULE, {"strict": 1}, {"comment": ""}, {"type": "anti-affinity"}),
        "content": CONTENT,
        "network_interface": Examples(
            create=_IFACE,
            update={**_IFACE, "comments": "Example, changed"},
            clear={**_IFACE, "comments": None},
            delete={"name": _IFACE["name"], "node": "pve1", "removal": "destroy"},
            bad={
                **_bad(_IFACE, {"name": _IFACE["name"], "node": "pve1"}, "interface", "interface_absent"),
                "wrong type": ("interface", {**_IFACE, "autostart": "maybe"}, "autostart"),
            },
            applies=(("applied", {"name": "network of pve1", "node": "pve1"}),),
        ),
        **NODE_EXAMPLES,
        "sdn_controller": Examples(
            create=_CONTROLLER,
            update={**_CONTROLLER, "peers": "10.9.0.1,10.9.0.2"},
            clear={**_CONTROLLER, "loopback": None},
            delete={"name": _CONTROLLER["name"], "removal": "destroy"},
            bad={
                **_bad(_CONTROLLER, {"name": _CONTROLLER["name"]}, "controller", "controller_absent"),
                "wrong type": ("controller", {**_CONTROLLER, "asn": "big"}, "asn"),
            },
            applies=(("applied", {"name": "sdn"}),),
        ),
        "sdn_ipam": Examples(
            create=_IPAM,
            update={**_IPAM, "url": "https://ipam.example.org/api"},
            clear={**_IPAM, "fingerprint": None},
            delete={"name": _IPAM["name"], "removal": "destroy"},
            bad={
                **_bad(_IPAM, {"name": _IPAM["name"]}, "ipam", "ipam_absent"),
                "wrong type": ("ipam", {**_IPAM, "fingerprint": "AB:CD"}, "fingerprint"),
            },
        ),
        "sdn_dns": Examples(
            create=_DNS,
            update={**_DNS, "ttl": 600},
            clear={**_DNS, "ttl": None},
            delete={"name": _DNS["name"], "removal": "destroy"},
            bad={
                **_bad(_DNS, {"name": _DNS["name"]}, "dns", "dns_absent"),
                "wrong type": ("dns", {**_DNS, "ttl": "long"}, "ttl"),
            },
        ),
        "sdn_zone": Examples(
            create=_ZONE,
            update={**_ZONE, "mtu": 1400},
            clear={**_ZONE, "mtu": None},
            delete={"name": _ZONE["name"], "removal": "destroy"},
            bad={
                **_bad(_ZONE, {"name": _ZONE["name"]}, "zone", "zone_absent"),
                "wrong type": ("zone", {**_ZONE, "mtu": "big"}, "mtu"),
            },
            applies=(("applied", {"name": "sdn"}),),
        ),
        "sdn_vnet": Examples(
            create=_VNET,
            update={**_VNET, "alias": "Example, changed"},
            clear={**_VNET, "alias": None},
            delete={"name": _VNET["name"], "removal": "destroy"},
            bad={
                **_bad(_VNET, {"name": _VNET["name"]}, "vnet", "vnet_absent"),
                "wrong type": ("vnet", {**_VNET, "vlanaware": "maybe"}, "vlanaware"),
            },
            applies=(("applied", {"name": "sdn"}),),
            given=_SDN_GIVEN,
        ),
        "sdn_subnet": Examples(
            create=_SUBNET,
            update={**_SUBNET, "gateway": "10.9.8.254"},
            clear={**_SUBNET, "gateway": None},
            delete={"name": _SUBNET["name"], "vnet": _SUBNET["vnet"], "removal": "destroy"},
            bad={
                **_bad(
                    _SUBNET, {"name": _SUBNET["name"], "vnet": _SUBNET["vnet"]}, "subnet", "subnet_absent"
                ),
                "wrong type": ("subnet", {**_SUBNET, "snat": "maybe"}, "snat"),
            },
            applies=(("applied", {"name": "sdn"}),),
            given=(*_SDN_GIVEN, ("proxmox_sdn", "vnet", {"name": "exvnet", "zone": "exzone"})),
        ),
        "notification_endpoint": Examples(
            create=_NOTIFY_ENDPOINT,
            update={**_NOTIFY_ENDPOINT, "comment": "Example, changed"},
            clear={**_NOTIFY_ENDPOINT, "author": None},
            delete={"name": _NOTIFY_ENDPOINT["name"], "removal": "destroy"},
            bad={
                **_bad(_NOTIFY_ENDPOINT, {"name": _NOTIFY_ENDPOINT["name"]}, "endpoint", "endpoint_absent"),
                "wrong type": ("endpoint", {**_NOTIFY_ENDPOINT, "mailto": 7}, "mailto"),
            },
        ),
        "notification_matcher": Examples(
            create=_NOTIFY_MATCHER,
            update={**_NOTIFY_MATCHER, "mode": "any"},
            clear={**_NOTIFY_MATCHER, "comment": None},
            delete={"name": _NOTIFY_MATCHER["name"], "removal": "destroy"},
            bad={
                **_bad(_NOTIFY_MATCHER, {"name": _NOTIFY_MATCHER["name"]}, "matcher", "matcher_absent"),
                "wrong type": ("matcher", {**_NOTIFY_MATCHER, "invert-match": "maybe"}, "invert-match"),
            },
        ),
        "mapping_pci": _mapping("pci"),
        "mapping_usb": _mapping("usb"),
        "mapping_dir": _mapping("dir"),
        "acme_plugin": Examples(
            create=_ACME_PLUGIN,
            update={**_ACME_PLUGIN, "validation-delay": 120},
            clear={**_ACME_PLUGIN, "validation-delay": None},
            delete={"name": _ACME_PLUGIN["name"], "removal": "destroy"},
            bad={
                **_bad(_ACME_PLUGIN, {"name": _ACME_PLUGIN["name"]}, "plugin", "plugin_absent"),
                "wrong type": ("plugin", {**_ACME_PLUGIN, "validation-delay": "soon"}, "validation-delay"),
            },
        ),
        # An account has no value to clear back to a default (contact is required, directory and tos_url
        # are fixed once registered: update_account takes contact only): its clear is another contact set.
        "acme_account": Examples(
            create=_ACME_ACCOUNT,
            update={**_ACME_ACCOUNT, "contact": ["ops@example.org", "pki@example.org"]},
            clear={**_ACME_ACCOUNT, "contact": ["pki@example.org"]},
            delete={"name": _ACME_ACCOUNT["name"], "removal": "destroy"},
            bad={
                **_bad(_ACME_ACCOUNT, {"name": _ACME_ACCOUNT["name"]}, "account", "account_absent"),
                "wrong type": ("account", {**_ACME_ACCOUNT, "contact": 7}, "contact"),
            },
        ),
        "snippet": _simple(
            _SNIPPET,
            {"secrets_pillar": "conformance:snippet_update"},
            {"executable": False},
            {"executable": "yes"},
            identity=("name", "storage"),
        ),
        "lxc": _guest(_CT),
        "qemu": _guest(_VM),
        "backup_job": _simple(_BACKUP_JOB, {"schedule": "03:30"}, {"comment": ""}, {"mode": "fast"}),
        "metric_server": _simple(_METRIC_SERVER, {"mtu": 1400}, {"path": None}, {"port": "many"}),
        "certificate": CERTIFICATE,
        "replication": replace(
            _simple(_REPLICATION, {"schedule": "*/5"}, {"rate": None}, {"rate": "fast"}),
            given=(("proxmox_lxc", "present", _REPL_CT),),
        ),
        "firewall_group": Examples(
            create=_GROUP,
            update={**_GROUP, "comment": "Example group, renamed"},
            clear={**_GROUP, "comment": None},
            delete={"name": _GROUP["name"], "removal": "destroy"},
            bad={
                **_bad(_GROUP, {"name": _GROUP["name"]}, "group", "group_absent"),
                "wrong type": ("group", {**_GROUP, "comment": ["web", "tier"]}, "comment"),
            },
        ),
        "firewall_rules": Examples(
            create=_FW_RULES,
            update={**_FW_RULES, "rules": [{**_FW_RULES["rules"][0], "comment": "Example, changed"}]},
            clear={**_FW_RULES, "rules": [{**_FW_RULES["rules"][0], "comment": None}]},
            delete={"name": "cluster", "removal": "destroy"},
            bad={
                **_bad(_FW_RULES, {"name": "cluster"}, "rules", "rules_absent"),
                "wrong type": ("rules", {**_FW_RULES, "rules": "allow ssh"}, "rules"),
            },
        ),
        "firewall_ipset": Examples(
            create=_IPSET,
            update={**_IPSET, "cidrs": ["10.9.0.0/24", "10.9.2.0/24"]},
            clear={**_IPSET, "comment": None, "cidrs": []},
            delete={"name": _IPSET["name"], "removal": "destroy"},
            bad={
                **_bad(_IPSET, {"name": _IPSET["name"]}, "ipset", "ipset_absent"),
                "wrong type": ("ipset", {**_IPSET, "cidrs": "10.0.0.0/8"}, "cidrs"),
                # pve-firewall Firewall.pm parse_ip_or_cidr: a prefix of 0 is refused.
                "zero prefix": ("ipset", {**_IPSET, "cidrs": ["10.0.0.0/0"]}, "cidrs[0]"),
                "upper case": ("ipset", {**_IPSET, "name": "Examples"}, "name"),
                "not a switch": ("ipset", {**_IPSET, "allow_lockout": "yes"}, "allow_lockout"),
            },
        ),
        "firewall_options": Examples(
            create=_NODE_OPTIONS,
            update={**_NODE_OPTIONS, "nf_conntrack_max": 1048576},
            clear={**_NODE_OPTIONS, "nf_conntrack_max": None},
            delete={"name": _NODE_OPTIONS["name"], "removal": "destroy"},
            bad={
                **_bad(_NODE_OPTIONS, {"name": _NODE_OPTIONS["name"]}, "options", "options_absent"),
                "wrong type": ("options", {**_NODE_OPTIONS, "nf_conntrack_max": "lots"}, "nf_conntrack_max"),
                # A cluster option on a node scope (pve-firewall Firewall.pm host_option_properties).
                "another scope's key": ("options", {**_NODE_OPTIONS, "policy_in": "DROP"}, "policy_in"),
                "bad scope": ("options", {"name": "pool/x", "enable": 1}, "scope"),
            },
        ),
        "snapshot": Examples(
            create=_SNAPSHOT,
            update={**_SNAPSHOT, "description": "Example, before the upgrade"},
            clear={**_SNAPSHOT, "description": ""},
            delete={key: _SNAPSHOT[key] for key in ("name", "vmid", "node", "type")} | {"removal": "destroy"},
            bad={
                **_bad(_SNAPSHOT, {key: _SNAPSHOT[key] for key in ("name", "vmid", "node", "type")}),
                "wrong type": ("present", {**_SNAPSHOT, "vmid": "one-twenty"}, "vmid"),
            },
        ),
    }
)


def examples_of(kind: str) -> Examples | None:
    """The examples of kind ``kind`` (``registry.Kind.name``), None for one that has none."""
    return EXAMPLES.get(kind)
