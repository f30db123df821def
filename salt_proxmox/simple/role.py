"""Custom roles (``proxmox_role``): a roleid and its set of privileges.

Source: pve-access-control 9.1.1 ``src/PVE/API2/Role.pm`` and ``src/PVE/AccessControl.pm``
(``verify_rolename``, ``verify_privname``, ``$privgroups``, ``role_is_special``), and its
``stable-bookworm`` branch for PVE 8, whose privilege names differ (``salt_proxmox.pve.facts``).

- Read is ``GET /access/roles/<roleid>``: ``{privilege: 1, ...}`` (an empty object for a role
  without privileges). Absence is exactly HTTP 500 ``role '<roleid>' does not exist``.
- Create is ``POST /access/roles`` ``{roleid, privs}``; update ``PUT /access/roles/<roleid>``
  ``{privs}`` without ``append``, which replaces the whole set; delete ``DELETE
  /access/roles/<roleid>`` (PVE leaves ACL entries naming the role in place).
- Privileges compare as sets: order, duplicates and the separator (``split_list``: commas,
  semicolons, spaces) are spelling. The canonical spelling is sorted and comma-joined.
- A roleid is ``[A-Za-z0-9.-_]+``. Built-in roles (``Administrator``, ``NoAccess``, ``PVE*``)
  cannot be changed, and ``create_role`` refuses any id starting with ``PVE`` in any case.
- fakepve 0.5.0 does not store roles (its ``/access/roles`` answers are synthesised); tests use
  the storing subclass in ``tests/support/access.py``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from salt_proxmox.errors import DeclarationError
from salt_proxmox.pve.client import api_path
from salt_proxmox.pve.constraints import Endpoint, Rule, split_list
from salt_proxmox.pve.facts import ANY_PRIVILEGE, PRIVILEGES_OF_EVERY_RELEASE, release
from salt_proxmox.simple.spec import (
    Call,
    Declared,
    ObjectSpec,
    exact_message,
    export_by,
    identify_by_name,
    listed_row,
    same_values,
)

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.run.context import PveContext

FAMILY = "role"
#: ``verify_rolename``.
ROLEID = re.compile(r"^[A-Za-z0-9.\-_]+\Z")
#: Every privilege name some supported release knows (``salt_proxmox.pve.facts.PRIVILEGES``: PVE 8
#: and PVE 9 differ); whether this cluster's release knows each is ``refusals``' to say at plan.
PRIVILEGES = ANY_PRIVILEGE
#: A privilege name as a read may show one (a newer PVE may know more than ``PRIVILEGES``).
_PRIV_NAME = re.compile(r"^[A-Z][A-Za-z]*(?:\.[A-Za-z]+)+\Z")
_SPECIAL = ("Administrator", "NoAccess")


def canonical_privs(privs: object) -> str:
    """The canonical spelling of a privilege set: sorted, unique, comma-joined.

    ``privs``: a list of names or one string in ``split_list`` form. Raises DeclarationError
    for another type or an unknown privilege (``verify_privname``: ``invalid privilege``)."""
    if privs is None:
        names: list[str] = []
    elif isinstance(privs, str):
        names = split_list(privs)
    elif isinstance(privs, list | tuple | set | frozenset) and all(isinstance(p, str) for p in privs):
        names = [name for item in privs for name in split_list(item)]
    else:
        raise DeclarationError("privs: expected a list of privilege names (or one comma-separated string)")
    unknown = sorted({name for name in names if name not in PRIVILEGES})
    if unknown:
        raise DeclarationError(
            [f"privs: invalid privilege '{name}' (pve-access-control verify_privname)" for name in unknown]
        )
    return ",".join(sorted(set(names)))


def check_roleid(value: str) -> str | None:
    """None when ``value`` is a roleid this product may manage, else the reason."""
    if not ROLEID.match(value):
        return f"role name '{value}' contains invalid characters"
    if value in _SPECIAL or value.upper().startswith("PVE"):
        return (
            f"'{value}' is a built-in role or in the reserved PVE namespace, which PVE does not let anyone "
            "change; declare a role of your own"
        )
    return None


def check_privs(value: str) -> str | None:
    """``pve-priv-list``: every item a known privilege."""
    bad = [name for name in split_list(value) if name not in PRIVILEGES]
    return f"invalid privilege '{bad[0]}'" if bad else None


_RULES = {"roleid": Rule(check=check_roleid), "privs": Rule(check=check_privs)}
CREATE = Endpoint("POST /access/roles", ("roleid",), _RULES.get)
UPDATE = Endpoint("PUT /access/roles/{roleid}", (), _RULES.get)


def identify(state_id: str, target: str, name: object = None, **extra: object) -> Declared:
    """A role by its roleid (``name``). Raises DeclarationError naming the key."""
    return identify_by_name(
        state_id, target, name, extra, noun="role", has="name and privs", check=check_roleid
    )


def declare(
    state_id: str, target: str, name: object = None, privs: object = None, adopt: object = False, **extra
) -> Declared:
    """A checked role declaration: ``name`` (roleid), ``privs`` (list or comma string; none is
    an empty role), ``adopt``. Raises DeclarationError naming the key and rule."""
    probe = identify(state_id, target, name=name, **extra)
    return probe.declaring({"privs": canonical_privs(privs)}, adopt)


def parse(data: object, decl: Declared) -> dict:
    """``GET /access/roles/<roleid>`` → ``{privs}`` (canonical). Raises ValueError for another
    shape: not an object, a key that is not a privilege name, a value that is not a flag."""
    if not isinstance(data, Mapping):
        raise ValueError("expected an object of privileges")
    held = []
    for name, value in data.items():
        if not isinstance(name, str) or not _PRIV_NAME.match(name):
            raise ValueError(f"{name!r} is not a privilege name")
        if value in (1, True, "1"):
            held.append(name)
        elif value not in (0, False, "0"):
            raise ValueError(f"privilege {name} has the value {value!r}, not 0 or 1")
    return {"privs": ",".join(sorted(set(held)))}


def listed(rows: object, decl: Declared) -> dict | None:
    """``GET /access/roles`` (``[{roleid, privs: "A,B", special}]``, pve-access-control
    ``src/PVE/API2/Role.pm`` index) → this role's ``{privs}`` as ``parse`` gives them, or None
    when it is not listed. Raises ValueError for another shape."""
    row = listed_row(rows, "roleid", lambda roleid: roleid == decl.names["name"])
    if row is None:
        return None
    privs = row.get("privs", "")
    if not isinstance(privs, str):
        raise ValueError(f"role {decl.names['name']}: privs is not a comma-separated text")
    return parse({name: 1 for name in privs.split(",") if name}, decl)


def refusals(ctx: PveContext, decl: Declared, action: str, live: Mapping[str, object] | None) -> list[str]:
    """The privileges this cluster's release does not know, one sentence each (``create_role``
    and ``update_role`` die ``invalid privilege 'X'``, ``verify_privname``). ``/version`` is read
    (once per run) only when a name is not common to PVE 8 and 9."""
    names = split_list(str(decl.values.get("privs", "")))
    if action == "delete" or all(name in PRIVILEGES_OF_EVERY_RELEASE for name in names):
        return []
    cluster = release(ctx)
    return [
        f"privs: {name} is not a privilege of PVE {cluster.release}, which refuses it (`invalid privilege "
        f"'{name}'`, pve-access-control AccessControl.pm verify_privname; VM.Monitor is PVE 8's, "
        "VM.GuestAgent.* and VM.Replicate PVE 9's). Declare the privileges of the cluster's release."
        for name in names
        if name not in cluster.privileges
    ]


def _path(decl: Declared) -> str:
    return api_path("access", "roles", decl.names["name"])


def _create(decl: Declared) -> Call:
    form = {"roleid": decl.names["name"]}
    if decl.values.get("privs"):
        form["privs"] = str(decl.values["privs"])
    return Call("POST", "access/roles", form=form)


SPEC = ObjectSpec(
    family=FAMILY,
    noun="role",
    declare=declare,
    identify=identify,
    read=lambda decl: Call("GET", _path(decl)),
    absence="HTTP 500 \"role '<roleid>' does not exist\" (pve-access-control src/PVE/API2/Role.pm read_role)",
    is_absent=exact_message(500, "role '{name}' does not exist"),
    parse=parse,
    create=_create,
    create_endpoint=CREATE,
    # Without ``append`` update_role empties the role first, so ``privs`` is the whole set
    # (``privs: ''`` leaves it empty).
    update=lambda decl, live: Call("PUT", _path(decl), form={"privs": str(decl.values.get("privs", ""))}),
    update_endpoint=UPDATE,
    delete=lambda decl, live: Call("DELETE", _path(decl)),
    matches=same_values,
    listing=Call("GET", "access/roles"),
    listed=listed,
    refusals=refusals,
    # A role PVE ships (``special: 1`` in the index: Administrator, PVEAuditor, ...) is nobody's to declare.
    export_names=lambda row: None if row.get("special") in (1, "1", True) else export_by("roleid")(row),
)
