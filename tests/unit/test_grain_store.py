"""The grain store: rows under ``salt_proxmox:owned`` in Salt's grains file, read once per run, written
only when a row changes, atomically, and never silently lost (docs/design.md §8)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
import yaml

from salt_proxmox.ownership.files import FileStore, GrainStore
from salt_proxmox.ownership.keeper import Ownership
from salt_proxmox.ownership.stores import OwnershipFileError
from salt_proxmox.run import config as run_config

ROW = {"phase": "owned", "instance": "i-1", "state_id": "web", "declared": {"vmid": 150, "memory": "1024"}}
DECLARED = {"vmid": 150, "node": "pve1", "memory": "1024"}


def grains_file(tmp_path: Path, grains: object) -> Path:
    path = tmp_path / "grains"
    path.write_text(yaml.safe_dump(grains, default_flow_style=False))
    return path


def test_rows_round_trip_and_other_grains_are_kept(tmp_path: Path) -> None:
    path = grains_file(tmp_path, {"salt_proxmox": {"owned": {}, "note": "kept"}, "roles": ["web"]})
    store = GrainStore(path)
    Ownership(store).mark_owned("lab/lxc/150", "web", DECLARED)
    # Salt reads the grains file with PyYAML's safe loader (salt/grains/extra.py config).
    on_disk = yaml.safe_load(path.read_text())
    assert on_disk["salt_proxmox"]["owned"]["lab/lxc/150"]["declared"] == DECLARED
    assert on_disk["salt_proxmox"]["note"] == "kept" and on_disk["roles"] == ["web"]
    assert GrainStore(path).load() == on_disk["salt_proxmox"]["owned"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [".grains.lock", "grains"], "no scratch file left"


def test_a_missing_grains_file_holds_no_rows_and_is_made_private(tmp_path: Path) -> None:
    path = tmp_path / "etc" / "grains"
    store = GrainStore(path)
    assert store.load() == {}
    Ownership(store).mark_owned("lab/lxc/150", "web", DECLARED)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_an_existing_grains_file_keeps_its_mode(tmp_path: Path) -> None:
    path = grains_file(tmp_path, {"roles": ["web"]})
    path.chmod(0o640)
    Ownership(GrainStore(path)).mark_owned("lab/lxc/150", "web", DECLARED)
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


@pytest.mark.parametrize(
    ("grains", "message"),
    [
        pytest.param(
            "salt_proxmox: {owned: [a]}\n", "salt_proxmox grain is not a mapping", id="owned-a-list"
        ),
        pytest.param("salt_proxmox: text\n", "salt_proxmox grain is not a mapping", id="grain-a-string"),
        pytest.param("- a\n- b\n", "not a mapping of grains", id="file-a-list"),
        pytest.param(
            "salt_proxmox: {owned: {a: 1}\nsecret_grain: hunter2-{\n", "is not YAML", id="unparseable"
        ),
    ],
)
def test_an_unreadable_grains_file_is_an_error_naming_it_never_no_rows(
    tmp_path: Path, grains: str, message: str
) -> None:
    # Read as "no rows", every guest this minion made would turn foreign: refused as "this minion did
    # not create it", and with adopt: true re-recorded over rows a repair would have brought back.
    path = tmp_path / "grains"
    path.write_text(grains)
    with pytest.raises(OwnershipFileError, match=message) as caught:
        Ownership(GrainStore(path)).row("lab/lxc/150")
    assert str(path) in str(caught.value)
    # The parser's context quotes file lines; another grain may hold anything, so none is repeated.
    assert "hunter2" not in str(caught.value)


def test_an_unchanged_row_is_not_rewritten(tmp_path: Path) -> None:
    path = grains_file(tmp_path, {"salt_proxmox": {"owned": {"lab/lxc/150": ROW}}})
    before = path.stat()
    ownership = Ownership(GrainStore(path))
    ownership.mark_owned("lab/lxc/150", "web", ROW["declared"])
    ownership.restore("lab/lxc/150", ROW)
    assert ownership.forget("lab/lxc/151") is False
    after = path.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns), "no write at all"


def test_the_file_is_parsed_once_per_run_and_again_only_when_it_changed(tmp_path: Path, monkeypatch) -> None:
    path = grains_file(tmp_path, {"salt_proxmox": {"owned": {"lab/lxc/150": ROW}}})
    parses = []
    real = yaml.load
    monkeypatch.setattr(yaml, "load", lambda *a, **k: parses.append(1) or real(*a, **k))
    ownership = Ownership(GrainStore(path))
    for _ in range(50):
        assert ownership.row("lab/lxc/150")["phase"] == "owned"
        ownership.for_state("lab", "lxc", "web")
    ownership.mark_owned("lab/lxc/151", "db", DECLARED)  # our own write: known without a re-read
    assert ownership.row("lab/lxc/151")["state_id"] == "db"
    assert len(parses) == 1
    other = Ownership(GrainStore(path))
    other.forget("lab/lxc/150")  # another process
    assert ownership.row("lab/lxc/150") is None and len(parses) == 3


def test_a_row_another_process_wrote_meanwhile_is_kept(tmp_path: Path) -> None:
    # A state run holds its store for the whole run; an ad-hoc `salt-call proxmox.lxc_create` in another
    # process records its guest meanwhile. The run's next write must not put back its stale rows.
    path = grains_file(tmp_path, {"salt_proxmox": {"owned": {"lab/lxc/150": ROW}}})
    run = Ownership(GrainStore(path))
    assert run.row("lab/lxc/150") is not None
    Ownership(GrainStore(path)).mark_owned("lab/lxc/160", "adhoc-160", {"vmid": 160})
    run.mark_owned("lab/lxc/151", "db", DECLARED)
    assert sorted(GrainStore(path).load()) == ["lab/lxc/150", "lab/lxc/151", "lab/lxc/160"]


def test_the_same_for_the_ownership_file(tmp_path: Path) -> None:
    path = tmp_path / "owned.json"
    run = Ownership(FileStore(path))
    run.mark_owned("lab/lxc/150", "web", DECLARED)
    Ownership(FileStore(path)).mark_owned("lab/lxc/160", "adhoc-160", {"vmid": 160})
    run.mark_owned("lab/lxc/150", "web", DECLARED)
    assert sorted(FileStore(path).load()) == ["lab/lxc/150", "lab/lxc/160"]
    run.mark_owned("lab/lxc/151", "db", DECLARED)
    assert sorted(FileStore(path).load()) == ["lab/lxc/150", "lab/lxc/151", "lab/lxc/160"]


def test_a_failed_write_is_an_error_naming_the_file_and_the_row(tmp_path: Path, monkeypatch) -> None:
    # Salt's grains.setval only logs a failed write ("Unable to write to grains file"), so the row was
    # lost while the state reported success.
    path = grains_file(tmp_path, {"salt_proxmox": {"owned": {"lab/lxc/150": ROW}}})
    ownership = Ownership(GrainStore(path))

    def read_only(*_args, **_kwargs):
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(os, "replace", read_only)
    with pytest.raises(OwnershipFileError) as caught:
        ownership.mark_creating("lab/lxc/151", "db", DECLARED)
    text = str(caught.value)
    assert "lab/lxc/151" in text and "creating" in text and str(path) in text and "Read-only" in text
    assert sorted(p.name for p in tmp_path.iterdir()) == [".grains.lock", "grains"], "no scratch file left"
    monkeypatch.undo()
    assert list(GrainStore(path).load()) == ["lab/lxc/150"], "the old rows stand"


def test_a_grains_file_this_user_may_not_write_is_refused_not_replaced(tmp_path: Path, monkeypatch) -> None:
    # Renaming over a read-only file works whenever the directory is writable; its owner made it
    # read-only, so the store refuses instead (root may write anything: os.access is what is asked).
    path = grains_file(tmp_path, {"roles": ["web"]})
    monkeypatch.setattr(os, "access", lambda p, mode: not (Path(p) == path and mode == os.W_OK))
    with pytest.raises(OwnershipFileError, match="read-only for this user"):
        Ownership(GrainStore(path)).mark_owned("lab/lxc/150", "web", DECLARED)
    assert "salt_proxmox" not in path.read_text()


def test_salt_store_is_made_once_per_run_and_keeps_grains_in_memory_current(tmp_path: Path) -> None:
    (tmp_path / "minion").write_text("id: m\n")
    opts = {"conf_file": str(tmp_path / "minion"), "local": True}
    salt = {"config.get": lambda key, default=None: default}
    context: dict = {}
    grains: dict = {"os": "Debian"}
    store = run_config.salt_store(salt, opts, context, grains)
    assert run_config.salt_store(salt, opts, context, grains) is store
    assert store.path == str(tmp_path / "salt_proxmox_owned.json")
    assert store.grains.path == str(tmp_path / "grains")
    Ownership(store).mark_owned("lab/lxc/150", "web", DECLARED)
    assert grains["salt_proxmox"]["owned"]["lab/lxc/150"]["declared"] == DECLARED
    Ownership(store).mark_owned("lab/lxc/152", "cache", DECLARED)
    Ownership(store).forget("lab/lxc/150")
    assert list(grains["salt_proxmox"]["owned"]) == ["lab/lxc/152"], "each change reaches the grain"
    assert grains["os"] == "Debian"
    refreshed = []
    remote = run_config.salt_store(
        {**salt, "saltutil.refresh_modules": lambda: refreshed.append(1)}, {**opts, "local": False}, {}, {}
    )
    Ownership(remote).mark_owned("lab/lxc/151", "db", DECLARED)
    Ownership(remote).mark_owned("lab/lxc/151", "db", DECLARED)
    assert refreshed == [1], "a minion daemon reloads its grains once per written row, not per state"


def test_the_grains_file_is_where_salt_keeps_it(tmp_path: Path) -> None:
    (tmp_path / "minion").write_text("")
    assert run_config.grains_file({"conf_file": str(tmp_path / "minion")}) == str(tmp_path / "grains")
    assert run_config.grains_file({"conf_file": str(tmp_path)}) == str(tmp_path / "grains")
    proxy = run_config.grains_file({"conf_file": str(tmp_path / "proxy"), "id": "p1"}, proxy=True)
    assert proxy == str(tmp_path / "proxy.d" / "p1" / "grains")


def test_the_ownership_file_when_configured(tmp_path: Path) -> None:
    def config_get(key, default=None):
        return str(tmp_path / "owned.json") if key == run_config.OWNERSHIP_FILE else default

    salt = {"config.get": config_get}
    assert isinstance(run_config.salt_store(salt, {"conf_file": str(tmp_path / "minion")}, {}, {}), FileStore)


def test_a_run_of_n_states_checks_each_row_once_not_n_times(tmp_path: Path, monkeypatch) -> None:
    # Every state asks for the row its state id recorded; scanning every row each time made a run
    # of N states check N×N rows.
    from salt_proxmox.ownership import index, keeper

    owned = {f"lab/lxc/{1000 + n}": {**ROW, "state_id": f"ct{n}"} for n in range(50)}
    path = grains_file(tmp_path, {"salt_proxmox": {"owned": owned}})
    checked = []
    real = keeper.check_row
    for module in (index, keeper):  # the index and the keeper both check the rows they read
        monkeypatch.setattr(module, "check_row", lambda key, row: checked.append(key) or real(key, row))
    store = GrainStore(path)
    for n in range(50):
        # Each state builds its own Ownership over the run's store.
        assert Ownership(store).for_state("lab", "lxc", f"ct{n}")[0] == f"lab/lxc/{1000 + n}"
    assert len(checked) == 50
    ownership = Ownership(store)
    ownership.mark_owned("lab/lxc/2000", "late", DECLARED)  # a write: the next lookup sees it
    assert ownership.for_state("lab", "lxc", "late")[0] == "lab/lxc/2000"
    assert ownership.for_state("lab", "lxc", "nobody") is None


def test_a_malformed_row_of_the_family_is_still_an_error_for_every_state_of_it(tmp_path: Path) -> None:
    from salt_proxmox.ownership.rows import OwnershipCorrupt

    owned = {
        "lab/lxc/150": ROW,
        "lab/lxc/151": {**ROW, "phase": "gone"},
        "lab/pool/p": {**ROW, "state_id": "p"},
    }
    ownership = Ownership(GrainStore(grains_file(tmp_path, {"salt_proxmox": {"owned": owned}})))
    with pytest.raises(OwnershipCorrupt, match="lab/lxc/151"):
        ownership.for_state("lab", "lxc", "web")
    assert ownership.for_state("lab", "pool", "p")[0] == "lab/pool/p"
