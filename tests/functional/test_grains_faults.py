"""Ownership rows and credentials under faults, through a real ``salt-call --local state.apply``:
a rows file that cannot be written or parsed fails the state naming it (Salt's ``grains.setval``
only logged a failed write and skipped an unparseable grains file, so rows were lost or guests
called foreign); rows an earlier version kept in the grains file stay ours and move to the rows
file; and a secret with a trailing newline is refused before any request and shows in no file the
run left behind."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from salt_proxmox.ownership.files import FileStore
from salt_proxmox.ownership.stores import ROWS_FILE
from tests.support.guests import requests_since, writes
from tests.support.saltrun import salt_call, state_rows, write_minion_config
from tests.support.ways import assert_no_secret, text_files

pytestmark = pytest.mark.functional

PILLAR = """
proxmox:
  lxc:
    web:
      vmid: 150
      node: pve1
      ostemplate: local:vztmpl/debian-13-standard_13.0-1_amd64.tar.zst
      unprivileged: true
      hostname: web
      rootfs: local-zfs:8
      net0: name=eth0,bridge=vmbr0,ip=dhcp
"""


def minion(tmp_path: Path, cluster, secret_suffix: str = "") -> Path:
    """A masterless minion whose pillar declares CT 150 (with a NIC, whose MAC PVE draws: the row's
    fingerprint tells it from a container made again at its vmid) and whose static tokens end in
    ``secret_suffix``."""
    pillar = tmp_path / "pillar"
    pillar.mkdir()
    (pillar / "top.sls").write_text("base:\n  '*':\n    - proxmox\n")
    (pillar / "proxmox.sls").write_text(PILLAR)
    seeded = cluster.seeded
    static = {
        role: {"token_id": token[0], "secret": token[1] + secret_suffix}
        for role, token in (("read", seeded.read_token), ("provision", seeded.provision_token))
    }
    config_dir = tmp_path / "etc"
    write_minion_config(config_dir, cluster.url, cluster.cafile, static=static, pillar_roots=[str(pillar)])
    return config_dir


def apply(config_dir: Path) -> tuple[dict, str]:
    ret, raw = salt_call(config_dir, "state.apply", "proxmox")
    (row,) = [row for row in state_rows(ret) if row["function"] == "proxmox_lxc.present"]
    return row, raw


def chattr(flag: str, path: Path) -> bool:
    if shutil.which("chattr") is None:
        return False
    return subprocess.run(["chattr", flag, str(path)], capture_output=True).returncode == 0


def test_an_unwritable_rows_file_fails_the_apply_naming_it_and_sends_nothing(fresh_cluster, tmp_path):
    config_dir = minion(tmp_path, fresh_cluster)
    rows = config_dir / ROWS_FILE
    rows.write_text('{"owned": {}}\n')
    # Immutable: no process may write, rename over or remove it, root included (EPERM), as on a
    # read-only filesystem.
    if not chattr("+i", rows):
        pytest.skip("this filesystem cannot mark a file immutable (chattr +i)")
    try:
        start = len(fresh_cluster.pve.requests)
        row, _ = apply(config_dir)
    finally:
        chattr("-i", rows)
    assert row["result"] is False, row["comment"]
    assert f"ownership row demo/lxc/150 was not set to creating: {rows}" in row["comment"]
    assert writes(requests_since(fresh_cluster, start)) == [], "the create is not sent without its row"
    assert fresh_cluster.pve.ct(150) is None
    assert rows.read_text() == '{"owned": {}}\n'


def test_an_unparseable_rows_file_is_named_never_read_as_not_ours(fresh_cluster, tmp_path):
    config_dir = minion(tmp_path, fresh_cluster)
    row, _ = apply(config_dir)
    assert row["result"] is True, row["comment"]
    rows = config_dir / ROWS_FILE
    rows.write_text(rows.read_text() + "broken: [unclosed\n{}\n")
    start = len(fresh_cluster.pve.requests)
    row, _ = apply(config_dir)
    assert row["result"] is False
    assert f"{rows}: line" in row["comment"], row["comment"]
    assert "did not create it" not in row["comment"]
    assert writes(requests_since(fresh_cluster, start)) == []


def test_the_rows_show_in_grains_and_a_no_drift_apply_leaves_the_rows_file_alone(fresh_cluster, tmp_path):
    config_dir = minion(tmp_path, fresh_cluster)
    assert apply(config_dir)[0]["result"] is True
    owned, _ = salt_call(config_dir, "grains.get", "salt_proxmox:owned")
    assert owned["demo/lxc/150"]["phase"] == "owned" and owned["demo/lxc/150"]["state_id"] == "web"
    rows = config_dir / ROWS_FILE
    before = rows.stat()
    row, _ = apply(config_dir)
    assert row["result"] is True and row["changes"] == {}, row["comment"]
    after = rows.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (
        before.st_ino,
        before.st_size,
        before.st_mtime_ns,
    )
    assert not (config_dir / "grains").exists(), "the grains file is not written either"


def test_rows_an_earlier_version_kept_in_the_grains_file_stay_ours_and_move_out(fresh_cluster, tmp_path):
    config_dir = minion(tmp_path, fresh_cluster)
    assert apply(config_dir)[0]["result"] is True
    rows = FileStore(config_dir / ROWS_FILE).load()
    # As an earlier version left them: the rows in the grains file, no rows file.
    grains = config_dir / "grains"
    grains.write_text(yaml.safe_dump({"roles": ["pve"], "salt_proxmox": {"owned": rows}}))
    (config_dir / ROWS_FILE).unlink()
    owned, _ = salt_call(config_dir, "grains.get", "salt_proxmox:owned")
    assert owned == rows, "Salt shows them from the grains file"
    start = len(fresh_cluster.pve.requests)
    ret, _ = salt_call(config_dir, "state.apply", "proxmox", "test=True")
    (row,) = state_rows(ret)
    assert row["result"] is True and row["changes"] == {}, row["comment"]
    assert not (config_dir / ROWS_FILE).exists(), "a plan moves nothing"
    (pillar,) = (tmp_path / "pillar").glob("proxmox.sls")
    pillar.write_text(pillar.read_text() + "      memory: 1024\n")
    row, _ = apply(config_dir)
    assert row["result"] is True and row["changes"], row["comment"]
    assert writes(requests_since(fresh_cluster, start)) != [] and "adopt" not in row["comment"]
    assert (
        FileStore(config_dir / ROWS_FILE).load()["demo/lxc/150"]["instance"]
        == rows["demo/lxc/150"]["instance"]
    )
    assert yaml.safe_load(grains.read_text()) == {"roles": ["pve"]}, "moved out, other grains kept"
    owned, _ = salt_call(config_dir, "grains.get", "salt_proxmox:owned")
    assert set(owned) == {"demo/lxc/150"}


def test_a_secret_with_a_trailing_newline_is_refused_and_shows_in_no_file(fresh_cluster, tmp_path):
    config_dir = minion(tmp_path, fresh_cluster, secret_suffix="\n")
    start = len(fresh_cluster.pve.requests)
    row, raw = apply(config_dir)
    assert row["result"] is False
    assert "credentials:read: secret holds a line break" in row["comment"], row["comment"]
    assert requests_since(fresh_cluster, start) == [], "refused before any request"
    seeded = fresh_cluster.seeded
    secrets = [seeded.read_token[1], seeded.provision_token[1]]
    # Every file the run left: the minion log at debug level, Salt's caches and job returns, grains.
    # The minion config holds the secrets by design.
    files = text_files(config_dir, skip=(config_dir / "minion",))
    assert any(name.endswith("minion.log") for name in files)
    assert_no_secret({**files, "salt-call output": raw}, secrets)
