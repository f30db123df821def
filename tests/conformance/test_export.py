"""``proxmox.export`` of every registered family (``salt_proxmox.registry.FAMILIES``): the example object
is made, then forgotten (its rows file removed: a cluster holding objects this minion did not create);
the export's pillar, rendered by the formula and planned as it is, plans only the ownership rows it
records (no PVE or OpenBao write), its apply records them, and the plan after it is clean."""

from __future__ import annotations

import json

import pytest

from salt_proxmox.entry import imported
from salt_proxmox.owned.declared import chunk_row_keys
from salt_proxmox.ownership.files import FileStore
from salt_proxmox.registry import FAMILIES
from salt_proxmox.run.lowstate import Chunk
from tests.conformance import contract
from tests.conformance.conftest import Minion
from tests.support.saltworld import chunks_of

CASE = pytest.mark.parametrize("case", contract.cases(FAMILIES), ids=lambda case: case.id)


def _shown(returns: list[dict]) -> str:
    return json.dumps([{k: r.get(k) for k in ("__id__", "result", "changes", "comment")} for r in returns],
                      indent=1, default=repr)  # fmt: skip


@CASE
def test_the_export_applied_as_it_is_plans_only_ownership(case: contract.Case, minion: Minion) -> None:
    family = case.family
    contract.make_given(case, minion)
    made, _ = minion.run(contract.lows(case, "create"), test=False)
    assert all(r["result"] is True for r in made), _shown(made)
    minion.world.rows_file.unlink()

    spec = case.kind.load() if case.kind.spec else None
    exporter = imported(case.kind.export) if case.kind.export else None
    never = spec.not_exported if spec is not None else getattr(exporter, "not_exported", None)
    if never is not None:
        # A kind that is never exported says why (its secret cannot be read back), and exports nothing.
        done = minion.world.salt["proxmox.export"](family=family.name)
        top, _, section = family.section.partition(":")
        exported = done.get(top, {}).get(section)
        if family.section == "proxmox:nodes":  # the node kinds share it: this kind's own key
            exported = [
                n for n, kinds in (exported or {}).items() if contract.node_key(case.kind.present) in kinds
            ]
        assert not exported, f"a never-exported kind exported: {done}"
        return
    pillar = minion.world.salt["proxmox.export"](family=family.name)
    lows = chunks_of(minion.world.formula(pillar))
    assert [low for low in lows if low.state == family.state], f"nothing exported\n{json.dumps(pillar)}"
    assert all(low.args.get("adopt") is True for low in lows if "adopt" in low.args)
    plan, log = minion.run(lows, test=True)
    assert contract.sent(log) == [], f"a plan writes nothing\n{_shown(plan)}"
    assert all(r["result"] in (None, True) for r in plan), _shown(plan)
    assert all(set(r["changes"]) <= {"ownership"} for r in plan), f"only ownership rows\n{_shown(plan)}"
    assert any(r["changes"] for r in plan), "the export's objects are taken over"

    applied, log = minion.run(lows, test=False)
    assert all(r["result"] is True for r in applied), _shown(applied)
    assert [w.line for w in contract.sent(log)] == [], f"adopting writes nothing to PVE\n{_shown(applied)}"
    example = contract.lows(case, "create")[0]
    chunk = Chunk.of(example.chunk(0))
    config = minion.world.config["proxmox"]
    pbs = next(iter(config.get("pbs_targets") or {}), None)
    expected = chunk_row_keys(chunk, next(iter(config["targets"])), pbs)
    rows = FileStore(minion.world.rows_file).load()
    assert expected and expected <= set(rows), f"the example object is exported and adopted: {sorted(rows)}"
    again, log = minion.run(lows, test=True)
    assert contract.sent(log) == [] and all(r["result"] is True and not r["changes"] for r in again), _shown(
        again
    )
