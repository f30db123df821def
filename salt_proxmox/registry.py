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
      simple lifecycle runs it, else None (guests and policies have lifecycles of their own).
    """

    name: str
    present: str = "present"
    absent: str = "absent"
    spec: str | None = None

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
#: the PVE states mint), then the simple objects and Ceph pools, node networks and SDN (the bridges
#: guests use), then containers and VMs.
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
    _simple(
        "storage",
        "storage.objects",
        "storage",
        _STORAGE,
        {"content": "iso,backup,vztmpl"},
        {"prune-backups": ""},
        {"max-protected-backups": "many"},
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
            Kind("sdn_vnet", present="vnet", absent="vnet_absent", spec="salt_proxmox.sdn.objects:VNET"),
            Kind(
                "sdn_subnet", present="subnet", absent="subnet_absent", spec="salt_proxmox.sdn.objects:SUBNET"
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
