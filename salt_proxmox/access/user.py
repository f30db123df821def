"""Users (``proxmox_user``): one ``user.cfg`` user, its fields and its group memberships.

Source: pve-access-control 9.1.1 ``src/PVE/API2/User.pm`` (``create_user``, ``read_user``,
``update_user``, ``delete_user``), ``src/PVE/API2/AccessControl.pm`` (``change_password``) and
``src/PVE/Auth/Plugin.pm`` (``verify_username``).

- Read is ``GET /access/users/{userid}`` (``read_user``: User.Modify or Sys.Audit on ``/access/groups``,
  so the read credential may): ``{enable, expire, firstname?, lastname?, email?, comment?, keys?,
  groups: [...], tokens: {...}}``. Absence is exactly HTTP 500 ``no such user ('<userid>')``
  (``check_user_exist``).
- Create ``POST /access/users`` (Realm.AllocateUser on ``/access/realm/<realm>`` and User.Modify on each
  group, or on ``/access/groups`` without groups); update ``PUT /access/users/{userid}`` as a JSON body
  (each key given is set, so ``''`` clears it; ``groups`` without ``append`` replaces the membership);
  delete ``DELETE /access/users/{userid}``, which removes its tokens, memberships and ACL entries too.
- ``groups`` is a set (PVE keeps no order: ``read_user`` sorts it). Membership has one owner, the user:
  ``proxmox_group`` never compares members.
- ``password`` (pve realm only: ``domain_set_password`` stores it in ``priv/shadow.cfg``; another
  realm's plugin refuses or changes a node's Linux account) comes from pillar and is sent at create only:
  never read, shown, stored or compared. PVE lets no API token change a password afterwards
  (``change_password``: ``allowtoken => 0``), so a changed ``password_serial`` is refused at plan with
  the command that sets it on a node.
- ``root@pam`` is refused by name: PVE lets it be deleted and re-creates it bare (``Plugin.pm``
  ``parse_config`` / ``userconfig_force_defaults``), which would lock out the cluster's superuser.
- Refused at plan, as PVE refuses them: a group that does not exist and is not declared present in the
  run (``no such group 'G'``), a realm that does not exist and is not declared present in the run.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from salt_proxmox.access.names import SUPERUSER, groupid_problem, userid_problem
from salt_proxmox.errors import DeclarationError, shown
from salt_proxmox.pve.client import api_path
from salt_proxmox.pve.constraints import Endpoint, Rule
from salt_proxmox.pve.listing import get_rows
from salt_proxmox.simple.fields import Field, canonical_values, live_values, serial
from salt_proxmox.simple.spec import (
    Call,
    Declared,
    ObjectSpec,
    exact_message,
    export_by,
    identify_by_name,
    will_exist,
)

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.run.context import PveContext

FAMILY = "user"
#: The user pillar entries' secrets (``run.config.pillar_secrets``; the formula's SECRETS).
SECRETS = ("password",)

#: pve-common ``JSONSchema.pm`` ``pve_verify_email`` (``email-opt`` also takes ``''``).
_EMAIL = re.compile(r"^[\w+\-~]+(\.[\w+\-~]+)*@[a-zA-Z0-9\-]+(\.[a-zA-Z0-9\-]+)*\Z")
#: ``user-keys``: ``[0-9a-zA-Z!=]{0,4096}``.
_KEYS = re.compile(r"^[0-9a-zA-Z!=]{0,4096}\Z")


def _longest(limit: int):
    def check(text: str) -> str | None:
        return f"at most {limit} characters (User.pm user-* options)" if len(text) > limit else None

    return check


def _email(text: str) -> str | None:
    if len(text) > 254 or not _EMAIL.match(text):
        return f"{shown(text)} is not an email address PVE takes (pve_verify_email, at most 254 characters)"
    return None


def _groups(text: str) -> str | None:
    bad = [group for group in text.split(",") if groupid_problem(group)]
    return groupid_problem(bad[0]) if bad else None


FIELDS: dict[str, Field] = {
    "email": Field(check=_email),
    "firstname": Field(check=_longest(1024)),
    "lastname": Field(check=_longest(1024)),
    "comment": Field(check=_longest(2048)),
    "enable": Field("flag"),
    "expire": Field("integer", minimum=0),
    "groups": Field("set", separator=",", check=_groups),
    "keys": Field(check=lambda text: None if _KEYS.match(text) else "not [0-9a-zA-Z!=]{0,4096}"),
}


def _rule(key: str) -> Rule | None:
    if key in ("userid", "password"):
        return Rule()
    field = FIELDS.get(key)
    return field.rule() if field is not None else None


CREATE = Endpoint("POST /access/users", ("userid",), _rule)
UPDATE = Endpoint("PUT /access/users/{userid}", (), _rule)


def _userid_problem(name: str) -> str | None:
    if name == SUPERUSER:
        return (
            "root@pam is the cluster's superuser; PVE lets it be deleted and re-creates it bare "
            "(pve-access-control Auth/Plugin.pm parse_config), so this product never manages it"
        )
    return userid_problem(name)


def identify(state_id: str, target: str, name: object = None, **extra: object) -> Declared:
    """A user by its userid (``name``, ``name@realm``). Raises DeclarationError for an unknown key, a
    userid PVE refuses, and ``root@pam``."""
    return identify_by_name(
        state_id,
        target,
        name,
        extra,
        noun="user",
        has="name (name@realm) and its fields",
        check=_userid_problem,
    )


def declare(
    state_id: str,
    target: str,
    name: object = None,
    adopt: object = False,
    password: object = None,
    password_serial: object = None,
    **options: object,
) -> Declared:
    """A checked user declaration: ``name`` (userid), the ``FIELDS`` keys, ``password`` (from pillar;
    pve realm only, 8 to 64 characters, kept in ``Declared.secrets``), ``password_serial`` (an integer,
    recorded), ``adopt``. Raises DeclarationError naming each bad key and its rule, never a password."""
    probe = identify(state_id, target, name=name)
    problems: list[str] = []
    try:
        values = canonical_values(FIELDS, options)
    except DeclarationError as exc:
        problems += exc.problems
        values = {}
    secrets = {}
    realm = probe.identity.rpartition("@")[2]
    if password is not None:
        if realm != "pve":
            problems.append(
                f"password: a user of realm {realm} gets no password from PVE's API here: only the pve "
                "realm keeps one (pve-access-control Auth/PVE.pm store_password); another realm's "
                "directory or the node's PAM holds it"
            )
        elif not isinstance(password, str) or not 8 <= len(password) <= 64:
            problems.append(
                "password: expected text of 8 to 64 characters (User.pm create_user; never shown)"
            )
        else:
            secrets["password"] = password
    if password_serial is not None:
        number, problem = serial("password_serial", password_serial)
        if problem:
            problems.append(problem)
        elif password is None:
            problems.append("password_serial: the declaration holds no password")
        else:
            values["password_serial"] = number
    if problems:
        raise DeclarationError(problems)
    found = probe.declaring(values, adopt)
    return Declared(**{**found.__dict__, "secrets": secrets})


def parse(data: object, decl: Declared) -> dict:
    """``GET /access/users/{userid}`` → the canonical ``FIELDS`` values (tokens left out: the token
    family reads them). Raises ValueError for another shape."""
    if not isinstance(data, Mapping):
        raise ValueError("expected the user's object")
    return live_values(FIELDS, data)


def _path(decl: Declared) -> str:
    return api_path("access", "users", decl.names["name"])


def _wire(key: str, value: object) -> str:
    return FIELDS[key].wire(value)


def create(decl: Declared) -> Call:
    """``POST /access/users``: the userid, each declared field set (``enable`` even when 0: PVE's
    default is 1), the password."""
    form = {"userid": decl.names["name"]}
    for key, value in decl.values.items():
        if key == "password_serial" or (value in ("", 0) and key != "enable"):
            continue
        form[key] = _wire(key, value)
    form.update(decl.secrets)
    return Call("POST", "access/users", form=form)


def update(decl: Declared, live: Mapping[str, object]) -> Call | None:
    """``PUT /access/users/{userid}`` (JSON, so ``''`` clears): the fields that differ. None when only
    ``password_serial`` differs (``refusals`` says why it cannot be sent)."""
    form = {
        key: _wire(key, value)
        for key, value in decl.values.items()
        if key != "password_serial" and live.get(key) != value
    }
    return Call("PUT", _path(decl), form=form, json=True) if form else None


def _rows(ctx: PveContext, path: str, what: str) -> list[Mapping]:
    return get_rows(ctx.client, path, ctx.broker.read(), what=what, reads=ctx.reads)


def refusals(ctx: PveContext, decl: Declared, action: str, live: Mapping[str, object] | None) -> list[str]:
    """A changed ``password_serial``, a realm or a group that neither exists nor will this run."""
    if action == "delete":
        return []
    found = []
    if live is not None and "password_serial" in decl.values:
        recorded = live.get("password_serial")
        if recorded != decl.values["password_serial"]:
            found.append(
                f"password_serial: {decl.label}'s password was last sent with serial {shown(recorded)}, "
                "and PVE "
                "lets no API token change a password (pve-access-control API2/AccessControl.pm "
                f"change_password: allowtoken => 0). Set it on a node (`pveum passwd {decl.names['name']}`), "
                f"then declare password_serial: {shown(recorded)} again; or declare the user absent and "
                "create it anew."
            )
    realm = decl.identity.rpartition("@")[2]
    if live is None and not will_exist(ctx, "realm", realm):
        realms = {str(row.get("realm")) for row in _rows(ctx, "access/domains", "realms")}
        if realm not in realms:
            found.append(
                f"{decl.label}: realm {realm} does not exist and this run does not create it, and PVE "
                "refuses "
                f"a user of a missing realm. Declare proxmox:realms:{realm}, or use an existing realm "
                f"({', '.join(sorted(realms))})."
            )
    groups = [group for group in str(decl.values.get("groups") or "").split(",") if group]
    if groups and (live is None or live.get("groups") != decl.values.get("groups")):
        known = {str(row.get("groupid")) for row in _rows(ctx, "access/groups", "groups")}
        for group in groups:
            if group not in known and not will_exist(ctx, "group", group):
                found.append(
                    f"groups: group {group} does not exist and this run does not create it, and PVE refuses "
                    f"(`no such group '{group}'`, User.pm create_user/update_user). Declare "
                    f"proxmox:groups:{group}, or leave it out."
                )
    return found


def side_effects(ctx: PveContext, decl: Declared, action: str) -> list[str]:
    """What PVE removes with a user (``delete_user``)."""
    if action != "delete":
        return []
    return [f"{decl.label}: PVE removes its API tokens, group memberships and ACL entries with it"]


SPEC = ObjectSpec(
    family=FAMILY,
    noun="user",
    declare=declare,
    identify=identify,
    read=lambda decl: Call("GET", _path(decl)),
    absence="HTTP 500 \"no such user ('<userid>')\" (pve-access-control AccessControl.pm check_user_exist)",
    is_absent=exact_message(500, "no such user ('{name}')"),
    parse=parse,
    create=create,
    create_endpoint=CREATE,
    update=update,
    update_endpoint=UPDATE,
    delete=lambda decl, live: Call("DELETE", _path(decl)),
    refusals=refusals,
    side_effects=side_effects,
    recorded=("password_serial",),
    # GET /access/users (pve-access-control API2/User.pm index); root@pam is never declared.
    export_names=lambda row: None if row.get("userid") == SUPERUSER else export_by("userid")(row),
    export_listings=lambda ctx: [(Call("GET", "access/users"), {})],
)
