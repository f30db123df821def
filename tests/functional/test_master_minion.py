"""A real salt-master and salt-minion (pytest-salt-factories, loopback only): the master serves the
formula (``formula/``) and the example pillar (``pillar_examples/``); the minion holds the target and
OpenBao config and finds the modules through the package's ``salt.loader`` entry point. The master
runs plan, apply and plan again on the minion against a fake cluster with creds from OpenBao.

The daemons start once for the module (about 10 s on 2 cores).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from saltfactories.utils import random_string

from salt_proxmox.ownership.files import FileStore
from salt_proxmox.ownership.stores import ROWS_FILE
from tests.support.ways import (
    OWNED_ROWS,
    Estate,
    assert_no_secret,
    formula_master,
    module_reloads,
    owned_phases,
    plan_apply_plan,
    started,
    text_files,
)

pytestmark = pytest.mark.functional

WAY = "master + minion"
# Seconds the salt CLI waits for the minion's return.
JOB_TIMEOUT = 120


@pytest.fixture(scope="module")
def master(salt_factories: Any) -> Iterator[Any]:
    with formula_master(salt_factories, WAY) as factory:
        yield factory


@pytest.fixture(scope="module")
def minion(master: Any, estate: Estate) -> Iterator[Any]:
    factory = master.salt_minion_daemon(
        random_string("pve-minion-"),
        overrides={"proxmox": estate.proxmox_config(), "openbao": estate.openbao_config()},
    )
    with started(WAY, "start salt-minion", factory):
        yield factory


def test_plan_apply_plan_from_the_master(master: Any, minion: Any, estate: Estate) -> None:
    salt = master.salt_cli(timeout=JOB_TIMEOUT)
    reloads = []

    def run(test: bool) -> tuple[Any, str]:
        args = ["state.apply", "proxmox"] + (["test=True"] if test else [])
        before = module_reloads(minion)
        ret = salt.run(*args, minion_tgt=minion.id)
        reloads.append(module_reloads(minion) - before)
        assert isinstance(ret.data, dict), f"no state return: {ret.stdout}\n{ret.stderr}"
        return ret.data, ret.stdout + ret.stderr

    outputs = plan_apply_plan(estate, WAY, run)

    # The apply wrote a row per object it made and two per guest created, yet the daemon reloaded
    # its grains once, after the run's last state; neither plan had a grain to bring up to date.
    assert reloads == [0, 1, 0]

    # The ownership rows are grains on the minion: in its rows file and in what it reports, every
    # row of the file, as the apply's return reached the master after that one reload.
    grains_file = Path(minion.config_dir) / ROWS_FILE
    reported = salt.run("grains.get", "salt_proxmox:owned", minion_tgt=minion.id)
    assert owned_phases(reported.data) == dict.fromkeys(OWNED_ROWS, "owned")
    assert reported.data == FileStore(grains_file).load()
    everything = salt.run("grains.items", minion_tgt=minion.id)
    texts = {f"run {n}": out for n, out in enumerate(outputs)}
    texts["grains.items"] = json.dumps(everything.data)
    # Every file either daemon wrote: logs, caches, job returns, the rows file. The minion's config
    # holds the OpenBao token by design.
    texts |= text_files(minion.config["root_dir"], skip=(Path(minion.config["conf_file"]),))
    texts |= text_files(master.config["root_dir"])
    assert str(grains_file) in texts and any(name.endswith("minion.log") for name in texts)
    assert_no_secret(texts, estate.secrets)
    assert "proxmox/creds" not in texts[str(grains_file)]
