"""Resource pools (``proxmox_pool``): a poolid and its comment.

Source: pve-manager 9.2.11 ``PVE/API2/Pool.pm`` and pve-access-control 9.1.1
``src/PVE/AccessControl.pm`` (``verify_poolname``, ``parse_user_config``/``write_user_config``).

- Read is ``GET /pools?poolid=<id>`` (the non-deprecated form since PVE 8.1): a list holding one
  ``{poolid, comment?, members}``. Absence is exactly HTTP 500 ``pool '<id>' does not exist``.
- Create is ``POST /pools`` ``{poolid, comment}``; update ``PUT /pools`` ``{poolid, comment}`` as
  a JSON body, so that an empty comment arrives as one (a form's ``comment=`` does not);
  delete ``DELETE /pools?poolid=<id>`` (PVE refuses a pool that still has members, and a nested
  pool whose parent does not exist: ``refusals`` predicts both at plan).
- PVE 8.0 (pve-manager 8.0.4 ``PVE/API2/Pool.pm``) has none of those query forms: its ``index``
  takes no ``poolid`` (HTTP 400 "property is not defined in schema"), and a pool is read (an
  object ``{comment?, members}``, no ``poolid``), updated and deleted at ``/pools/{poolid}``; nor
  does it nest pools (``verify_poolname``: "contains invalid characters"). The calls follow the
  cluster's ``/version`` (``facts.Release.nested_pools``), read only when a call other than the
  listing and the create is about to be made (``ObjectSpec.for_cluster``).
- A poolid is ``[A-Za-z0-9.-_]+`` with up to two ``/``-nested levels, each level starting with a
  letter (``create_pool``: "pool name must start with a letter"); it is case-sensitive.
- The comment round-trips exactly (``encode_text``/``decode_text``), except that PVE keeps a
  comment only when it is true in Perl: ``''`` is no comment, and a comment of ``0`` is dropped
  on create and lost on the next read, so it is refused. fakepve keeps ``'0'`` (Python truth).
- Members (guests, storages) are not managed here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from salt_proxmox.errors import DeclarationError, Refused
from salt_proxmox.pve.client import api_path
from salt_proxmox.pve.constraints import Endpoint, Rule, check_poolid
from salt_proxmox.pve.errors import PveError
from salt_proxmox.pve.facts import release
from salt_proxmox.pve.listing import get_rows
from salt_proxmox.run.memo import leaving_pool
from salt_proxmox.simple.lifecycle import read
from salt_proxmox.simple.spec import (
    Call,
    Declared,
    ObjectSpec,
    comment_problem,
    exact_message,
    export_by,
    identify_by_name,
    listed_row,
    same_values,
    will_exist,
)
from salt_proxmox.wire.propstring import text_problem

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.run.context import PveContext

FAMILY = "pool"


_RULES = {
    "poolid": Rule(check=check_poolid),
    "comment": Rule(check=comment_problem),
}
CREATE = Endpoint("POST /pools", ("poolid",), _RULES.get)
UPDATE = Endpoint("PUT /pools", ("poolid",), _RULES.get)


def _text(key: str, value: object) -> str:
    if value is None:
        return ""
    problem = text_problem(value)
    if problem:
        raise DeclarationError(f"{key}: {problem}")
    if not isinstance(value, str | int):
        raise DeclarationError(f"{key}: expected text, got {type(value).__name__}")
    return str(value)


def identify(state_id: str, target: str, name: object = None, **extra: object) -> Declared:
    """A pool by its poolid (``name``). Raises DeclarationError naming the key."""
    return identify_by_name(
        state_id, target, name, extra, noun="pool", has="name and comment", check=check_poolid
    )


def declare(
    state_id: str, target: str, name: object = None, comment: object = None, adopt: object = False, **extra
) -> Declared:
    """A checked pool declaration: ``name`` (the poolid), ``comment`` (text; None or '' for
    none), ``adopt``. Raises DeclarationError naming the key and rule."""
    probe = identify(state_id, target, name=name, **extra)
    text = _text("comment", comment)
    problem = comment_problem(text)
    if problem:
        raise DeclarationError(f"comment: {problem}")
    return probe.declaring({"comment": text}, adopt)


def parse(data: object, decl: Declared) -> dict:
    """``GET /pools?poolid=`` → ``{comment}``. Raises ValueError for any other shape."""
    poolid = decl.names["name"]
    if not isinstance(data, list) or len(data) != 1 or not isinstance(data[0], Mapping):
        raise ValueError(f"expected a list holding pool {poolid}")
    entry = data[0]
    if entry.get("poolid") != poolid:
        raise ValueError(f"the answer is about pool {entry.get('poolid')!r}, not {poolid}")
    comment = entry.get("comment", "")
    if comment is None:
        comment = ""
    if not isinstance(comment, str):
        raise ValueError("comment is not text")
    members = entry.get("members", [])
    if not isinstance(members, list) or not all(isinstance(member, Mapping) for member in members):
        raise ValueError("members is not a list of objects")
    return {"comment": comment, "members": [member_name(member) for member in members]}


def parse_object(data: object, decl: Declared) -> dict:
    """PVE 8.0's ``GET /pools/{poolid}`` (``read_pool``: ``{comment?, members}``, no ``poolid``) →
    ``{comment, members}`` as ``parse`` gives them. Raises ValueError for another shape."""
    if not isinstance(data, Mapping):
        raise ValueError(f"expected pool {decl.names['name']} as an object")
    return parse([{"poolid": decl.names["name"], **data}], decl)


def member_name(member: Mapping[str, object]) -> str:
    """A pool member as a sentence names it: ``CT 150``, ``VM 300``, ``storage local`` (the
    ``members`` rows of ``GET /pools?poolid=``: ``type`` lxc, qemu or storage)."""
    kind = member.get("type")
    if kind in ("lxc", "qemu") and member.get("vmid") is not None:
        return f"{'CT' if kind == 'lxc' else 'VM'} {member['vmid']}"
    if kind == "storage" and member.get("storage"):
        return f"storage {member['storage']}"
    return str(member.get("id", member))


def _listing(ctx: PveContext) -> list[Mapping]:
    """The run's shared ``GET /pools`` rows (``SPEC.listing``), read with the read credential."""
    return get_rows(ctx.client, "pools", ctx.broker.read(), what="pools", reads=ctx.reads)


def refusals(ctx: PveContext, decl: Declared, action: str, live: Mapping[str, object] | None) -> list[str]:
    """PVE's refusals of a pool write, predicted with the read credential.

    - create of a nested pool whose parent does not exist (pve-manager ``PVE/API2/Pool.pm``
      ``create_pool``: "parent 'a' of pool 'a/b' does not exist"), unless this run creates it
      first: the parent is in the run's ``GET /pools`` listing, else its own ``GET
      /pools?poolid=<parent>`` decides (the listing leaves out pools the credential may not audit);
    - delete of a pool that still has members (``delete_pool``: "pool 'x' is not empty (contains
      VM 150)"): its guests and storages from the read, and its sub-pools from the run's ``GET
      /pools`` listing.

    The listing is the one the run's states share (``ReadAhead.shared``): no state reads it twice.
    """
    poolid = decl.names["name"]
    if action == "create" and "/" in poolid:
        parent = poolid.rsplit("/", 1)[0]
        if will_exist(ctx, FAMILY, parent) or any(row.get("poolid") == parent for row in _listing(ctx)):
            return []
        try:  # a nested pool is planned only from PVE 8.1 (``for_cluster``): the query form serves
            ctx.client.request("GET", "pools", ctx.broker.read(), params={"poolid": parent})
        except PveError as error:
            if error.status == 500 and error.message == f"pool '{parent}' does not exist":
                return [
                    f"pool {poolid}: its parent pool {parent} does not exist, and PVE refuses to create it "
                    f"(`parent '{parent}' of pool '{poolid}' does not exist`). Declare pool {parent} and "
                    "apply it first, or create it by hand."
                ]
            raise
        return []
    if action == "delete":
        inside = [
            f"pool {row['poolid']}"
            for row in _listing(ctx)
            if str(row.get("poolid", "")).startswith(f"{poolid}/")
        ]
        if live is None or "members" not in live:  # judged on the listing, which names no members
            live = read(ctx, SPEC, decl) or {}
        # Members a guest state earlier in this run moves out (or destroys) are gone by the time the
        # delete is sent: the formula runs an absent pool after the guests (guest.pools).
        leaving = {
            member_name({"type": kind, "vmid": vmid})
            for kind, vmid in leaving_pool(ctx.memo, ctx.target.name, poolid)
        }
        members = [*inside, *[member for member in live.get("members") or [] if member not in leaving]]
        if members:
            return [
                f"pool {poolid} still has members ({', '.join(members)}), and PVE refuses to delete a pool "
                f"that is not empty (`pool '{poolid}' is not empty`). Move them out first (`pvesh set /pools "
                f"--poolid {poolid} --delete 1 --vms <vmid>`, sub-pools deleted first), then run again."
            ]
    return []


def listed(rows: object, decl: Declared) -> dict | None:
    """``GET /pools`` (``[{poolid, comment?}]``: the index without ``poolid`` lists no members,
    pve-manager ``PVE/API2/Pool.pm`` index) → this pool's ``{comment}``, or None when it is not
    listed (the index leaves out pools the credential may not audit). Raises ValueError for
    another shape. Members are not in it: only a pool's own read (``parse``) counts them."""
    row = listed_row(rows, "poolid", lambda poolid: poolid == decl.names["name"])
    if row is None:
        return None
    comment = row.get("comment") or ""
    if not isinstance(comment, str):
        raise ValueError(f"pool {decl.names['name']}: comment is not text")
    return {"comment": comment}


def _form(decl: Declared, with_empty: bool) -> dict[str, str]:
    form = {"poolid": decl.names["name"]}
    comment = str(decl.values.get("comment", ""))
    if comment or with_empty:
        form["comment"] = comment
    return form


def for_cluster(ctx: PveContext, decl: Declared) -> ObjectSpec:
    """``SPEC`` from PVE 8.1, ``SPEC_80`` (the ``/pools/{poolid}`` calls) on 8.0, read from the
    cluster's release once per run (``facts.release``). Raises Refused for a nested pool on 8.0,
    and what ``facts.release`` raises."""
    found = release(ctx)
    if found.nested_pools:
        return SPEC
    if "/" in decl.names["name"]:
        raise Refused(
            f"{decl.label}: the cluster runs PVE {found.release}, which has no nested pools (they came "
            f"with PVE 8.1; 8.0 refuses the name: `pool name '{decl.names['name']}' contains invalid "
            "characters`). Declare a pool without '/', or upgrade the cluster. Nothing was written."
        )
    return SPEC_80


SPEC = ObjectSpec(
    family=FAMILY,
    noun="pool",
    declare=declare,
    identify=identify,
    read=lambda decl: Call("GET", "pools", params={"poolid": decl.names["name"]}),
    absence="HTTP 500 \"pool '<poolid>' does not exist\" (pve-manager PVE/API2/Pool.pm index)",
    is_absent=exact_message(500, "pool '{name}' does not exist"),
    parse=parse,
    create=lambda decl: Call("POST", "pools", form=_form(decl, with_empty=False)),
    create_endpoint=CREATE,
    # ``comment: ''`` is sent to clear it: update_pool sets a defined comment, and
    # write_user_config then writes an empty one as none. It goes as JSON: a form's ``comment=``
    # reaches update_pool as not given (pve-http-server decode_urlencoded), so nothing changes.
    update=lambda decl, live: Call("PUT", "pools", form=_form(decl, with_empty=True), json=True),
    update_endpoint=UPDATE,
    delete=lambda decl, live: Call("DELETE", "pools", params={"poolid": decl.names["name"]}),
    matches=same_values,
    listing=Call("GET", "pools"),
    listed=listed,
    refusals=refusals,
    for_cluster=for_cluster,
    export_names=export_by("poolid"),
)


def _one(decl: Declared) -> str:
    return api_path("pools", decl.names["name"])


#: The calls of PVE 8.0, whose ``read_pool``, ``update_pool`` and ``delete_pool`` take the poolid in
#: the path (pve-manager 8.0.4 ``PVE/API2/Pool.pm``); the listing and the create are as from 8.1.
SPEC_80 = replace(
    SPEC,
    read=lambda decl: Call("GET", _one(decl)),
    parse=parse_object,
    # The poolid is in the path, so the body carries the comment alone (as JSON, as from 8.1).
    update=lambda decl, live: Call(
        "PUT", _one(decl), form={"comment": str(decl.values.get("comment", ""))}, json=True
    ),
    update_endpoint=Endpoint("PUT /pools/{poolid}", (), _RULES.get),
    delete=lambda decl, live: Call("DELETE", _one(decl)),
    for_cluster=None,
)
