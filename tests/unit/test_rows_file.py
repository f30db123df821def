"""The minion's rows file (docs/design.md §8): a change is one line appended and fsynced before
the write it guards, so a write costs the same at any number of rows; an unfinished last line is
ignored, any other bad line is an error; rows an earlier version kept in the grains file move out
on the first change; the ``salt_proxmox:owned`` grain shows the file."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest
import yaml

from salt_proxmox.ownership.files import FileStore, MinionStore
from salt_proxmox.ownership.keeper import Ownership
from salt_proxmox.ownership.stores import OwnershipFileError

ROW = {"phase": "owned", "instance": "i-1", "state_id": "web", "declared": {"vmid": 150, "memory": "1024"}}
DECLARED = {"vmid": 151, "node": "pve1", "memory": "512"}


def rows(count: int) -> dict[str, dict]:
    return {f"lab/lxc/{1000 + n}": {**ROW, "state_id": f"ct{n}"} for n in range(count)}


def test_a_change_is_appended_and_fsynced_before_it_returns(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "owned.json"
    FileStore(path).save(rows(3))
    before = path.read_bytes()
    synced: list[bytes] = []
    real_fsync = os.fsync
    # What another process would read at the moment the row is declared durable.
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(path.read_bytes()) or real_fsync(fd))
    Ownership(FileStore(path)).mark_creating("lab/lxc/151", "db", DECLARED)
    after = path.read_bytes()
    assert after.startswith(before), "the rows already there are not rewritten"
    assert synced and synced[-1] == after, "the line is on disk when mark_creating returns"
    line = json.loads(after[len(before) :])
    assert line["key"] == "lab/lxc/151" and line["row"]["phase"] == "creating"
    assert FileStore(path).load()["lab/lxc/151"]["declared"] == DECLARED


@pytest.mark.parametrize("count", [10, 1000])
def test_a_change_writes_the_same_bytes_at_any_number_of_rows(tmp_path: Path, monkeypatch, count) -> None:
    # Rewriting every row per change made creating N guests write N² bytes (two changes per create).
    path = tmp_path / "owned.json"
    FileStore(path).save(rows(count))
    store = FileStore(path)
    store.load()
    written: list[int] = []
    real_write = os.write
    monkeypatch.setattr(os, "write", lambda fd, data: written.append(len(data)) or real_write(fd, data))
    monkeypatch.setattr(os, "replace", lambda *_a: pytest.fail("the file was rewritten"))
    Ownership(store).mark_owned("lab/lxc/151", "db", DECLARED)
    assert 0 < sum(written) < 400


def test_later_lines_win_and_a_dropped_row_is_gone(tmp_path: Path) -> None:
    path = tmp_path / "owned.json"
    ownership = Ownership(FileStore(path))
    ownership.mark_creating("lab/lxc/151", "db", DECLARED)
    ownership.mark_owned("lab/lxc/151", "db", DECLARED)
    ownership.mark_owned("lab/lxc/152", "web", DECLARED)
    ownership.forget("lab/lxc/152")
    fresh = FileStore(path).load()
    assert list(fresh) == ["lab/lxc/151"] and fresh["lab/lxc/151"]["phase"] == "owned"


def test_the_file_is_rewritten_once_its_lines_outnumber_its_rows(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(FileStore, "COMPACT_AFTER", 4)
    path = tmp_path / "owned.json"
    ownership = Ownership(FileStore(path))
    for n in range(20):
        ownership.mark_owned("lab/lxc/151", "db", {**DECLARED, "memory": str(512 + n)})
    assert len(path.read_text().splitlines()) < 20, "compacted"
    assert FileStore(path).load()["lab/lxc/151"]["declared"]["memory"] == "531"
    assert [p.name for p in tmp_path.iterdir() if not p.name.startswith(".owned.json.lock")] == ["owned.json"]


def test_an_unfinished_last_line_is_ignored_and_the_next_change_drops_it(tmp_path: Path) -> None:
    # An append cut short (the process died, the disk filled) never returned, so the write it
    # guarded was never sent: the row it carried is not ours yet.
    path = tmp_path / "owned.json"
    FileStore(path).save({"lab/lxc/150": ROW})
    with open(path, "a") as handle:
        handle.write('{"key": "lab/lxc/151", "row": {"phase": "creat')
    assert list(FileStore(path).load()) == ["lab/lxc/150"]
    Ownership(FileStore(path)).mark_owned("lab/lxc/152", "web", DECLARED)
    assert "lab/lxc/151" not in path.read_text()
    assert sorted(FileStore(path).load()) == ["lab/lxc/150", "lab/lxc/152"]


@pytest.mark.parametrize(
    "line",
    [
        pytest.param("{not json", id="garbage"),
        pytest.param('["lab/lxc/151"]', id="a-list"),
        pytest.param('{"key": "lab/lxc/151"}', id="no-row"),
        pytest.param('{"key": 151, "row": null}', id="key-not-text"),
        pytest.param('{"key": "lab/lxc/151", "row": [1]}', id="row-not-a-mapping"),
    ],
)
def test_a_bad_line_before_the_last_is_an_error_naming_it(tmp_path: Path, line: str) -> None:
    # Read as "no such change", a row we dropped could come back, or one we wrote vanish.
    path = tmp_path / "owned.json"
    FileStore(path).save({"lab/lxc/150": ROW})
    with open(path, "a") as handle:
        handle.write(line + "\n" + json.dumps({"key": "lab/lxc/152", "row": ROW}) + "\n")
    with pytest.raises(OwnershipFileError, match=r"owned\.json: line \d+ is not"):
        FileStore(path).load()


def test_a_failed_append_is_an_error_and_the_rows_stand(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "owned.json"
    FileStore(path).save({"lab/lxc/150": ROW})
    store = FileStore(path)
    store.load()
    real_write = os.write

    def half_then_full(fd, data):
        real_write(fd, bytes(data[:10]))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", half_then_full)
    with pytest.raises(OwnershipFileError) as caught:
        Ownership(store).mark_creating("lab/lxc/151", "db", DECLARED)
    assert "lab/lxc/151" in str(caught.value) and "No space left" in str(caught.value)
    monkeypatch.undo()
    assert list(store.load()) == ["lab/lxc/150"], "the run's store read the file again"
    Ownership(store).mark_owned("lab/lxc/152", "web", DECLARED)
    assert sorted(FileStore(path).load()) == ["lab/lxc/150", "lab/lxc/152"]


def test_a_file_this_user_may_not_write_is_refused_for_an_append_too(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "owned.json"
    FileStore(path).save({"lab/lxc/150": ROW})
    before = path.read_text()
    monkeypatch.setattr(os, "access", lambda p, mode: not (Path(p) == path and mode == os.W_OK))
    with pytest.raises(OwnershipFileError, match="read-only for this user"):
        Ownership(FileStore(path)).mark_owned("lab/lxc/151", "db", DECLARED)
    assert path.read_text() == before


def test_a_file_in_the_earlier_format_reads_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "owned.json"
    path.write_text(json.dumps({"owned": {"lab/lxc/150": ROW}}, indent=2, sort_keys=True))  # no newline
    assert FileStore(path).load() == {"lab/lxc/150": ROW}
    Ownership(FileStore(path)).mark_owned("lab/lxc/151", "db", DECLARED)
    assert sorted(FileStore(path).load()) == ["lab/lxc/150", "lab/lxc/151"]


def grains(tmp_path: Path, document: object) -> Path:
    path = tmp_path / "grains"
    path.write_text(yaml.safe_dump(document, default_flow_style=False))
    return path


def test_rows_in_the_grains_file_are_read_and_moved_out_on_the_first_change(tmp_path: Path) -> None:
    grains_path = grains(tmp_path, {"roles": ["web"], "salt_proxmox": {"owned": {"lab/lxc/150": ROW}}})
    store = MinionStore(tmp_path / "salt_proxmox_owned.json", grains_path)
    ownership = Ownership(store)
    assert ownership.row("lab/lxc/150") == ROW, "an earlier version's rows stay ours"
    assert not (tmp_path / "salt_proxmox_owned.json").exists(), "reading moves nothing"
    ownership.mark_creating("lab/lxc/151", "db", DECLARED)
    assert sorted(FileStore(tmp_path / "salt_proxmox_owned.json").load()) == ["lab/lxc/150", "lab/lxc/151"]
    assert yaml.safe_load(grains_path.read_text()) == {"roles": ["web"]}, "other grains kept"
    ownership.mark_owned("lab/lxc/151", "db", DECLARED)
    again = MinionStore(tmp_path / "salt_proxmox_owned.json", grains_path).load()
    assert again["lab/lxc/151"]["phase"] == "owned" and again["lab/lxc/150"] == ROW


def test_an_unreadable_grains_file_with_no_rows_file_is_an_error_never_no_rows(tmp_path: Path) -> None:
    grains_path = tmp_path / "grains"
    grains_path.write_text("salt_proxmox: {owned: {a: 1}\n")
    with pytest.raises(OwnershipFileError, match="is not YAML") as caught:
        Ownership(MinionStore(tmp_path / "salt_proxmox_owned.json", grains_path)).row("lab/lxc/150")
    assert str(grains_path) in str(caught.value)


def test_once_the_rows_file_exists_the_grains_file_is_not_read_for_rows(tmp_path: Path) -> None:
    FileStore(tmp_path / "salt_proxmox_owned.json").save({"lab/lxc/150": ROW})
    grains_path = tmp_path / "grains"
    grains_path.write_text("roles: [web\n")  # Salt skips it; it holds no row of ours
    ownership = Ownership(MinionStore(tmp_path / "salt_proxmox_owned.json", grains_path))
    assert ownership.row("lab/lxc/150") == ROW
    ownership.mark_owned("lab/lxc/151", "db", DECLARED)
    assert grains_path.read_text() == "roles: [web\n"


def test_rows_moved_but_left_in_an_unwritable_grains_file_fail_the_change(
    tmp_path: Path, monkeypatch
) -> None:
    grains_path = grains(tmp_path, {"salt_proxmox": {"owned": {"lab/lxc/150": ROW}}})
    monkeypatch.setattr(os, "access", lambda p, mode: not (Path(p) == grains_path and mode == os.W_OK))
    with pytest.raises(OwnershipFileError, match="older copy") as caught:
        Ownership(MinionStore(tmp_path / "salt_proxmox_owned.json", grains_path)).mark_creating(
            "lab/lxc/151", "db", DECLARED
        )
    assert "lab/lxc/151" in str(caught.value) and str(grains_path) in str(caught.value)
    monkeypatch.undo()
    # The rows file holds every row; the next change drops the grains file's copy.
    Ownership(MinionStore(tmp_path / "salt_proxmox_owned.json", grains_path)).forget("lab/lxc/151")
    assert "salt_proxmox" not in yaml.safe_load(grains_path.read_text())


def test_the_grain_shows_the_rows_file(tmp_path: Path) -> None:
    from saltext_proxmox.grains import proxmox_owned

    (tmp_path / "minion").write_text("")
    opts = {"conf_file": str(tmp_path / "minion"), "id": "m"}
    proxmox_owned.__opts__ = opts
    try:
        assert proxmox_owned.owned() == {}, "no rows file: no grain (an earlier grains file shows its own)"
        Ownership(FileStore(tmp_path / "salt_proxmox_owned.json")).mark_owned("lab/lxc/151", "db", DECLARED)
        assert proxmox_owned.owned()["salt_proxmox"]["owned"]["lab/lxc/151"]["declared"] == DECLARED
        other = tmp_path / "elsewhere.json"
        FileStore(other).save({"lab/lxc/150": ROW})
        proxmox_owned.__opts__ = {**opts, "proxmox": {"ownership_file": str(other)}}
        assert proxmox_owned.owned() == {"salt_proxmox": {"owned": {"lab/lxc/150": ROW}}}
        other.write_text("{broken")
        assert proxmox_owned.owned() == {}
    finally:
        del proxmox_owned.__opts__
