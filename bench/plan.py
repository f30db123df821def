"""The plan benchmark: a no-drift plan of N owned containers against a local fake cluster.

Prints, per N, the wall time of the plan (median of a few runs), the PVE requests it sent and the
peak Python memory it allocated (tracemalloc). Figures, not assertions: the test suite asserts the
request counts; this shows what they cost.

    .venv/bin/python bench/plan.py [--sizes 10 50 200] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from salt_proxmox.lxc.lifecycle import present
from salt_proxmox.ownership import MemoryStore
from tests.integration.lxc_support import declaration, make_context, static_targets
from tests.support.cluster import ServedCluster


def main() -> int:
    """Run the benchmark; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 50, 200])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"{'containers':>10} {'plan median s':>14} {'per CT ms':>10} {'PVE requests':>13} {'peak MiB':>9}")
    for size in args.sizes:
        with ServedCluster() as cluster:
            store = MemoryStore()
            ctx = make_context(static_targets(cluster), store=store)
            vmids = range(1000, 1000 + size)
            for vmid in vmids:
                outcome = present(ctx, f"ct{vmid}", False, **declaration(vmid=vmid, mp0=None))
                assert outcome.result is True, outcome.comment
            times, requests, peaks = [], [], []
            for _ in range(args.repeat):
                run = make_context(static_targets(cluster), store=store)
                before = len(cluster.pve.requests)
                tracemalloc.start()
                started = time.perf_counter()
                for vmid in vmids:
                    assert present(run, f"ct{vmid}", True, **declaration(vmid=vmid, mp0=None)).result is True
                times.append(time.perf_counter() - started)
                peaks.append(tracemalloc.get_traced_memory()[1] / 2**20)
                tracemalloc.stop()
                requests.append(len(cluster.pve.requests) - before)
            median = statistics.median(times)
            per_ct = 1000 * median / size
            print(f"{size:>10} {median:>14.3f} {per_ct:>10.2f} {max(requests):>13} {max(peaks):>9.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
