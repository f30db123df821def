"""PBS datastores (``pbs_datastore``, pillar ``proxmox:pbs:datastores:<name>``) on a PBS target.

Source: proxmox-backup ``src/api2/config/datastore.rs`` (3.2.4; ``backend``, the nesting and
path-not-empty checks from 4.x) and ``pbs-api-types`` ``datastore.rs`` ``DataStoreConfig``.

- Read ``GET /config/datastore/{name}`` (``read_datastore``: Datastore.Audit on ``/datastore/<name>``);
  absent only for PBS's exact answer, HTTP 400 ``no such datastore '<name>'`` (proxmox-section-config
  ``SectionConfigData::lookup_json``); the config's ``digest`` is beside ``data``.
- Create ``POST /config/datastore`` (``create_datastore``: Datastore.Allocate on ``/datastore``) is a
  PBS task (``create-datastore``), started and awaited with a fresh provision credential
  (``ObjectSpec.task_node``); a worker that fails (``datastore path not empty``) fails the state.
- ``path`` and ``backend`` are the datastore's identity: ``DataStoreConfig`` marks them
  ``#[updater(skip)]``, so ``update_datastore`` takes neither; a change is refused at plan, naming the
  way (a new datastore), never a delete and re-create.
- Managed (``update_datastore``, ``PUT`` with the changed keys, ``delete`` for the cleared ones and the
  config ``digest``, ``detect_modified_configuration_file``): ``comment`` (PBS trims it; an empty one
  clears it), ``gc-schedule``, ``notification-mode``, ``notify``, ``notify-user``, ``tuning``,
  ``maintenance-mode``, ``verify-new``.
- ``prune-schedule`` and ``keep-*`` are the create's only: ``create_datastore`` turns them into a prune
  job (``default-<name>-<uuid>``) and clears them from the datastore's config, and ``update_datastore``
  refuses them (``datastore prune settings have been replaced by prune jobs``). They are compared with
  the ownership row (``ObjectSpec.recorded``), and a change is refused at plan with PBS's reason.
- A path nested in another datastore's (``DataStoreConfig::ensure_not_nested``, in this run's plan too)
  and a relative path (``expected an absolute path``) are refused at plan.
- ``removal: destroy`` (``delete_datastore``, a ``delete-datastore`` task, digest-guarded) removes the
  configuration only, and PBS with it the datastore's jobs and ACL entries (``keep-job-configs`` is not
  sent); ``destroy-data`` is sent only when the absent declaration says ``destroy_data: true``, and the
  plan says the data loss.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from salt_proxmox.errors import DeclarationError, boolean_problem, shown
from salt_proxmox.outcome import Outcome
from salt_proxmox.pve.client import api_path
from salt_proxmox.pve.constraints import Endpoint, Rule
from salt_proxmox.simple import lifecycle
from salt_proxmox.simple.fields import Field, canonical_values, deleted_keys, form_values, live_values
from salt_proxmox.simple.spec import Call, Declared, ObjectSpec, exact_message, export_by, planned

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.pve.client import Credential
    from salt_proxmox.run.context import PveContext

FAMILY = "pbs_datastore"
#: pbs-api-types ``DATASTORE_SCHEMA``: ``PROXMOX_SAFE_ID_FORMAT``, 3 to 32 characters.
NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._\-]*\Z")
#: The node a PBS task is read on: PBS answers ``/nodes/localhost/...`` for itself.
NODE = "localhost"
KEEP = ("keep-last", "keep-hourly", "keep-daily", "keep-weekly", "keep-monthly", "keep-yearly")
#: Sent at create only; PBS makes them a prune job (module docstring).
CREATE_ONLY = ("prune-schedule", *KEEP)
#: ``DataStoreConfig`` ``#[updater(skip)]``.
FIXED = ("path", "backend")


def _property_string(text: str) -> str:
    """A PBS property string (``tuning``, ``notify``, ``backend``, ``maintenance-mode``) in one
    spelling: its ``key=value`` parts sorted (PBS parses them by name, proxmox-schema
    ``parse_property_string``). One holding a quote is kept as written (a quoted message may hold a
    comma)."""
    if '"' in text:
        return text
    return ",".join(sorted(part.strip() for part in text.split(",") if part.strip()))


def _absolute(text: str) -> str | None:
    if not text.startswith("/"):
        return f"expected an absolute path, {shown(text)} is not (create_datastore)"
    return None


FIELDS: Mapping[str, Field] = {
    "path": Field(check=_absolute, normal=lambda text: text.rstrip("/") or "/"),
    "backend": Field(normal=_property_string),
    "comment": Field(normal=str.strip),
    "gc-schedule": Field(),
    "prune-schedule": Field(),
    **{key: Field("integer", minimum=1) for key in KEEP},
    "notification-mode": Field("choice", choices=("legacy-sendmail", "notification-system")),
    "notify": Field(normal=_property_string),
    "notify-user": Field(),
    "tuning": Field(normal=_property_string),
    "maintenance-mode": Field(normal=_property_string),
    "verify-new": Field("flag"),
}


def _rule(key: str) -> Rule | None:
    if key in ("name", "digest"):
        return Rule()
    if key == "delete":
        return Rule("string", check=lambda text: None)
    field = FIELDS.get(key)
    return field.rule() if field is not None else None


CREATE = Endpoint("POST /config/datastore", ("name", "path"), _rule)
UPDATE = Endpoint("PUT /config/datastore/{name}", (), _rule)


def identify(state_id: str, target: str, name: object = None, **extra: object) -> Declared:
    """A datastore by its ``name``. Raises DeclarationError for an unknown key or a name PBS refuses
    (``DATASTORE_SCHEMA``)."""
    if extra:
        raise DeclarationError(
            f"unknown key(s) {', '.join(sorted(extra))}: absent takes name, removal, destroy_data"
        )
    if not isinstance(name, str) or not name:
        raise DeclarationError("name: the datastore name is required (text)")
    if not NAME.match(name) or not 3 <= len(name) <= 32:
        raise DeclarationError(
            f"name: {shown(name)} is not a datastore name PBS takes (DATASTORE_SCHEMA: 3 to 32 letters, "
            "digits, '.', '_' or '-', not starting with '.' or '-')"
        )
    return Declared(state_id, target, identity=name, label=f"datastore {name}", names={"name": name})


def declare(
    state_id: str, target: str, name: object = None, adopt: object = False, **options: object
) -> Declared:
    """A checked datastore declaration: ``name``, ``path`` (required, absolute), the optional
    ``backend`` and the managed keys of the module docstring. Raises DeclarationError naming each
    bad key."""
    probe = identify(state_id, target, name=name)
    if options.get("path") in (None, ""):
        raise DeclarationError("path: the datastore's directory is required (an absolute path)")
    values = canonical_values(FIELDS, options)
    # A cleared prune setting is no setting: PBS keeps none in the datastore's config.
    kept = {key: value for key, value in values.items() if not (key in CREATE_ONLY and value in ("", 0))}
    return probe.declaring(kept, adopt)


def parse(data: object, decl: Declared) -> dict:
    """``GET /config/datastore/{name}`` → every field's canonical value. Raises ValueError for
    another shape."""
    if not isinstance(data, Mapping) or data.get("name") != decl.names["name"]:
        raise ValueError("the answer is not this datastore's config")
    return live_values(FIELDS, {key: value for key, value in data.items() if key not in CREATE_ONLY})


def _path(decl: Declared) -> str:
    return api_path("config", "datastore", decl.names["name"])


def create(decl: Declared) -> Call:
    """``POST /config/datastore``: the name and every declared key set."""
    return Call(
        "POST", "config/datastore", form={"name": decl.names["name"], **form_values(FIELDS, decl.values, ())}
    )


def update(decl: Declared, live: Mapping[str, object]) -> Call | None:
    """``PUT /config/datastore/{name}``: the managed keys that differ, ``delete`` for the cleared
    ones; never ``path``/``backend`` (fixed) nor the create's prune settings. None when nothing is
    sent."""
    skip = (*FIXED, *CREATE_ONLY)
    changed = {key: value for key, value in decl.values.items() if key not in skip and live.get(key) != value}
    form: dict[str, object] = form_values(FIELDS, changed, ())
    gone = deleted_keys(changed, live, ())
    if gone:
        form["delete"] = gone
    return Call("PUT", _path(decl), form=form) if form else None


def write_guard(ctx: PveContext, credential: Credential, decl: Declared, live: Mapping[str, object]) -> dict:
    """``{digest}``: datastore.cfg's digest beside a fresh read's ``data`` (``update_datastore`` and
    ``delete_datastore`` compare it)."""
    answer = ctx.client.request("GET", _path(decl), credential, envelope=True)
    digest = answer.get("digest") if isinstance(answer, Mapping) else None
    return {"digest": str(digest)} if digest else {}


def _nested(path: str, other: str) -> bool:
    return (
        path == other or path.startswith(other.rstrip("/") + "/") or other.startswith(path.rstrip("/") + "/")
    )


def refusals(ctx: PveContext, decl: Declared, action: str, live: Mapping[str, object] | None) -> list[str]:
    """PBS's refusals, predicted with the read credential (module docstring)."""
    found = []
    if action == "delete":
        return found
    if live is not None:
        for key in FIXED:
            if key in decl.values and live.get(key) != decl.values[key]:
                found.append(
                    f"{key}: {decl.label} has {shown(live.get(key))}, and PBS cannot change a datastore's "
                    f"{key} (DataStoreConfig: #[updater(skip)], update_datastore takes none). Declare it as "
                    "it is, or declare another datastore."
                )
        for key in CREATE_ONLY:
            if key in decl.values and live.get(key) != decl.values[key]:
                found.append(
                    f"{key}: PBS made {decl.label}'s prune settings a prune job at create and refuses them "
                    f"on an update (`datastore prune settings have been replaced by prune jobs`, "
                    f"update_datastore). Change that prune job on PBS (Datastore > Prune & GC), or declare "
                    f"{key} as it was."
                )
        return found
    path = str(decl.values["path"])
    rows = ctx.client.request("GET", "config/datastore", ctx.broker.read())
    others = {
        str(row.get("name")): str(row.get("path") or "") for row in rows or [] if isinstance(row, Mapping)
    }
    others.update(
        {
            name: str(values.get("path") or "")
            for name, values in planned(ctx, FAMILY).items()
            if name != decl.identity
        }
    )
    for other, theirs in sorted(others.items()):
        if theirs and _nested(path, theirs):
            found.append(
                f"path: {path} is nested with datastore {other}'s {theirs}, and PBS refuses nested "
                "datastores (DataStoreConfig::ensure_not_nested). Give it a directory of its own."
            )
    return found


def side_effects(ctx: PveContext, decl: Declared, action: str) -> list[str]:
    """What PBS does besides: a create's prune job, a delete's jobs and ACL entries, and its data."""
    if action == "create" and any(key in decl.values for key in CREATE_ONLY):
        return [
            f"{decl.label}: PBS makes its prune-schedule and keep-* a prune job of its own (create_datastore)"
        ]
    if action != "delete":
        return []
    return [
        f"{decl.label}: PBS removes its prune, sync and verify jobs and its ACL entries with it "
        "(delete_datastore without keep-job-configs)",
        f"{decl.label}: only the configuration is removed; the backups stay in "
        f"{decl.values.get('path') or 'its path'}",
    ]


SPEC = ObjectSpec(
    family=FAMILY,
    noun="datastore",
    declare=declare,
    identify=identify,
    read=lambda decl: Call("GET", _path(decl)),
    absence="HTTP 400 no such datastore '<name>'",
    is_absent=exact_message(400, "no such datastore '{name}'"),
    parse=parse,
    create=create,
    create_endpoint=CREATE,
    update=update,
    update_endpoint=UPDATE,
    delete=lambda decl, live: Call("DELETE", _path(decl)),
    write_guard=write_guard,
    delete_guard=True,
    refusals=refusals,
    side_effects=side_effects,
    recorded=CREATE_ONLY,
    task_node=lambda decl: NODE,
    task_writes=("create", "delete"),
    # GET /config/datastore (proxmox-backup src/api2/config/datastore.rs list_datastores) names each.
    export_names=export_by("name"),
    export_listings=lambda ctx: [(Call("GET", "config/datastore"), {})],
)


def _destroy_data_effects(ctx: PveContext, decl: Declared, action: str) -> list[str]:
    """``side_effects`` of a delete with ``destroy-data``: the jobs and ACL entries, and the data loss."""
    jobs = side_effects(ctx, decl, action)[:1]
    return [
        *jobs,
        f"DATA LOSS: {decl.label}: destroy_data is true, so destroy-data is sent and PBS deletes every "
        f"backup in {decl.values.get('path') or 'its path'} (DataStore::destroy); this cannot be undone",
    ]


#: The family as a delete with ``destroy_data: true`` runs it: ``destroy-data=1`` in the DELETE's query.
DESTROYING = replace(
    SPEC,
    delete=lambda decl, live: Call("DELETE", _path(decl), params={"destroy-data": "1"}),
    side_effects=_destroy_data_effects,
)


def absent(
    ctx: PveContext,
    test: bool,
    state_id: str,
    removal: object = "retain",
    destroy_data: object = False,
    **names,
) -> Outcome:
    """``pbs_datastore.absent``: the simple lifecycle's ``absent`` (``removal: retain`` forgets,
    ``destroy`` removes the configuration of an owned, unchanged datastore); with ``destroy_data: true``
    (and ``removal: destroy``) its backups too, which the plan shows as ``data`` going. Never raises
    for a known failure."""
    problem = boolean_problem("destroy_data", destroy_data)
    if problem:
        return Outcome().refuse(DeclarationError(problem))
    if destroy_data and removal != "destroy":
        return Outcome().refuse(
            DeclarationError("destroy_data: only with removal: destroy (retain touches nothing)")
        )
    spec = DESTROYING if destroy_data else SPEC
    outcome = lifecycle.absent(ctx, spec, test, state_id, removal, **names)
    if destroy_data and "deleted" in outcome.changes:
        outcome.changes["data"] = {"old": "backups", "new": "destroyed"}
    return outcome
