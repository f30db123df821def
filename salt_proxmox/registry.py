"""Every family this project manages, in one list (``FAMILIES``), and what each tells the rest.

A family is one Salt state module (``_states/<state>.py``) and its own package under
``salt_proxmox/``; this list is the only place it is registered (docs/design.md §2 "Adding a family").
What reads it, or is pinned to it by a test (``tests/unit/test_registry.py``):

- the execution modules: ``proxmox.state`` (the one skin every state function calls) looks up the
  execution-module function a state function runs (``Family.calls``) and the kind of object it
  declares (``Family.kinds``: the ObjectSpec the simple lifecycle runs, the ownership row family the
  one-object-one-state check keys by);
- the ad-hoc guest calls (``proxmox.guest_*``): ``guests()``, the guest families by PVE's ``type``;
- the formula (``formula/proxmox/init.sls``): its ``SECTIONS`` and ``NESTED`` tables hold a
  family's pillar section, state id prefix and module in this order (the order the states run). Salt's
  ``py`` renderer cannot import this package when the formula is synced from file_roots, so the test
  pins the tables to ``FAMILIES``;
- the outputter (``_output/proxmox_plan.py``): it names a state's family from its module
  (``proxmox_lxc`` → ``lxc``) without importing this package (it runs wherever output is printed);
  the test pins that name to ``Family.name``;
- the docs: the table in docs/design.md §2 is ``markdown()`` (the test compares them).

Importing this module imports no family: a family's code is named by ``"module:attribute"`` and
imported when asked for (``Kind.load``, ``guests``), so the state skin and the docs read the list
without loading every judge. Imports no Salt.

``Family.examples`` are the declarations a conformance suite runs every family through (create,
update, clear, delete, bad input), as a state takes them: ``name`` plus the state's arguments.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

#: The state module holding the formula's failing state (``refused``): a pillar entry the formula
#: cannot turn into a state becomes one state of this module naming the pillar key. No family.
PILLAR_STATE = "proxmox_pillar"


def _imported(path: str) -> object:
    """The attribute ``path`` (``package.module:attribute``) names, imported."""
    module, _, attribute = path.partition(":")
    return getattr(importlib.import_module(module), attribute)


@dataclass(frozen=True)
class Kind:
    """One kind of object a family declares.

    - ``name``: the ownership row family (``<target>/<name>/<identity>``, ``salt_proxmox.ownership``),
      e.g. ``sdn_vnet``;
    - ``present``/``absent``: the state functions declaring it present and absent (``vnet``,
      ``vnet_absent``);
    - ``spec``: ``"module:attribute"`` of its ``ObjectSpec`` (``salt_proxmox.simple.spec``) when the
      simple lifecycle runs it, else None (guests and policies have lifecycles of their own);
    - ``examples``: the conformance suite's declarations of this kind (``Examples``); the family's first
      kind takes the family's own ``examples`` when it has none here.
    """

    name: str
    present: str = "present"
    absent: str = "absent"
    spec: str | None = None
    examples: Examples | None = None
    #: ``"module:function"`` keying a chunk of a kind without ``spec`` (``(chunk, default_target) ->
    #: row keys``): a firewall rule list by its scope.
    keys: str | None = None
    #: ``"module:function"`` exporting a kind without ``spec`` (``(ctx, bao, keep) -> Found``,
    #: ``salt_proxmox.export``).
    export: str | None = None

    def row_keys(self, chunk: object, default_target: str | None) -> frozenset[str]:
        """The ownership row keys ``chunk`` declares, by ``keys``. Raises LookupError without it."""
        if self.keys is None:
            raise LookupError(f"{self.name}: no keys function")
        return _imported(self.keys)(chunk, default_target)

    def load(self) -> object:
        """Its ``ObjectSpec``, imported. Raises LookupError for a kind without one."""
        if self.spec is None:
            raise LookupError(f"{self.name}: no ObjectSpec (its family runs a lifecycle of its own)")
        return _imported(self.spec)


@dataclass(frozen=True)
class Call:
    """The execution-module function a state function runs, and what the skin hands it besides the
    state's own arguments (Salt's ``test``, the run's ``__low__``/``__lowstate__``/``__instance_id__``):

    - ``function``: ``proxmox.pool_present``;
    - ``state_id``: it takes the declaring state's id (``__low__['__id__']``) as ``state_id``;
    - ``saltenv``: it takes the state's saltenv (``__env__``) as ``saltenv`` (``salt://`` fragments);
    - ``fixed``: keyword arguments it always gets (``proxmox.sdn_absent``'s ``kind``).
    """

    function: str
    state_id: bool = True
    saltenv: bool = False
    fixed: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class Examples:
    """Declarations of one family as its state takes them (``{"name": ..., <argument>: ...}``), for a
    suite that runs every family through the same promises: ``create`` a new object, ``update`` it
    (a changed value), ``clear`` a value it holds (``None``/``""``: back to PVE's default), ``delete``
    it (its absent state's arguments, ``removal: destroy``), and ``bad``: inputs refused by name
    before anything is written (``{what: (state function, declaration, the key named)}``)."""

    create: Mapping[str, object]
    update: Mapping[str, object]
    clear: Mapping[str, object]
    delete: Mapping[str, object]
    bad: Mapping[str, tuple[str, Mapping[str, object], str]]
    #: States of the family declared after each of the above in the same run, as ``(state function,
    #: declaration)``: the node's or SDN apply that makes a staged change live, whose writes the
    #: declaration's plan must name.
    applies: tuple[tuple[str, Mapping[str, object]], ...] = ()
    #: States applied once before the examples run, as ``(state module, state function, declaration)``:
    #: the objects an example needs to exist (an SDN vnet's zone), which the suite itself does not judge.
    given: tuple[tuple[str, str, Mapping[str, object]], ...] = ()


@dataclass(frozen=True)
class Family:
    """One family: one state module, one pillar section of the formula.

    - ``name``: how the plan names it (the outputter's summary lines, ``_output/proxmox_plan.py``
      ``family``);
    - ``state``: its Salt state module (``_states/<state>.py``); ``module``: the execution module
      serving it;
    - ``calls``: ``{state function: Call}``;
    - ``kinds``: the kinds of object it declares (one, or several for ``proxmox_sdn``);
    - ``section``: the formula's pillar path (``proxmox:pools``); ``prefix``: its state ids' prefix;
    - ``guest``: ``"module:attribute"`` of its guest ``Family`` (``salt_proxmox.guest.family``), for
      a guest family;
    - ``examples``: see ``Examples``.
    """

    name: str
    state: str
    module: str
    calls: Mapping[str, Call]
    kinds: tuple[Kind, ...]
    section: str
    prefix: str
    examples: Examples
    guest: str | None = None

    def kind_of(self, fun: str) -> Kind | None:
        """The kind of object state function ``fun`` declares, or None (an apply declares none)."""
        return next((kind for kind in self.kinds if fun in (kind.present, kind.absent)), None)

    def examples_of(self, kind: Kind) -> Examples | None:
        """The conformance suite's declarations of ``kind``: its own, else the family's for its first
        kind; None for a kind that has none (the suite then fails for it)."""
        if kind.examples is not None:
            return kind.examples
        return self.examples if kind == self.kinds[0] else None


def _calls(**calls: Call) -> Mapping[str, Call]:
    return MappingProxyType(calls)


def _present_absent(module: str, family: str, state_id: bool = True) -> Mapping[str, Call]:
    return _calls(
        present=Call(f"{module}.{family}_present", state_id=state_id),
        absent=Call(f"{module}.{family}_absent", state_id=state_id),
    )


#: A Salt keyword (``unless`` runs a command before the state), a misspelt ``ensure`` and ``removal``,
#: and a key the family does not have: what every family refuses by name with nothing written.
def _bad(
    present: Mapping[str, object], absent: Mapping[str, object], fun: str = "present", gone: str = "absent"
) -> dict:
    return {
        "salt keyword": (fun, {**present, "unless": "true"}, "unless"),
        "unknown key": (fun, {**present, "colour": "red"}, "colour"),
        "misspelt ensure": (fun, {**present, "ensure": "absnet"}, "ensure"),
        "misspelt removal": (gone, {**absent, "removal": "destory"}, "removal"),
    }


_POLICY = {
    "name": "salt-proxmox-example",
    "fragments": ['path "secret/data/example" {\n  capabilities = ["read"]\n}\n'],
}
_ALIAS = {"name": "example_net", "cidr": "10.9.0.0/24", "comment": "Example"}
_POOL = {"name": "example", "comment": "Example pool"}
_ROLE = {"name": "SaltExample", "privs": ["VM.Audit"]}
#: Access control: an LDAP realm, a group, a user of the pve realm, and an API token of a user the
#: cluster has, its secret kept in the OpenBao dev server's KV version 2 mount.
_REALM = {
    "name": "example-ldap",
    "type": "ldap",
    "server1": "ldap.example.org",
    "base_dn": "dc=example,dc=org",
    "user_attr": "uid",
    "comment": "Example directory",
}
_GROUP = {"name": "example-group", "comment": "Example group"}
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
#: An IP set of the cluster (pve-firewall API2/Firewall/IPSet.pm), one entry a ``nomatch``.
_IPSET = {
    "name": "examples",
    "comment": "Example set",
    "cidrs": ["10.9.0.0/24", {"cidr": "10.9.1.7", "nomatch": True}],
}
#: A node's firewall options (pve-firewall Firewall.pm ``$host_option_properties``).
_NODE_OPTIONS = {"name": "node/pve1", "nf_conntrack_max": 524288, "tcpflags": True}
#: A security group (pve-firewall API2/Firewall/Groups.pm): its name lower case, as PVE reads it back.
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
_IFACE = {"name": "vmbr9", "node": "pve1", "type": "bridge", "autostart": True, "comments": "Example"}
_ZONE = {"name": "example", "type": "simple", "mtu": 1450}
#: A vnet of a simple zone (no tag: pve-network ``SimplePlugin.pm`` ``vnet_update_hook`` refuses one).
_VNET = {"name": "exvnet", "zone": "exzone", "alias": "Example"}
#: A subnet of that vnet; its gateway inside it (pve-network ``SubnetPlugin.pm`` ``on_update_hook``).
_SUBNET = {"name": "10.9.8.0/24", "vnet": "exvnet", "gateway": "10.9.8.1", "snat": False}
#: The zone (and for a subnet the vnet) the vnet and subnet examples are made in.
_SDN_GIVEN = (("proxmox_sdn", "zone", {"name": "exzone", "type": "simple"}),)
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


def _simple(
    kind: str,
    package: str,
    section: str,
    create: Mapping[str, object],
    update: Mapping[str, object],
    clear: Mapping[str, object],
    wrong: Mapping[str, object],
    identity: tuple[str, ...] = ("name",),
) -> Family:
    """A simple object family: ``proxmox_<kind>.present``/``absent`` run by the simple lifecycle with the
    ``SPEC`` of ``salt_proxmox.<package>``, rows ``<kind>``, the section ``proxmox:<section>``. Its
    examples: ``create``, and ``update``, ``clear`` and a ``wrong`` type as the keys they change;
    ``identity``: the keys its absent state takes."""
    absent = {key: create[key] for key in identity}
    return Family(
        name=kind,
        state=f"proxmox_{kind}",
        module="proxmox",
        calls=_present_absent("proxmox", kind),
        kinds=(Kind(kind, spec=f"salt_proxmox.{package}:SPEC"),),
        section=f"proxmox:{section}",
        prefix=f"proxmox-{kind.replace('_', '-')}-",
        examples=Examples(
            create=create,
            update={**create, **update},
            clear={**create, **clear},
            delete={**absent, "removal": "destroy"},
            bad={**_bad(create, absent), "wrong type": ("present", {**create, **wrong}, next(iter(wrong)))},
        ),
    )


def _guest(kind: str, guest: str, create: Mapping[str, object]) -> Family:
    """A guest family (``lxc``, ``qemu``): ``proxmox_<kind>.present``/``absent``, rows ``<kind>``, the
    section ``proxmox:<kind>``; ``guest``: its ``salt_proxmox.guest.family.Family``; ``create``: its
    example create."""
    return Family(
        name=kind,
        state=f"proxmox_{kind}",
        module="proxmox",
        calls=_present_absent("proxmox", kind, state_id=False),
        kinds=(Kind(kind),),
        section=f"proxmox:{kind}",
        prefix=f"proxmox-{kind}-",
        guest=guest,
        examples=Examples(
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
        ),
    )


#: Every family, in the order the formula runs their states: OpenBao policies first (the credentials
#: the PVE states mint), then the simple objects (realms, groups, users and tokens before the ACL
#: entries naming them), Ceph pools, PBS datastores and storage (a ``pbs`` storage backs up to a
#: datastore), node networks and SDN (the bridges guests use), then containers and VMs; HA states
#: require the guests and resources they name; the firewall runs last.
FAMILIES: tuple[Family, ...] = (
    Family(
        name="policy",
        state="openbao_policy",
        module="openbao",
        calls=_calls(
            present=Call("openbao.policy_present", saltenv=True), absent=Call("openbao.policy_absent")
        ),
        kinds=(Kind("policy"),),
        section="openbao:policies",
        prefix="openbao-policy-",
        examples=Examples(
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
    ),
    _simple(
        "firewall_alias",
        "firewall.alias",
        "firewall_aliases",
        _ALIAS,
        {"cidr": "10.9.1.0/24"},
        {"comment": None},
        {"cidr": 10},
    ),
    _simple(
        "pool",
        "simple.pool",
        "pools",
        _POOL,
        {"comment": "Example pool, renamed"},
        {"comment": ""},
        {"comment": ["Example", "pool"]},
    ),
    _simple(
        "role",
        "simple.role",
        "roles",
        _ROLE,
        {"privs": ["VM.Audit", "Sys.Audit"]},
        {"privs": []},
        {"privs": 7},
    ),
    _simple(
        "realm",
        "access.realm",
        "realms",
        _REALM,
        {"comment": "Example directory, moved"},
        {"comment": None},
        {"port": "ldaps"},
    ),
    _simple(
        "group",
        "access.group",
        "groups",
        _GROUP,
        {"comment": "Example group, renamed"},
        {"comment": ""},
        {"comment": ["Example", "group"]},
    ),
    _simple(
        "user",
        "access.user",
        "users",
        _USER,
        {"email": "ops@example.org"},
        {"firstname": None},
        {"enable": "maybe"},
    ),
    _simple(
        "token",
        "access.token",
        "tokens",
        _TOKEN,
        {"comment": "Example, changed"},
        {"comment": None},
        {"privsep": "maybe"},
    ),
    _simple(
        "acl",
        "simple.acl",
        "acls",
        _ACL,
        {"propagate": False},
        {"propagate": True},
        # "yes" is one of PVE's boolean spellings (parse_boolean), so not a wrong type.
        {"propagate": "maybe"},
        ("name", "path", "role", "user"),
    ),
    _simple(
        "ceph_pool",
        "ceph.pool",
        "ceph_pools",
        _CEPH_POOL,
        {"pg_num": 64},
        {"target_size_ratio": None},
        {"size": "three"},
        ("name", "node"),
    ),
    Family(
        name="pbs_datastore",
        state="pbs_datastore",
        module="proxmox",
        calls=_present_absent("proxmox", "pbs_datastore"),
        kinds=(Kind("pbs_datastore", spec="salt_proxmox.pbs.datastore:SPEC"),),
        section="proxmox:pbs:datastores",
        prefix="pbs-datastore-",
        examples=Examples(
            create=_PBS_DATASTORE,
            update={**_PBS_DATASTORE, "gc-schedule": "weekly"},
            clear={**_PBS_DATASTORE, "comment": None},
            delete={"name": _PBS_DATASTORE["name"], "removal": "destroy"},
            bad={
                **_bad(_PBS_DATASTORE, {"name": _PBS_DATASTORE["name"]}),
                "wrong type": ("present", {**_PBS_DATASTORE, "keep-last": "many"}, "keep-last"),
            },
        ),
    ),
    _simple(
        "storage",
        "storage.objects",
        "storage",
        _STORAGE,
        {"content": "iso,backup,vztmpl"},
        {"prune-backups": ""},
        {"max-protected-backups": "many"},
    ),
    _simple("ha_group", "ha.group", "ha_groups", _HA_GROUP, {"restricted": 1}, {"comment": ""}, {"nodes": 7}),
    _simple(
        "ha_resource",
        "ha.resource",
        "ha_resources",
        _HA_RESOURCE,
        {"max_restart": 3},
        {"comment": ""},
        {"max_restart": "often"},
    ),
    _simple(
        "ha_rule", "ha.rule", "ha_rules", _HA_RULE, {"strict": 1}, {"comment": ""}, {"type": "anti-affinity"}
    ),
    Family(
        name="network",
        state="proxmox_network",
        module="proxmox",
        calls=_calls(
            interface=Call("proxmox.network_interface_present"),
            interface_absent=Call("proxmox.network_interface_absent"),
            applied=Call("proxmox.network_applied"),
        ),
        kinds=(
            Kind(
                "network_interface",
                present="interface",
                absent="interface_absent",
                spec="salt_proxmox.network.interface:SPEC",
            ),
        ),
        section="proxmox:networks",
        prefix="proxmox-network-",
        examples=Examples(
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
    ),
    Family(
        name="sdn",
        state="proxmox_sdn",
        module="proxmox",
        calls=_calls(
            zone=Call("proxmox.sdn_zone_present"),
            vnet=Call("proxmox.sdn_vnet_present"),
            subnet=Call("proxmox.sdn_subnet_present"),
            zone_absent=Call("proxmox.sdn_absent", fixed=MappingProxyType({"kind": "zone"})),
            vnet_absent=Call("proxmox.sdn_absent", fixed=MappingProxyType({"kind": "vnet"})),
            subnet_absent=Call("proxmox.sdn_absent", fixed=MappingProxyType({"kind": "subnet"})),
            applied=Call("proxmox.sdn_applied"),
        ),
        kinds=(
            Kind("sdn_zone", present="zone", absent="zone_absent", spec="salt_proxmox.sdn.objects:ZONE"),
            Kind(
                "sdn_vnet",
                present="vnet",
                absent="vnet_absent",
                spec="salt_proxmox.sdn.objects:VNET",
                examples=Examples(
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
            ),
            Kind(
                "sdn_subnet",
                present="subnet",
                absent="subnet_absent",
                spec="salt_proxmox.sdn.objects:SUBNET",
                examples=Examples(
                    create=_SUBNET,
                    update={**_SUBNET, "gateway": "10.9.8.254"},
                    clear={**_SUBNET, "gateway": None},
                    delete={"name": _SUBNET["name"], "vnet": _SUBNET["vnet"], "removal": "destroy"},
                    bad={
                        **_bad(
                            _SUBNET,
                            {"name": _SUBNET["name"], "vnet": _SUBNET["vnet"]},
                            "subnet",
                            "subnet_absent",
                        ),
                        "wrong type": ("subnet", {**_SUBNET, "snat": "maybe"}, "snat"),
                    },
                    applies=(("applied", {"name": "sdn"}),),
                    given=(*_SDN_GIVEN, ("proxmox_sdn", "vnet", {"name": "exvnet", "zone": "exzone"})),
                ),
            ),
        ),
        section="proxmox:sdn",
        prefix="proxmox-sdn-",
        examples=Examples(
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
    ),
    _guest("lxc", "salt_proxmox.lxc.family:LXC", _CT),
    _guest("qemu", "salt_proxmox.qemu.family:QEMU", _VM),
    # Backups: after the guests and storage a job names, then the guests' snapshots (docs/design.md §7c).
    _simple(
        "backup_job",
        "backup.job",
        "backup_jobs",
        _BACKUP_JOB,
        {"schedule": "03:30"},
        {"comment": ""},
        {"mode": "fast"},
    ),
    # The firewall runs after the guests: a guest's options, IP sets and aliases need their guest.
    Family(
        name="firewall",
        state="proxmox_firewall",
        module="proxmox",
        calls=_calls(
            rules=Call("proxmox.firewall_rules_present"),
            rules_absent=Call("proxmox.firewall_rules_absent"),
            group=Call("proxmox.firewall_group_present"),
            group_absent=Call("proxmox.firewall_absent", fixed=MappingProxyType({"kind": "group"})),
            ipset=Call("proxmox.firewall_ipset_present"),
            ipset_absent=Call("proxmox.firewall_absent", fixed=MappingProxyType({"kind": "ipset"})),
            options=Call("proxmox.firewall_options_present"),
            options_absent=Call("proxmox.firewall_absent", fixed=MappingProxyType({"kind": "options"})),
        ),
        kinds=(
            Kind(
                "firewall_group",
                present="group",
                absent="group_absent",
                spec="salt_proxmox.firewall.group:SPEC",
            ),
            Kind(
                "firewall_rules",
                present="rules",
                absent="rules_absent",
                keys="salt_proxmox.firewall.rules:declared_keys",
                export="salt_proxmox.firewall.rules:export",
                examples=Examples(
                    create=_FW_RULES,
                    update={**_FW_RULES, "rules": [{**_FW_RULES["rules"][0], "comment": "Example, changed"}]},
                    clear={**_FW_RULES, "rules": [{**_FW_RULES["rules"][0], "comment": None}]},
                    delete={"name": "cluster", "removal": "destroy"},
                    bad={
                        **_bad(_FW_RULES, {"name": "cluster"}, "rules", "rules_absent"),
                        "wrong type": ("rules", {**_FW_RULES, "rules": "allow ssh"}, "rules"),
                    },
                ),
            ),
            Kind(
                "firewall_ipset",
                present="ipset",
                absent="ipset_absent",
                spec="salt_proxmox.firewall.ipset:SPEC",
                examples=Examples(
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
            ),
            Kind(
                "firewall_options",
                present="options",
                absent="options_absent",
                spec="salt_proxmox.firewall.options:SPEC",
                examples=Examples(
                    create=_NODE_OPTIONS,
                    update={**_NODE_OPTIONS, "nf_conntrack_max": 1048576},
                    clear={**_NODE_OPTIONS, "nf_conntrack_max": None},
                    delete={"name": _NODE_OPTIONS["name"], "removal": "destroy"},
                    bad={
                        **_bad(_NODE_OPTIONS, {"name": _NODE_OPTIONS["name"]}, "options", "options_absent"),
                        "wrong type": (
                            "options",
                            {**_NODE_OPTIONS, "nf_conntrack_max": "lots"},
                            "nf_conntrack_max",
                        ),
                        # A cluster option on a node scope (pve-firewall Firewall.pm host_option_properties).
                        "another scope's key": (
                            "options",
                            {**_NODE_OPTIONS, "policy_in": "DROP"},
                            "policy_in",
                        ),
                        "bad scope": ("options", {"name": "pool/x", "enable": 1}, "scope"),
                    },
                ),
            ),
        ),
        section="proxmox:firewall",
        prefix="proxmox-firewall-",
        examples=Examples(
            create=_GROUP,
            update={**_GROUP, "comment": "Example group, renamed"},
            clear={**_GROUP, "comment": None},
            delete={"name": _GROUP["name"], "removal": "destroy"},
            bad={
                **_bad(_GROUP, {"name": _GROUP["name"]}, "group", "group_absent"),
                "wrong type": ("group", {**_GROUP, "comment": ["web", "tier"]}, "comment"),
            },
        ),
    ),
    Family(
        name="snapshot",
        state="proxmox_snapshot",
        module="proxmox",
        calls=_present_absent("proxmox", "snapshot"),
        kinds=(Kind("snapshot", spec="salt_proxmox.backup.snapshot:SPEC"),),
        section="proxmox:{lxc,qemu}:<id>:snapshots",
        prefix="proxmox-snapshot-",
        examples=Examples(
            create=_SNAPSHOT,
            update={**_SNAPSHOT, "description": "Example, before the upgrade"},
            clear={**_SNAPSHOT, "description": ""},
            delete={key: _SNAPSHOT[key] for key in ("name", "vmid", "node", "type")} | {"removal": "destroy"},
            bad={
                **_bad(_SNAPSHOT, {key: _SNAPSHOT[key] for key in ("name", "vmid", "node", "type")}),
                "wrong type": ("present", {**_SNAPSHOT, "vmid": "one-twenty"}, "vmid"),
            },
        ),
    ),
)

#: Keys a container or VM declaration carries that another family judges: ``{key: "module:attribute"}``
#: of a guard the guest lifecycle calls before it decides anything, as ``guard(ctx, kind, vmid, node,
#: pool, value)`` (``value`` None when the declaration has no such key), returning ``(refusals, run
#: notes)``: a refusal fails the guest's state with nothing written; a run note is said once per run
#: (``Outcome.run_notes``).
GUEST_KEYS: Mapping[str, str] = MappingProxyType({"backup": "salt_proxmox.backup.coverage:guest_guard"})


def guest_guards() -> dict[str, object]:
    """``{key: guard}`` of ``GUEST_KEYS``, imported."""
    return {key: _imported(path) for key, path in GUEST_KEYS.items()}


#: ``{state module: Family}``.
BY_STATE: Mapping[str, Family] = MappingProxyType({family.state: family for family in FAMILIES})

#: Every state module of this project: one per family, and the formula's failing state.
STATE_MODULES: tuple[str, ...] = (*BY_STATE, PILLAR_STATE)


def family_of(state: str) -> Family:
    """The family of state module ``state``. Raises LookupError naming the registered ones."""
    try:
        return BY_STATE[state]
    except KeyError:
        raise LookupError(f"{state}: no such state module (registered: {', '.join(BY_STATE)})") from None


def kind_named(name: str) -> Kind:
    """The kind whose ownership row family is ``name`` (``sdn_vnet``). Raises LookupError."""
    for family in FAMILIES:
        for kind in family.kinds:
            if kind.name == name:
                return kind
    raise LookupError(f"{name}: no such kind of object")


def family_declaring(kind: str) -> Family:
    """The family one of whose kinds is ``kind``. Raises LookupError."""
    found = kind_named(kind)
    return next(family for family in FAMILIES if found in family.kinds)


def guests() -> dict[str, object]:
    """The guest families by the ``type`` PVE's guest index gives them (``{"lxc": LXC, "qemu": QEMU}``):
    what the ad-hoc guest calls look a guest's family up in; a guest of a type not listed is refused by
    name. Imports the guest families."""
    found = {}
    for family in FAMILIES:
        if family.guest is not None:
            guest = _imported(family.guest)
            found[guest.kind] = guest
    return found


def markdown() -> str:
    """The table of families docs/design.md §2 shows (``python -m salt_proxmox.registry``)."""
    lines = [
        "| family | state module | functions | pillar section | kinds (ownership rows) |",
        "| --- | --- | --- | --- | --- |",
    ]
    for family in FAMILIES:
        functions = ", ".join(f"`{fun}`" for fun in family.calls)
        kinds = ", ".join(f"`{kind.name}`" for kind in family.kinds)
        lines.append(f"| {family.name} | `{family.state}` | {functions} | `{family.section}` | {kinds} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # pragma: no cover - the docs' generator
    print(markdown(), end="")
