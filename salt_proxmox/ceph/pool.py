"""Ceph pools (``proxmox_ceph_pool``): a pool of the Ceph cluster PVE manages, addressed through one
of its nodes.

Source: pve-manager ``PVE/API2/Ceph/Pool.pm`` (``lspools``, ``createpool``, ``setpool``,
``destroypool``; the same on ``stable-8`` for PVE 8 except where said) and ``PVE/Ceph/Tools.pm``
(``create_pool``, ``set_pool``, ``get_pool_properties``), over Ceph's monitor commands (ceph
``src/mon/OSDMonitor.cc`` ``prepare_command_pool_set``).

- Read is the listing ``GET /nodes/{node}/ceph/pool`` (``lspools``: ``osd dump``, every pool of the
  cluster behind one check of Sys.Audit or Datastore.Audit on ``/``, so a pool it does not list does
  not exist). Its rows hold ``pool_name``, ``size``, ``min_size``, ``pg_num``, ``pg_autoscale_mode``,
  ``crush_rule`` (an id) and ``crush_rule_name``, ``application_metadata`` (``{app: {}}``), and —
  when the pg_autoscaler answers — ``pg_num_min``, ``target_size`` (bytes, Ceph's
  ``target_size_bytes``) and ``target_size_ratio``.
- Create is ``POST /nodes/{node}/ceph/pool`` and update ``PUT /nodes/{node}/ceph/pool/{name}``, both
  tasks (``fork_worker`` ``cephcreatepool``/``cephsetpool``) awaited with the credential that started
  them. ``createpool`` fills in ``pg_num`` 128, ``size`` 3, ``min_size`` 2, ``application`` rbd,
  ``pg_autoscale_mode`` warn; keys not declared are not compared.
- ``setpool`` (``set_pool``) sends ``application`` as ``osd pool application enable``, which adds an
  application beside the pool's, never replaces it: ``application`` is the create's alone, and a
  change is refused at plan.
- ``erasure_coding`` (``createpool``'s ``erasure-coding``) declares an erasure-coded pool: the two
  pools ``<name>-data`` and ``<name>-metadata``, their profile and storage (``ceph.erasure``).
- ``pg_num`` under ``pg_autoscale_mode: on`` is the pg_autoscaler's: Ceph moves it by itself, so it
  is the create's value only and never drift (``moving``); the plan says so.
- ``min_size`` must not exceed ``size`` (Ceph: "pool min_size must be between 1 and size"); a
  ``size`` change resets ``min_size`` to Ceph's default for it (``size - size/2``; ``set_pool``
  sets ``size`` first for that reason, and skips a key equal to the value read BEFORE the size
  changed), so a declared ``min_size`` equal to the old one but not the new default would be left
  at the default: refused at plan (``size_problems``).
- ``pg_num_min``, ``target_size`` and ``target_size_ratio`` are cleared by sending 0 (Ceph unsets a
  pool option set to 0; ``setpool`` has no ``delete``).
- A ``crush_rule`` must exist (``GET /nodes/{node}/ceph/rules``): ``create_pool`` creates the pool
  first and only then fails ``Could not set: crush_rule``, leaving it made.
- Before any write Ceph's health is read (``GET /nodes/{node}/ceph/status``, ``ceph status``): an
  ``HEALTH_ERR`` cluster, or one with a degraded or unavailable placement group, a down OSD or an
  unfound object, is refused at plan with Ceph's words.
- Delete is ``DELETE /nodes/{node}/ceph/pool/{name}`` (task ``cephdestroypool``), refused while a
  storage definition names the pool (``GET /storage``: an ``rbd`` storage whose ``pool`` — ``rbd``
  when unset — or ``data-pool`` is it: ``destroypool``'s ``$get_storages``). A replicated pool's never carries
  ``remove_storages``, and carries ``remove_ecprofile=0``: PVE's default (1) would also destroy an
  erasure-code profile.

Privileges (the ``permissions`` of those methods): the reads Sys.Audit or Datastore.Audit on ``/``;
create, update and destroy Sys.Modify on ``/``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from salt_proxmox.ceph import erasure
from salt_proxmox.errors import DeclarationError, shown
from salt_proxmox.pve.client import api_path
from salt_proxmox.pve.constraints import NODE, NUMBER, Endpoint, Rule
from salt_proxmox.pve.errors import PveMalformed
from salt_proxmox.pve.listing import get_rows, node_names, rows_of
from salt_proxmox.simple.fields import Field, canonical_values
from salt_proxmox.simple.spec import Call, Declared, ObjectSpec, listed_row
from salt_proxmox.wire.sizes import parse_size
from salt_proxmox.wire.volumes import STORAGE_ID

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.run.context import PveContext

FAMILY = "ceph_pool"

#: ``createpool``'s ``name`` pattern (``$ceph_pool_common_options``).
POOL_NAME = re.compile(r"^[^:/\s]+\Z")


def _bytes(text: str) -> str:
    """``target_size`` as Ceph keeps it (``createpool``/``setpool`` ``parse_size`` into
    ``target_size_bytes``): whole bytes; 0 is unset."""
    number = parse_size(text)
    return "" if number == 0 else str(number)


def _ratio(text: str) -> str:
    """``target_size_ratio`` as one spelling of the number; 0 is unset."""
    if not NUMBER.match(text) or not math.isfinite(float(text)) or float(text) < 0:
        raise ValueError(f"{shown(text)} is not a ratio (a number of 0 or more)")
    return "" if float(text) == 0 else repr(float(text))


#: The pool keys, as ``$ceph_pool_common_options`` types and bounds them.
FIELDS: dict[str, Field] = {
    "size": Field("integer", minimum=1, maximum=7),
    "min_size": Field("integer", minimum=1, maximum=7),
    "pg_num": Field("integer", minimum=1, maximum=32768),
    "pg_num_min": Field("integer", minimum=0, maximum=32768),
    "pg_autoscale_mode": Field("choice", choices=("on", "off", "warn")),
    "crush_rule": Field("text"),
    "application": Field("choice", choices=("rbd", "cephfs", "rgw")),
    "target_size": Field("text", normal=_bytes),
    "target_size_ratio": Field("text", normal=_ratio),
}
#: Keys a 0 unsets (Ceph pool options): cleared.
UNSET_BY_ZERO = ("pg_num_min", "target_size", "target_size_ratio")
#: What ``createpool`` makes of a key not given.
CREATE_DEFAULTS = {"size": 3, "min_size": 2, "pg_num": 128, "application": "rbd", "pg_autoscale_mode": "warn"}
#: Ceph health checks that say the data is not fully redundant or available (Ceph's health check
#: codes, ``ceph status`` ``health.checks``): no pool is written while one is raised.
DEGRADED_CHECKS = ("PG_DEGRADED", "PG_AVAILABILITY", "PG_DAMAGED", "OSD_DOWN", "OBJECT_UNFOUND")

_RULES = {
    "name": Rule(
        check=lambda text: None if POOL_NAME.match(text) else "value does not match the regex pattern"
    ),
    **{key: field.rule() for key, field in FIELDS.items()},
    "erasure-coding": Rule(check=lambda text: _ec_problem(text)),
}
CREATE = Endpoint("POST /nodes/{node}/ceph/pool", ("name",), _RULES.get)
UPDATE = Endpoint("PUT /nodes/{node}/ceph/pool/{name}", (), _RULES.get)


def _ec_problem(text: str) -> str | None:
    try:
        erasure.canonical(text)
    except ValueError as why:
        return str(why)
    return None


def _unset(values: dict) -> dict:
    return {key: ("" if key in UNSET_BY_ZERO and value == 0 else value) for key, value in values.items()}


def identify(
    state_id: str, target: str, name: object = None, node: object = None, **extra: object
) -> Declared:
    """A pool by its name (unique in the Ceph cluster), addressed through ``node``. Raises
    DeclarationError naming the key."""
    if extra:
        raise DeclarationError(f"unknown key(s) {', '.join(sorted(extra))}: a Ceph pool has name, node")
    problems = []
    if not isinstance(name, str) or not POOL_NAME.match(name):
        problems.append(f"name: {shown(name)} is not a Ceph pool name (text without ':', '/' or white space)")
    if not isinstance(node, str) or not NODE.match(node):
        problems.append(f"node: {shown(node)} is not a node name (the node whose API manages the pool)")
    if problems:
        raise DeclarationError(problems)
    return Declared(
        state_id, target, identity=name, label=f"Ceph pool {name}", names={"name": name, "node": node}
    )


def declare(
    state_id: str, target: str, name: object = None, node: object = None, adopt: object = False, **declared
) -> Declared:
    """One pool: ``FIELDS`` keys only, those declared (None or ``''``: cleared), and
    ``erasure_coding`` (``ceph.erasure.parse_ec``: a mapping or PVE's property string) for an
    erasure-coded one. Raises DeclarationError naming each bad key, and for ``min_size`` above
    ``size``."""
    probe = identify(state_id, target, name, node)
    ec = declared.pop("erasure_coding", None)
    values = _unset(canonical_values(FIELDS, {k: v for k, v in declared.items()}))
    if ec is not None:
        try:
            values["erasure_coding"] = erasure.canonical(ec)
        except ValueError as why:
            raise DeclarationError(f"erasure_coding: {why}") from None
    problem = min_size_problem(values.get("size"), values.get("min_size"))
    if problem:
        raise DeclarationError(problem)
    return probe.declaring(values, adopt)


def min_size_problem(size: object, min_size: object) -> str | None:
    """None unless both are numbers and ``min_size`` exceeds ``size``: Ceph refuses that (ceph
    ``OSDMonitor.cc`` ``prepare_command_pool_set``: "pool min_size must be between 1 and size")."""
    if isinstance(size, int) and isinstance(min_size, int) and min_size > size:
        return (
            f"min_size: {min_size} is above size {size}, and Ceph refuses it (`pool min_size must be "
            f"between 1 and size, which is set to {size}`). Declare min_size {size} or less, or a larger "
            "size."
        )
    return None


def default_min_size(size: int) -> int:
    """The ``min_size`` Ceph gives a pool whose ``size`` is set (``osd_pool_default_min_size`` 0:
    ``size - size/2``, ceph ``src/common/options`` ``get_osd_pool_default_min_size``)."""
    return size - size // 2


def size_problems(values: Mapping[str, object], live: Mapping[str, object] | None) -> list[str]:
    """The refusals of the sizes a write leaves: ``min_size`` above ``size`` (declared, or live, or
    ``createpool``'s default), and an update whose ``size`` change would leave a declared ``min_size``
    at Ceph's default (``set_pool`` skips a ``min_size`` equal to the one read before ``size`` reset
    it)."""
    base = live if live is not None else CREATE_DEFAULTS
    size = values.get("size", base.get("size"))
    min_size = values.get("min_size", base.get("min_size"))
    problems = []
    problem = min_size_problem(size, min_size)
    if problem:
        problems.append(problem)
    if (
        live is not None
        and isinstance(size, int)
        and size != live.get("size")
        and "min_size" in values
        and values["min_size"] == live.get("min_size")
        and values["min_size"] != default_min_size(size)
    ):
        reset = default_min_size(size)
        problems.append(
            f"size {live.get('size')} → {size} makes Ceph set min_size to {reset}, and PVE then skips "
            f"min_size {min_size} as unchanged (PVE/Ceph/Tools.pm set_pool compares with the values "
            f"read before the size change), so it would stay {reset}. Declare min_size {reset} for "
            f"this change and {min_size} in a later run."
        )
    return problems


def moving(live: Mapping[str, object], decl: Declared) -> frozenset[str]:
    """``pg_num`` while the pool's ``pg_autoscale_mode`` (declared, else live) is ``on``: the
    pg_autoscaler sets it (Ceph ``mgr/pg_autoscaler``), so it is never drift."""
    mode = decl.values.get("pg_autoscale_mode") or live.get("pg_autoscale_mode")
    return frozenset({"pg_num"}) if mode == "on" else frozenset()


def parse_row(row: Mapping[str, object]) -> dict:
    """One ``lspools`` row → the canonical values of every key. Raises ValueError for a shape no
    field takes."""
    apps = row.get("application_metadata") or {}
    if not isinstance(apps, Mapping):
        raise ValueError("application_metadata is not an object")
    data = {key: row.get(key) for key in FIELDS if key not in ("crush_rule", "application")}
    data["crush_rule"] = row.get("crush_rule_name")
    live = {}
    for key, value in data.items():
        try:
            live[key] = FIELDS[key].canonical(value)
        except ValueError as exc:
            raise ValueError(f"{key}: {exc}") from None
    live["application"] = ",".join(sorted(apps))
    live["type"] = str(row.get("type") or "")
    return _unset(live)


def parse(data: object, decl: Declared) -> dict | None:
    """``GET /nodes/{node}/ceph/pool`` → this pool's canonical values, or None when it is not
    listed (``lspools`` lists every pool, so that is absence); an erasure-coded one's from its two
    pools (``erasure.live_values``). Raises ValueError for another shape."""
    if "erasure_coding" in decl.values:
        return erasure.live_values(
            list(rows_of(data)), decl.names["name"], decl.values["erasure_coding"], parse_row
        )
    row = listed_row(data, "pool_name", lambda name: name == decl.names["name"])
    return None if row is None else parse_row(row)


def health_problem(status: object, node: str) -> str | None:
    """None for a Ceph cluster a pool may be written on, else the refusal: ``health.status``
    ``HEALTH_ERR``, or a raised check of ``DEGRADED_CHECKS`` (``ceph status``, as pve-manager
    ``PVE/API2/Ceph.pm`` ``status`` passes it on). Raises ValueError for an answer without
    ``health.status``."""
    health = status.get("health") if isinstance(status, Mapping) else None
    if not isinstance(health, Mapping) or not isinstance(health.get("status"), str):
        raise ValueError("the Ceph status holds no health.status")
    checks = health.get("checks") if isinstance(health.get("checks"), Mapping) else {}
    bad = [code for code in checks if health["status"] == "HEALTH_ERR" or code in DEGRADED_CHECKS]
    if health["status"] != "HEALTH_ERR" and not bad:
        return None
    said = "; ".join(f"{code}: {_summary(checks[code])}" for code in bad) or "no check named"
    return (
        f"Ceph reports {health['status']} ({said}) on node {node}, and a pool is not written on a "
        "degraded or failing cluster: the change would add rebalancing to recovery. Let Ceph recover "
        "(`ceph health detail`), then run again."
    )


def _summary(check: object) -> str:
    summary = check.get("summary") if isinstance(check, Mapping) else None
    message = summary.get("message") if isinstance(summary, Mapping) else None
    return str(message) if message else "raised"


def storages_naming(rows: object, pool: str) -> list[str]:
    """The storage ids of ``GET /storage`` whose definition names ``pool``: ``rbd`` storages whose
    ``pool`` (``rbd`` when unset) or ``data-pool`` is it (pve-manager ``PVE/API2/Ceph/Pool.pm``
    ``$get_storages``). Raises ValueError for a listing that is not a list of objects."""
    return sorted(
        str(row.get("storage"))
        for row in rows_of(rows)
        if row.get("type") == "rbd" and pool in ((row.get("pool") or "rbd"), row.get("data-pool"))
    )


def _path(decl: Declared, *more: str) -> str:
    return api_path("nodes", decl.names["node"], "ceph", "pool", *more)


def create_call(decl: Declared) -> Call:
    """``POST /nodes/{node}/ceph/pool``: the name and every declared key PVE takes (cleared keys left
    to Ceph)."""
    form = {"name": decl.names["name"]}
    values = {key: value for key, value in decl.values.items() if key != "erasure_coding"}
    form.update({key: FIELDS[key].wire(value) for key, value in values.items() if value != ""})
    if "erasure_coding" in decl.values:
        form["erasure-coding"] = str(decl.values["erasure_coding"])
    return Call("POST", _path(decl), form=form)


def update_call(decl: Declared, live: Mapping[str, object]) -> Call | None:
    """``PUT /nodes/{node}/ceph/pool/{name}`` of the keys that differ (a cleared one as 0), and the
    declared ``min_size`` beside a ``size`` change (Ceph resets it); ``application`` never (the
    create's). None when nothing PVE can change differs."""
    diffs = SPEC.differences(live, decl)
    form = {
        key: ("0" if decl.values[key] == "" else FIELDS[key].wire(decl.values[key]))
        for key in diffs
        if key not in ("application", "erasure_coding")
    }
    if "size" in form and "min_size" in decl.values:
        form["min_size"] = FIELDS["min_size"].wire(decl.values["min_size"])
    return Call("PUT", _path(decl, decl.names["name"]), form=form) if form else None


def refusals(ctx: PveContext, decl: Declared, action: str, live: Mapping[str, object] | None) -> list[str]:
    """PVE's and Ceph's refusals of the write, predicted at plan with the read credential: Ceph's
    health (every write), the sizes (``size_problems``), an ``application`` change, a ``crush_rule``
    Ceph does not have, and a destroy while a storage names the pool."""
    node = decl.names["node"]
    credential = ctx.broker.read()
    status = ctx.client.request("GET", api_path("nodes", node, "ceph", "status"), credential)
    try:
        problem = health_problem(status, node)
    except ValueError as why:
        raise PveMalformed("GET", api_path("nodes", node, "ceph", "status"), str(why)) from None
    problems = [problem] if problem else []
    ec = decl.values.get("erasure_coding")
    if action == "delete":
        rows = get_rows(ctx.client, "storage", credential, what="storage definitions")
        named = storages_naming(rows, decl.names["name"])
        if ec is not None:  # PVE's own storage <name> goes with the pools (remove_storages)
            name = decl.names["name"]
            named = [
                sid
                for pool in (erasure.data_pool(name), erasure.metadata_pool(name))
                for sid in storages_naming(rows, pool)
                if sid != name
            ]
        if named:
            problems.append(
                f"{decl.label} is named by storage {', '.join(named)}, and destroying it would leave that "
                "storage pointing at nothing (its guests' disks included). Remove the storage definition "
                "first (proxmox_storage.absent with removal: destroy), then run again."
            )
        return problems
    problems += size_problems(decl.values, live)
    if ec is not None:
        problems += _ec_refusals(ctx, credential, decl, str(ec), live)
    app = decl.values.get("application")
    if live is not None and app is not None and app != live.get("application"):
        problems.append(
            f"{decl.label}: application {live.get('application') or 'none'} → {app} cannot change: PVE "
            "enables an application beside the pool's (PVE/Ceph/Tools.pm set_pool: `osd pool application "
            "enable`), never in its place. Declare the pool's application, or create another pool."
        )
    rule = decl.values.get("crush_rule")
    if rule and (live is None or rule != live.get("crush_rule")):
        rules = get_rows(ctx.client, api_path("nodes", node, "ceph", "rules"), credential, what="CRUSH rules")
        fails = "create the pool and then fail" if live is None else "fail"
        if rule not in {row.get("name") for row in rules}:
            problems.append(
                f"{decl.label}: CRUSH rule {rule} does not exist, and PVE would {fails} (`Could not set: "
                "crush_rule`). Create the rule (`ceph osd crush rule create-replicated`), or declare an "
                "existing one."
            )
    return problems


def _ec_refusals(
    ctx: PveContext, credential: object, decl: Declared, ec: str, live: Mapping[str, object] | None
) -> list[str]:
    """An erasure-coded pool's refusals (``ceph.erasure``): a change of what the read shows of its
    profile; at create a name PVE cannot make a storage id of (``createpool``: "pool name contains
    characters which are illegal for storage naming"), a storage ``<name>`` already defined, and
    fewer failure domains holding an OSD than ``k+m``."""
    name, label = decl.names["name"], decl.label
    if live is not None:
        problem = erasure.immutable_problem(label, live, ec)
        return [problem] if problem else []
    problems = []
    if not STORAGE_ID.match(name):
        problems.append(
            f"{label}: PVE adds an erasure-coded pool's storage under the pool's name, and {name} is not a "
            "storage id (pve-storage-id: a letter, then letters, digits, '-', '_' or '.', ending in a letter "
            "or digit), so createpool refuses it (`pool name contains characters which are illegal for "
            "storage naming`). Declare another name."
        )
    rows = get_rows(ctx.client, "storage", credential, what="storage definitions")
    problems += filter(None, [erasure.storage_problem(label, name, list(rows_of(rows)))])
    path = erasure.osd_tree_path(decl.names["node"])
    tree = ctx.client.request("GET", path, credential)
    parsed = erasure.parse_ec(ec)
    try:
        count = erasure.failure_domains(tree, str(parsed["failure-domain"]))
    except ValueError as why:
        raise PveMalformed("GET", path, str(why)) from None
    problems += filter(None, [erasure.domain_problem(label, parsed, count)])
    return problems


def send(ctx: PveContext, decl: Declared, call: Call, what: str) -> None:
    """Each write as PVE's task on the declared node; an erasure-coded pool's update to the pool
    that holds each key and its destroy as the two pools' (``ceph.erasure``). Raises what
    ``PveContext.task`` raises."""
    node, name = decl.names["node"], decl.names["name"]
    calls = [(call.path, call.form, call.params)]
    ec = decl.values.get("erasure_coding")
    if ec is not None and call.method == "PUT":
        calls = [
            (_path(decl, pool), form, None) for pool, form in erasure.split_update(call.form or {}, name)
        ]
    elif ec is not None and call.method == "DELETE":
        parsed = erasure.parse_ec(ec)
        calls = [
            (path, None, params)
            for path, params in erasure.delete_calls(lambda p: _path(decl, p), name, parsed)
        ]
    for path, form, params in calls:
        ctx.reads.drop_listings()
        ctx.task(call.method, path, node, what, form=form, params=params)


def side_effects(ctx: PveContext, decl: Declared, action: str) -> list[str]:
    """What the plan says besides the write: a declared ``pg_num`` under ``pg_autoscale_mode: on`` is
    the create's only (the pg_autoscaler moves it); a ``size`` change without a declared
    ``min_size`` makes Ceph set ``min_size`` itself (``default_min_size``: ``size - size/2``), read
    from the run's shared pool listing. Raises what that read raises."""
    notes = []
    ec = decl.values.get("erasure_coding")
    if ec is not None and action in ("create", "delete"):
        each = erasure.create_notes if action == "create" else erasure.delete_notes
        notes += each(decl.label, decl.names["name"], erasure.parse_ec(ec))
    if decl.values.get("pg_autoscale_mode") == "on" and "pg_num" in decl.values and action == "create":
        notes.append(
            f"{decl.label}: pg_num {decl.values['pg_num']} is the create's: with pg_autoscale_mode on, "
            "Ceph's pg_autoscaler moves it, so it is never compared afterwards"
        )
    size = decl.values.get("size")
    if action == "update" and isinstance(size, int) and "min_size" not in decl.values:
        from salt_proxmox.simple.lifecycle import read  # the lifecycle runs this family's spec

        live = read(ctx, SPEC, decl, shared=True) or {}
        if live.get("size") != size and live.get("min_size") != default_min_size(size):
            notes.append(
                f"{decl.label}: size {live.get('size')} → {size} makes Ceph set min_size "
                f"{live.get('min_size')} → {default_min_size(size)} (size - size/2) by itself; declare "
                "min_size to keep another"
            )
    return notes


def _confirm_absent(ctx: PveContext, credential: object, decl: Declared) -> None:
    """``lspools`` lists every pool of the cluster behind one check on ``/``: not listed is absent."""


def export_listings(ctx: PveContext) -> list[tuple[Call, Mapping[str, object]]]:
    """``proxmox.export``: the pools as the cluster's first node lists them (Ceph's pools are the
    cluster's; a declaration names the node it is managed through). On a cluster without Ceph the
    listing's error is the export's note."""
    first = node_names(ctx.client, ctx.broker.read())[:1]
    return [(Call("GET", api_path("nodes", node, "ceph", "pool")), {"node": node}) for node in first]


SPEC = ObjectSpec(
    family=FAMILY,
    noun="Ceph pool",
    declare=declare,
    identify=identify,
    read=lambda decl: Call("GET", _path(decl)),
    absence="not listed by GET /nodes/{node}/ceph/pool (PVE/API2/Ceph/Pool.pm lspools lists every pool)",
    is_absent=lambda error, decl: False,
    parse=parse,
    create=create_call,
    create_endpoint=CREATE,
    update=update_call,
    update_endpoint=UPDATE,
    delete=lambda decl, live: Call(
        "DELETE", _path(decl, decl.names["name"]), params={"remove_ecprofile": "0"}
    ),
    confirm_absent=_confirm_absent,
    identity_keys=("name", "node"),
    refusals=refusals,
    side_effects=side_effects,
    moving=moving,
    task_node=lambda decl: decl.names["node"],
    send=send,
    export_names=lambda row: {"name": row["pool_name"]} if isinstance(row.get("pool_name"), str) else None,
    export_listings=export_listings,
    # The listing's ``type`` (replicated, erasure) is the create's, not a key this state manages.
    export_values=lambda live, decl: {k: v for k, v in live.items() if k in FIELDS and v is not None},
)
