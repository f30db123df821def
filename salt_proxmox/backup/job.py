"""Backup jobs (``proxmox_backup_job``): one vzdump job of ``jobs.cfg``, cluster-wide, by its id.

Source: pve-manager ``PVE/API2/Backup.pm`` (``index``, ``create_job``, ``read_job``, ``update_job``,
``delete_job``) over the vzdump options of pve-guest-common ``src/PVE/VZDump/Common.pm``
(``$confdesc``, ``json_config_properties``); which guests a job backs up is pve-manager
``PVE/VZDump.pm`` ``get_included_guests``.

- Read ``GET /cluster/backup/{id}`` (``read_job``, Sys.Audit on ``/``); a job that is not there is
  HTTP 400 with ``errors.id`` ``No such job '<id>'`` (``raise_param_exc``), the only absence. PVE
  answers ``prune-backups`` as an object there (``$backup_job_return_schema``), a property string
  on a write; both are compared in one spelling (``storage.types.prune_backups``).
- Create ``POST /cluster/backup`` with ``id`` and the declared options (``create_job``: ``enabled``
  defaults to 1, a ``schedule`` is required); update ``PUT /cluster/backup/{id}`` with the options
  that differ and ``delete`` for the cleared ones (``update_job``: sending ``vmid`` drops ``all``,
  ``exclude`` and ``pool``, ``all`` drops ``vmid`` and ``pool``, ``pool`` drops the others); delete
  ``DELETE /cluster/backup/{id}``. None is a task.
- ``schedule`` is kept as sent and compared by meaning (``backup.schedule``): another spelling of
  the same calendar event is no drift, and a live spelling that means the declared one is shown
  in the declaration's.
- Selection: exactly one of ``vmid`` (a list), ``pool``, or ``all: true`` (with ``exclude``,
  compared as none when not declared); a job on another selection is drift. A guest a
  ``vmid`` or ``exclude`` names must exist (the guest index) or be declared by this run; a
  ``pool`` must exist (``create_job``/``update_job`` ``check_pool_exist``) or be declared.
- ``notes-template`` and ``protected`` need ``storage`` (``$confdesc``: ``requires => 'storage'``).
- Options by release (pve-guest-common ``Common.pm``): ``notification-mode`` from PVE 8.1 ("vzdump:
  config: add 'notification-mode' param for backup jobs", pve-guest-common 5.0.6);
  ``notification-policy``, ``notification-target`` and ``maxfiles`` on PVE 8 only (removed in
  pve-guest-common 6.0: "backup job: remove 'notification-policy' and 'notification-target'
  options", "schema: backup: drop 'maxfiles' parameter"); ``mailto`` and ``mailnotification``
  on both (deprecated on both). The release is ``GET /version`` (``pve.facts.release``).
- No digest: ``/cluster/backup`` has none to send (a PUT carrying one is refused, 400 ``digest:
  property is not defined in schema``), so a concurrent edit is caught by reading the job again
  right before the PUT or DELETE and comparing it with the job the decision was made on
  (``write_guard``, docs/design.md §7f): any difference refuses the write.

Privileges (the ``permissions`` of those methods): the read Sys.Audit on ``/``; create, update and
delete Sys.Modify on ``/``, and, for a job naming a storage, Datastore.Allocate on
``/storage/<id>`` (``assert_param_permission_create``/``_update``); a ``pool`` job VM.Backup on
``/pool/<pool>``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from salt_proxmox.backup import declared
from salt_proxmox.backup import schedule as calendar
from salt_proxmox.datacenter.matchers import vzdump_note
from salt_proxmox.errors import DeclarationError, boolean_problem, shown
from salt_proxmox.guest.absence import index_rows
from salt_proxmox.pve.client import api_path
from salt_proxmox.pve.constraints import NODE, Endpoint, Rule, check_poolid, split_list
from salt_proxmox.pve.errors import PveError
from salt_proxmox.pve.facts import release
from salt_proxmox.pve.listing import get_rows
from salt_proxmox.simple.fields import Field, canonical_values, deleted_keys, form_values
from salt_proxmox.simple.spec import (
    Call,
    Declared,
    ObjectSpec,
    export_by,
    fingerprint,
    planned,
    reread_guard,
    will_exist,
)
from salt_proxmox.storage.types import prune_backups

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.run.context import PveContext

FAMILY = "backup_job"
#: What a job read shows that moves with the clock: left out of its fingerprint.
_MOVING = ("next-run",)

#: pve-common ``JSONSchema.pm`` ``pve_verify_configid`` (``pve-configid``), ``pve-backup-jobid``'s
#: ``maxLength`` 50 (pve-manager ``PVE/Jobs/Plugin.pm``).
JOB_ID = re.compile(r"^[a-z][a-z0-9_-]+\Z", re.IGNORECASE | re.ASCII)
JOB_ID_MAX = 50
#: ``email-or-username``: an email address or a user name (pve-common ``JSONSchema.pm``).
_MAILTO = re.compile(r"^[^\s,;@]+(?:@[^\s,;@]+)?\Z")


def _vmid_list(text: str) -> str:
    """``pve-vmid-list`` in one spelling: the vmids sorted, comma-joined (vzdump backs up the set)."""
    items = split_list(text)
    numbers = []
    for item in items:
        if not item.isascii() or not item.isdigit() or not 100 <= int(item) <= 999999999:
            raise ValueError(f"{shown(item)} is not a vmid (100 to 999999999)")
        numbers.append(int(item))
    return ",".join(str(number) for number in sorted(set(numbers)))


def _schedule(text: str) -> str:
    problem = calendar.problem(text)
    if problem:
        raise ValueError(problem)
    return text


def _mailto(text: str) -> str:
    items = split_list(text)
    bad = [item for item in items if not _MAILTO.match(item)]
    if bad:
        raise ValueError(f"{shown(bad[0])} does not look like a valid email address or user name")
    return ",".join(items)


def _max_length(limit: int):
    return lambda text: None if len(text) <= limit else f"at most {limit} characters (got {len(text)})"


#: The options of a job, each as ``$confdesc`` (and ``create_job``'s own) types and bounds them.
FIELDS: dict[str, Field] = {
    "schedule": Field("text", normal=_schedule, check=_max_length(128)),
    "enabled": Field("flag"),
    "repeat-missed": Field("flag"),
    "comment": Field("text", check=_max_length(512)),
    "storage": Field("text"),
    "vmid": Field("text", normal=_vmid_list),
    "pool": Field("text", check=check_poolid),
    "all": Field("flag"),
    "exclude": Field("text", normal=_vmid_list),
    "node": Field("text", check=lambda text: None if NODE.match(text) else "not a PVE node name (pve-node)"),
    "mode": Field("choice", choices=("snapshot", "suspend", "stop")),
    "compress": Field("choice", choices=("0", "1", "gzip", "lzo", "zstd")),
    "prune-backups": Field("text", normal=prune_backups),
    "notes-template": Field("text", check=_max_length(1024)),
    "protected": Field("flag"),
    "notification-mode": Field("choice", choices=("auto", "legacy-sendmail", "notification-system")),
    "mailto": Field("text", normal=_mailto),
    "mailnotification": Field("choice", choices=("always", "failure")),
    "notification-policy": Field("choice", choices=("always", "failure", "never")),
    "notification-target": Field("text"),
    "maxfiles": Field("integer", minimum=1),
}
#: The options a YAML list may give (``pve-vmid-list``, ``email-or-username-list``).
LISTS = ("vmid", "exclude", "mailto")
#: ``(first (major, minor), last major or None)`` of options not on every supported release.
RELEASES: dict[str, tuple[tuple[int, int], int | None]] = {
    "notification-mode": ((8, 1), None),
    "notification-policy": ((8, 0), 8),
    "notification-target": ((8, 0), 8),
    "maxfiles": ((8, 0), 8),
}
#: What ``create_job`` stores for an option not given, so an undeclared one is not compared.
DEFAULTS = {"enabled": 1}

_RULES = {"id": Rule(), **{key: field.rule() for key, field in FIELDS.items()}}
CREATE = Endpoint("POST /cluster/backup", ("id", "schedule"), _RULES.get)
UPDATE = Endpoint("PUT /cluster/backup/{id}", (), _RULES.get)

_STATE_KEYS = ("name", "adopt")


def _id_problem(name: object) -> str | None:
    if not isinstance(name, str) or not name:
        return "the job id is required (text)"
    if len(name) > JOB_ID_MAX or not JOB_ID.match(name):
        return (
            f"{shown(name)} is not a backup job id (pve-configid: a letter, then letters, digits, - or _; "
            f"at most {JOB_ID_MAX} characters)"
        )
    return None


def identify(state_id: str, target: str, name: object = None, **extra: object) -> Declared:
    """A backup job by its id (``name``). Raises DeclarationError for an unknown key or a bad id."""
    if extra:
        raise DeclarationError(f"unknown key(s) {', '.join(sorted(extra))}: absent takes name, removal")
    problem = _id_problem(name)
    if problem:
        raise DeclarationError(f"name: {problem}")
    return Declared(
        state_id, target, identity=str(name), label=f"backup job {name}", names={"name": str(name)}
    )


def selection_problems(values: Mapping[str, object]) -> list[str]:
    """What is wrong with a job's choice of guests (``create_job``: "option conflicts with option
    'vmid'", "property is missing"; ``update_job`` keeps ``exclude`` only beside ``all``), and the
    options ``$confdesc`` says need ``storage`` (``requires => 'storage'``)."""
    chosen = [key for key in ("vmid", "pool", "all") if values.get(key) not in (None, "", 0)]
    problems = []
    if len(chosen) != 1:
        problems.append(
            f"{' and '.join(chosen) or 'no selection'}: a job backs up the guests of exactly one of vmid (a "
            "list), pool, or all: true (with exclude) (PVE: option conflicts with option 'vmid' / vmid: "
            "property is missing)"
        )
    if values.get("exclude") not in (None, "") and values.get("all") != 1:
        problems.append("exclude: it only narrows all: true (pve-guest-common Common.pm: 'assumes --all')")
    for key in ("notes-template", "protected"):
        if values.get(key) not in (None, "", 0) and values.get("storage") in (None, ""):
            problems.append(
                f"{key}: it needs storage (pve-guest-common Common.pm $confdesc: requires storage)"
            )
    return problems


def declare(
    state_id: str, target: str, name: object = None, adopt: object = False, **options: object
) -> Declared:
    """A checked job declaration: ``name`` (the job id), ``adopt`` and the job's options as the API
    spells them (``FIELDS``). The declared selection key is compared, so a job on another selection
    is drift (a PUT of ``vmid``, ``pool`` or ``all`` makes ``update_job`` drop the others); with
    ``all``, ``exclude`` is compared even when not declared. Raises DeclarationError naming each
    bad key."""
    decl = identify(state_id, target, name)
    problem = boolean_problem("adopt", adopt)
    problems = [problem] if problem else []
    options = {
        key: ",".join(str(item) for item in value)
        if key in LISTS and isinstance(value, list | tuple)
        else value
        for key, value in options.items()
    }
    try:
        values = canonical_values(FIELDS, options)
    except DeclarationError as exc:
        problems += exc.problems
        values = {}
    if not problems:
        if values.get("all") == 1:
            # update_job keeps a live exclude beside a new all: an undeclared one is compared as none.
            values.setdefault("exclude", "")
        problems += selection_problems(values)
        if "schedule" not in values or values["schedule"] == "":
            problems.append(
                "schedule: a job needs one (create_job: neither 'starttime' nor 'schedule' were set)"
            )
    if problems:
        raise DeclarationError(problems)
    return decl.declaring(values, adopt)


def parse(data: object, decl: Declared) -> dict:
    """``GET /cluster/backup/{id}`` data as canonical options, ``fingerprint`` (``simple.spec.fingerprint``)
    beside them. A live schedule meaning the declared one is given in the declaration's spelling.
    Raises ValueError for another shape."""
    if not isinstance(data, Mapping):
        raise ValueError("expected the job as an object")
    raw = dict(data)
    if isinstance(raw.get("prune-backups"), Mapping):
        raw["prune-backups"] = ",".join(f"{key}={value}" for key, value in raw["prune-backups"].items())
    found = {}
    for key, field in FIELDS.items():
        value = raw.get(key, DEFAULTS.get(key))
        try:
            found[key] = field.canonical(value)
        except ValueError:
            found[key] = str(value)  # a value PVE holds that no declaration can: it differs
    want = decl.values.get("schedule")
    if isinstance(want, str) and want and calendar.same(want, str(found["schedule"])):
        found["schedule"] = want
    found["fingerprint"] = fingerprint(data, _MOVING)
    return found


def _path(decl: Declared) -> str:
    return api_path("cluster", "backup", decl.names["name"])


def create(decl: Declared) -> Call:
    """``POST /cluster/backup``: the id and every declared option that is set."""
    form = {"id": decl.names["name"], **form_values(FIELDS, decl.values, skip=())}
    if decl.values.get("enabled") == 0:
        form["enabled"] = "0"
    return Call("POST", "cluster/backup", form=form)


def update(decl: Declared, live: Mapping[str, object]) -> Call | None:
    """``PUT /cluster/backup/{id}``: the declared options that differ, ``delete`` for the cleared ones
    (``enabled: false`` is sent as 0: a job without ``enabled`` is enabled). None when none differs."""
    changed = {key: value for key, value in decl.values.items() if live.get(key) != value}
    form = form_values(FIELDS, changed, skip=())
    if changed.get("enabled") == 0:
        form["enabled"] = "0"
        changed = {key: value for key, value in changed.items() if key != "enabled"}
    gone = deleted_keys(changed, live, skip=())
    if gone:
        form["delete"] = ",".join(gone)
    return Call("PUT", _path(decl), form=form) if form else None


#: Right before a PUT or DELETE the job is read again and compared with the one the decision was made
#: on: ``/cluster/backup`` takes no digest, so this catches an edit made between the plan's read and the
#: write.
write_guard = reread_guard(lambda decl: _path(decl), "PVE keeps no digest for backup jobs", _MOVING)


def _release_problems(ctx: PveContext, decl: Declared) -> list[str]:
    found = release(ctx)
    have = (found.major, found.minor)
    problems = []
    for key in decl.values:
        first, last = RELEASES.get(key, ((0, 0), None))
        if have < first or (last is not None and found.major > last):
            since = f"from PVE {first[0]}.{first[1]}" if have < first else f"up to PVE {last}"
            problems.append(
                f"{key}: the cluster runs PVE {found.release}, whose backup jobs have no {key} "
                f"(pve-guest-common VZDump/Common.pm $confdesc: {since}); leave it out"
            )
    return problems


def refusals(ctx: PveContext, decl: Declared, action: str, live: Mapping[str, object] | None) -> list[str]:
    """PVE's refusals of the write, predicted with the read credential: an option the release does not
    know, a guest the job names that neither exists nor is declared by this run, a pool that does
    not exist (``check_pool_exist``) and is not declared."""
    if action == "delete":
        return []
    problems = _release_problems(ctx, decl)
    named = {
        key: [int(v) for v in str(decl.values.get(key) or "").split(",") if v] for key in ("vmid", "exclude")
    }
    if any(named.values()):
        known = {int(row["vmid"]) for row in index_rows(ctx)} | {guest.vmid for guest in declared.guests(ctx)}
        for key, vmids in named.items():
            missing = [vmid for vmid in vmids if vmid not in known]
            if missing:
                problems.append(
                    f"{key}: guest {', '.join(map(str, missing))} does not exist and no state of this run "
                    "declares it; a job naming it would back up nothing for it. Declare the guest, or "
                    "leave it out."
                )
    pool = decl.values.get("pool")
    if pool and not will_exist(ctx, "pool", str(pool)) and str(pool) not in planned(ctx, "pool"):
        rows = get_rows(ctx.client, "pools", ctx.broker.read(), what="pools", reads=ctx.reads)
        if str(pool) not in {str(row.get("poolid")) for row in rows}:
            problems.append(
                f"pool: pool {pool} does not exist, and PVE refuses the job (pve-access-control "
                "RPCEnvironment.pm check_pool_exist: pool does not exist). Declare the pool (proxmox:pools), "
                "or name an existing one."
            )
    return problems


def is_absent(error: PveError, decl: Declared) -> bool:
    """``read_job``'s answer for a job that is not there: 400, ``errors.id`` ``No such job '<id>'``."""
    return (
        error.status == 400
        and str(error.errors.get("id", "")).strip() == f"No such job '{decl.names['name']}'"
    )


SPEC = ObjectSpec(
    family=FAMILY,
    noun="backup job",
    declare=declare,
    identify=identify,
    read=lambda decl: Call("GET", _path(decl)),
    absence="HTTP 400, errors.id 'No such job' (pve-manager PVE/API2/Backup.pm read_job)",
    is_absent=is_absent,
    parse=parse,
    create=create,
    create_endpoint=CREATE,
    update=update,
    update_endpoint=UPDATE,
    delete=lambda decl, live: Call("DELETE", _path(decl)),
    write_guard=write_guard,
    delete_guard=True,
    refusals=refusals,
    side_effects=vzdump_note,
    # GET /cluster/backup (pve-manager API2/Backup.pm index) names each job by ``id``.
    export_names=export_by("id"),
    live_only=("fingerprint",),  # the job as read, for the write guard (no digest on /cluster/backup)
    export_listings=lambda ctx: [(Call("GET", "cluster/backup"), {})],
)
