"""The contract's promises for the firewall kinds the registry's examples do not reach (the contract runs
each family's first kind, ``firewall_group``): IP sets and options, through the ``proxmox_firewall`` state
module and the ``proxmox`` execution module against a fresh fake cluster. An IP set writes each entry on its
own (pve-firewall API2/Firewall/IPSet.pm), so its writes are checked against its plan here, not by
``contract.write_problems``'s one write per state."""

from __future__ import annotations

import json

import pytest

from tests.conformance import contract
from tests.conformance.conftest import LOST_PAGE, Minion
from tests.support.saltworld import Low

STATE = "proxmox_firewall"
#: (kind, present function, absent function, create, update, clear, delete, bad inputs {what: (args, key)}).
KINDS = {
    "ipset": (
        "ipset",
        "ipset_absent",
        {
            "name": "examples",
            "comment": "Example set",
            "cidrs": ["10.9.0.0/24", {"cidr": "10.9.1.7", "nomatch": True}],
        },
        {"name": "examples", "comment": "Example set", "cidrs": ["10.9.0.0/24", "10.9.2.0/24"]},
        {"name": "examples", "comment": None, "cidrs": []},
        {"name": "examples", "removal": "destroy"},
        {
            "unknown key": ({"name": "examples", "colour": "red"}, "colour"),
            "wrong type": ({"name": "examples", "cidrs": "10.0.0.0/8"}, "cidrs"),
            "zero prefix": ({"name": "examples", "cidrs": ["10.0.0.0/0"]}, "cidrs[0]"),
            "upper case": ({"name": "Examples"}, "name"),
        },
    ),
    "options": (
        "options",
        "options_absent",
        {"name": "node/pve1", "nf_conntrack_max": 524288, "tcpflags": True},
        {"name": "node/pve1", "nf_conntrack_max": 1048576, "tcpflags": True},
        {"name": "node/pve1", "nf_conntrack_max": None, "tcpflags": True},
        {"name": "node/pve1", "removal": "destroy"},
        {
            "another scope's key": ({"name": "node/pve1", "policy_in": "DROP"}, "policy_in"),
            "wrong type": ({"name": "node/pve1", "nf_conntrack_max": "lots"}, "nf_conntrack_max"),
            "below minimum": ({"name": "node/pve1", "nf_conntrack_max": 1}, "nf_conntrack_max"),
            "bad scope": ({"name": "pool/x", "enable": 1}, "scope"),
        },
    ),
}
KIND = pytest.mark.parametrize("kind", list(KINDS))


def _writes(log) -> list[str]:
    return [w.line for w in contract.sent(log)]


def _ids(returns: list[dict]) -> str:
    return json.dumps(
        [{k: r.get(k) for k in ("__id__", "result", "changes", "comment")} for r in returns], indent=1
    )


@KIND
def test_plan_apply_plan_clean(kind: str, minion: Minion) -> None:
    """create, update, clear, delete: each plan writes nothing and has changes, the apply succeeds and
    writes, the plan after it is clean and reads only."""
    present, absent, create, update, clear, delete, _bad = KINDS[kind]
    for phase, fun, declared in (("create", present, create), ("update", present, update),
                                 ("clear", present, clear), ("delete", absent, delete)):  # fmt: skip
        run = [Low(STATE, fun, declared)]
        plan, log = minion.run(run, test=True)
        assert _writes(log) == [] and plan[0]["result"] is None and plan[0]["changes"], (
            f"{phase}\n{_ids(plan)}"
        )
        applied, log = minion.run(run, test=False)
        assert applied[0]["result"] is True and _writes(log), f"{phase}\n{_ids(applied)}"
        again, log = minion.run(run, test=True)
        assert _writes(log) == [] and again[0]["result"] is True and again[0]["changes"] == {}, (
            f"{phase}: the plan after the apply\n{_ids(again)}"
        )


@KIND
def test_bad_input_is_refused_by_name_with_nothing_written(kind: str, minion: Minion) -> None:
    present, *_rest, bad = KINDS[kind]
    for what, (declared, key) in bad.items():
        for test in (True, False):
            returns, log = minion.run([Low(STATE, present, declared)], test)
            assert _writes(log) == [] and minion.rows() in ("", "{}"), f"{what}\n{_ids(returns)}"
            assert returns[0]["result"] is False and key in returns[0]["comment"], f"{what}\n{_ids(returns)}"


@KIND
@pytest.mark.parametrize("status", [403, 500])
def test_a_failed_read_is_never_absence(kind: str, status: int, minion: Minion) -> None:
    present, _absent, create, *_rest = KINDS[kind]
    run = [Low(STATE, present, create)]
    _probe, log = minion.run(run, test=True)
    for path in contract.object_reads(create, log) or [p for m, p, _ in log if m == "GET"]:
        minion.cluster.pve.fail("GET", path, status, "Permission check failed" if status == 403 else "boom")
    for test in (True, False):
        returns, log = minion.run(run, test)
        assert _writes(log) == [] and returns[0]["result"] is False, _ids(returns)
    minion.cluster.pve.failures.clear()


@KIND
def test_an_answer_lost_after_a_write_is_uncertain(kind: str, minion: Minion) -> None:
    present, _absent, create, *_rest = KINDS[kind]
    minion.tap.faults.append((lambda m, p: m != "GET" and p.startswith("/api2/json/"), 502, LOST_PAGE, True))
    returns, log = minion.run([Low(STATE, present, create)], False)
    assert _writes(log) and returns[0]["result"] is False, _ids(returns)
    assert "Nothing was written" not in returns[0]["comment"], _ids(returns)


@KIND
def test_two_states_for_one_object_are_both_refused(kind: str, minion: Minion) -> None:
    present, absent, create, _update, _clear, delete, _bad = KINDS[kind]
    run = [Low(STATE, present, create, "fw-one"), Low(STATE, absent, delete, "fw-two")]
    for test in (True, False):
        returns, log = minion.run(run, test)
        assert _writes(log) == [] and minion.rows() in ("", "{}"), _ids(returns)
        for mine, other in ((returns[0], "fw-two"), (returns[1], "fw-one")):
            assert mine["result"] is False and f"state {other} " in mine["comment"], _ids(returns)
