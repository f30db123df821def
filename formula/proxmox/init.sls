#!py
"""proxmox formula: turns pillar into salt-proxmox states.

Rendered by Salt's ``py`` renderer: ``run()`` returns the highstate as data, so a pillar key or value
reaches Salt as a Python string and is never pasted into YAML text. A key holding a newline and YAML,
or a ``#``, is one state id (or one failing state naming the key), never a second state and never a
render error that drops every state.

Pillar sections, each a mapping of ``<key>: {keys}``:

  proxmox:lxc:<state id>           proxmox_lxc: the keys are the arguments of proxmox_lxc.present
                                   (vmid, node, target, adopt, removal and PVE config keys spelled as
                                   PVE spells them). ``ensure: absent`` declares it gone instead
                                   (removal: retain forgets it, removal: destroy deletes it).
  proxmox:qemu:<state id>          proxmox_qemu: as proxmox:lxc, with qm's config keys (memory, cores,
                                   scsi0, ide2, net0, ciuser, ipconfig0, ...) and clone: <template
                                   vmid>. The key is the state's name unless the entry says
                                   ``name:``; without ``name:`` a create names the VM after the key
                                   and a live VM keeps its name (name_from_id). ``ensure: absent``
                                   as for containers.
  openbao:policies:<name>          openbao_policy: fragments (inline HCL or salt:// files, in order),
                                   adopt, removal, rename_from.
  proxmox:firewall_aliases:<name>  proxmox_firewall_alias: cidr, comment, target, adopt, rename_from.
  proxmox:pools:<poolid>           proxmox_pool: comment, target, adopt (removal for absent).
  proxmox:roles:<roleid>           proxmox_role: privs, target, adopt (removal for absent).
  proxmox:realms:<realm>           proxmox_realm: type (ldap, ad, openid), the type's options,
                                   bind_password (ldap, ad) or client-key (openid) and their serials.
  proxmox:groups:<groupid>         proxmox_group: comment, target, adopt (removal for absent).
  proxmox:users:<userid>           proxmox_user: email, firstname, lastname, comment, enable, expire,
                                   groups, keys, password (pve realm) and password_serial.
  proxmox:tokens:<user!tokenid>    proxmox_token: privsep, expire, comment, store (the OpenBao KV path
                                   its secret goes to), secret_serial.
  proxmox:acls:<label>             proxmox_acl: path, role, user|group|token, propagate, target, adopt.
  proxmox:ceph_pools:<name>        proxmox_ceph_pool: node, size, min_size, pg_num, pg_num_min,
                                   pg_autoscale_mode, crush_rule, application, target_size,
                                   target_size_ratio, target, adopt (node and removal for absent).
  proxmox:pbs:datastores:<name>    pbs_datastore: path, backend, comment, gc-schedule, prune-schedule,
                                   keep-*, notification-mode, notify, notify-user, tuning,
                                   maintenance-mode, verify-new, target (a proxmox:pbs_targets name),
                                   adopt; ``ensure: absent`` with removal and destroy_data.
  proxmox:backup_jobs:<id>         proxmox_backup_job: schedule, storage, vmid | pool | all (with
                                   exclude), node, mode, compress, prune-backups, notes-template,
                                   protected, notification-mode, mailto, mailnotification, enabled,
                                   comment, target, adopt (removal for absent).
  proxmox:cluster_options:<label>  proxmox_cluster_options: datacenter.cfg keys (keyboard, migration,
                                   tag-style, next-id, ...; a property string as text or a mapping),
                                   http_proxy (a secret: it may hold a password), adopt; one entry per
                                   cluster.
  proxmox:metric_servers:<id>      proxmox_metric_server: type (graphite, influxdb, opentelemetry),
                                   server, port and the type's options; token (influxdb) and
                                   secret_serial.
  proxmox:certificates:<node>      proxmox_certificate: type (custom: certificates, key from pillar;
                                   acme: domains, account, renew_days), trusted, adopt (removal for
                                   absent).
  proxmox:replication:<vmid>-<n>   proxmox_replication: target_node, schedule, rate, disable, comment,
                                   source (PVE's: the guest's node), adopt (removal for absent).
  proxmox:lxc|qemu:<id>:snapshots  a list of {snapname, description, vmstate (VMs), adopt, ensure,
                                   removal}: one proxmox_snapshot state each, requiring its guest; a
                                   snapshot is never rolled back by a state.
  proxmox:networks:<node>          interfaces: {<iface>: proxmox_network.interface keys (type, cidr,
                                   bridge_ports, ...), or ensure: absent with removal}; target;
                                   apply: true adds proxmox_network.applied for the node.
  proxmox:nodes:<node>             dns, hosts, time, apt: proxmox_node.dns (search, dns1..dns3), .hosts
                                   (data, or entries: {<ip>: names}), .time (timezone),
                                   .apt_repository (repositories: [{handle} or {path, index, enabled}]);
                                   adopt; ensure: absent forgets (apt: removal: destroy disables what
                                   the last declaration enabled); target.
  proxmox:nodes:all                the same kinds for every node of its target (its target: key), the
                                   nodes read at render (proxmox.cluster_resources type=node, the read
                                   credential): each node gets the states a declaration by name would
                                   (proxmox-node-<node>-<kind>). A node also declared by name keeps its
                                   own kind whole: its kind replaces all's, keys are not merged (every
                                   declared key is compared and written, so what a node gets is written
                                   in one place, and it can leave a key all sets unmanaged); all's other
                                   kinds still apply to it, ensure: absent on its kind forgets that kind
                                   there, and without a target: of its own it is on all's. A read that
                                   fails or lists no node is one failing state, proxmox-node-all, never
                                   zero nodes; a target: under one of all's kinds, or a named node on
                                   another target than all's, is refused.
  proxmox:sdn                      controllers, ipams, dns, zones, vnets, subnets: {<key>:
                                   proxmox_sdn.controller (type, asn, peers, ...), .ipam (type, url,
                                   token), .dns (type, url, key), .zone (type, ...), .vnet (zone, tag,
                                   ...), .subnet (cidr, or the key as the CIDR; vnet, ...)}; target;
                                   apply: true adds proxmox_sdn.applied.
  proxmox:mappings                 pci, usb, dir: {<id>: proxmox_mapping.pci|usb|dir (map: a list of entries,
                                   each node=..,path=..,id=.. as text or a mapping; description; PCI's
                                   mdev and live-migration-capable)}; ensure: absent as above.
  proxmox:acme                     plugins: {<id>: proxmox_acme.plugin (type dns or standalone, api,
                                   validation-delay, nodes, disable; data, the DNS API's settings, a
                                   secret, and secret_serial)}, accounts: {<name>: proxmox_acme.account
                                   (contact, directory, tos_url, eab-kid; eab-hmac-key, a secret),
                                   read and written through the target's root_lane}; target.
  proxmox:notifications            endpoints: {<name>: proxmox_notification.endpoint (type sendmail, smtp,
                                   gotify or webhook, its keys; password, token, secret from pillar)},
                                   matchers: {<name>: proxmox_notification.matcher (match-field,
                                   match-severity, match-calendar, mode, invert-match, targets)}; target.
                                   A matcher requires the endpoints it targets; absent endpoints run last.
  proxmox:snippets:<storage>:<file>  proxmox_snippet: content (text, compared by its sha256, never
                                   shown, read from pillar through secrets_pillar: never a state
                                   argument) or source (salt://, with template and context),
                                   executable (mode 0755, for a hookscript), target, adopt;
                                   ensure: absent with removal. Written through the target's
                                   root_lane on a node; a guest whose cicustom or hookscript names one
                                   requires it.
  proxmox:firewall                 options: {<scope>: proxmox_firewall.options keys}, ipsets: {<name>:
                                   proxmox_firewall.ipset (scope, comment, cidrs, allow_lockout)},
                                   groups: {<name>: proxmox_firewall.group (comment)}, rules: {<scope>:
                                   proxmox_firewall.rules (rules, adopt, allow_lockout), the scope
                                   cluster, node/<node>, vm/<vmid>, ct/<vmid> or group/<name>}; target.
                                   ensure: absent as above.

The key of a simple object or policy is its name unless the entry says ``name:``. Targets
(proxmox:targets) and OpenBao (openbao) are read by the modules with config.get, so they may live in
the minion config or in pillar.

Order and requisites. States run in the order of this file (Salt's ``state_auto_order``): OpenBao
policies first, then aliases, pools, roles, realms, groups, users, tokens, ACL entries, Ceph pools, PBS
datastores, storage, HA groups, HA resources, HA rules, node networks, SDN, resource mappings, ACME
plugins, containers, VMs, backup
jobs, then the firewall, then the guests' snapshots; a pool declared absent runs after the guests (they
move out of it first, so one apply empties and deletes it). Only real dependencies are requisites, so a
family fails alone:

- an ACL entry requires the role it grants, the user, group or token it names and the pool of a
  ``/pool/<poolid>`` path, when this pillar declares them present (PVE refuses an ACL entry naming a
  role, user, group or token that does not exist: pve-access-control ``src/PVE/API2/ACL.pm``
  ``update_acl``);
- a user requires its realm and the groups its ``groups`` names, and a token its user, when this
  pillar declares them present (``User.pm`` ``create_user``: "no such group"; ``generate_token``:
  "no such user");
- a container or VM requires the pool its ``pool:`` key names, when this pillar declares it present;
- a container or VM requires the storage its volume keys name, and an ``rbd`` storage the Ceph pool its
  ``pool:`` names (``rbd`` when unset, as pve-storage ``RBDPlugin`` reads it), when this pillar declares
  them present;
- a node's apply requires its interfaces (a reload applies what they staged), and the node applies
  run one after the other, each requiring the one before: the first failure stops the rest
  (docs/design.md §7b);
- SDN: a vnet requires its zone, a subnet its vnet, and the SDN apply every SDN object and every node
  apply (it reloads every node);
- a backup job requires its storage, its pool and the containers and VMs its vmid lists, when this
  pillar declares them present;
- a snapshot requires its container or VM;
- a container or VM requires the interface (on its node) or the vnet its ``netN`` bridge names, when
  this pillar declares it present, and the apply that runs it;
- the firewall runs after the guests (LATE): a guest scope's options, IP sets and aliases
  (``vm/<vmid>``, ``ct/<vmid>``) require the container or VM of that vmid, and an IP set requires the aliases its
  entries name, when this pillar declares them present.
- a firewall rule list requires the aliases, IP sets and security groups its rules name and, for a
  guest's scope (vm/<vmid>, ct/<vmid>), the guest, when this pillar declares them present. A name is
  resolved as pve-firewall resolves it (src/PVE/Firewall.pm ipt_gen_src_or_dst_match for +<set>,
  resolve_alias for an alias): in a guest's rules and IP sets a bare name is the guest's own set or alias
  when this pillar declares one at that scope, else the cluster's; dc/ is always the cluster's, guest/
  the guest's own; elsewhere (cluster, node, group/<name>) the cluster's.

A policy is not a requisite of the PVE states: it runs before them, but a failed or refused policy
leaves OpenBao's policy as it was, so the credentials the PVE states mint are those of the run before;
when they cannot be minted, each PVE state fails saying so.

An entry is data. Salt acts on some argument names before the state runs (unless, onlyif, names,
retry, require, ...: SALT_KEYWORDS, read from the running Salt's salt/state.py, and SALT_ARGUMENTS), and
calls a function a ``__slot__:`` value names. An entry holding one, an ``ensure`` other than present or
absent, a ``removal`` other than retain or destroy, ``name:`` where the key is only a state id
(ID_ONLY), or ``adopt: true`` on an absent entry with ``removal: destroy`` (absent destroys only what
this minion owns) is one failing state (REFUSED) naming the key in place of its state: nothing of it runs, and it
is no requisite of another entry. Two or more entries declaring one firewall object (an alias, IP set or
security group by scope and name as PVE keys it, an alias's rename_from included; options or a rule list
by scope; on one target) are one failing state naming every one of them, in place of their states
(_firewall_twins). A key under proxmox: or openbao: that is neither a section nor
configuration read with config.get (CONFIG_KEYS) is a misspelt section, one failing state naming the
known ones. An absent entry passes only its identity, target and removal; the rest of what it declared
when present is kept and changes nothing.

Secrets (SECRETS: a container's password, a VM's cipassword, a user's password, a realm's bind
password and client key, a metric server's token, an ACME plugin's data; SNIPPET_SECRETS: a snippet's
content) are never state arguments: Salt keeps a highstate's arguments in highstate.cache.p in its
cachedir. The entry's state gets ``secrets_pillar``,
the pillar path of the entry as a list of keys, and reads the value from pillar itself.

Pillar shapes. A section or an entry of another shape (a YAML list, a bare string), or a key that is
not a string or holds a control character, becomes one failing state that names the pillar key and
the shape it needs: never a traceback, never an entry passed on half-read, never a run that silently
does nothing. An empty section (``lxc:`` with nothing under it) is no entry.
"""

import json
import re
import unicodedata
from collections.abc import Mapping

import salt.state

# A backup job's options (salt_proxmox/backup/job.py FIELDS; tests/unit/test_formula_backup.py pins them):
# an absent job passes none of them.
BACKUP_JOB_OPTIONS = frozenset(
    {
        "schedule", "enabled", "repeat-missed", "comment", "storage", "vmid", "pool", "all", "exclude",
        "node", "mode", "compress", "prune-backups", "notes-template", "protected", "notification-mode",
        "mailto", "mailnotification", "notification-policy", "notification-target", "maxfiles",
    }
)  # fmt: skip

# The keys of datacenter.cfg (salt_proxmox/datacenter/dcformats.py KEYS; tests/unit/test_formula.py pins
# them): an absent entry passes none of them.
CLUSTER_OPTIONS = frozenset(
    {
        "keyboard", "language", "console", "http_proxy", "email_from", "max_workers", "fencing", "mac_prefix",
        "description", "consent-text", "registered-tags", "crs", "migration", "replication", "ha", "next-id",
        "notify", "u2f", "webauthn", "tag-style", "user-tag-access", "bwlimit", "location",
    }
)  # fmt: skip

# The families, as salt_proxmox/registry.py FAMILIES lists them (this file cannot import it: synced
# from file_roots, only Salt's loader reaches the library). tests/unit/test_registry.py pins SECTIONS,
# NESTED and REFUSED to it.
#
# (pillar path, state id prefix, state module, what an entry declares, keys not passed to present,
#  keys not passed to absent). In this order the states run, node networks and SDN (NESTED) before the
# guests.
SECTIONS = [
    (
        "openbao:policies",
        "openbao-policy-",
        "openbao_policy",
        "policy (fragments, ...)",
        ["ensure", "name"],
        ["ensure", "name", "fragments", "adopt", "rename_from"],
    ),
    (
        "proxmox:firewall_aliases",
        "proxmox-firewall-alias-",
        "proxmox_firewall_alias",
        "firewall alias (cidr, comment, ...)",
        ["ensure", "name", "removal"],
        ["ensure", "name", "cidr", "comment", "adopt", "rename_from"],
    ),
    (
        "proxmox:cluster_options",
        "proxmox-cluster-options-",
        "proxmox_cluster_options",
        "cluster options (keyboard, migration, tag-style, ...)",
        ["ensure", "name", "removal"],
        ["ensure", "name", "adopt", *sorted(CLUSTER_OPTIONS)],
    ),
    (
        "proxmox:pools",
        "proxmox-pool-",
        "proxmox_pool",
        "pool (comment, ...)",
        ["ensure", "name", "removal"],
        ["ensure", "name", "comment", "adopt"],
    ),
    (
        "proxmox:roles",
        "proxmox-role-",
        "proxmox_role",
        "role (privs, ...)",
        ["ensure", "name", "removal"],
        ["ensure", "name", "privs", "adopt"],
    ),
    (
        "proxmox:realms",
        "proxmox-realm-",
        "proxmox_realm",
        "realm (type, server1, base_dn, ...)",
        ["ensure", "name", "removal"],
        [
            "ensure",
            "name",
            "type",
            "adopt",
            "bind_password",
            "client-key",
            "bind_password_serial",
            "client_key_serial",
        ],
    ),
    (
        "proxmox:groups",
        "proxmox-group-",
        "proxmox_group",
        "group (comment, ...)",
        ["ensure", "name", "removal"],
        ["ensure", "name", "comment", "adopt"],
    ),
    (
        "proxmox:users",
        "proxmox-user-",
        "proxmox_user",
        "user (email, groups, ...)",
        ["ensure", "name", "removal"],
        [
            "ensure",
            "name",
            "adopt",
            "email",
            "firstname",
            "lastname",
            "comment",
            "enable",
            "expire",
            "groups",
            "keys",
            "password",
            "password_serial",
        ],
    ),
    (
        "proxmox:tokens",
        "proxmox-token-",
        "proxmox_token",
        "API token (store, privsep, ...)",
        ["ensure", "name", "removal"],
        ["ensure", "name", "adopt", "privsep", "expire", "comment", "store", "secret_serial"],
    ),
    (
        "proxmox:acls",
        "proxmox-acl-",
        "proxmox_acl",
        "ACL entry (path, role, ...)",
        ["ensure", "name", "removal"],
        ["ensure", "name", "propagate", "adopt"],
    ),
    (
        "proxmox:ceph_pools",
        "proxmox-ceph-pool-",
        "proxmox_ceph_pool",
        "Ceph pool (node, size, min_size, ...)",
        ["ensure", "name", "removal"],
        [
            "ensure",
            "name",
            "adopt",
            "size",
            "min_size",
            "pg_num",
            "pg_num_min",
            "pg_autoscale_mode",
            "crush_rule",
            "application",
            "target_size",
            "target_size_ratio",
        ],
    ),
    (
        "proxmox:pbs:datastores",
        "pbs-datastore-",
        "pbs_datastore",
        "PBS datastore (path, comment, gc-schedule, ...)",
        ["ensure", "name", "removal", "destroy_data"],
        [
            "ensure",
            "name",
            "adopt",
            "path",
            "backend",
            "comment",
            "gc-schedule",
            "prune-schedule",
            "keep-last",
            "keep-hourly",
            "keep-daily",
            "keep-weekly",
            "keep-monthly",
            "keep-yearly",
            "notification-mode",
            "notify",
            "notify-user",
            "tuning",
            "maintenance-mode",
            "verify-new",
        ],
    ),
    (
        "proxmox:storage",
        "proxmox-storage-",
        "proxmox_storage",
        "storage (type, server, path, ...)",
        ["ensure", "name", "removal"],
        ["ensure", "name", "type", "adopt", "secret_serial"],
    ),
    (
        "proxmox:ha_groups",
        "proxmox-ha-group-",
        "proxmox_ha_group",
        "HA group (nodes, restricted, ...)",
        ["ensure", "name", "removal"],
        ["ensure", "name", "nodes", "restricted", "nofailback", "comment", "adopt"],
    ),
    (
        "proxmox:ha_resources",
        "proxmox-ha-resource-",
        "proxmox_ha_resource",
        "HA resource (ha_state, max_restart, ...)",
        ["ensure", "name", "removal"],
        ["ensure", "name", "ha_state", "max_restart", "max_relocate", "comment", "group", "adopt"],
    ),
    (
        "proxmox:ha_rules",
        "proxmox-ha-rule-",
        "proxmox_ha_rule",
        "HA rule (type, resources, nodes, ...)",
        ["ensure", "name", "removal"],
        ["ensure", "name", "type", "resources", "nodes", "strict", "affinity", "disable", "comment", "adopt"],
    ),
    (
        "proxmox:content",
        "proxmox-content-",
        "proxmox_content",
        "downloaded file (storage, content, filename, url, checksum, ...)",
        ["ensure", "name", "removal"],
        [
            "ensure", "name", "url", "checksum", "checksum-algorithm", "compression",
            "verify-certificates", "verify", "nodes", "replace", "adopt",
        ],  # fmt: skip
    ),
    (
        "proxmox:lxc",
        "proxmox-lxc-",
        "proxmox_lxc",
        "container (vmid, node, ostemplate, ...)",
        ["ensure"],
        None,
    ),
    (
        "proxmox:qemu",
        "proxmox-qemu-",
        "proxmox_qemu",
        "VM (vmid, node, clone or disks, ...)",
        ["ensure", "name"],
        None,
    ),
    (
        "proxmox:backup_jobs",
        "proxmox-backup-job-",
        "proxmox_backup_job",
        "backup job (schedule, storage, vmid, ...)",
        ["ensure", "name", "removal"],
        ["ensure", "name", "adopt", *sorted(BACKUP_JOB_OPTIONS)],
    ),
    (
        "proxmox:metric_servers",
        "proxmox-metric-server-",
        "proxmox_metric_server",
        "metric server (type, server, port, ...)",
        ["ensure", "name", "removal"],
        ["ensure", "name", "type", "adopt", "token", "secret_serial"],
    ),
    (
        "proxmox:certificates",
        "proxmox-certificate-",
        "proxmox_certificate",
        "node certificate (type custom or acme, certificates, domains, ...)",
        ["ensure", "name", "removal"],
        ["ensure", "name", "type", "adopt", "account", "certificates", "domains", "key", "renew_days", "trusted"],
    ),
    (
        "proxmox:replication",
        "proxmox-replication-",
        "proxmox_replication",
        "replication job (target_node, schedule, rate, ...)",
        ["ensure", "name", "removal"],
        ["ensure", "name", "adopt", "comment", "disable", "rate", "schedule", "source", "target_node"],
    ),
]

# The sections whose entries nest (a node's interfaces, SDN zones, vnets and subnets), rendered by
# _networks: (pillar path, state id prefix, state module).
NESTED = [
    ("proxmox:networks", "proxmox-network-", "proxmox_network"),
    ("proxmox:nodes", "proxmox-node-", "proxmox_node"),
    ("proxmox:sdn", "proxmox-sdn-", "proxmox_sdn"),
    ("proxmox:notifications", "proxmox-notification-", "proxmox_notification"),
    ("proxmox:mappings", "proxmox-mapping-", "proxmox_mapping"),
    # ACME (Datacenter -> ACME): plugins under proxmox:acme:plugins, rendered by _acme.
    ("proxmox:acme", "proxmox-acme-", "proxmox_acme"),
    ("proxmox:snippets", "proxmox-snippet-", "proxmox_snippet"),
]

# The sections rendered after the guests (their objects may live on a guest), by _firewall:
# (pillar path, state id prefix, state module).
LATE = [
    ("proxmox:firewall", "proxmox-firewall-", "proxmox_firewall"),
]
# What a container or VM entry nests: its snapshots (a list under ``snapshots:``), each one state of
# proxmox_snapshot requiring its guest, run after every section: (pillar path, state id prefix, state module).
GUEST_NESTED = [("proxmox:{lxc,qemu}:<id>:snapshots", "proxmox-snapshot-", "proxmox_snapshot")]
# The keys a snapshot entry takes (salt_proxmox/backup/snapshot.py), and those its absent state passes.
SNAPSHOT_KEYS = {"snapname", "description", "vmstate", "adopt", "ensure", "removal"}
SNAPSHOT_ABSENT_KEYS = ["removal"]

# The state that fails naming a pillar key (_states/proxmox_pillar.py). Salt's test.configurable_test_state
# passes under test=True in Salt 3006, so a refused entry would not show in a plan.
REFUSED = "proxmox_pillar.refused"

# The guest families: their absent states take only GUEST_ABSENT_KEYS, and they wait for their bridges.
GUESTS = ("proxmox:lxc", "proxmox:qemu")

# The sections whose absent entries run last, after the guests: PVE deletes only an empty pool
# (pve-manager PVE/API2/Pool.pm delete_pool: "pool '<id>' is not empty"), so the guests this pillar
# moves out of it (pool: another or '') or destroys go first, and one apply empties and deletes it.
LAST_ABSENT = ("proxmox:pools",)

# The keys an absent container or VM passes on: the rest of its declaration is what it was, not what to do.
GUEST_ABSENT_KEYS = ["vmid", "node", "target", "removal"]

SECTION_NAMES = (
    "targets, pbs_targets, lxc, qemu, firewall_aliases, cluster_options, pools, roles, realms, groups, users, "
    "tokens, acls, ceph_pools, pbs, storage, networks, sdn, notifications, mappings, acme, snippets, "
    "ha_groups, ha_resources, ha_rules, backup_jobs, metric_servers, certificates, replication, firewall"
)

# What may sit under proxmox: and openbao: besides the sections above: the configuration the modules
# read with config.get (_modules/proxmox.py, salt_proxmox/run/config.py OWNERSHIP_FILE and OWNERSHIP,
# salt_proxmox/openbao/client.py parse_config). Anything else is a misspelt section, refused by name.
CONFIG_KEYS = {
    "proxmox": frozenset({"targets", "pbs_targets", "ownership_file", "ownership"}),
    "openbao": frozenset({"url", "verify", "auth", "timeout"}),
}

# The values that steer what a state does: a misspelt one must never read as the default.
ENSURES = ("present", "absent")
# salt_proxmox.ownership.rows.REMOVALS, which the states check again (tests/unit/test_formula.py pins them).
REMOVALS = ("retain", "destroy")

# Salt's own state keywords, as the running Salt defines them (salt/state.py): Salt acts on these before
# (or instead of) calling the state: unless/onlyif/creates/check_cmd run commands, retry repeats the
# state, parallel/order/failhard change the run, require*/watch*/onchanges*/onfail*/prereq*/use*/
# listen* add requisites to other states, fun/state/__id__/__env__ rewrite the call. getattr: each set
# exists in Salt 3006, 3007 and 3008, and a Salt without one still has the others.
SALT_KEYWORDS = frozenset().union(
    *(
        getattr(salt.state, kind, ())
        for kind in (
            "STATE_REQUISITE_KEYWORDS",
            "STATE_REQUISITE_IN_KEYWORDS",
            "STATE_RUNTIME_KEYWORDS",
            "STATE_INTERNAL_KEYWORDS",
        )
    )
)
# Arguments Salt's state compiler and runner read that those sets leave out (salt/state.py):
# names (compile_high_data: one state per name), provider (load_modules: another module serves the
# state), aggregate and __agg__ (_mod_aggregate), env (call: a string is taken as the saltenv).
# Every other __-prefixed key is Salt's too (__pub_*, __sls__, ...).
SALT_ARGUMENTS = frozenset({"names", "provider", "aggregate", "__agg__", "env"})
# salt/state.py format_slots: a string value starting with this is a function call Salt runs and
# replaces with its answer before calling the state.
SLOT = "__slot__:"

# The sections whose key is only a state id: name: there is no name PVE knows (a container's is its
# hostname, an ACL entry has none, a subnet is named by its cidr), so the formula never passes it.
ID_ONLY = ("proxmox:lxc", "proxmox:acls", "proxmox:sdn:subnets")

# Secrets: never a state argument (Salt keeps a highstate's arguments in highstate.cache.p in the
# minion's cachedir, and in the lowstate every state is handed). The formula passes the entry's pillar
# path as secrets_pillar and the state reads them from pillar (salt_proxmox/lxc/schema.py and
# salt_proxmox/qemu/schema.py SECRETS; tests/unit/test_formula.py pins them).
SECRETS = {
    "proxmox:lxc": ("password",),
    "proxmox:qemu": ("cipassword",),
    "proxmox:storage": ("encryption-key", "keyring", "master-pubkey", "password"),
    "proxmox:users": ("password",),
    "proxmox:realms": ("bind_password", "client-key"),
    "proxmox:metric_servers": ("token",),
    "proxmox:cluster_options": ("http_proxy",),
    "proxmox:acme:plugins": ("data",),
    "proxmox:acme:accounts": ("eab-hmac-key",),
    "proxmox:certificates": ("key",),
}

# proxmox:firewall: its sections and configuration. A rule list (rules:) is keyed by its scope
# (cluster, node/<node>, vm/<vmid>, ct/<vmid>, group/<name>); its state requires the aliases, IP sets and
# security groups its rules name and, for a guest's scope, the guest, when this pillar declares them
# present (_firewall_need resolves each name).
FIREWALL_RULE_ABSENT_KEYS = ["target", "removal"]

# The keys a snippet entry (proxmox:snippets:<storage>:<file>) declares, and those its absent state takes
# (salt_proxmox/snippet/declare.py KEYS, ABSENT_KEYS). Its content may hold secrets (cloud-init user data):
# it is never a state argument, the state reads it through secrets_pillar (declare.py SECRETS).
SNIPPET_KEYS = ["content", "source", "template", "context", "executable", "adopt", "target"]
SNIPPET_ABSENT_KEYS = ["target", "removal"]
SNIPPET_SECRETS = ("content",)

# The keys an absent interface or SDN object passes on (with its identity: node, vnet).
NETWORK_ABSENT_KEYS = ["target", "removal"]
# The keys of a node under proxmox:networks, and of proxmox:sdn.
NODE_KEYS = {"interfaces", "apply", "target"}
SDN_KEYS = {"controllers", "ipams", "dns", "zones", "vnets", "subnets", "apply", "target"}
# An SDN IPAM's token and a DNS server's key (salt_proxmox/sdn/extras.py IPAM_SECRETS, DNS_SECRETS).
SDN_SECRETS = {"ipams": ("token",), "dns": ("key",)}
# The zone keys naming a controller, IPAM or DNS server: the zone's state requires theirs.
ZONE_NEEDS = {"controller": "controllers", "ipam": "ipams", "dns": "dns", "reversedns": "dns"}
# The kinds of proxmox:nodes:<node> (salt_proxmox/node): each pillar key and its state function.
NODE_KINDS = {"dns": "dns", "hosts": "hosts", "time": "time", "apt": "apt_repository"}
# proxmox:nodes:all: kinds for every node of its target, each node its own states, as if declared by name.
# The nodes are read at render with the target's read credential through the existing operator call
# (salt_proxmox/adhoc.py cluster_resources, type=node): PVE lists there the nodes GET /nodes lists (both
# pve-manager Cluster.pm resources and Nodes.pm index walk PVE::Cluster::get_nodelist), the list the
# states check their node against; a target's config names API members, not nodes. A failed read is one
# failing state, never zero nodes. A named node's kind replaces all's kind whole (the module docstring
# says why); so `all` is no node name here.
ALL_NODES = "all"
ALL_NODES_READ = "proxmox.cluster_resources"
# The kinds of proxmox:mappings (salt_proxmox/datacenter/mappings.py KINDS), each a section of
# <id>: {map, description, ...} entries; the state function is the kind's name.
MAPPING_KINDS = ("pci", "usb", "dir")
# The keys of proxmox:acme, and what an ACME plugin entry takes besides its options (type, api, ...).
ACME_KEYS = {"plugins", "accounts", "target"}
# Each kind of proxmox:acme: its pillar key, state id prefix, what an entry is, and its state functions.
ACME_KINDS = (
    ("plugins", "proxmox-acme-plugin-", "ACME plugin (type, api, ...)", "plugin"),
    ("accounts", "proxmox-acme-account-", "ACME account (contact, directory, ...)", "account"),
)
# The keys of proxmox:notifications, an endpoint's secrets (never state arguments: read with secrets_pillar,
# salt_proxmox/datacenter/notifications.py SECRETS) and what an absent endpoint passes on.
NOTIFICATION_KEYS = {"endpoints", "matchers", "target"}
NOTIFICATION_SECRETS = ("password", "secret", "token")
# The keys of proxmox:firewall, and what each kind's absent state passes on besides target and removal.
FIREWALL_KEYS = {"options", "ipsets", "groups", "rules", "target"}


def _shape(value):
    """What a pillar value is, in the words of the YAML that wrote it."""
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if value is None:
        return "empty"
    if isinstance(value, (list, tuple)):
        return "a list"
    return f"a {type(value).__name__}"


def _printable(key):
    """``key`` as one printable line: control characters escaped as JSON escapes them."""
    text = key if isinstance(key, str) else str(key)
    if text.isprintable():  # no control character (Cc is never printable): most keys, at C speed
        return text
    return "".join(json.dumps(char)[1:-1] if unicodedata.category(char) == "Cc" else char for char in text)


def _key_problem(key):
    """Why a pillar key cannot be a state id and object name, or None."""
    if not isinstance(key, str):
        return (
            f"is {_shape(key)}, not a string: YAML reads an unquoted 150, on or null as a number, a "
            f"boolean or nothing; quote the key ('{key}':)"
        )
    if not key:
        return "is empty: give the entry a name"
    if not key.isprintable() and any(unicodedata.category(char) == "Cc" for char in key):
        return (
            "holds a control character (a newline, a tab, ...): a state id and a name are one line "
            "of printable text"
        )
    return None


def _shown(value):
    """``value`` as the pillar wrote it, for a sentence: a string in quotes."""
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)


def _salt_keyword(key):
    """Whether Salt reads ``key`` among a state's arguments as its own (``SALT_KEYWORDS``,
    ``SALT_ARGUMENTS``, any ``__``-prefixed key)."""
    return isinstance(key, str) and (key in SALT_KEYWORDS or key in SALT_ARGUMENTS or key.startswith("__"))


def _keyword_sentence(keys):
    """The sentence refusing the Salt keywords ``keys`` (printable, sorted) in an entry."""
    verb = "is a Salt keyword" if len(keys) == 1 else "are Salt keywords"
    return (
        f"{', '.join(keys)} {verb} an entry cannot carry: Salt acts on it before the state runs (runs a "
        "command, repeats or skips the state, adds states or requisites), and an entry is data only. "
        "Remove it: the formula adds the requisites an entry needs"
    )


def _slots(value, where):
    """Where in ``value`` (``where`` and the keys or indexes below it) a string starts with ``SLOT``."""
    if isinstance(value, str):
        return [where] if value.startswith(SLOT) else []
    if isinstance(value, Mapping):
        return [found for key, item in value.items() for found in _slots(item, f"{where}:{_printable(key)}")]
    if isinstance(value, (list, tuple)):
        return [found for index, item in enumerate(value) for found in _slots(item, f"{where}:{index}")]
    return []


def _problems(path, declared):
    """Why the entry ``declared`` of section ``path`` cannot become a state: one sentence per rule it
    breaks, naming the keys; [] when it can.

    - a key Salt reads as its own (``_salt_keyword``), or a value Salt would run (``SLOT``);
    - ``name:`` in a section whose key is only a state id (``ID_ONLY``);
    - ``ensure`` other than present or absent, ``removal`` other than retain or destroy: a misspelt
      value never falls back to the default;
    - on an absent entry, ``adopt`` that is not true or false, or ``adopt: true`` with ``removal:
      destroy``: absent destroys only what this minion owns and takes nothing over."""
    problems = []
    keywords = sorted(_printable(key) for key in declared if _salt_keyword(key))
    if keywords:
        problems.append(_keyword_sentence(keywords))
    slots = [found for key in sorted(declared, key=str) for found in _slots(declared[key], _printable(key))]
    if slots:
        problems.append(
            f"the value of {', '.join(slots)} starts with {SLOT}, which Salt runs as a function call "
            "before the state (salt/state.py format_slots): write the value itself"
        )
    if path in ID_ONLY and "name" in declared:
        problems.append(
            "name: the key of this entry is its state id and there is no other name to give it "
            "(a container's name is its hostname, a subnet's its cidr)"
        )
    ensure = declared.get("ensure", "present")
    if ensure not in ENSURES:
        problems.append(f"ensure: expected present or absent, got {_shown(ensure)}")
    removal = declared.get("removal", "retain")
    if removal not in REMOVALS:
        problems.append(f"removal: expected retain or destroy, got {_shown(removal)}")
    adopt = declared.get("adopt", False)
    if ensure == "absent" and not isinstance(adopt, bool):
        problems.append(f"adopt: expected true or false, got {_shown(adopt)}")
    elif ensure == "absent" and adopt and removal == "destroy":
        problems.append(
            "adopt: true with ensure: absent and removal: destroy: absent deletes only what this minion "
            "created or adopted, never takes anything over. To delete one it does not own, declare it "
            "present with adopt: true and apply first, then absent; or delete it by hand"
        )
    return problems


def _failing(states, state_id, pillar_key, text):
    """Add one failing state saying ``text`` about ``pillar_key``, carried by ``REFUSED``: it fails under
    test=True as in an apply, on every supported Salt."""
    while state_id in states:
        state_id += "_"
    states[state_id] = {
        REFUSED: [{"name": f"pillar {pillar_key}"}, {"comment": f"{text} Nothing was written."}]
    }


def _lookup(pillar, path, states, prefix):
    """The value at ``path`` (``a:b``) in ``pillar``; a level that is not a mapping adds a failing state
    and reads as nothing."""
    value = pillar
    walked = []
    for part in path.split(":"):
        if value is None:
            return None
        if not isinstance(value, Mapping):
            where = ":".join(walked)
            _failing(
                states,
                f"{prefix}pillar",
                where,
                f"pillar {where} is {_shape(value)}, not a mapping: write {path} as keys under "
                f"{where}:, as pillar_examples/proxmox.sls does.",
            )
            return None
        walked.append(part)
        value = value.get(part)
    return value


def _entries(pillar, path, prefix, what, states):
    """The well-shaped entries of section ``path`` as ``[(key, declaration)]`` in key order; each
    entry or section of another shape becomes a failing state."""
    raw = _lookup(pillar, path, states, prefix)
    if raw is None:
        return []
    if not isinstance(raw, Mapping):
        _failing(
            states,
            f"{prefix}pillar",
            path,
            f"pillar {path} is {_shape(raw)}, not a mapping of state id to {what}: write each entry "
            "as `<state id>: {keys}`, as pillar_examples/proxmox.sls does.",
        )
        return []
    entries = []
    for key in sorted(raw, key=lambda k: (not isinstance(k, str), str(k))):
        value = raw[key]
        shown = f"{path}:{_printable(key)}"
        problem = _key_problem(key)
        if problem is not None:
            _failing(states, prefix + _printable(key), shown, f"pillar key {shown} {problem}.")
        elif not isinstance(value, Mapping):
            _failing(
                states,
                prefix + key,
                shown,
                f"pillar {shown} is {_shape(value)}, not a mapping: declare the {what} as keys under "
                "it, as pillar_examples/proxmox.sls does.",
            )
        elif problems := _problems(path, value):
            _failing(states, prefix + key, shown, f"pillar {shown}: {'; '.join(problems)}.")
        else:
            entries.append((key, value))
    return entries


def _arguments(name, declared, skip, only=None):
    """The state's argument list: ``name`` first, then the declared keys in key order."""
    args = [{"name": name}]
    for key in sorted(declared, key=str):
        if key in skip or (only is not None and key not in only):
            continue
        args.append({key: declared[key]})
    return args


def _present(declared):
    return declared.get("ensure", "present") != "absent"


def _name(path, key, declared):
    """The object's name: the key, or the entry's ``name:`` (not for containers and ACL entries, whose
    key is only a state id). A non-string ``name:`` is passed on for the state to refuse."""
    if path in ("proxmox:lxc", "proxmox:acls"):
        return key
    return declared.get("name", key)


def _text(value):
    """``value`` when it is a string (a name another entry may point at), else None."""
    return value if isinstance(value, str) else None


def _unknown_keys(states, state_id, path, raw, known):
    """A failing state for keys of ``raw`` (the mapping at ``path``) that are not ``known``; True when
    there were none."""
    unknown = sorted(_printable(key) for key in raw if key not in known)
    if unknown:
        keywords = sorted(_printable(key) for key in raw if key not in known and _salt_keyword(key))
        why = f" ({_keyword_sentence(keywords)})" if keywords else ""
        _failing(
            states,
            state_id,
            path,
            f"pillar {path} has unknown key(s) {', '.join(unknown)}: it takes {', '.join(sorted(known))}{why}.",
        )
    return not unknown


def _sections(pillar, states):
    """A failing state for each key under ``proxmox:`` or ``openbao:`` that is neither a section of
    ``SECTIONS`` (or networks, sdn) nor configuration the modules read (``CONFIG_KEYS``): a misspelt
    section (``lxcs:``, ``vms:``) would otherwise declare nothing without a word."""
    sections = {}
    # A section one level deeper (proxmox:pbs:datastores): the keys its parent may hold.
    deeper = {}
    for path, *_ in SECTIONS:
        top, _, section = path.partition(":")
        head, _, rest = section.partition(":")
        sections.setdefault(top, set()).add(head)
        if rest:
            deeper.setdefault(f"{top}:{head}", set()).add(rest)
    for parent, names in sorted(deeper.items()):
        top, _, head = parent.partition(":")
        raw = pillar.get(top)
        raw = raw.get(head) if isinstance(raw, Mapping) else None
        unknown = (
            sorted(_printable(key) for key in raw if key not in names) if isinstance(raw, Mapping) else []
        )
        if unknown:
            _failing(
                states,
                f"{top}-{head}-pillar",
                parent,
                f"pillar {parent} has unknown section(s) {', '.join(unknown)}: the sections are "
                f"{', '.join(sorted(names))}.",
            )
    for path, *_ in [*NESTED, *LATE]:
        top, _, section = path.partition(":")
        sections[top].add(section)
    for top, names in sorted(sections.items()):
        raw = pillar.get(top)
        if not isinstance(raw, Mapping):
            continue
        unknown = sorted(_printable(key) for key in raw if key not in names | CONFIG_KEYS[top])
        if unknown:
            _failing(
                states,
                f"{top}-pillar",
                top,
                f"pillar {top} has unknown section(s) {', '.join(unknown)}: the sections are "
                f"{', '.join(sorted(names))}, and {', '.join(sorted(CONFIG_KEYS[top]))} are the "
                "configuration read with config.get.",
            )


def _flag(states, state_id, path, value):
    """``value`` of an ``apply:`` key: True or False; anything else adds a failing state and is False."""
    if value is None or isinstance(value, bool):
        return bool(value)
    _failing(states, state_id, path, f"pillar {path} is {_shape(value)}, not true or false.")
    return False


def _object(states, state_id, module, fun, name, declared, skip_present, identity=()):
    """One interface or SDN object state: ``fun`` when declared present, ``fun_absent`` otherwise (with
    only its identity keys, target and removal). ``removal`` says what turning the entry ``ensure:
    absent`` will do, so the present state, which removes nothing, is not given it. Returns whether it
    is declared present."""
    if _present(declared):
        states[state_id] = {f"{module}.{fun}": _arguments(name, declared, [*skip_present, "removal"])}
        return True
    args = _arguments(name, declared, [], [*identity, *NETWORK_ABSENT_KEYS])
    states[state_id] = {f"{module}.{fun}_absent": args}
    return False


def _networks(pillar, states):
    """The node network and SDN states, in run order. Returns the requisites a container on a bridge
    needs: ``{(node, bridge): [...]}`` for interfaces, ``{(None, vnet): [...]}`` for vnets."""
    bridges = {}
    applies = []
    previous = None
    nodes = _entries(
        pillar, "proxmox:networks", "proxmox-network-", "node network (interfaces, apply)", states
    )
    for node, net in nodes:
        prefix = f"proxmox-network-{node}-"
        _unknown_keys(states, prefix + "pillar", f"proxmox:networks:{node}", net, NODE_KEYS)
        target = net.get("target")
        path = f"proxmox:networks:{node}:interfaces"
        staged = []
        for iface, declared in _entries(pillar, path, prefix, "interface (type, bridge_ports, ...)", states):
            declared = {**declared, "node": node}
            if target is not None and "target" not in declared:
                declared["target"] = target
            name = declared.get("name", iface)
            state_id = prefix + iface
            skip = ["ensure", "name"]
            present = _object(
                states, state_id, "proxmox_network", "interface", name, declared, skip, ["node"]
            )
            staged.append({"proxmox_network": state_id})
            if present and _text(name):
                bridges[(node, name)] = [{"proxmox_network": state_id}]
        if not _flag(states, prefix + "apply", f"proxmox:networks:{node}:apply", net.get("apply")):
            continue
        state_id = f"proxmox-network-apply-{node}"
        args = [{"name": f"network of {node}"}, {"node": node}]
        if target is not None:
            args.append({"target": target})
        needs = staged + ([previous] if previous else [])
        if needs:
            args.append({"require": needs})
        states[state_id] = {"proxmox_network.applied": args}
        previous = {"proxmox_network": state_id}
        applies.append(previous)
        for (where, _bridge), needed in bridges.items():
            if where == node:
                needed.append(previous)

    sdn = _lookup(pillar, "proxmox:sdn", states, "proxmox-sdn-")
    if not isinstance(sdn, Mapping):
        if sdn is not None:
            what = f"pillar proxmox:sdn is {_shape(sdn)}, not a mapping of zones, vnets, subnets and apply."
            _failing(states, "proxmox-sdn-pillar", "proxmox:sdn", what)
        return bridges
    _unknown_keys(states, "proxmox-sdn-pillar", "proxmox:sdn", sdn, SDN_KEYS)
    target = sdn.get("target")
    objects = []
    by_name = {"controllers": {}, "ipams": {}, "dns": {}, "zones": {}, "vnets": {}}
    for kind, fun, what, identity, needs_key, needs_of in (
        ("controllers", "controller", "SDN controller (type, asn, peers, ...)", (), None, None),
        ("ipams", "ipam", "SDN IPAM (type, url, ...)", (), None, None),
        ("dns", "dns", "SDN DNS server (type, url, ...)", (), None, None),
        ("zones", "zone", "SDN zone (type, ...)", (), None, None),
        ("vnets", "vnet", "SDN vnet (zone, tag, ...)", (), "zone", "zones"),
        ("subnets", "subnet", "SDN subnet (cidr, vnet, ...)", ("vnet",), "vnet", "vnets"),
    ):
        prefix = f"proxmox-sdn-{fun}-"
        for key, declared in _entries(pillar, f"proxmox:sdn:{kind}", prefix, what, states):
            if target is not None and "target" not in declared:
                declared = {**declared, "target": target}
            name = declared.get("cidr", key) if kind == "subnets" else declared.get("name", key)
            skip = ["ensure", "name", "cidr"] if kind == "subnets" else ["ensure", "name"]
            secrets = [each for each in SDN_SECRETS.get(kind, ()) if each in declared]
            present = _object(
                states, prefix + key, "proxmox_sdn", fun, name, declared, [*skip, *secrets], identity
            )
            if present and secrets:
                states[prefix + key][f"proxmox_sdn.{fun}"].append({"secrets_pillar": ["proxmox", "sdn", kind, key]})
            if kind not in SDN_SECRETS:  # IPAMs and DNS servers are written at once, not staged
                objects.append({"proxmox_sdn": prefix + key})
            if present and kind in by_name and _text(name):
                by_name[kind][name] = {"proxmox_sdn": prefix + key}
            need = by_name[needs_of].get(_text(declared.get(needs_key))) if needs_key else None
            needs = [need] if need is not None else []
            if kind == "zones":
                for zone_key, of in sorted(ZONE_NEEDS.items()):
                    found = by_name[of].get(_text(declared.get(zone_key)))
                    if found is not None and found not in needs:
                        needs.append(found)
            if present and needs:
                states[prefix + key][f"proxmox_sdn.{fun}"].append({"require": needs})
    apply = None
    if _flag(states, "proxmox-sdn-apply", "proxmox:sdn:apply", sdn.get("apply")):
        args = [{"name": "sdn"}] + ([{"target": target}] if target is not None else [])
        if objects + applies:
            args.append({"require": objects + applies})
        states["proxmox-sdn-apply"] = {"proxmox_sdn.applied": args}
        apply = {"proxmox_sdn": "proxmox-sdn-apply"}
    for vnet, state in by_name["vnets"].items():
        bridges[(None, vnet)] = [state] + ([apply] if apply else [])
    return bridges


def _notifications(pillar, states):
    """The notification endpoint and matcher states: endpoints declared present, then the matchers (each
    requiring the endpoints it targets that this pillar declares), then the endpoints declared absent,
    whose delete PVE refuses while a matcher targets them (proxmox-notify api/mod.rs ensure_safe_to_delete)."""
    section = _lookup(pillar, "proxmox:notifications", states, "proxmox-notification-")
    if not isinstance(section, Mapping):
        if section is not None:
            what = f"pillar proxmox:notifications is {_shape(section)}, not a mapping of endpoints and matchers."
            _failing(states, "proxmox-notification-pillar", "proxmox:notifications", what)
        return
    path = "proxmox:notifications"
    _unknown_keys(states, "proxmox-notification-pillar", path, section, NOTIFICATION_KEYS)
    target = section.get("target")
    endpoints, gone = {}, []
    prefix = "proxmox-notification-endpoint-"
    for key, declared in _entries(pillar, f"{path}:endpoints", prefix, "notification endpoint (type, ...)", states):
        if target is not None and "target" not in declared:
            declared = {**declared, "target": target}
        name = declared.get("name", key)
        if not _present(declared):
            args = _arguments(name, declared, [], ["type", *NETWORK_ABSENT_KEYS])
            gone.append((prefix + key, {"proxmox_notification.endpoint_absent": args}))
            continue
        secrets = [k for k in NOTIFICATION_SECRETS if k in declared]
        args = _arguments(name, declared, ["ensure", "name", "removal", *secrets])
        if secrets:
            args.append({"secrets_pillar": ["proxmox", "notifications", "endpoints", key]})
        states[prefix + key] = {"proxmox_notification.endpoint": args}
        if _text(name):
            endpoints[name] = {"proxmox_notification": prefix + key}
    prefix = "proxmox-notification-matcher-"
    for key, declared in _entries(pillar, f"{path}:matchers", prefix, "notification matcher (targets, ...)", states):
        if target is not None and "target" not in declared:
            declared = {**declared, "target": target}
        name = declared.get("name", key)
        present = _object(states, prefix + key, "proxmox_notification", "matcher", name, declared, ["ensure", "name"])
        targets = declared.get("targets")
        needs = [endpoints[t] for t in (targets if isinstance(targets, list) else [targets]) if _text(t) in endpoints]
        if present and needs:
            states[prefix + key]["proxmox_notification.matcher"].append({"require": needs})
    states.update(gone)


def _node_kinds(states, node, entry):
    """``{kind: declaration}`` of the node entry ``entry`` (``node`` a name or ``all``), the entry's
    ``target`` on each kind that names none; a kind of another shape or breaking a rule is one failing
    state and maps to None, so it still overrides ``all``'s kind for a named node (never renders twice)."""
    prefix = f"proxmox-node-{node}-"
    _unknown_keys(states, prefix + "pillar", f"proxmox:nodes:{node}", entry, {*NODE_KINDS, "target"})
    kinds = {}
    for kind in NODE_KINDS:
        declared = entry.get(kind)
        if declared is None:
            continue
        shown = f"proxmox:nodes:{node}:{kind}"
        kinds[kind] = None
        if not isinstance(declared, Mapping):
            what = f"pillar {shown} is {_shape(declared)}, not a mapping of its keys."
            _failing(states, prefix + kind, shown, what)
            continue
        problems = _problems(shown, declared)
        if node == ALL_NODES and declared.get("target", entry.get("target")) != entry.get("target"):
            # The node list is read from the entry's target: a kind on another cluster has other nodes.
            problems.append(
                "target: the nodes of proxmox:nodes:all are those of its own target; declare target: on "
                "proxmox:nodes:all, not under one kind"
            )
        if problems:
            _failing(states, prefix + kind, shown, f"pillar {shown}: {'; '.join(problems)}.")
            continue
        if entry.get("target") is not None and "target" not in declared:
            declared = {**declared, "target": entry["target"]}
        kinds[kind] = declared
    return kinds


def _cluster_nodes(states, target, salt):
    """The node names of ``target`` (``ALL_NODES_READ``, the read credential), or None after one failing
    state naming why: a read that fails, or answers no node, is never a cluster of no nodes."""
    where = f"proxmox:nodes:{ALL_NODES}"
    on = f"target {target}" if target is not None else "the default target"
    try:
        if salt is None:
            raise LookupError("the formula was rendered without Salt's functions (__salt__)")
        rows = salt[ALL_NODES_READ](type="node", target=target)
        if not isinstance(rows, list) or not all(isinstance(row, Mapping) for row in rows):
            raise ValueError(f"{ALL_NODES_READ} answered {_shape(rows)}, not a list of rows")
        names = sorted({row.get("node") for row in rows if row.get("type") == "node"}, key=str)
        if not names or not all(isinstance(name, str) and _key_problem(name) is None for name in names):
            raise ValueError(f"{ALL_NODES_READ} named no node, or a node that is no name: {_shown(names)}")
    except Exception as exc:  # noqa: BLE001 - any failure is this one state's reason, never zero nodes
        _failing(
            states,
            f"proxmox-node-{ALL_NODES}",
            where,
            f"pillar {where}: the nodes of {on} could not be read ({type(exc).__name__}: {exc}), so no "
            "node's state is rendered from it: a failed read is no cluster without nodes.",
        )
        return None
    return names


def _nodes(pillar, states, salt=None):
    """A node's own settings (proxmox:nodes:<node>:<kind>): ``proxmox_node.<kind>`` with the node as its
    name, or ``<kind>_absent`` (forget) with its target and removal; the node's ``target`` is each kind's.
    ``all`` declares kinds for every node of its target (read at render, ``_cluster_nodes``): each node
    gets the states a named declaration would (ids ``proxmox-node-<node>-<kind>``), a named node's kind
    replacing ``all``'s whole."""
    entries = dict(_entries(pillar, "proxmox:nodes", "proxmox-node-", "node (dns, hosts, time, apt)", states))
    shared = entries.pop(ALL_NODES, None)
    declared = {node: _node_kinds(states, node, entry) for node, entry in entries.items()}
    common = _node_kinds(states, ALL_NODES, shared) if shared is not None else {}
    common = {kind: value for kind, value in common.items() if value is not None}
    listed = _cluster_nodes(states, shared.get("target"), salt) if common else None
    for node in listed or []:
        target, shared_target = entries.get(node, {}).get("target"), shared.get("target")
        if target is not None and shared_target is not None and target != shared_target:
            where = f"proxmox:nodes:{node}"
            _failing(
                states,
                f"proxmox-node-{node}-pillar",
                where,
                f"pillar {where}: target {_shown(target)} is not proxmox:nodes:all's "
                f"({_shown(shared_target)}), which lists node {node}: one node name is one node (its "
                "state ids carry no target), so all's kinds are not rendered for it.",
            )
            continue
        own = declared.setdefault(node, {})
        if shared_target is not None and target is None:
            # A node all's target lists is that target's node, its named kinds too, unless a kind names one.
            own.update({k: {"target": shared_target, **v} for k, v in own.items() if v is not None})
        for kind, value in common.items():
            own.setdefault(kind, value)  # a kind the node declares by name replaces all's whole
    for node in sorted(declared):
        for kind, function in NODE_KINDS.items():
            if declared[node].get(kind) is not None:
                state_id = f"proxmox-node-{node}-{kind}"
                kind_of = declared[node][kind]
                _object(states, state_id, "proxmox_node", function, node, kind_of, ["ensure", "name"])


def _mappings(pillar, states):
    """The resource mapping states (proxmox:mappings:<kind>:<id>), run before the guests whose devices
    name them: ``proxmox_mapping.<kind>``, or ``<kind>_absent`` with its target and removal."""
    mappings = _lookup(pillar, "proxmox:mappings", states, "proxmox-mapping-")
    if not isinstance(mappings, Mapping):
        if mappings is not None:
            what = f"pillar proxmox:mappings is {_shape(mappings)}, not a mapping of pci, usb and dir."
            _failing(states, "proxmox-mapping-pillar", "proxmox:mappings", what)
        return
    _unknown_keys(states, "proxmox-mapping-pillar", "proxmox:mappings", mappings, set(MAPPING_KINDS))
    for kind in MAPPING_KINDS:
        prefix = f"proxmox-mapping-{kind}-"
        what = f"{kind} mapping (map, description, ...)"
        for key, declared in _entries(pillar, f"proxmox:mappings:{kind}", prefix, what, states):
            _object(states, prefix + key, "proxmox_mapping", kind, declared.get("name", key), declared, ["ensure", "name"])


def _acme(pillar, states):
    """The ACME plugin and account states (``proxmox_acme.plugin``, ``proxmox_acme.account``), their
    secrets (a plugin's ``data``, an account's ``eab-hmac-key``) passed as the entry's pillar path
    (SECRETS), never as an argument."""
    acme = _lookup(pillar, "proxmox:acme", states, "proxmox-acme-")
    if not isinstance(acme, Mapping):
        if acme is not None:
            what = f"pillar proxmox:acme is {_shape(acme)}, not a mapping of plugins."
            _failing(states, "proxmox-acme-pillar", "proxmox:acme", what)
        return
    _unknown_keys(states, "proxmox-acme-pillar", "proxmox:acme", acme, ACME_KEYS)
    target = acme.get("target")
    for kind, prefix, what, fun in ACME_KINDS:
        path = f"proxmox:acme:{kind}"
        for key, declared in _entries(pillar, path, prefix, what, states):
            if target is not None and "target" not in declared:
                declared = {**declared, "target": target}
            name = declared.get("name", key)
            if not _present(declared):
                args = _arguments(name, declared, [], NETWORK_ABSENT_KEYS)
                states[prefix + key] = {f"proxmox_acme.{fun}_absent": args}
                continue
            secrets = [k for k in SECRETS[path] if k in declared]
            args = _arguments(name, declared, ["ensure", "name", "removal", *secrets])
            if secrets:
                args.append({"secrets_pillar": [*path.split(":"), key]})
            states[prefix + key] = {f"proxmox_acme.{fun}": args}


def _snippets(pillar, states):
    """The snippet states (``proxmox:snippets:<storage>:<file>``), before the guests. Returns the
    requisites of a guest naming one: each snippet's volid (``<storage>:snippets/<file>``) mapped to the
    requisite ``proxmox_snippet: <state id>``."""
    found = {}
    for storage, files in _entries(
        pillar, "proxmox:snippets", "proxmox-snippet-", "storage's snippets", states
    ):
        path = f"proxmox:snippets:{storage}"
        for file, declared in _entries(
            pillar, path, f"proxmox-snippet-{storage}-", "snippet (content)", states
        ):
            state_id = f"proxmox-snippet-{storage}-{file}"
            name = declared.get("name", file)
            if _present(declared):
                secrets = [key for key in SNIPPET_SECRETS if key in declared]
                passed = [key for key in SNIPPET_KEYS if key not in secrets]
                args = _arguments(name, {**declared, "storage": storage}, [], [*passed, "storage"])
                extra = sorted(set(declared) - {*SNIPPET_KEYS, "ensure", "removal", "name"}, key=str)
                args += [{key: declared[key]} for key in extra]
                if secrets:
                    args.append({"secrets_pillar": ["proxmox", "snippets", storage, file]})
                states[state_id] = {"proxmox_snippet.present": args}
                found[f"{storage}:snippets/{file}"] = {"proxmox_snippet": state_id}
            else:
                args = _arguments(
                    name, {**declared, "storage": storage}, [], [*SNIPPET_ABSENT_KEYS, "storage"]
                )
                states[state_id] = {"proxmox_snippet.absent": args}
    return found


def _snippet_needs(declared, snippets):
    """The snippet states a guest requires: those its ``cicustom`` (``user=<volid>,...``) or
    ``hookscript`` names, when this pillar declares them present."""
    needs = []
    for key in ("cicustom", "hookscript"):
        value = declared.get(key)
        if not isinstance(value, str):
            continue
        parts = [value] if key == "hookscript" else [part.partition("=")[2] for part in value.split(",")]
        for volid in parts:
            need = snippets.get(volid.strip())
            if need is not None and need not in needs:
                needs.append(need)
    return needs


def _listed(paths):
    """``a``, ``a and b``, ``a, b and c``."""
    return paths[0] if len(paths) == 1 else ", ".join(paths[:-1]) + " and " + paths[-1]


def _firewall_twins(states, path, prefix, entries, objects_of):
    """``entries`` of section ``path`` without those declaring a firewall object another entry of it
    declares too: each such object becomes one failing state (id ``prefix`` + the first entry's key)
    naming every entry that declares it, and none of them is rendered (nor a requisite of another). Two
    states of one object would each undo the other's write, and salt_proxmox refuses both when they run
    (``salt_proxmox.run.lowstate`` ``twins_refusal``); here the pillar entries are named instead.
    ``objects_of(key, declared)``: ``[(identity, label)]`` of the objects one entry declares (its own, and
    for an alias the one its ``rename_from`` names, which a rename deletes), an entry whose name is not
    text declaring none (its state refuses it)."""
    owners = {}
    labels = {}
    for key, declared in entries:
        for identity, label in objects_of(key, declared):
            keys = owners.setdefault(identity, [])
            if key not in keys:
                keys.append(key)
            labels[identity] = label
    refused = set()
    for identity, keys in owners.items():
        if len(keys) < 2:
            continue
        shown = _listed([f"{path}:{_printable(key)}" for key in keys])
        _failing(
            states,
            prefix + _printable(keys[0]),
            shown,
            f"pillar {shown} declare one {labels[identity]}: two states of one object would each undo the "
            "other's write (and salt_proxmox refuses both when they run). Keep one entry for it.",
        )
        refused.update(keys)
    return [(key, declared) for key, declared in entries if key not in refused]


def _scoped(noun, name, scope, target):
    """One firewall object's ``(identity, label)`` for ``_firewall_twins``: ``noun`` and ``name`` (as PVE
    keys it) in ``scope`` (``cluster``, ``vm/<vmid>``, ``ct/<vmid>``, ...) on ``target`` (None: the only
    one configured)."""
    where = scope if target is None else f"{scope}, target {target}"
    return (noun, scope, name, target), f"{noun} {name} ({where})"


def _alias_objects(key, declared):
    """The aliases an entry of proxmox:firewall_aliases declares: its own and its ``rename_from``'s, by
    ``lc`` name (pve-firewall API2/Firewall/Aliases.pm keys aliases by ``lc($name)``) and scope."""
    scope = _text(declared.get("scope")) or "cluster"
    found = []
    for name in (_name("proxmox:firewall_aliases", key, declared), declared.get("rename_from")):
        if _text(name):
            found.append(_scoped("firewall alias", name.lower(), scope, declared.get("target")))
    return found


def _firewall_objects(kind, target):
    """``objects_of`` (``_firewall_twins``) for ``proxmox:firewall:<kind>``: an IP set by lower-cased name
    and scope, a security group by lower-cased name (src/PVE/Firewall.pm ``parse_fw_config`` reads
    ``[IPSET <name>]`` and ``[group <name>]`` back ``lc``), options and a rule list by their scope (the
    entry's name), on the entry's target or the section's."""

    def objects_of(key, declared):
        name = declared.get("name", key)
        where = declared.get("target", target)
        if not _text(name):
            return []
        if kind == "ipsets":
            scope = _text(declared.get("scope")) or "cluster"
            return [_scoped("IP set", name.lower(), scope, where)]
        if kind == "groups":
            return [_scoped("security group", name.lower(), "cluster", where)]
        noun = "firewall options" if kind == "options" else "rule list"
        label = noun + f" of {name}" + ("" if where is None else f" (target {where})")
        return [((noun, name, "", where), label)]

    return objects_of


def _firewall(pillar, states, guests, aliases):
    """The firewall's option, IP set and security group states (after the guests). ``guests``: ``{vmid:
    requisite}`` of the containers and VMs declared present; ``aliases``: ``{(scope, lower-case name):
    requisite}`` of the aliases declared present (scope ``cluster``, ``vm/<vmid>``, ``ct/<vmid>``)."""
    firewall = _lookup(pillar, "proxmox:firewall", states, "proxmox-firewall-")
    if not isinstance(firewall, Mapping):
        if firewall is not None:
            what = f"pillar proxmox:firewall is {_shape(firewall)}, not a mapping of options, ipsets, groups, rules."
            _failing(states, "proxmox-firewall-pillar", "proxmox:firewall", what)
        return
    _unknown_keys(states, "proxmox-firewall-pillar", "proxmox:firewall", firewall, FIREWALL_KEYS)
    target = firewall.get("target")
    objects = {("alias", scope, name): need for (scope, name), need in aliases.items()}
    for kind, fun, what, identity in (
        ("groups", "group", "security group (comment)", ()),
        ("ipsets", "ipset", "IP set (scope, comment, cidrs)", ("scope",)),
        ("options", "options", "firewall options of a scope", ()),
    ):
        prefix = f"proxmox-firewall-{fun}-"
        entries = _entries(pillar, f"proxmox:firewall:{kind}", prefix, what, states)
        entries = _firewall_twins(
            states, f"proxmox:firewall:{kind}", prefix, entries, _firewall_objects(kind, target)
        )
        for key, declared in entries:
            if target is not None and "target" not in declared:
                declared = {**declared, "target": target}
            name = declared.get("name", key)
            skip = ["ensure", "name"]
            if not _object(states, prefix + key, "proxmox_firewall", fun, name, declared, skip, identity):
                continue
            needs = []
            scope = _text(name if kind == "options" else declared.get("scope")) or ""
            kind_of, _, vmid = scope.partition("/")
            if kind_of in ("vm", "ct") and vmid.isdigit():
                needs.append(guests.get(int(vmid)))
            if kind == "ipsets" and isinstance(declared.get("cidrs"), list):
                for entry in declared["cidrs"]:
                    cidr = _text(entry.get("cidr") if isinstance(entry, Mapping) else entry) or ""
                    found = ALIAS_REFERENCE.fullmatch(cidr)
                    if found:
                        needs.append(_firewall_need(objects, "alias", scope, found.group(1), found.group(2)))
            needs = [need for i, need in enumerate(needs) if need is not None and need not in needs[:i]]
            if needs:
                states[prefix + key][f"proxmox_firewall.{fun}"].append({"require": needs})
            if kind != "options" and _text(name):
                where = "cluster" if kind == "groups" else scope or "cluster"
                objects[(fun, where, name)] = {"proxmox_firewall": prefix + key}
    _firewall_rules(pillar, states, objects, guests, target)


def _bridge_needs(declared, bridges):
    """The requisites of a container or VM whose ``netN`` bridges are interfaces or vnets of this
    pillar (``bridge=`` is the same option in both families' ``netN``)."""
    needs = []
    node = _text(declared.get("node"))
    for key in sorted(declared, key=str):
        value = declared[key]
        if not (isinstance(key, str) and key[:3] == "net" and key[3:].isdigit() and isinstance(value, str)):
            continue
        for part in value.split(","):
            option, _, bridge = part.partition("=")
            if option.strip() != "bridge":
                continue
            for need in bridges.get((node, bridge), []) + bridges.get((None, bridge), []):
                if need not in needs:
                    needs.append(need)
    return needs


# A guest's volume keys (qemu-server Drive.pm, pve-container Config.pm), whose storage it requires.
VOLUME_KEY = re.compile(r"^(?:ide|sata|scsi|virtio|mp|unused)\d+$|^(?:rootfs|efidisk0|tpmstate0)$")


def _storage_needs(declared, storages):
    """The storage states a guest requires: those its volume keys name (``<storage>:...``), when this
    pillar declares them present."""
    needs = []
    archive = declared.get("restore")
    if isinstance(archive, str) and storages.get(archive.split(":", 1)[0]) is not None:
        # A restored guest reads its archive from that storage (salt_proxmox.guest.restore).
        needs.append(storages[archive.split(":", 1)[0]])
    for key, value in sorted(declared.items()):
        if isinstance(key, str) and VOLUME_KEY.match(key) and isinstance(value, str) and ":" in value:
            volume = value.split(",", 1)[0]
            volume = volume.split("=", 1)[1] if "=" in volume else volume
            need = storages.get(volume.split(":", 1)[0])
            if need is not None and need not in needs:
                needs.append(need)
    return needs


def _content_needs(declared, entries):
    """The proxmox_content states a guest requires: those whose volid (``<storage>:<content>/<filename>``)
    its ``ostemplate`` or a drive (``ide2: local:iso/x.iso,media=cdrom``) names, when declared present."""
    volids = {}
    for key, entry in entries:
        if isinstance(entry, dict) and _present(entry):
            volid = f"{entry.get('storage')}:{entry.get('content')}/{entry.get('filename')}"
            volids[volid] = {"proxmox_content": f"proxmox-content-{key}"}
    needs = []
    for key, value in sorted(declared.items()):
        if isinstance(key, str) and (key == "ostemplate" or VOLUME_KEY.match(key)) and isinstance(value, str):
            need = volids.get(value.split(",", 1)[0].strip())
            if need is not None and need not in needs:
                needs.append(need)
    return needs


def _user_needs(name, declared, present):
    """The states a user requires: its realm and the groups its ``groups`` names (a list, or a
    comma/space separated text), when this pillar declares them present."""
    needs = []
    if _text(name):
        needs.append(present["proxmox:realms"].get(name.rpartition("@")[2]))
    groups = declared.get("groups")
    items = re.split(r"[\s,;]+", groups) if isinstance(groups, str) else groups
    for group in items if isinstance(items, list) else []:
        need = present["proxmox:groups"].get(_text(group))
        if need is not None and need not in needs:
            needs.append(need)
    return needs


def _guest_of_sid(sid, sections):
    """The guest state an HA resource id (``ct:<vmid>``, ``vm:<vmid>``) names, when this pillar declares
    that guest present, else None."""
    if sid is None or sid[:3] not in ("ct:", "vm:"):
        return None
    path, prefix, module = (
        ("proxmox:lxc", "proxmox-lxc-", "proxmox_lxc")
        if sid.startswith("ct:")
        else ("proxmox:qemu", "proxmox-qemu-", "proxmox_qemu")
    )
    for key, declared in sections.get(path, ()):
        if _present(declared) and str(declared.get("vmid")) == sid[3:]:
            return {module: prefix + key}
    return None


# A rule's source/dest naming an IP set (+<name>) or an alias, and an IP set entry naming an alias, with
# the scope prefix pve-firewall takes (src/PVE/Firewall.pm parse_address_list, ipt_gen_src_or_dst_match).
IPSET_REFERENCE = re.compile(r"\+(dc/|guest/|sdn/)?([A-Za-z][A-Za-z0-9_-]+)")
ALIAS_REFERENCE = re.compile(r"(dc/|guest/)?([A-Za-z][A-Za-z0-9_-]+)")


def _rule_names(rules):
    """``[(kind, prefix, name)]`` of the aliases, IP sets and security groups a rule list names (a rule's
    ``source``/``dest`` alias or ``+ipset``, with its ``dc/``/``guest/`` prefix or ``""``, a group rule's
    ``action``), as pve-firewall reads them."""
    names = []
    for rule in rules if isinstance(rules, list) else []:
        if not isinstance(rule, Mapping):
            continue
        for key in ("source", "dest"):
            value = _text(rule.get(key)) or ""
            for kind, pattern in (("ipset", IPSET_REFERENCE), ("alias", ALIAS_REFERENCE)):
                found = pattern.fullmatch(value)
                if found:
                    names.append((kind, found.group(1) or "", found.group(2)))
        if rule.get("type") == "group" and _text(rule.get("action")):
            names.append(("group", "", rule["action"]))
    return names


def _firewall_need(objects, kind, scope, prefix, name):
    """The state an alias, IP set or group reference names from a rule or IP set of ``scope``, or None.
    ``objects``: ``{(kind, scope, name): requisite}`` of those declared present (an alias's name lower
    case); ``prefix``: ``dc/``, ``guest/``, ``sdn/`` or ``""``. As pve-firewall resolves it
    (src/PVE/Firewall.pm ``ipt_gen_src_or_dst_match`` for ``+<set>``, ``resolve_alias`` for an alias):
    in a guest's scope the guest's own first unless ``dc/``, then the cluster's unless ``guest/``;
    elsewhere (cluster, node, group: ``generate_group_rules`` passes the cluster's configuration only)
    the cluster's. ``sdn/`` sets are SDN's, not this pillar's."""
    name = name.lower() if kind == "alias" else name
    if prefix == "sdn/":
        return None
    own = scope if scope.partition("/")[0] in ("vm", "ct") else None
    if own is not None and prefix != "dc/" and (kind, own, name) in objects:
        return objects[(kind, own, name)]
    return objects.get((kind, "cluster", name)) if prefix != "guest/" else None


def _firewall_rules(pillar, states, objects, guests, target):
    """The ``proxmox:firewall:rules`` states (after the firewall's objects). ``objects``: the alias, IP
    set and group states (``_firewall_need``); ``guests``: the container and VM states by vmid."""
    prefix = "proxmox-firewall-rules-"
    entries = _entries(pillar, "proxmox:firewall:rules", prefix, "rule list (rules, adopt, ...)", states)
    entries = _firewall_twins(
        states, "proxmox:firewall:rules", prefix, entries, _firewall_objects("rules", target)
    )
    for key, declared in entries:
        if target is not None and "target" not in declared:
            declared = {**declared, "target": target}
        name = declared.get("name", key)
        if not _present(declared):
            args = _arguments(name, declared, [], FIREWALL_RULE_ABSENT_KEYS)
            states[prefix + key] = {"proxmox_firewall.rules_absent": args}
            continue
        scope = _text(name) or ""
        needs = []
        for kind, where, named in _rule_names(declared.get("rules")):
            needs.append(_firewall_need(objects, kind, scope, where, named))
        kind, _, ident = scope.partition("/")
        if kind == "group":
            needs.append(objects.get(("group", "cluster", ident)))
        needs.append(guests.get(int(ident)) if kind in ("vm", "ct") and ident.isdigit() else None)
        needs = [need for index, need in enumerate(needs) if need is not None and need not in needs[:index]]
        args = _arguments(name, declared, ["ensure", "name", "removal"])
        if needs:
            args.append({"require": needs})
        states[prefix + key] = {"proxmox_firewall.rules": args}


def _guest_needs(vmids, sections):
    """The guest states a backup job requires: those of the vmids it lists (a list, or a comma
    separated text), when this pillar declares them present."""
    items = vmids if isinstance(vmids, (list, tuple)) else str(vmids or "").replace(";", ",").split(",")
    wanted = {str(item).strip() for item in items}
    needs = []
    for path in GUESTS:
        module = "proxmox_lxc" if path == "proxmox:lxc" else "proxmox_qemu"
        prefix = "proxmox-lxc-" if path == "proxmox:lxc" else "proxmox-qemu-"
        for key, declared in sections[path]:
            if _present(declared) and str(declared.get("vmid")) in wanted:
                needs.append({module: prefix + key})
    return needs


def estate(pillar, salt=None):
    """The highstate for ``pillar``: state id -> ``{"<module>.<function>": [one {argument: value} per
    argument]}``, in run order. ``salt`` (Salt's functions) reads the nodes of ``proxmox:nodes:all``."""
    states = {}
    proxmox = pillar.get("proxmox")
    if proxmox is not None and not isinstance(proxmox, Mapping):
        _failing(
            states,
            "proxmox-pillar",
            "proxmox",
            f"pillar proxmox is {_shape(proxmox)}, not a mapping of sections ({SECTION_NAMES}): "
            "write each section as a key under proxmox:, as pillar_examples/proxmox.sls does.",
        )
        pillar = {key: value for key, value in pillar.items() if key != "proxmox"}

    _sections(pillar, states)
    sections = {}
    for path, prefix, module, what, _skip_present, _skip_absent in SECTIONS:
        sections[path] = _entries(pillar, path, prefix, what, states)
        if path == "proxmox:firewall_aliases":
            sections[path] = _firewall_twins(states, path, prefix, sections[path], _alias_objects)

    # Objects declared present, by the name PVE knows them by, for the requisites below.
    present = {}
    for path, prefix, module, *_ in SECTIONS:
        present[path] = {
            _text(_name(path, key, declared)): {module: prefix + key}
            for key, declared in sections[path]
            if _present(declared)
        }
        present[path].pop(None, None)

    bridges = {}
    snippets = {}
    # Pools declared absent run after the guests, which move their members out first (LAST_ABSENT).
    last = {}
    snapshots = []
    for path, prefix, module, _what, skip_present, skip_absent in SECTIONS:
        if path == GUESTS[0]:
            # Node networks and SDN run before the guests that use them.
            bridges = _networks(pillar, states)
            _nodes(pillar, states, salt)
            _notifications(pillar, states)
            _mappings(pillar, states)
            _acme(pillar, states)
            snippets = _snippets(pillar, states)
        for key, declared in sections[path]:
            name = _name(path, key, declared)
            if not _present(declared):
                if path in GUESTS:
                    args = _arguments(name, declared, [], GUEST_ABSENT_KEYS)
                else:
                    args = _arguments(name, declared, skip_absent)
                (last if path in LAST_ABSENT else states)[prefix + key] = {f"{module}.absent": args}
                continue
            if path in GUESTS and "snapshots" in declared:
                snapshots.append((path, prefix + key, key, declared))
                declared = {k: v for k, v in declared.items() if k != "snapshots"}
            secrets = [key for key in SECRETS.get(path, ()) if key in declared]
            args = _arguments(name, declared, [*skip_present, *secrets])
            if path == "proxmox:qemu" and "name" not in declared and "name_from_id" not in declared:
                # The key is the state id, not a declared PVE name: a live VM keeps its own name.
                args.append({"name_from_id": True})
            if secrets:
                args.append({"secrets_pillar": [*path.split(":"), key]})
            needs = []
            if path in GUESTS:
                needs.append(present["proxmox:pools"].get(_text(declared.get("pool"))))
                needs.extend(_bridge_needs(declared, bridges))
                needs.extend(_storage_needs(declared, present["proxmox:storage"]))
                needs.extend(_snippet_needs(declared, snippets))
                needs.extend(_content_needs(declared, sections["proxmox:content"]))
            elif path == "proxmox:storage" and declared.get("type") == "rbd":
                # An rbd storage names its Ceph pool (pve-storage RBDPlugin: pool, default rbd).
                needs.append(present["proxmox:ceph_pools"].get(_text(declared.get("pool", "rbd"))))
            elif path == "proxmox:storage" and declared.get("type") == "pbs":
                # A pbs storage backs up to its datastore (pve-storage PBSPlugin: datastore).
                needs.append(present["proxmox:pbs:datastores"].get(_text(declared.get("datastore"))))
            elif path == "proxmox:ha_resources":
                # An HA resource needs its guest (Resources/PVEVM.pm, PVECT.pm exists) and, on PVE 8, its group.
                needs.append(_guest_of_sid(_text(name), sections))
                needs.append(present["proxmox:ha_groups"].get(_text(declared.get("group"))))
            elif path == "proxmox:ha_rules":
                # A rule names HA resources that must exist (API2/HA/Rules.pm: `cannot use unmanaged resource(s)`).
                resources = declared.get("resources")
                for sid in resources if isinstance(resources, list) else [resources]:
                    needs.append(present["proxmox:ha_resources"].get(_text(sid)))
            elif path == "proxmox:users":
                needs.extend(_user_needs(name, declared, present))
            elif path == "proxmox:tokens":
                user = _text(name).rpartition("!")[0] if _text(name) else None
                needs.append(present["proxmox:users"].get(user))
            elif path == "proxmox:backup_jobs":
                # A job on its storage, its pool and the guests it names (pve-manager PVE/VZDump.pm
                # get_included_guests), when this pillar declares them present.
                needs.append(present["proxmox:storage"].get(_text(declared.get("storage"))))
                needs.append(present["proxmox:pools"].get(_text(declared.get("pool"))))
                needs.extend(_guest_needs(declared.get("vmid"), sections))
            elif path == "proxmox:acls":
                needs.append(present["proxmox:roles"].get(_text(declared.get("role"))))
                for kind in ("user", "group", "token"):
                    needs.append(present[f"proxmox:{kind}s"].get(_text(declared.get(kind))))
                acl_path = _text(declared.get("path")) or ""
                if acl_path.startswith("/pool/"):
                    needs.append(present["proxmox:pools"].get(acl_path.removeprefix("/pool/")))
            needs = [need for need in needs if need is not None]
            if needs:
                args.append({"require": needs})
            states[prefix + key] = {f"{module}.present": args}
    guests = {}
    for path in GUESTS:
        prefix, module = next((p, m) for s, p, m, *_ in SECTIONS if s == path)
        for key, declared in sections[path]:
            vmid = declared.get("vmid")
            if _present(declared) and isinstance(vmid, int) and not isinstance(vmid, bool):
                guests[vmid] = {module: prefix + key}
    # A guest's own alias (scope: vm/<vmid>, ct/<vmid>) lives in its guest's firewall: it waits for it.
    for key, declared in sections["proxmox:firewall_aliases"]:
        kind_of, _, vmid = (_text(declared.get("scope")) or "").partition("/")
        need = guests.get(int(vmid)) if kind_of in ("vm", "ct") and vmid.isdigit() else None
        state = states.get("proxmox-firewall-alias-" + key, {}).get("proxmox_firewall_alias.present")
        if need is not None and state is not None:
            state.append({"require": [need]})
    # Aliases by scope and name: a guest's own and the cluster's of one name are two objects.
    aliases = {}
    for key, declared in sections["proxmox:firewall_aliases"]:
        name = _text(_name("proxmox:firewall_aliases", key, declared))
        if _present(declared) and name is not None:
            scope = _text(declared.get("scope")) or "cluster"
            aliases[(scope, name.lower())] = {"proxmox_firewall_alias": "proxmox-firewall-alias-" + key}
    _firewall(pillar, states, guests, aliases)
    # A guest's snapshots come last: each requires its guest (GUEST_NESTED).
    for path, guest_id, key, declared in snapshots:
        _snapshots(states, path, guest_id, key, declared)
    states.update(last)
    return states


def _snapshots(states, path, guest_id, key, declared):
    """One proxmox_snapshot state per entry of a guest's ``snapshots:`` list, requiring the guest: its
    ``snapname`` is the state's name; the guest's vmid, node, family (type) and target go with it. An
    entry of another shape, without a snapname or with another key is one failing state naming it."""
    where = f"{path}:{_printable(key)}:snapshots"
    raw = declared["snapshots"]
    if raw is None:
        return
    if not isinstance(raw, (list, tuple)):
        what = f"pillar {where} is {_shape(raw)}, not a list of snapshots (each a mapping: snapname, description)."
        _failing(states, f"proxmox-snapshot-{key}-pillar", where, what)
        return
    kind = path.partition(":")[2]
    for index, entry in enumerate(raw):
        shown = f"{where}:{index}"
        if (
            not isinstance(entry, Mapping)
            or not isinstance(entry.get("snapname"), str)
            or not entry["snapname"]
        ):
            what = f"pillar {shown} is {_shape(entry)}; a snapshot is a mapping with a snapname (text)."
            _failing(states, f"proxmox-snapshot-{key}-{index}", shown, what)
            continue
        state_id = f"proxmox-snapshot-{key}-{entry['snapname']}"
        unknown = sorted(_printable(k) for k in entry if k not in SNAPSHOT_KEYS)
        problems = _problems(where, entry)
        if unknown:
            problems.append(
                f"unknown key(s) {', '.join(unknown)}: a snapshot takes {', '.join(sorted(SNAPSHOT_KEYS))}"
            )
        if problems:
            _failing(states, state_id, shown, f"pillar {shown}: {'; '.join(problems)}.")
            continue
        guest = {"vmid": declared.get("vmid"), "node": declared.get("node"), "type": kind}
        if declared.get("target") is not None:
            guest["target"] = declared["target"]
        if _present(entry):
            own = {k: v for k, v in entry.items() if k not in ("snapname", "ensure", "removal")}
            args = _arguments(entry["snapname"], {**guest, **own}, [])
            args.append({"require": [{f"proxmox_{kind}": guest_id}]})
            states[state_id] = {"proxmox_snapshot.present": args}
        else:
            absent = {k: v for k, v in entry.items() if k in SNAPSHOT_ABSENT_KEYS}
            states[state_id] = {
                "proxmox_snapshot.absent": _arguments(entry["snapname"], {**guest, **absent}, [])
            }


# The guest states whose create may overlap others' (salt_proxmox/run/overlap.py): Salt forks each state
# marked parallel (salt/state.py call_parallel), and the product bounds them with task slots.
OVERLAP_STATES = ("proxmox_lxc.present", "proxmox_qemu.present")


def overlap(states, opts, salt):
    """Mark ``parallel: True`` the guest creates of an apply on a target whose ``task_concurrency`` is
    above 1 (salt_proxmox/run/overlap.py bounds them per target and node), in place.

    Only a guest with no ``owned`` row (``proxmox.owned``): a create, a clone, a restore, or the finish of
    an interrupted one. Owned guests, whose apply is a read (or a short write), stay in the run's own
    process: a fork per guest would cost a no-drift run of 1000 guests seconds. The first guest state of
    each kind stays too: it reads the run's guests, the guest index and the cluster's facts ahead in the
    run's process, before Salt forks the others, which inherit them. Nothing is marked in a plan
    (``test``), which runs in one process and says what the apply would overlap, nor under salt-ssh,
    whose state run forks on the target from a lowstate the master compiled (and rows this minion keeps
    in ``proxmox:ownership_file``): it stays sequential."""
    if opts.get("test") or "_ssh_version" in opts or "__master_opts__" in opts:
        return
    targets = salt["config.get"]("proxmox:targets", {})
    if not isinstance(targets, Mapping):
        return
    bounds = {}
    for name, target in targets.items():
        value = target.get("task_concurrency", 1) if isinstance(target, Mapping) else 1
        if isinstance(value, int) and not isinstance(value, bool) and value > 1:
            bounds[str(name)] = value
    if not bounds:
        return
    only = next(iter(targets)) if len(targets) == 1 else None
    try:
        rows = salt["proxmox.owned"](sls="")
    except Exception:  # noqa: BLE001 - rows that cannot be read: run sequentially, each state says why
        return
    owned = {
        (entry["target"], entry["family"], entry["id"]) for entry in rows if entry.get("phase") == "owned"
    }
    first = set()
    for state in states.values():
        ((function, arguments),) = state.items()
        if function not in OVERLAP_STATES:
            continue
        module = function.partition(".")[0]
        if module not in first:
            first.add(module)
            continue
        declared = {}
        for argument in arguments:
            declared.update(argument)
        target = declared.get("target", only)
        kind = "lxc" if module == "proxmox_lxc" else "qemu"
        if target in bounds and (target, kind, str(declared.get("vmid"))) not in owned:
            arguments.append({"parallel": True})


def run():
    """The py renderer's entry point."""
    # Salt hands the pillar in a loader context object that reads as a mapping but is no dict.
    states = estate(dict(__pillar__), globals().get("__salt__"))  # noqa: F821 - set by Salt's py renderer
    if "__opts__" in globals():
        overlap(states, __opts__, __salt__)  # noqa: F821 - set by Salt's py renderer
    return states
