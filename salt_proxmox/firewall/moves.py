"""The fewest writes that turn one ordered rule list into another (docs/design.md §7c).

PVE's rule API has four writes (pve-firewall ``src/PVE/API2/Firewall/Rules.pm``):

- ``POST …/rules`` (``create_rule``): ``unshift``es the rule, so it always lands at position 0
  whatever ``pos`` says, and checks no digest;
- ``PUT …/rules/{pos}`` with ``moveto`` (``update_rule``): moves the rule in front of the one at
  ``moveto`` counted before the move (past the end: to the end), ignoring every other field; so a
  rule going down to final index ``t`` is sent ``moveto = t + 1``, one going up ``moveto = t``;
- ``PUT …/rules/{pos}`` without ``moveto``: changes the rule's fields in place (``delete`` clears);
- ``DELETE …/rules/{pos}`` (``delete_rule``).

The plan (``plan``):

1. *Pair* live rules with declared ones. Short lists try every pairing (``EVERY_PAIRING``); longer
   ones pair equal rules first, by a longest common subsequence, so the most equal rules keep their
   relative order; then equal rules out of order; then the rest in list
   order, each pair an update. Pairing never costs more than leaving both unpaired: an update (1
   write, maybe a move) against a delete and an insert (2 writes, maybe a move). Alignments that
   weigh the same are read both ways (pairing first, skipping first): an equally heavy one may pair
   a rule with an update that another declared rule would have taken as it is.
2. Delete every live rule left unpaired; update every pair that differs.
3. Insert every declared rule left unpaired with one POST each, last first, so they stand at the top
   in declared order.
4. The list is now the kept rules in live order under the inserted ones. The rules on a longest
   increasing subsequence of declared positions stay; every other rule is moved once, next to the
   placed rule that precedes it in the declaration.

So the writes are: deletes + updates + inserts + (declared rules − longest increasing subsequence).
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import combinations, permutations, product
from math import comb, factorial

from salt_proxmox.firewall.ruleset import Rule, changed_fields, frozen


@dataclass(frozen=True)
class Step:
    """One write: ``op`` is ``delete``, ``update``, ``insert`` or ``move``; ``pos`` the position it is
    sent to (``insert``: none, PVE puts it at 0); ``rule`` the rule as it is after the write;
    ``before`` the rule before (delete, update, move); ``put``/``clear`` the fields an update sets and
    deletes; ``moveto`` a move's parameter; ``after`` the whole list once the write is done."""

    op: str
    rule: Rule
    pos: int | None = None
    before: Rule | None = None
    put: dict = field(default_factory=dict)
    clear: tuple[str, ...] = ()
    moveto: int | None = None
    after: tuple[tuple, ...] = ()


#: The alignments tried: (equal pair, pair needing an update) weights; the cheapest plan wins.
WEIGHTS = ((2, 1), (3, 1), (1, 0))
#: Up to this many declared rules every ``first`` is tried; above it only those up to the number of
#: rules the declaration adds (a prefix of inserted rules cannot be longer), to bound the plan's time.
EXHAUSTIVE = 48
#: Up to this many pairings (four live and five declared rules have 501) every one is tried.
EVERY_PAIRING = 600


def _chain(
    live: list[tuple], declared: list[tuple], first: int, weights: tuple[int, int]
) -> Iterator[list[tuple[int, int]]]:
    """Order-keeping alignments of live rules with the declared rules from ``first`` on, heaviest by
    ``weights``: one for an equal pair, one for a pair that needs an update (a rule kept in place
    saves its move; an equal one its update too). Two of the heaviest are yielded, read back with
    opposite preferences where they tie: pairing first, and skipping first (which leaves an unequal
    pair to the equal pairing of ``pairings``: an alignment as heavy may pair a rule that another
    declared rule equals, and that rule then costs an update and a move instead of nothing)."""
    equal, unequal = weights
    n, m = len(live), len(declared)
    table = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, first - 1, -1):
            here = table[i + 1][j + 1] + (equal if live[i] == declared[j] else unequal)
            table[i][j] = max(here, table[i + 1][j], table[i][j + 1])
    for pair_first in (True, False):
        pairs, i, j = [], 0, first
        while i < n and j < m:
            weight = equal if live[i] == declared[j] else unequal
            pairable = weight and table[i][j] == table[i + 1][j + 1] + weight
            # Skipping first still pairs an equal rule: only an unequal pair gives way.
            if pairable and (pair_first or weight == equal):
                pairs.append((i, j))
                i, j = i + 1, j + 1
            elif table[i][j] == table[i + 1][j]:
                i += 1
            elif table[i][j] == table[i][j + 1]:
                j += 1
            else:
                pairs.append((i, j))
                i, j = i + 1, j + 1
        yield pairs


def _injections(n: int, m: int) -> int:
    """How many pairings ``n`` live and ``m`` declared rules have (each live rule paired or not)."""
    return sum(comb(n, k) * comb(m, k) * factorial(k) for k in range(min(n, m) + 1))


def _every_pairing(n: int, m: int) -> Iterator[dict[int, int]]:
    """Every pairing of ``n`` live with ``m`` declared rules, each declared rule paired at most once:
    for each size ``k``, each ``k`` live rules with each ordered choice of ``k`` declared ones."""
    for k in range(min(n, m) + 1):
        for lives in combinations(range(n), k):
            for chosen in permutations(range(m), k):
                yield dict(zip(lives, chosen, strict=True))


def pairings(live: list[Rule], declared: list[Rule]) -> Iterator[dict[int, int]]:
    """Candidate pairings ``{live index: declared index}`` (step 1 of the module docstring). Up to
    ``EVERY_PAIRING`` of them, every one (the plan is then the fewest writes there are). Above it
    (``aligned_pairings``), for each ``first``, the declared rules above it left to be inserted at the
    top, the others aligned by ``_chain``, and the rules off that alignment paired equal ones first,
    then those from ``first`` on in list order (each pair saves a delete and an insert), then the
    rest."""
    if _injections(len(live), len(declared)) <= EVERY_PAIRING:
        return _every_pairing(len(live), len(declared))
    return aligned_pairings(live, declared)


def aligned_pairings(live: list[Rule], declared: list[Rule]) -> Iterator[dict[int, int]]:
    """The pairings of lists too long to try every one (``pairings``): for each ``first`` and weights,
    ``_chain``'s alignments, each completed by ``_completed`` both ways."""
    lf, df = [frozen(r) for r in live], [frozen(r) for r in declared]
    last = len(declared) if len(declared) <= EXHAUSTIVE else max(0, len(declared) - len(live))
    for first, weights in product(range(last + 1), WEIGHTS):
        for chain in _chain(lf, df, first, weights):
            once = _completed(lf, df, dict(chain), first, below_first=False)
            yield once
            again = _completed(lf, df, dict(chain), first, below_first=True)
            if again != once:
                yield again


def _completed(
    lf: list[tuple], df: list[tuple], pairs: dict[int, int], first: int, below_first: bool
) -> dict[int, int]:
    """``pairs`` (an alignment) with the rules off it paired: equal ones first (in list order, or with
    ``below_first`` those from ``first`` on before those above it, which are left to the inserts: a live
    rule equal to both keeps its place below), then those from ``first`` on in list order, then the
    rest."""
    free_live = [i for i in range(len(lf)) if i not in pairs]
    free_declared = [j for j in range(len(df)) if j not in pairs.values()]
    by_place = sorted(free_declared, key=lambda j: j < first) if below_first else list(free_declared)
    for j in by_place:
        i = next((i for i in free_live if lf[i] == df[j]), None)
        if i is not None:
            pairs[i] = j
            free_live.remove(i)
            free_declared.remove(j)
    below = [j for j in free_declared if j >= first]
    above = [j for j in free_declared if j < first]
    for i, j in zip(free_live, below + above, strict=False):
        pairs[i] = j
    return pairs


def _increasing(values: list[int]) -> set[int]:
    """The indices (into ``values``) of one longest strictly increasing subsequence."""
    tails: list[int] = []
    tail_at: list[int] = []
    parent = [-1] * len(values)
    for index, value in enumerate(values):
        k = bisect_left(tails, value)
        if k == len(tails):
            tails.append(value)
            tail_at.append(index)
        else:
            tails[k] = value
            tail_at[k] = index
        parent[index] = tail_at[k - 1] if k else -1
    chosen, index = set(), tail_at[-1] if tail_at else -1
    while index != -1:
        chosen.add(index)
        index = parent[index]
    return chosen


def plan(live: list[Rule], declared: list[Rule], deletes_last: bool = False) -> list[Step]:
    """The fewest writes that turn ``live`` into ``declared`` (canonical rules, first rule first)
    among the pairings ``pairings`` offers, fewest updates first among as many writes, in the order
    they are to be sent, each with the position it goes to and the list it leaves. ``deletes_last``:
    the same writes with the deletes sent after the rest (a rule to go stays until the list is in
    order: the lockout check's other order)."""
    # Of plans as short, the one with the fewest updates: a rule that only moves keeps being itself.
    plans = (steps_for(live, declared, pairs, deletes_last) for pairs in pairings(live, declared))
    return min(plans, key=lambda steps: (len(steps), sum(step.op == "update" for step in steps)))


def steps_for(
    live: list[Rule], declared: list[Rule], pairs: dict[int, int], deletes_last: bool = False
) -> list[Step]:
    """Steps 2 to 4 of the module docstring for one pairing (the deletes last with ``deletes_last``)."""
    # The current list: (declared index or None for a rule to delete, rule as it stands).
    current: list[tuple[int | None, Rule]] = [(pairs.get(i), dict(rule)) for i, rule in enumerate(live)]
    steps: list[Step] = []

    def snapshot() -> tuple[tuple, ...]:
        return tuple(frozen(rule) for _, rule in current)

    def delete() -> None:
        for pos in range(len(current) - 1, -1, -1):
            if current[pos][0] is None:
                _, rule = current.pop(pos)
                steps.append(Step("delete", rule, pos=pos, before=rule, after=snapshot()))

    if not deletes_last:
        delete()
    for pos, (j, rule) in enumerate(current):
        if j is None:
            continue
        want = declared[j]
        if frozen(rule) != frozen(want):
            put, clear = changed_fields(rule, want)
            current[pos] = (j, dict(want))
            steps.append(Step("update", dict(want), pos=pos, before=rule, put=put, clear=tuple(clear),
                              after=snapshot()))  # fmt: skip
    kept = set(pairs.values())
    for j in sorted((j for j in range(len(declared)) if j not in kept), reverse=True):
        current.insert(0, (j, dict(declared[j])))
        steps.append(Step("insert", dict(declared[j]), after=snapshot()))
    order = [j for j, _ in current if j is not None]
    stay = {order[index] for index in _increasing(order)}
    placed = set(stay)
    for j in sorted(set(order) - stay):
        pos = next(index for index, (k, _) in enumerate(current) if k == j)
        entry = current.pop(pos)
        before = [index for index, (k, _) in enumerate(current) if k in placed and k < j]
        target = before[-1] + 1 if before else 0
        current.insert(target, entry)
        placed.add(j)
        if target == pos:
            continue
        moveto = target + 1 if target > pos else target
        steps.append(Step("move", entry[1], pos=pos, before=entry[1], moveto=moveto, after=snapshot()))
    if deletes_last:
        delete()
    assert [frozen(rule) for _, rule in current] == [frozen(rule) for rule in declared]
    return steps


def simulate(rules: list[Rule], step: Step) -> list[Rule]:
    """``rules`` after ``step`` as PVE carries it out (``create_rule``'s ``unshift``, ``update_rule``'s
    move loop, ``copy_rule_data``/``delete_rule_properties``, ``splice``): what the apply expects to
    read back. Raises IndexError for a position past the end (PVE: ``no rule at position``)."""
    out = [dict(rule) for rule in rules]
    if step.op == "insert":
        return [dict(step.rule), *out]
    assert step.pos is not None
    if step.pos >= len(out):
        raise IndexError(f"no rule at position {step.pos}")
    if step.op == "delete":
        del out[step.pos]
    elif step.op == "update":
        rule = {**out[step.pos], **{k: (int(v) if k == "enable" else v) for k, v in step.put.items()}}
        for key in step.clear:
            rule.pop(key, None)
        out[step.pos] = rule
    elif step.op == "move":
        assert step.moveto is not None
        moved = []
        for index, rule in enumerate(out):
            if index == step.pos:
                continue
            if index == step.moveto:
                moved.append(out[step.pos])
            moved.append(rule)
        if step.moveto >= len(out):
            moved.append(out[step.pos])
        out = moved
    return out


def counts(steps: list[Step]) -> dict[str, int]:
    """``{op: number of writes}``."""
    return dict(Counter(step.op for step in steps))
