"""Where a firewall object lives: the scopes of pve-firewall's configuration files and API paths.

pve-firewall 6.0.4 (git 6f1311f) keeps one configuration per scope, each behind its own API path:

- ``cluster``: ``/etc/pve/firewall/cluster.fw``, ``/cluster/firewall`` (``PVE/API2/Firewall/Cluster.pm``);
- ``node/<node>``: ``/etc/pve/nodes/<node>/host.fw``, ``/nodes/{node}/firewall`` (``Host.pm``);
- ``vm/<vmid>`` and ``ct/<vmid>``: ``/etc/pve/firewall/<vmid>.fw``, ``/nodes/{node}/qemu/{vmid}/firewall``
  and ``/nodes/{node}/lxc/{vmid}/firewall`` (``VM.pm``), the node being the one the guest is on (the
  cluster's guest index, ``GET /cluster/resources?type=vm``), or, in a plan whose run creates the guest
  first, the one its declaration names; a new guest has no ``<vmid>.fw``, which pve-firewall reads as an
  empty firewall (``load_vmfw_conf``), so such a plan reads nothing there. A guest the run *clones*
  is not new in that sense: qemu-server ``API2/Qemu.pm`` ``clone_vm`` copies the template's firewall to
  it (``PVE::Firewall::clone_vmfw_conf``, pve-firewall ``src/PVE/Firewall/Helpers.pm``: ``<newid>.fw``
  becomes a copy of ``<vmid>.fw``), so its plan reads the template's firewall as the clone's. A guest
  the run *restores* gets the firewall its archive holds (qemu-server ``PVE/QemuServer.pm``
  ``restore_vma_archive`` copies ``qemu-server.fw``, pve-container ``src/PVE/LXC/Create.pm``
  ``restore_configuration_from_etc_vzdump`` copies ``pct.fw``), which no API call shows before the
  restore (``extractconfig`` answers the guest's config only): its plan starts empty and says so.

``locate`` is the one place a scope becomes its API path, for every firewall kind.

Security groups live in the cluster's file (``[group <name>]``) and are a scope of rules only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from salt_proxmox.errors import DeclarationError, Refused
from salt_proxmox.pve.client import api_path

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.run.context import PveContext
    from salt_proxmox.simple.spec import Call

#: pve-common ``pve-node`` (``PVE::JSONSchema::pve_verify_node_name``): a host name label.
_NODE = re.compile(r"^[a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?\Z")
#: pve-common ``pve-vmid``: 100 to 999999999.
_VMID = re.compile(r"^[1-9][0-9]{2,8}\Z")
#: The guest kinds by the word a scope uses and the ``type`` of the guest index.
GUEST_TYPES = {"vm": "qemu", "ct": "lxc"}


@dataclass(frozen=True)
class Scope:
    """One parsed scope: ``kind`` (``cluster``, ``node``, ``vm``, ``ct``) and its ``node`` or ``vmid``."""

    kind: str
    node: str = ""
    vmid: int = 0

    def __str__(self) -> str:
        if self.kind == "cluster":
            return "cluster"
        if self.kind == "node":
            return f"node/{self.node}"
        return f"{self.kind}/{self.vmid}"

    @property
    def guest(self) -> bool:
        return self.kind in GUEST_TYPES

    @property
    def label(self) -> str:
        """How a sentence names it: ``cluster``, ``node pve1``, ``VM 510``, ``CT 120``."""
        if self.kind == "cluster":
            return "cluster"
        if self.kind == "node":
            return f"node {self.node}"
        return f"{self.kind.upper()} {self.vmid}"


def parse(value: object, allowed: tuple[str, ...] = ("cluster", "node", "vm", "ct")) -> Scope:
    """``cluster``, ``node/<node>``, ``vm/<vmid>`` or ``ct/<vmid>`` → Scope, of a kind in ``allowed``.

    Raises DeclarationError naming the scope and the spellings taken."""
    taken = ", ".join(f"{kind}/<{'node' if kind == 'node' else 'vmid'}>" if kind != "cluster" else kind
                      for kind in allowed)  # fmt: skip
    if not isinstance(value, str):
        raise DeclarationError(f"scope: expected one of {taken} (text), got {value!r}")
    kind, slash, rest = value.partition("/")
    if kind not in allowed:
        raise DeclarationError(f"scope: {value!r}: expected one of {taken}")
    if kind == "cluster":
        if slash:
            raise DeclarationError(f"scope: {value!r}: the cluster scope is spelled cluster")
        return Scope("cluster")
    if kind == "node":
        if not _NODE.match(rest):
            raise DeclarationError(f"scope: {value!r}: {rest!r} is not a node name")
        return Scope("node", node=rest)
    if not _VMID.match(rest):
        raise DeclarationError(f"scope: {value!r}: {rest!r} is not a vmid (100 to 999999999)")
    return Scope(kind, vmid=int(rest))


@dataclass(frozen=True)
class Firewall:
    """Where a scope's firewall is: ``path``, its API path (``cluster/firewall``, ``nodes/pve1/firewall``,
    ``nodes/pve1/qemu/510/firewall``); ``planned_on``, for a guest the cluster does not hold yet but an
    earlier state of this plan's run creates (``run_guests``), the node its declaration names. Such a
    firewall is ``empty``: ``path`` is on that node, nothing lives there yet, nothing is read there and
    every object is planned as a create. For a guest the run clones, ``copied_from`` is the template's
    vmid and ``path`` the template's firewall, which PVE copies to the clone (``clone_vmfw_conf``): the
    plan reads it as the clone's. ``restored_from``: the archive of a guest the run restores."""

    path: str
    planned_on: str = ""
    copied_from: int = 0
    restored_from: str = ""

    @property
    def empty(self) -> bool:
        """Planned on a guest the run creates, with nothing there (not a clone's copy)."""
        return bool(self.planned_on) and not self.copied_from

    def note(self, scope: Scope) -> str:
        """What a plan says of a firewall planned on a guest the run creates first; '' otherwise."""
        if not self.planned_on:
            return ""
        if self.copied_from:
            template = f"VM {self.copied_from}"
            return (
                f"{scope.label} is cloned from {template} earlier in this run (on {self.planned_on}): PVE "
                f"copies {template}'s firewall to the clone (qemu-server clone_vm: clone_vmfw_conf), so its "
                f"firewall is planned from {template}'s as it stands"
            )
        said = (
            f"{scope.label} is created earlier in this run (on {self.planned_on}): its firewall is planned "
            "from nothing, as PVE holds none for a new guest"
        )
        if self.restored_from:
            said += (
                f"; restored from {self.restored_from}, it also gets the firewall configuration that archive "
                "holds, if any (qemu-server restore_vma_archive, pve-container "
                "restore_configuration_from_etc_vzdump), which no API call shows before the restore: this "
                "plan assumes none, and the apply judges the firewall as the restore leaves it"
            )
        return said


@dataclass(frozen=True)
class Planned:
    """A guest a ``present`` state of this plan's run declares: its ``node``, the template it is cloned
    from (``clone``, a VM's), the archive it is restored from (``restore``)."""

    node: str
    clone: int = 0
    restore: str = ""


def run_guests(ctx: PveContext) -> dict[str, Planned]:
    """``{scope: Planned}`` (``ct/150``: on ``pve1``) of the guests the ``proxmox_lxc``/``proxmox_qemu``
    ``present`` states of this plan's run declare on this target (the run kept by
    ``run.config.enter_run``), each on the node its declaration names, with the template its ``clone``
    names and the archive its ``restore`` names; empty outside a state run and in an apply
    (``access.privileges.planning``: there a guest's own state has run before its firewall, the formula
    ordering it so with a ``require``, and the cluster lists the guest or its state failed)."""
    from salt_proxmox.access.privileges import planning
    from salt_proxmox.run.memo import current_run

    run = current_run(ctx.memo)
    if run is None or not planning(ctx):
        return {}
    found = {}
    for kind, type_ in GUEST_TYPES.items():
        for chunk in run.declared(f"proxmox_{type_}", ctx.target.name, ctx.target.name):
            vmid, node = chunk.args.get("vmid"), chunk.args.get("node")
            if chunk.fun == "present" and isinstance(vmid, int | str) and isinstance(node, str):
                clone, restore = chunk.args.get("clone"), chunk.args.get("restore")
                template = int(clone) if isinstance(clone, int | str) and str(clone).isdigit() else 0
                archive = restore if isinstance(restore, str) else ""
                found.setdefault(f"{kind}/{vmid}", Planned(node, template, archive))
    return found


def _other(scope: Scope) -> str:
    return f"{'ct' if scope.kind == 'vm' else 'vm'}/{scope.vmid}"


def locate(ctx: PveContext, scope: Scope) -> Firewall | None:
    """Where ``scope``'s firewall is, or None for a guest that the cluster's guest index does not list
    and this plan's run does not create (``run_guests``). A guest's node is read from the run's guest
    index (``guest.absence.hinted_guest``), and, when that does not list it and no state of the plan
    creates it, from the index read now (a hint never proves absence: a guest created earlier in an
    apply's run is listed there).

    Raises Refused for a vmid the index lists as the other kind of guest, and what the index reads
    raise (PveError, PveMalformed, PveUnreachable)."""
    from salt_proxmox.guest.absence import hinted_guest, indexed_guest

    if scope.kind == "cluster":
        return Firewall("cluster/firewall")
    if scope.kind == "node":
        return Firewall(f"nodes/{api_path(scope.node)}/firewall")
    credential = ctx.broker.read()
    row = hinted_guest(ctx, scope.vmid, credential)
    if row is None:
        declared = run_guests(ctx)
        planned = declared.get(str(scope))
        if planned is not None and planned.clone:
            return _clone_firewall(ctx, scope, planned, credential)
        if planned is not None:
            path = _guest_path(planned.node, GUEST_TYPES[scope.kind], scope.vmid)
            return Firewall(path, planned.node, restored_from=planned.restore)
        if _other(scope) in declared:
            row = {"type": GUEST_TYPES[_other(scope).partition("/")[0]]}
        else:
            row = indexed_guest(ctx, scope.vmid, credential)
    if row is None:
        return None
    if row.get("type") != GUEST_TYPES[scope.kind]:
        raise Refused(
            f"{scope}: guest {scope.vmid} is a {row.get('type')} guest: declare it as {_other(scope)}"
        )
    return Firewall(_guest_path(str(row["node"]), str(row["type"]), scope.vmid))


def _clone_firewall(ctx: PveContext, scope: Scope, planned: Planned, credential) -> Firewall:
    """The firewall a guest the run clones will have: its template's (``clone_vm``:
    ``clone_vmfw_conf``), read where the guest index lists the template. Raises Refused when the index
    lists no such guest (the guest's own state refuses the clone), and what the index read raises."""
    from salt_proxmox.guest.absence import hinted_guest

    row = hinted_guest(ctx, planned.clone, credential)
    if row is None:
        raise Refused(
            f"{scope}: this run clones {scope.label} from VM {planned.clone}, which the cluster's guest "
            "index does not list (or the read credential may not audit it: VM.Audit), so the firewall PVE "
            "copies to the clone cannot be read; nothing was written."
        )
    path = _guest_path(str(row["node"]), str(row["type"]), planned.clone)
    return Firewall(path, planned.node, copied_from=planned.clone)


def _guest_path(node: str, type_: str, vmid: object) -> str:
    """``nodes/<node>/<qemu|lxc>/<vmid>/firewall`` (pve-firewall ``API2/Firewall/VM.pm``)."""
    return f"nodes/{api_path(node)}/{type_}/{vmid}/firewall"


def missing(scope: Scope) -> str:
    """The refusal of a guest scope ``locate`` finds no firewall for."""
    return (
        f"{scope}: the cluster's guest index lists no guest {scope.vmid} (or the read credential may not "
        "audit it: VM.Audit), and no state of this run creates it, so its firewall cannot be read. Declare "
        "the guest (the formula orders its firewall after it), or grant the read token VM.Audit on it; "
        "nothing was written."
    )


def base(ctx: PveContext, scope: Scope) -> Firewall:
    """``locate``, for a family that needs the firewall to be somewhere. Raises Refused (``missing``) for a
    guest it finds nowhere, and what ``locate`` raises."""
    found = locate(ctx, scope)
    if found is None:
        raise Refused(missing(scope))
    return found


def unborn(ctx: PveContext, scope: Scope) -> str | None:
    """``ObjectSpec.unborn`` of a firewall object at ``scope``: the plan note when its guest is one this
    plan's run creates first with nothing in its firewall (``Firewall.empty``, ``Firewall.note``), else
    None. Raises what ``locate`` raises."""
    if not scope.guest:
        return None
    found = locate(ctx, scope)
    return found.note(scope) if found is not None and found.empty else None


def copied(ctx: PveContext, scope: Scope) -> str | None:
    """``ObjectSpec.copied`` of a firewall object at ``scope``: the plan note when its guest is one this
    plan's run clones, whose firewall the plan reads at the template's (``Firewall.copied_from``), else
    None. Raises what ``locate`` raises."""
    if not scope.guest:
        return None
    found = locate(ctx, scope)
    return found.note(scope) if found is not None and found.copied_from else None


def guest_scope(row: Mapping[str, object]) -> str | None:
    """``proxmox.export``: the scope (``vm/<vmid>``, ``ct/<vmid>``) of a guest index row (``GET
    /cluster/resources?type=vm``), or None for another row and for a template (nobody adopts one:
    ``export.guests``)."""
    kind = {qemu_or_lxc: kind for kind, qemu_or_lxc in GUEST_TYPES.items()}.get(str(row.get("type")))
    if kind is None or row.get("template") in (1, "1", True) or row.get("vmid") is None:
        return None
    return f"{kind}/{row['vmid']}"


def guest_firewalls(ctx: PveContext) -> list[tuple[str, str]]:
    """``[(scope, firewall path)]`` of every guest the cluster's guest index lists (read now with the
    read credential; ``guest_scope``): where an export reads a guest's own firewall objects. Raises what
    the index read raises (PveError, PveMalformed, PveUnreachable)."""
    from salt_proxmox.guest.absence import index_rows

    found = []
    for row in index_rows(ctx):
        name = guest_scope(row)
        if name is not None:
            found.append((name, _guest_path(str(row["node"]), str(row["type"]), row["vmid"])))
    return found


def export_places(ctx: PveContext) -> dict[str, dict[str, object]]:
    """``proxmox.export``'s filters (``node=``, ``vmid=``, ``pool=``): ``{scope: {vmid, node[, pool]}}`` of
    every guest scope (``vm/<vmid>``, ``ct/<vmid>``) the cluster's guest index lists, read now (one ``GET
    cluster/resources?type=vm``, as ``guest_firewalls`` reads it). Raises what the index read raises
    (PveError, PveMalformed, PveUnreachable)."""
    from salt_proxmox.guest.absence import index_rows

    places = {}
    for row in index_rows(ctx):
        name = guest_scope(row)
        if name is not None:
            place = {"vmid": int(row["vmid"]), "node": str(row["node"]), "pool": row.get("pool")}
            places[name] = {key: value for key, value in place.items() if value is not None}
    return places


def export_place(
    places: Mapping[str, Mapping[str, object]], names: Mapping[str, object]
) -> dict[str, object]:
    """Where the scope a firewall object lives at stands, for ``proxmox.export``'s filters: a guest's
    (``vm/<vmid>``, ``ct/<vmid>``) its ``vmid``, ``node`` and ``pool`` (``places``: ``export_places``); a
    node's (``node/<node>``) its ``node``; the cluster's, a security group's and an object of the cluster
    (no ``scope``) nothing: ``{}``. The scope is ``names``' ``scope`` (a guest's IP set or alias) or its
    ``name`` (options, a rule list); an IP set's, alias's or group's own name holds no ``/``."""
    text = names.get("scope", names.get("name"))
    if not isinstance(text, str) or "/" not in text:
        return {}
    kind, _, rest = text.partition("/")
    if kind == "node":
        return {"node": rest}
    return dict(places.get(text, {}))


def export_listings(ctx: PveContext, collection: str) -> list[tuple[Call, Mapping[str, object]]]:
    """``ObjectSpec.export_listings`` of a kind kept at the cluster's and at each guest's scope
    (``collection``: ``ipset``, ``aliases``): the cluster's listing, then each guest's
    (``guest_firewalls``) with its ``scope``. Raises what the index read raises."""
    from salt_proxmox.simple.spec import Call

    own = [(Call("GET", f"{path}/{collection}"), {"scope": name}) for name, path in guest_firewalls(ctx)]
    return [(Call("GET", f"cluster/firewall/{collection}"), {}), *own]
