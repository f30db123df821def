"""The overlapping-creates benchmark (``bench/salt_run.py --creates N… --task-concurrency C``): one
``salt-call --local state.apply proxmox`` creating N containers spread over two nodes, against a fake
cluster whose tasks take PVE-like time (fakepve's ``ct_secs`` in PVE seconds, ``time_scale`` turning
them into real ones), with ``proxmox:targets:<t>:task_concurrency`` C.

It prints, per N: the wall time, the start-up (a ``test.ping``), the CPU seconds of salt-call and
the processes Salt forked for it (``wait4`` counts waited-for children), the load average before the
run, the sum of the task times (N·T, T the create task's real seconds), the floor N·T/C, the wall's
ratio to the floor, the target ``1.5 × floor + start-up`` and whether it was met, and the most create
tasks fakepve ran at once (``peak``). After every run it checks that every state succeeded, every
container exists, and the rows file holds one ``owned`` row per container whose lines, read in
order, took each row through ``creating`` (with its task's UPID) to ``owned`` with no line torn or
lost. With ``--compare-sequential`` it runs the same creates with C = 1 too (tasks instant: what is
sent does not follow the clock) and compares the requests each sent (method and path; task status
polls, whose count follows the clock, and UPIDs aside) and the writes. Figures, not assertions: CI
never runs it.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path
from typing import Any

import yaml

from bench.common import FIRST_VMID, minion, salt_call, write_pillar
from tests.support.guests import TARGET
from tests.support.overlap import TaskPeaks, request_counts, rows_problem

#: PVE seconds of a container create (pve-container ``create_vm`` extracting a template: tens of
#: seconds on a real node), and fakepve's ``time_scale`` giving the real seconds (T = 100 × 0.1 = 10 s).
CREATE_SECS = 100.0
TIME_SCALE = 0.1
#: The create task's poll interval (``salt_proxmox.pve.tasks.POLL_INTERVAL``): a task is seen to end
#: up to one interval after it did.
POLL = 1.0


def run_creates(
    size: int,
    concurrency: int,
    per_node: int | None,
    args: argparse.Namespace,
    time_scale: float | None = None,
) -> dict[str, Any]:
    """One apply creating ``size`` containers with ``task_concurrency`` ``concurrency``; returns its
    figures and the problems found."""
    from tests.support.cluster import ServedCluster

    with (
        tempfile.TemporaryDirectory(prefix="salt-proxmox-bench-") as tmp,
        ServedCluster(args.time_scale if time_scale is None else time_scale) as cluster,
    ):
        assert cluster.pve is not None
        cluster.pve.max_requests = 10**8
        cluster.pve.ct_secs["create"] = args.create_secs
        peaks = TaskPeaks(cluster.pve, "vzcreate")
        work = Path(tmp)
        vmids = range(FIRST_VMID, FIRST_VMID + size)
        write_pillar(work / "pillar", vmids)
        config_dir = minion(cluster, work, args.concurrency)
        path = config_dir / "minion"
        config = yaml.safe_load(path.read_text())
        target = config["proxmox"]["targets"][TARGET]
        target["task_concurrency"] = concurrency
        if per_node is not None:
            target["task_concurrency_per_node"] = per_node
        path.write_text(yaml.safe_dump(config))
        ping = salt_call(cluster, config_dir, "test.ping")
        start = len(cluster.pve.requests)
        run = salt_call(cluster, config_dir, "state.apply", "proxmox")
        problems = []
        if run.failure:
            problems.append(run.failure)
        failed = [row for row in run.rows if row.get("result") is not True]
        if failed or len(run.rows) != size:
            problems.append(f"{len(run.rows)} states, {len(failed)} not successful: {str(failed[:1])[:400]}")
        missing = [vmid for vmid in vmids if cluster.pve.guest(vmid) is None]
        if missing:
            problems.append(f"containers missing: {missing[:5]}")
        rows = rows_problem(_rows_file(config_dir), [f"{TARGET}/lxc/{vmid}" for vmid in vmids])
        if rows:
            problems.append(rows)
        requests = [(method, path) for method, path, _body in cluster.pve.requests[start:]]
        return {"run": run, "ping": ping, "problems": problems, "requests": requests, "peak": peaks.peak}


def _rows_file(config_dir: Path) -> Path:
    from salt_proxmox.ownership.stores import ROWS_FILE

    # Beside the minion's grains file: <config dir>/<ROWS_FILE> (salt_proxmox.ownership.stores.rows_file).
    return config_dir / ROWS_FILE


def overlapping_creates(args: argparse.Namespace) -> int:
    """Print the overlap table for each of ``args.creates``; returns the number of runs not clean."""
    concurrency = args.task_concurrency
    task = args.create_secs * args.time_scale
    print(
        f"# creates: task T = {args.create_secs:g} PVE s x time_scale {args.time_scale:g} = {task:g} s "
        f"(polled every {POLL:g} s); task_concurrency C = {concurrency}"
        + (f", per node {args.task_concurrency_per_node}" if args.task_concurrency_per_node else "")
        + "; two nodes",
        flush=True,
    )
    print(
        f"{'N':>5} {'wall s':>8} {'start-up':>8} {'CPU s':>6} {'load':>5} {'sum T s':>8} {'floor s':>8} "
        f"{'x floor':>7} {'target s':>8} {'met':>4} {'peak':>4}  requests (no polls)"
    )
    failures = 0
    for size in args.creates:
        load = os.getloadavg()[0]
        found = run_creates(size, concurrency, args.task_concurrency_per_node, args)
        run, ping = found["run"], found["ping"]
        floor = size * task / concurrency
        target = 1.5 * floor + ping.wall
        counts = request_counts(found["requests"])
        met = "yes" if run.wall <= target else "NO"
        ratio = run.wall / floor if floor else 0.0
        print(
            f"{size:>5} {run.wall:>8.2f} {ping.wall:>8.2f} {run.cpu:>6.2f} {load:>5.2f} {size * task:>8.1f} "
            f"{floor:>8.1f} {ratio:>7.2f} {target:>8.1f} {met:>4} {found['peak']:>4}  "
            f"{sum(counts.values())} ({sum(counts.values()) / size:.2f} per container)",
            flush=True,
        )
        problems = list(found["problems"])
        if args.compare_sequential:
            # Requests and writes do not follow the clock: the sequential apply runs with instant tasks.
            alone = run_creates(size, 1, None, args, time_scale=0.0)
            problems += [f"sequential: {problem}" for problem in alone["problems"]]
            writes = sorted(method for method, _path in found["requests"] if method != "GET")
            alone_writes = sorted(method for method, _path in alone["requests"] if method != "GET")
            same = counts == request_counts(alone["requests"]) and writes == alone_writes
            print(f"      requests and writes as the sequential apply's: {'the same' if same else 'DIFFER'}")
            if not same:
                problems.append(
                    f"requests differ: {set(counts.items()) ^ set(request_counts(alone['requests']).items())}"
                )
        for problem in problems:
            failures += 1
            print(f"  ! N={size}: {problem}", flush=True)
    return failures
