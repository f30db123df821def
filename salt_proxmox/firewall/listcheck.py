"""What the plan of one scope's rule list reads from PVE and checks there before any write (docs/design.md
§7c): the list as read (``GET …/rules``, one digest), where the list's firewall is, the aliases, IP sets
and security groups its rules name, and the no-lockout check on the firewall as it stands.

- **References**: pve-firewall refuses a missing alias or IP set at the write (``src/PVE/Firewall.pm``
  ``verify_rule``: ``no such alias``, ``no such ipset``) but takes a group rule naming a missing group,
  which then matches nothing (``generate_group_rules``); an IP set is keyed in lower case and looked up
  as written. A name created or declared earlier in this run counts (the run memo's
  ``expect``/``remember``, which the alias, IP set and group states fill).
- **No lockout**: the firewall as it stands (``standing_firewall``), with what earlier states of this
  run write (``with_run_plans``), is judged by the lockout model (``salt_proxmox.firewall.lockout``)
  against the end state and every state the writes pass through (``listdiff.passing``); a change that
  would drop the minion only in between two writes is planned in another order, or with each insert
  sent disabled and enabled once in place (``listdiff.enabled_after``). ``firewall.guard`` judges the
  options and the ``management``/``blacklist`` IP sets on the same standing firewall.

The pure planning is ``salt_proxmox.firewall.listdiff``; the plan and apply, ``salt_proxmox.firewall.rules``
(pve-firewall ``src/PVE/API2/Firewall/Rules.pm``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from salt_proxmox.firewall import lockout as model
from salt_proxmox.firewall import moves, reach
from salt_proxmox.firewall import scope as scopes
from salt_proxmox.firewall.listdiff import FAMILY, Declared, enabled_after, passing, with_list
from salt_proxmox.firewall.ruleset import Rule, Scope, from_live, line, parse_scope, references
from salt_proxmox.pve.client import api_path
from salt_proxmox.pve.errors import PveMalformed
from salt_proxmox.pve.listing import rows_of
from salt_proxmox.run.context import PveContext
from salt_proxmox.simple.spec import planned, will_exist

#: The run memo families of the objects rules name, as their states record them (``expect``).
ALIAS, IPSET, GROUP = "firewall_alias", "firewall_ipset", "firewall_group"


def read_rows(ctx: PveContext, path: str, what: str) -> list[Mapping]:
    """The rows of ``GET path`` read with the read credential. Raises PveMalformed for an answer that
    is not a list of ``what``, and what the request raises (PveError, PveUnreachable)."""
    try:
        return rows_of(ctx.client.request("GET", path, ctx.broker.read()), what)
    except ValueError as why:
        raise PveMalformed("GET", path, str(why)) from None


def firewall_of(ctx: PveContext, scope: Scope) -> scopes.Firewall | None:
    """Where the list's firewall is (``firewall.scope.locate``: None for a guest the cluster does not
    list and this plan's run does not create); a security group's is the cluster's (``[group <name>]``
    sections of ``cluster.fw``). Raises what ``locate`` raises (Refused for the other kind of guest)."""
    return scopes.locate(ctx, scopes.parse("cluster" if scope.env == "group" else scope.name))


def rules_path(scope: Scope, firewall: str) -> str:
    """``…/rules``, or a security group's ``cluster/firewall/groups/<name>``."""
    return f"{firewall}/groups/{api_path(scope.key)}" if scope.env == "group" else f"{firewall}/rules"


@dataclass
class Live:
    """The list as read: canonical ``rules`` and the ``digest`` PVE gave it (None when empty)."""

    rules: list[Rule]
    digest: str | None
    errors: list[str] = field(default_factory=list)


def read(ctx: PveContext, path: str) -> Live:
    """``GET path`` → Live. Raises PveError, PveMalformed (a row without type and action, rows
    with different digests), PveUnreachable."""
    rows = read_rows(ctx, path, "rules")
    rules, digests, errors = [], set(), []
    for row in rows:
        try:
            rule = from_live(row)
        except ValueError as why:
            raise PveMalformed("GET", path, str(why)) from None
        rules.append(rule)
        digests.add(row.get("digest"))
        if row.get("errors"):
            errors.append(
                f"rule {len(rules) - 1} `{line(rule)}` has errors PVE leaves it out for: {row['errors']}"
            )
    if len(digests) > 1 or (None in digests and rules):
        raise PveMalformed("GET", path, "the rules do not carry one digest")
    return Live(rules, next(iter(digests)) if rules else None, errors)


def reference_refusals(ctx: PveContext, decl: Declared, firewall: str | None) -> list[str]:
    """Each alias, IP set and group a declared rule names that neither exists nor is created or
    declared earlier in this run. Raises what the reads raise (a failed read is never "exists")."""
    wanted = [(index, ref) for index, rule in enumerate(decl.rules) for ref in references(rule)]
    if not wanted:
        return []
    guest = decl.scope.env in ("vm", "ct") and firewall is not None
    have: dict[str, set[str]] = {"alias": set(), "ipset": set(), "group": set(), "guest alias": set(),
                                 "guest ipset": set()}  # fmt: skip
    kinds = {kind for _, (kind, *_rest) in wanted}
    if "alias" in kinds:
        have["alias"] = {
            str(r.get("name", "")).lower() for r in read_rows(ctx, "cluster/firewall/aliases", "aliases")
        }
        if guest:
            have["guest alias"] = {
                str(r.get("name", "")).lower() for r in read_rows(ctx, f"{firewall}/aliases", "aliases")
            }
    if "ipset" in kinds:
        have["ipset"] = {str(r.get("name", "")) for r in read_rows(ctx, "cluster/firewall/ipset", "IP sets")}
        if guest:
            have["guest ipset"] = {
                str(r.get("name", "")) for r in read_rows(ctx, f"{firewall}/ipset", "IP sets")
            }
    if "group" in kinds:
        have["group"] = {
            str(r.get("group", "")) for r in read_rows(ctx, "cluster/firewall/groups", "security groups")
        }
    refusals = []
    for index, (kind, name, key, prefix) in wanted:
        rule = decl.rules[index]
        where = f"rules[{index}] `{line(rule)}`"
        if kind == "ipset" and name != name.lower():
            refusals.append(
                f"{where}: {key} names IP set {name}, but pve-firewall keys IP sets in lower case and looks "
                f"the name up as written (verify_rule: no such ipset '{name}'): write +{prefix}{name.lower()}"
            )
            continue
        if _exists(ctx, decl, kind, name, prefix, have):
            continue
        noun = {"alias": "alias", "ipset": "IP set", "group": "security group"}[kind]
        section = {"alias": "firewall_aliases", "ipset": "firewall:ipsets", "group": "firewall:groups"}[kind]
        refusals.append(
            f"{where}: {key} names {noun} {prefix}{name}, which does not exist and is not declared earlier "
            f"in this run. Declare it (proxmox:{section}) or correct the name"
            + (
                "; PVE would take the rule and it would match nothing (generate_group_rules)."
                if kind == "group"
                else f"; PVE would refuse the rule (verify_rule: no such {kind})"
            )
        )
    return refusals


def _exists(ctx: PveContext, decl: Declared, kind: str, name: str, prefix: str, have) -> bool:
    """Whether ``kind`` ``name`` exists (cluster scope unless ``guest/``; the guest's own unless
    ``dc/``) or is created or declared earlier in this run."""
    family = {"alias": ALIAS, "ipset": IPSET, "group": GROUP}[kind]
    cluster_ok = prefix != "guest/"
    own_ok = decl.scope.env in ("vm", "ct") and prefix != "dc/"
    if cluster_ok and (name in have[kind] or will_exist(ctx, family, name) or name in planned(ctx, family)):
        return True
    own = f"{decl.scope.name}/{name}"
    return own_ok and (
        name in have.get(f"guest {kind}", set())
        or will_exist(ctx, family, own)
        or own in planned(ctx, family)
    )


def standing_firewall(ctx: PveContext) -> tuple[model.Firewall, dict[str, str]]:
    """The firewall as it stands, as ``lockout`` models it, and ``{node: address}`` (``GET
    /cluster/status``), read with the read credential: what a judge of options or rules hands
    ``lockout.lockout`` as ``before`` and ``reach.traffic`` as the nodes. Raises what the reads raise."""
    status = read_rows(ctx, "cluster/status", "status rows")
    nodes = {
        str(r["name"]): str(r.get("ip", "")) for r in status if r.get("type") == "node" and r.get("name")
    }
    options = ctx.client.request("GET", "cluster/firewall/options", ctx.broker.read()) or {}
    node_options = {
        node: ctx.client.request("GET", f"nodes/{api_path(node)}/firewall/options", ctx.broker.read()) or {}
        for node in nodes
    }
    node_rules = {node: read(ctx, f"nodes/{api_path(node)}/firewall/rules").rules for node in nodes}
    groups = {
        str(r["group"]): read(ctx, f"cluster/firewall/groups/{api_path(str(r['group']))}").rules
        for r in read_rows(ctx, "cluster/firewall/groups", "security groups")
        if r.get("group")
    }
    aliases = {
        str(r.get("name", "")).lower(): str(r.get("cidr", ""))
        for r in read_rows(ctx, "cluster/firewall/aliases", "aliases")
    }
    ipsets = {
        str(r["name"]): [
            dict(e) for e in read_rows(ctx, f"cluster/firewall/ipset/{api_path(str(r['name']))}", "entries")
        ]
        for r in read_rows(ctx, "cluster/firewall/ipset", "IP sets")
        if r.get("name")
    }
    fw = model.Firewall(
        dict(options),
        node_options,
        read(ctx, "cluster/firewall/rules").rules,
        node_rules,
        groups,
        aliases,
        ipsets,
    )
    return fw, {node: ip for node, ip in nodes.items() if ip}


def with_run_plans(ctx: PveContext, fw: model.Firewall, scope: Scope | None = None) -> model.Firewall:
    """``fw`` with what earlier states of this run write (or would): rule lists but ``scope``'s own,
    and the cluster's and nodes' ``enable``/``policy_in`` as the options states record them
    (``remember``)."""
    for name, values in planned(ctx, FAMILY).items():
        if scope is not None and name == scope.name:
            continue
        try:
            fw = with_list(fw, parse_scope(name), [dict(rule) for rule in values.get("rules", [])])
        except ValueError:
            continue
    for name, values in planned(ctx, "firewall_options").items():
        if name == "cluster":
            fw = replace(fw, cluster_options={**fw.cluster_options, **values})
        elif name.startswith("node/"):
            node = name.removeprefix("node/")
            fw = replace(
                fw, node_options={**fw.node_options, node: {**fw.node_options.get(node, {}), **values}}
            )
    return fw


def lockout_check(
    ctx: PveContext, decl: Declared, live: list[Rule], steps: list[moves.Step]
) -> tuple[list[str], list[str], list[moves.Step]]:
    """``(refusals, notes, steps)``: the lockout model (``salt_proxmox.firewall.lockout``) run on the
    end state and on every state the writes pass through, for a scope that filters the nodes' own
    traffic (cluster, node, security group). A change that would drop the minion only in between two
    writes is planned in another order (the deletes last), or with each insert sent disabled and
    enabled once in place; ``steps`` is the plan to send. Guests' rules never touch the nodes' traffic."""
    if decl.scope.env in ("vm", "ct") or not steps:
        return [], [], steps
    before, nodes = standing_firewall(ctx)
    before = with_run_plans(ctx, before, decl.scope)
    traffic, notes = reach.traffic(ctx.target.members, nodes)
    final = with_list(before, decl.scope, list(decl.rules))
    refusals, more = model.lockout(final, traffic, before)
    notes += more
    if refusals:
        return refusals, notes, steps
    between = passing(before, decl, steps, traffic)
    if not between:
        return [], notes, steps
    # Other orders of the same writes, then inserts sent disabled and enabled once in place (one
    # more write each): the first whose every state lets the minion through.
    for deletes_last, quiet in ((True, False), (False, True), (True, True)):
        other = moves.plan(live, list(decl.rules), deletes_last)
        if quiet:
            other = enabled_after(live, decl.rules, other, deletes_last)
        if not passing(before, decl, other, traffic):
            how = ["the deletes are sent last"] if deletes_last else []
            how += ["an insert is sent disabled and enabled once in place"] if quiet else []
            notes.append("so that no write leaves a state that drops this minion, " + " and ".join(how))
            return [], notes, other
    return between, notes, steps
