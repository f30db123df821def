"""``Ownership.for_state`` over a grains file of many rows, one ``Ownership`` per state as the Salt
module makes them (``runtime.context_for``): the rows are indexed once per run, not once per state."""

from __future__ import annotations

from pathlib import Path

import yaml

from salt_proxmox import ownership
from salt_proxmox.ownership import GrainStore, Ownership


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
    original = ownership._state_index

    def counting(rows):
        built.append(len(rows))
        return original(rows)

    monkeypatch.setattr(ownership, "_state_index", counting)
    for i in range(100):
        key, row = Ownership(store).for_state("lab", "lxc", f"ct{i}")
        assert key == f"lab/lxc/{1000 + i}" and row["state_id"] == f"ct{i}"
    assert built == [100]
    Ownership(store).mark_owned("lab/lxc/150", "web", {"vmid": 150})
    assert Ownership(store).for_state("lab", "lxc", "web")[0] == "lab/lxc/150"
    assert built == [100, 101], "rebuilt once after the write"
