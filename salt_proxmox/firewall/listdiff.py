"""The pure planning of one scope's ordered rule list (docs/design.md §7c), with no read of PVE: the
checked declaration, which live rules are foreign to it, the writes in words, the list before and
after as a diff, and the states those writes pass through as the lockout model sees them.

A rule is compared in PVE's stored spellings (``salt_proxmox.firewall.ruleset``: pve-firewall
``src/PVE/Firewall.pm`` ``$format_rules``, ``parse_fw_rule``, ``verify_rule``); the fewest writes
are ``salt_proxmox.firewall.moves`` (pve-firewall ``src/PVE/API2/Firewall/Rules.pm``: ``create_rule``
inserts at position 0, ``update_rule`` with ``moveto`` moves, ``delete_rule``). A rule declared without
``enable`` is stored disabled, as ``create_rule`` stores it. The reads and checks that need PVE are
``salt_proxmox.firewall.listcheck``; the plan and apply, ``salt_proxmox.firewall.rules``.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, replace

from salt_proxmox.errors import DeclarationError, boolean_problem
from salt_proxmox.firewall import lockout as model
from salt_proxmox.firewall import moves
from salt_proxmox.firewall.ruleset import Rule, Scope, canonical, frozen, line, parse_scope
from salt_proxmox.ownership.rows import row_key

FAMILY = "firewall_rules"


@dataclass(frozen=True)
class Declared:
    """One checked ``rules`` declaration: the scope, the canonical rules first rule first, ``adopt``,
    ``allow_lockout``, and the plan notes it brings (rules declared without ``enable``)."""

    state_id: str
    target: str
    scope: Scope
    rules: tuple[Rule, ...]
    adopt: bool = False
    allow_lockout: bool = False
    notes: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return row_key(self.target, FAMILY, self.scope.name)

    def stored(self) -> dict:
        return {"scope": self.scope.name, "rules": [dict(rule) for rule in self.rules]}


def declare(
    state_id: str,
    target: str,
    name: object = None,
    rules: object = None,
    adopt: object = False,
    allow_lockout: object = False,
    **extra: object,
) -> Declared:
    """A checked declaration. ``rules``: a list of rule mappings, first rule first (``[]``: no rules).
    Raises DeclarationError naming each problem (``rules[2]: dport: invalid port '70000'``)."""
    problems: list[str] = []
    if extra:
        problems.append(
            f"unknown key(s) {', '.join(sorted(extra))}: a rule list has name (the scope), rules, adopt, "
            "allow_lockout"
        )
    try:
        scope = parse_scope(name)
    except ValueError as exc:
        problems.append(f"name: {exc}")
        scope = None
    for key, value in (("adopt", adopt), ("allow_lockout", allow_lockout)):
        problem = boolean_problem(key, value)
        if problem:
            problems.append(problem)
    if rules is None:
        rules = []
    if not isinstance(rules, list):
        problems.append("rules: expected the list of rules, first rule first")
        rules = []
    out: list[Rule] = []
    notes = []
    for index, entry in enumerate(rules):
        if scope is None:
            break
        try:
            rule = canonical(entry, scope.env)
        except ValueError as exc:
            problems += [f"rules[{index}]: {part}" for part in str(exc).split("; ")]
            continue
        if isinstance(entry, Mapping) and "enable" not in entry:
            notes.append(
                f"rules[{index}] `{line(rule)}` declares no enable: PVE stores a rule created without one "
                "disabled (create_rule), and so does this plan; declare enable: 1 to make it act"
            )
        out.append(rule)
    if problems or scope is None:
        raise DeclarationError(problems)
    return Declared(state_id, target, scope, tuple(out), bool(adopt), bool(allow_lockout), tuple(notes))


def _multiset(rules) -> Counter:
    return Counter(frozen(rule) for rule in rules)


def foreign(live: list[Rule], declared: tuple[Rule, ...], row: Mapping | None) -> list[tuple[int, Rule]]:
    """The live rules (with their positions) the declaration does not have and the row does not record
    as written by this minion; every one when there is no row."""
    declared_left = _multiset(declared)
    recorded = (row or {}).get("declared")
    recorded_left = _multiset(recorded.get("rules", []) if isinstance(recorded, Mapping) else [])
    out = []
    for pos, rule in enumerate(live):
        key = frozen(rule)
        if declared_left[key]:
            declared_left[key] -= 1
        elif row is not None and recorded_left[key]:
            recorded_left[key] -= 1
        else:
            out.append((pos, rule))
    return out


def describe(step: moves.Step, final: list[Rule]) -> str:
    """A write in words, without positions (``insert `IN SSH(ACCEPT)```, ``move `…` below `…```)."""
    text = f"`{line(step.rule)}`"
    if step.op == "insert":
        return f"insert {text}"
    if step.op == "delete":
        return f"delete {text}"
    if step.op == "update":
        old = f"`{line(step.before or {})}`"
        return f"update {old} to {text}"
    after = [dict(rule) for rule in step.after]
    index = next(i for i, rule in enumerate(after) if frozen(rule) == frozen(step.rule))
    return f"move {text} " + ("to the top" if index == 0 else f"below `{line(dict(after[index - 1]))}`")


def diff(old: list[Rule], new: list[Rule], label: str) -> str:
    """The list before and after as a unified diff of the rules' ``.fw`` lines."""
    return "".join(
        difflib.unified_diff(
            [line(rule) + "\n" for rule in old],
            [line(rule) + "\n" for rule in new],
            fromfile=f"{label} (PVE)",
            tofile=f"{label} (declared)",
            n=len(old) + len(new),
        )
    )


def with_list(fw: model.Firewall, scope: Scope, rules: list[Rule]) -> model.Firewall:
    """``fw`` with ``scope``'s list replaced by ``rules``."""
    if scope.env == "cluster":
        return replace(fw, cluster_rules=list(rules))
    if scope.env == "host":
        return replace(fw, node_rules={**fw.node_rules, scope.key: list(rules)})
    if scope.env == "group":
        return replace(fw, groups={**fw.groups, scope.key: list(rules)})
    return fw


def passing(before: model.Firewall, decl: Declared, steps: list[moves.Step], traffic) -> list[str]:
    """The lockout refusals of the states ``steps`` pass through, each naming the write after which."""
    for number, step in enumerate(steps, 1):
        state = with_list(before, decl.scope, [dict(rule) for rule in step.after])
        refusals, _ = model.lockout(state, traffic, before)
        if refusals:
            return [
                f"after write {number} of {len(steps)} ({describe(step, list(decl.rules))}): {r}"
                for r in refusals
            ]
    return []


def enabled_after(
    live: list[Rule], declared: tuple[Rule, ...], steps: list[moves.Step], deletes_last: bool = False
) -> list[moves.Step]:
    """The plan with each enabled rule it inserts sent disabled, and enabled once the list is in order."""
    inserted = {frozen(step.rule) for step in steps if step.op == "insert" and step.rule.get("enable")}
    quiet = [dict(rule, enable=0) if frozen(rule) in inserted else dict(rule) for rule in declared]
    out = moves.plan(live, quiet, deletes_last)
    current = [dict(rule) for rule in out[-1].after] if out else [dict(rule) for rule in live]
    for pos, rule in enumerate(declared):
        if frozen(rule) in inserted and not current[pos].get("enable"):
            step = moves.Step("update", dict(rule), pos=pos, before=current[pos], put={"enable": "1"})
            current = moves.simulate(current, step)
            out.append(replace(step, after=tuple(frozen(r) for r in current)))
    return out
