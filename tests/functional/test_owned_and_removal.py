"""Removal and ownership through ``salt-call --local``, as an operator runs them on the example estate:
a pool emptied and deleted in one apply, a destroy plan naming the volumes it deletes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from tests.support.saltrun import PILLAR, salt_call, state_rows, write_minion_config

pytestmark = pytest.mark.functional


def _pillar(tmp_path: Path, change=None) -> Path:
    """A copy of pillar_examples, edited by ``change(data)``."""
    root = tmp_path / "pillar"
    root.mkdir(exist_ok=True)
    for name in ("top.sls", "secrets.sls"):
        shutil.copy(PILLAR / name, root / name)
    data = yaml.safe_load((PILLAR / "proxmox.sls").read_text())
    if change is not None:
        change(data)
    (root / "proxmox.sls").write_text(yaml.safe_dump(data))
    return root


def _configure(config_dir: Path, cluster, bao_creds, tmp_path: Path, change=None) -> None:
    write_minion_config(
        config_dir,
        cluster.url,
        cluster.cafile,
        openbao=bao_creds,
        pillar_roots=[str(_pillar(tmp_path, change))],
    )


def _applied(config_dir: Path) -> dict[str, dict]:
    ret, raw = salt_call(config_dir, "state.apply", "proxmox")
    rows = {row["id"]: row for row in state_rows(ret)}
    assert all(row["result"] is True for row in rows.values()), raw
    return rows


def test_a_pool_emptied_and_deleted_in_one_apply(fresh_cluster, bao_creds, tmp_path):
    """Container web leaves pool prod (``pool: ''``) and prod is declared absent with ``removal:
    destroy`` in the same pillar change: the plan deletes the pool (it knows web moves out first), and
    one apply does both. PVE deletes only an empty pool (pve-manager ``PVE/API2/Pool.pm``
    ``delete_pool``), so the pool's state runs after the guests'."""
    config_dir = tmp_path / "etc"
    _configure(config_dir, fresh_cluster, bao_creds, tmp_path)
    _applied(config_dir)
    assert fresh_cluster.pve.pools["prod"] == {150}, "web is in prod"

    def change(data):
        data["proxmox"]["lxc"]["web"]["pool"] = ""
        data["proxmox"]["pools"]["prod"] = {"ensure": "absent", "removal": "destroy"}

    _configure(config_dir, fresh_cluster, bao_creds, tmp_path, change)
    plan, raw = salt_call(config_dir, "state.apply", "proxmox", "test=True")
    rows = {row["id"]: row for row in state_rows(plan)}
    assert rows["proxmox-pool-prod"]["result"] is None, raw
    assert rows["proxmox-pool-prod"]["changes"] == {"deleted": {"old": "pool prod", "new": None}}
    assert rows["proxmox-lxc-web"]["changes"]["pool"] == {"old": "prod", "new": None}
    order = list(rows)
    assert order.index("proxmox-lxc-web") < order.index("proxmox-pool-prod"), "members move out first"

    done = _applied(config_dir)
    assert done["proxmox-pool-prod"]["changes"] == {"deleted": {"old": "pool prod", "new": None}}
    assert "prod" not in fresh_cluster.pve.pools
    again, raw = salt_call(config_dir, "state.apply", "proxmox", "test=True")
    assert all(row["result"] is True and not row["changes"] for row in state_rows(again)), raw
