"""Every family this project manages, in one list (``FAMILIES``), and what each tells the rest.

A family is one Salt state module (``_states/<state>.py``), its own package under ``salt_proxmox/`` and
one entry here; nothing else is written for it (docs/adding-a-family.md). What reads this list, or is
pinned to it by a test (``tests/unit/test_registry.py``):

- the execution modules: every state call of a family whose ``Kind`` names its library ``Run`` is a
  function generated from this list when the module loads (``salt_proxmox.run.calls``, with its
  signature and a ``sys.doc`` docstring built from the family's spec), so ``_modules/`` does not grow
  per family; ``proxmox.run_state`` (the one skin every state function calls) looks the call of a
  state function up in ``Family.calls``;
- the ad-hoc guest calls (``proxmox.guest_*``): ``guests()``, the guest families by PVE's ``type``;
- the formula (``formula/proxmox/init.sls``): its ``SECTIONS`` and ``NESTED`` tables hold a
  family's pillar section, state id prefix and module in this order (the order the states run). Salt's
  ``py`` renderer cannot import this package when the formula is synced from file_roots, so the test
  pins the tables to ``FAMILIES``;
- the outputter (``_output/proxmox_plan.py``): it names a state's family from its module
  (``proxmox_lxc`` → ``lxc``) without importing this package (it runs wherever output is printed);
  the test pins that name to ``Family.name``;
- the conformance suite (``tests/conformance``): every kind of every family is run through its
  examples (``tests/conformance/examples.py``, keyed by the kind's name; a kind without them fails);
- the docs: the table in docs/design.md §2 is ``markdown()`` (the test compares them).

Importing this module imports no family: a family's code is named by ``"module:attribute"`` and
imported when asked for (``Kind.load``, ``guests``), so the state skin and the docs read the list
without loading every judge. Imports no Salt.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from salt_proxmox.entry import (
    GUEST_ABSENT,
    GUEST_PRESENT,
    Family,
    Kind,
    Run,
    imported,
)

#: The state module holding the formula's failing state (``refused``): a pillar entry the formula
#: cannot turn into a state becomes one state of this module naming the pillar key. No family.
PILLAR_STATE = "proxmox_pillar"


def _simple(kind: str, package: str, section: str, **options: object) -> Family:
    """A simple object family: ``proxmox_<kind>.present``/``absent`` run by the simple lifecycle with the
    ``SPEC`` of ``salt_proxmox.<package>``, rows ``<kind>``, the section ``proxmox:<section>``;
    ``options``: the kind's other fields (``Kind``)."""
    return Family(
        name=kind,
        state=f"proxmox_{kind}",
        module="proxmox",
        kinds=(Kind(kind, spec=f"salt_proxmox.{package}:SPEC", **options),),
        section=f"proxmox:{section}",
        prefix=f"proxmox-{kind.replace('_', '-')}-",
    )


def _guest(kind: str, guest: str) -> Family:
    """A guest family (``lxc``, ``qemu``): ``proxmox_<kind>.present``/``absent`` run by the guest
    lifecycle, its password-like keys from pillar (``salt_proxmox.<kind>.schema.SECRETS``), its guests
    read ahead; rows ``<kind>``, the section ``proxmox:<kind>``; ``guest``: its
    ``salt_proxmox.guest.family.Family``."""
    return Family(
        name=kind,
        state=f"proxmox_{kind}",
        module="proxmox",
        kinds=(
            Kind(
                kind,
                present_run=GUEST_PRESENT,
                absent_run=GUEST_ABSENT,
                secrets=f"salt_proxmox.{kind}.schema:SECRETS",
                state_id=False,
                names=("name", "vmid", "node"),
                ahead="salt_proxmox.guest.live:read_ahead",
            ),
        ),
        section=f"proxmox:{kind}",
        prefix=f"proxmox-{kind}-",
        guest=guest,
        adhoc=f"salt_proxmox.{kind}.calls:CALLS",
    )


def _staged(name: str, present: str, spec: str) -> Kind:
    """A kind whose writes PVE stages until an apply step (``salt_proxmox.network.apply``)."""
    return Kind(
        name,
        present=present,
        absent=f"{present}_absent",
        spec=spec,
        present_run=Run("salt_proxmox.network.apply:present"),
        absent_run=Run("salt_proxmox.network.apply:absent"),
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
        kinds=(Kind("policy", present_run=None, absent_run=None, saltenv=True),),
        section="openbao:policies",
        prefix="openbao-policy-",
    ),
    _simple(
        "firewall_alias",
        "firewall.alias",
        "firewall_aliases",
        present_run=Run("salt_proxmox.firewall.lifecycle:present", spec=False),
    ),
    # The datacenter's options (datacenter.cfg) before the guests: their tag-style and mac_prefix shape
    # how guests' tags compare and which MACs PVE draws for them.
    _simple(
        "cluster_options",
        "datacenter.options",
        "cluster_options",
        secrets="salt_proxmox.datacenter.options:SECRETS",
    ),
    _simple("pool", "simple.pool", "pools"),
    _simple("role", "simple.role", "roles"),
    _simple("realm", "access.realm", "realms", secrets="salt_proxmox.access.realm:SECRETS"),
    _simple("group", "access.group", "groups"),
    _simple("user", "access.user", "users", secrets="salt_proxmox.access.user:SECRETS"),
    _simple("token", "access.token", "tokens"),
    _simple("acl", "simple.acl", "acls"),
    _simple("ceph_pool", "ceph.pool", "ceph_pools"),
    Family(
        name="pbs_datastore",
        state="pbs_datastore",
        module="proxmox",
        kinds=(
            Kind(
                "pbs_datastore",
                spec="salt_proxmox.pbs.datastore:SPEC",
                absent_run=Run("salt_proxmox.pbs.datastore:absent", spec=False),
            ),
        ),
        section="proxmox:pbs:datastores",
        prefix="pbs-datastore-",
        targets="proxmox:pbs_targets",
    ),
    _simple(
        "storage",
        "storage.objects",
        "storage",
        present_run=Run("salt_proxmox.pbs.wiring:storage_present"),
        secrets="salt_proxmox.storage.types:LEGACY_SENSITIVE",
        precheck="salt_proxmox.storage.objects:declaration_problem",
        linked=MappingProxyType({"pbs_target": "proxmox:pbs_targets"}),
    ),
    _simple("ha_group", "ha.group", "ha_groups"),
    _simple("ha_resource", "ha.resource", "ha_resources"),
    _simple("ha_rule", "ha.rule", "ha_rules"),
    # Downloaded ISOs, templates and import images after the storage
    # holding them, before the guests whose cdrom or ostemplate names them.
    Family(
        name="content",
        state="proxmox_content",
        module="proxmox",
        kinds=(
            Kind(
                "content",
                keys="salt_proxmox.content.lifecycle:declared_keys",
                export="salt_proxmox.content.adhoc:export",
                needs="salt_proxmox.content.lifecycle:estate_needs",
                present_run=Run("salt_proxmox.content.lifecycle:present", spec=False),
                absent_run=Run("salt_proxmox.content.lifecycle:absent", spec=False),
                names=("name", "storage", "content", "filename"),
            ),
        ),
        section="proxmox:content",
        prefix="proxmox-content-",
    ),
    Family(
        name="network",
        state="proxmox_network",
        module="proxmox",
        kinds=(_staged("network_interface", "interface", "salt_proxmox.network.interface:SPEC"),),
        section="proxmox:networks",
        prefix="proxmox-network-",
        applied=Run("salt_proxmox.network.apply:applied", spec=False),
    ),
    # A node's own settings (resolvers, /etc/hosts, time zone): always there, never deleted, so their
    # absent refuses removal: destroy (salt_proxmox.node.common).
    Family(
        name="node",
        state="proxmox_node",
        module="proxmox",
        kinds=(
            *(
                Kind(
                    f"node_{kind}",
                    present=kind,
                    absent=f"{kind}_absent",
                    spec=f"salt_proxmox.node.{kind}:SPEC",
                    absent_run=Run("salt_proxmox.node.common:absent"),
                )
                for kind in ("dns", "hosts", "time")
            ),
            # Its APT repositories: a destroy disables the entries the last declaration enabled (APT.pm
            # has no delete).
            Kind(
                "apt_repository",
                present="apt_repository",
                absent="apt_repository_absent",
                spec="salt_proxmox.node.apt:SPEC",
            ),
        ),
        section="proxmox:nodes",
        prefix="proxmox-node-",
    ),
    Family(
        name="sdn",
        state="proxmox_sdn",
        module="proxmox",
        kinds=(
            # Controllers, IPAMs and DNS servers before the zones naming them; IPAMs and DNS servers are
            # written at once (not staged), their token and key read from pillar.
            _staged("sdn_controller", "controller", "salt_proxmox.sdn.extras:CONTROLLER"),
            Kind(
                "sdn_ipam",
                present="ipam",
                absent="ipam_absent",
                spec="salt_proxmox.sdn.extras:IPAM",
                secrets="salt_proxmox.sdn.extras:IPAM_SECRETS",
            ),
            Kind(
                "sdn_dns",
                present="dns",
                absent="dns_absent",
                spec="salt_proxmox.sdn.extras:DNS_SERVER",
                secrets="salt_proxmox.sdn.extras:DNS_SECRETS",
            ),
            _staged("sdn_zone", "zone", "salt_proxmox.sdn.objects:ZONE"),
            _staged("sdn_vnet", "vnet", "salt_proxmox.sdn.objects:VNET"),
            _staged("sdn_subnet", "subnet", "salt_proxmox.sdn.objects:SUBNET"),
        ),
        section="proxmox:sdn",
        prefix="proxmox-sdn-",
        applied=Run("salt_proxmox.sdn.apply:applied", spec=False),
    ),
    # Notifications (Datacenter → Notifications): endpoints before the matchers targeting them, both before
    # the backup jobs whose notification-mode the plan judges by them.
    Family(
        name="notification",
        state="proxmox_notification",
        module="proxmox",
        kinds=(
            Kind(
                "notification_endpoint",
                present="endpoint",
                absent="endpoint_absent",
                spec="salt_proxmox.datacenter.notifications:SPEC",
                secrets="salt_proxmox.datacenter.notifications:SECRETS",
            ),
            Kind(
                "notification_matcher",
                present="matcher",
                absent="matcher_absent",
                spec="salt_proxmox.datacenter.matchers:SPEC",
            ),
        ),
        section="proxmox:notifications",
        prefix="proxmox-notification-",
    ),
    # Resource mappings (Datacenter → Resource Mappings): before the VMs whose devices name them.
    Family(
        name="mapping",
        state="proxmox_mapping",
        module="proxmox",
        kinds=tuple(
            Kind(
                f"mapping_{kind}",
                present=kind,
                absent=f"{kind}_absent",
                spec=f"salt_proxmox.datacenter.mappings:{kind.upper()}",
            )
            for kind in ("pci", "usb", "dir")
        ),
        section="proxmox:mappings",
        prefix="proxmox-mapping-",
    ),
    # ACME (Datacenter -> ACME): independent of every other family; the formula renders it beside SDN.
    Family(
        name="acme",
        state="proxmox_acme",
        module="proxmox",
        kinds=(
            Kind(
                "acme_plugin",
                present="plugin",
                absent="plugin_absent",
                spec="salt_proxmox.datacenter.acme:SPEC",
                secrets="salt_proxmox.datacenter.acme:SECRETS",
            ),
            # Read and written as root@pam through the target's root lane (ObjectSpec.reads_with).
            Kind(
                "acme_account",
                present="account",
                absent="account_absent",
                spec="salt_proxmox.datacenter.acme_account:SPEC",
                secrets="salt_proxmox.datacenter.acme_account:SECRETS",
            ),
        ),
        section="proxmox:acme",
        prefix="proxmox-acme-",
    ),
    # Snippets before the guests whose cicustom or hookscript names them; written through the root lane.
    Family(
        name="snippet",
        state="proxmox_snippet",
        module="proxmox",
        kinds=(
            Kind(
                "snippet",
                keys="salt_proxmox.snippet.lifecycle:declared_keys",
                export="salt_proxmox.snippet.adhoc:export",
                present_run=Run("salt_proxmox.snippet.lifecycle:present", spec=False),
                absent_run=Run("salt_proxmox.snippet.lifecycle:absent", spec=False),
                get="salt_proxmox.snippet.adhoc:get",
                names=("name", "storage"),
                sources="salt_proxmox.snippet.declare:read_source",
                secrets="salt_proxmox.snippet.declare:SECRETS",
                saltenv=True,
            ),
        ),
        section="proxmox:snippets",
        prefix="proxmox-snippet-",
    ),
    _guest("lxc", "salt_proxmox.lxc.family:LXC"),
    _guest("qemu", "salt_proxmox.qemu.family:QEMU"),
    # Backups: after the guests and storage a job names, then the guests' snapshots (docs/design.md §7c).
    _simple("backup_job", "backup.job", "backup_jobs"),
    # The datacenter's settings (Datacenter → Metric Server): independent of every other family.
    _simple(
        "metric_server",
        "datacenter.metrics",
        "metric_servers",
        secrets="salt_proxmox.datacenter.metrics:SECRETS",
    ),
    # A node's API/GUI certificate: after the ACME plugins and accounts an ACME certificate names.
    _simple(
        "certificate", "certificate.spec", "certificates", secrets="salt_proxmox.certificate.spec:SECRETS"
    ),
    # Storage replication (Datacenter → Replication): after the guests whose disks a job replicates.
    _simple("replication", "datacenter.replication", "replication"),
    # The firewall runs after the guests: a guest's options, IP sets and aliases need their guest.
    Family(
        name="firewall",
        state="proxmox_firewall",
        module="proxmox",
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
                present_run=Run("salt_proxmox.firewall.rules:present", spec=False),
                absent_run=Run("salt_proxmox.firewall.rules:absent", spec=False),
                get="salt_proxmox.firewall.adhoc:rules_get",
            ),
            Kind(
                "firewall_ipset",
                present="ipset",
                absent="ipset_absent",
                spec="salt_proxmox.firewall.ipset:SPEC",
                present_run=Run("salt_proxmox.firewall.ipset:present", spec=False),
            ),
            Kind(
                "firewall_options",
                present="options",
                absent="options_absent",
                spec="salt_proxmox.firewall.options:SPEC",
            ),
        ),
        section="proxmox:firewall",
        prefix="proxmox-firewall-",
    ),
    _simple("snapshot", "backup.snapshot", "{lxc,qemu}:<id>:snapshots"),
)

#: Keys a container or VM declaration carries that another family judges: ``{key: "module:attribute"}``
#: of a guard the guest lifecycle calls before it decides anything, as ``guard(ctx, kind, vmid, node,
#: pool, value)`` (``value`` None when the declaration has no such key), returning ``(refusals, run
#: notes)``: a refusal fails the guest's state with nothing written; a run note is said once per run
#: (``Outcome.run_notes``).
GUEST_KEYS: Mapping[str, str] = MappingProxyType({"backup": "salt_proxmox.backup.coverage:guest_guard"})


#: Checks of a container or VM declaration by another family that leave its keys in it:
#: ``"module:function"`` called by the guest lifecycle as ``check(ctx, kind, vmid, node, pool, declared)``,
#: returning ``(refusals, notes)`` as a ``GUEST_KEYS`` guard does: a VM's ``hostpciN``/``usbN``/
#: ``virtiofsN`` naming a resource mapping, and the snippets a ``cicustom`` or ``hookscript`` names, which
#: must exist or be declared in this run (``salt_proxmox.snippet.guard``).
GUEST_CHECKS: tuple[str, ...] = (
    "salt_proxmox.datacenter.mapping_use:guest_check",
    "salt_proxmox.snippet.guard:guest_check",
)


def guest_checks() -> list[object]:
    """The ``GUEST_CHECKS`` functions, imported."""
    return [imported(path) for path in GUEST_CHECKS]


def guest_guards() -> dict[str, object]:
    """``{key: guard}`` of ``GUEST_KEYS``, imported."""
    return {key: imported(path) for key, path in GUEST_KEYS.items()}


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
            guest = imported(family.guest)
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
