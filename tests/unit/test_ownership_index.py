"""``Ownership.for_state`` over a grains file of many rows, one ``Ownership`` per state as the Salt
module makes them (``runtime.context_for``): the rows are indexed once per run, not once per state."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from salt_proxmox.ownership import files, index, keeper, stores
from salt_proxmox.ownership.files import GrainStore
from salt_proxmox.ownership.keeper import Ownership
from salt_proxmox.ownership.rows import OwnershipCorrupt


def _grains(tmp_path: Path, count: int) -> Path:
    rows = {
        f"lab/lxc/{1000 + i}": {"phase": "owned", "instance": f"i{i}", "state_id": f"ct{i}", "declared": {}}
        for i in range(count)
    }
    path = tmp_path / "grains"
    path.write_text(yaml.safe_dump({"salt_proxmox": {"owned": rows}}))
    return path


def test_a_run_of_states_indexes_the_rows_once(tmp_path: Path, monkeypatch) -> None:
    """100 states, each with its own Ownership over the run's one store: the index is built once
    (100 rows checked), not once per state (10 000); a write is seen by the next state."""
    store = GrainStore(_grains(tmp_path, 100))
    built = []
    original = index.state_index

    def counting(rows):
        built.append(len(rows))
        return original(rows)

    monkeypatch.setattr(keeper, "state_index", counting)
    for i in range(100):
        key, row = Ownership(store).for_state("lab", "lxc", f"ct{i}")
        assert key == f"lab/lxc/{1000 + i}" and row["state_id"] == f"ct{i}"
    assert built == [100]
    Ownership(store).mark_owned("lab/lxc/150", "web", {"vmid": 150})
    assert Ownership(store).for_state("lab", "lxc", "web")[0] == "lab/lxc/150"
    assert built == [100, 101], "rebuilt once after the write"


def test_for_state_copies_only_the_row_it_returns(tmp_path: Path, monkeypatch) -> None:
    """No state copies every row to find its own: ``for_state`` reads through the store's
    ``derived`` index (part of the store protocol, so every store has one) and copies the one row
    it returns; changing that copy changes nothing stored."""
    store = GrainStore(_grains(tmp_path, 50))
    loads = []
    original = GrainStore.load
    monkeypatch.setattr(GrainStore, "load", lambda self: loads.append(1) or original(self))
    key, row = Ownership(store).for_state("lab", "lxc", "ct7")
    assert (key, row["instance"]) == ("lab/lxc/1007", "i7") and loads == []
    row["instance"] = "changed"
    assert Ownership(store).for_state("lab", "lxc", "ct7")[1]["instance"] == "i7"
    assert Ownership(store).for_state("lab", "lxc", "nobody") is None


def test_every_store_serves_the_index(tmp_path: Path) -> None:
    """MemoryStore and the disk stores answer ``derived`` alike; a malformed row of the family is
    raised, as it might be this state's."""
    rows = {
        "lab/lxc/150": {"phase": "owned", "instance": "a", "state_id": "web", "declared": {}},
        "lab/pool/prod": {"phase": "owned", "instance": "b", "state_id": "web", "declared": {}},
        "lab/role/R": {"phase": "bogus", "state_id": "r"},
    }
    disk = files.FileStore(tmp_path / "owned.json")
    disk.save(rows)
    for store in (stores.MemoryStore(rows), disk):
        found = Ownership(store).for_state("lab", "pool", "web")
        assert found is not None and found[0] == "lab/pool/prod"
        with pytest.raises(OwnershipCorrupt):
            Ownership(store).for_state("lab", "role", "r")


def test_a_run_of_creates_carries_the_index_over_each_row_it_writes(tmp_path: Path, monkeypatch) -> None:
    """N creates (a creating row, then the owned row, each looked up by state id first): the index
    is carried over each appended row, not rebuilt over every row twice per create (N² checks)."""
    from salt_proxmox.ownership.files import FileStore

    store = FileStore(tmp_path / "owned.json")
    checked = []
    real = keeper.check_row
    for module in (index, keeper):  # the index and the keeper both check the rows they read
        monkeypatch.setattr(module, "check_row", lambda key, row: checked.append(key) or real(key, row))
    for i in range(60):
        state = Ownership(store)
        assert state.for_state("lab", "lxc", f"ct{i}") is None
        state.mark_creating(f"lab/lxc/{1000 + i}", f"ct{i}", {"vmid": 1000 + i})
        assert state.for_state("lab", "lxc", f"ct{i}")[1]["phase"] == "creating"
        state.mark_owned(f"lab/lxc/{1000 + i}", f"ct{i}", {"vmid": 1000 + i})
    assert len(checked) < 10 * 60, len(checked)
    assert Ownership(store).for_state("lab", "lxc", "ct59")[1]["phase"] == "owned"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["lab/lxc/1", "lab/lxc/2", "lab/lxc/3", "lab/pool/p"]),
            st.sampled_from(["a", "b", None, "bad"]),
        ),
        max_size=12,
    )
)
def test_the_carried_index_is_the_index_built_afresh(tmp_path: Path, changes) -> None:
    # None drops the row; "bad" writes a malformed one (its family's index then refuses every lookup).
    from salt_proxmox.ownership.files import FileStore

    path = tmp_path / f"owned-{len(list(tmp_path.iterdir()))}.json"
    store = FileStore(path)
    for key, state_id in changes:
        rows = store.load()
        if state_id is None:
            rows.pop(key, None)
        else:
            rows[key] = {
                "phase": "owned" if state_id != "bad" else "gone",
                "state_id": state_id,
                "declared": {},
            }
        with store.locked():
            store.save(rows, key)
        for family in ("lxc", "pool"):
            for wanted in ("a", "b"):
                assert _lookup(store, family, wanted) == _lookup(FileStore(path), family, wanted)


def _lookup(store, family: str, state_id: str) -> object:
    """``for_state``'s answer, or the text of the OwnershipCorrupt it raises."""
    try:
        return Ownership(store).for_state("lab", family, state_id)
    except OwnershipCorrupt as exc:
        return str(exc)
