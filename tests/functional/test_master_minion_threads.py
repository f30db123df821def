"""A minion daemon that runs each job in a thread of its main process (``multiprocessing: False``),
driven by a master: the apply's one grain reload, awaited by the job's thread while the daemon's
main loop performs it, neither deadlocks nor leaves the grain behind the rows file.

With ``multiprocessing: False`` a state run works on a deep copy of the daemon's options (Salt 3008
``salt/modules/state.py``, ``salt.utils.state.get_sls_opts``), so the rows the run writes reach
the grain the daemon serves only through the reload, as they do from a forked job.
"""

from __future__ import annotations

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
    formula_master,
    module_reloads,
    owned_phases,
    plan_apply_plan,
    started,
)

pytestmark = pytest.mark.functional

WAY = "master + minion (threads)"
# Seconds the salt CLI waits for the minion's return.
JOB_TIMEOUT = 120


@pytest.fixture(scope="module")
def master(salt_factories: Any) -> Iterator[Any]:
    with formula_master(salt_factories, WAY) as factory:
        yield factory


@pytest.fixture(scope="module")
def minion(master: Any, estate: Estate) -> Iterator[Any]:
    factory = master.salt_minion_daemon(
        random_string("pve-threads-"),
        overrides={
            "proxmox": estate.proxmox_config(),
            "openbao": estate.openbao_config(),
            "multiprocessing": False,
        },
    )
    with started(WAY, "start salt-minion", factory):
        yield factory


def test_a_threaded_minion_reloads_the_grain_once_and_shows_every_row(
    master: Any, minion: Any, estate: Estate
) -> None:
    salt = master.salt_cli(timeout=JOB_TIMEOUT)
    reloads = []

    def run(test: bool) -> tuple[Any, str]:
        args = ["state.apply", "proxmox"] + (["test=True"] if test else [])
        before = module_reloads(minion)
        ret = salt.run(*args, minion_tgt=minion.id)
        reloads.append(module_reloads(minion) - before)
        assert isinstance(ret.data, dict), f"no state return: {ret.stdout}\n{ret.stderr}"
        return ret.data, ret.stdout + ret.stderr

    plan_apply_plan(estate, WAY, run)
    assert reloads == [0, 1, 0]
    reported = salt.run("grains.get", "salt_proxmox:owned", minion_tgt=minion.id)
    assert owned_phases(reported.data) == dict.fromkeys(OWNED_ROWS, "owned")
    assert reported.data == FileStore(Path(minion.config_dir) / ROWS_FILE).load()
