"""Firewall aliases (``proxmox_firewall_alias``): a name for an IP address or network, the cluster's
(``/cluster/firewall/aliases``) or a guest's (``scope: vm/<vmid>`` or ``ct/<vmid>``:
``/nodes/{node}/{qemu|lxc}/{vmid}/firewall/aliases``, the node from the guest index; ``VM.pm`` registers
the same ``Aliases.pm`` handlers there). A guest's alias of a name shadows the cluster's in that guest's
rules and IP sets (``resolve_alias``); its ownership row is ``<scope>/<name>`` (a cluster alias's stays
``<name>``).

Source: pve-firewall 6.0.4 (git 6f1311f) ``src/PVE/API2/Firewall/Aliases.pm`` (the API) and
``src/PVE/Firewall.pm`` (``$ip_alias_pattern``, ``pve-fw-alias``, ``pve_verify_ip_or_cidr``,
``parse_ip_or_cidr``, ``parse_alias``, ``$format_aliases``), with the PVE 9 API schema for the
``comment`` format (``pve-fw-comment-spec``: no line feed).

What PVE stores, and so how this family compares:

- **name** ``[A-Za-z][A-Za-z0-9_-]+``, 2 to 64 characters. The API keys aliases by
  ``lc($name)`` and keeps the spelling of the last write, so names compare case-insensitively:
  ``Web_Hosts`` and ``web_hosts`` are one alias, and a case-only change is no change.
- **cidr** is stored as sent, then read back through ``parse_ip_or_cidr``, which strips a
  ``/32`` from an IPv4 address and a ``/128`` from an IPv6 one and changes nothing else (host bits
  stay: ``10.0.0.5/24`` is kept as written). This family compares the address in
  ``ipaddress``'s spelling (IPv6 compressed, lower case) with its prefix length, a full-length
  prefix written bare, and sends that same spelling. **fakepve 0.5.0 differs**: it does not strip
  ``/32`` or ``/128``; comparing canonical spellings makes both answers equal.
- **comment** is written as ``name cidr # comment`` and read back by ``parse_alias``, which
  trims white space at both ends; ``$format_aliases`` writes no comment when it is empty or only
  white space, and both the API and the parser keep a comment only when it is true in Perl, so
  ``0`` is lost (refused here). fakepve keeps the comment untrimmed.
- **absence** is exactly HTTP 400 ``Parameter verification failed.`` with ``errors.name`` =
  ``no such alias`` (``read_alias``: ``raise_param_exc({ name => "no such alias" })``), as fakepve
  answers too. Deleting a missing alias succeeds, in PVE and fakepve alike.
- **in use**: PVE deletes or renames an alias whatever rules or IP sets still name it, which
  then silently stop matching; ``refusals`` refuses such a delete at plan, naming them
  (``salt_proxmox.firewall.usage``).
- ``GET .../aliases/{name}`` has no digest; the list ``GET .../aliases`` carries the digest of
  all aliases (``copy_list_with_digest``), which ``PUT`` and ``DELETE`` check
  (``assert_if_modified``). Writes here carry the list digest, read right before the write and
  checked to show the alias as judged.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from salt_proxmox.errors import DeclarationError, Refused, boolean_problem
from salt_proxmox.firewall import scope as scopes
from salt_proxmox.firewall import usage
from salt_proxmox.pve.client import api_path
from salt_proxmox.pve.constraints import Endpoint, Rule
from salt_proxmox.pve.errors import PveError, PveMalformed
from salt_proxmox.pve.listing import get_rows
from salt_proxmox.simple.spec import (
    Call,
    Declared,
    ObjectSpec,
    comment_problem,
    export_by,
    listed_row,
    same_values,
)
from salt_proxmox.wire.propstring import text_problem

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.pve.client import Credential
    from salt_proxmox.run.context import PveContext

FAMILY = "firewall_alias"
COLLECTION = "cluster/firewall/aliases"
#: ``$ip_alias_pattern`` with ``pve-fw-alias``'s lengths.
NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]+\Z")
NAME_MAX = 64
#: Perl's ``\s`` (trimmed by ``parse_alias``).
_PERL_SPACE = " \t\n\r\f\v"


def fold(name: str) -> str:
    """The key PVE files an alias under (``lc``)."""
    return name.lower()


def check_name(value: str) -> str | None:
    """``pve-fw-alias``: None, or the reason in PVE's words."""
    if len(value) < 2 or len(value) > NAME_MAX:
        return f"value must be 2 to {NAME_MAX} characters long"
    if not NAME.match(value):
        return "value does not match the regex pattern [A-Za-z][A-Za-z0-9_-]+"
    return None


def canonical_cidr(text: object) -> str:
    """An address or network in the spelling this family compares and sends.

    ``10.0.0.5/32`` → ``10.0.0.5``; ``2001:DB8::1/128`` → ``2001:db8::1``; ``10.0.0.5/24`` stays
    (host bits are kept, as PVE keeps them). Raises ValueError for anything ``IPorCIDR``
    (``pve_verify_ip_or_cidr``) refuses: not an address, a prefix longer than the address, a
    zone id, white space.
    """
    if not isinstance(text, str) or not text or text.strip() != text:
        raise ValueError(f"{text!r} is not an IP address or CIDR network")
    address, slash, prefix = text.partition("/")
    if "%" in address:
        raise ValueError(f"{text!r}: a zone id is not part of an IP address PVE accepts")
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        raise ValueError(f"{text!r}: value does not look like a valid IP address or CIDR network") from None
    if slash:
        if not re.fullmatch(r"[0-9]{1,3}", prefix) or int(prefix) > ip.max_prefixlen:
            raise ValueError(f"{text!r}: the prefix length must be 0 to {ip.max_prefixlen}")
        length = int(prefix)
    else:
        length = ip.max_prefixlen
    spelled = ip.compressed
    return spelled if length == ip.max_prefixlen else f"{spelled}/{length}"


def check_cidr(value: str) -> str | None:
    """``IPorCIDR``: None, or the reason."""
    try:
        canonical_cidr(value)
    except ValueError as exc:
        return str(exc)
    return None


def canonical_comment(value: object) -> str:
    """A comment as PVE reads it back: white space trimmed at both ends; None is ``''``."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError(text_problem(value) or f"{value!r} is not text")
    return value.strip(_PERL_SPACE)


def check_comment(value: str) -> str | None:
    """``pve-fw-comment-spec`` (no line feed), and a comment PVE keeps (not ``0``)."""
    if "\n" in value or "\r" in value:
        return "comment must not contain a line feed"
    return comment_problem(canonical_comment(value))


def declared_comment(comment: object, adopt: object, problems: list[str]) -> str:
    """A firewall object's declared ``comment`` as PVE reads it back (``canonical_comment``), its
    problems and ``adopt``'s (``check_comment``, ``boolean_problem``) added to ``problems``; ``''`` for
    none or a refused one. Aliases, IP sets and security groups keep comments alike (``parse_alias``,
    ``parse_fw_config``'s ``[group|ipset <name>] # <comment>``)."""
    try:
        note = canonical_comment(comment)
    except ValueError as exc:
        problems.append(f"comment: {exc}")
        note = ""
    problem = check_comment(comment) if isinstance(comment, str) else None
    if problem:
        problems.append(f"comment: {problem}")
    problem = boolean_problem("adopt", adopt)
    if problem:
        problems.append(problem)
    return note


_RULES = {
    "name": Rule(check=check_name),
    "cidr": Rule(check=check_cidr),
    "comment": Rule(check=check_comment),
}
CREATE = Endpoint(f"POST /{COLLECTION}", ("name", "cidr"), _RULES.get)
#: ``cidr`` is not optional in ``update_alias``: every PUT restates it.
UPDATE = Endpoint(f"PUT /{COLLECTION}/{{name}}", ("cidr",), _RULES.get)


def identify(
    state_id: str, target: str, name: object = None, scope: object = None, **extra: object
) -> Declared:
    """An alias by name and ``scope`` (None or ``cluster``, ``vm/<vmid>``, ``ct/<vmid>``). Raises
    DeclarationError naming the key and rule."""
    if extra:
        raise DeclarationError(
            f"unknown key(s) {', '.join(sorted(extra))}: an alias has name, scope, cidr, comment, rename_from"
        )
    where = scopes.parse("cluster" if scope is None else scope, ("cluster", "vm", "ct"))
    if not isinstance(name, str):
        raise DeclarationError("name: the alias name is required (text)")
    problem = check_name(name)
    if problem:
        raise DeclarationError(f"name: {name!r}: {problem}")
    if where.kind == "cluster":
        return Declared(
            state_id, target, identity=fold(name), label=f"firewall alias {name}", names={"name": name}
        )
    return Declared(
        state_id,
        target,
        identity=f"{where}/{fold(name)}",
        label=f"firewall alias {name} of {where.label}",
        names={"name": name, "scope": str(where)},
    )


def declare(
    state_id: str,
    target: str,
    name: object = None,
    cidr: object = None,
    comment: object = None,
    adopt: object = False,
    scope: object = None,
    **extra: object,
) -> Declared:
    """A checked alias declaration: ``name``, ``scope`` (default the cluster's), ``cidr`` (an address or
    network), ``comment`` (text; None or '' for none), ``adopt``. Raises DeclarationError naming key and
    rule."""
    problems: list[str] = []
    try:
        probe = identify(state_id, target, name=name, scope=scope, **extra)
    except DeclarationError as exc:
        problems += exc.problems
        probe = None
    try:
        address = canonical_cidr(cidr)
    except ValueError as exc:
        problems.append(f"cidr: {exc}")
        address = ""
    note = declared_comment(comment, adopt, problems)
    if problems or probe is None:
        raise DeclarationError(problems)
    return probe.declaring({"cidr": address, "comment": note}, adopt)


def renamed(decl: Declared, name: str) -> Declared:
    """``decl`` under another name (the old name of a rename). Raises DeclarationError."""
    scope = decl.names.get("scope")
    return identify(decl.state_id, decl.target, name=name, scope=scope).declaring(decl.values, decl.adopt)


def parse_entry(data: object, name: str) -> dict:
    """One alias as PVE answers it → ``{name, cidr, comment}`` (canonical cidr and comment).
    Raises ValueError when it is not an object holding this name and an address."""
    if not isinstance(data, Mapping):
        raise ValueError("expected an alias object")
    stored = data.get("name")
    if not isinstance(stored, str) or fold(stored) != fold(name):
        raise ValueError(f"the answer is about alias {stored!r}, not {name}")
    try:
        cidr = canonical_cidr(data.get("cidr"))
        comment = canonical_comment(data.get("comment"))
    except ValueError as exc:
        raise ValueError(f"alias {stored}: {exc}") from None
    return {"name": stored, "cidr": cidr, "comment": comment}


def listed(rows: object, decl: Declared) -> dict | None:
    """``GET /cluster/firewall/aliases`` (every alias, as ``read_alias`` answers each) → this
    alias as ``parse_entry`` reads it, or None when it is not listed (always for a guest's alias: its
    own read decides). Raises ValueError for another shape."""
    if decl.names.get("scope"):
        return None
    row = listed_row(rows, "name", lambda name: isinstance(name, str) and fold(name) == decl.identity)
    return None if row is None else parse_entry(row, decl.names["name"])


def is_absent(error: PveError, decl: Declared) -> bool:
    """PVE's exact missing-alias answer (see the module docstring)."""
    return error.status == 400 and str(error.errors.get("name", "")).strip() == "no such alias"


def list_digest(ctx: PveContext, credential: Credential, decl: Declared, live: Mapping[str, object]) -> dict:
    """The write guard: ``{digest}`` of the alias list, read now and checked to show the alias
    exactly as it was judged. Raises PveMalformed for a list without digests, Refused when
    the alias changed (or went) between the two reads."""
    collection = f"{_base(ctx, decl)}/aliases"
    rows = get_rows(ctx.client, collection, credential, what="aliases")
    mine = [row for row in rows if isinstance(row.get("name"), str) and fold(row["name"]) == decl.identity]
    if not mine:
        raise Refused(f"{decl.label} went away between two reads; nothing was written. Run again.")
    try:
        entry = parse_entry(mine[0], decl.names["name"])
    except ValueError as exc:
        raise PveMalformed("GET", collection, str(exc)) from None
    digest = mine[0].get("digest")
    if not isinstance(digest, str) or not digest:
        raise PveMalformed("GET", collection, "the alias list carries no digest")
    if (entry["cidr"], entry["comment"]) != (live.get("cidr"), live.get("comment")):
        raise Refused(f"{decl.label} changed between two reads; nothing was written. Run again.")
    return {"digest": digest}


def _path(decl: Declared, collection: str = COLLECTION) -> str:
    return f"{collection}/{api_path(decl.names['name'])}"


def _base(ctx: PveContext, decl: Declared) -> str:
    return scopes.base(ctx, _scope(decl)).path


def _scope(decl: Declared) -> scopes.Scope:
    return scopes.parse(decl.names.get("scope", "cluster"))


def for_cluster(ctx: PveContext, decl: Declared) -> ObjectSpec:
    """``SPEC`` for a cluster alias; for a guest's, ``SPEC`` with the guest's paths (its node read from
    the run's guest index). Raises what ``scope.base`` raises."""
    if not decl.names.get("scope"):
        return SPEC
    collection = f"{_base(ctx, decl)}/aliases"
    return replace(
        SPEC,
        read=lambda d: Call("GET", _path(d, collection)),
        create=lambda d: Call("POST", collection, form={"name": d.names["name"], **body(d)}),
        update=lambda d, live: Call("PUT", _path(d, collection), form=body(d)),
        delete=lambda d, live: Call("DELETE", _path(d, collection)),
    )


def body(decl: Declared) -> dict[str, str]:
    """``cidr`` and, when there is one, ``comment`` (no comment clears it: ``update_alias``
    replaces the whole entry)."""
    form = {"cidr": str(decl.values["cidr"])}
    if decl.values.get("comment"):
        form["comment"] = str(decl.values["comment"])
    return form


#: What a refused delete says to do.
DELETE_REMEDY = (
    "Point them at another alias or address first (`pvesh set /cluster/firewall/rules/<pos> --source …`, "
    "or the node's, guest's or group's rules and IP sets), then run again."
)


def refusals(ctx: PveContext, decl: Declared, action: str, live: Mapping[str, object] | None) -> list[str]:
    """PVE's silent harm predicted at plan: deleting an alias that rules or IP set entries still
    name (``usage.refusal``); nothing else of an alias write is refused here.

    Raises what ``usage.alias_users`` raises (a failed read is never "no reference")."""
    if action != "delete":
        return []
    target = usage.Target("alias", decl.names["name"], decl.names.get("scope", "cluster"))
    return usage.refusal_for(ctx, target, DELETE_REMEDY)


SPEC = ObjectSpec(
    family=FAMILY,
    noun="firewall alias",
    declare=declare,
    identify=identify,
    read=lambda decl: Call("GET", _path(decl)),
    absence="HTTP 400, errors.name 'no such alias' (pve-firewall PVE/API2/Firewall/Aliases.pm read_alias)",
    is_absent=is_absent,
    parse=lambda data, decl: parse_entry(data, decl.names["name"]),
    create=lambda decl: Call("POST", COLLECTION, form={"name": decl.names["name"], **body(decl)}),
    create_endpoint=CREATE,
    update=lambda decl, live: Call("PUT", _path(decl), form=body(decl)),
    update_endpoint=UPDATE,
    delete=lambda decl, live: Call("DELETE", _path(decl)),
    matches=same_values,
    write_guard=list_digest,
    delete_guard=True,  # remove_alias takes digest (pve-firewall API2/Firewall/Aliases.pm)
    listing=Call("GET", COLLECTION),
    listed=listed,
    identity_keys=("name", "scope"),
    refusals=refusals,
    export_names=export_by("name"),
    # The cluster's aliases, then each guest's own with its scope.
    export_listings=lambda ctx: scopes.export_listings(ctx, "aliases"),
    for_cluster=for_cluster,
    create_on_cluster=True,
    unborn=lambda ctx, decl: scopes.unborn(ctx, _scope(decl)),
    # A clone's: read at its template's, which PVE copies to it (qemu-server clone_vm: clone_vmfw_conf).
    copied=lambda ctx, decl: scopes.copied(ctx, _scope(decl)),
)
