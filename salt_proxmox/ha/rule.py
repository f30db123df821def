"""HA rules (``proxmox_ha_rule``, PVE 9 only): node-affinity and resource-affinity rules.

Source: pve-ha-manager ``src/PVE/API2/HA/Rules.pm`` (``read_rule``, ``create_rule``,
``update_rule``, ``delete_rule``), ``src/PVE/HA/Rules.pm`` (``resources``, ``disable``,
``comment``), ``src/PVE/HA/Rules/NodeAffinity.pm`` (``nodes`` ``<node>[:<priority>]``, ``strict``
default 0) and ``src/PVE/HA/Rules/ResourceAffinity.pm`` (``affinity`` ``positive``/``negative``).

- ``type`` is the rule's section type: fixed once made (``update_rule`` keeps the stored type).
  A node-affinity rule needs ``nodes``; a resource-affinity rule needs ``affinity`` and takes no
  ``nodes``/``strict``. ``resources`` (``vm:<vmid>``/``ct:<vmid>``, their order carries nothing)
  must be HA resources already (``$assert_valid_resources_param``: ``cannot use unmanaged
  resource(s)``): the formula makes a rule require the resources it names, and the plan refuses
  one neither configured nor declared in the run. ``nodes`` must be cluster members
  (``$assert_valid_nodes_param``: ``cannot use non-existent node(s)``), refused at plan too
  (``refusals``).
- Read ``GET /cluster/ha/rules/{rule}``; absence is exactly HTTP 500 ``no such ha rule '<rule>'``.
  Create ``POST /cluster/ha/rules``; update ``PUT /cluster/ha/rules/{rule}`` with ``type``, the
  digest read and ``delete`` for a cleared key; delete ``DELETE /cluster/ha/rules/{rule}``.
- PVE 8 has no rules: a rule on 8 is refused at plan naming the groups (``ObjectSpec.for_cluster``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from salt_proxmox.errors import DeclarationError
from salt_proxmox.guest import ha_owned
from salt_proxmox.ha.common import (
    COMMENT,
    CONFIG_ID,
    NODES,
    check_sids,
    configured_sids,
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
from salt_proxmox.pve.listing import get_rows
from salt_proxmox.simple.fields import Field, canonical_values, deleted_keys
from salt_proxmox.simple.spec import Call, Declared, ObjectSpec, exact_message, export_by

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.run.context import PveContext

FAMILY = "ha_rule"
TYPES = ("node-affinity", "resource-affinity")
FIELDS: dict[str, Field] = {
    "type": Field("choice", choices=TYPES),
    "resources": Field("set", separator=",", check=check_sids),
    "nodes": NODES,
    "strict": Field("flag"),
    "affinity": Field("choice", choices=("positive", "negative")),
    "disable": Field("flag"),
    "comment": COMMENT,
}
#: The keys of each type (``Rules/NodeAffinity.pm``, ``Rules/ResourceAffinity.pm`` ``options``).
OF_TYPE = {
    "node-affinity": frozenset({"type", "resources", "nodes", "strict", "disable", "comment"}),
    "resource-affinity": frozenset({"type", "resources", "affinity", "disable", "comment"}),
}
_RULES = {"rule": Rule(check=lambda text: None if CONFIG_ID.match(text) else "not an HA rule id")}
_RULES.update({key: field.rule() for key, field in FIELDS.items()})
CREATE = Endpoint("POST /cluster/ha/rules", ("rule", "type", "resources"), _RULES.get)
UPDATE = Endpoint("PUT /cluster/ha/rules/{rule}", ("type",), _RULES.get)


identify = identify_by_id("HA rule", FIELDS)


def declare(state_id: str, target: str, name: object = None, adopt: object = False, **declared) -> Declared:
    """One rule: ``type`` and ``resources`` required, the keys of its type only, a node-affinity
    rule's ``nodes``, a resource-affinity rule's ``affinity``. Raises DeclarationError."""
    probe = identify(state_id, target, name)
    values = canonical_values(FIELDS, declared)
    kind = values.get("type")
    if kind not in TYPES:
        raise DeclarationError(f"type: an HA rule is {' or '.join(TYPES)}")
    problems = [
        f"{key}: not a key of a {kind} rule ({', '.join(sorted(OF_TYPE[kind]))})"
        for key in sorted(values)
        if key not in OF_TYPE[kind] and values[key] not in ("", 0)
    ]
    if not values.get("resources"):
        problems.append("resources: an HA rule names its HA resources (vm:<vmid>, ct:<vmid>)")
    if kind == "node-affinity" and not values.get("nodes"):
        problems.append("nodes: a node-affinity rule names its nodes (<node>[:<priority>], ...)")
    if kind == "resource-affinity" and not values.get("affinity"):
        problems.append("affinity: a resource-affinity rule is positive or negative")
    if problems:
        raise DeclarationError(problems)
    return probe.declaring({k: v for k, v in values.items() if k in OF_TYPE[kind]}, adopt)


parse = parse_section(FIELDS, "rule")


def _update(decl: Declared, live: Mapping[str, object]) -> Call | None:
    if live.get("type") != decl.values["type"]:
        return None
    form = form_of(FIELDS, {k: v for k, v in decl.values.items() if k != "type" and live.get(k) != v})
    gone = [key for key in deleted_keys(decl.values, live) if key not in ("type", "resources", "nodes")]
    if gone:
        form["delete"] = ",".join(gone)
    return Call(
        "PUT",
        section_path("rules", decl),
        form={"type": decl.values["type"], **form},
    )


def refusals(ctx: PveContext, decl: Declared, action: str, live: Mapping[str, object] | None) -> list[str]:
    """PVE's refusals of a rule's create or update (pve-ha-manager ``API2/HA/Rules.pm``
    ``create_rule``/``update_rule``), judged with the read credential on what the write sends (an
    update sends ``resources`` and ``nodes`` only when they change, ``_update``):

    - its ``type`` cannot change (``update_rule`` keeps the stored section type);
    - ``$assert_valid_resources_param``: every resource must be configured (``HA/Config.pm``
      ``service_is_configured``, ``ignored`` included), ``cannot use unmanaged resource(s) <sids>.``;
      a resource this run declares present is made first (the formula makes the rule require it);
    - ``$assert_valid_nodes_param``: every node must be a cluster member
      (``PVE::Cluster::check_node_exists``), ``cannot use non-existent node(s) <nodes>.``;
    - ``$assert_feasibility``: a resource in one enabled node-affinity rule only
      (``_shared_resources``).

    Raises what ``common.configured_sids`` and ``common.unknown_nodes`` raise."""
    if action == "update" and live is not None and live.get("type") != decl.values.get("type"):
        return [
            f"{decl.label} is a {live.get('type')} rule; its type cannot change (pve-ha-manager "
            "API2/HA/Rules.pm update_rule keeps the stored type). Declare a new rule id instead."
        ]
    if action not in ("create", "update"):
        return []

    def sent(key: str) -> str:
        value = str(decl.values.get(key) or "")
        return value if action == "create" or (live or {}).get(key) != decl.values.get(key) else ""

    found = []
    resources = [sid for sid in sent("resources").split(",") if sid]
    if resources:
        configured = configured_sids(ctx)
        unmanaged = [
            sid for sid in resources if sid not in configured and ha_owned.declared_state(ctx, sid) is None
        ]
        if unmanaged:
            found.append(
                f"{decl.label}: {', '.join(unmanaged)} is no HA resource and no state of this run declares "
                f"one, and PVE refuses the rule (`cannot use unmanaged resource(s) {', '.join(unmanaged)}.`, "
                "pve-ha-manager API2/HA/Rules.pm $assert_valid_resources_param). Declare the resource under "
                "proxmox:ha_resources, or leave it out of the rule."
            )
    found += _shared_resources(ctx, decl)
    unknown = unknown_nodes(ctx, sent("nodes")) if sent("nodes") else []
    if unknown:
        found.append(
            f"{decl.label}: {', '.join(unknown)} is not a node of the cluster (GET /nodes), and PVE refuses "
            f"the rule (`cannot use non-existent node(s) {', '.join(unknown)}.`, pve-ha-manager "
            "API2/HA/Rules.pm $assert_valid_nodes_param, PVE::Cluster::check_node_exists). Name the "
            "cluster's nodes (`pvecm nodes`)."
        )
    return found


def _shared_resources(ctx: PveContext, decl: Declared) -> list[str]:
    """``$assert_feasibility`` on a node-affinity rule that is not disabled: no resource in two such
    rules (``Rules/NodeAffinity.pm`` ``check_single_resource_reference``, over the enabled rules:
    ``resource '<sid>' is already used in another node affinity rule``, HTTP 400 ``Rule '<rule>' is
    invalid.``), judged on every create and update against the other rules ``GET /cluster/ha/rules``
    lists (read credential)."""
    if decl.values.get("type") != "node-affinity" or decl.values.get("disable") == 1:
        return []
    mine = set(str(decl.values.get("resources") or "").split(","))
    rows = get_rows(ctx.client, "cluster/ha/rules", ctx.broker.read(), what="HA rules")
    taken = {
        sid: str(row.get("rule"))
        for row in rows
        if row.get("type") == "node-affinity"
        and str(row.get("rule")) != decl.names["name"]
        and str(row.get("disable") or "0") in ("0", "")
        for sid in str(row.get("resources") or "").split(",")
        if sid in mine
    }
    return [
        f"{decl.label}: {sid} is in node-affinity rule {other} already, and PVE refuses the rule (`Rule "
        f"'{decl.names['name']}' is invalid.`: `resource '{sid}' is already used in another node affinity "
        "rule`, pve-ha-manager HA/Rules/NodeAffinity.pm check_single_resource_reference). Name each "
        f"resource in one node-affinity rule: change {other} or this one, or disable one."
        for sid, other in sorted(taken.items())
    ]


def for_cluster(ctx: PveContext, decl: Declared) -> ObjectSpec:
    """``SPEC`` on PVE 9; raises Refused on 8 (``common.release_refusal``)."""
    release_refusal(ctx, decl, 9)
    return SPEC


SPEC = ObjectSpec(
    family=FAMILY,
    noun="HA rule",
    declare=declare,
    identify=identify,
    absence="HTTP 500 \"no such ha rule '<rule>'\" (pve-ha-manager API2/HA/Rules.pm read_rule)",
    is_absent=exact_message(500, "no such ha rule '{name}'"),
    parse=parse,
    create_endpoint=CREATE,
    update=_update,
    update_endpoint=UPDATE,
    **section_calls("rules", "rule", FIELDS),
    refusals=refusals,
    for_cluster=for_cluster,
    # GET /cluster/ha/rules (pve-ha-manager API2/HA/Rules.pm index) names each by ``rule``.
    export_names=export_by("rule"),
    export_listings=lambda ctx: release_listing(ctx, "rules", 9),
)
