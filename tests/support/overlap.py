"""What the overlap tests and the overlap benchmark (``bench/overlap.py``) check after an apply whose
guest creates overlapped (``salt_proxmox.run.overlap``): the rows file, line by line, and the requests
sent, beside a sequential apply's."""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

#: What a create's row goes through, one appended line each (``salt_proxmox.guest.apply.create_guest``:
#: ``creating`` before the POST, its UPID once PVE answers, ``owned`` after the read-back).
LIFE = ["creating", "creating+upid", "owned"]


def rows_problem(rows_file: Path, keys: Iterable[str]) -> str:
    """Why the rows file does not show each of ``keys`` taken through ``LIFE`` in order, every line
    whole and parsed, ending ``owned``; '' when it does. The first change may have written the file
    as one snapshot: the lines after it then hold the rest of that row's life."""
    if not rows_file.exists():
        return f"{rows_file} does not exist"
    text = rows_file.read_text()
    if not text.endswith("\n"):
        return "the rows file ends in an unfinished line"
    snapshot, end = json.JSONDecoder().raw_decode(text)
    rows = dict(snapshot.get("owned", {}))
    history: dict[str, list[str]] = {}
    for number, line in enumerate(text[end:].split("\n")):
        if not line.strip():
            continue
        try:
            change = json.loads(line)
        except ValueError:
            return f"line {number} after the snapshot is not JSON (two writers interleaved?): {line[:80]!r}"
        row = change.get("row")
        phase = "dropped" if row is None else f"{row.get('phase')}{'+upid' if row.get('upid') else ''}"
        history.setdefault(change["key"], []).append(phase)
        if row is None:
            rows.pop(change["key"], None)
        else:
            rows[change["key"]] = row
    for key in keys:
        if (rows.get(key) or {}).get("phase") != "owned":
            return f"{key} is not owned: {rows.get(key)}"
        seen = history.get(key, [])
        if seen != LIFE[len(LIFE) - len(seen) :]:
            return f"{key} went through {seen}, not {', '.join(LIFE)} in order"
    return ""


def request_counts(requests: Iterable[tuple[str, str]]) -> Counter:
    """``{(method, path): count}`` of fakepve's log, UPIDs made alike and task status polls left out
    (how often a task is polled follows the clock, not the plan)."""
    return Counter(
        (method, re.sub(r"UPID:[^/]+", "UPID", path))
        for method, path in requests
        if not (method == "GET" and "/tasks/" in path and path.endswith("/status"))
    )


class TaskPeaks:
    """How many fakepve tasks of one type ran at once, overall and per node (the most seen), counted
    around each task's body (``FakePve.task``) on the fake's own event loop. Install with
    ``TaskPeaks(pve, "vzcreate")``."""

    def __init__(self, pve, task_type: str):
        self.task_type = task_type
        self.running: Counter = Counter()
        self.peak = 0
        self.node_peak: Counter = Counter()
        original = pve.task

        async def task(node, ttype, tid, user, body, *args, **kwargs):
            if ttype != self.task_type:
                return await original(node, ttype, tid, user, body, *args, **kwargs)

            async def counted():
                self.running[node] += 1
                self.node_peak[node] = max(self.node_peak[node], self.running[node])
                self.peak = max(self.peak, sum(self.running.values()))
                try:
                    # Let every other task that is due start before this one may end.
                    await asyncio.sleep(0)
                    return await body()
                finally:
                    self.running[node] -= 1

            return await original(node, ttype, tid, user, counted, *args, **kwargs)

        pve.task = task
