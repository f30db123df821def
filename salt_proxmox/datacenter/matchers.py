"""Notification matchers (``proxmox_notification.matcher``): which notifications go to which endpoints.

Source: pve-manager ``PVE/API2/Cluster/Notifications.pm`` (``$matcher_properties``, ``get_matcher``,
``create_matcher``, ``update_matcher``, ``delete_matcher``: Mapping.Modify on ``/mapping/notifications``)
over proxmox-notify (proxmox-rs ``proxmox-notify/src/matcher.rs``, ``api/matcher.rs``, ``api/mod.rs``).

- Read ``GET /cluster/notifications/matchers/{name}``; absence is exactly HTTP 404 ``matcher '<name>' not
  found`` (``api/matcher.rs`` ``get_matcher``). Create ``POST /cluster/notifications/matchers`` (``name``
  in the body), update ``PUT …/{name}`` (``delete`` for a key going back to PVE's default), delete
  ``DELETE …/{name}``; the lists are JSON arrays.
- ``match-field`` entries are ``exact:<field>=<value>[,<value>...]`` or ``regex:<field>=<regex>``
  (``FieldMatcher::from_str``: another form is ``invalid match-field statement``; the field a safe id);
  an exact entry matches any of its values (``matched_values.contains``), so its values are a set.
- ``match-severity`` entries are comma lists of info, notice, warning, error, unknown
  (``SeverityMatcher``), each a set; ``match-calendar`` entries are kept as written (``CalendarMatcher``
  shows its ``original``). Entries combine by ``mode`` (all, the default, or any), whose order does not
  matter, so each list is a set; so is ``target``.
- Each ``target`` must be an endpoint that exists or that this run creates (``ensure_endpoints_exist``:
  ``endpoint '<name>' does not exist``): refused at plan naming it.
- The built-in ``default-matcher`` (``context/pve.rs`` ``DEFAULT_CONFIG``) may be adopted and changed (its
  ``origin`` then reads modified-builtin, never drift) and is never deleted.
- A backup job's plan says when its ``notification-mode`` sends nowhere (``vzdump_note``, pve-manager
  ``PVE/VZDump.pm`` ``send_notification``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from salt_proxmox.datacenter import notifications as endpoints
from salt_proxmox.errors import DeclarationError, shown
from salt_proxmox.pve.client import api_path
from salt_proxmox.pve.constraints import Endpoint, Rule
from salt_proxmox.pve.errors import PveError
from salt_proxmox.simple.fields import Field
from salt_proxmox.simple.spec import Call, Declared, ObjectSpec, identify_by_name, planned

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.run.context import PveContext

FAMILY = endpoints.MATCHER_FAMILY
SEVERITIES = ("info", "notice", "warning", "error", "unknown")
#: ``matcher.rs`` ``MATCH_FIELD_ENTRY_REGEX`` with proxmox-schema's ``SAFE_ID_REGEX_STR``, the prefix
#: required by ``FieldMatcher::from_str``.
MATCH_FIELD = re.compile(r"^(exact|regex):((?:[A-Za-z0-9_][A-Za-z0-9._\-]*))=(.*)\Z", re.DOTALL)

FIELDS: dict[str, Field] = {
    "mode": Field("choice", choices=("all", "any")),
    "invert-match": Field("flag"),
    "comment": endpoints.FIELDS["comment"],
    "disable": Field("flag"),
}
LISTS = ("match-field", "match-severity", "match-calendar", "targets")
#: PVE's ``target`` list is declared as ``targets``: ``target`` names the cluster (``proxmox:targets``) in
#: every state of this product.
WIRE = {"targets": "target"}
#: What PVE uses for a key it does not hold (``MatchModeOperator`` default all; the flags false).
DEFAULTS = {"mode": "all", "invert-match": 0, "comment": "", "disable": 0}


def field_entry(text: str) -> str:
    """A ``match-field`` entry in one spelling: exact values trimmed and sorted. Raises ValueError."""
    found = MATCH_FIELD.match(text.strip())
    if not found:
        raise ValueError(
            f"{shown(text)}: expected exact:<field>=<value>[,<value>] or regex:<field>=<regex> "
            "(proxmox-notify matcher.rs FieldMatcher::from_str: `invalid match-field statement`)"
        )
    how, name, rest = found.groups()
    if how == "regex":
        try:
            re.compile(rest)
        except re.error as exc:
            raise ValueError(f"{shown(text)}: invalid regex ({exc})") from None
        return f"regex:{name}={rest}"
    return f"exact:{name}={','.join(sorted({value.strip() for value in rest.split(',')}))}"


def severity_entry(text: str) -> str:
    """A ``match-severity`` entry as a sorted set of severities. Raises ValueError for another one."""
    found = {value.strip() for value in text.split(",")}
    bad = sorted(found - set(SEVERITIES))
    if bad:
        raise ValueError(
            f"{', '.join(bad)}: not a severity ({', '.join(SEVERITIES)}; proxmox-notify lib.rs Severity)"
        )
    return ",".join(sorted(found, key=SEVERITIES.index))


def _calendar(text: str) -> str:
    if not text.strip() or re.search(r"[\x00-\x1f\x7f]", text):
        raise ValueError(
            f"{shown(text)}: expected a daily time span such as mon..fri 8-17 (parse_daily_duration)"
        )
    return text.strip()


def _target(text: str) -> str:
    problem = endpoints.name_problem(text)
    if problem:
        raise ValueError(problem)
    return text


CANONICAL = {
    "match-field": field_entry,
    "match-severity": severity_entry,
    "match-calendar": _calendar,
    "targets": _target,
}


def canonical_list(key: str, value: object) -> list[str]:
    """A declared or live list of ``key`` as a sorted set of canonical entries. Raises ValueError."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(item, str) for item in items):
        raise ValueError("expected a list of text")
    return sorted({CANONICAL[key](item) for item in items})


def identify(state_id: str, target: str, name: object = None, **extra: object) -> Declared:
    """A matcher by its name. Raises DeclarationError for an unknown key or a bad name."""
    found = identify_by_name(
        state_id,
        target,
        name,
        extra,
        noun="notification matcher",
        has="name and its keys",
        check=endpoints.name_problem,
    )
    return Declared(
        state_id, target, identity=found.identity, label=f"notification matcher {name}", names=found.names
    )


def declare(
    state_id: str, target: str, name: object = None, adopt: object = False, **options: object
) -> Declared:
    """A checked matcher declaration: ``name``, ``match-field``, ``match-severity``, ``match-calendar`` and
    ``targets`` (lists; PVE's ``target``), ``mode`` (all, any), ``invert-match``, ``comment``, ``disable``,
    ``adopt``. A cleared key (None, ``''`` or ``[]``) is PVE's default. Raises DeclarationError naming each
    bad key and its rule."""
    probe = identify(state_id, target, name=name)
    problems, values = [], {}
    for key, value in options.items():
        try:
            if key in LISTS:
                values[key] = [] if value in (None, "", []) else canonical_list(key, value)
            elif key in FIELDS:
                values[key] = DEFAULTS[key] if value in (None, "") else FIELDS[key].canonical(value)
            else:
                problems.append(f"{key}: not a notification matcher key (unknown key)")
        except ValueError as exc:
            problems.append(f"{key}: {exc}")
    if problems:
        raise DeclarationError(problems)
    return probe.declaring(values, adopt)


def parse(data: object, decl: Declared) -> dict:
    """``GET …/matchers/{name}`` → every key (one PVE does not hold as its default), ``origin`` and
    ``digest``. An entry no declaration can spell is kept as PVE's text (it differs). Raises ValueError
    for another shape."""
    if not isinstance(data, Mapping) or data.get("name") not in (None, decl.names["name"]):
        raise ValueError("expected the notification matcher's keys")
    found: dict[str, object] = {}
    for key in LISTS:
        raw = data.get(WIRE.get(key, key))
        items = [] if raw in (None, "") else raw if isinstance(raw, list) else [raw]
        try:
            found[key] = canonical_list(key, [str(item) for item in items])
        except ValueError:
            found[key] = sorted(str(item) for item in items)
    for key, field in FIELDS.items():
        raw = data.get(key)
        try:
            found[key] = DEFAULTS[key] if raw in (None, "") else field.canonical(raw)
        except ValueError:
            found[key] = str(raw)
    found["origin"] = str(data.get("origin") or "user-created")
    found["digest"] = str(data.get("digest") or "")
    return found


def _path(decl: Declared) -> str:
    return api_path("cluster", "notifications", "matchers", decl.names["name"])


def _form(decl: Declared, keys) -> tuple[dict, list[str]]:
    form: dict[str, object] = {}
    gone = []
    for key in keys:
        value = decl.values[key]
        if value in ([], DEFAULTS.get(key)):
            gone.append(key)
        else:
            form[WIRE.get(key, key)] = list(value) if key in LISTS else FIELDS[key].wire(value)  # type: ignore[arg-type]
    return form, sorted(WIRE.get(key, key) for key in gone)


def create(decl: Declared) -> Call:
    """``POST /cluster/notifications/matchers``: the name and every declared key PVE would not default."""
    form, _ = _form(decl, decl.values)
    return Call(
        "POST", "cluster/notifications/matchers", form={"name": decl.names["name"], **form}, json=True
    )


def update(decl: Declared, live: Mapping[str, object]) -> Call | None:
    """``PUT …/matchers/{name}``: each declared key that differs, ``delete`` for one back to PVE's default.
    None when nothing differs."""
    changed = [key for key, value in decl.values.items() if live.get(key) != value]
    if not changed:
        return None
    form, gone = _form(decl, changed)
    if gone:
        form["delete"] = gone
    return Call("PUT", _path(decl), form=form, json=True)


def refusals(ctx: PveContext, decl: Declared, action: str, live: Mapping[str, object] | None) -> list[str]:
    """The built-in matcher's delete; a target that neither exists nor is created by this run; a create
    whose name another entity holds."""
    name = decl.names["name"]
    if action == "delete":
        if name == endpoints.BUILTIN_MATCHER or (live or {}).get("origin") in endpoints.BUILTIN_ORIGINS:
            return [
                f"{decl.label} is built into PVE (origin {(live or {}).get('origin', 'builtin')}): PVE never "
                "removes it, a delete only resets it to its default (proxmox-notify api/mod.rs "
                "ensure_safe_to_delete). It is never deleted by a state: declare it with removal: retain."
            ]
        return []
    found = []
    missing = [item for item in decl.values.get("targets") or [] if not endpoints.will_be_target(ctx, item)]
    if missing:
        found.append(
            f"targets: {', '.join(missing)}: no such notification endpoint, and none declared earlier in "
            "this run, so PVE refuses the matcher (proxmox-notify api/mod.rs ensure_endpoints_exist: "
            f"`endpoint '{missing[0]}' does not exist`). Declare the endpoint (before the matcher) or remove "
            "it from targets."
        )
    if action == "create":
        found += endpoints.unique_refusal(ctx, decl, FAMILY, None)
    return found


def _sends_vzdump(values: Mapping[str, object]) -> bool:
    """Whether a matcher (canonical values) may route a vzdump notification anywhere: enabled, with
    targets, and, in mode all without invert-match, no ``type`` field entry ruling vzdump out (pve-manager
    ``PVE/VZDump.pm`` ``send_notification``: fields ``type => 'vzdump'``, ``hostname``, ``job-id``). Severity
    and calendar entries may match some run, so they never rule it out."""
    if values.get("disable") == 1 or not values.get("targets"):
        return False
    if values.get("mode") == "any" or values.get("invert-match") == 1:
        return True
    for entry in values.get("match-field") or []:
        how, _, rest = str(entry).partition(":")
        field, _, wanted = rest.partition("=")
        if field != "type":
            continue
        try:
            ruled_out = (
                "vzdump" not in wanted.split(",") if how == "exact" else not re.search(wanted, "vzdump")
            )
        except re.error:
            ruled_out = False
        if ruled_out:
            return False
    return True


def vzdump_note(ctx: PveContext, decl: Declared, action: str) -> list[str]:
    """A backup job's plan line when its ``notification-mode`` sends nowhere (pve-manager ``PVE/VZDump.pm``
    ``send_notification``): ``legacy-sendmail`` without ``mailto`` mails nobody; ``notification-system``
    (or ``auto`` without ``mailto``) goes through the matchers, and no matcher, live or as this run
    declares it, may route a vzdump notification to a target. Nothing when the matchers cannot be read
    (the read credential lacks Mapping.Audit on ``/mapping/notifications``): the note is modest."""
    if action == "delete":
        return []
    mode, mailto = decl.values.get("notification-mode") or "auto", decl.values.get("mailto")
    if mode == "legacy-sendmail" and not mailto:
        return [
            f"{decl.label}: notification-mode legacy-sendmail without mailto sends no notification "
            "(PVE/VZDump.pm send_notification mails only the job's mailto)"
        ]
    if mode != "notification-system" and mailto:
        return []
    try:
        rows = endpoints.listing(ctx, endpoints.MATCHERS, "notification matchers")
    except PveError:
        return []
    seen = {str(row.get("name")): parse(row, identify("", "", name=str(row.get("name")))) for row in rows}
    seen.update(planned(ctx, FAMILY))
    if any(_sends_vzdump(values) for values in seen.values()):
        return []
    return [
        f"{decl.label}: its notifications go through the notification matchers (notification-mode {mode}), "
        "and no enabled matcher with a target matches a vzdump notification (PVE/VZDump.pm "
        "send_notification: type=vzdump), so they reach nobody: declare a matcher, or give the job mailto"
    ]


def _rule(key: str) -> Rule | None:
    if key == "name":
        return Rule()
    if key in LISTS or key == "target":
        return Rule(check=lambda value: None if isinstance(value, list) else "expected an array")
    found = FIELDS.get(key)
    return found.rule() if found is not None else None


def export_values(live: Mapping[str, object], probe: Declared) -> dict:
    """``proxmox.export``: each key a live matcher holds other than PVE's default."""
    return {
        key: value
        for key, value in live.items()
        if key not in ("origin", "digest") and value not in ([], DEFAULTS.get(key, object()))
    }


SPEC = ObjectSpec(
    family=FAMILY,
    noun="notification matcher",
    declare=declare,
    identify=identify,
    read=lambda decl: Call("GET", _path(decl)),
    absence="HTTP 404 \"matcher '<name>' not found\" (proxmox-notify api/matcher.rs get_matcher)",
    is_absent=lambda error, decl: (
        error.status == 404 and error.message == f"matcher '{decl.names['name']}' not found"
    ),
    parse=parse,
    create=create,
    create_endpoint=Endpoint("POST /cluster/notifications/matchers", ("name",), _rule),
    update=update,
    update_endpoint=Endpoint("PUT /cluster/notifications/matchers/{name}", (), _rule),
    delete=lambda decl, live: Call("DELETE", _path(decl)),
    write_guard=endpoints.digest_guard,
    refusals=refusals,
    export_names=endpoints.export_name,
    export_listings=lambda ctx: [(Call("GET", endpoints.MATCHERS), {})],
    export_values=export_values,
    live_only=("origin", "digest"),
)
