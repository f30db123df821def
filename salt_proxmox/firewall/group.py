"""Security groups (``proxmox_firewall.group``): a named rule list of the cluster's firewall that node
and guest rules use with ``type: group``; its own rules are ``proxmox_firewall.rules`` at scope
``group/<name>``.

Source: pve-firewall 6.0.4 (git 6f1311f) ``src/PVE/API2/Firewall/Groups.pm`` (the list and the create,
rename and comment update), ``src/PVE/API2/Firewall/Rules.pm`` (``GroupRules``: the group's rules and
``delete_security_group``) and ``src/PVE/Firewall.pm`` (``$security_group_name_pattern``,
``pve-security-group-name``, ``parse_fw_config``).

What PVE does, and so what this family does:

- **name** ``[A-Za-z][A-Za-z0-9\\-\\_]+``, 2 to 18 characters (``$max_group_name_length``). The API
  stores the name as sent, but ``parse_fw_config`` reads ``[group <name>]`` back lower-cased
  (``$group = lc($1)``), while a rule's ``action`` is looked up as written: a group declared ``WebGrp``
  would be ``webgrp`` after the next read and a rule naming ``WebGrp`` would stop matching. So a name
  with an upper-case letter is refused. (fakepve 0.5.0 keeps the case; the refusal makes the difference
  moot.)
- **comment**: ``[group <name>] # <comment>`` trimmed at both ends, kept only when true in Perl (``0``
  is lost) and on one line (refused otherwise). ``POST /cluster/firewall/groups`` with ``rename`` equal
  to the name updates the comment (``create_security_group``), guarded by the group list's digest; an
  empty comment clears it (``defined($comment)``), so that write goes as JSON.
- **absence**: the list ``GET /cluster/firewall/groups`` (``list_security_groups``: every group,
  ``permissions => { user => 'all' }``, never filtered) lacks it.
- **delete** ``DELETE /cluster/firewall/groups/{group}`` (no digest in its schema) dies ``Security group
  '<name>' is not empty`` while the group has rules: refused at plan with PVE's words. PVE deletes a group
  that rules still use (``type: group``, ``action: <name>``): those rules then fail to compile
  (``Firewall.pm`` ``generate_group_rules`` dies ``no such security group``) and the guest loses them
  silently; refused at plan, naming the rules (``salt_proxmox.firewall.usage``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from salt_proxmox.errors import DeclarationError, Refused
from salt_proxmox.firewall import usage
from salt_proxmox.firewall.alias import canonical_comment, check_comment, declared_comment
from salt_proxmox.pve.client import api_path
from salt_proxmox.pve.constraints import Endpoint, Rule
from salt_proxmox.pve.errors import PveMalformed
from salt_proxmox.pve.listing import get_rows
from salt_proxmox.simple.spec import Call, Declared, ObjectSpec, export_by, listed_row, same_values

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.pve.client import Credential
    from salt_proxmox.run.context import PveContext

FAMILY = "firewall_group"
COLLECTION = "cluster/firewall/groups"
#: ``$security_group_name_pattern`` and ``$max_group_name_length``.
NAME = re.compile(r"^[A-Za-z][A-Za-z0-9\-_]+\Z")
NAME_MAX = 18


def check_name(value: str) -> str | None:
    """``pve-security-group-name``, lower case (see the module text): None, or the reason."""
    if len(value) < 2 or len(value) > NAME_MAX:
        return f"value must be 2 to {NAME_MAX} characters long"
    if not NAME.match(value):
        return r"value does not match the regex pattern [A-Za-z][A-Za-z0-9\-\_]+"
    if value != value.lower():
        return (
            f"PVE reads security group names back in lower case (pve-firewall parse_fw_config), so rules "
            f"naming {value} would not find it: declare {value.lower()}"
        )
    return None


_RULES = {
    "group": Rule(check=check_name),
    "rename": Rule(check=check_name),
    "comment": Rule(check=check_comment),
}
CREATE = Endpoint(f"POST /{COLLECTION}", ("group",), _RULES.get)
UPDATE = Endpoint(f"POST /{COLLECTION} (rename)", ("group", "rename"), _RULES.get)


def identify(state_id: str, target: str, name: object = None, **extra: object) -> Declared:
    """A security group by name. Raises DeclarationError naming the key and rule."""
    if extra:
        raise DeclarationError(
            f"unknown key(s) {', '.join(sorted(extra))}: a security group has name, comment"
        )
    if not isinstance(name, str):
        raise DeclarationError("name: the security group name is required (text)")
    problem = check_name(name)
    if problem:
        raise DeclarationError(f"name: {name!r}: {problem}")
    return Declared(state_id, target, identity=name, label=f"security group {name}", names={"name": name})


def declare(
    state_id: str,
    target: str,
    name: object = None,
    comment: object = None,
    adopt: object = False,
    **extra: object,
) -> Declared:
    """A checked group declaration: ``name``, ``comment`` (text; None or '' for none), ``adopt``.
    Raises DeclarationError naming key and rule."""
    problems: list[str] = []
    try:
        probe = identify(state_id, target, name=name, **extra)
    except DeclarationError as exc:
        problems += exc.problems
        probe = None
    note = declared_comment(comment, adopt, problems)
    if problems or probe is None:
        raise DeclarationError(problems)
    return probe.declaring({"comment": note}, adopt)


def _row(rows: object, decl: Declared) -> Mapping | None:
    return listed_row(rows, "group", lambda group: group == decl.names["name"])


def listed(rows: object, decl: Declared) -> dict | None:
    """``GET /cluster/firewall/groups`` → ``{comment}`` of this group, or None when not listed.
    Raises ValueError for another shape."""
    row = _row(rows, decl)
    if row is None:
        return None
    try:
        return {"comment": canonical_comment(row.get("comment"))}
    except ValueError as exc:
        raise ValueError(f"{decl.label}: {exc}") from None


def list_digest(ctx: PveContext, credential: Credential, decl: Declared, live: Mapping[str, object]) -> dict:
    """The write guard of a comment update: ``{digest}`` of the group list, read now and checked to
    show the group as judged. Raises PveMalformed for a list without a digest, Refused when the group
    changed or went between the two reads."""
    rows = get_rows(ctx.client, COLLECTION, credential, what="security groups")
    row = _row(rows, decl)
    if row is None:
        raise Refused(f"{decl.label} went away between two reads; nothing was written. Run again.")
    digest = row.get("digest")
    if not isinstance(digest, str) or not digest:
        raise PveMalformed("GET", COLLECTION, "the security group list carries no digest")
    if canonical_comment(row.get("comment")) != live.get("comment"):
        raise Refused(f"{decl.label} changed between two reads; nothing was written. Run again.")
    return {"digest": digest}


def _create(decl: Declared) -> Call:
    form = {"group": decl.names["name"]}
    if decl.values.get("comment"):
        form["comment"] = str(decl.values["comment"])
    return Call("POST", COLLECTION, form=form)


def _update(decl: Declared, live: Mapping[str, object]) -> Call | None:
    if live.get("comment") == decl.values.get("comment"):
        return None
    name = decl.names["name"]
    # JSON, so an empty comment is sent and clears it (create_security_group: defined($comment)).
    form = {"group": name, "rename": name, "comment": str(decl.values.get("comment") or "")}
    return Call("POST", COLLECTION, form=form, json=True)


#: What a refused delete of a group in use says to do.
DELETE_REMEDY = (
    "Remove those rules first (declare the rule lists without them: proxmox_firewall.rules), then run again."
)


def group_rules(ctx: PveContext, name: str) -> list[Mapping]:
    """The rules of security group ``name`` (``GET /cluster/firewall/groups/{group}``). Raises PveError,
    PveMalformed, PveUnreachable."""
    return get_rows(ctx.client, f"{COLLECTION}/{api_path(name)}", ctx.broker.read(), what="rules")


def refusals(ctx: PveContext, decl: Declared, action: str, live: Mapping[str, object] | None) -> list[str]:
    """A delete PVE refuses (``delete_security_group``: ``Security group '<name>' is not empty``) or
    that would leave rules using the group without it (``usage.refusal`` of the group): the plan's
    refusals. Nothing else of a group write is refused here. Raises what the reads raise."""
    if action != "delete":
        return []
    name = decl.names["name"]
    found = []
    rules = group_rules(ctx, name)
    if rules:
        found.append(
            f"PVE refuses to delete {decl.label}: Security group '{name}' is not empty (pve-firewall "
            f"API2/Firewall/Rules.pm delete_security_group); it has {len(rules)} rule(s). Declare its rule "
            "list empty (proxmox_firewall.rules group/" + name + ") first."
        )
    return found + usage.refusal_for(ctx, usage.Target("group", name), DELETE_REMEDY)


SPEC = ObjectSpec(
    family=FAMILY,
    noun="security group",
    declare=declare,
    identify=identify,
    read=lambda decl: Call("GET", COLLECTION),
    absence="not listed by GET /cluster/firewall/groups (pve-firewall Groups.pm list_security_groups)",
    is_absent=lambda error, decl: False,
    parse=listed,
    confirm_absent=lambda ctx, credential, decl: None,  # the list is never filtered: user => 'all'
    create=_create,
    create_endpoint=CREATE,
    update=_update,
    update_endpoint=UPDATE,
    delete=lambda decl, live: Call("DELETE", f"{COLLECTION}/{api_path(decl.names['name'])}"),
    matches=same_values,
    write_guard=list_digest,
    listing=Call("GET", COLLECTION),
    listed=listed,
    export_names=export_by("group"),
    refusals=refusals,
)
