"""ACL entries (``proxmox_acl``): one role granted to one user, group or API token on one path.

Source: pve-access-control 9.1.1 ``src/PVE/API2/ACL.pm`` (``read_acl``, ``update_acl``) and
``src/PVE/AccessControl.pm`` (``normalize_path``, ``check_path``, ``verify_rolename``), with
``src/PVE/Auth/Plugin.pm`` for the user, realm and group name patterns.

- An entry is identified by (path, type, ugid, roleid); its one attribute is ``propagate``
  (default 1).
- Read is ``GET /access/acl``: the list of every entry the caller may see. It has no "not
  found" answer: an entry is absent when the list does not hold it, and the list is complete
  only for a caller with ``Sys.Audit`` on ``/access`` (``read_acl`` filters every other path by
  ``Permissions.Modify``). So absence is proven by the listing plus ``GET
  /access/permissions?path=/access`` showing the read credential holds ``Sys.Audit`` there.
- Create and update are the same ``PUT /access/acl`` ``{path, roles, users|groups|tokens,
  propagate}`` (it sets the propagate bit of the entry); delete is that call with
  ``delete=1``. The path is normalised as ``normalize_path`` does (``//`` collapsed, trailing
  ``/`` dropped, leading ``/`` added) and must pass ``check_path`` for an add.
- fakepve 0.5.0 does not store ACL entries (its answer is synthesised); tests use the storing
  subclass in ``tests/support/access.py``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from salt_proxmox.errors import DeclarationError, Refused
from salt_proxmox.pve.constraints import Endpoint, Rule, split_list
from salt_proxmox.pve.listing import get_rows, rows_of
from salt_proxmox.pve.permissions import held_privileges
from salt_proxmox.simple.role import ROLEID
from salt_proxmox.simple.spec import Call, Declared, ObjectSpec, same_values, will_exist
from salt_proxmox.wire.propstring import flag

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.pve.client import Credential
    from salt_proxmox.run.context import PveContext

FAMILY = "acl"
KINDS = ("user", "group", "token")
_USER = r"[^\s:/]+@[A-Za-z][A-Za-z0-9.\-_]+"
#: pve-access-control ``PVE::Auth::Plugin`` ``$user_regex@$realm_regex``.
USERID = re.compile(rf"^{_USER}\Z")
#: ``$token_full_regex``: ``user@realm!tokenid``, the token id in the realm pattern.
TOKENID = re.compile(rf"^{_USER}![A-Za-z][A-Za-z0-9.\-_]+\Z")
#: ``$groupname_regex``.
GROUPID = re.compile(r"^[A-Za-z0-9.\-_]+\Z")
_PATTERNS = {"user": USERID, "group": GROUPID, "token": TOKENID}
#: ``check_path``: the ACL paths PVE accepts for an add.
ACL_PATH = re.compile(
    r"""^(?:
    /|/access|/access/groups|/access/groups/[A-Za-z0-9.\-_]+|/access/realm|/access/realm/[A-Za-z0-9.\-_]+
    |/nodes|/nodes/[A-Za-z0-9.\-_]+|/pool|/pool/[A-Za-z0-9.\-_]+(?:/[A-Za-z0-9.\-_]+){0,2}
    |/sdn|/sdn/controllers|/sdn/controllers/[A-Za-z0-9_\-]+|/sdn/dns|/sdn/dns/[A-Za-z0-9]+
    |/sdn/fabrics|/sdn/fabrics/[A-Za-z0-9]+|/sdn/ipams|/sdn/ipams/[A-Za-z0-9]+
    |/sdn/prefix-lists|/sdn/prefix-lists/[A-Za-z0-9]+|/sdn/route-maps|/sdn/route-maps/[A-Za-z0-9]+
    |/sdn/zones|/sdn/zones/[A-Za-z0-9.\-_]+|/sdn/zones/[A-Za-z0-9.\-_]+/[A-Za-z0-9.\-_]+
    |/sdn/zones/[A-Za-z0-9.\-_]+/[A-Za-z0-9.\-_]+/[1-9][0-9]{0,3}
    |/storage|/storage/[A-Za-z0-9.\-_]+|/vms|/vms/[1-9][0-9]{2,}
    |/mapping|/mapping/[A-Za-z0-9.\-_]+|/mapping/[A-Za-z0-9.\-_]+/[A-Za-z0-9.\-_]+
    )\Z""",
    re.VERBOSE,
)


def normalize_path(path: str) -> str | None:
    """pve-access-control ``normalize_path``: None for a path PVE cannot use."""
    if not path:
        return None
    path = re.sub(r"/+", "/", path)
    path = path[:-1] if path.endswith("/") else path
    path = path or "/"
    if not path.startswith("/"):
        path = "/" + path
    if not re.fullmatch(r"[A-Za-z0-9.\-_/]+", path):
        return None
    return path


def check_path(value: str) -> str | None:
    """``update_acl``: a path PVE normalises and accepts for an add."""
    path = normalize_path(value)
    if path is None or not ACL_PATH.match(path):
        return f"invalid ACL path '{value}'"
    return None


def _list_of(pattern: re.Pattern[str], what: str):
    def check(value: str) -> str | None:
        bad = [item for item in split_list(value) if not pattern.match(item)]
        return f"'{bad[0]}' is not a valid {what}" if bad else None

    return check


_RULES = {
    "path": Rule(check=check_path),
    "roles": Rule(check=_list_of(ROLEID, "role id")),
    "users": Rule(check=_list_of(USERID, "user id (user@realm)")),
    "groups": Rule(check=_list_of(GROUPID, "group id")),
    "tokens": Rule(check=_list_of(TOKENID, "API token id (user@realm!name)")),
    "propagate": Rule(kind="boolean"),
    "delete": Rule(kind="boolean"),
}
UPDATE = Endpoint("PUT /access/acl", ("path", "roles"), _RULES.get)


def identify(
    state_id: str,
    target: str,
    path: object = None,
    role: object = None,
    user: object = None,
    group: object = None,
    token: object = None,
    **extra: object,
) -> Declared:
    """An ACL entry by path, role and exactly one of user, group or token. Raises
    DeclarationError naming the key and rule."""
    problems = []
    if extra:
        problems.append(
            f"unknown key(s) {', '.join(sorted(extra))}: an ACL entry has path, role, user|group|token"
        )
    normal = normalize_path(path) if isinstance(path, str) else None
    if normal is None:
        problems.append(f"path: invalid ACL path {path!r} (pve-access-control normalize_path)")
    if not isinstance(role, str) or not ROLEID.match(role):
        problems.append(f"role: {role!r} is not a role id ([A-Za-z0-9.-_]+)")
    given = {kind: value for kind, value in (("user", user), ("group", group), ("token", token)) if value}
    if len(given) != 1:
        problems.append("user, group, token: declare exactly one of them")
    else:
        ((kind, ugid),) = given.items()
        if not isinstance(ugid, str) or not _PATTERNS[kind].match(ugid):
            problems.append(f"{kind}: {ugid!r} is not a valid {kind} id")
    if problems:
        raise DeclarationError(problems)
    identity = f"{normal}:{kind}:{ugid}:{role}"
    return Declared(
        state_id,
        target,
        identity=identity,
        label=f"ACL {role} for {kind} {ugid} on {normal}",
        names={"path": str(normal), "role": str(role), kind: str(ugid)},
    )


def declare(state_id: str, target: str, propagate: object = True, adopt: object = False, **names) -> Declared:
    """A checked ACL declaration: the identity keys of ``identify``, ``propagate`` (default
    true) and ``adopt``. Raises DeclarationError naming the key and rule."""
    probe = identify(state_id, target, **names)
    try:
        propagating = flag(propagate) == "1"
    except ValueError:
        raise DeclarationError(f"propagate: expected true or false, got {propagate!r}") from None
    return probe.declaring({"propagate": propagating}, adopt)


def _kind(decl: Declared) -> tuple[str, str]:
    kind = next(k for k in KINDS if k in decl.names)
    return kind, decl.names[kind]


def parse(data: object, decl: Declared) -> dict | None:
    """``GET /access/acl`` → ``{propagate}`` of the declared entry, or None when the list does
    not hold it. Raises ValueError when the list or any row lacks the promised shape."""
    kind, ugid = _kind(decl)
    found = None
    for row in rows_of(data, "ACL entries"):
        if not all(isinstance(row.get(key), str) and row.get(key) for key in ("path", "ugid", "roleid")):
            raise ValueError("an ACL entry lacks path, ugid or roleid")
        if row.get("type") not in KINDS:
            raise ValueError(f"an ACL entry has the type {row.get('type')!r}, not user, group or token")
        propagate = row.get("propagate", 1)
        if propagate not in (0, 1, True, False, "0", "1"):
            raise ValueError(f"an ACL entry has propagate {propagate!r}, not 0 or 1")
        if (row["path"], row["type"], row["ugid"], row["roleid"]) == (
            decl.names["path"],
            kind,
            ugid,
            decl.names["role"],
        ):
            found = {"propagate": propagate in (1, True, "1")}
    return found


def confirm_absent(ctx: PveContext, credential: Credential, decl: Declared) -> None:
    """Prove the ACL listing complete: the read credential must hold ``Sys.Audit`` on
    ``/access`` (``GET /access/permissions?path=/access``). Raises Refused otherwise, PveError
    or PveMalformed for a failed or malformed answer."""
    if not holds_audit(ctx, credential, "/access"):
        raise Refused(
            f"{decl.label}: GET /access/acl shows only the entries the read credential may modify unless it "
            "holds Sys.Audit on /access, so the entry's absence is not proven. Grant the read token "
            "Sys.Audit on /access (or /); nothing was written."
        )


def _listing(ctx: PveContext, path: str, params: dict | None = None) -> list[Mapping]:
    return get_rows(ctx.client, path, ctx.broker.read(), params)


def holds_audit(ctx: PveContext, credential: Credential, path: str) -> bool:
    """Whether ``credential`` holds Sys.Audit on ``path`` (see ``held_privileges``). Raises
    PveError, PveMalformed."""
    return "Sys.Audit" in held_privileges(ctx, credential, path)


def known_names(ctx: PveContext) -> dict[str, set[str] | None]:
    """The roles, users, tokens and groups the read credential can see, read once per run:
    ``GET /access/roles`` (every role, pve-access-control ``API2/Role.pm`` index is open to all),
    and, only when the credential holds Sys.Audit on ``/access/groups`` so that the listings are
    complete (``API2/User.pm`` and ``API2/Group.pm`` index filter by it), ``GET
    /access/users?full=1`` (users and their tokens) and ``GET /access/groups``; else those are None
    (unknown: nothing is refused for them). Raises PveError, PveMalformed, PveUnreachable."""
    key = f"salt_proxmox.access/{ctx.target.name}"
    known = ctx.memo.get(key)
    if isinstance(known, dict):
        return known
    roles = {str(row.get("roleid")) for row in _listing(ctx, "access/roles")}
    users = tokens = groups = None
    if holds_audit(ctx, ctx.broker.read(), "/access/groups"):
        rows = _listing(ctx, "access/users", {"full": "1"})
        users = {str(row.get("userid")) for row in rows}
        tokens = {
            f"{row.get('userid')}!{token.get('tokenid')}"
            for row in rows
            for token in (row.get("tokens") or [])
            if isinstance(token, Mapping)
        }
        groups = {str(row.get("groupid")) for row in _listing(ctx, "access/groups")}
    known = {"roles": roles, "users": users, "tokens": tokens, "groups": groups}
    ctx.memo[key] = known
    return known


def refusals(ctx: PveContext, decl: Declared, action: str, live: Mapping[str, object] | None) -> list[str]:
    """What ``update_acl`` (pve-access-control ``src/PVE/API2/ACL.pm``) would refuse in a new
    entry, predicted from ``known_names``: a role that does not exist ("role 'X' does not exist")
    unless a create earlier in this run makes it, a user ("user 'X' does not exist"), a group
    ("group 'X' does not exist") or a token (``check_token_exist``: "no such token 'T' for user
    'U'") the complete listings do not hold, unless a create earlier in this run makes it
    (``proxmox_user``, ``proxmox_group``, ``proxmox_token``)."""
    if action != "create":
        return []
    known = known_names(ctx)
    kind, ugid = _kind(decl)
    role = decl.names["role"]
    reasons = []
    if role not in known["roles"] and not will_exist(ctx, "role", role):
        reasons.append(
            f"{decl.label}: role {role} does not exist, and PVE refuses the entry (`role '{role}' does "
            "not exist`). Declare the role (proxmox_role, applied before the ACL entries) or name one that "
            "exists."
        )
    names = known[f"{kind}s"]
    if names is not None and ugid not in names and not will_exist(ctx, kind, ugid):
        owner, _, token = ugid.partition("!")
        said = (
            f"no such token '{token}' for user '{owner}'"
            if kind == "token"
            else f"{kind} '{ugid}' does not exist"
        )
        create = {
            "user": f"pveum user add {ugid}",
            "group": f"pveum group add {ugid}",
            "token": f"pveum user token add {owner} {token}",
        }[kind]
        reasons.append(
            f"{decl.label}: {kind} {ugid} does not exist, and PVE refuses the entry (`{said}`). Declare it "
            f"(proxmox:{kind}s, applied before the ACL entries), create it (`{create}`) or name an "
            "existing one."
        )
    return reasons


def _form(decl: Declared, delete: bool = False) -> dict[str, str]:
    kind, ugid = _kind(decl)
    form = {"path": decl.names["path"], "roles": decl.names["role"], f"{kind}s": ugid}
    if delete:
        form["delete"] = "1"
    else:
        form["propagate"] = "1" if decl.values.get("propagate", True) else "0"
    return form


def export_names(row: Mapping[str, object]) -> dict | None:
    """A ``GET /access/acl`` row (``{path, roleid, type, ugid, propagate}``) as ``identify`` names its
    entry: ``{path, role, user|group|token}``; None for a row of another shape."""
    kind = row.get("type")
    if kind not in KINDS or not all(isinstance(row.get(key), str) for key in ("path", "roleid", "ugid")):
        return None
    return {"path": row["path"], "role": row["roleid"], str(kind): row["ugid"]}


SPEC = ObjectSpec(
    family=FAMILY,
    noun="ACL entry",
    declare=declare,
    identify=identify,
    read=lambda decl: Call("GET", "access/acl"),
    absence=(
        "not in GET /access/acl, with Sys.Audit on /access for the read credential "
        "(pve-access-control src/PVE/API2/ACL.pm read_acl)"
    ),
    is_absent=lambda error, decl: False,
    parse=parse,
    create=lambda decl: Call("PUT", "access/acl", form=_form(decl)),
    create_endpoint=UPDATE,
    update=lambda decl, live: Call("PUT", "access/acl", form=_form(decl)),
    update_endpoint=UPDATE,
    delete=lambda decl, live: Call("PUT", "access/acl", form=_form(decl, delete=True)),
    matches=same_values,
    confirm_absent=confirm_absent,
    # The read is the listing: one per run serves every entry the listing holds; an entry it does
    # not hold is read afresh, then proven absent (confirm_absent).
    listing=Call("GET", "access/acl"),
    listed=parse,
    identity_keys=("path", "role", *KINDS),
    refusals=refusals,
    export_names=export_names,
)
