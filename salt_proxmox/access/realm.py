"""Authentication realms (``proxmox_realm``): one ``domains.cfg`` entry of type ldap, ad or openid.

Source: pve-access-control 9.1.1 ``src/PVE/API2/Domains.pm`` (``index``, ``create``, ``read``, ``update``,
``delete``, ``sync``, ``$map_sync_default_options``), ``src/PVE/Auth/Plugin.pm`` (``realm-sync-options``),
``src/PVE/Auth/LDAP.pm``, ``AD.pm`` and ``OpenId.pm`` (``properties`` and ``options``: which keys a type
takes, which are required, ``username-claim`` fixed). The ``stable-bookworm`` branch (PVE 8) has the same
option tables but OpenID's ``audiences`` (9.1.1, "fix #5076").

- Read ``GET /access/domains/{realm}`` (Realm.Allocate or Sys.Audit on ``/access/realm``): the options and
  ``digest``; never the bind ``password`` (``on_add_hook`` keeps it in ``priv/realm/<realm>.pw``). An
  OpenID ``client-key`` is returned: the product leaves it out of every value it reads, shows or stores.
  Absence is exactly HTTP 500 ``domain '<realm>' does not exist``.
- Create ``POST /access/domains``; update ``PUT /access/domains/{realm}`` with the changed options,
  ``delete`` for cleared ones and the digest (``assert_if_modified``); delete ``DELETE
  /access/domains/{realm}``. All need Realm.Allocate on ``/access/realm``.
- ``bind_password`` (PVE's ``password``) and ``client-key`` come from pillar and are sent at create and when
  their serial (``bind_password_serial``, ``client_key_serial``, recorded in the ownership row) changes.
- ``type`` is identity; ``username-claim`` is fixed (``check_config``: "can't change value of fixed
  parameter"): both refused at plan. ``pam`` and ``pve`` are never managed: PVE deletes either on request
  (``delete`` does not refuse) and re-creates it bare, which this product never does.
- ``sync-defaults-options`` is compared in PVE's spelling: ``full``/``purge`` mapped to ``remove-vanished``
  and dropped, the rest printed ``key=value`` in key order (``print_property_string``).
- A sync (``POST /access/domains/{realm}/sync``) is an ad-hoc call (``sync``), never a plan's side effect.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from salt_proxmox.access.names import BUILTIN_REALMS, realm_problem
from salt_proxmox.errors import DeclarationError, shown
from salt_proxmox.pve.client import api_path
from salt_proxmox.pve.constraints import Endpoint, Rule
from salt_proxmox.pve.facts import package_at_least
from salt_proxmox.pve.listing import get_rows
from salt_proxmox.simple.fields import Field, canonical_values, deleted_keys, live_values, serial
from salt_proxmox.simple.spec import Call, Declared, ObjectSpec, exact_message, export_by, identify_by_name
from salt_proxmox.wire.propstring import flag, pairs

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.pve.client import Credential
    from salt_proxmox.run.context import PveContext

FAMILY = "realm"
#: The realm pillar entries' secrets, as declared (``run.config.pillar_secrets``).
SECRETS = ("bind_password", "client-key")
#: A declared secret → the form key PVE takes it as, and the serial that rewrites it.
SECRET_KEYS = {
    "bind_password": ("password", "bind_password_serial"),
    "client-key": ("client-key", "client_key_serial"),
}

_SCOPE = ("users", "groups", "both")
_VANISHED = re.compile(r"^(?:(?:acl|properties|entry);)*(?:acl|properties|entry)\Z|^none\Z")


def sync_options(value: str) -> str:
    """``sync-defaults-options`` in PVE's spelling (``$map_sync_default_options`` with deprecated keys
    dropped, then ``print_property_string``): keys sorted, flags 0/1, ``full``/``purge`` turned into
    ``remove-vanished``. Raises ValueError for a key or value ``realm-sync-options`` refuses."""
    found: dict[str, str] = {}
    for key, text in pairs(value):
        if key in ("full", "purge", "enable-new"):
            found[key] = flag(text)
        elif key == "scope":
            if text not in _SCOPE:
                raise ValueError(f"scope: {shown(text)} is not one of {', '.join(_SCOPE)}")
            found[key] = text
        elif key == "remove-vanished":
            if not _VANISHED.match(text):
                raise ValueError("remove-vanished: expected acl;properties;entry items or none")
            found[key] = text
        else:
            raise ValueError(f"{key}: not a realm sync option (scope, remove-vanished, enable-new)")
    if "remove-vanished" not in found and (found.get("full") == "1" or found.get("purge") == "1"):
        parts = (["entry", "properties"] if found.get("full") == "1" else []) + (
            ["acl"] if found.get("purge") == "1" else []
        )
        found["remove-vanished"] = ";".join(parts)
    found.pop("full", None)
    found.pop("purge", None)
    return ",".join(f"{key}={found[key]}" for key in sorted(found))


def _sync_text(value: object) -> object:
    if isinstance(value, Mapping):
        return ",".join(f"{key}={flag(v) if isinstance(v, bool) else v}" for key, v in value.items())
    return value


def _longest(limit: int):
    return lambda text: f"at most {limit} characters" if len(text) > limit else None


_LDAP_ATTR = re.compile(r"^[\w.\-]+\Z")
_CLAIM = re.compile(r"^[A-Za-z0-9.\-_]+\Z")
_URI_SAFE = re.compile(r'^[^\x00-\x1F\x7F <>#"]*\Z')

#: Every option of the three types (Plugin/LDAP/AD/OpenId ``properties``), as ``simple.fields`` keys.
FIELDS: dict[str, Field] = {
    "server1": Field(check=_longest(256)),
    "server2": Field(check=_longest(256)),
    "port": Field("integer", minimum=1, maximum=65535),
    "secure": Field("flag"),
    "sslversion": Field("choice", choices=("tlsv1", "tlsv1_1", "tlsv1_2", "tlsv1_3")),
    "default": Field("flag"),
    "comment": Field(check=_longest(4096)),
    "tfa": Field(check=_longest(128)),
    "verify": Field("flag"),
    "capath": Field(),
    "cert": Field(),
    "certkey": Field(),
    "base_dn": Field(check=_longest(256)),
    "bind_dn": Field(check=_longest(256)),
    "user_attr": Field(
        check=lambda t: None if re.match(r"^\S{2,}\Z", t) and len(t) <= 256 else "not \\S{2,}"
    ),
    "filter": Field(check=_longest(2048)),
    "sync_attributes": Field(
        check=lambda t: (
            None if re.match(r"^\w+=[^,]+(,\s*\w+=[^,]+)*\Z", t) else "expected field=attribute,..."
        )
    ),
    "user_classes": Field(),
    "group_dn": Field(check=_longest(256)),
    "group_name_attr": Field(check=lambda t: None if _LDAP_ATTR.match(t) else "not an LDAP attribute name"),
    "group_filter": Field(check=_longest(2048)),
    "group_classes": Field(),
    "sync-defaults-options": Field(normal=sync_options),
    "mode": Field("choice", choices=("ldap", "ldaps", "ldap+starttls")),
    "case-sensitive": Field("flag"),
    "domain": Field(check=lambda t: None if re.match(r"^\S+\Z", t) and len(t) <= 256 else "not \\S+"),
    "issuer-url": Field(check=_longest(256)),
    "client-id": Field(check=_longest(256)),
    "autocreate": Field("flag"),
    "username-claim": Field(),
    "groups-claim": Field(check=lambda t: None if _CLAIM.match(t) and len(t) <= 256 else "not a claim name"),
    "groups-autocreate": Field("flag"),
    "groups-overwrite": Field("flag"),
    "prompt": Field(check=lambda t: None if re.match(r"^\S+\Z", t) else "not one word"),
    "scopes": Field(),
    "acr-values": Field(check=lambda t: None if _URI_SAFE.match(t) else "holds a character a URI may not"),
    "query-userinfo": Field("flag"),
    "audiences": Field(check=lambda t: None if _URI_SAFE.match(t) else "holds a character a URI may not"),
}


@dataclass(frozen=True)
class RealmType:
    """One type: its ``options`` (``options()``), the ``required`` ones, the ``fixed`` ones, its
    ``secrets`` (declared names) and its ``source``."""

    name: str
    options: frozenset[str]
    required: tuple[str, ...]
    source: str
    fixed: tuple[str, ...] = ()
    secrets: tuple[str, ...] = ()
    #: Options a package version added: ``{option: (package, version)}``.
    since: Mapping[str, tuple[str, tuple[int, ...]]] = field(default_factory=dict)


_LDAP_OPTIONS = frozenset(
    [
        "server1",
        "server2",
        "base_dn",
        "bind_dn",
        "user_attr",
        "port",
        "secure",
        "sslversion",
        "default",
        "comment",
        "tfa",
        "verify",
        "capath",
        "cert",
        "certkey",
        "filter",
        "sync_attributes",
        "user_classes",
        "group_dn",
        "group_name_attr",
        "group_filter",
        "group_classes",
        "sync-defaults-options",
        "mode",
        "case-sensitive",
    ]
)
TYPES: dict[str, RealmType] = {
    "ldap": RealmType(
        "ldap", _LDAP_OPTIONS, ("server1", "base_dn", "user_attr"), "Auth/LDAP.pm", secrets=("bind_password",)
    ),
    "ad": RealmType(
        "ad", _LDAP_OPTIONS | {"domain"}, ("server1", "domain"), "Auth/AD.pm", secrets=("bind_password",)
    ),
    "openid": RealmType(
        "openid",
        frozenset(
            [
                "issuer-url",
                "client-id",
                "autocreate",
                "username-claim",
                "groups-claim",
                "groups-autocreate",
                "groups-overwrite",
                "prompt",
                "scopes",
                "acr-values",
                "audiences",
                "default",
                "comment",
                "query-userinfo",
            ]
        ),
        ("issuer-url", "client-id"),
        "Auth/OpenId.pm",
        fixed=("username-claim",),
        secrets=("client-key",),
        since={"audiences": ("libpve-access-control", (9, 1, 1))},
    ),
}
_SERIALS = tuple(serial for _, serial in SECRET_KEYS.values())


def _rule(key: str) -> Rule | None:
    if key in ("realm", "type", "password", "client-key"):
        return Rule()
    found = FIELDS.get(key)
    return found.rule() if found is not None else None


CREATE = Endpoint("POST /access/domains", ("realm", "type"), _rule)
UPDATE = Endpoint("PUT /access/domains/{realm}", (), _rule)


def _realm_problem(name: str) -> str | None:
    if name in BUILTIN_REALMS:
        return (
            f"{name} is a built-in realm; PVE deletes it on request and re-creates it bare (Domains.pm "
            "delete, Auth/Plugin.pm parse_config), so this product never declares, deletes or re-creates it"
        )
    return realm_problem(name)


def identify(state_id: str, target: str, name: object = None, **extra: object) -> Declared:
    """A realm by its name. Raises DeclarationError for an unknown key, a bad name, ``pam`` and ``pve``."""
    return identify_by_name(
        state_id, target, name, extra, noun="realm", has="name, type and its options", check=_realm_problem
    )


def declare(
    state_id: str,
    target: str,
    name: object = None,
    type: object = None,
    adopt: object = False,
    **options: object,
) -> Declared:
    """A checked realm declaration: ``name``, ``type`` (ldap, ad, openid), the type's options as the API
    spells them (``sync-defaults-options`` as text or a mapping), its secrets (``bind_password``,
    ``client-key``, from pillar) and their serials, ``adopt``. Raises DeclarationError naming each key."""
    probe = identify(state_id, target, name=name)
    kind = TYPES.get(type) if isinstance(type, str) else None
    if kind is None:
        raise DeclarationError(
            f"type: {shown(type)} is not a realm type this product manages (ldap, ad, openid)"
        )
    problems, secrets, plain, serials = [], {}, {}, {}
    for key, value in options.items():
        if key in SECRET_KEYS:
            if key not in kind.secrets:
                problems.append(f"{key}: a {kind.name} realm takes no {key} ({kind.source} options)")
            elif not isinstance(value, str) or not value:
                problems.append(f"{key}: expected non-empty text (a secret, never shown)")
            else:
                secrets[SECRET_KEYS[key][0]] = value
        elif key in _SERIALS:
            if value is not None:
                serials[key] = value
        elif key not in FIELDS:
            problems.append(f"{key}: not a realm option (unknown key)")
        elif key not in kind.options:
            takes = sorted(other.name for other in TYPES.values() if key in other.options)
            problems.append(
                f"{key}: not an option of a {kind.name} realm ({kind.source}); {', '.join(takes)} take it"
            )
        else:
            plain[key] = _sync_text(value) if key == "sync-defaults-options" else value
    try:
        values = canonical_values(FIELDS, plain)
    except DeclarationError as exc:
        problems += exc.problems
        values = {}
    for secret, (_, serial_key) in SECRET_KEYS.items():
        if serial_key not in serials:
            continue
        number, problem = serial(serial_key, serials[serial_key])
        if problem:
            problems.append(problem)
        elif secret not in options:
            problems.append(f"{serial_key}: the declaration holds no {secret} to write again")
        else:
            values[serial_key] = number
    missing = [key for key in kind.required if not values.get(key)]
    problems += [f"{key}: a {kind.name} realm requires it ({kind.source} options)" for key in missing]
    if problems:
        raise DeclarationError(problems)
    found = probe.declaring({"type": kind.name, **values}, adopt)
    return Declared(**{**found.__dict__, "secrets": secrets})


def parse(data: object, decl: Declared) -> dict:
    """``GET /access/domains/{realm}`` → ``type``, ``digest`` and every ``FIELDS`` option (cleared when not
    held); ``client-key`` and any password are never kept. Raises ValueError for another shape."""
    if not isinstance(data, Mapping) or not isinstance(data.get("type"), str):
        raise ValueError("expected the realm's options with its type")
    found = live_values(FIELDS, {key: value for key, value in data.items() if key not in SECRETS})
    found["type"] = data["type"]
    found["digest"] = str(data.get("digest") or "")
    return found


def export_values(live: Mapping[str, object]) -> dict:
    """``proxmox.export``: a live realm's type and the options its type takes that it holds (``parse``
    reads every type's options, cleared where not held)."""
    realm = TYPES.get(str(live.get("type")))
    takes = realm.options if realm is not None else frozenset()
    return {
        "type": live.get("type"),
        **{k: v for k, v in live.items() if k in takes and v not in (None, "", [], 0)},
    }


def _path(decl: Declared) -> str:
    return api_path("access", "domains", decl.names["name"])


def _plain(decl: Declared) -> dict:
    return {key: value for key, value in decl.values.items() if key not in ("type", *_SERIALS)}


def create(decl: Declared) -> Call:
    """``POST /access/domains``: realm, type, every declared option set (flags at 0 too), the secrets."""
    form = {"realm": decl.names["name"], "type": str(decl.values["type"])}
    for key, value in _plain(decl).items():
        if value != "" and not (value == 0 and FIELDS[key].kind != "flag"):
            form[key] = FIELDS[key].wire(value)
    form.update(decl.secrets)
    return Call("POST", "access/domains", form=form)


def _secret_due(decl: Declared, live: Mapping[str, object]) -> dict[str, str]:
    due = {}
    for form_key, serial_key in SECRET_KEYS.values():
        if serial_key in decl.values and live.get(serial_key) != decl.values[serial_key]:
            due[form_key] = decl.secrets[form_key]
    return due


def update(decl: Declared, live: Mapping[str, object]) -> Call | None:
    """``PUT /access/domains/{realm}``: the options that differ, ``delete`` for cleared ones, a secret
    whose serial differs from the recorded one. None when nothing is sent."""
    changed = {key: value for key, value in _plain(decl).items() if live.get(key) != value}
    form = {key: FIELDS[key].wire(value) for key, value in changed.items() if value != "" and not (
        value == 0 and FIELDS[key].kind != "flag")}  # fmt: skip
    gone = [key for key in deleted_keys(changed, live) if FIELDS[key].kind != "flag"]
    if gone:
        form["delete"] = ",".join(gone)
    if live.get("type") != decl.values["type"]:
        form["type"] = str(decl.values["type"])  # never sent: ``refusals`` refuses another type
    form.update(_secret_due(decl, live))
    return Call("PUT", _path(decl), form=form) if form else None


def write_guard(ctx: PveContext, credential: Credential, decl: Declared, live: Mapping[str, object]) -> dict:
    """``{digest}`` of domains.cfg from a fresh read (``update`` asserts it)."""
    data = ctx.client.request("GET", _path(decl), credential)
    digest = data.get("digest") if isinstance(data, Mapping) else None
    return {"digest": str(digest)} if digest else {}


def refusals(ctx: PveContext, decl: Declared, action: str, live: Mapping[str, object] | None) -> list[str]:
    """Another type, a fixed option changed, an option newer than a node's pve-access-control."""
    if action == "delete":
        return []
    kind = TYPES[str(decl.values["type"])]
    if live is not None and live.get("type") != kind.name:
        return [
            f"{decl.label} is a {live.get('type')} realm, and the type is its identity: a {kind.name} "
            "realm is "
            "another realm. Declare it under a new name (and this one absent), never a re-create."
        ]
    found = []
    for key in kind.fixed:
        if live is not None and key in decl.values and live.get(key) != decl.values[key]:
            found.append(
                f"{key}: {decl.label} has {shown(live.get(key))}, and PVE refuses to change a fixed option "
                f"(`can't change value of fixed parameter '{key}'`, "
                "pve-common SectionConfig.pm check_config). "
                "Declare it as it is, or define a new realm."
            )
    for key, since in kind.since.items():
        if key in decl.values and (live is None or live.get(key) != decl.values[key]):
            able, why = package_at_least(ctx, *since)
            if not able:
                found.append(
                    f"{key}: PVE takes it from {since[0]} {'.'.join(map(str, since[1]))} on "
                    f"({kind.source}), and "
                    f"{why}; an older one refuses it (property is not defined in schema). Leave it out or "
                    "upgrade the nodes."
                )
    return found


def side_effects(ctx: PveContext, decl: Declared, action: str) -> list[str]:
    """``default`` moves: PVE clears it on every other realm (``create``/``update``)."""
    if action != "delete" and decl.values.get("default") == 1:
        return [
            f"{decl.label}: PVE clears default on every other realm, so the login form offers this one first"
        ]
    if action == "delete":
        return [f"{decl.label}: its users stay in user.cfg, and can no longer log in"]
    return []


def sync(ctx: PveContext, realm: str, dry_run: bool = True, **options: object) -> dict:
    """Run a sync of LDAP/AD ``realm`` (``POST /access/domains/{realm}/sync``, Realm.AllocateUser on
    ``/access/realm/<realm>`` and User.Modify on ``/access/groups``) as a task with a fresh provision
    credential, awaited: ``{realm, dry_run, upid}``. ``options``: ``scope``, ``remove-vanished``,
    ``enable-new`` (else the realm's ``sync-defaults-options``). Raises DeclarationError for a bad realm
    name or option, and what ``PveContext.task`` raises."""
    problem = realm_problem(realm) if isinstance(realm, str) else "the realm is required"
    if problem:
        raise DeclarationError(f"realm: {problem}")
    form = {"dry-run": "1" if dry_run else "0"}
    for key, value in options.items():
        if key not in ("scope", "remove-vanished", "enable-new"):
            raise DeclarationError(f"{key}: not a sync option (scope, remove-vanished, enable-new)")
        form[key] = str(
            sync_options(f"{key}={flag(value) if isinstance(value, bool) else value}").split("=", 1)[1]
        )
    nodes = get_rows(ctx.client, "nodes", ctx.broker.read(), what="nodes")
    node = sorted(str(row.get("node")) for row in nodes)[0]
    path = f"{api_path('access', 'domains', realm)}/sync"
    upid = ctx.task("POST", path, node, f"sync realm {realm}", form=form)
    return {"realm": realm, "dry_run": bool(dry_run), "upid": upid}


SPEC = ObjectSpec(
    family=FAMILY,
    noun="realm",
    declare=declare,
    identify=identify,
    read=lambda decl: Call("GET", _path(decl)),
    absence="HTTP 500 \"domain '<realm>' does not exist\" (pve-access-control API2/Domains.pm read)",
    is_absent=exact_message(500, "domain '{name}' does not exist"),
    parse=parse,
    create=create,
    create_endpoint=CREATE,
    update=update,
    update_endpoint=UPDATE,
    delete=lambda decl, live: Call("DELETE", _path(decl)),
    write_guard=write_guard,
    refusals=refusals,
    side_effects=side_effects,
    recorded=_SERIALS,
    # GET /access/domains (pve-access-control API2/Domains.pm index); pam and pve are PVE's own.
    export_names=lambda row: None if row.get("realm") in BUILTIN_REALMS else export_by("realm")(row),
    export_listings=lambda ctx: [(Call("GET", "access/domains"), {})],
    export_values=lambda live, probe: export_values(live),
)
