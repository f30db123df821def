"""Notification endpoints (``proxmox_notification.endpoint``): one ``notifications.cfg`` section, by name.

Source: pve-manager ``PVE/API2/Cluster/Notifications.pm`` (each type's ``$<type>_properties``, the
``get_``/``create_``/``update_``/``delete_<type>_endpoint`` methods and their ``permissions``) over
proxmox-notify (proxmox-rs ``proxmox-notify/src/api/{mod,sendmail,smtp,gotify,webhook}.rs``,
``endpoints/*.rs``, ``lib.rs`` ``Config::new``, ``context/pve.rs`` ``DEFAULT_CONFIG``) through pve-rs's
perl bindings.

- Read ``GET /cluster/notifications/endpoints/{type}/{name}`` (Mapping.Audit or Mapping.Modify on
  ``/mapping/notifications``): the section, ``origin`` and the file's ``digest``, never a secret. Absence is
  exactly HTTP 404 ``endpoint '<name>' not found`` (``api/<type>.rs`` ``get_endpoint``).
- Create ``POST /cluster/notifications/endpoints/{type}`` (``name`` in the body), update ``PUT
  …/{type}/{name}`` with the keys that differ and ``delete`` for those going back to PVE's default, delete
  ``DELETE …/{type}/{name}``. Lists (``mailto``, ``mailto-user``, ``header``, ``delete``) are JSON arrays.
- Names are one namespace with the matchers (``api/mod.rs`` ``ensure_unique``: ``Cannot create '<name>',
  an entity with the same name already exists``): a create whose name another endpoint type or a matcher
  holds is refused at plan, naming it (``GET /cluster/notifications/targets`` and ``…/matchers``).
- A sendmail or smtp endpoint needs a recipient (``add_endpoint``/``update_endpoint``: ``must at least
  provide one recipient, either in mailto or in mailto-user``); ``mailto`` and ``mailto-user`` are sets.
- Secrets come from pillar and are never read back, shown, stored or compared: the smtp ``password`` and
  the gotify ``token`` (``priv/notifications.cfg``), the webhook ``secret`` entries (``{name: value}``,
  sent as ``name=<name>,value=<base64>``). They are sent at create and when ``secret_serial`` changes. A
  gotify create needs its token (``$gotify_properties``: ``token`` is not optional).
- A webhook's ``header`` (``{name: value}``) and ``body`` are declared as text: PVE keeps each value base64
  (``KeyAndBase64Val``, ``WebhookEndpoint::base64_decode``), so they are compared decoded, by meaning.
  Webhook endpoints came with pve-manager 8.2.9, released in PVE 8.3 ("api: add routes for webhook
  notification endpoints"): refused at plan on an older ``GET /version``.
- An smtp ``mode`` cannot be deleted (``DeleteableSmtpProperty`` has no ``mode``), so going back to
  ``tls`` is written as ``mode=tls``; a ``port`` left out is the mode's port (``endpoints/smtp.rs``
  ``send``: 25 insecure, 587 starttls, 465 tls).
- ``origin`` (user-created, builtin, modified-builtin) is read-only, never compared: the built-in
  ``mail-to-root`` may be adopted and changed (it then reads modified-builtin), never deleted (a delete
  resets it, ``ensure_safe_to_delete``: "Built-ins are never actually removed").
- An endpoint a matcher targets is never deleted (``ensure_safe_to_delete``: ``cannot delete '<name>',
  referenced by: <matchers>``), whether the matcher is live or declared by this run.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from salt_proxmox.datacenter.metrics import CONFIGID
from salt_proxmox.errors import DeclarationError, Refused, shown
from salt_proxmox.pve.client import api_path
from salt_proxmox.pve.constraints import Endpoint, Rule
from salt_proxmox.pve.facts import release
from salt_proxmox.pve.listing import get_rows
from salt_proxmox.simple.fields import Field
from salt_proxmox.simple.fields import secret_serial as secret_serial_value
from salt_proxmox.simple.spec import (
    Call,
    Declared,
    ObjectSpec,
    identify_by_name,
    planned,
    will_exist,
)

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.run.context import PveContext

FAMILY = "notification_endpoint"
MATCHER_FAMILY = "notification_matcher"
#: The endpoint pillar entries' secrets, as declared (``run.config.pillar_secrets``).
SECRETS = ("password", "token", "secret")
#: proxmox-notify ``context/pve.rs`` ``DEFAULT_CONFIG``: present from the start, never deleted.
BUILTIN_ENDPOINT = "mail-to-root"
BUILTIN_MATCHER = "default-matcher"
BUILTIN_ORIGINS = ("builtin", "modified-builtin")
TARGETS = "cluster/notifications/targets"
MATCHERS = "cluster/notifications/matchers"


def name_problem(name: str) -> str | None:
    """pve-configid (Notifications.pm ``name``) of 2 to 32 characters (proxmox-notify ``schema.rs``
    ``ENTITY_NAME_SCHEMA``)."""
    if not CONFIGID.match(name) or len(name) > 32:
        return f"invalid name '{name}' (pve-configid of 2 to 32 characters: letters, digits, - and _)"
    return None


def _single_line(limit: int | None = None):
    """proxmox-schema ``SINGLE_LINE_COMMENT_REGEX`` (no control character), at most ``limit``."""

    def check(text: str) -> str | None:
        if re.search(r"[\x00-\x1f\x7f]", text):
            return "a single line without control characters"
        return f"at most {limit} characters" if limit is not None and len(text) > limit else None

    return check


def _url(text: str) -> str | None:
    """proxmox-schema ``HTTP_URL_REGEX``: http(s)://host[:port][/path], one line."""
    if not re.match(r"^https?://[^\s/]+(?:/[^\x00-\x1f\x7f]*)?\Z", text):
        return "expected an http:// or https:// URL (proxmox-schema HTTP_URL_SCHEMA)"
    return None


_EMAIL_OR_USER = re.compile(r"^[^\s@,;]+(?:@[^\s@,;]+)?\Z")
_USERID = re.compile(r"^[^\s:/]+@[A-Za-z][A-Za-z0-9.\-_]+\Z")

#: The scalar keys of every endpoint type, as ``Notifications.pm`` spells them.
FIELDS: dict[str, Field] = {
    "comment": Field(check=_single_line(128)),
    "disable": Field("flag"),
    "from-address": Field(check=_single_line()),
    "author": Field(check=_single_line()),
    "server": Field(check=_single_line()),
    "port": Field("integer", minimum=1, maximum=65535),
    "mode": Field("choice", choices=("insecure", "starttls", "tls")),
    "username": Field(check=_single_line()),
    "url": Field(check=_url),
    "method": Field("choice", choices=("post", "put", "get")),
    "body": Field(),
}
#: The list keys: each a set of text.
LISTS = {
    "mailto": lambda item: None if _EMAIL_OR_USER.match(item) else "not an email address (email-or-username)",
    "mailto-user": lambda item: None if _USERID.match(item) else "not a user id like root@pam (pve-userid)",
}


@dataclass(frozen=True)
class EndpointType:
    """One endpoint type: its keys (secrets included), the required ones, the ones ``delete`` takes
    (``Deleteable<Type>Property``), its secrets, the first release that has it (``(major, minor)``)."""

    name: str
    options: frozenset[str]
    required: tuple[str, ...]
    deletable: frozenset[str]
    secrets: tuple[str, ...] = ()
    since: tuple[int, int] = (8, 0)
    defaults: Mapping[str, object] = field(default_factory=dict)


_MAIL = {"mailto", "mailto-user", "from-address", "author", "comment", "disable"}
TYPES: dict[str, EndpointType] = {
    "sendmail": EndpointType("sendmail", frozenset(_MAIL), (), frozenset(_MAIL)),
    "smtp": EndpointType(
        "smtp",
        frozenset(_MAIL | {"server", "port", "mode", "username", "password"}),
        ("server", "from-address"),
        frozenset(_MAIL - {"from-address"} | {"password", "port", "username"}),
        secrets=("password",),
        defaults={"mode": "tls"},
    ),
    "gotify": EndpointType(
        "gotify",
        frozenset({"server", "token", "comment", "disable"}),
        ("server",),
        frozenset({"comment", "disable"}),
        secrets=("token",),
    ),
    "webhook": EndpointType(
        "webhook",
        frozenset({"url", "method", "header", "body", "secret", "comment", "disable"}),
        ("url", "method"),
        frozenset({"comment", "disable", "header", "body", "secret"}),
        secrets=("secret",),
        since=(8, 3),
    ),
}
#: ``endpoints/smtp.rs`` ``send``: the port each mode connects to when none is set.
SMTP_PORTS = {"insecure": 25, "starttls": 587, "tls": 465}


def default(kind: EndpointType, key: str, values: Mapping[str, object]) -> object:
    """The value PVE uses for ``key`` of a ``kind`` endpoint holding none, given its ``values``."""
    if key == "port" and kind.name == "smtp":
        return SMTP_PORTS[str(values.get("mode") or "tls")]
    if key in LISTS or key == "header":
        return []
    return kind.defaults.get(key, FIELDS[key].cleared()) if key in FIELDS else ""


def _set_of(key: str, value: object, check) -> list[str]:
    """A declared or live list as a sorted set of text. Raises ValueError naming the bad item."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(item, str) for item in items):
        raise ValueError("expected a list of text")
    found = sorted({item.strip() for item in items if item.strip()})
    for item in found:
        problem = check(item)
        if problem:
            raise ValueError(f"{shown(item)}: {problem}")
    return found


def _headers(value: object) -> list[str]:
    """Declared headers ``{name: value}`` (or their canonical ``name=value`` list, as an ownership row
    keeps them) as sorted ``name=value`` text (decoded), compared by meaning."""
    if isinstance(value, list) and all(isinstance(item, str) and "=" in item for item in value):
        value = dict(item.partition("=")[::2] for item in value)
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and k and isinstance(v, str) and v for k, v in value.items()
    ):
        raise ValueError("expected a mapping of header names to non-empty text")
    return sorted(f"{name}={text}" for name, text in value.items())


def decoded(text: str) -> str:
    """Base64 text as PVE decodes it (``proxmox_base64::decode``, then UTF-8). Raises ValueError."""
    try:
        return base64.b64decode(text, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError) as exc:
        raise ValueError(f"not base64 of UTF-8 text ({exc})") from None


def _encoded(text: str) -> str:
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


def property_pairs(entry: str) -> dict[str, str]:
    """A ``name=<name>,value=<base64>`` property string (``KeyAndBase64Val``) as ``{name, value}``."""
    found = {}
    for part in entry.split(","):
        key, _, value = part.partition("=")
        found[key.strip()] = value.strip()
    return found


def identify(
    state_id: str, target: str, name: object = None, type: object = None, **extra: object
) -> Declared:
    """An endpoint by its name (``type`` names its path; ``resolve`` fills it for a destroy without an
    ownership row). Raises DeclarationError for an unknown key, a bad name or type."""
    identify_by_name(
        state_id,
        target,
        name,
        extra,
        noun="notification endpoint",
        has="name, type and its keys",
        check=name_problem,
    )
    if type is not None and type not in TYPES:
        raise DeclarationError(
            f"type: {shown(type)} is not a notification endpoint type ({', '.join(TYPES)})"
        )
    names = {"name": str(name), **({"type": str(type)} if type is not None else {})}
    return Declared(state_id, target, identity=str(name), label=f"notification endpoint {name}", names=names)


def declare(
    state_id: str,
    target: str,
    name: object = None,
    type: object = None,
    adopt: object = False,
    secret_serial: object = None,
    **options: object,
) -> Declared:
    """A checked endpoint declaration: ``name``, ``type`` (sendmail, smtp, gotify, webhook), the type's
    keys as ``Notifications.pm`` spells them (``mailto``/``mailto-user`` lists, a webhook's ``header`` as
    ``{name: value}`` and ``body`` as text), its secrets from pillar (smtp ``password``, gotify ``token``,
    webhook ``secret`` as ``{name: value}``: kept in ``Declared.secrets``), ``secret_serial`` (an integer:
    the secrets are written again when it changes), ``adopt``. A cleared key (None or ``''``) is PVE's
    default. Raises DeclarationError naming each bad key and its rule."""
    if type not in TYPES:
        identify(state_id, target, name=name)
        raise DeclarationError(
            f"type: {shown(type)} is not a notification endpoint type ({', '.join(TYPES)})"
        )
    probe = identify(state_id, target, name=name, type=type)
    kind = TYPES[str(type)]
    problems, secrets, values = [], {}, {}
    for key, value in options.items():
        if key not in FIELDS and key not in LISTS and key not in ("header", *SECRETS):
            problems.append(f"{key}: not a notification endpoint key (unknown key)")
        elif key not in kind.options:
            takers = ", ".join(sorted(t.name for t in TYPES.values() if key in t.options))
            problems.append(
                f"{key}: not a key of a {kind.name} endpoint (Notifications.pm ${kind.name}_properties; PVE: "
                f"`property is not defined in schema`); {takers} take it"
            )
        elif key in kind.secrets:
            problem = _secret_problem(key, value)
            if problem:
                problems.append(problem)
            else:
                secrets[key] = _secret_wire(key, value)
        elif value is None or value == "" or value == [] or value == {}:
            if key in kind.required:
                problems.append(f"{key}: a {kind.name} endpoint requires it (Notifications.pm)")
        else:
            try:
                if key in LISTS:
                    values[key] = _set_of(key, value, LISTS[key])
                elif key == "header":
                    values[key] = _headers(value)
                else:
                    values[key] = FIELDS[key].canonical(value)
            except ValueError as exc:
                problems.append(f"{key}: {exc}")
    problems += [
        f"{key}: a {kind.name} endpoint requires it (Notifications.pm ${kind.name}_properties)"
        for key in kind.required
        if key not in options
    ]
    if kind.name in ("sendmail", "smtp") and not values.get("mailto") and not values.get("mailto-user"):
        problems.append(
            "mailto: a sendmail or smtp endpoint needs a recipient in mailto or mailto-user (proxmox-notify "
            "api/sendmail.rs add_endpoint: `must at least provide one recipient, either in mailto or in "
            "mailto-user`)"
        )
    if secret_serial is not None:
        number, problem = secret_serial_value(secret_serial, secrets, "secret")
        if problem:
            problems.append(problem)
        else:
            values["secret_serial"] = number
    if problems:
        raise DeclarationError(problems)
    for key in sorted(options, key=lambda key: key == "port"):  # a cleared key is PVE's value
        if key in kind.options and key not in kind.secrets and key not in values:
            values[key] = default(kind, key, values)
    found = probe.declaring(values, adopt)  # the type is a name: it is in the path
    return Declared(**{**found.__dict__, "secrets": secrets})


def _secret_problem(key: str, value: object) -> str | None:
    if key == "secret":
        if not isinstance(value, Mapping) or not value:
            return "secret: expected a mapping of secret names to text (secrets, never shown)"
        bad = sorted(
            str(k) for k, v in value.items() if not isinstance(v, str) or not v or name_problem(str(k))
        )
        return f"secret: {', '.join(bad)}: each a name (pve-configid) and non-empty text" if bad else None
    return (
        None
        if isinstance(value, str) and value
        else f"{key}: expected non-empty text (a secret, never shown)"
    )


def _secret_wire(key: str, value: object) -> object:
    if key == "secret":
        return [f"name={name},value={_encoded(str(text))}" for name, text in sorted(dict(value).items())]
    return str(value)


def parse(data: object, decl: Declared) -> dict:
    """``GET …/endpoints/{type}/{name}`` → ``type``, ``origin``, ``digest`` and every key of the type, one
    PVE does not hold as the value PVE uses; headers and body decoded; no secret. Raises ValueError for
    another shape."""
    kind = TYPES.get(str(decl.names.get("type")))
    if not isinstance(data, Mapping) or kind is None or data.get("name") not in (None, decl.names["name"]):
        raise ValueError("expected the notification endpoint's keys")
    found: dict[str, object] = {"type": kind.name}
    for key in sorted(kind.options - set(kind.secrets), key=lambda key: key == "port"):
        raw = data.get(key)
        if raw is None or raw == "" or raw == []:
            found[key] = default(kind, key, found)
        elif key in LISTS:
            found[key] = _set_of(key, raw, lambda item: None)
        elif key == "header":
            found[key] = sorted(_live_header(entry) for entry in (raw if isinstance(raw, list) else [raw]))
        elif key == "body":
            try:
                found[key] = decoded(str(raw))
            except ValueError:
                found[key] = f"(not base64) {raw}"
        else:
            try:
                found[key] = FIELDS[key].canonical(raw)
            except ValueError:
                found[key] = str(raw)
    found["origin"] = str(data.get("origin") or "user-created")
    found["digest"] = str(data.get("digest") or "")
    return found


def _live_header(entry: object) -> str:
    pairs = property_pairs(str(entry))
    try:
        return f"{pairs.get('name', '')}={decoded(pairs.get('value', ''))}"
    except ValueError:
        return f"{pairs.get('name', '')}=(not base64) {pairs.get('value', '')}"


def _kind(decl: Declared) -> EndpointType:
    return TYPES[str(decl.names.get("type") or "sendmail")]


def _path(decl: Declared) -> str:
    return api_path("cluster", "notifications", "endpoints", _kind(decl).name, decl.names["name"])


def _wire(key: str, value: object) -> object:
    if key in LISTS:
        return list(value)  # type: ignore[arg-type]
    if key == "header":
        return [f"name={n},value={_encoded(v)}" for n, _, v in (item.partition("=") for item in value)]  # type: ignore[union-attr]
    if key == "body":
        return _encoded(str(value))
    return FIELDS[key].wire(value)


def _plain(decl: Declared) -> dict:
    return {key: value for key, value in decl.values.items() if key != "secret_serial"}


def create(decl: Declared) -> Call:
    """``POST /cluster/notifications/endpoints/{type}``: the name, every declared key other than a default
    left empty, the secrets."""
    kind = _kind(decl)
    form: dict[str, object] = {"name": decl.names["name"]}
    for key, value in _plain(decl).items():
        if value not in ("", []) and not (key in kind.deletable and value == default(kind, key, decl.values)):
            form[key] = _wire(key, value)
    form.update(decl.secrets)
    return Call("POST", api_path("cluster", "notifications", "endpoints", kind.name), form=form, json=True)


def update(decl: Declared, live: Mapping[str, object]) -> Call | None:
    """``PUT …/{type}/{name}``: each declared key that differs (``delete`` for a deletable one going back
    to PVE's default, an smtp ``mode`` written as ``tls``), the secrets when ``secret_serial`` differs from
    the recorded one. None when nothing differs."""
    kind = _kind(decl)
    changed = {key: value for key, value in _plain(decl).items() if live.get(key) != value}
    due = "secret_serial" in decl.values and live.get("secret_serial") != decl.values["secret_serial"]
    if not changed and not due:
        return None
    form: dict[str, object] = {}
    gone = []
    for key, value in changed.items():
        if key in kind.deletable and value == default(kind, key, decl.values):
            gone.append(key)
        else:
            form[key] = _wire(key, value)
    if gone:
        form["delete"] = sorted(gone)
    if due:
        form.update(decl.secrets)
    return Call("PUT", _path(decl), form=form, json=True)


def digest_guard(ctx, credential, decl: Declared, live: Mapping[str, object]) -> dict:
    """The digest of ``notifications.cfg`` the decision was made on (``api/mod.rs`` ``verify_digest``:
    ``detected modified configuration - file changed by other user? Try again.``)."""
    digest = live.get("digest")
    return {"digest": str(digest)} if isinstance(digest, str) and digest else {}


def listing(ctx: PveContext, path: str, what: str) -> list[Mapping]:
    """The run's shared rows of ``GET path`` (targets or matchers), read with the read credential."""
    return get_rows(ctx.client, path, ctx.broker.read(), what=what, reads=ctx.reads)


def holder(ctx: PveContext, name: str, family: str, type_: str | None) -> str | None:
    """What else holds ``name`` in ``notifications.cfg`` (an endpoint of another type, a matcher), or
    None: one namespace for both (``api/mod.rs`` ``ensure_unique``)."""
    for row in listing(ctx, TARGETS, "notification targets"):
        if row.get("name") == name and (family != FAMILY or row.get("type") != type_):
            return f"a {row.get('type')} endpoint"
    if family == FAMILY and any(
        row.get("name") == name for row in listing(ctx, MATCHERS, "notification matchers")
    ):
        return "a matcher"
    return None


def unique_refusal(ctx: PveContext, decl: Declared, family: str, type_: str | None) -> list[str]:
    """A create whose name another entity of ``notifications.cfg`` holds, refused naming it."""
    other = holder(ctx, decl.names["name"], family, type_)
    if other is None:
        return []
    return [
        f"{decl.label}: the name is held by {other} (endpoints and matchers share notifications.cfg's "
        f"names), and PVE refuses the create (proxmox-notify api/mod.rs ensure_unique: `Cannot create "
        f"'{decl.names['name']}', an entity with the same name already exists`). Declare it under another "
        "name, or the other one absent first."
    ]


def referrers(ctx: PveContext, name: str) -> list[str]:
    """The matchers targeting endpoint ``name``: the live ones (``GET …/matchers``) as this run leaves
    them (a matcher this run changes counts with its declared targets) and those this run declares."""
    declared = planned(ctx, MATCHER_FAMILY)
    found = {str(row.get("name")) for row in listing(ctx, MATCHERS, "notification matchers")
             if str(row.get("name")) not in declared and name in _targets_of(row.get("target"))}  # fmt: skip
    found |= {matcher for matcher, values in declared.items() if name in (values.get("targets") or [])}
    return sorted(found)


def _targets_of(value: object) -> list[str]:
    return [str(item) for item in value] if isinstance(value, list) else [str(value)] if value else []


def refusals(ctx: PveContext, decl: Declared, action: str, live: Mapping[str, object] | None) -> list[str]:
    """A built-in or targeted endpoint's delete; a create whose name is taken or that lacks a gotify
    token. (A type the release lacks is ``for_cluster``'s.)"""
    name = decl.names["name"]
    if action == "delete":
        if name == BUILTIN_ENDPOINT or (live or {}).get("origin") in BUILTIN_ORIGINS:
            return [
                f"{decl.label} is built into PVE (origin {(live or {}).get('origin', 'builtin')}): PVE never "
                "removes it, a delete only resets it to its default (proxmox-notify api/mod.rs "
                "ensure_safe_to_delete). It is never deleted by a state: declare it with removal: retain."
            ]
        users = referrers(ctx, name)
        if users:
            return [
                f"{decl.label} is the target of matcher(s) {', '.join(users)}, and PVE refuses to delete it "
                f"(proxmox-notify api/mod.rs ensure_safe_to_delete: `cannot delete '{name}', referenced by: "
                f"{', '.join(users)}`). Remove it from their targets first."
            ]
        return []
    kind = _kind(decl)
    found = []
    if action == "create":
        found += unique_refusal(ctx, decl, FAMILY, kind.name)
        missing = [key for key in kind.secrets if key == "token" and key not in decl.secrets]
        if missing:
            found.append(
                "token: a gotify endpoint is created with its token (Notifications.pm $gotify_properties: "
                "token is not optional); put it in the entry's pillar (secrets_pillar)."
            )
    return found


def for_cluster(ctx: PveContext, decl: Declared) -> ObjectSpec:
    """This family on ``ctx``'s cluster. Raises Refused for a webhook endpoint on a release older than PVE
    8.3 (``GET /version``), before any read: PVE has no such path then (pve-manager 8.2.9, released with
    PVE 8.3: "api: add routes for webhook notification endpoints")."""
    kind = _kind(decl)
    cluster = release(ctx)
    if (cluster.major, cluster.minor) < kind.since:
        raise Refused(
            f"type: the cluster runs PVE {cluster.release}, which has no {kind.name} notification endpoint "
            f"(pve-manager 8.2.9, released with PVE {kind.since[0]}.{kind.since[1]}, added its API paths). "
            "Upgrade, or declare another type. Nothing was written."
        )
    return SPEC


def resolve(ctx: PveContext, declared: Mapping[str, object]) -> tuple[dict, list[str]]:
    """An endpoint named without a ``type`` (a destroy without an ownership row): its type from ``GET
    /cluster/notifications/targets``; a name no endpoint holds reads as a sendmail one, whose 404 then
    proves it absent."""
    if declared.get("type") is not None:
        return dict(declared), []
    rows = listing(ctx, TARGETS, "notification targets")
    type_ = next((row.get("type") for row in rows if row.get("name") == declared.get("name")), None)
    return {**declared, "type": str(type_) if type_ in TYPES else "sendmail"}, []


def _rule(key: str) -> Rule | None:
    if key in ("name", "password", "token", "secret"):
        return Rule(check=lambda value: None)
    if key in LISTS or key == "header":
        return Rule(check=lambda value: None if isinstance(value, list) else "expected an array")
    found = FIELDS.get(key)
    return found.rule() if found is not None else None


def export_values(live: Mapping[str, object], probe: Declared) -> dict:
    """``proxmox.export``: a live endpoint's type, required keys and each key other than PVE's default,
    headers as ``{name: value}``; never a secret (PVE shows none)."""
    kind = TYPES[str(live["type"])]
    found: dict[str, object] = {"type": kind.name}
    for key in sorted(kind.options - set(kind.secrets)):
        value = live.get(key)
        if key in kind.required or value != default(kind, key, live):
            found[key] = dict(item.partition("=")[::2] for item in value) if key == "header" else value  # type: ignore[union-attr]
    return found


def export_name(row: Mapping[str, object]) -> Mapping[str, object] | None:
    """``proxmox.export``: a row of ``GET /cluster/notifications/targets`` (or ``…/matchers``) as its
    identity, None for a built-in PVE holds as it ships it (``origin: builtin``), like a role PVE ships."""
    name = row.get("name")
    if not isinstance(name, str) or row.get("origin") == "builtin":
        return None
    return {"name": name, "type": str(row["type"])} if row.get("type") in TYPES else {"name": name}


def will_be_target(ctx: PveContext, name: str) -> bool:
    """Whether endpoint ``name`` exists (``GET /cluster/notifications/targets``) or this run creates it."""
    return will_exist(ctx, FAMILY, name) or any(
        row.get("name") == name for row in listing(ctx, TARGETS, "notification targets")
    )


SPEC = ObjectSpec(
    family=FAMILY,
    noun="notification endpoint",
    declare=declare,
    identify=identify,
    identity_keys=("name", "type"),
    read=lambda decl: Call("GET", _path(decl)),
    absence="HTTP 404 \"endpoint '<name>' not found\" (proxmox-notify api/<type>.rs get_endpoint)",
    is_absent=lambda error, decl: (
        error.status == 404 and error.message == f"endpoint '{decl.names['name']}' not found"
    ),
    parse=parse,
    create=create,
    create_endpoint=Endpoint("POST /cluster/notifications/endpoints/{type}", ("name",), _rule),
    update=update,
    update_endpoint=Endpoint("PUT /cluster/notifications/endpoints/{type}/{name}", (), _rule),
    delete=lambda decl, live: Call("DELETE", _path(decl)),
    write_guard=digest_guard,
    refusals=refusals,
    for_cluster=for_cluster,
    resolve=resolve,
    recorded=("secret_serial",),
    export_names=lambda row: export_name(row),
    export_listings=lambda ctx: [(Call("GET", TARGETS), {})],
    export_values=export_values,
    export_secrets=lambda live: set(TYPES[str(live["type"])].secrets),
    live_only=("origin", "digest"),
)
