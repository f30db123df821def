"""Fixtures shared by every test: the seeded fake PVE cluster and a dev OpenBao holding its API tokens.

- ``cluster`` (session): one ServedCluster for the session; its state carries over between tests, so use it
  for reads and for changes a test undoes.
- ``fresh_cluster`` (function): a newly seeded ServedCluster for one test, with new token secrets. Its
  fakepve ``time_scale`` is 0 unless the test says ``@pytest.mark.pve_time_scale(0.01)``.
- ``openbao`` (session): a started DevOpenBao with the ``salt-proxmox-creds`` policy written.
- ``bao_creds`` (function, on ``fresh_cluster``) and ``cluster_bao_creds`` (function, on ``cluster``):
  publish that cluster's tokens as ``proxmox/creds/read`` and ``proxmox/creds/provision`` and return
  ``{"url": "http://127.0.0.1:PORT", "token": <child token that may read them>, "path": "proxmox/creds"}``.
  Each republishes, so the creds in OpenBao always match the cluster the test was given.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from tests.support.cluster import ServedCluster
from tests.support.openbao import (
    CREDS_PATH,
    CREDS_POLICY,
    CREDS_POLICY_HCL,
    DevOpenBao,
    creds_token,
    publish_cluster,
    write_policy,
)
from tests.support.pbs import ServedPbs

#: The run's tmp_path root: private, and removed when the run ends (tests/support/tmpdirs.py).
pytest_plugins = ["tests.support.tmpdirs"]


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    """Register the suite's marker; keep pytest-salt-factories' log server on loopback if it is loaded."""
    config.addinivalue_line(
        "markers", "pve_time_scale(scale): fakepve time_scale of the fresh_cluster fixture (default 0)"
    )
    server = config.pluginmanager.get_plugin("saltfactories-log-server")
    if server is not None:
        server.log_host = "127.0.0.1"


def pytest_unconfigure(config: pytest.Config) -> None:
    """Salt's log handlers flush to pytest's captured streams after they are closed, at exit; keep
    that from printing "--- Logging error ---" tracebacks after the test summary."""
    logging.raiseExceptions = False


@pytest.fixture(scope="session")
def event_listener() -> Iterator[object]:
    """pytest-salt-factories' event listener (an autouse fixture of that plugin starts it for every test),
    bound to loopback: its default host is 0.0.0.0. The daemons it starts send their events to its host."""
    from saltfactories.plugins.event_listener import EventListener

    listener = EventListener()
    listener.host = "127.0.0.1"
    listener.address = f"tcp://{listener.host}:{listener.port}"
    with listener:
        yield listener


@pytest.fixture(scope="session")
def cluster() -> Iterator[ServedCluster]:
    """The session's seeded fake PVE cluster (time_scale 0)."""
    with ServedCluster(time_scale=0.0) as served:
        yield served


@pytest.fixture
def fresh_cluster(request: pytest.FixtureRequest) -> Iterator[ServedCluster]:
    """A seeded fake PVE cluster for this test alone; ``@pytest.mark.pve_time_scale(x)`` sets time_scale."""
    marker = request.node.get_closest_marker("pve_time_scale")
    time_scale = float(marker.args[0]) if marker else 0.0
    with ServedCluster(time_scale=time_scale) as served:
        yield served


@pytest.fixture
def fresh_pbs() -> Iterator[ServedPbs]:
    """A seeded fake Proxmox Backup Server (tests.support.pbs) for this test alone."""
    with ServedPbs() as served:
        yield served


@pytest.fixture(scope="session")
def openbao() -> Iterator[DevOpenBao]:
    """The session's OpenBao dev server, with the policy that lets a token read ``proxmox/creds/*``."""
    with DevOpenBao() as bao:
        write_policy(bao.client(), CREDS_POLICY, CREDS_POLICY_HCL)
        yield bao


def _publish(served: ServedCluster, bao: DevOpenBao) -> dict[str, str]:
    """Publish served's tokens in bao; the answer the two bao_creds fixtures give."""
    assert served.seeded is not None
    client = bao.client()
    publish_cluster(client, served.seeded.read_token, served.seeded.provision_token)
    return {"url": bao.url, "token": creds_token(client), "path": CREDS_PATH}


@pytest.fixture
def bao_creds(fresh_cluster: ServedCluster, openbao: DevOpenBao) -> dict[str, str]:
    """OpenBao holding fresh_cluster's tokens: ``{"url", "token", "path": "proxmox/creds"}``."""
    return _publish(fresh_cluster, openbao)


@pytest.fixture
def cluster_bao_creds(cluster: ServedCluster, openbao: DevOpenBao) -> dict[str, str]:
    """OpenBao holding the session cluster's tokens: ``{"url", "token", "path": "proxmox/creds"}``."""
    return _publish(cluster, openbao)
