"""The master benchmark: creates through a salt-master against the same with ``salt-call --local``.

M estates (default 3), each a fake cluster of its own (fakepve on 127.0.0.1, a free port, served by
a process of its own so that no estate waits on another's interpreter) and a pillar declaring N
containers (default 100) that do not exist yet: ``bench/salt_run.py``'s declarations
(``bench/common.py``), spread over both nodes. Each repeat starts from empty clusters and measures
two ways to create them:

- ``local``: ``salt-call --local state.apply proxmox`` for each estate, one after another;
- ``master``: a salt-master and M salt-minions (pytest-salt-factories daemons, loopback only, started
  before the clock runs), each minion configured for its own cluster; one ``salt -L <minions>
  state.apply proxmox`` applies all M estates at once.

It prints, per way, the wall time, the CPU seconds of the Salt side (the salt-call processes; the
master's and minions' process trees and the ``salt`` command) and of the fake clusters, the
machine's load average before the run, and the ratio master / local. Every run is checked: M×N
states all True, each estate's rows file holding its N rows as owned, and for the master way
``grains.get salt_proxmox:owned`` on each minion showing every row of its rows file (the grain the
minion reloads once per run, docs/design.md §8); both ways must send each cluster the same
requests. A run that breaks this is reported and the script exits 1.

Figures, not assertions: the functional tests assert the behaviour; CI never runs this.

    .venv/bin/python bench/master_run.py [--estates 3] [--creates 100] [--repeat 3] [--time-scale 0]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import psutil
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.common import FIRST_VMID, minion, salt_call, write_pillar  # noqa: E402
from salt_proxmox.ownership.files import FileStore  # noqa: E402
from salt_proxmox.ownership.stores import ROWS_FILE  # noqa: E402
from tests.support.saltrun import FORMULA  # noqa: E402

SALT = Path(sys.executable).parent / "salt"
#: Seconds the ``salt`` command waits for the minions' returns.
JOB_TIMEOUT = 300


def _serve(conn: Any, time_scale: float) -> None:
    """The body of a cluster process: serve one seeded fake cluster, send its address and tokens,
    then answer ``requests`` (every request so far, as ``(method, path)``) and ``cpu`` until
    ``stop``."""
    from tests.support.cluster import ServedCluster

    with ServedCluster(time_scale=time_scale) as cluster:
        assert cluster.pve is not None and cluster.seeded is not None
        cluster.pve.max_requests = 10**8
        conn.send(
            {
                "url": cluster.url,
                "cafile": cluster.cafile,
                "read": cluster.seeded.read_token,
                "provision": cluster.seeded.provision_token,
            }
        )
        while True:
            asked = conn.recv()
            if asked == "requests":
                conn.send([(method, path) for method, path, _body in cluster.pve.requests])
            elif asked == "stop":
                break


class Cluster:
    """A fake cluster served by a process of its own; what ``salt_run.minion`` needs of a
    ``ServedCluster`` (``url``, ``cafile``, ``seeded``)."""

    def __init__(self, time_scale: float):
        context = multiprocessing.get_context("spawn")
        self._conn, theirs = context.Pipe()
        self.process = context.Process(target=_serve, args=(theirs, time_scale), daemon=True)
        self.process.start()
        served = self._conn.recv()
        self.url, self.cafile = served["url"], served["cafile"]
        self.seeded = SimpleNamespace(read_token=served["read"], provision_token=served["provision"])
        self.ps = psutil.Process(self.process.pid)

    def requests(self) -> list[tuple[str, str]]:
        self._conn.send("requests")
        return [tuple(pair) for pair in self._conn.recv()]

    def cpu(self) -> float:
        times = self.ps.cpu_times()
        return times.user + times.system

    def stop(self) -> None:
        self._conn.send("stop")
        self.process.join(30)


def tree_cpu(pid: int) -> float:
    """CPU seconds of process ``pid`` and its live descendants, with the children each has reaped
    (a minion's finished jobs)."""
    total = 0.0
    try:
        root = psutil.Process(pid)
        for proc in [root, *root.children(recursive=True)]:
            try:
                t = proc.cpu_times()
            except psutil.NoSuchProcess:
                continue
            total += t.user + t.system + t.children_user + t.children_system
    except psutil.NoSuchProcess:
        pass
    return total


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@dataclass
class Way:
    """One way's run: wall seconds, CPU seconds (Salt side, fake clusters), load before it, what
    went wrong, and each cluster's requests by method."""

    wall: float
    salt_cpu: float
    pve_cpu: float
    load: float
    problems: list[str] = field(default_factory=list)
    requests: list[Counter] = field(default_factory=list)


def estate(work: Path, cluster: Cluster, creates: int) -> Path:
    """The config directory of one estate's minion (``salt_run.minion``: static tokens, Salt's
    default file log level) with its pillar of ``creates`` containers under ``work/pillar``."""
    work.mkdir(mode=0o700, parents=True)
    write_pillar(work / "pillar", range(FIRST_VMID, FIRST_VMID + creates))
    return minion(cluster, work, None)  # type: ignore[arg-type]


def check_rows(rows_file: Path, creates: int) -> str:
    rows = FileStore(rows_file).load() if rows_file.exists() else {}
    phases = Counter(row.get("phase") for row in rows.values())
    return (
        "" if phases == {"owned": creates} else f"{rows_file}: rows {dict(phases)}, expected {creates} owned"
    )


def check_states(ret: object, creates: int, who: str) -> str:
    if not isinstance(ret, dict) or not all(isinstance(v, dict) for v in ret.values()):
        return f"{who}: no state return: {str(ret)[:600]}"
    bad = [row for row in ret.values() if row.get("result") is not True]
    if len(ret) != creates or bad:
        return f"{who}: {len(ret)} states, {len(bad)} not True, e.g. {json.dumps(bad[:1])[:600]}"
    return ""


def run_local(work: Path, clusters: list[Cluster], creates: int) -> Way:
    dirs = [estate(work / f"estate{i}", cluster, creates) for i, cluster in enumerate(clusters)]
    pve_before = sum(c.cpu() for c in clusters)
    load = os.getloadavg()[0]
    began = time.perf_counter()
    runs = [salt_call(SimpleNamespace(pve=_Requests()), d, "state.apply", "proxmox") for d in dirs]  # type: ignore[arg-type]
    wall = time.perf_counter() - began
    way = Way(wall, sum(r.cpu for r in runs), sum(c.cpu() for c in clusters) - pve_before, load)
    for i, (run, config_dir) in enumerate(zip(runs, dirs, strict=True)):
        problem = run.failure or check_states(
            {str(n): row for n, row in enumerate(run.rows)}, creates, f"estate{i}"
        )
        way.problems += [p for p in (problem, check_rows(config_dir / ROWS_FILE, creates)) if p]
    way.requests = [Counter(method for method, _ in c.requests()) for c in clusters]
    return way


class _Requests:
    """``salt_run.salt_call`` slices ``cluster.pve.requests``; this run counts them per cluster."""

    def __init__(self) -> None:
        self.requests: list = []


def factories(root: Path) -> tuple[Any, Any]:
    """pytest-salt-factories' manager outside pytest, its daemons under ``root`` (0700)."""
    from pytestshellutils.utils.ports import get_unused_localhost_port
    from saltfactories.manager import FactoriesManager
    from saltfactories.plugins.event_listener import EventListener

    listener = EventListener()
    listener.start()
    manager = FactoriesManager(
        root_dir=root,
        log_server_host="127.0.0.1",
        # No log server listens there: each daemon logs to its own file only.
        log_server_port=get_unused_localhost_port(),
        log_server_level="warning",
        python_executable=sys.executable,
        event_listener=listener,
    )
    return manager, listener


def run_master(work: Path, clusters: list[Cluster], creates: int, stack: ExitStack) -> Way:
    """Start a master and one minion per cluster (not timed), then one ``salt`` apply of them all."""
    dirs = [estate(work / f"estate{i}", cluster, creates) for i, cluster in enumerate(clusters)]
    manager, listener = factories(work / "f")
    stack.callback(listener.stop)
    master = manager.salt_master_daemon(
        "bm",
        overrides={
            "interface": "127.0.0.1",
            "file_roots": {"base": [str(FORMULA)]},
            "pillar_roots": {"base": [str(dirs[0].parent / "pillar")]},
            "log_level_logfile": "warning",
        },
    )
    stack.enter_context(master.started())
    minions = []
    for i, config_dir in enumerate(dirs):
        config = yaml.safe_load((config_dir / "minion").read_text())
        factory = master.salt_minion_daemon(
            f"bm{i}",
            overrides={"proxmox": config["proxmox"], "log_level_logfile": "warning"},
        )
        stack.enter_context(factory.started())
        minions.append(factory)
    ids = ",".join(m.id for m in minions)
    base = [
        str(SALT),
        "-c",
        str(master.config_dir),
        "--out=json",
        "--static",
        f"--timeout={JOB_TIMEOUT}",
        "-L",
        ids,
    ]
    pids = [master.pid, *(m.pid for m in minions)]
    salt_before = sum(tree_cpu(pid) for pid in pids) + children_cpu()
    pve_before = sum(c.cpu() for c in clusters)
    load = os.getloadavg()[0]
    began = time.perf_counter()
    done = subprocess.run([*base, "state.apply", "proxmox"], capture_output=True, text=True, check=False)
    wall = time.perf_counter() - began
    salt_cpu = sum(tree_cpu(pid) for pid in pids) + children_cpu() - salt_before
    way = Way(wall, salt_cpu, sum(c.cpu() for c in clusters) - pve_before, load)
    try:
        returns = json.loads(done.stdout)
    except ValueError:
        way.problems.append(f"salt: exit {done.returncode}, no JSON: {(done.stdout + done.stderr)[-2000:]}")
        return way
    shown = subprocess.run(
        [*base, "grains.get", "salt_proxmox:owned"], capture_output=True, text=True, check=False
    )
    grains = json.loads(shown.stdout) if shown.stdout.strip().startswith("{") else {}
    for factory in minions:
        rows_file = Path(factory.config_dir) / ROWS_FILE
        problems = [
            check_states(returns.get(factory.id), creates, factory.id),
            check_rows(rows_file, creates),
        ]
        if rows_file.exists() and grains.get(factory.id) != FileStore(rows_file).load():
            problems.append(f"{factory.id}: grains.get salt_proxmox:owned differs from its rows file")
        way.problems += [p for p in problems if p]
    way.requests = [Counter(method for method, _ in c.requests()) for c in clusters]
    return way


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--estates", type=int, default=3, help="minions, each with its own cluster")
    parser.add_argument("--creates", type=int, default=100, help="containers each estate creates")
    parser.add_argument("--repeat", type=int, default=3, help="runs per way (the median is shown)")
    parser.add_argument(
        "--time-scale", type=float, default=0.0, help="fakepve's time_scale (0: tasks end at once)"
    )
    parser.add_argument("--ways", nargs="+", choices=("local", "master"), default=["local", "master"])
    args = parser.parse_args()
    # A SIGTERM (a timeout around the script) stops the daemons and clusters it started.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    print(
        f"# {os.cpu_count()} CPUs; {args.estates} estates × {args.creates} creates; salt {SALT}", flush=True
    )
    header = f"{'way':>7} {'repeat':>6} {'load':>5} {'wall s':>7} {'Salt CPU s':>10} {'PVE CPU s':>9}"
    print(f"{header}  requests per estate")
    results: dict[str, list[Way]] = {way: [] for way in args.ways}
    failures = 0
    for repeat in range(args.repeat):
        for name in args.ways:
            # A short root: a daemon's Unix sockets live under it (AF_UNIX paths: 107 bytes at most).
            root = Path(tempfile.mkdtemp(prefix="spm-"))
            os.chmod(root, 0o700)
            try:
                with ExitStack() as stack:
                    clusters = [Cluster(args.time_scale) for _ in range(args.estates)]
                    for cluster in clusters:
                        stack.callback(cluster.stop)
                    if name == "local":
                        way = run_local(root, clusters, args.creates)
                    else:
                        way = run_master(root, clusters, args.creates, stack)
            finally:
                shutil.rmtree(root, ignore_errors=True)
            results[name].append(way)
            counts = " ".join(
                sorted({" ".join(f"{m} {n}" for m, n in sorted(c.items())) for c in way.requests})
            )
            print(
                f"{name:>7} {repeat + 1:>6} {way.load:>5.2f} {way.wall:>7.2f} {way.salt_cpu:>10.2f} "
                f"{way.pve_cpu:>9.2f}  {counts}",
                flush=True,
            )
            for problem in way.problems:
                failures += 1
                print(f"  ! {name}: {problem}", flush=True)
    if set(args.ways) == {"local", "master"}:
        local, master = (statistics.median(w.wall for w in results[k]) for k in ("local", "master"))
        local_cpu, master_cpu = (
            statistics.median(w.salt_cpu for w in results[k]) for k in ("local", "master")
        )
        print(
            f"# median wall: local {local:.2f} s, master {master:.2f} s, master/local {master / local:.2f}; "
            f"Salt CPU: local {local_cpu:.2f} s, master {master_cpu:.2f} s",
            flush=True,
        )
        if {tuple(map(tuple, sorted(c.items()))) for w in results["local"] for c in w.requests} != {
            tuple(map(tuple, sorted(c.items()))) for w in results["master"] for c in w.requests
        }:
            failures += 1
            print("  ! the two ways sent the clusters different requests", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
