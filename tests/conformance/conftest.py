"""Fixtures of the conformance suite: a minion (``SaltWorld``) on a fresh fake cluster, with the OpenBao
dev server the policy family writes to, and a wire tap on every HTTP request the process sends."""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest
import requests

from salt_proxmox.registry import FAMILIES
from tests.conformance.contract import CLUSTER_FOR, LANE, ON_DISK, disk_state, disk_writes
from tests.conformance.examples import SECRETS_PILLAR, examples_of
from tests.faults.harness import debug_log
from tests.support.cluster import ServedCluster
from tests.support.guests import requests_since, static_targets
from tests.support.openbao import DevOpenBao
from tests.support.pbs import ServedPbs, pbs_targets, requests_of
from tests.support.pvesh import write_fake_pvesh
from tests.support.saltworld import Low, SaltWorld

#: A proxy's page for an answer lost after the request reached its server (nginx's 502).
LOST_PAGE = b"<html><body><h1>502 Bad Gateway</h1></body></html>"


@dataclass
class Tap:
    """Every request this process sends through ``requests`` to OpenBao (``bao``), logged as fakepve logs
    PVE's: ``(method, path, body)``; and answers to replace: ``faults`` maps ``(method or None, path
    suffix)`` to ``(status, body, reach)`` — with ``reach`` the request still reaches the server first
    (its answer is lost), else it never leaves."""

    bao: str = ""
    log: list[tuple[str, str, Any]] = field(default_factory=list)
    faults: list[tuple[Callable[[str, str], bool], int, bytes, bool]] = field(default_factory=list)

    def send(self, original, session, prepared, **kwargs):
        method = prepared.method
        path = unquote(urlsplit(prepared.url).path)
        if self.bao and prepared.url.startswith(self.bao):
            self.log.append((method, path, prepared.body))
        for index, (match, status, body, reach) in enumerate(self.faults):
            if match(method, path):
                response = original(session, prepared, **kwargs) if reach else requests.Response()
                response.status_code, response._content = status, body
                response.headers["Content-Type"] = "text/html"
                response.request, response.url = prepared, prepared.url
                if reach:
                    del self.faults[index]
                return response
        return original(session, prepared, **kwargs)


@dataclass
class Minion:
    """A minion on ``cluster``: ``world`` (modules, states, ``__context__``, rows file), the wire ``tap``,
    the ``secrets`` in play, and the log lines at DEBUG of everything it ran (``lines``)."""

    cluster: ServedCluster
    world: SaltWorld
    tap: Tap
    secrets: list[str] = field(repr=False)
    lines: list[str] = field(default_factory=list, repr=False)
    #: The PBS target's fake (``proxmox:pbs_targets``), for the PBS families.
    pbs: ServedPbs | None = None
    #: Where a family writing on the lane's node writes (``contract.ON_DISK``), else None.
    disk: Path | None = None
    #: Whether the target has the fake root lane (``contract.ON_DISK``, ``contract.LANE``).
    lane: bool = False

    def mark(self) -> tuple[int, int, int, dict]:
        pbs = len(self.pbs.pbs.requests) if self.pbs is not None and self.pbs.pbs is not None else 0
        files = disk_state(self.disk) if self.disk is not None else {}
        return len(self.cluster.pve.requests), len(self.tap.log), pbs, files

    def log_since(self, mark: tuple[int, int, int, dict]) -> list[tuple[str, str, Any]]:
        """PVE's, PBS's and OpenBao's requests since ``mark``: (method, path, body); and the files
        written on the lane's node (``contract.disk_writes``)."""
        pbs = requests_of(self.pbs, mark[2]) if self.pbs is not None else []
        pve = requests_since(self.cluster, mark[0])
        files = []
        if self.lane:
            # The fake pvesh logs in (a real pvesh runs as root@pam and sends nothing: PVE/CLI/pvesh.pm).
            pve = [(m, p, b) for m, p, b in pve if (m, p) != ("POST", "/access/ticket")]
        if self.disk is not None:
            files = disk_writes(mark[3], disk_state(self.disk))
        return [*pve, *pbs, *self.tap.log[mark[1] :], *files]

    def run(self, lows: list[Low], test: bool) -> tuple[list[dict], list[tuple[str, str, Any]]]:
        """One state run: its returns and the requests it sent."""
        mark = self.mark()
        with debug_log() as lines:
            returns = self.world.run(lows, test)
        self.lines += lines
        return returns, self.log_since(mark)

    def rows(self) -> str:
        path = self.world.rows_file
        return path.read_text() if path.exists() else ""


@pytest.fixture
def minion(
    fresh_cluster: ServedCluster, openbao: DevOpenBao, tmp_path: Path, monkeypatch, request
) -> Iterator[Minion]:
    """A minion on a fresh cluster and a fresh PBS (``proxmox:pbs_targets``) with static credentials,
    OpenBao's dev server as its ``openbao:``; the cluster as the test's family needs it
    (``contract.CLUSTER_FOR``)."""
    params = getattr(getattr(request.node, "callspec", None), "params", {})
    tested = params.get("family") or getattr(params.get("case"), "family", None)
    prepare = CLUSTER_FOR.get(getattr(tested, "name", ""))
    if prepare is not None:
        prepare(fresh_cluster.pve)
    on_disk = ON_DISK.get(getattr(tested, "name", ""))
    disk = on_disk(fresh_cluster.pve, tmp_path) if on_disk is not None else None
    tap = Tap(bao=openbao.url)
    original = requests.Session.send
    monkeypatch.setattr(
        requests.Session, "send", lambda session, prepared, **kw: tap.send(original, session, prepared, **kw)
    )
    pbs = ServedPbs().start()
    request.addfinalizer(pbs.stop)
    targets = static_targets(fresh_cluster)
    lane = disk is not None or getattr(tested, "name", "") in LANE
    if lane:
        pvesh = write_fake_pvesh(fresh_cluster, tmp_path / "fake-pvesh")
        for target in targets.values():
            target["root_lane"] = {"via": "pvesh", "pvesh": str(pvesh)}
    config = {
        "proxmox": {"targets": targets, "pbs_targets": pbs_targets(pbs)},
        "openbao": {"url": openbao.url, "auth": {"method": "token", "token": openbao.root_token}},
    }
    world = SaltWorld(config, copy.deepcopy(SECRETS_PILLAR), tmp_path / "salt_proxmox_owned.json")
    root = openbao.client()
    for family in FAMILIES:
        if family.module == "openbao":  # the session's OpenBao outlives a test: start without the example
            root.sys.delete_policy(str(examples_of(family.kinds[0].name).create["name"]))
    seeded = fresh_cluster.seeded
    secrets = [seeded.read_token[1], seeded.provision_token[1], openbao.root_token]
    secrets += [pbs.read_token[1], pbs.provision_token[1]]
    secrets += [value for entry in SECRETS_PILLAR["conformance"].values() for value in entry.values()]
    logging.getLogger().setLevel(logging.DEBUG)
    yield Minion(fresh_cluster, world, tap, secrets, pbs=pbs, disk=disk, lane=lane)
