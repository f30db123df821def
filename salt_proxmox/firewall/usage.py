"""Which firewall rules and IP set entries name an alias, an IP set or a security group (docs/design.md
§7, firewall aliases; §7, firewall IP sets and security groups).

PVE has no usage check: ``DELETE /cluster/firewall/aliases/{name}`` and a rename
(``update_alias`` with ``rename``) succeed while rules still name the alias, and from then on
pve-firewall's compiler cannot resolve it (``src/PVE/Firewall.pm`` ``resolve_alias`` dies ``no such
alias``; ``verify_rule`` marks the rule with that error and it is left out of the ruleset), so the
rule silently stops matching. So before this product deletes or renames a cluster alias it reads
every place that can name one, with the read credential, and refuses while any does.

Where a reference can stand, and what it resolves to (pve-firewall 6.0.4, git 6f1311f,
``src/PVE/Firewall.pm``):

- a rule's ``source`` or ``dest`` is one alias name, alone (``parse_address_list``: an alias is
  never part of a comma list), optionally scoped ``dc/`` (the cluster's) or ``guest/`` (the guest's
  own); an IP set entry's ``cidr`` likewise (``parse_fw_config``'s ``ipset`` section);
- names compare case-insensitively (``resolve_alias``: ``lc``);
- unscoped, a guest's own alias of that name wins over the cluster's (``resolve_alias``: the local
  config first, unless ``dc/``), so in a guest's rules and IP sets a bare name refers to the cluster
  alias only when the guest has no alias of its own by that name; ``guest/`` never does;
- at cluster scope (cluster rules, cluster IP sets, security groups) and in a node's rules (a node
  has no aliases of its own) a bare name or ``dc/`` is the cluster's alias. A security group's rule
  is counted whatever guest uses it: the group is cluster configuration.

IP sets and security groups (pve-firewall ``Firewall.pm`` ``ipt_gen_src_or_dst_match``,
``generate_group_rules``; ``parse_address_list``):

- a rule's ``source`` or ``dest`` names an IP set as ``+<name>``, ``+dc/<name>`` or ``+guest/<name>``,
  alone; unscoped, a guest's own set of that name wins over the cluster's, exactly as for aliases;
  IP set names compare as written (PVE reads them back lower-cased: ``salt_proxmox.firewall.ipset``);
- a rule of ``type: group`` names security group ``action`` (cluster, node and guest rules; a group's
  own rules cannot: ``$rule_env`` ``group`` takes in, out and forward only).

A guest-scope alias or IP set is named only from its own guest's rules and IP sets (bare, or
``guest/``); ``dc/`` never reaches it.

Rules and IP set entries declared in this run count too (``declare_rules``: the ``proxmox_firewall.rules``
and ``proxmox_firewall.ipset`` states of the run, read from the state run the first time a scan of the run
asks, ``run.memo.current_run``): a delete or rename of any family's object is refused while the rules or
entries about to be written still name it, since PVE takes the delete and then refuses, or silently
drops, what names it (``create_rule``/``create_ip`` through ``verify_rule``/``resolve_alias``: ``no such
alias``; the compiler's ``no such ipset``, ``no such security group``). The refusal names the declaring
state by its id.

Disabled rules (``enable: 0``) count: enabling one later would meet the missing alias.

Reads: ``GET cluster/firewall/rules``, ``…/ipset`` and each set, ``…/groups`` and each group,
``GET nodes`` and each node's ``…/firewall/rules``, and per guest the index
(``cluster/resources?type=vm``) lists: its ``rules``, ``aliases``, ``ipset`` and each set. Guest
reads go out ``target.concurrency`` at a time (``ReadAhead.fill``). A read that fails is an error,
never "no reference": a delete is planned only on a complete scan. The guest index lists only the
guests the read credential may audit (``VM.Audit``), so the plan says how many guests it scanned.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from salt_proxmox.guest.absence import index_rows
from salt_proxmox.pve.client import api_path
from salt_proxmox.pve.errors import PveMalformed
from salt_proxmox.pve.listing import rows_of
from salt_proxmox.run.memo import current_run

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.pve.client import Credential
    from salt_proxmox.run.context import PveContext

CLUSTER = "cluster/firewall"
#: The rule fields that can name an alias (``$rule_format``'s address fields).
ADDRESS_FIELDS = ("source", "dest")


def names_alias(value: object, alias: str, shadowed: bool = False) -> bool:
    """True when ``value`` (a rule's ``source``/``dest`` or an IP set entry's ``cidr``) names the
    cluster alias ``alias`` (case-insensitively): ``dc/<alias>``, or the bare name unless
    ``shadowed`` (the scope has an alias of its own by that name). ``guest/<alias>`` never does."""
    if not isinstance(value, str):
        return False
    folded = value.strip().lower()
    name = alias.lower()
    return folded == f"dc/{name}" or (folded == name and not shadowed)


def _rows(ctx: PveContext, credential: Credential, path: str, what: str) -> list[Mapping]:
    try:
        return rows_of(ctx.reads.get(ctx.client, path, credential), what)
    except ValueError as why:
        raise PveMalformed("GET", path, str(why)) from None


def _guest_base(row: Mapping) -> str:
    return f"nodes/{api_path(str(row['node']))}/{row['type']}/{row['vmid']}/firewall"


def alias_users(ctx: PveContext, alias: str) -> tuple[list[str], int]:
    """Every rule and IP set entry (live, or declared in this run) that names cluster alias ``alias``,
    as phrases an operator can find them by (``cluster rule 3 (source)``, ``security group web rule 0
    (dest)``, ``node pve1 rule 2 (dest, disabled)``, ``VM 210 IP set admins entry dc/lab``), and how
    many guests were scanned. Raises as ``places``: an incomplete scan never reads as "no reference"."""
    return users(ctx, Target("alias", alias))


def refusal(ctx: PveContext, alias: str, remedy: str) -> list[str]:
    """The plan's refusal of deleting cluster alias ``alias`` (alone or as the old name of a rename)
    while rules or IP set entries name it (``alias_users``), ending in ``remedy``; ``[]`` when none
    does. Raises as ``alias_users``."""
    return refusal_for(ctx, Target("alias", alias), remedy)


# ----------------------------------------------------------------- aliases, IP sets, groups


@dataclass(frozen=True)
class Target:
    """What is about to go: ``kind`` (``alias``, ``ipset``, ``group``), its ``name``, and ``scope``
    (``cluster``, or ``vm/<vmid>``/``ct/<vmid>`` for a guest's own alias or IP set)."""

    kind: str
    name: str
    scope: str = "cluster"

    @property
    def noun(self) -> str:
        nouns = {"alias": "firewall alias", "ipset": "IP set", "group": "security group"}
        where = "" if self.scope == "cluster" else f" of {self.scope}"
        return f"{nouns[self.kind]} {self.name}{where}"


@dataclass
class Place:
    """One rule list and what its scope holds: ``where`` (``cluster``, ``security group web``, ``node
    pve1``, ``VM 510``; ``declared`` added for a run's declared rules), ``scope`` (``cluster``,
    ``node/pve1``, ``vm/510``, ``group/web``), its ``rules`` (PVE's rule rows), its own aliases and IP set
    names (a guest's; shadowing), its IP sets' entries (``{set: [cidr, ...]}``), and ``state``, the id of
    the state of this run declaring them ('' for what is live)."""

    where: str
    scope: str
    rules: list[Mapping] = field(default_factory=list)
    aliases: set[str] = field(default_factory=set)
    ipsets: set[str] = field(default_factory=set)
    entries: dict[str, list[str]] = field(default_factory=dict)
    state: str = ""

    @property
    def by(self) -> str:
        """What a phrase adds to name the declaring state: `` in state <id>``, or ''."""
        return f" in state {self.state}" if self.state else ""


def _guest_scope(scope: str) -> bool:
    return scope.startswith(("vm/", "ct/"))


def names_ipset(value: object, ipset: str, guest_own: bool, shadowed: bool = False) -> bool:
    """True when ``value`` (a rule's ``source``/``dest``) names IP set ``ipset``: for a cluster set
    (``guest_own`` False) ``+dc/<name>``, or ``+<name>`` unless ``shadowed`` (the guest has a set of that
    name); for a guest's own set ``+guest/<name>`` or ``+<name>``."""
    if not isinstance(value, str):
        return False
    text = value.strip()
    if guest_own:
        return text in (f"+{ipset}", f"+guest/{ipset}")
    return text == f"+dc/{ipset}" or (text == f"+{ipset}" and not shadowed)


def names_guest_alias(value: object, alias: str) -> bool:
    """True when ``value`` names a guest's own alias ``alias`` (case-insensitively): bare or
    ``guest/<alias>`` (``resolve_alias``: the local config first unless ``dc/``)."""
    if not isinstance(value, str):
        return False
    folded = value.strip().lower()
    return folded in (alias.lower(), f"guest/{alias.lower()}")


def _disabled(rule: Mapping) -> str:
    return ", disabled" if str(rule.get("enable", "1")) == "0" else ""


#: The rule fields a refusal shows, in ``$rule_format``'s order after type and action.
SHOWN = ("macro", "iface", "source", "dest", "proto", "dport", "sport", "icmp-type")


def rule_text(rule: Mapping) -> str:
    """A rule as a refusal shows it: ``[in ACCEPT source=+admins proto=tcp dport=22]``."""
    words = [str(rule.get("type", "?")), str(rule.get("action", "?"))]
    words += [f"{key}={rule[key]}" for key in SHOWN if rule.get(key) not in (None, "")]
    return "[" + " ".join(words) + "]"


def _users_in(place: Place, target: Target) -> list[str]:
    """The phrases of ``place``'s rules and IP set entries that name ``target``."""
    if target.scope != "cluster" and place.scope != target.scope:
        return []
    own = target.scope != "cluster"
    found = []
    for rule in place.rules:
        pos = rule.get("pos", "?")
        if target.kind == "group":
            if rule.get("type") == "group" and rule.get("action") == target.name:
                found.append(f"{place.where} rule {pos} (group{_disabled(rule)}) {rule_text(rule)}{place.by}")
            continue
        for key in ADDRESS_FIELDS:
            value = rule.get(key)
            if target.kind == "alias":
                hit = (
                    names_guest_alias(value, target.name)
                    if own
                    else names_alias(value, target.name, target.name.lower() in place.aliases)
                )
            else:
                hit = names_ipset(value, target.name, own, target.name in place.ipsets)
            if hit:
                found.append(f"{place.where} rule {pos} ({key}{_disabled(rule)}) {rule_text(rule)}{place.by}")
    if target.kind == "alias":
        for name, cidrs in place.entries.items():
            for cidr in cidrs:
                hit = (
                    names_guest_alias(cidr, target.name)
                    if own
                    else names_alias(cidr, target.name, target.name.lower() in place.aliases)
                )
                if hit:
                    found.append(f"{place.where} IP set {name} entry {cidr}{place.by}")
    return found


def _memo_key(ctx: PveContext) -> str:
    return f"salt_proxmox.firewall.declared-rules/{ctx.target.name}"


def declare_run_rules(ctx: PveContext, run: object) -> None:
    """``declare_rules`` with the ``proxmox_firewall.rules`` and ``proxmox_firewall.ipset`` states of the
    state run ``run`` (``salt_proxmox.run.lowstate.Run``) on ``ctx``'s target; nothing outside a run
    (None). An IP set's entries name aliases as its rules do (``parse_fw_config``'s ``ipset`` section,
    ``create_ip``: ``resolve_alias``)."""
    if run is None:
        return
    rules, sets = [], []
    for chunk in run.declared("proxmox_firewall", ctx.target.name, ctx.target.name):
        if chunk.fun == "rules":
            rules.append((chunk.name, chunk.args.get("rules"), chunk.state_id))
        elif chunk.fun == "ipset":
            scope = chunk.args.get("scope")
            sets.append(
                (chunk.name, "cluster" if scope is None else scope, chunk.args.get("cidrs"), chunk.state_id)
            )
    declare_rules(ctx, rules, sets)


def _cidr_of(entry: object) -> str | None:
    """An IP set entry's ``cidr`` as declared (bare text or ``{cidr, ...}``), None for another shape."""
    value = entry.get("cidr") if isinstance(entry, Mapping) else entry
    return value if isinstance(value, str) else None


def declare_rules(
    ctx: PveContext,
    declared: Iterable[tuple],
    sets: Iterable[tuple[object, object, object, str]] = (),
) -> None:
    """Record the rule lists this run declares (``(scope, rules)`` or ``(scope, rules, state id)``: a
    ``proxmox_firewall.rules`` state's name, its ``rules`` and its id) and the IP sets it declares
    (``(name, scope, cidrs, state id)``), for the usage scan to count. A list that is not a list of
    objects, or of entries, is left out here (its own state refuses it)."""
    kept = []
    for scope, rules, *state in declared:
        if isinstance(scope, str) and isinstance(rules, list):
            rows = [dict(rule, pos=pos) for pos, rule in enumerate(rules) if isinstance(rule, Mapping)]
            kept.append((scope, rows, str(state[0]) if state else "", {}))
    for name, scope, cidrs, state_id in sets:
        if isinstance(name, str) and isinstance(scope, str) and isinstance(cidrs, list):
            entries = [cidr for cidr in map(_cidr_of, cidrs) if cidr is not None]
            kept.append((scope, [], str(state_id), {name: entries}))
    ctx.memo[_memo_key(ctx)] = kept


def declared_places(ctx: PveContext) -> list[Place]:
    """The run's declared rule lists and IP sets (``declare_rules``; the state run's own,
    ``declare_run_rules``, when none were recorded) as places, ``where`` saying ``declared`` and
    ``state`` the declaring state's id."""
    if _memo_key(ctx) not in ctx.memo:
        declare_run_rules(ctx, current_run(ctx.memo))
    places = []
    for scope, rules, state_id, entries in ctx.memo.get(_memo_key(ctx), ()):
        kind, _, rest = scope.partition("/")
        label = {"group": "security group", "node": "node", "vm": "VM", "ct": "CT"}.get(kind)
        where = f"declared {label} {rest}" if label else f"declared {scope}"
        places.append(Place(where, scope, list(rules), entries=dict(entries), state=state_id))
    return places


def places(ctx: PveContext) -> tuple[list[Place], int]:
    """Every rule list and IP set of the cluster, read now with the read credential (cluster,
    security groups, nodes, every guest the index lists), and how many guests were scanned.

    Raises PveError, PveUnreachable or CredentialError for a read that fails and PveMalformed for an
    answer without the promised shape: an incomplete scan never reads as "no reference"."""
    credential = ctx.broker.read()
    cluster = Place("cluster", "cluster", _rows(ctx, credential, f"{CLUSTER}/rules", "rules"))
    cluster.entries = _entries(ctx, credential, CLUSTER)
    found = [cluster]
    for group in _rows(ctx, credential, f"{CLUSTER}/groups", "security groups"):
        name = group.get("group")
        if not isinstance(name, str) or not name:
            raise PveMalformed("GET", f"{CLUSTER}/groups", "a security group without a name")
        rows = _rows(ctx, credential, f"{CLUSTER}/groups/{api_path(name)}", "rules")
        found.append(Place(f"security group {name}", f"group/{name}", rows))
    for node in _rows(ctx, credential, "nodes", "nodes"):
        name = node.get("node")
        if not isinstance(name, str) or not name:
            raise PveMalformed("GET", "nodes", "a node without a name")
        rows = _rows(ctx, credential, f"nodes/{api_path(name)}/firewall/rules", "rules")
        found.append(Place(f"node {name}", f"node/{name}", rows))
    guests = index_rows(ctx, credential)
    bases = [_guest_base(row) for row in guests]
    ctx.reads.fill(
        ctx.client,
        credential,
        [f"{base}/{what}" for base in bases for what in ("aliases", "rules", "ipset")],
        ctx.target.concurrency,
    )
    for row, base in zip(guests, bases, strict=True):
        kind = "ct" if row["type"] == "lxc" else "vm"
        place = Place(f"{kind.upper()} {row['vmid']}", f"{kind}/{row['vmid']}")
        place.aliases = {
            str(e.get("name", "")).lower() for e in _rows(ctx, credential, f"{base}/aliases", "aliases")
        }
        place.rules = _rows(ctx, credential, f"{base}/rules", "rules")
        place.entries = _entries(ctx, credential, base)
        place.ipsets = set(place.entries)
        found.append(place)
    return found, len(guests)


def _entries(ctx: PveContext, credential: Credential, base: str) -> dict[str, list[str]]:
    entries = {}
    for ipset in _rows(ctx, credential, f"{base}/ipset", "IP sets"):
        name = ipset.get("name")
        if not isinstance(name, str) or not name:
            raise PveMalformed("GET", f"{base}/ipset", "an IP set without a name")
        rows = _rows(ctx, credential, f"{base}/ipset/{api_path(name)}", "IP set entries")
        entries[name] = [str(entry.get("cidr")) for entry in rows]
    return entries


def users(ctx: PveContext, target: Target) -> tuple[list[str], int]:
    """Every live rule and IP set entry, and every rule this run declares, that names ``target``, as
    phrases an operator can find them by (``cluster rule 3 (source)``, ``VM 510 rule 0 (group)``,
    ``declared VM 510 rule 1 (dest)``), and how many guests were scanned. Raises as ``places``."""
    live, scanned = places(ctx)
    shadows = {place.scope: place for place in live}
    found = []
    for place in live:
        found += _users_in(place, target)
    for place in declared_places(ctx):
        known = shadows.get(place.scope)
        if known is not None:
            place.aliases, place.ipsets = known.aliases, known.ipsets
        found += _users_in(place, target)
    return found, scanned


def refusal_for(ctx: PveContext, target: Target, remedy: str) -> list[str]:
    """The plan's refusal of deleting or renaming ``target`` while rules or IP set entries name it
    (``users``), ending in ``remedy``; ``[]`` when none does. Raises as ``places``."""
    found, _guests = users(ctx, target)
    if not found:
        return []
    shown = ", ".join(found[:10]) + (f" and {len(found) - 10} more" if len(found) > 10 else "")
    why = {
        "alias": "PVE deletes an alias whatever names it, and those rules would silently stop matching "
        "(pve-firewall resolve_alias: `no such alias`).",
        "ipset": "PVE deletes an IP set whatever names it, and those rules would silently stop matching "
        "(pve-firewall ipt_gen_src_or_dst_match: `no such ipset`).",
        "group": "PVE deletes a security group that rules still use, and those rules would silently be "
        "left out (pve-firewall generate_group_rules: `no such security group`).",
    }[target.kind]
    return [f"{target.noun} is still named by {shown}. {why} {remedy}"]
