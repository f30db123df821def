"""IP sets (``proxmox_firewall.ipset``): a named set of addresses and networks that rules name as
``+<name>``, at cluster scope or a guest's (``vm/<vmid>``, ``ct/<vmid>``).

Source: pve-firewall 6.0.4 (git 6f1311f) ``src/PVE/API2/Firewall/IPSet.pm`` (``BaseIPSetList``: the
list, create, rename and comment; ``IPSetBase``: the entries) and ``src/PVE/Firewall.pm``
(``$ipset_name_pattern``, ``ipset-name``, ``clean_cidr``, ``parse_ip_or_cidr``, ``parse_fw_config``).

What PVE does, and so what this family does:

- **name** ``[A-Za-z][A-Za-z0-9\\-\\_]+``, 2 to 64 characters. The API stores it as sent but
  ``parse_fw_config`` reads ``[IPSET <name>]`` back lower-cased, while a rule's ``+<name>`` is looked up
  as written (``ipt_gen_src_or_dst_match``): a name with an upper-case letter is refused. (fakepve
  0.5.0 keeps the case; the refusal makes the difference moot.)
- **entries** (``cidrs``): ``{cidr, nomatch, comment}``. ``create_ip`` normalises an address or network
  with ``clean_cidr`` (host bits dropped: ``10.0.0.5/24`` is ``10.0.0.0/24``, through ``Net::IP``) and
  ``parse_ip_or_cidr`` (``/32`` and ``/128`` dropped), refuses a zero prefix (``a zero prefix is not
  allowed in ipset entries``) and a duplicate (``address '<cidr>' already exists``); an alias name
  (``IPorCIDRorAlias``: ``<alias>``, ``dc/<alias>``, ``guest/<alias>``) is kept as written and must
  exist (``resolve_alias`` dies ``no such alias``). This family compares addresses in ``ipaddress``'s
  spelling (IPv6 compressed, lower case), refuses the zero prefix, duplicates and a missing alias at
  plan, and compares entries as a set keyed by cidr (order means nothing to ``ipset``). ``nomatch`` is
  stored only when true; a ``comment`` only when true in Perl (``0`` is lost: refused).
- **writes**: the set by ``POST …/ipset`` (``name``, ``comment``); a comment change by the same POST with
  ``rename`` equal to the name, guarded by the set list's digest; each entry on its own: ``POST
  …/ipset/{name}`` adds one (no digest in its schema), ``PUT …/ipset/{name}/{cidr}`` sets its
  ``nomatch`` and ``comment`` and ``DELETE …/ipset/{name}/{cidr}`` removes it, both guarded by the
  entry list's digest (``copy_list_with_digest``). Before every write the list is read again and must
  be what the plan, and the writes before, left: a change made meanwhile stops the apply.
- **absence**: ``GET …/ipset/{name}`` dies ``no such IPSet '<name>'`` (HTTP 500, ``load_config``).
- **delete** ``DELETE …/ipset/{name}`` dies ``IPSet '<name>' is not empty`` unless ``force``; this family
  deletes only a set it owns that still holds what it declared, so it sends ``force=1``. Rules that
  still name the set are not checked by PVE (they then fail to compile: ``no such ipset``): refused at
  plan, naming them (``salt_proxmox.firewall.usage``).
- **reserved names** (``Firewall.pm``): at cluster scope ``management`` (the compiler adds the local
  cluster network to it, and the host firewall lets its members reach the API, SSH and consoles:
  ``enable_host_firewall``) and ``blacklist`` (its members are dropped before any rule); at a guest's,
  ``ipfilter-net<N>`` (the addresses NIC N may send from: ``ruleset_create_vm_chain``). PVE treats
  them as ordinary sets otherwise; the plan says what they do, and a change to ``management`` or
  ``blacklist`` is handed to the no-lockout check (``lockout_refusals``), refused when it would cut
  this minion off unless ``allow_lockout: true``, as a rule list's or the options' change is.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from salt_proxmox.access import privileges
from salt_proxmox.errors import DeclarationError, Refused, SaltProxmoxError, boolean_problem
from salt_proxmox.firewall import scope as scopes
from salt_proxmox.firewall import usage
from salt_proxmox.firewall.alias import canonical_comment, check_comment, declared_comment
from salt_proxmox.firewall.alias import fold as fold_alias
from salt_proxmox.outcome import Outcome
from salt_proxmox.ownership.rows import absent_note, claim, row_key
from salt_proxmox.pve.client import api_path
from salt_proxmox.pve.constraints import Endpoint, Rule
from salt_proxmox.pve.errors import PveError, PveMalformed
from salt_proxmox.pve.listing import get_rows, rows_of
from salt_proxmox.simple import lifecycle as simple
from salt_proxmox.simple.spec import Call, Declared, ObjectSpec, expect, export_by, will_exist
from salt_proxmox.wire.propstring import flag

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.run.context import PveContext

FAMILY = "firewall_ipset"
NAME = re.compile(r"^[A-Za-z][A-Za-z0-9\-_]+\Z")
NAME_MAX = 64
#: ``IPorCIDRorAlias``'s alias form (``$ip_alias_pattern`` with its scope).
ALIAS_REF = re.compile(r"^(dc/|guest/)?([A-Za-z][A-Za-z0-9_-]+)\Z")
#: What each reserved name does, by scope kind (see the module text).
RESERVED = {
    ("cluster", "management"): "PVE adds the local cluster network to IP set management and lets its members "
    "reach the API (8006), SSH and the consoles of every node (pve-firewall enable_host_firewall)",
    ("cluster", "blacklist"): "PVE drops all traffic from the members of IP set blacklist before any rule "
    "(pve-firewall PVEFW-blacklist)",
}
_IPFILTER = re.compile(r"^ipfilter-net[0-9]+\Z")


def check_name(value: str) -> str | None:
    """``ipset-name``, lower case (see the module text): None, or the reason."""
    if len(value) < 2 or len(value) > NAME_MAX:
        return f"value must be 2 to {NAME_MAX} characters long"
    if not NAME.match(value):
        return r"value does not match the regex pattern [A-Za-z][A-Za-z0-9\-\_]+"
    if value != value.lower():
        return (
            f"PVE reads IP set names back in lower case (pve-firewall parse_fw_config), so rules naming "
            f"+{value} would not find it: declare {value.lower()}"
        )
    return None


def canonical_cidr(text: object) -> str:
    """An entry's cidr as PVE stores it, in ``ipaddress``'s spelling: host bits dropped (``clean_cidr``),
    ``/32``/``/128`` dropped (``parse_ip_or_cidr``); an alias reference kept as written. Raises
    ValueError for anything ``IPorCIDRorAlias`` or ``create_ip`` refuses (a zero prefix)."""
    if not isinstance(text, str) or not text or text.strip() != text:
        raise ValueError(f"{text!r} is not an IP address, CIDR network or alias name")
    if ALIAS_REF.match(text):
        return text
    address, slash, prefix = text.partition("/")
    if "%" in address:
        raise ValueError(f"{text!r}: a zone id is not part of an IP address PVE accepts")
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        raise ValueError(f"{text!r}: value does not look like a valid IP address or CIDR network") from None
    if not slash:
        return ip.compressed
    if not re.fullmatch(r"[0-9]{1,3}", prefix) or int(prefix) > ip.max_prefixlen:
        raise ValueError(f"{text!r}: the prefix length must be 1 to {ip.max_prefixlen}")
    if int(prefix) == 0:
        raise ValueError(f"{text!r}: a zero prefix is not allowed in ipset entries (pve-firewall create_ip)")
    net = ipaddress.ip_network(f"{address}/{int(prefix)}", strict=False)
    if net.prefixlen == ip.max_prefixlen:
        return net.network_address.compressed
    return f"{net.network_address.compressed}/{net.prefixlen}"


def _key(cidr: str) -> str:
    """How two entries are one: PVE compares the stored cidr exactly; addresses are compared here in
    canonical spelling, alias references as written."""
    return cidr


def canonical_entry(entry: object, where: str) -> dict:
    """A declared or live entry → ``{cidr, nomatch, comment}`` (nomatch 0/1, comment '' for none).
    Raises ValueError naming ``where``."""
    if isinstance(entry, str):
        entry = {"cidr": entry}
    if not isinstance(entry, Mapping):
        raise ValueError(f"{where}: expected an entry {{cidr, nomatch, comment}} or a cidr")
    unknown = sorted(set(entry) - {"cidr", "nomatch", "comment", "digest"})
    if unknown:
        raise ValueError(
            f"{where}: unknown key(s) {', '.join(map(str, unknown))}: an entry has cidr, nomatch, comment"
        )
    try:
        cidr = canonical_cidr(entry.get("cidr"))
        nomatch = int(flag(entry.get("nomatch") or 0))
        comment = canonical_comment(entry.get("comment"))
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None
    return {"cidr": cidr, "nomatch": nomatch, "comment": comment}


def _sorted(entries: list[dict]) -> list[dict]:
    return sorted(entries, key=lambda entry: entry["cidr"])


def identify(
    state_id: str, target: str, name: object = None, scope: object = "cluster", **extra: object
) -> Declared:
    """An IP set by scope and name; ownership rows ``<name>`` at cluster scope, ``<scope>/<name>`` at a
    guest's. Raises DeclarationError naming the key and rule."""
    if extra:
        raise DeclarationError(
            f"unknown key(s) {', '.join(sorted(extra))}: an IP set has name, scope, comment, cidrs, adopt, "
            "allow_lockout"
        )
    where = scopes.parse("cluster" if scope is None else scope, ("cluster", "vm", "ct"))
    if not isinstance(name, str):
        raise DeclarationError("name: the IP set name is required (text)")
    problem = check_name(name)
    if problem:
        raise DeclarationError(f"name: {name!r}: {problem}")
    identity = name if where.kind == "cluster" else f"{where}/{name}"
    label = f"IP set {name}" + ("" if where.kind == "cluster" else f" of {where.label}")
    return Declared(
        state_id, target, identity=identity, label=label, names={"name": name, "scope": str(where)}
    )


def declare(
    state_id: str,
    target: str,
    name: object = None,
    scope: object = "cluster",
    comment: object = None,
    cidrs: object = None,
    adopt: object = False,
    allow_lockout: object = False,
    **extra: object,
) -> Declared:
    """A checked IP set: ``name``, ``scope``, ``comment``, ``cidrs`` (a list of entries ``{cidr, nomatch,
    comment}`` or bare cidrs; None or [] for an empty set), ``adopt``, ``allow_lockout`` (a change to the
    cluster's ``management`` or ``blacklist`` set that would cut this minion off goes through, the plan
    saying so). Raises DeclarationError naming every problem."""
    problems: list[str] = []
    lockout = boolean_problem("allow_lockout", allow_lockout)
    if lockout:
        problems.append(lockout)
    try:
        probe = identify(state_id, target, name=name, scope=scope, **extra)
    except DeclarationError as exc:
        problems += exc.problems
        probe = None
    note = declared_comment(comment, adopt, problems)
    entries: list[dict] = []
    if cidrs is not None and not isinstance(cidrs, list):
        problems.append("cidrs: expected a list of entries {cidr, nomatch, comment}")
        cidrs = []
    for index, entry in enumerate(cidrs or []):
        try:
            found = canonical_entry(entry, f"cidrs[{index}]")
        except ValueError as exc:
            problems.append(str(exc))
            continue
        if found["comment"] and check_comment(found["comment"]):
            problems.append(f"cidrs[{index}]: comment: {check_comment(found['comment'])}")
        if any(_key(other["cidr"]) == _key(found["cidr"]) for other in entries):
            problems.append(
                f"cidrs[{index}]: address '{found['cidr']}' already exists (PVE normalises "
                f"{entry.get('cidr') if isinstance(entry, Mapping) else entry} to it: clean_cidr)"
            )
            continue
        entries.append(found)
    if problems or probe is None:
        raise DeclarationError(problems)
    decl = probe.declaring({"comment": note, "cidrs": _sorted(entries)}, adopt)
    # Kept with the names, only when true, as the options keep it.
    return replace(decl, names={**decl.names, **({"allow_lockout": True} if allow_lockout else {})})


def is_absent(error: PveError, decl: Declared) -> bool:
    """``load_config``'s ``no such IPSet '<name>'`` (HTTP 500)."""
    return error.status == 500 and error.message == f"no such IPSet '{decl.names['name']}'"


def _scope(decl: Declared) -> scopes.Scope:
    return scopes.parse(decl.names["scope"], ("cluster", "vm", "ct"))


def _base(ctx: PveContext, decl: Declared) -> str:
    return scopes.base(ctx, _scope(decl)).path


def _set_path(base: str, decl: Declared) -> str:
    return f"{base}/ipset/{api_path(decl.names['name'])}"


def live_entries(rows: object, decl: Declared) -> list[dict]:
    """``GET …/ipset/{name}`` → the entries, canonical and sorted. Raises ValueError for another shape."""
    return _sorted([canonical_entry(row, f"{decl.label} entry") for row in rows_of(rows, "IP set entries")])


def _listed_row(ctx: PveContext, base: str, decl: Declared) -> Mapping | None:
    rows = get_rows(ctx.client, f"{base}/ipset", ctx.broker.read(), what="IP sets")
    return next((row for row in rows if row.get("name") == decl.names["name"]), None)


def _bound(ctx: PveContext, decl: Declared) -> ObjectSpec:
    base = _base(ctx, decl)

    def parse(data: object, d: Declared) -> dict:
        entries = live_entries(data, d)
        row = _listed_row(ctx, base, d)
        return {"comment": canonical_comment((row or {}).get("comment")), "cidrs": entries}

    def create(d: Declared) -> Call:
        form = {"name": d.names["name"]}
        if d.values.get("comment"):
            form["comment"] = str(d.values["comment"])
        return Call("POST", f"{base}/ipset", form=form)

    return replace(
        SPEC,
        read=lambda d: Call("GET", _set_path(base, d)),
        parse=parse,
        create=create,
        delete=lambda d, live: Call("DELETE", _set_path(base, d), params={"force": "1"}),
    )


# ----------------------------------------------------------------------------- the writes


@dataclass
class Step:
    """One write: ``call``; ``guard``: ``list`` (the set list's digest), ``entries`` (the entry list's
    digest) or ``check`` (no digest in PVE's schema: the entries re-read and compared); ``after``: the
    entries the set holds once it is done (what the next step checks)."""

    what: str
    call: Call
    guard: str
    after: list[dict] = field(default_factory=list)


def _entry_form(entry: Mapping, with_cidr: bool) -> dict[str, str]:
    form = {"cidr": str(entry["cidr"])} if with_cidr else {}
    if entry.get("nomatch"):
        form["nomatch"] = "1"
    if entry.get("comment"):
        form["comment"] = str(entry["comment"])
    return form


def steps(base: str, decl: Declared, live: Mapping[str, object] | None) -> list[Step]:
    """The fewest writes that turn ``live`` (None: no set) into ``decl``: the set's create or comment
    update, then each removed entry's DELETE, each changed entry's PUT, each new entry's POST."""
    path = _set_path(base, decl)
    name = decl.names["name"]
    found: list[Step] = []
    now = [dict(entry) for entry in (live or {}).get("cidrs", [])]
    if live is None:
        form = {
            "name": name,
            **({"comment": str(decl.values["comment"])} if decl.values.get("comment") else {}),
        }
        found.append(Step(f"create {decl.label}", Call("POST", f"{base}/ipset", form=form), "none", []))
    elif live.get("comment") != decl.values.get("comment"):
        form = {"name": name, "rename": name, "comment": str(decl.values.get("comment") or "")}
        found.append(Step("comment", Call("POST", f"{base}/ipset", form=form, json=True), "list", list(now)))
    want = {entry["cidr"]: entry for entry in decl.values["cidrs"]}
    have = {entry["cidr"]: entry for entry in now}
    for cidr in sorted(set(have) - set(want)):
        now = [entry for entry in now if entry["cidr"] != cidr]
        found.append(
            Step(f"remove {cidr}", Call("DELETE", f"{path}/{api_path(cidr)}"), "entries", _sorted(now))
        )
    for cidr in sorted(set(have) & set(want)):
        if have[cidr] != want[cidr]:
            now = [want[cidr] if entry["cidr"] == cidr else entry for entry in now]
            call = Call("PUT", f"{path}/{api_path(cidr)}", form=_entry_form(want[cidr], False), json=True)
            found.append(Step(f"change {cidr}", call, "entries", _sorted(now)))
    for cidr in sorted(set(want) - set(have)):
        now = _sorted([*now, want[cidr]])
        found.append(
            Step(f"add {cidr}", Call("POST", path, form=_entry_form(want[cidr], True)), "check", now)
        )
    return found


def _shown(entries: list[Mapping]) -> list[str]:
    """Entries as the plan shows them: ``192.0.2.0/24 (admin lan)``, ``!192.0.2.128/25`` for nomatch."""
    return [
        f"{'!' if entry.get('nomatch') else ''}{entry['cidr']}"
        + (f" ({entry['comment']})" if entry.get("comment") else "")
        for entry in entries
    ]


def reference_refusals(ctx: PveContext, decl: Declared, base: str, unborn: bool = False) -> list[str]:
    """Entries naming an alias that neither exists nor is declared earlier in this run: PVE's
    ``create_ip`` refuses them (``resolve_alias``: ``no such alias``). ``unborn``: the set's guest is
    created earlier in this plan's run, so it has no aliases of its own yet. Raises what the reads
    raise."""
    named = [entry["cidr"] for entry in decl.values["cidrs"] if ALIAS_REF.match(entry["cidr"])]
    if not named:
        return []
    guest = decl.names["scope"] != "cluster"
    credential = ctx.broker.read()
    cluster = {
        fold_alias(str(row.get("name", "")))
        for row in get_rows(ctx.client, "cluster/firewall/aliases", credential, what="aliases")
    }
    own = (
        {
            fold_alias(str(row.get("name", "")))
            for row in get_rows(ctx.client, f"{base}/aliases", credential, what="aliases")
        }
        if guest and not unborn
        else set()
    )
    found = []
    for cidr in named:
        scope, alias = ALIAS_REF.match(cidr).groups()
        alias = fold_alias(alias)
        in_guest = (
            guest
            and scope != "dc/"
            and (alias in own or will_exist(ctx, "firewall_alias", f"{decl.names['scope']}/{alias}"))
        )
        in_cluster = scope != "guest/" and (alias in cluster or will_exist(ctx, "firewall_alias", alias))
        if not (in_guest or in_cluster):
            found.append(
                f"{decl.label}: entry {cidr} names no alias that exists or this run declares; PVE refuses it "
                f"(pve-firewall create_ip, resolve_alias: `no such alias '{cidr.split('/')[-1]}'`). "
                "Declare the alias (proxmox:firewall_aliases) first."
            )
    return found


def notes(decl: Declared) -> list[str]:
    """What a reserved name does (see the module text)."""
    kind = scopes.parse(decl.names["scope"], ("cluster", "vm", "ct")).kind
    name = decl.names["name"]
    said = RESERVED.get((kind, name))
    if said:
        return [f"{decl.label}: {said}."]
    if _IPFILTER.match(name):
        if kind == "cluster":
            return [
                f"{decl.label}: an ipfilter-net<N> set means something at a guest's scope only; "
                "here it is an ordinary set."
            ]
        return [
            f"{decl.label}: NIC {name.removeprefix('ipfilter-')} of this guest may send only from these "
            "addresses (pve-firewall ruleset_create_vm_chain)."
        ]
    return []


def lockout_refusals(
    ctx: PveContext, decl: Declared, live: Mapping[str, object] | None
) -> tuple[list[str], list[str]]:
    """The one call site of the no-lockout check for IP sets: ``(refusals, notes)`` of a change to the
    cluster's ``management`` or ``blacklist`` set judged by ``firewall.guard.ipset_lockout``; with
    ``allow_lockout: true`` each refusal becomes a plan note instead; nothing for another set. Raises
    what its reads raise."""
    if decl.names["scope"] != "cluster" or decl.names["name"] not in ("management", "blacklist"):
        return [], []
    from salt_proxmox.firewall import guard  # rules → … → ipset: imported when judged

    refusals = guard.ipset_lockout(
        ctx, decl.names["name"], list((live or {}).get("cidrs", [])), list(decl.values["cidrs"])
    )
    if decl.names.get("allow_lockout"):
        return [], [f"allow_lockout: true, so this is not refused: {refusal}" for refusal in refusals]
    return refusals, []


def present(ctx: PveContext, test: bool, state_id: str, **declared: object) -> Outcome:
    """Plan (``test``) or apply one IP set declaration; never raises for a known failure. Changes:
    ``{created}``, ``{comment: {old, new}}``, ``{cidrs: {old, new}}`` (entries as ``_shown`` spells them)."""
    privileges.planning(ctx, test)
    outcome = Outcome()
    try:
        decl = declare(state_id, ctx.target.name, **declared)
        key = row_key(decl.target, FAMILY, decl.identity)
        row = ctx.ownership.row(key)
        refusal = simple.identity_refusal(ctx, SPEC, decl)
        if refusal:
            return outcome.fail(refusal, "Nothing was written.")
        live = simple.read(ctx, SPEC, decl)
        base = _base(ctx, decl)
        unborn = SPEC.unborn(ctx, decl)
        # A clone's set is read at its template's (``scope.copied``): the plan says so, refused or not.
        copy = SPEC.copied(ctx, decl) if test else None
        inherited = [copy] if copy else []
        record, taken = False, []
        if live is not None:
            matches = dict(live) == dict(decl.values)
            differ = ", ".join(k for k in decl.values if live.get(k) != decl.values[k])
            refusal, note = claim(
                row,
                decl.adopt,
                decl.label,
                matches=matches,
                alike="it matches",
                unlike=f"it differs in {differ}",
            )
            if refusal:
                return outcome.fail(refusal, *inherited, "Nothing was written.")
            if note:
                # Said once nothing refuses the declaration: a refused one takes nothing over.
                taken, record = [note], True
        elif test:
            outcome.comment += [absent_note(row, decl.label, "PVE"), *([unborn] if unborn else [])]
        lockout, allowed = lockout_refusals(ctx, decl, live)
        refusals = reference_refusals(ctx, decl, base, bool(unborn)) + lockout
        if refusals:
            return outcome.fail(*refusals, *inherited, "Nothing was written.")
        outcome.comment += taken + allowed
        plan = steps(base, decl, live)
        if live is None:
            expect(ctx, FAMILY, decl.identity)
            outcome.changes["created"] = {"old": None, "new": decl.label}
        if (live is None and decl.values["comment"]) or (
            live is not None and live.get("comment") != decl.values["comment"]
        ):
            outcome.changes["comment"] = {"old": (live or {}).get("comment"), "new": decl.values["comment"]}
        if live is None or live.get("cidrs") != decl.values["cidrs"]:
            old = None if live is None else _shown(live["cidrs"])
            outcome.changes["cidrs"] = {"old": old, "new": _shown(decl.values["cidrs"])}
        if record:
            outcome.changes["ownership"] = {"old": (row or {}).get("phase"), "new": "owned"}
        if plan:
            outcome.comment += notes(decl)
        if test:
            outcome.comment += inherited + [f"{decl.label}: would {step.what}" for step in plan] or [
                f"{decl.label} is as declared"
            ]
            outcome.result = None if outcome.changes else True
            return outcome
        if plan and live is None:
            ctx.ownership.mark_creating(key, decl.state_id, decl.stored())
        before = list((live or {}).get("cidrs", []))
        for step in plan:
            _send(ctx, decl, base, step, before)
            before = step.after
        after = simple.read(ctx, SPEC, decl)
    except DeclarationError as exc:
        outcome.changes = {}
        return outcome.refuse(exc)
    except SaltProxmoxError as exc:
        outcome.changes = {}
        return outcome.fail(f"{state_id}: {exc}", "Nothing more was written.")
    if after is None or dict(after) != dict(decl.values):
        outcome.changes = {}
        return outcome.fail(f"{decl.label}: after the writes it still differs from the declaration.")
    if plan or record or (row is not None and row.get("declared") != decl.stored()):
        # The row keeps the last declaration (allow_lockout with it) for a later destroy to judge by.
        ctx.ownership.mark_owned(key, decl.state_id, decl.stored())
    outcome.comment.append(
        f"{decl.label} has been written ({len(plan)} write(s))" if plan else f"{decl.label} is as declared"
    )
    return outcome


def _send(ctx: PveContext, decl: Declared, base: str, step: Step, before: list[dict]) -> None:
    """One step: its guard read now (the entries, which must be ``before``: what the plan read and the
    steps before it left, and their digest; or the set list's digest), then the write with a fresh
    provision credential. Raises Refused when the set changed meanwhile, and what the client raises."""
    call = step.call
    if step.guard in ("entries", "check"):
        rows = get_rows(ctx.client, _set_path(base, decl), ctx.broker.read(), what="IP set entries")
        try:
            now = live_entries(rows, decl)
        except ValueError as exc:
            raise PveMalformed("GET", _set_path(base, decl), str(exc)) from None
        if now != before:
            raise Refused(
                f"{decl.label} changed since the plan's read (its entries differ); {step.what} was not "
                "written. Run again."
            )
        if step.guard == "entries":
            digest = rows[0].get("digest") if rows else None
            if not isinstance(digest, str) or not digest:
                raise PveMalformed("GET", _set_path(base, decl), "the entries carry no digest")
            call = call.with_extra({"digest": digest})
    elif step.guard == "list":
        row = _listed_row(ctx, base, decl)
        if row is None:
            raise Refused(f"{decl.label} went away between two reads; nothing was written. Run again.")
        call = call.with_extra({"digest": str(row.get("digest", ""))})
    simple.send(ctx, ctx.broker.provision(), call)


def refusals(ctx: PveContext, decl: Declared, action: str, live: Mapping[str, object] | None) -> list[str]:
    """A delete while rules still name the set (``usage``), or that would cut this minion off: the
    cluster's ``management`` set going empty (``lockout_refusals``; pve-firewall then lets in only the
    local network, ``enable_host_firewall``), unless its last declaration said ``allow_lockout: true``.
    Raises what the scan and the check raise."""
    if action != "delete":
        return []
    where = decl.names["scope"]
    remedy = "Point them at another set first (proxmox_firewall.rules), then run again."
    found = usage.refusal_for(ctx, usage.Target("ipset", decl.names["name"], where), remedy)
    gone, _allowed = lockout_refusals(ctx, replace(decl, values={**decl.values, "cidrs": []}), live)
    return found + gone


_RULES = {"name": Rule(check=check_name), "comment": Rule(check=check_comment)}

SPEC = ObjectSpec(
    family=FAMILY,
    noun="IP set",
    declare=declare,
    identify=identify,
    read=lambda decl: Call("GET", f"cluster/firewall/ipset/{api_path(decl.names['name'])}"),
    absence="HTTP 500 `no such IPSet '<name>'` (pve-firewall API2/Firewall/IPSet.pm load_config)",
    is_absent=is_absent,
    parse=lambda data, decl: {"comment": "", "cidrs": live_entries(data, decl)},
    create=lambda decl: Call("POST", "cluster/firewall/ipset", form={"name": decl.names["name"]}),
    create_endpoint=Endpoint("POST …/firewall/ipset", ("name",), _RULES.get),
    update=None,
    update_endpoint=None,
    delete=lambda decl, live: Call("DELETE", f"cluster/firewall/ipset/{api_path(decl.names['name'])}"),
    identity_keys=("name", "scope"),
    refusals=refusals,
    for_cluster=_bound,
    create_on_cluster=True,
    unborn=lambda ctx, decl: scopes.unborn(ctx, _scope(decl)),
    # A clone's: read at its template's, which PVE copies to it (qemu-server clone_vm: clone_vmfw_conf).
    copied=lambda ctx, decl: scopes.copied(ctx, _scope(decl)),
    # The cluster's sets (GET /cluster/firewall/ipset), then each guest's own with its scope.
    export_names=export_by("name"),
    export_listings=lambda ctx: scopes.export_listings(ctx, "ipset"),
)
