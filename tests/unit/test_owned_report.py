"""What a minion owns, as ``proxmox.owned`` and a plan's note say it (``ownership.report``), which rows
a run declares in every family (``owned.declared``), and the ``proxmox_owned`` table."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from salt_proxmox.owned.declared import chunk_row_keys, declared_row_keys, undeclared_once
from salt_proxmox.ownership.report import entries, no_such_row, split_key, undeclared_lines
from salt_proxmox.registry import FAMILIES, Family
from salt_proxmox.run.lowstate import Chunk, Run
from tests.conformance.examples import examples_of

ROWS = {
    "demo/lxc/150": {"phase": "owned", "state_id": "web", "declared": {"vmid": 150}},
    "demo/lxc/151": {"phase": "owned", "state_id": "db", "declared": {"vmid": 151}},
    "demo/pool/prod/web": {"phase": "creating", "state_id": "proxmox-pool-prod/web"},
}


def test_entries_say_which_rows_the_pillar_still_declares() -> None:
    found = entries(ROWS, {"demo/lxc/150", "demo/pool/prod/web"})
    assert [(e["family"], e["id"], e["phase"], e["declared"]) for e in found] == [
        ("lxc", "150", "owned", True),
        ("lxc", "151", "owned", False),
        ("pool", "prod/web", "creating", True),  # a nested pool's identity keeps its '/'
    ]
    assert all(entry["declared"] is None for entry in entries(ROWS, None)), "no pillar read: unknown"


def test_a_row_that_is_no_mapping_is_listed_unreadable_not_dropped() -> None:
    (entry,) = entries({"demo/pool/x": "garbage"}, set())
    assert (entry["phase"], entry["declared"]) == ("unreadable", False)


def test_the_plan_note_is_one_line_per_orphan() -> None:
    lines = undeclared_lines(ROWS, {"demo/lxc/150", "demo/pool/prod/web"})
    assert len(lines) == 1 and "lxc 151 on demo (state db)" in lines[0] and "ensure: absent" in lines[0]


def test_forgetting_a_row_that_does_not_exist_names_the_rows_of_its_family() -> None:
    message = str(no_such_row("demo/lxc/999", ROWS))
    assert "no ownership row demo/lxc/999" in message and "demo/lxc/150, demo/lxc/151" in message
    assert "pool" not in message
    with pytest.raises(ValueError):
        split_key("demo/lxc")


def _chunk(family: Family, fun: str, declared: dict) -> Chunk:
    args = {key: value for key, value in declared.items() if key != "name"}
    name = str(declared["name"])
    return Chunk(state_id=f"{family.prefix}{name}", name=name, state=family.state, fun=fun, args=args)


@pytest.mark.parametrize("family", FAMILIES, ids=lambda family: family.name)
def test_every_family_keys_its_declarations(family: Family) -> None:
    """A family whose declarations no rule keys would see every object it owns called an orphan: each
    registered family's example, present and absent, names exactly one row of its own family."""
    for kind in family.kinds:
        examples = examples_of(kind.name)
        for fun, declared in ((kind.present, examples.create), (kind.absent, examples.delete)):
            keys = chunk_row_keys(_chunk(family, fun, declared), "demo", "demo")
            assert len(keys) == 1, (fun, keys)
            assert split_key(next(iter(keys)))[1] == kind.name


def test_the_run_gets_the_note_once_and_a_call_outside_a_run_none() -> None:
    chunks = [{"state": "proxmox_lxc", "fun": "present", "__id__": "web", "name": "web", "vmid": 150}]
    run = Run(chunks, chunks[0], key="run-1")
    cache: dict = {}
    first = undeclared_once(run, cache, ROWS, "demo")
    assert len(first) == 2 and undeclared_once(run, cache, ROWS, "demo") == []
    assert undeclared_once(None, {}, ROWS, "demo") == []
    assert declared_row_keys(run.chunks, "demo") == {"demo/lxc/150"}


def _outputter():
    path = Path(__file__).resolve().parents[2] / "_output" / "proxmox_owned.py"
    spec = importlib.util.spec_from_file_location("proxmox_owned", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_table_marks_orphans_and_what_a_check_found() -> None:
    found = entries(ROWS, {"demo/lxc/150"})
    found[1].update({"live": "present", "fingerprint": False, "differs": ["net0 is X, recorded Y"]})
    text = _outputter().render({"local": found})
    lines = text.splitlines()
    assert lines[0].split() == [
        "FAMILY",
        "TARGET",
        "ID",
        "STATE",
        "ID",
        "PHASE",
        "DECLARED",
        "LIVE",
        "FINGERPRINT",
    ]
    assert lines[2].split() == ["lxc", "demo", "151", "db", "owned", "NO", "present", "NO"]
    assert lines[3] == "    differs: net0 is X, recorded Y"
    assert lines[-1].startswith("3 owned, 2 no longer declared")
    assert _outputter().render({"local": {"x": 1}}).startswith("{"), "anything else is JSON"


def test_a_pbs_family_is_keyed_on_its_pbs_target_not_the_pve_one() -> None:
    """A PBS datastore's row names the PBS target (``proxmox:pbs_targets``): keyed on the PVE target,
    every declared datastore would be noted as owned and no longer declared."""
    (family,) = [family for family in FAMILIES if family.section.startswith("proxmox:pbs:")]
    chunk = _chunk(family, family.kinds[0].present, dict(examples_of(family.kinds[0].name).create))
    assert chunk_row_keys(chunk, "demo", "backup1") == {f"backup1/{family.kinds[0].name}/example-store"}
    rows = {f"backup1/{family.kinds[0].name}/example-store": {"phase": "owned", "state_id": "x"}}
    low = {"state": chunk.state, "fun": chunk.fun, "__id__": chunk.state_id, "name": chunk.name, **chunk.args}
    run = Run([low], low, key="run-1")
    assert undeclared_once(run, {}, rows, "demo", "backup1") == []
    assert undeclared_once(Run([low], low, key="run-2"), {}, rows, "demo") != [], "keyed on the PVE target"
