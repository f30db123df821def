"""Removal means one thing in every family (README "adopt and removal"): the table's rows, run for every
registered family through its states and the real execution modules against a fresh fake cluster.

- ``ensure: absent`` without ``removal`` forgets the ownership row and writes nothing;
- ``removal: destroy`` on the object now unowned is refused, and the refusal names the next step
  (``adopt: true``, then ``removal: destroy``);
- following that step (present with ``adopt: true``, then absent with ``removal: destroy``) deletes it
  in two applies.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest

from salt_proxmox.ownership.files import FileStore
from salt_proxmox.registry import FAMILIES, Family
from tests.conformance import contract
from tests.conformance.conftest import Minion
from tests.support.salt_modules import load
from tests.support.saltworld import Low

FAMILY = pytest.mark.parametrize("family", FAMILIES, ids=lambda family: family.name)
CASE = pytest.mark.parametrize("case", contract.cases(FAMILIES), ids=lambda case: case.id)
ROOT = Path(__file__).resolve().parents[2]


def _rows(minion: Minion) -> dict:
    return FileStore(minion.world.rows_file).load()


def _writes(log) -> list[str]:
    return [w.line for w in contract.sent(log)]


def _shown(returns: list[dict]) -> str:
    return json.dumps([{k: r.get(k) for k in ("__id__", "result", "changes", "comment")} for r in returns],
                      indent=1, default=repr)  # fmt: skip


def _absent_run(case: contract.Case, **removal: str) -> list[Low]:
    """The example's delete without ``removal`` (or with the one given), then the family's applies."""
    _, absent = contract.kind_functions(case)
    declared = {k: v for k, v in case.examples.delete.items() if k != "removal"} | removal
    return [Low(case.family.state, absent, declared), *_applies(case)]


def _present_run(case: contract.Case, **extra: object) -> list[Low]:
    present, _ = contract.kind_functions(case)
    declared = {**case.examples.create, **extra}
    return [Low(case.family.state, present, declared), *_applies(case)]


def _applies(case: contract.Case) -> list[Low]:
    return [Low(case.family.state, fun, declared) for fun, declared in case.examples.applies]


@CASE
def test_absent_without_removal_forgets_and_the_destroy_refusal_names_the_way_back(
    case: contract.Case, minion: Minion
) -> None:
    family = case.family
    contract.make_given(case, minion)
    given = _rows(minion)
    created, _ = minion.run(_present_run(case), test=False)
    assert all(r["result"] is True for r in created), _shown(created)
    rows = _rows(minion)
    assert set(rows) - set(given), "the create recorded a row"

    # Without removal: the row is forgotten, nothing is written, in the plan and the apply alike.
    for test in (True, False):
        forgot, log = minion.run(_absent_run(case), test=test)
        assert _writes(log) == [], f"absent without removal writes nothing\n{_shown(forgot)}"
        first = forgot[0]
        assert first["changes"] == {"ownership": {"old": "owned", "new": None}}, _shown(forgot)
    assert _rows(minion) == given, "the row is forgotten"

    if case.kind.name in contract.KEPT:  # PVE cannot delete it: a destroy is refused, owned or not
        for adopt in (False, True):
            if adopt:
                minion.run(_present_run(case, adopt=True), test=False)
            for test in (True, False):
                refused, log = minion.run(_absent_run(case, removal="destroy"), test=test)
                assert _writes(log) == [] and refused[0]["result"] is False, _shown(refused)
                assert "cannot be deleted" in refused[0]["comment"], _shown(refused)
        return
    # The object is still live and no longer ours: a destroy is refused, naming the next step.
    refused, log = minion.run(_absent_run(case, removal="destroy"), test=True)
    assert _writes(log) == [] and refused[0]["result"] is False, _shown(refused)
    comment = refused[0]["comment"]
    assert "adopt: true" in comment and "removal: destroy" in comment, comment

    # That step: adopt it (one apply), then destroy it (one apply).
    adopted, _ = minion.run(_present_run(case, adopt=True), test=False)
    assert adopted[0]["result"] is True, _shown(adopted)
    plan, _ = minion.run(_absent_run(case, removal="destroy"), test=True)
    assert plan[0]["result"] is None, _shown(plan)
    if family.guest is not None:  # a guest's destroy deletes its volumes: the plan names each
        volumes = plan[0]["changes"]["volumes"]["old"]
        assert volumes and all(volume in plan[0]["comment"] for volume in volumes), _shown(plan)
    destroyed, log = minion.run(_absent_run(case, removal="destroy"), test=False)
    assert all(r["result"] is True for r in destroyed), _shown(destroyed)
    resets = case.kind.name in contract.RESETS  # options: put back to PVE's defaults (PUT delete=)
    disables = case.kind.name in contract.PER_ENTRY  # APT repositories: disabled (APT.pm has no delete)
    assert [
        w
        for w in contract.sent(log)
        if w.removes or (resets and w.deleted) or (disables and w.fields.get("enabled") == "0")
    ], f"the destroy deleted it\n{_shown(destroyed)}"
    again, log = minion.run(_absent_run(case, removal="destroy"), test=True)
    assert _writes(log) == [] and again[0]["result"] is True and again[0]["changes"] == {}, _shown(again)


def _absent_function(case: contract.Case):
    """The execution-module function the kind's absent state runs (``registry.Call``)."""
    _, absent = contract.kind_functions(case)
    module, _, function = case.family.calls[absent].function.partition(".")
    return getattr(load("_modules", module, {}, False), function)


@CASE
def test_absent_without_removal_is_retain_in_every_family(case: contract.Case) -> None:
    """One default for every kind: ``removal`` left out is ``retain`` (a firewall alias deleted at once)."""
    parameter = inspect.signature(_absent_function(case)).parameters["removal"]
    assert parameter.default == "retain"


@FAMILY
def test_the_readme_removal_table_names_every_family(family: Family) -> None:
    readme = (ROOT / "README.md").read_text()
    table = readme[readme.index("What a destroy deletes, per family:") :]
    table = table[: table.index("\n\n", table.index("| --- |"))]
    first_cells = [line.strip("| ").split("(")[0] for line in table.splitlines()[3:]]
    names = {part.strip() for cell in first_cells for part in cell.split(",")}
    assert family.name in names, table
