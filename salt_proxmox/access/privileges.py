"""The privileges a declared estate needs, per credential and ACL path, exactly as PVE checks them: one
table, read by the plan of every family (``check``), by the checks a family makes itself (a VM's
``startup``, a privileged container on PVE 9, a listing PVE filters by privilege) and by
``proxmox.privileges_needed`` (the least role of each credential, ``least_roles``).

Sources (the ``permissions`` of each API method; pve-access-control ``PVE/RPCEnvironment.pm``
``check_vm_perm``: on ``/vms/<vmid>`` or the guest's pool):

- qemu-server ``src/PVE/API2/Qemu.pm``: ``create_vm`` (VM.Allocate on ``/vms/<vmid>``, Pool.Allocate on
  ``/pool/<pool>``), ``clone_vm`` (VM.Clone on the source); pve-container ``API2/LXC.pm`` ``create_vm``
  (VM.Allocate; the template Datastore.AllocateSpace or Datastore.Audit; PVE 9: Sys.Modify on ``/`` for
  a privileged container). What each config key written or deleted needs, by release, is
  ``access.guest_keys``'s (qemu-server ``$check_vm_modify_config_perm``, ``$check_drive_perms``,
  ``$check_storage_access``; pve-container ``LXC.pm`` ``check_ct_modify_config_perm``).
- pve-guest-common ``GuestHelpers.pm`` ``check_vnet_access``: SDN.Use on ``/sdn/zones/<zone>/<bridge>``
  for each NIC's bridge (zone ``localnetwork`` for a plain Linux bridge), PVE 8 and 9.
- pve-manager ``PVE/API2/Pool.pm`` (Pool.Audit / Pool.Allocate on ``/pool/<poolid>``), ``Network.pm``
  (Sys.Audit / Sys.Modify on ``/nodes/<node>``), ``API2/Ceph/Pool.pm`` (Sys.Audit or Datastore.Audit on
  ``/``; Sys.Modify on ``/``); pve-firewall ``API2/Firewall/Aliases.pm`` (cluster: Sys.Audit / Sys.Modify
  on ``/``); pve-storage ``API2/Storage/Config.pm`` (``index`` filtered by Datastore.Audit or
  Datastore.AllocateSpace on ``/storage/<id>``; create and delete Datastore.Allocate on ``/storage``,
  update on ``/storage/<id>``); pve-network ``API2/Network/SDN/{Zones,Vnets,Subnets}.pm`` (zones listed by
  SDN.Audit or SDN.Allocate on ``/sdn/zones/<zone>``, created with SDN.Allocate on ``/sdn/zones``, changed
  on ``/sdn/zones/<zone>``; vnets and subnets SDN.Allocate on ``/sdn/zones/<zone>[/<vnet>]``).
- pve-access-control ``API2/Role.pm`` (Sys.Modify on ``/access``), ``ACL.pm`` (``GET /access/acl``
  complete with Sys.Audit on ``/access``; ``update_acl`` Permissions.Modify on the entry's path),
  ``User.pm`` (``read_user`` Sys.Audit or User.Modify on ``/access/groups``; ``create_user``
  Realm.AllocateUser
  on ``/access/realm/<realm>`` and User.Modify on ``/access/groups``; tokens User.Modify there),
  ``Group.pm`` (Sys.Audit or Group.Allocate / Group.Allocate on ``/access/groups``), ``Domains.pm``
  (Sys.Audit or Realm.Allocate / Realm.Allocate on ``/access/realm``).

PVE 8 and 9 check the same privileges for these methods, with three differences the table keeps:
``VM.Monitor`` exists on 8 only (no declared key needs it), a privileged container needs Sys.Modify on
``/`` on 9 only, ``VM.GuestAgent.*`` (9 only) guard agent calls this product does not make, and two VM
keys 9 added have a class there only (``guest_keys.QEMU_KEYS``). A replication job's writes need
VM.Replicate on ``/vms/<vmid>`` on 9 and Datastore.Allocate on ``/storage`` on 8 (``BY_RELEASE``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from salt_proxmox.access import guest_keys
from salt_proxmox.pve.errors import PveError
from salt_proxmox.pve.facts import release
from salt_proxmox.pve.permissions import held_privileges

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.run.context import PveContext
    from salt_proxmox.simple.spec import Declared

#: The role ``least_roles`` names for each credential, and the command lines grant.
ROLES = {"read": "SaltProxmoxRead", "provision": "SaltProxmoxProvision"}


@dataclass(frozen=True)
class Need:
    """One privilege check PVE makes: ``credential`` (``read`` or ``provision``) must hold
    ``privileges`` on ``path`` (all of them, or one when ``any``); ``why``: what needs it and the source."""

    credential: str
    path: str
    privileges: tuple[str, ...]
    why: str
    any: bool = False

    def missing(self, held: set[str]) -> tuple[str, ...]:
        """The privileges of this need ``held`` lacks (all of them for an ``any`` need none of which is
        held)."""
        if self.any:
            return () if set(self.privileges) & held else self.privileges
        return tuple(priv for priv in self.privileges if priv not in held)


#: What a simple family's reads and writes need: ``{kind: {action: ((credential, path, privileges, any,
#: source), ...)}}``; ``action`` is ``read``, ``create``, ``update`` or ``delete``; paths are templates of
#: the declaration's names (``{name}``, ``{node}``, ``{path}``, ``{realm}``, ``{zone}``).
_AUDIT = ("Sys.Audit",)
_NOTIFY = "/mapping/notifications"
_NOTIFY_READ = ("Mapping.Audit", "Mapping.Modify")  # the first is what a least role holds
_NOTIFY_WRITE = (
    ("provision", _NOTIFY, ("Mapping.Modify",), False, "pve-manager API2/Cluster/Notifications.pm"),
)
SIMPLE: dict[str, dict[str, tuple[tuple[str, str, tuple[str, ...], bool, str], ...]]] = {
    "firewall_alias": {
        "read": (("read", "/", _AUDIT, False, "pve-firewall API2/Firewall/Aliases.pm get_aliases"),),
        "write": (
            ("provision", "/", ("Sys.Modify",), False, "pve-firewall Aliases.pm create/update/remove"),
        ),
    },
    "pool": {
        "read": (("read", "/pool/{name}", ("Pool.Audit",), False, "pve-manager API2/Pool.pm read_pool"),),
        "write": (("provision", "/pool/{name}", ("Pool.Allocate",), False, "pve-manager API2/Pool.pm"),),
    },
    "role": {
        "write": (("provision", "/access", ("Sys.Modify",), False, "pve-access-control API2/Role.pm"),),
    },
    "acl": {
        "read": (("read", "/access", _AUDIT, False, "pve-access-control API2/ACL.pm read_acl (complete)"),),
        "write": (("provision", "{path}", ("Permissions.Modify",), False, "ACL.pm update_acl perm-modify"),),
    },
    "ceph_pool": {
        "read": (
            ("read", "/", ("Sys.Audit", "Datastore.Audit"), True, "pve-manager API2/Ceph/Pool.pm lspools"),
        ),
        "write": (("provision", "/", ("Sys.Modify",), False, "pve-manager API2/Ceph/Pool.pm"),),
    },
    "storage": {
        "read": (
            (
                "read",
                "/storage/{name}",
                ("Datastore.Audit", "Datastore.AllocateSpace"),
                True,
                "pve-storage API2/Storage/Config.pm index",
            ),
        ),
        "create": (("provision", "/storage", ("Datastore.Allocate",), False, "Storage/Config.pm create"),),
        "update": (
            ("provision", "/storage/{name}", ("Datastore.Allocate",), False, "Storage/Config.pm update"),
        ),
        "delete": (("provision", "/storage", ("Datastore.Allocate",), False, "Storage/Config.pm delete"),),
    },
    "network_interface": {
        "read": (("read", "/nodes/{node}", _AUDIT, False, "pve-manager API2/Network.pm index"),),
        "write": (("provision", "/nodes/{node}", ("Sys.Modify",), False, "pve-manager API2/Network.pm"),),
    },
    "sdn_zone": {
        "read": (
            (
                "read",
                "/sdn/zones/{name}",
                ("SDN.Audit", "SDN.Allocate"),
                True,
                "pve-network SDN/Zones.pm index",
            ),
        ),
        "create": (("provision", "/sdn/zones", ("SDN.Allocate",), False, "pve-network SDN/Zones.pm create"),),
        "update": (("provision", "/sdn/zones/{name}", ("SDN.Allocate",), False, "SDN/Zones.pm update"),),
        "delete": (("provision", "/sdn/zones/{name}", ("SDN.Allocate",), False, "SDN/Zones.pm delete"),),
    },
    # pve-network API2/Network/SDN/{Controllers,Ipams,Dns}.pm: index lists what SDN.Audit or SDN.Allocate
    # on /sdn/<kind>/<id> shows; create, update and delete check SDN.Allocate on /sdn/<kind>.
    **{
        kind: {
            "read": (
                (
                    "read",
                    f"/sdn/{plural}/{{name}}",
                    ("SDN.Audit", "SDN.Allocate"),
                    True,
                    f"SDN/{api}.pm index",
                ),
            ),
            "write": (
                ("provision", f"/sdn/{plural}", ("SDN.Allocate",), False, f"pve-network SDN/{api}.pm"),
            ),
        }
        for kind, plural, api in (
            ("sdn_controller", "controllers", "Controllers"),
            ("sdn_ipam", "ipams", "Ipams"),
            ("sdn_dns", "dns", "Dns"),
        )
    },
    "sdn_vnet": {
        "write": (("provision", "/sdn/zones/{zone}", ("SDN.Allocate",), False, "pve-network SDN/Vnets.pm"),),
    },
    "backup_job": {
        "read": (("read", "/", _AUDIT, False, "pve-manager API2/Backup.pm index"),),
        "write": (
            ("provision", "/", ("Sys.Modify",), False, "pve-manager API2/Backup.pm create/update/delete_job"),
        ),
    },
    "cluster_options": {
        "read": (("read", "/", _AUDIT, False, "pve-manager API2/Cluster.pm get_options"),),
        "write": (("provision", "/", ("Sys.Modify",), False, "pve-manager API2/Cluster.pm set_options"),),
    },
    # pve-manager PVE/API2/Nodes.pm: dns/time read Sys.Audit on the node, get_etc_hosts on /; writes
    # (update_dns, write_etc_hosts, set_timezone) Sys.Modify on the node.
    **{
        f"node_{kind}": {
            "read": (
                ("read", "/" if kind == "hosts" else "/nodes/{name}", _AUDIT, False, f"Nodes.pm {read}"),
            ),
            "write": (
                ("provision", "/nodes/{name}", ("Sys.Modify",), False, f"pve-manager Nodes.pm {write}"),
            ),
        }
        for kind, read, write in (
            ("dns", "dns", "update_dns"),
            ("hosts", "get_etc_hosts", "write_etc_hosts"),
            ("time", "time", "set_timezone"),
        )
    },
    "metric_server": {
        "read": (("read", "/", _AUDIT, False, "pve-manager API2/Cluster/MetricServer.pm read"),),
        "write": (("provision", "/", ("Sys.Modify",), False, "pve-manager API2/Cluster/MetricServer.pm"),),
    },
    # pve-manager API2/APT.pm: repositories Sys.Audit, add_repository/change_repository Sys.Modify on
    # /nodes/{node} (the node is the object's name).
    "apt_repository": {
        "read": (("read", "/nodes/{name}", ("Sys.Audit",), False, "pve-manager API2/APT.pm repositories"),),
        "write": (("provision", "/nodes/{name}", ("Sys.Modify",), False, "pve-manager API2/APT.pm"),),
    },
    # pve-manager API2/ReplicationConfig.pm: read VM.Audit, create/update/delete VM.Replicate on /vms/<vmid>.
    "replication": {
        "read": (("read", "/vms/{vmid}", ("VM.Audit",), False, "pve-manager ReplicationConfig.pm read"),),
        "write": (
            ("provision", "/vms/{vmid}", ("VM.Replicate",), False, "pve-manager API2/ReplicationConfig.pm"),
        ),
    },
    **{
        f"mapping_{kind}": {
            "read": (
                (
                    "read",
                    f"/mapping/{kind}/{{name}}",
                    ("Mapping.Audit", "Mapping.Use", "Mapping.Modify"),
                    True,
                    f"pve-manager API2/Cluster/Mapping/{pm} get",
                ),
            ),
            "create": (
                ("provision", f"/mapping/{kind}", ("Mapping.Modify",), False, f"Mapping/{pm} create"),
            ),
            "update": (
                (
                    "provision",
                    f"/mapping/{kind}/{{name}}",
                    ("Mapping.Modify",),
                    False,
                    f"Mapping/{pm} update",
                ),
            ),
            "delete": (
                ("provision", f"/mapping/{kind}", ("Mapping.Modify",), False, f"Mapping/{pm} delete"),
            ),
        }
        for kind, pm in (("pci", "PCI.pm"), ("usb", "USB.pm"), ("dir", "Dir.pm"))
    },
    # pve-manager API2/ACMEPlugin.pm: every method, the reads too, needs Sys.Modify on / (the sections hold
    # the DNS APIs' credentials); a node's certificate configuration is read with Sys.Audit on /nodes/<node>.
    "acme_plugin": {
        "read": (
            ("provision", "/", ("Sys.Modify",), False, "pve-manager API2/ACMEPlugin.pm get_plugin_config"),
        ),
        "write": (("provision", "/", ("Sys.Modify",), False, "pve-manager API2/ACMEPlugin.pm"),),
    },
    # A node certificate: Certificates.pm upload_custom_cert/remove_custom_cert and ACME.pm new_certificate/
    # renew_certificate check Sys.Modify on /nodes/<node>; an ACME one's node config write (API2/NodeConfig.pm
    # set_options) Sys.Modify on /, its read (get_config) Sys.Audit on /. The table cannot tell the types
    # apart: both are asked for.
    "certificate": {
        "read": (("read", "/", _AUDIT, False, "pve-manager API2/NodeConfig.pm get_config"),),
        "write": (
            ("provision", "/nodes/{name}", ("Sys.Modify",), False, "pve-manager Certificates.pm, ACME.pm"),
            ("provision", "/", ("Sys.Modify",), False, "pve-manager API2/NodeConfig.pm set_options"),
        ),
    },
    # Notifications.pm: reads Mapping.Modify or Mapping.Audit on /mapping/notifications; writes Mapping.Modify
    # there, an endpoint's create and update also Sys.Audit and Sys.Modify on / (or Sys.AccessNetwork on /,
    # the other branch of its 'or', which this table cannot say: the stricter branch is asked for).
    "notification_endpoint": {
        "read": (
            ("read", _NOTIFY, _NOTIFY_READ, True, "pve-manager API2/Cluster/Notifications.pm get_*_endpoint"),
        ),
        "create": (
            *_NOTIFY_WRITE,
            ("provision", "/", ("Sys.Audit", "Sys.Modify"), False, "Notifications.pm create_*"),
        ),
        "update": (
            *_NOTIFY_WRITE,
            ("provision", "/", ("Sys.Audit", "Sys.Modify"), False, "Notifications.pm update_*"),
        ),
        "delete": _NOTIFY_WRITE,
    },
    "notification_matcher": {
        "read": (
            ("read", _NOTIFY, _NOTIFY_READ, True, "pve-manager API2/Cluster/Notifications.pm get_matcher"),
        ),
        "write": _NOTIFY_WRITE,
    },
    "snapshot": {
        "read": (("read", "/vms/{vmid}", ("VM.Audit",), False, "pve-guest-common snapshot_list (VM.Audit)"),),
        "write": (
            ("provision", "/vms/{vmid}", ("VM.Snapshot",), False, "qemu-server, pve-container snapshot"),
        ),
    },
    "firewall_group": {
        "read": (("read", "/", _AUDIT, False, "pve-firewall API2/Firewall/Groups.pm list_security_groups"),),
        "write": (("provision", "/", ("Sys.Modify",), False, "pve-firewall Groups.pm create/delete"),),
    },
    # pve-ha-manager API2/HA/{Resources,Groups,Rules}.pm: reads Sys.Audit, writes Sys.Console on /.
    **{
        kind: {
            "read": (("read", "/", _AUDIT, False, f"pve-ha-manager API2/HA/{api}.pm index"),),
            "write": (("provision", "/", ("Sys.Console",), False, f"pve-ha-manager API2/HA/{api}.pm"),),
        }
        for kind, api in (("ha_resource", "Resources"), ("ha_group", "Groups"), ("ha_rule", "Rules"))
    },
    "realm": {
        "read": (
            (
                "read",
                "/access/realm",
                ("Sys.Audit", "Realm.Allocate"),
                True,
                "pve-access-control Domains.pm read",
            ),
        ),
        "write": (
            ("provision", "/access/realm", ("Realm.Allocate",), False, "Domains.pm create/update/delete"),
        ),
    },
    "group": {
        "read": (
            (
                "read",
                "/access/groups",
                ("Sys.Audit", "Group.Allocate"),
                True,
                "pve-access-control Group.pm read",
            ),
        ),
        "write": (
            ("provision", "/access/groups", ("Group.Allocate",), False, "Group.pm create/update/delete"),
        ),
    },
    "user": {
        "read": (
            (
                "read",
                "/access/groups",
                ("Sys.Audit", "User.Modify"),
                True,
                "pve-access-control User.pm read_user",
            ),
        ),
        "create": (
            ("provision", "/access/realm/{realm}", ("Realm.AllocateUser",), False, "User.pm create_user"),
            ("provision", "/access/groups", ("User.Modify",), False, "User.pm create_user"),
        ),
        "update": (("provision", "/access/groups", ("User.Modify",), False, "User.pm update_user"),),
        "delete": (
            ("provision", "/access/realm/{realm}", ("Realm.AllocateUser",), False, "User.pm delete_user"),
            ("provision", "/access/groups", ("User.Modify",), False, "User.pm delete_user"),
        ),
    },
    "token": {
        "read": (
            (
                "read",
                "/access/groups",
                ("Sys.Audit", "User.Modify"),
                True,
                "pve-access-control User.pm read_user",
            ),
        ),
        "write": (("provision", "/access/groups", ("User.Modify",), False, "User.pm generate_token"),),
    },
}


#: What a release checks in place of ``SIMPLE``'s row (PVE 9's), by major: pve-manager ``stable-8``
#: ``API2/ReplicationConfig.pm`` asks Datastore.Allocate on ``/storage`` for every write; 9.0.0 asks
#: VM.Replicate on the guest ("close #2809: api: replication: use VM.Replicate privilege").
BY_RELEASE: dict[int, dict[str, dict[str, tuple]]] = {
    8: {
        "replication": {
            "write": (
                (
                    "provision",
                    "/storage",
                    ("Datastore.Allocate",),
                    False,
                    "pve-manager 8 ReplicationConfig.pm",
                ),
            ),
        },
    },
}


def by_release(kind: str) -> bool:
    """Whether ``kind``'s privileges differ by PVE release (``BY_RELEASE``)."""
    return any(kind in table for table in BY_RELEASE.values())


def _table(kind: str, action: str, major: int = 9) -> tuple:
    entry = {**SIMPLE.get(kind, {}), **BY_RELEASE.get(major, {}).get(kind, {})}
    if action == "read":
        return entry.get("read", ())
    return entry.get(action, entry.get("write", ()))


def listing_privileges(kind: str) -> tuple[str, ...]:
    """The privileges one of which lets the read credential see ``kind``'s object in PVE's filtered
    listing (``GET /storage``, ``GET /cluster/sdn/zones``): what ``simple.spec.audited_listing`` checks."""
    (_, _, privileges, _, _), *_ = _table(kind, "read")
    return privileges


def _fields(decl: Declared) -> dict[str, str]:
    names = {key: str(value) for key, value in {**dict(decl.names), **dict(decl.values)}.items()}
    names.setdefault("realm", decl.identity.rpartition("@")[2].partition("!")[0])
    return names


def simple_needs(kind: str, action: str, decl: Declared, major: int = 9) -> list[Need]:
    """What ``action`` (read, create, update, delete) on a simple object of ``kind`` needs on PVE ``major``
    (``BY_RELEASE``). A path whose template names a field the declaration lacks is left out (the family's
    other checks see it)."""
    fields = _fields(decl)
    needs = []
    for credential, template, privileges, anyof, source in _table(kind, action, major):
        try:
            path = template.format(**fields)
        except KeyError:
            continue
        needs.append(Need(credential, path, privileges, f"{action} {decl.label} ({source})", anyof))
    return needs


def cluster_major(ctx: PveContext | None, kind: str) -> int:
    """The PVE major whose table applies to ``kind``: read (``GET /version``, once per run) only for a
    kind whose privileges differ by release and when there is a cluster to ask, else 9."""
    return release(ctx).major if ctx is not None and by_release(kind) else 9


# ------------------------------------------------------------------------------------------- guests

#: A VM's ``startup`` (``$check_vm_modify_config_perm``: "special case for startup since it changes host
#: behaviour") and a privileged container on PVE 9 (pve-container ``API2/LXC.pm`` ``create_vm``): Sys.Modify
#: on ``/``. The families check these themselves, with their own remedy (``qemu.family.startup_check``,
#: ``lxc.refusals.privileged_create_check``).
STARTUP = ("Sys.Modify", "/")
PRIVILEGED_CT = ("Sys.Modify", "/")


def bridge_of(value: str) -> str | None:
    for part in value.split(","):
        key, _, text = part.partition("=")
        if key == "bridge":
            return text
    return None


def guest_needs(
    kind: str,
    vmid: int,
    config: Mapping[str, str],
    action: str,
    zones: Mapping[str, str] | None = None,
    pool: str | None = None,
    clone: int | None = None,
    dedicated: bool = True,
    live: Mapping[str, object] | None = None,
    major: int = 9,
    resize: Iterable[str] = (),
) -> list[Need]:
    """What writing ``config`` (key → value; ``''`` deletes) to guest ``vmid`` of ``kind`` (``lxc``,
    ``qemu``) needs of the provision credential; ``action``: ``create`` (VM.Allocate too) or ``update``.
    ``live``: the guest's config before the write (an update checks a drive's old kind and
    ``features``' old ``nesting``); ``major``: the PVE release whose tables apply (``guest_keys``);
    ``resize``: the volumes ``PUT …/resize`` grows. ``zones``: the SDN zone of each bridge a NIC names
    (``guest.nics.bridge_zone``; ``localnetwork`` when not given); ``dedicated``: include the checks the
    guest families make themselves, with their own remedies: a VM's ``startup`` (``STARTUP``) and each
    NIC's SDN.Use (``guest.nics.access_checks``, old bridges, tags and trunks included). A key only
    root@pam may write needs nothing here: the family refuses it by name."""
    vm = f"/vms/{vmid}"
    label = f"{'VM' if kind == 'qemu' else 'CT'} {vmid}"
    source = "qemu-server API2/Qemu.pm" if kind == "qemu" else "pve-container LXC.pm"
    live = live or {}
    needs: list[Need] = []
    if action == "create":
        needs.append(Need("provision", vm, ("VM.Allocate",), f"create {label} ({source} create_vm)"))
        if pool:
            needs.append(Need("provision", f"/pool/{pool}", ("Pool.Allocate",), f"{label} in pool {pool}"))
        if clone is not None:
            needs.append(
                Need("provision", f"/vms/{clone}", ("VM.Clone",), f"clone {label} ({source} clone_vm)")
            )
    for key, value in sorted(config.items()):
        if key in ("pool", "lock", "digest"):
            continue
        new = str(value) or None
        old = str(live[key]) if action == "update" and live.get(key) not in (None, "") else None
        if kind == "qemu":
            checks = guest_keys.qemu_checks(vmid, key, new, old, action, major)
        else:
            checks = guest_keys.lxc_checks(vmid, key, new, old)
        needs += [Need("provision", path, privs, why, anyof) for path, privs, anyof, why in checks or ()]
        bridge = bridge_of(new) if new and key.startswith("net") and key[3:].isdigit() else None
        if bridge and dedicated:
            zone = (zones or {}).get(bridge, "localnetwork")
            needs.append(
                Need("provision", f"/sdn/zones/{zone}/{bridge}", ("SDN.Use",),
                     f"{key} of {label} on {bridge} (pve-guest-common GuestHelpers.pm check_vnet_access)")
            )  # fmt: skip
        if key == "startup" and kind == "qemu" and dedicated:
            why = f"startup of {label}: it changes host behaviour ({source} $check_vm_modify_config_perm)"
            needs.append(Need("provision", STARTUP[1], (STARTUP[0],), why))
    for key in resize:
        storage = guest_keys.volume_of(str(live.get(key) or "")).partition(":")[0] or None
        checks = guest_keys.resize_checks(kind, vmid, key, storage)
        needs += [Need("provision", path, privs, why, anyof) for path, privs, anyof, why in checks]
    return needs


# --------------------------------------------------------------------------------------- comparing


def held(ctx: PveContext, credential: str, path: str) -> set[str] | str:
    """What ``credential`` holds on ``path``, read once per run and path: the read credential's own
    (``GET /access/permissions?path=``); the provision token's with the read credential and ``userid``
    (Sys.Audit on ``/access``), when its id is known without minting. A sentence when it cannot be
    known. Raises PveError other than 403, PveMalformed, PveUnreachable."""
    from salt_proxmox.guest.refusals import static_provision_token

    who = ctx.broker.read().token_id if credential == "read" else static_provision_token(ctx)
    if who is None:
        return "the provision token's id is known only once it is minted (source: openbao)"
    key = f"salt_proxmox.held/{ctx.target.name}/{who}/{path}"
    if key not in ctx.memo:
        try:
            if credential == "read":
                ctx.memo[key] = held_privileges(ctx, ctx.broker.read(), path)
            else:
                ctx.memo[key] = held_privileges(ctx, ctx.broker.read(), path, userid=who)
        except PveError as error:
            if error.status != 403:
                raise
            ctx.memo[key] = "the read token may not read another token's privileges (Sys.Audit on /access)"
    return ctx.memo[key]  # type: ignore[return-value]


def token_of(ctx: PveContext, credential: str) -> str | None:
    """The token id of ``credential`` when known without minting a provision credential."""
    from salt_proxmox.guest.refusals import static_provision_token

    return ctx.broker.read().token_id if credential == "read" else static_provision_token(ctx)


def grant_command(credential: str, token: str, path: str, privileges: Iterable[str]) -> str:
    """The ``pveum`` lines that grant ``privileges`` on ``path`` to ``token`` through the credential's
    role (``ROLES``: created by ``proxmox.privileges_needed``'s ``proxmox:roles`` entry, or by hand)."""
    role = ROLES[credential]
    privs = ",".join(sorted(privileges))
    return (
        f"pveum role modify {role} --append 1 --privs {privs} && "
        f"pveum acl modify {path} --tokens '{token}' --roles {role}"
    )


def check(ctx: PveContext, needs: Iterable[Need]) -> tuple[list[str], list[str]]:
    """``(refusals, notes)``: one refusal per credential and path whose token lacks a needed privilege
    (PVE would answer ``403 Permission check failed (<path>, <privilege>)``), with the command that grants
    it; a note where the credential's privileges cannot be read. Raises what the reads raise."""
    missing: dict[tuple[str, str], tuple[set[str], list[str]]] = {}
    notes: list[str] = []
    for need in needs:
        have = held(ctx, need.credential, need.path)
        if isinstance(have, str):
            # Said once per run: every state of the run meets the same reason.
            said = ctx.memo.setdefault(f"salt_proxmox.unchecked/{ctx.target.name}", set())
            if (need.credential, have) not in said:
                said.add((need.credential, have))
                notes.append(f"the {need.credential} token's privileges are not checked at plan: {have}")
            continue
        lacking = need.missing(have)
        if lacking:
            privs, whys = missing.setdefault((need.credential, need.path), (set(), []))
            privs.update(lacking if not need.any else {" or ".join(lacking)})
            whys.append(need.why)
    refusals = []
    for (credential, path), (privs, whys) in sorted(missing.items()):
        token = token_of(ctx, credential) or credential
        grantable = sorted(p.split(" or ")[0] for p in privs)
        command = grant_command(credential, token, path, grantable)
        refusals.append(
            f"the {credential} token {token} lacks {', '.join(sorted(privs))} on {path}, which "
            f"{'; '.join(dict.fromkeys(whys))} needs: PVE would refuse it (`Permission check failed ({path}, "
            f"{grantable[0]})`). Grant it: `{command}` (with privsep its user needs them too)."
        )
    return refusals, notes


# ------------------------------------------------------------------------------------ least roles


def least_roles(needs: Iterable[Need]) -> dict:
    """The least role of each credential that satisfies ``needs`` (an ``any`` need takes its first
    privilege), and the ACL entries granting it: ``{"roles": {<role>: {"privs": [...]}}, "acls":
    {<label>: {"path", "role", "token": <credential>}}}``, as the ``proxmox:`` pillar declares them. A
    path one of whose parents needs the same role is kept: entries are granted without propagation
    being assumed."""
    privs: dict[str, set[str]] = {}
    paths: dict[str, set[str]] = {}
    for need in needs:
        # An ``any`` need takes its first privilege (the narrower one, as the table lists them).
        privs.setdefault(need.credential, set()).update(need.privileges[:1] if need.any else need.privileges)
        paths.setdefault(need.credential, set()).add(need.path)
    roles = {ROLES[cred]: {"privs": sorted(found)} for cred, found in sorted(privs.items())}
    acls = {}
    for cred, found in sorted(paths.items()):
        for path in sorted(found):
            label = f"{cred}-{path.strip('/').replace('/', '-') or 'root'}"
            acls[label] = {"path": path, "role": ROLES[cred], "credential": cred}
    return {"roles": roles, "acls": acls}


def planning(ctx: PveContext, test: bool | None = None) -> bool:
    """Whether this run plans (Salt's ``test``, the same for every state of a run): set by the guest
    lifecycle, the simple lifecycle and the firewall's states as a state starts (``test`` given), read by
    ``guest_check`` and ``firewall.scope.run_guests``. The provision token's privileges are judged at
    plan; an apply leaves them to PVE, which checks them before it writes."""
    key = f"salt_proxmox.planning/{ctx.target.name}"
    if test is not None:
        ctx.memo[key] = bool(test)
    return bool(ctx.memo.get(key, True))


def guest_check(
    ctx: PveContext,
    kind: str,
    vmid: int,
    config: Mapping[str, str],
    action: str,
    pool: str | None = None,
    clone: int | None = None,
    live: Mapping[str, object] | None = None,
    resize: Iterable[str] = (),
) -> tuple[list[str], list[str]]:
    """``check`` of ``guest_needs`` for a guest write (the checks the guest families make themselves
    left out: ``dedicated``), at plan only (``planning``); ``live``: the guest's config before an update.
    The release (``GET /version``, ``pve.facts.release``) is read only when a key written has another
    class on PVE 8 than on 9 (``guest_keys.differs_by_release``). Raises what the reads raise."""
    if not planning(ctx):
        return [], []
    major = 9
    if kind == "qemu" and guest_keys.differs_by_release(config):
        major = release(ctx).major
    needs = guest_needs(kind, vmid, config, action, None, pool, clone, False, live, major, resize)
    return check(ctx, needs)
