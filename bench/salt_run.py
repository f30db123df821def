"""The salt-call benchmark: real ``salt-call --local`` runs of the formula against a fake cluster.

For each size N it seeds a fake cluster (fakepve on 127.0.0.1, in this process) with N containers
this minion owns (their configs as a create leaves them, their ownership rows in the minion's
rows file) and a pillar declaring them as they are, then runs, each ``--repeat`` times:

- ``salt-call test.ping``: the start-up baseline (Salt loading, no state run);
- ``state.apply proxmox test=True``: the plan;
- ``state.apply proxmox``: the no-drift apply (nothing to write).

It prints, per size and per injected latency (fakepve's ``slow_network``, seconds per request):
the median wall time, ms per guest, PVE requests per guest by method, the peak RSS of the
salt-call process (``wait4``'s ``ru_maxrss``), and with latency the floor ``N·L/C + start-up``
(C: the concurrent reads, ``proxmox:targets:<t>:concurrency``) beside the measured figure.
Every run is checked: all states must succeed, the plan must show no change and nothing may be
written; a run that breaks this is reported and the script exits 1. Without latency it prints each
target of docs/performance.md the size has (``# target:`` lines: the plan of 1000 under 5 s and of
2000 under 10 s, the no-drift apply within 1.3 x the plan, the peak RSS under 300 MiB), met or not.

``--rows-in grains`` seeds the rows into the grains file, where an earlier version kept them, to
measure what Salt's start-up cost then (it parses that file with pure-Python YAML before any
state runs). ``--creates`` measures creating N containers from nothing with one apply (fakepve finishes
its tasks at once), per container; with ``--task-concurrency C`` the tasks take time and overlap
(``bench/overlap.py``: wall against the floor N·T/C, rows and requests checked). ``--profile N``
writes a cProfile of the no-drift apply (or with ``--profile-run plan`` the plan) of N containers
and prints its top functions by cumulative time.

Figures, not assertions: the test suite asserts the request counts; CI never runs this.

    .venv/bin/python bench/salt_run.py [--sizes 10 100 500 1000 2000] [--repeat 3] \\
        [--latency 0 0.02] [--creates 10 500] [--profile 200] [--concurrency 8] [--rows-in grains]
"""

from __future__ import annotations

import argparse
import cProfile  # noqa: F401 - run as ``python -m cProfile`` around salt-call
import json
import os
import pstats
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench import overlap  # noqa: E402
from bench.common import (  # noqa: E402
    FIRST_VMID,
    SALT_CALL,
    Run,
    bench_declaration,
    minion,
    salt_call,
    state_id,
    write_pillar,
)
from salt_proxmox.guest import identity as guest_identity  # noqa: E402
from salt_proxmox.guest import lifecycle as guest_lifecycle  # noqa: E402
from salt_proxmox.guest.fingerprint import FIELD as FINGERPRINT  # noqa: E402
from salt_proxmox.lxc.family import LXC  # noqa: E402
from salt_proxmox.lxc.props import parse_declaration  # noqa: E402
from salt_proxmox.ownership.files import FileStore  # noqa: E402
from salt_proxmox.ownership.stores import ROWS_FILE, MemoryStore  # noqa: E402
from tests.support.cluster import ServedCluster  # noqa: E402
from tests.support.guests import TARGET, make_context, static_targets  # noqa: E402


def seed_owned(cluster: ServedCluster, config_dir: Path, vmids: range, rows_in: str = "file") -> None:
    """Put ``vmids`` into the fake cluster as a create of this product leaves them, and their
    ownership rows into the minion's rows file (``ROWS_FILE``, beside its grains file), or with
    ``rows_in="grains"`` into the grains file, where an earlier version kept them (Salt then parses
    them at every start-up; they stay there until a row changes).

    The first container is created for real (through the library, as the state does); the others
    are copies of its config with their own hostname, volume and MAC, so seeding 1000 takes
    seconds. Their rows are what ``Ownership.mark_owned`` writes after a create (fingerprint
    included)."""
    assert cluster.pve is not None
    first = vmids[0]
    store = MemoryStore()
    ctx = make_context(static_targets(cluster), store=store)
    outcome = guest_lifecycle.present(ctx, LXC, state_id(first), False, **bench_declaration(first))
    if outcome.result is not True:
        raise SystemExit(f"seeding: the create of CT {first} failed: {outcome.comment}")
    proto = cluster.pve.ct(first)
    for vmid in vmids[1:]:
        config = dict(proto.config)
        config["hostname"] = state_id(vmid)
        config["rootfs"] = proto.config["rootfs"].replace(f"-{first}-", f"-{vmid}-")
        mac = f"BC:24:11:{vmid >> 16 & 255:02X}:{vmid >> 8 & 255:02X}:{vmid & 255:02X}"
        config["net0"] = proto.config["net0"].replace(_mac(proto.config["net0"]), mac)
        cluster.pve.add_ct(vmid, node=bench_declaration(vmid)["node"], config=config, defaults=False)
    rows = dict(store.rows)
    for vmid in vmids[1:]:
        live = cluster.pve.ct(vmid).config
        decl = dict(bench_declaration(vmid))
        stored = parse_declaration(
            state_id(vmid),
            vmid=decl.pop("vmid"),
            node=decl.pop("node"),
            target=TARGET,
            config=decl,
        ).stored()
        rows[f"{TARGET}/lxc/{vmid}"] = {
            "phase": "owned",
            "instance": str(uuid.uuid4()),
            "state_id": state_id(vmid),
            "declared": stored,
            FINGERPRINT: guest_identity.live_fingerprint(LXC, live),
        }
    if rows_in == "grains":
        (config_dir / "grains").write_text(yaml.safe_dump({"salt_proxmox": {"owned": rows}}))
    else:
        FileStore(config_dir / ROWS_FILE).save(rows)


def _mac(net: str) -> str:
    return dict(part.split("=", 1) for part in net.split(",") if "=" in part)["hwaddr"]


def check(run: Run, plan: bool, size: int) -> str:
    """Why a plan or no-drift apply of ``size`` owned containers is not clean, or ''."""
    if run.failure:
        return run.failure
    if len(run.rows) != size:
        return f"{len(run.rows)} states ran, expected {size}"
    bad = [row for row in run.rows if row.get("result") is not True or row.get("changes")]
    if bad:
        return f"{len(bad)} states not clean, e.g. {json.dumps(bad[0])[:600]}"
    written = [r for r in run.requests if r[0] != "GET"]
    if written:
        return f"{'plan' if plan else 'apply'} wrote: {written[:3]}"
    return ""


def by_method(requests: list[tuple[str, str]], size: int) -> str:
    counts = Counter(method for method, _path in requests)
    # A guest's config is read with GET …/pending (values in effect and pending ones at once).
    config_gets = sum(1 for m, p in requests if m == "GET" and p.endswith("/pending"))
    # The guest index (cluster/resources, as big as the cluster) apart: read once per run, not per guest.
    index = sum(1 for m, p in requests if m == "GET" and p.endswith("/cluster/resources"))
    parts = [f"{method} {counts[method] / size:.2f}" for method in sorted(counts)]
    return f"{' '.join(parts) or '-'} (config read {config_gets / size:.2f}; guest index reads {index})"


def measure(args: argparse.Namespace) -> int:
    failures = 0
    header = (
        f"{'N':>5} {'latency':>7} {'run':>9} {'wall s':>8} {'ms/guest':>9} {'floor s':>8} "
        f"{'x floor':>7} {'x plan':>6} {'RSS MiB':>8} {'CPU s':>6}  requests per guest"
    )
    for size in args.sizes:
        with tempfile.TemporaryDirectory(prefix="salt-proxmox-bench-") as tmp, ServedCluster() as cluster:
            assert cluster.pve is not None
            cluster.pve.max_requests = 10**8
            work = Path(tmp)
            os.chmod(work, 0o700)
            vmids = range(FIRST_VMID, FIRST_VMID + size)
            write_pillar(work / "pillar", vmids)
            config_dir = minion(cluster, work, args.concurrency)
            seeded = time.perf_counter()
            seed_owned(cluster, config_dir, vmids, args.rows_in)
            print(
                f"# N={size}: seeded in {time.perf_counter() - seeded:.1f} s (rows in {args.rows_in})",
                flush=True,
            )
            print(header, flush=True)
            for latency in args.latency:
                # fakepve's latency is in PVE seconds, scaled by time_scale (0: none at all).
                cluster.pve.time_scale = 1.0 if latency else 0.0
                cluster.pve.slow_network(latency)
                pings = [salt_call(cluster, config_dir, "test.ping") for _ in range(args.repeat)]
                startup = statistics.median(r.wall for r in pings)
                _row(size, latency, "test.ping", pings, startup, None, args)
                plans = [
                    salt_call(cluster, config_dir, "state.apply", "proxmox", "test=True")
                    for _ in range(args.repeat)
                ]
                plan_wall = statistics.median(r.wall for r in plans)
                _row(size, latency, "plan", plans, startup, None, args)
                applies = []
                if "apply" in args.runs:
                    applies = [
                        salt_call(cluster, config_dir, "state.apply", "proxmox") for _ in range(args.repeat)
                    ]
                    _row(size, latency, "apply", applies, startup, plan_wall, args)
                for what, runs in (("plan", plans), ("apply", applies)):
                    for run in runs:
                        problem = check(run, what == "plan", size)
                        if problem:
                            failures += 1
                            print(f"  ! {what} of {size}: {problem}", flush=True)
                            break
                if not latency:
                    for line in verdicts(size, pings, plans, applies):
                        print(line, flush=True)
    return failures


#: The plan's wall-time targets at N owned guests and no latency (docs/performance.md), seconds.
PLAN_TARGETS = {1000: 5.0, 2000: 10.0}
#: The no-drift apply's wall time at most this many times the plan's; the peak RSS under this (MiB).
APPLY_OVER_PLAN = 1.3
RSS_TARGET_MIB = 300


def verdicts(size: int, pings: list[Run], plans: list[Run], applies: list[Run]) -> list[str]:
    """The targets of docs/performance.md this size has, each met or not, as ``# target`` lines. The
    wall times are medians; beside them the CPU seconds of the same runs, which show what an idle
    machine would take where other work inflates the wall."""
    lines = []
    plan = statistics.median(r.wall for r in plans)
    plan_cpu = statistics.median(r.cpu for r in plans)
    startup_cpu = statistics.median(r.cpu for r in pings)
    if size in PLAN_TARGETS:
        limit = PLAN_TARGETS[size]
        lines.append(
            f"# target: plan of {size} < {limit:g} s: {'met' if plan < limit else 'NOT met'} "
            f"({plan:.2f} s wall, {plan_cpu:.2f} CPU s, test.ping {startup_cpu:.2f} CPU s)"
        )
    if applies:
        apply = statistics.median(r.wall for r in applies)
        lines.append(
            f"# target: no-drift apply <= {APPLY_OVER_PLAN:g} x plan: "
            f"{'met' if apply <= APPLY_OVER_PLAN * plan else 'NOT met'} ({apply / plan:.2f} x wall, "
            f"{statistics.median(r.cpu for r in applies) / plan_cpu:.2f} x CPU)"
        )
    rss = max(r.rss_mib for r in [*plans, *applies])
    met = "met" if rss < RSS_TARGET_MIB else "NOT met"
    lines.append(f"# target: peak RSS < {RSS_TARGET_MIB} MiB: {met} ({rss:.0f} MiB)")
    return lines


def _row(
    size: int,
    latency: float,
    what: str,
    runs: list[Run],
    startup: float,
    plan_wall: float | None,
    args: argparse.Namespace,
) -> None:
    """One line of the table; ms per guest leaves the start-up out."""
    wall = statistics.median(r.wall for r in runs)
    rss = max(r.rss_mib for r in runs)
    cpu = statistics.median(r.cpu for r in runs)
    guests = size if what != "test.ping" else 1
    per_guest = 1000 * (wall - startup) / size if what != "test.ping" else 0
    floor = ratio = ""
    if latency and what != "test.ping":
        floor_s = size * latency / args.concurrency_for_floor + startup
        floor = f"{floor_s:.2f}"
        ratio = f"{wall / floor_s:.2f}"
    vs_plan = f"{wall / plan_wall:.2f}" if plan_wall else ""
    requests = by_method(runs[-1].requests, guests) if what != "test.ping" else "-"
    print(
        f"{size:>5} {latency * 1000:>5.0f}ms {what:>9} {wall:>8.2f} {per_guest:>9.2f} {floor:>8} "
        f"{ratio:>7} {vs_plan:>6} {rss:>8.1f} {cpu:>6.2f}  {requests}",
        flush=True,
    )


def creates(args: argparse.Namespace) -> int:
    """Create N containers from nothing with one apply; print the cost per container."""
    failures = 0
    print(
        f"{'N':>5} {'create wall s':>13} {'start-up s':>10} {'ms/container':>12} {'RSS MiB':>8} "
        f"{'CPU s':>6} {'CPU ms/container':>16}  requests per container"
    )
    for size in args.creates:
        with tempfile.TemporaryDirectory(prefix="salt-proxmox-bench-") as tmp, ServedCluster() as cluster:
            assert cluster.pve is not None
            cluster.pve.max_requests = 10**8
            work = Path(tmp)
            os.chmod(work, 0o700)
            vmids = range(FIRST_VMID, FIRST_VMID + size)
            write_pillar(work / "pillar", vmids)
            config_dir = minion(cluster, work, args.concurrency)
            ping = salt_call(cluster, config_dir, "test.ping")
            run = salt_call(cluster, config_dir, "state.apply", "proxmox")
            per = 1000 * (run.wall - ping.wall) / size
            cpu_per = 1000 * (run.cpu - ping.cpu) / size
            print(
                f"{size:>5} {run.wall:>13.2f} {ping.wall:>10.2f} {per:>12.2f} {run.rss_mib:>8.1f} "
                f"{run.cpu:>6.2f} {cpu_per:>16.2f}  {by_method(run.requests, size)}",
                flush=True,
            )
            bad = run.failure or (
                f"{sum(1 for r in run.rows if r.get('result') is not True)} states failed"
                if any(r.get("result") is not True for r in run.rows) or len(run.rows) != size
                else ""
            )
            if bad:
                failures += 1
                print(f"  ! create of {size}: {bad}", flush=True)
    return failures


def profile(args: argparse.Namespace) -> int:
    """cProfile the no-drift apply (or the plan) of ``args.profile`` owned containers; print the
    top functions by cumulative time."""
    size = args.profile
    with tempfile.TemporaryDirectory(prefix="salt-proxmox-bench-") as tmp, ServedCluster() as cluster:
        assert cluster.pve is not None
        cluster.pve.max_requests = 10**8
        work = Path(tmp)
        os.chmod(work, 0o700)
        vmids = range(FIRST_VMID, FIRST_VMID + size)
        write_pillar(work / "pillar", vmids)
        config_dir = minion(cluster, work, args.concurrency)
        seed_owned(cluster, config_dir, vmids, args.rows_in)
        out = Path(args.profile_out or work / "run.prof")
        plan = args.profile_run == "plan"
        extra = ("test=True",) if plan else ()
        run = salt_call(cluster, config_dir, "state.apply", "proxmox", *extra, profile=out)
        problem = check(run, plan, size)
        what = "plan" if plan else "no-drift apply"
        print(f"# cProfile of the {what} of {size} owned containers: {run.wall:.2f} s", flush=True)
        stats = pstats.Stats(str(out))
        stats.sort_stats("cumulative").print_stats(args.profile_top)
        if problem:
            print(f"  ! {what} of {size}: {problem}", flush=True)
            return 1
    return 0


def main() -> int:
    """Run the benchmark; returns the exit status (1 when a run was not clean)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[10, 100, 500, 1000])
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (the median is shown)")
    parser.add_argument(
        "--latency", type=float, nargs="+", default=[0.0, 0.02], help="seconds fakepve adds to each request"
    )
    parser.add_argument(
        "--concurrency",
        type=int,
        default=None,
        help="proxmox:targets:<t>:concurrency for the runs (default: the module's own)",
    )
    parser.add_argument(
        "--runs", nargs="+", choices=("plan", "apply"), default=["plan", "apply"], help="what to time"
    )
    parser.add_argument(
        "--rows-in",
        choices=("file", "grains"),
        default="file",
        help="where the seeded rows are: the rows file, or the grains file (as an earlier version kept them)",
    )
    parser.add_argument("--creates", type=int, nargs="*", default=[], help="sizes of the create measurement")
    parser.add_argument(
        "--task-concurrency",
        type=int,
        default=None,
        help="with --creates: proxmox:targets:<t>:task_concurrency; tasks take time (bench/overlap.py)",
    )
    parser.add_argument("--task-concurrency-per-node", type=int, default=None)
    parser.add_argument(
        "--create-secs", type=float, default=overlap.CREATE_SECS, help="PVE seconds of a create"
    )
    parser.add_argument("--time-scale", type=float, default=overlap.TIME_SCALE, help="fakepve's time_scale")
    parser.add_argument(
        "--compare-sequential", action="store_true", help="run each size with task_concurrency 1 too"
    )
    parser.add_argument("--profile", type=int, default=None, help="cProfile the no-drift apply of N")
    parser.add_argument("--profile-run", choices=("apply", "plan"), default="apply")
    parser.add_argument("--profile-out", default=None, help="where to keep the profile (.prof)")
    parser.add_argument("--profile-top", type=int, default=30)
    args = parser.parse_args()
    args.concurrency_for_floor = args.concurrency or 8
    print(f"# {os.cpu_count()} CPUs; salt-call {SALT_CALL}", flush=True)
    failures = 0
    if args.profile:
        failures += profile(args)
    if args.sizes:
        failures += measure(args)
    if args.creates:
        failures += overlap.overlapping_creates(args) if args.task_concurrency else creates(args)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
