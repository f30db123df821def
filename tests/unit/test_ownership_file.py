"""FileStore: ownership rows in a JSON file, for salt-ssh targets whose grains do not last."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from salt_proxmox.ownership.files import FileStore
from salt_proxmox.ownership.keeper import Ownership
from salt_proxmox.ownership.stores import OwnershipFileError

ROW = {"phase": "owned", "instance": "i-1", "state_id": "web", "declared": {"vmid": 150, "memory": "1024"}}


def test_a_missing_file_holds_no_rows(tmp_path: Path) -> None:
    assert FileStore(tmp_path / "absent.json").load() == {}


def test_rows_round_trip_in_the_grains_shape(tmp_path: Path) -> None:
    path = tmp_path / "state" / "owned.json"
    FileStore(path).save({"demo/lxc/150": ROW})
    assert json.loads(path.read_text()) == {"owned": {"demo/lxc/150": ROW}}
    assert FileStore(path).load() == {"demo/lxc/150": ROW}
    # Private: the file 0600, the directory it had to create 0700; no scratch file left beside it.
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert [p.name for p in path.parent.iterdir()] == ["owned.json"]


def test_ownership_through_a_file_survives_a_new_store(tmp_path: Path) -> None:
    path = tmp_path / "owned.json"
    Ownership(FileStore(path)).mark_owned("demo/lxc/150", "web", {"vmid": 150})
    again = Ownership(FileStore(path))
    assert again.row("demo/lxc/150")["phase"] == "owned"
    assert again.forget("demo/lxc/150") is True
    assert FileStore(path).load() == {}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("{not json", "not JSON", id="garbage"),
        pytest.param('["owned"]', 'expected {"owned"', id="a-list"),
        pytest.param('{"owned": []}', 'expected {"owned"', id="owned-not-a-mapping"),
    ],
)
def test_an_unreadable_file_is_an_error_never_no_rows(tmp_path: Path, text: str, message: str) -> None:
    # Read as "no rows", every guest this minion made would turn unowned.
    path = tmp_path / "owned.json"
    path.write_text(text)
    with pytest.raises(OwnershipFileError, match=message):
        FileStore(path).load()


def test_a_failed_save_leaves_the_old_rows(tmp_path: Path) -> None:
    path = tmp_path / "owned.json"
    FileStore(path).save({"demo/lxc/150": ROW})
    with pytest.raises(TypeError):
        FileStore(path).save({"demo/lxc/151": {"declared": {object()}}})
    assert FileStore(path).load() == {"demo/lxc/150": ROW}
    assert [p.name for p in tmp_path.iterdir()] == ["owned.json"]
