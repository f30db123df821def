"""HA groups (``proxmox_ha_group``, PVE 8 only): the nodes an HA resource may run on, with priorities.

Source: pve-ha-manager ``src/PVE/API2/HA/Groups.pm`` (``read``, ``create``, ``update``, ``delete``)
and ``src/PVE/HA/Groups.pm`` (the options): ``nodes`` (``<node>[:<priority>]``, required; their
order carries nothing), ``restricted`` and ``nofailback`` (booleans, default 0), ``comment``.

- Read ``GET /cluster/ha/groups/{group}``; absence is exactly HTTP 500 ``no such ha group
  '<group>'``. Create ``POST /cluster/ha/groups``; update ``PUT /cluster/ha/groups/{group}`` with
  the digest read and ``delete`` for a cleared key; delete ``DELETE /cluster/ha/groups/{group}``
  (PVE refuses a group a resource names: ``ha group is used by service '<sid>'``).
- ``nodes`` naming a node that is not a cluster member is stored by PVE 8 as given; the plan notes
  it (``side_effects``).
- PVE 9 migrated groups to rules: every group method dies there (``common``), so a group on 9 is
  refused at plan naming the rules (``ObjectSpec.for_cluster``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from salt_proxmox.errors import DeclarationError
from salt_proxmox.ha.common import (
    COMMENT,
    CONFIG_ID,
    NODES,
    form_of,
    identify_by_id,
    parse_section,
    release_listing,
    release_refusal,
    section_calls,
    section_path,
    unknown_nodes,
)
from salt_proxmox.pve.constraints import Endpoint, Rule
from salt_proxmox.simple.fields import Field, canonical_values, deleted_keys
from salt_proxmox.simple.spec import Call, Declared, ObjectSpec, exact_message, export_by

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.run.context import PveContext

FAMILY = "ha_group"
FIELDS: dict[str, Field] = {
    "nodes": NODES,
    "restricted": Field("flag"),
    "nofailback": Field("flag"),
    "comment": COMMENT,
}
_RULES = {"group": Rule(check=lambda text: None if CONFIG_ID.match(text) else "not an HA group id")}
_RULES.update({key: field.rule() for key, field in FIELDS.items()})
CREATE = Endpoint("POST /cluster/ha/groups", ("group", "nodes"), _RULES.get)
UPDATE = Endpoint("PUT /cluster/ha/groups/{group}", (), _RULES.get)


identify = identify_by_id("HA group", FIELDS)


def declare(state_id: str, target: str, name: object = None, adopt: object = False, **declared) -> Declared:
    """One group: ``FIELDS`` keys; ``nodes`` is required. Raises DeclarationError naming each bad key."""
    probe = identify(state_id, target, name)
    values = canonical_values(FIELDS, declared)
    if not values.get("nodes"):
        raise DeclarationError("nodes: an HA group needs its nodes (<node>[:<priority>], ...)")
    return probe.declaring(values, adopt)


parse = parse_section(FIELDS, "group")


def _update(decl: Declared, live: Mapping[str, object]) -> Call | None:
    form = form_of(FIELDS, {key: value for key, value in decl.values.items() if live.get(key) != value})
    gone = [key for key in deleted_keys(decl.values, live) if key != "nodes"]
    if gone:
        form["delete"] = ",".join(gone)
    return Call("PUT", section_path("groups", decl), form=form)


def side_effects(ctx: PveContext, decl: Declared, action: str) -> list[str]:
    """The plan's note of a group naming nodes that are not cluster members (``common.unknown_nodes``):
    PVE 8 stores them (``HA/Groups.pm`` ``decode_value`` checks only the ``<node>[:<pri>]`` form,
    ``pve_verify_ha_node``; ``API2/HA/Groups.pm`` ``create``/``update`` check no membership, unlike
    PVE 9's rules), and the HA manager places no resource on a node that is not online in the cluster
    (``Manager.pm`` ``select_service_node`` reads only the online nodes)."""
    if action not in ("create", "update"):
        return []
    unknown = unknown_nodes(ctx, str(decl.values.get("nodes") or ""))
    if not unknown:
        return []
    return [
        f"{decl.label}: {', '.join(unknown)} is not a node of the cluster (GET /nodes); PVE 8 stores it as "
        "given (pve-ha-manager HA/Groups.pm checks only its form), and HA places no resource there until "
        "such a node joins"
    ]


def for_cluster(ctx: PveContext, decl: Declared) -> ObjectSpec:
    """``SPEC`` on PVE 8; raises Refused on 9 (``common.release_refusal``)."""
    release_refusal(ctx, decl, 8)
    return SPEC


SPEC = ObjectSpec(
    family=FAMILY,
    noun="HA group",
    declare=declare,
    identify=identify,
    absence="HTTP 500 \"no such ha group '<group>'\" (pve-ha-manager API2/HA/Groups.pm read)",
    is_absent=exact_message(500, "no such ha group '{name}'"),
    parse=parse,
    create_endpoint=CREATE,
    update=_update,
    update_endpoint=UPDATE,
    **section_calls("groups", "group", FIELDS),
    for_cluster=for_cluster,
    side_effects=side_effects,
    # GET /cluster/ha/groups (pve-ha-manager API2/HA/Groups.pm index) names each by ``group``.
    export_names=export_by("group"),
    export_listings=lambda ctx: release_listing(ctx, "groups", 8),
)
