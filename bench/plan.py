"""The plan benchmark: a no-drift plan of N owned containers against a local fake cluster.

Prints, per N, the wall time of the plan (median of a few runs), the PVE requests it sent and the
peak Python memory it allocated (tracemalloc), once with each state reading its own config and once
with the configs read ahead as the first state of a Salt run does (``guest.lifecycle.read_ahead``,
``--concurrency`` at once). ``--latency`` adds seconds to every request (fakepve's
``slow_network``), so the second figure can be set beside its floor N·L/C. No Salt here:
bench/salt_run.py times the real ``salt-call``. Figures, not assertions: the test suite asserts
the request counts; this shows what they cost.

    .venv/bin/python bench/plan.py [--sizes 10 50 200] [--repeat 5] [--latency 0.02] [--concurrency 8]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from salt_proxmox.guest import lifecycle as guest_lifecycle
from salt_proxmox.lxc.family import LXC
from salt_proxmox.ownership.files import FileStore
from tests.support.cluster import ServedCluster
from tests.support.guests import TARGET, declaration, make_context, static_targets


def main() -> int:
    """Run the benchmark; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 50, 200])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds fakepve adds to each request")
    parser.add_argument("--concurrency", type=int, default=8, help="reads in flight when reading ahead")
    args = parser.parse_args()
    print(
        f"{'containers':>10} {'reads':>10} {'plan median s':>14} {'per CT ms':>10} {'floor s':>8} "
        f"{'PVE requests':>13} {'peak MiB':>9}"
    )
    for size in args.sizes:
        with ServedCluster() as cluster, tempfile.TemporaryDirectory(prefix="salt-proxmox-bench-") as tmp:
            # The ownership file a minion keeps (read once per run, as in production).
            store = FileStore(Path(tmp) / "owned.json")
            ctx = make_context(static_targets(cluster), store=store)
            vmids = range(1000, 1000 + size)
            for vmid in vmids:
                outcome = guest_lifecycle.present(
                    ctx, LXC, f"ct{vmid}", False, **declaration(vmid=vmid, mp0=None)
                )
                assert outcome.result is True, outcome.comment
            cluster.pve.time_scale = 1.0 if args.latency else 0.0  # fakepve scales its latency
            cluster.pve.slow_network(args.latency)
            targets = static_targets(cluster)
            targets[TARGET]["concurrency"] = args.concurrency
            for ahead in (False, True):
                times, requests, peaks = [], [], []
                for _ in range(args.repeat):
                    run = make_context(targets, store=store)
                    before = len(cluster.pve.requests)
                    tracemalloc.start()
                    started = time.perf_counter()
                    if ahead:
                        guest_lifecycle.read_ahead(
                            run, LXC, [declaration(vmid=vmid, mp0=None) for vmid in vmids]
                        )
                    for vmid in vmids:
                        assert (
                            guest_lifecycle.present(
                                run, LXC, f"ct{vmid}", True, **declaration(vmid=vmid, mp0=None)
                            ).result
                            is True
                        )
                    times.append(time.perf_counter() - started)
                    peaks.append(tracemalloc.get_traced_memory()[1] / 2**20)
                    tracemalloc.stop()
                    requests.append(len(cluster.pve.requests) - before)
                median = statistics.median(times)
                per_ct = 1000 * median / size
                floor = size * args.latency / (args.concurrency if ahead else 1)
                print(
                    f"{size:>10} {'ahead' if ahead else 'one by one':>10} {median:>14.3f} {per_ct:>10.2f} "
                    f"{floor:>8.2f} {max(requests):>13} {max(peaks):>9.1f}",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
