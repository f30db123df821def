"""API tokens (``proxmox_token``): a user's token, its secret kept in OpenBao and nowhere else.

Source: pve-access-control 9.1.1 ``src/PVE/API2/User.pm`` (``read_user``, ``generate_token``,
``update_token_info``, ``remove_token``), ``src/PVE/AccessControl.pm`` (``check_token_exist``,
``parse_user_config``) and its ``debian/changelog`` (9.1.0: "api: token: support regenerating the
secret on update, allowing in-place rotation ... without dropping the associated ACL entries").

- How the plan sees a token: the token's own reads (``GET /access/users/{userid}/token[/{tokenid}]``)
  need User.Modify on the user's groups or the user itself, which the ``read`` credential does not hold;
  but ``read_user`` (``GET /access/users/{userid}``, Sys.Audit on ``/access/groups``) answers the user's
  whole ``tokens`` object (``$extract_user_data($data, 1)``: each token's ``privsep``, ``expire``,
  ``comment``; never a secret). So the read credential reads the token from its user: a token the
  object lacks is absent (it lists them all), and a missing user (HTTP 500 ``no such user ('<userid>')``)
  has none.
- Create ``POST /access/users/{userid}/token/{tokenid}`` ``{privsep, expire, comment}``: PVE answers the
  secret once (``value``). The product first checks that its OpenBao token may write ``store``
  (``sys/capabilities-self``), then creates the token and writes ``{token_id, secret}`` at ``store``
  (the pair the credential broker reads: a KV version 1 path, or a KV version 2 ``<mount>/data/<path>``)
  and reads it back, before anything else. A create whose answer is lost, or whose secret cannot be
  stored, is reported uncertain with what to check; the secret never reaches a return, a log, grains,
  a rows file or a Salt cache.
- Update ``PUT …/token/{tokenid}`` with the changed ``privsep``/``expire``/``comment`` (a cleared comment
  through ``delete=comment``). A changed ``secret_serial`` or ``store`` (recorded in the ownership row,
  never read from PVE) draws a new secret: with ``regenerate=1`` where every node runs
  libpve-access-control 9.1.0 or later (``GET /nodes/{node}/apt/versions``: ``GET /version`` names
  pve-manager's version, which does not pin it); elsewhere, or when that cannot be read, the token is
  deleted and created anew and its ACL entries (``GET /access/acl``) are put back. Either way the new
  secret is stored, and the old one no longer works.
- Delete ``DELETE …/token/{tokenid}``; the secret at ``store`` stays in OpenBao (it no longer works).
- A token's user must exist or be declared present in the run (``check_user_exist``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import hvac.exceptions
import requests

from salt_proxmox.access.names import SUPERUSER, split_tokenid
from salt_proxmox.errors import DeclarationError, Refused, Uncertain, shown
from salt_proxmox.openbao.client import describe_failure
from salt_proxmox.openbao.creds import kv_payload
from salt_proxmox.ownership.rows import row_key
from salt_proxmox.pve.client import api_path
from salt_proxmox.pve.constraints import Endpoint, Rule
from salt_proxmox.pve.errors import PveError
from salt_proxmox.pve.facts import package_at_least
from salt_proxmox.pve.listing import get_rows
from salt_proxmox.simple.fields import Field, canonical_values, serial
from salt_proxmox.simple.spec import Call, Declared, ObjectSpec, identify_by_name, will_exist

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.run.context import PveContext

FAMILY = "token"
#: The package and version whose ``update_token_info`` takes ``regenerate`` (debian/changelog 9.1.0).
REGENERATE_SINCE = ("libpve-access-control", (9, 1, 0))

FIELDS: dict[str, Field] = {
    "privsep": Field("flag"),
    "expire": Field("integer", minimum=0),
    "comment": Field(),
}


def _rule(key: str) -> Rule | None:
    if key in ("regenerate",):
        return Rule("boolean")
    field = FIELDS.get(key)
    return field.rule() if field is not None else None


CREATE = Endpoint("POST /access/users/{userid}/token/{tokenid}", (), _rule)
UPDATE = Endpoint("PUT /access/users/{userid}/token/{tokenid}", (), _rule)


def _tokenid_problem(name: str) -> str | None:
    parts = split_tokenid(name)
    if parts is None:
        return f"{shown(name)} is not a token id user@realm!tokenid (a letter, then letters, digits, ., -, _)"
    if parts[0] == SUPERUSER:
        return (
            "a token of root@pam holds every privilege on the cluster; declare a token of a user of your own"
        )
    return None


def identify(state_id: str, target: str, name: object = None, **extra: object) -> Declared:
    """A token by its full id (``name``: ``user@realm!tokenid``). Raises DeclarationError naming the key."""
    return identify_by_name(
        state_id, target, name, extra, noun="token", has="name (user@realm!tokenid), store and its fields",
        check=_tokenid_problem,
    )  # fmt: skip


def _userid(decl: Declared) -> str:
    return decl.identity.rpartition("!")[0]


def _tokenid(decl: Declared) -> str:
    return decl.identity.rpartition("!")[2]


def _store_problem(store: object) -> str | None:
    if not isinstance(store, str) or not store.strip("/") or store != store.strip("/") or "//" in store:
        return (
            "store: expected the OpenBao KV path the secret goes to (e.g. secret/data/pve-tokens/ci on a KV "
            "version 2 mount, pve-tokens/ci on a KV version 1 mount), without leading or trailing /"
        )
    return None


def declare(
    state_id: str,
    target: str,
    name: object = None,
    store: object = None,
    secret_serial: object = None,
    adopt: object = False,
    **options: object,
) -> Declared:
    """A checked token declaration: ``name`` (``user@realm!tokenid``), ``privsep``, ``expire``,
    ``comment``, ``store`` (required: the OpenBao KV path its secret is kept at), ``secret_serial`` (an
    integer; a change draws a new secret), ``adopt``. Raises DeclarationError naming each bad key."""
    probe = identify(state_id, target, name=name)
    problems = []
    try:
        values = canonical_values(FIELDS, options)
    except DeclarationError as exc:
        problems += exc.problems
        values = {}
    problem = _store_problem(store)
    if problem:
        problems.append(problem)
    else:
        values["store"] = store
    if secret_serial is not None:
        number, problem = serial("secret_serial", secret_serial)
        if problem:
            problems.append(problem)
        else:
            values["secret_serial"] = number
    if problems:
        raise DeclarationError(problems)
    return probe.declaring(values, adopt)


def parse(data: object, decl: Declared) -> dict | None:
    """``GET /access/users/{userid}`` → this token's canonical ``{privsep, expire, comment}``, or None
    when the user's ``tokens`` does not hold it. Raises ValueError for another shape."""
    if not isinstance(data, Mapping):
        raise ValueError("expected the user's object")
    tokens = data.get("tokens") or {}
    if not isinstance(tokens, Mapping):
        raise ValueError("tokens is not an object of token ids")
    info = tokens.get(_tokenid(decl))
    if info is None:
        return None
    if not isinstance(info, Mapping):
        raise ValueError(f"token {_tokenid(decl)} is not an object")
    found = {}
    for key, field in FIELDS.items():
        try:
            found[key] = field.canonical(info.get(key, 1 if key == "privsep" else None))
        except ValueError as exc:
            raise ValueError(f"{key}: {exc}") from None
    return found


def _path(decl: Declared) -> str:
    return api_path("access", "users", _userid(decl), "token", _tokenid(decl))


def _create_form(decl: Declared) -> dict[str, str]:
    form = {}
    for key in FIELDS:
        value = decl.values.get(key)
        if value is None or (key == "comment" and not value):
            continue
        form[key] = FIELDS[key].wire(value)
    return form


def create(decl: Declared) -> Call:
    """``POST …/token/{tokenid}``: the declared ``privsep`` (0 too), ``expire``, ``comment``."""
    return Call("POST", _path(decl), form=_create_form(decl))


def _rotates(decl: Declared, live: Mapping[str, object]) -> bool:
    """Whether a new secret is drawn: ``secret_serial`` or ``store`` differs from the recorded one."""
    return any(key in decl.values and live.get(key) != decl.values[key] for key in ("secret_serial", "store"))


def update(decl: Declared, live: Mapping[str, object]) -> Call | None:
    """``PUT …/token/{tokenid}``: the fields that differ, ``delete=comment`` for a cleared comment,
    ``regenerate=1`` when the secret is drawn anew. None when nothing differs."""
    form = {}
    for key in FIELDS:
        if key not in decl.values or live.get(key) == decl.values[key]:
            continue
        if key == "comment" and not decl.values[key]:
            form["delete"] = "comment"
        else:
            form[key] = FIELDS[key].wire(decl.values[key])
    if _rotates(decl, live):
        form["regenerate"] = "1"
    return Call("PUT", _path(decl), form=form) if form else None


def _recorded(ctx: PveContext, decl: Declared) -> Mapping[str, object]:
    row = ctx.ownership.row(row_key(decl.target, FAMILY, decl.identity)) or {}
    declared = row.get("declared")
    return declared if isinstance(declared, Mapping) else {}


def regenerates(ctx: PveContext) -> tuple[bool, str]:
    """``(True, what each node runs)`` when every node runs libpve-access-control 9.1.0 or later, whose
    ``update_token_info`` takes ``regenerate``; else ``(False, why)`` (``facts.package_at_least``)."""
    return package_at_least(ctx, *REGENERATE_SINCE)


def token_acl(ctx: PveContext, full: str) -> list[tuple[str, str, int]]:
    """``(path, roleid, propagate)`` of each ACL entry naming token ``full`` (``GET /access/acl`` with the
    read credential, Sys.Audit on ``/access``). Raises what the read raises."""
    rows = get_rows(ctx.client, "access/acl", ctx.broker.read(), what="ACL entries")
    return sorted(
        (str(row.get("path")), str(row.get("roleid")), 0 if row.get("propagate") in (0, "0") else 1)
        for row in rows
        if row.get("type") == "token" and row.get("ugid") == full
    )


def refusals(ctx: PveContext, decl: Declared, action: str, live: Mapping[str, object] | None) -> list[str]:
    """A token whose user neither exists nor will this run (``generate_token``: ``no such user``)."""
    if action != "create" or will_exist(ctx, "user", _userid(decl)):
        return []
    users = get_rows(ctx.client, "access/users", ctx.broker.read(), what="users", reads=ctx.reads)
    if any(row.get("userid") == _userid(decl) for row in users):
        return []
    return [
        f"{decl.label}: user {_userid(decl)} does not exist and this run does not create it, and PVE "
        f"refuses (`no such user ('{_userid(decl)}')`, User.pm generate_token). Declare "
        f"proxmox:users:{_userid(decl)} too."
    ]


def side_effects(ctx: PveContext, decl: Declared, action: str) -> list[str]:
    """Where the secret goes, and how a rotation is made on this cluster."""
    store = decl.values.get("store")
    if action == "create":
        return [f"{decl.label}: its secret, shown by PVE once, is stored at OpenBao {store} and nowhere else"]
    if action == "delete":
        return [f"{decl.label}: the secret kept at OpenBao {_recorded(ctx, decl).get('store')} stops working"]
    if not _rotates(decl, _recorded(ctx, decl)):
        return []
    able, why = regenerates(ctx)
    if able:
        return [
            f"{decl.label}: a new secret is drawn in place (regenerate=1; {why}), which keeps its ACL "
            "entries, "
            f"and stored at OpenBao {store}; the old secret stops working"
        ]
    entries = token_acl(ctx, decl.identity)
    listed = "; ".join(f"{path} {role}" for path, role, _ in entries) or "none"
    return [
        f"{decl.label}: PVE cannot draw a new secret in place here ({why}), so the apply deletes the token, "
        f"creates it anew with its declared fields, stores its secret at OpenBao {store} and restores its "
        f"{len(entries)} ACL entries ({listed}); the old secret stops working"
    ]


def _writable(ctx: PveContext, client, decl: Declared) -> None:
    """Refused unless the run's OpenBao token may write ``store`` (``sys/capabilities-self``): checked
    before PVE shows the secret, so a secret is never drawn where it cannot be kept."""
    store = str(decl.values["store"])
    try:
        answer = client.sys.get_capabilities(paths=[store])
    except (hvac.exceptions.VaultError, requests.exceptions.RequestException) as exc:
        raise Refused(
            f"{decl.label}: OpenBao could not say whether {store} is writable: "
            f"{describe_failure(exc)}. Nothing was written."
        ) from None
    caps = set((answer or {}).get(store) or (answer or {}).get("capabilities") or [])
    if not caps & {"root", "create", "update"}:
        held = ", ".join(sorted(caps)) or "none"
        raise Refused(
            f"{decl.label}: the OpenBao token may not write {store} (capabilities: {held}), so the "
            "secret PVE shows once could not be kept. Grant it create and update there; nothing was "
            "written."
        )


def _store(client, decl: Declared, full: str, secret: str, what: str) -> None:
    """Write ``{token_id, secret}`` at ``store`` (wrapped in ``data`` on a KV version 2 ``…/data/…``
    path) and read it back. Raises Uncertain naming what to check, never the secret."""
    store = str(decl.values["store"])
    pair = {"token_id": full, "secret": secret}
    body = {"data": pair} if store.split("/")[1:2] == ["data"] else pair
    problem = ""
    for _attempt in range(3):
        try:
            client.write_data(store, data=body)
            back = client.read(store)
        except (hvac.exceptions.VaultError, requests.exceptions.RequestException) as exc:
            problem = describe_failure(exc)
            continue
        stored = kv_payload((back or {}).get("data"))
        if isinstance(stored, Mapping) and stored.get("secret") == secret and stored.get("token_id") == full:
            return
        problem = "the read-back does not hold the secret just written"
    raise Uncertain(
        f"{decl.label}: {what}, but its secret could not be stored at OpenBao {store} ({problem}). "
        "PVE shows a secret once, so it is kept nowhere: check OpenBao, then raise secret_serial to "
        "draw a new one; until then nobody holds the token's secret."
    )


def _secret_of(data: object, decl: Declared, what: str) -> str:
    value = data.get("value") if isinstance(data, Mapping) else None
    if not isinstance(value, str) or not value:
        raise Uncertain(
            f"{decl.label}: {what}, but PVE's answer holds no secret (value). Check the token in PVE; raise "
            "secret_serial to draw a new one."
        )
    return value


def send(ctx: PveContext, decl: Declared, call: Call, what: str) -> None:
    """Send one write of a token: a create or a regenerate stores the secret PVE answers before anything
    else; a rotation where PVE cannot regenerate is delete, create, store, restore ACL entries. Raises
    Refused (nothing sent: OpenBao not writable), PveError, Uncertain (what to check), CredentialError."""
    from salt_proxmox.simple.lifecycle import send as send_call

    full = decl.identity
    if call.method == "DELETE":
        send_call(ctx, ctx.broker.provision(), call)
        return
    drawn = call.method == "POST" or (call.form or {}).get("regenerate") == "1"
    if not drawn:
        send_call(ctx, ctx.broker.provision(), call)
        return
    client = ctx.broker.openbao_client()
    _writable(ctx, client, decl)
    if call.method == "PUT" and not regenerates(ctx)[0]:
        _recreate(ctx, client, decl)
        return
    done = f"PVE {'created the token' if call.method == 'POST' else 'drew a new secret'}"
    try:
        data = send_call(ctx, ctx.broker.provision(), call)
    except Uncertain as exc:
        outcome = "created it" if call.method == "POST" else "drew a new secret"
        raise Uncertain(
            f"{decl.label}: {exc} Whether PVE {outcome}"
            f" is not known: check GET /access/users/{_userid(decl)} (its tokens); if it did, the "
            "secret was in the lost answer only: raise secret_serial to draw a new one."
        ) from None
    _store(client, decl, full, _secret_of(data, decl, done), done)


def _recreate(ctx: PveContext, client, decl: Declared) -> None:
    """Rotation without ``regenerate``: delete, create, store, then put back the token's ACL entries."""
    from salt_proxmox.simple.lifecycle import send as send_call

    entries = token_acl(ctx, decl.identity)
    provision = ctx.broker.provision()
    send_call(ctx, provision, Call("DELETE", _path(decl)))
    done = "PVE deleted the token and created it anew"
    data = send_call(ctx, provision, Call("POST", _path(decl), form=_create_form(decl)))
    _store(client, decl, decl.identity, _secret_of(data, decl, done), done)
    grouped: dict[tuple[str, int], list[str]] = {}
    for path, role, propagate in entries:
        grouped.setdefault((path, propagate), []).append(role)
    for (path, propagate), roles in sorted(grouped.items()):
        form = {"path": path, "tokens": decl.identity, "roles": ",".join(roles), "propagate": str(propagate)}
        try:
            send_call(ctx, provision, Call("PUT", "access/acl", form=form))
        except PveError as exc:
            raise Uncertain(
                f"{decl.label}: its secret was drawn anew and stored, but restoring its ACL entry on {path} "
                f"({', '.join(roles)}) failed: {exc}. Grant it again: `pveum acl modify {path} --tokens "
                f"'{decl.identity}' --roles {','.join(roles)} --propagate {propagate}`."
            ) from None


SPEC = ObjectSpec(
    family=FAMILY,
    noun="token",
    declare=declare,
    identify=identify,
    read=lambda decl: Call("GET", api_path("access", "users", _userid(decl))),
    absence=(
        "not in GET /access/users/<userid>'s tokens, which lists them all, or HTTP 500 \"no such user "
        "('<userid>')\" (pve-access-control AccessControl.pm check_user_exist)"
    ),
    is_absent=lambda error, decl: (
        error.status == 500 and error.message == f"no such user ('{_userid(decl)}')"
    ),
    parse=parse,
    create=create,
    create_endpoint=CREATE,
    update=update,
    update_endpoint=UPDATE,
    delete=lambda decl, live: Call("DELETE", _path(decl)),
    # The user's object lists every token it has: one it lacks is absent.
    confirm_absent=lambda ctx, credential, decl: None,
    refusals=refusals,
    side_effects=side_effects,
    recorded=("store", "secret_serial"),
    send=send,
    not_exported=(
        "an API token's secret is shown by PVE once, so the export cannot say where it is kept: declare "
        "the token with store: <OpenBao KV path> and secret_serial, and its first plan draws a new secret "
        "for that path (the old one stops working)"
    ),
)
