"""Groups (``proxmox_group``): a groupid and its comment.

Source: pve-access-control 9.1.1 ``src/PVE/API2/Group.pm`` (``create_group``, ``read_group``,
``update_group``, ``delete_group``) and ``src/PVE/AccessControl.pm`` (``verify_groupname``).

- Read is ``GET /access/groups/{groupid}`` (Sys.Audit or Group.Allocate on ``/access/groups``):
  ``{comment?, members: [...]}``. Absence is exactly HTTP 500 ``group '<groupid>' does not exist``.
- Create ``POST /access/groups`` ``{groupid, comment}`` (the comment kept only when true in Perl, so a
  comment of ``0`` is refused); update ``PUT /access/groups/{groupid}`` ``{comment}`` as JSON (``''``
  clears it); delete ``DELETE /access/groups/{groupid}``, which also drops the group from every user and
  its ACL entries. All need Group.Allocate on ``/access/groups``.
- Members are never compared nor written here: membership has one owner, the user's ``groups``
  (PVE stores it on the user, ``update_user``), so a group state and a user state never fight.
"""

from __future__ import annotations

from salt_proxmox.access.names import groupid_problem
from salt_proxmox.errors import DeclarationError
from salt_proxmox.pve.client import api_path
from salt_proxmox.pve.constraints import Endpoint, Rule
from salt_proxmox.simple.spec import (
    Call,
    Declared,
    ObjectSpec,
    comment_problem,
    exact_message,
    export_by,
    identify_by_name,
    same_values,
)

FAMILY = "group"

_RULES = {"groupid": Rule(check=groupid_problem), "comment": Rule(check=comment_problem)}
CREATE = Endpoint("POST /access/groups", ("groupid",), _RULES.get)
UPDATE = Endpoint("PUT /access/groups/{groupid}", (), _RULES.get)


def identify(state_id: str, target: str, name: object = None, **extra: object) -> Declared:
    """A group by its groupid (``name``). Raises DeclarationError naming the key."""
    return identify_by_name(
        state_id, target, name, extra, noun="group", has="name and comment", check=groupid_problem
    )


def declare(
    state_id: str, target: str, name: object = None, comment: object = None, adopt: object = False, **extra
) -> Declared:
    """A checked group declaration: ``name`` (groupid), ``comment`` (text; none is no comment),
    ``adopt``. Raises DeclarationError naming the key and rule (a comment of ``0``, which PVE loses)."""
    probe = identify(state_id, target, name=name, **extra)
    if comment is None:
        comment = ""
    if not isinstance(comment, str):
        raise DeclarationError("comment: expected text")
    problem = comment_problem(comment)
    if problem:
        raise DeclarationError(f"comment: {problem}")
    return probe.declaring({"comment": comment}, adopt)


def parse(data: object, decl: Declared) -> dict:
    """``GET /access/groups/{groupid}`` → ``{comment}``; ``members`` is the users' to declare, never
    compared. Raises ValueError for another shape."""
    if not isinstance(data, dict) or not isinstance(data.get("members", []), list):
        raise ValueError("expected {comment?, members: [...]}")
    comment = data.get("comment", "")
    if not isinstance(comment, str):
        raise ValueError("comment is not text")
    return {"comment": comment}


def _path(decl: Declared) -> str:
    return api_path("access", "groups", decl.names["name"])


def _create(decl: Declared) -> Call:
    form = {"groupid": decl.names["name"]}
    if decl.values.get("comment"):
        form["comment"] = str(decl.values["comment"])
    return Call("POST", "access/groups", form=form)


def side_effects(ctx, decl: Declared, action: str) -> list[str]:
    """What PVE removes with a group (``delete_group``)."""
    if action != "delete":
        return []
    return [f"{decl.label}: PVE drops it from every user's groups and removes its ACL entries with it"]


SPEC = ObjectSpec(
    family=FAMILY,
    noun="group",
    declare=declare,
    identify=identify,
    read=lambda decl: Call("GET", _path(decl)),
    absence="HTTP 500 \"group '<groupid>' does not exist\" (pve-access-control API2/Group.pm read_group)",
    is_absent=exact_message(500, "group '{name}' does not exist"),
    parse=parse,
    create=_create,
    create_endpoint=CREATE,
    update=lambda decl, live: Call(
        "PUT", _path(decl), form={"comment": str(decl.values["comment"])}, json=True
    ),
    update_endpoint=UPDATE,
    delete=lambda decl, live: Call("DELETE", _path(decl)),
    matches=same_values,
    side_effects=side_effects,
    # GET /access/groups (pve-access-control API2/Group.pm index).
    export_names=export_by("groupid"),
    export_listings=lambda ctx: [(Call("GET", "access/groups"), {})],
)
