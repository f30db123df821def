"""Fixtures of the functional tests, and the wall times of each way printed at the end of the session.

- ``salt_factories_config`` (session): pytest-salt-factories' daemons live in a private temporary
  directory, removed at the end.
- ``estate`` (module): a seeded ServedCluster of its own plus the session's OpenBao holding its tokens
  at ``proxmox/creds``. Module scope, because the master/minion and salt-ssh tests write its config into
  daemon and roster configs once per module.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cluster import ServedCluster
from tests.support.openbao import DevOpenBao, creds_token, publish_cluster
from tests.support.ways import WALL_TIMES, Estate


@pytest.fixture(scope="session")
def salt_factories_config() -> Iterator[dict[str, Path]]:
    """pytest-salt-factories' settings: the daemons' root dirs in a private (0700) temporary directory
    removed after the session. Its default is /tmp itself, world-readable and kept, and a minion config
    there holds the OpenBao token."""
    root = Path(tempfile.mkdtemp(prefix="salt-proxmox-factories-"))
    try:
        yield {"root_dir": root}
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def estate(openbao: DevOpenBao) -> Iterator[Estate]:
    """A seeded cluster for this module, its tokens published in the session's OpenBao."""
    with ServedCluster(time_scale=0.0) as cluster:
        assert cluster.seeded is not None
        client = openbao.client()
        publish_cluster(client, cluster.seeded.read_token, cluster.seeded.provision_token)
        token = creds_token(client)
        secrets = [cluster.seeded.read_token[1], cluster.seeded.provision_token[1], token, openbao.root_token]
        yield Estate(cluster=cluster, bao_url=openbao.url, bao_token=token, secrets=secrets)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not WALL_TIMES:
        return
    terminalreporter.section("salt-proxmox wall times (this machine)")
    for way, what, seconds in WALL_TIMES:
        terminalreporter.write_line(f"{way:<34} {what:<28} {seconds:6.1f} s")
