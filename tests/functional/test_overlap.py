"""Guest creates that overlap within one ``salt-call --local state.apply`` (``salt_proxmox.run.overlap``,
docs/design.md §5c), run for real: Salt forks the states the formula marks ``parallel`` (Salt
``salt/state.py`` ``State.call_parallel``) and the product bounds them with task slots.

Not timed: each test counts what PVE saw (tasks at once per node and overall, requests, writes) and
what the rows file holds, line by line."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from salt_proxmox.ownership.files import FileStore
from salt_proxmox.ownership.stores import ROWS_FILE, OwnershipFileError
from tests.support.cluster import ServedCluster
from tests.support.guests import TARGET, declaration, static_targets
from tests.support.overlap import TaskPeaks, request_counts, rows_problem
from tests.support.saltrun import salt_call, state_rows, write_minion_config

pytestmark = pytest.mark.functional


def _pillar(root: Path, guests: dict[str, dict[str, Any]]) -> Path:
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    (root / "top.sls").write_text(yaml.safe_dump({"base": {"*": ["proxmox"]}}))
    (root / "proxmox.sls").write_text(yaml.safe_dump({"proxmox": {"lxc": guests}}))
    return root


def _container(vmid: int, node: str, **over: Any) -> dict[str, Any]:
    return declaration(vmid=vmid, node=node, mp0=None, **over)


def _minion(
    tmp_path: Path,
    cluster: ServedCluster,
    guests: dict,
    bounds: dict[str, int],
    bao: dict | None = None,
) -> Path:
    """A masterless minion for ``cluster`` (OpenBao credentials with ``bao``, else static ones) declaring
    ``guests``, its target's ``task_concurrency`` keys set from ``bounds``."""
    config_dir = tmp_path / "etc"
    if bao is not None:
        write_minion_config(
            config_dir,
            cluster.url,
            cluster.cafile,
            openbao=bao,
            target=TARGET,
            pillar_roots=[str(_pillar(tmp_path / "p", guests))],
        )
    else:
        credentials = static_targets(cluster)[TARGET]["credentials"]
        write_minion_config(
            config_dir,
            cluster.url,
            cluster.cafile,
            static={key: credentials[key] for key in ("read", "provision")},
            target=TARGET,
            pillar_roots=[str(_pillar(tmp_path / "p", guests))],
        )
    path = config_dir / "minion"
    config = yaml.safe_load(path.read_text())
    ((_name, target),) = config["proxmox"]["targets"].items()
    target.update(bounds)
    path.write_text(yaml.safe_dump(config))
    return config_dir


def _rows(config_dir: Path) -> dict[str, dict]:
    return {row["id"]: row for row in state_rows(salt_call(config_dir, "state.apply", "proxmox")[0])}


GUESTS = {f"ct{vmid}": _container(vmid, "pve1" if vmid % 2 else "pve2") for vmid in range(3001, 3008)}


def test_creates_overlap_within_their_bounds_with_the_requests_writes_and_rows_of_a_sequential_apply(
    tmp_path,
):
    """Seven creates on two nodes with ``task_concurrency: 3`` and ``task_concurrency_per_node: 2``: the
    create tasks overlap (more than one at once) and never exceed 3 overall nor 2 on a node; every state
    succeeds; the rows file takes each container through creating, its UPID and owned, one whole line
    each; and PVE sees the same requests (task polls aside) and the same writes as the same apply with
    ``task_concurrency: 1``, which never runs two tasks at once. The plan names the bound."""
    seen = {}
    for bounds in ({"task_concurrency": 3, "task_concurrency_per_node": 2}, {}):
        work = tmp_path / ("overlapped" if bounds else "sequential")
        with ServedCluster(time_scale=0.05) as cluster:
            assert cluster.pve is not None
            cluster.pve.ct_secs["create"] = 20  # 1 s each
            peaks = TaskPeaks(cluster.pve, "vzcreate")
            config_dir = _minion(work, cluster, GUESTS, bounds)
            plan = state_rows(salt_call(config_dir, "state.apply", "proxmox", "test=True")[0])
            lines = [row["comment"] for row in plan]
            named = [
                line for line in lines if "at most 3 at once on lab, 2 per node (task_concurrency)" in line
            ]
            assert len(named) == (len(GUESTS) if bounds else 0), lines
            first = [line for line in named if "created first, alone" in line]
            assert [line.partition(":")[0] for line in first] == (["CT 3001 on pve1"] if bounds else []), (
                named
            )
            start = len(cluster.pve.requests)
            rows = _rows(config_dir)
            assert len(rows) == len(GUESTS) and all(row["result"] is True for row in rows.values()), rows
            problem = rows_problem(
                config_dir / ROWS_FILE, [f"{TARGET}/lxc/{vmid}" for vmid in range(3001, 3008)]
            )
            assert not problem, problem
            requests = [(method, path) for method, path, _body in cluster.pve.requests[start:]]
            seen[bool(bounds)] = (request_counts(requests), peaks)
    (overlapped, peaks), (sequential, one_by_one) = seen[True], seen[False]
    assert one_by_one.peak == 1
    assert 1 < peaks.peak <= 3, "the creates overlap, never more than task_concurrency at once"
    assert max(peaks.node_peak.values()) <= 2, f"task_concurrency_per_node: {dict(peaks.node_peak)}"
    assert overlapped == sequential, set(overlapped.items()) ^ set(sequential.items())


def test_a_failing_create_fails_its_own_state_and_stops_only_what_requires_it(
    fresh_cluster, bao_creds, tmp_path
):
    """With ``task_concurrency: 4`` and credentials minted from OpenBao in every forked state: the create
    task of the only container on pve1 ends in error (PVE's own ``TASK ERROR``). That state fails with the
    task's message; its snapshot, which requires it, fails as Salt's requisite failure without a
    snapshot request reaching PVE; the other creates and the snapshot of another container succeed, and
    the failed create leaves no row (the row it wrote is put back: pve-container ``create_vm`` removes
    what a failed create made)."""
    guests = {
        "ct3101": _container(3101, "pve2"),
        "ct3102": _container(3102, "pve1", snapshots=[{"snapname": "before"}]),
        "ct3103": _container(3103, "pve2"),
        "ct3104": _container(3104, "pve2", snapshots=[{"snapname": "before"}]),
    }
    fresh_cluster.pve.time_scale = 0.05
    fresh_cluster.pve.ct_secs["create"] = 20  # 1 s each
    peaks = TaskPeaks(fresh_cluster.pve, "vzcreate")
    fresh_cluster.pve.fail("POST", "/nodes/pve1/lxc", error="no_lock_found_trying_remove")
    config_dir = _minion(tmp_path, fresh_cluster, guests, {"task_concurrency": 4}, bao=bao_creds)
    start = len(fresh_cluster.pve.requests)
    rows = _rows(config_dir)
    assert rows["proxmox-lxc-ct3102"]["result"] is False
    assert "no lock found trying to remove" in rows["proxmox-lxc-ct3102"]["comment"]
    assert rows["proxmox-snapshot-ct3102-before"]["result"] is False
    assert "requisite" in rows["proxmox-snapshot-ct3102-before"]["comment"].lower()
    for ok in (
        "proxmox-lxc-ct3101",
        "proxmox-lxc-ct3103",
        "proxmox-lxc-ct3104",
        "proxmox-snapshot-ct3104-before",
    ):
        assert rows[ok]["result"] is True, rows[ok]
    sent = [(method, path) for method, path, _body in fresh_cluster.pve.requests[start:] if method != "GET"]
    assert not [entry for entry in sent if "/3102/snapshot" in entry[1]], sent
    assert [entry for entry in sent if "/3104/snapshot" in entry[1]], sent
    assert peaks.peak > 1, "the creates overlapped"
    owned = json.loads(_owned_json(config_dir))
    assert f"{TARGET}/lxc/3102" not in owned
    assert {f"{TARGET}/lxc/{vmid}" for vmid in (3101, 3103, 3104)} <= set(owned)


def _owned_json(config_dir: Path) -> str:
    """The rows as ``proxmox.owned`` reads them: ``{row key: row}``, as JSON."""
    return json.dumps(FileStore(config_dir / ROWS_FILE).load())


def test_a_killed_overlapping_apply_leaves_rows_the_next_apply_resolves(tmp_path):
    """An apply whose creates overlap is killed (SIGKILL to salt-call and every process it forked) while
    its create tasks run: the rows file still parses, and the rows it left ``creating`` are finished by
    the next apply, which ties each guest to its own create task, sends no second create, and leaves
    every container owned."""
    guests = {f"ct{vmid}": _container(vmid, "pve1" if vmid % 2 else "pve2") for vmid in range(3201, 3206)}
    with ServedCluster(time_scale=0.1) as cluster:
        assert cluster.pve is not None
        cluster.pve.ct_secs["create"] = 50  # 5 s each
        config_dir = _minion(tmp_path, cluster, guests, {"task_concurrency": 4})
        rows_file = config_dir / ROWS_FILE
        command = [
            str(Path(sys.executable).parent / "salt-call"),
            "--local",
            "-c",
            str(config_dir),
            "--out=json",
            "--log-level=quiet",
            "state.apply",
            "proxmox",
        ]
        proc = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )
        try:
            # Killed while two creates or more are under way at once (their rows creating, with a UPID).
            deadline, under_way = time.monotonic() + 60, []
            while len(under_way) < 2:
                assert time.monotonic() < deadline, f"no two creates were under way at once: {under_way}"
                time.sleep(0.05)
                with contextlib.suppress(OwnershipFileError):
                    rows = FileStore(rows_file).load()
                    under_way = [
                        key for key, row in rows.items() if row["phase"] == "creating" and row.get("upid")
                    ]
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        left = FileStore(rows_file).load()
        creating = sorted(key for key, row in left.items() if row["phase"] == "creating")
        assert creating, left
        # PVE finishes what it started; the next apply ties each guest to its own create.
        deadline = time.monotonic() + 60
        while any(task["status"] == "running" for task in cluster.pve.tasks.values()):
            assert time.monotonic() < deadline, "fakepve's tasks did not end"
            time.sleep(0.1)
        existing = {vmid for vmid in range(3201, 3206) if cluster.pve.guest(vmid) is not None}
        start = len(cluster.pve.requests)
        rows = _rows(config_dir)
        assert all(row["result"] is True for row in rows.values()), rows
        created = {
            int(body["vmid"])
            for method, path, body in cluster.pve.requests[start:]
            if method == "POST" and path.endswith("/lxc") and isinstance(body, dict)
        }
        assert not created & existing, f"a guest PVE had already made was created again: {created & existing}"
        for key in creating:
            vmid = int(key.rsplit("/", 1)[1])
            if vmid in existing:
                # Finished as ours: tied to its own create task, its row turns owned.
                assert rows[f"proxmox-lxc-ct{vmid}"]["changes"].get("ownership"), rows[
                    f"proxmox-lxc-ct{vmid}"
                ]
        final = FileStore(rows_file).load()
        assert all(final[f"{TARGET}/lxc/{vmid}"]["phase"] == "owned" for vmid in range(3201, 3206)), final


MASTER_GUESTS = {f"ct{vmid}": _container(vmid, "pve1" if vmid % 2 else "pve2") for vmid in range(3301, 3306)}


@pytest.fixture(scope="module")
def overlap_master(salt_factories: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from saltfactories.utils import random_string

    from tests.support.saltrun import FORMULA

    pillar = _pillar(tmp_path_factory.mktemp("overlap-pillar"), MASTER_GUESTS)
    factory = salt_factories.salt_master_daemon(
        random_string("pve-overlap-master-"),
        overrides={
            "interface": "127.0.0.1",
            "file_roots": {"base": [str(FORMULA)]},
            "pillar_roots": {"base": [str(pillar)]},
        },
    )
    with factory.started():
        yield factory


def test_a_master_driven_apply_overlaps_creates_on_the_minion(overlap_master: Any, estate: Any) -> None:
    """From a master: the minion's state run forks the creates the formula marks (the formula renders on
    the minion, which reads its own rows), at most ``task_concurrency`` at once; every state succeeds and
    the minion's rows file takes each container through creating to owned, line by line."""
    from saltfactories.utils import random_string

    pve = estate.cluster.pve
    pve.time_scale, pve.ct_secs["create"] = 0.05, 20  # 1 s each
    peaks = TaskPeaks(pve, "vzcreate")
    config = estate.proxmox_config()
    ((_name, target),) = config["targets"].items()
    target["task_concurrency"] = 3
    minion = overlap_master.salt_minion_daemon(
        random_string("pve-overlap-minion-"),
        overrides={"proxmox": config, "openbao": estate.openbao_config()},
    )
    with minion.started():
        ret = overlap_master.salt_cli(timeout=300).run("state.apply", "proxmox", minion_tgt=minion.id)
        assert isinstance(ret.data, dict), ret.stdout + ret.stderr
        rows = state_rows(ret.data)
        assert len(rows) == len(MASTER_GUESTS) and all(row["result"] is True for row in rows), rows
        keys = [f"{_name}/lxc/{vmid}" for vmid in range(3301, 3306)]
        problem = rows_problem(Path(minion.config_dir) / ROWS_FILE, keys)
        assert not problem, problem
    assert 1 < peaks.peak <= 3, peaks.peak
