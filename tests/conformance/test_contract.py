"""The contract every registered family passes (tests/conformance/__init__.py), parametrized by
``salt_proxmox.registry.FAMILIES`` alone: each test runs each family's example declarations through its
states, the ``proxmox``/``openbao`` execution modules and the library against a fresh fake cluster."""

from __future__ import annotations

import json

import pytest

from salt_proxmox.registry import FAMILIES, PILLAR_STATE, Family
from tests.conformance import contract
from tests.conformance.conftest import LOST_PAGE, Minion
from tests.faults.harness import leaks
from tests.support.saltworld import Low, chunks_of

CASES = contract.cases(FAMILIES)
CASE = pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)


def _ids(returns: list[dict]) -> str:
    return json.dumps([{k: r.get(k) for k in ("__id__", "result", "changes", "comment")} for r in returns],
                      indent=1, default=repr)  # fmt: skip


def _writes(log) -> list[str]:
    return [w.line for w in contract.sent(log)]


def _no_secret(minion: Minion, returns: list[dict]) -> None:
    places = contract.leak_places(minion.world, returns, minion.lines)
    assert leaks(places, minion.secrets) == []


def _ready(case: contract.Case, minion: Minion | None = None) -> None:
    """The case has what the suite needs; on ``minion``, the objects its examples need are made
    (``Examples.given``) and the minion's request log and rows start after them."""
    problems = contract.missing(case)
    assert problems == [], f"{case.id} lacks what the conformance suite needs: {problems}"
    if minion is not None:
        contract.make_given(case, minion)


@CASE
def test_a_family_supplies_what_the_contract_needs(case: contract.Case) -> None:
    """Examples for every phase and every bad input, its applies' writes known, a pillar entry for it."""
    _ready(case)


@CASE
def test_the_formula_declares_what_the_examples_declare(case: contract.Case, minion: Minion) -> None:
    """The example's pillar entry becomes exactly the example's state: the suite's declarations are what
    an operator's pillar runs."""
    _ready(case)
    family, examples = case.family, case.examples
    present, absent = contract.kind_functions(case)
    for fun, declared in ((present, examples.create), (absent, examples.delete)):
        # A nested family's entry declares its parent too (a snapshot's guest): the family's own state.
        chunks = chunks_of(minion.world.formula(contract.pillar_of(family, fun, declared)))
        (low,) = [chunk for chunk in chunks if chunk.state == family.state]
        assert (low.state, low.fun, dict(low.args)) == (family.state, fun, dict(declared))


@CASE
def test_plan_apply_plan_clean_and_the_apply_writes_what_the_plan_listed(
    case: contract.Case, minion: Minion
) -> None:
    """create, update, clear, delete: each plan writes nothing and names every write its apply sends
    (a delete's side effects too: a node's reload, the SDN commit), and no other; a plan after the apply
    has nothing to do and reads only."""
    _ready(case, minion)
    for phase, _ in contract.PHASES:
        run = contract.lows(case, phase)
        declared = getattr(case.examples, phase)
        plan, log = minion.run(run, test=True)
        assert _writes(log) == [], f"{phase}: a plan writes nothing"
        assert all(r["result"] is None for r in plan), f"{phase}: the plan has changes\n{_ids(plan)}"
        applied, log = minion.run(run, test=False)
        assert all(r["result"] is True for r in applied), f"{phase}: the apply\n{_ids(applied)}"
        problems = contract.write_problems(case.family, plan, declared, log, case.kind.name)
        assert problems == [], f"{phase}: {problems}\nplan:\n{_ids(plan)}\nsent: {_writes(log)}"
        again, log = minion.run(run, test=True)
        assert _writes(log) == [] and all(r["result"] is True and r["changes"] == {} for r in again), (
            f"{phase}: the plan after the apply\n{_ids(again)}"
        )
        _no_secret(minion, plan + applied + again)


def _bad_entries(case: contract.Case):
    return [
        pytest.param(case, what, id=f"{case.id}-{what.replace(' ', '-')}")
        for what in (case.examples.bad if case.examples else ())
    ]


@pytest.mark.parametrize(("case", "what"), [p for case in CASES for p in _bad_entries(case)])
def test_bad_input_is_refused_by_name_with_nothing_written(
    case: contract.Case, what: str, minion: Minion
) -> None:
    """Through the formula (the pillar entry an operator writes) and, for a key that is no Salt keyword
    (Salt acts on those before any state runs), through the state itself: the run fails naming the key,
    sends no write and records no row."""
    _ready(case, minion)
    family = case.family
    fun, declared, key = case.examples.bad[what]
    highstate = minion.world.formula(contract.pillar_of(family, fun, declared))
    # A nested family's entry declares its parent too (a snapshot's guest): the family's states and the
    # formula's failing ones are the entry's.
    ways = {"formula": [low for low in chunks_of(highstate) if low.state in (family.state, PILLAR_STATE)]}
    if key not in contract.salt_keywords():
        ways["state"] = [Low(family.state, fun, declared)]
    rows = minion.rows()
    for way, run in ways.items():
        for test in (True, False):
            returns, log = minion.run(run, test)
            assert _writes(log) == [] and minion.rows() == rows, f"{way}: {what} wrote\n{_ids(returns)}"
            refused = [r for r in returns if r["result"] is False]
            assert refused and all(key in r["comment"] for r in refused), f"{way}: {what}\n{_ids(returns)}"
            assert not [r for r in returns if r["result"] is not False], f"{way}: {what} ran\n{_ids(returns)}"
            _no_secret(minion, returns)
    if key in contract.salt_keywords():
        assert [low.state for low in ways["formula"]] == [PILLAR_STATE], "the formula makes no state of it"


READ_FAULTS = {
    "403": (403, b'{"data":null,"message":"Permission check failed (/, Sys.Audit)\\n"}'),
    "500": (500, b'{"data":null,"message":"unexpected error\\n"}'),
    "malformed": (200, b"<html><body>Welcome to the portal</body></html>"),
}


def _fault(minion: Minion, family: Family, paths: list[str], how: str) -> None:
    status, body = READ_FAULTS[how]
    for path in paths:
        if family.module == "openbao" or contract.on_pbs(family):
            minion.tap.faults.append(
                (lambda m, p, path=path: m == "GET" and p.endswith(path), status, body, False)
            )
        else:
            message = json.loads(body)["message"] if how != "malformed" else "Welcome"
            minion.cluster.pve.fail("GET", path, status, message, html=how == "malformed")


def _clear_faults(minion: Minion) -> None:
    minion.tap.faults.clear()
    minion.cluster.pve.failures.clear()


@CASE
@pytest.mark.parametrize("how", list(READ_FAULTS))
def test_a_failed_read_is_never_absence(case: contract.Case, how: str, minion: Minion) -> None:
    """A 403, a generic 500 and a malformed answer on the read of the object fail the state, with nothing
    written and the ownership rows as they were: when the object is missing (create) and when it is
    there and owned (update, delete)."""
    _ready(case, minion)
    # A kind PVE cannot delete has no destroy to read for: its absent forgets, reading nothing.
    phases = ("create", "update") if case.kind.name in contract.KEPT else ("create", "update", "delete")
    for phase in phases:
        if phase == "update":
            done, _ = minion.run(contract.lows(case, "create"), test=False)
            assert all(r["result"] is True for r in done), _ids(done)
        run = contract.lows(case, phase)[:1]
        probe, log = minion.run(run, test=True)
        paths = contract.object_reads(getattr(case.examples, phase), log)
        assert paths, f"{phase}: the plan read nothing\n{_ids(probe)}"
        _fault(minion, case.family, paths, how)
        rows = minion.rows()
        for test in (True, False):
            returns, log = minion.run(run, test)
            assert _writes(log) == [], f"{phase}: a {how} read led to writes\n{_ids(returns)}"
            assert returns[0]["result"] is False, f"{phase}: a {how} read of {paths}\n{_ids(returns)}"
            assert minion.rows() == rows, f"{phase}: the rows changed"
            _no_secret(minion, returns)
        _clear_faults(minion)


@CASE
def test_an_answer_lost_after_a_write_is_uncertain(case: contract.Case, minion: Minion) -> None:
    """The create's first write reaches the server and its answer is lost (a proxy's 502 page): the
    state fails and never says nothing was written."""
    _ready(case, minion)
    family = case.family
    if family.name in contract.ON_DISK:
        pytest.skip(
            "its write is a rename on the lane's node: no server answers it, so no answer can be lost"
        )
    if contract.through_lane(case.kind):
        pytest.skip(
            "its writes go through pvesh, another process, whose answer this process's tap cannot lose; "
            "a write whose pvesh output holds no answer is the lane's Uncertain (unit test_root_lane.py)"
        )
    url = minion.tap.bao if family.module == "openbao" else "/api2/json/"
    prefix = "/v1/" if family.module == "openbao" else url
    minion.tap.faults.append((lambda m, p: m != "GET" and p.startswith(prefix), 502, LOST_PAGE, True))
    returns, log = minion.run([Low(family.state, case.kind.present, case.examples.create)], False)
    assert _writes(log), f"nothing was sent\n{_ids(returns)}"
    assert returns[0]["result"] is False, _ids(returns)
    assert "Nothing was written" not in returns[0]["comment"], _ids(returns)
    _no_secret(minion, returns)


@CASE
def test_two_states_for_one_object_are_both_refused(case: contract.Case, minion: Minion) -> None:
    """Two states of one run declaring one object (the example present, then absent): both refused, each
    naming the other, in the plan and the apply, with nothing written."""
    _ready(case, minion)
    present, absent = contract.kind_functions(case)
    state = case.family.state
    run = [
        Low(state, present, case.examples.create, "conformance-one"),
        Low(state, absent, case.examples.delete, "conformance-two"),
    ]
    rows = minion.rows()
    for test in (True, False):
        returns, log = minion.run(run, test)
        assert _writes(log) == [] and minion.rows() == rows, _ids(returns)
        for mine, other in ((returns[0], "conformance-two"), (returns[1], "conformance-one")):
            assert mine["result"] is False and f"state {other} " in mine["comment"], _ids(returns)
        _no_secret(minion, returns)
