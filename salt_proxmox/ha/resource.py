"""HA resources (``proxmox_ha_resource``): a guest the HA manager keeps in a requested state.

Source: pve-ha-manager ``src/PVE/API2/HA/Resources.pm`` (``read``, ``create``, ``update``,
``delete``), ``src/PVE/HA/Resources.pm`` (the options and their defaults), ``src/PVE/HA/Config.pm``.

- Identity: the ``sid``, ``vm:<vmid>`` or ``ct:<vmid>`` (the state's name).
- Keys: ``ha_state``, PVE's ``state`` (Salt keeps ``state`` in every state chunk for the state
  module's name, so it cannot be a state argument): ``started`` (default), ``stopped``,
  ``disabled``, ``ignored`` (``enabled`` is PVE's alias of ``started``); ``max_restart`` and
  ``max_relocate`` (0..10, default 1), ``comment``, and on PVE 8 ``group`` (PVE 9 refuses it:
  ``for_cluster``).
  PVE stores only what was given, so a key the read does not show is its default.
- Read ``GET /cluster/ha/resources/{sid}``; absence is exactly HTTP 500 ``no such resource
  '<sid>'`` (``$api_copy_config``). Create ``POST /cluster/ha/resources``; update ``PUT
  /cluster/ha/resources/{sid}`` with the digest read and ``delete`` for a cleared key; delete
  ``DELETE /cluster/ha/resources/{sid}`` (on PVE 9 ``purge`` defaults to 1: the resource is also
  taken out of the HA rules naming it, said in the plan).
- A resource in state ``ignored`` does not manage its guest (``HA/Config.pm``
  ``$service_check_ha_state``: "ignored service behave as if they were not managed by HA").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from salt_proxmox.errors import DeclarationError, Refused, shown
from salt_proxmox.guest import ha_owned
from salt_proxmox.guest.absence import indexed_guest
from salt_proxmox.guest.refusals import ha_managed, read_current
from salt_proxmox.ha.common import (
    COMMENT,
    CONFIG_ID,
    SID,
    form_of,
    release_listing,
    section_calls,
    section_path,
)
from salt_proxmox.pve.constraints import Endpoint, Rule
from salt_proxmox.pve.facts import release
from salt_proxmox.pve.listing import get_rows
from salt_proxmox.simple.fields import Field, canonical_values, deleted_keys, live_values
from salt_proxmox.simple.spec import Call, Declared, ObjectSpec, exact_message, export_by, listed_row

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.run.context import PveContext

FAMILY = "ha_resource"
#: ``HA/Resources.pm`` ``state``: ``enabled`` is an alias of ``started``.
STATES = ("started", "stopped", "disabled", "ignored")


def _state_choice(text: str) -> str:
    return "started" if text == "enabled" else text


FIELDS: dict[str, Field] = {
    "ha_state": Field("choice", choices=(*STATES, "enabled"), normal=_state_choice),
    "max_restart": Field("integer", minimum=0, maximum=10),
    "max_relocate": Field("integer", minimum=0, maximum=10),
    "comment": COMMENT,
    "group": Field("text", check=lambda text: None if CONFIG_ID.match(text) else "not an HA group id"),
}
#: What PVE makes of a key not given (``HA/Resources.pm`` ``default``).
DEFAULTS = {"ha_state": "started", "max_restart": 1, "max_relocate": 1}
#: The declared key PVE names otherwise: ``ha_state`` is PVE's ``state``.
WIRE = {"ha_state": "state"}

_RULES = {"sid": Rule(check=lambda text: None if SID.match(text) else "not vm:<vmid> or ct:<vmid>")}
_RULES.update({WIRE.get(key, key): field.rule() for key, field in FIELDS.items()})
CREATE = Endpoint("POST /cluster/ha/resources", ("sid",), _RULES.get)
UPDATE = Endpoint("PUT /cluster/ha/resources/{sid}", (), _RULES.get)


def identify(state_id: str, target: str, name: object = None, **extra: object) -> Declared:
    """A resource by its sid (``name``: ``vm:<vmid>``/``ct:<vmid>``). Raises DeclarationError."""
    if extra:
        raise DeclarationError(
            f"unknown key(s) {', '.join(sorted(extra))}: an HA resource has name, {', '.join(FIELDS)}"
        )
    if not isinstance(name, str) or not SID.match(name):
        raise DeclarationError(
            f"name: {shown(name)} is not an HA resource id: vm:<vmid> for a VM, ct:<vmid> for a container"
        )
    kind = "VM" if name.startswith("vm:") else "CT"
    return Declared(
        state_id, target, identity=name, label=f"HA resource {name} ({kind} {name[3:]})", names={"name": name}
    )


def declare(state_id: str, target: str, name: object = None, adopt: object = False, **declared) -> Declared:
    """One resource: ``FIELDS`` keys only, those declared (None or ``''``: back to PVE's default).
    Raises DeclarationError naming each bad key."""
    probe = identify(state_id, target, name)
    if "state" in declared:
        raise DeclarationError(
            "state: Salt keeps state for the state module's name, so an HA resource's requested state is "
            "declared as ha_state"
        )
    values = canonical_values(FIELDS, declared)
    for key, default in DEFAULTS.items():
        if values.get(key) == "":
            values[key] = default
    return probe.declaring(values, adopt)


def _live(data: object) -> dict:
    if not isinstance(data, Mapping):
        raise ValueError("expected the resource as an object")
    given = {
        ("ha_state" if key == "state" else key): value for key, value in data.items() if value is not None
    }
    values = live_values(FIELDS, {**DEFAULTS, **given})
    values["digest"] = str(data.get("digest") or "")
    return values


def parse(data: object, decl: Declared) -> dict:
    """``GET /cluster/ha/resources/{sid}`` → the canonical values, defaults filled in, and the
    ``digest``. Raises ValueError for another shape."""
    if isinstance(data, Mapping) and data.get("sid") not in (None, decl.names["name"]):
        raise ValueError(f"the answer is about {data.get('sid')!r}, not {decl.names['name']}")
    return _live(data)


def listed(rows: object, decl: Declared) -> dict | None:
    """``GET /cluster/ha/resources`` (every resource, behind Sys.Audit on ``/``) → this one, or None."""
    row = listed_row(rows, "sid", lambda sid: sid == decl.names["name"])
    return None if row is None else _live(row)


def _update(decl: Declared, live: Mapping[str, object]) -> Call | None:
    form = form_of(FIELDS, {key: value for key, value in decl.values.items() if live.get(key) != value}, WIRE)
    gone = deleted_keys(decl.values, live, skip=tuple(DEFAULTS))
    if gone:
        form["delete"] = ",".join(gone)
    return Call("PUT", section_path("resources", decl), form=form)


def for_cluster(ctx: PveContext, decl: Declared) -> ObjectSpec:
    """``SPEC``; Raises Refused for a ``group`` on PVE 9 (``Resources.pm`` ``create``/``update``:
    ``invalid parameter 'group': ha groups have been migrated to rules``)."""
    if decl.values.get("group") and release(ctx).major >= 9:
        raise Refused(
            f"{decl.label}: group {decl.values['group']} is refused by PVE {release(ctx).release} "
            "(pve-ha-manager API2/HA/Resources.pm: `invalid parameter 'group': ha groups have been migrated "
            "to rules`). Declare a node-affinity rule naming this resource under proxmox:ha_rules instead."
        )
    return SPEC


def _sent(decl: Declared, key: str, action: str, live: Mapping[str, object] | None) -> object:
    """The value of ``key`` a create or an update (``_update``: only what differs) sends, or None."""
    value = decl.values.get(key)
    if value in (None, "") or (action == "update" and (live or {}).get(key) == value):
        return None
    return value


def _unknown_group(ctx: PveContext, decl: Declared, group: object) -> bool:
    """Whether HA group ``group`` neither exists (``GET /cluster/ha/groups``, read credential) nor is
    declared present in the run (``guest.ha_owned.group_declared``: the resource requires it)."""
    if not group or ha_owned.group_declared(ctx, str(group)):
        return False
    rows = get_rows(ctx.client, "cluster/ha/groups", ctx.broker.read(), what="HA groups")
    return str(group) not in {str(row.get("group")) for row in rows}


def _update_refusals(ctx: PveContext, decl: Declared, live: Mapping[str, object] | None) -> list[str]:
    """``Resources.pm`` ``update``: a ``group`` sent must exist (``HA group '<group>' does not
    exist``), and ``check_service_state`` refuses every update of a service the HA manager holds in
    ``error`` (``get_service_status``, the guest's ``status/current`` ``ha``) unless it sends state
    ``disabled``: ``service '<sid>' in error state, must be disabled and fixed first``."""
    sid, found = decl.names["name"], []
    group = _sent(decl, "group", "update", live)
    if _unknown_group(ctx, decl, group):
        found.append(
            f"{decl.label}: HA group {group} does not exist and no state of this run declares it, and PVE "
            f"refuses the update (`HA group '{group}' does not exist`, pve-ha-manager API2/HA/Resources.pm "
            "update). Declare the group under proxmox:ha_groups, or name one that exists."
        )
    if _sent(decl, "ha_state", "update", live) != "disabled":
        row = indexed_guest(ctx, int(sid[3:]))
        kind = "lxc" if sid.startswith("ct:") else "qemu"
        if row is not None and row.get("type") == kind:
            held = ha_managed(read_current(ctx, kind, str(row["node"]), int(sid[3:])))
            if held == "error":
                found.append(
                    f"{decl.label}: the HA manager holds it in error state, and PVE refuses any change but "
                    f"to disabled (`service '{sid}' in error state, must be disabled and fixed first`, "
                    "pve-ha-manager API2/HA/Resources.pm check_service_state). Declare ha_state: disabled "
                    f"and apply (or `ha-manager set {sid} --state disabled`), fix what failed, then declare "
                    "the state you want."
                )
    return found


def refusals(ctx: PveContext, decl: Declared, action: str, live: Mapping[str, object] | None) -> list[str]:
    """PVE's refusals of the write, predicted with the read credential: an update as
    ``_update_refusals`` says; a create for a guest the cluster does not hold and this run does not
    declare (``Resources/PVEVM.pm``/``PVECT.pm`` ``exists``: ``resource '<sid>' does not exist in
    cluster``), the guest looked up in the cluster's guest index (``guest.absence``)."""
    sid = decl.names["name"]
    if action == "update":
        return _update_refusals(ctx, decl, live)
    if action != "create" or ha_owned.guest_declared(ctx, sid):
        return []
    row = indexed_guest(ctx, int(sid[3:]))
    if row is not None and row.get("type") == ("lxc" if sid.startswith("ct:") else "qemu"):
        return []
    held = f" (vmid {sid[3:]} is a {row['type']} guest on {row['node']})" if row is not None else ""
    return [
        f"{decl.label}: the cluster holds no such guest{held}, and PVE refuses the resource (`resource "
        f"'{sid}' does not exist in cluster`, pve-ha-manager Resources/PVE{'CT' if sid[:2] == 'ct' else 'VM'}"
        ".pm exists). Declare the guest in this run, or name one the read token can see."
    ]


def side_effects(ctx: PveContext, decl: Declared, action: str) -> list[str]:
    """The plan's note of what PVE does besides: a delete on PVE 9 takes the resource out of the HA
    rules naming it (``Resources.pm`` ``delete``: ``purge`` defaults to 1); a create naming a group
    that neither exists nor is declared is stored as given (``Resources.pm`` ``create`` checks no
    group, unlike ``update``; its ``index`` then flags ``group '<group>' does not exist``)."""
    if action == "delete" and release(ctx).major >= 9:
        return [f"{decl.label}: PVE 9 also takes it out of every HA rule naming it (purge, default 1)"]
    group = decl.values.get("group")
    if action == "create" and _unknown_group(ctx, decl, group):
        return [
            f"{decl.label}: HA group {group} does not exist and no state of this run declares it; PVE "
            "stores it as given (pve-ha-manager API2/HA/Resources.pm create checks no group) and lists the "
            f"resource with `group '{group}' does not exist`; an update naming it is refused until it exists"
        ]
    return []


SPEC = ObjectSpec(
    family=FAMILY,
    noun="HA resource",
    declare=declare,
    identify=identify,
    absence="HTTP 500 \"no such resource '<sid>'\" (pve-ha-manager API2/HA/Resources.pm read)",
    is_absent=exact_message(500, "no such resource '{name}'"),
    parse=parse,
    create_endpoint=CREATE,
    update=_update,
    update_endpoint=UPDATE,
    **section_calls("resources", "sid", FIELDS, WIRE),
    listing=Call("GET", "cluster/ha/resources"),
    listed=listed,
    refusals=refusals,
    for_cluster=for_cluster,
    side_effects=side_effects,
    # GET /cluster/ha/resources (pve-ha-manager API2/HA/Resources.pm index) names each by ``sid``.
    export_names=export_by("sid"),
    export_listings=lambda ctx: release_listing(ctx, "resources", None),
)
