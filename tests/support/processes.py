"""The harness's ``python -m`` entry points as child processes: ``tests.support.cluster`` and
``tests.support.openbao`` each print ``ready <url>`` once serving, and stop cleanly on SIGTERM or SIGINT.
The sandbox (``scripts/sandbox``) and the harness tests start them here and stop them by their PID."""

from __future__ import annotations

import selectors
import signal
import subprocess
import sys
from pathlib import Path
from typing import IO

REPO = Path(__file__).resolve().parents[2]
#: Real seconds to wait for a ready line, and for a stop.
ENTRY_POINT_TIMEOUT = 30.0


def start_entry_point(
    module: str, *args: str, stderr: int | IO[str] = subprocess.PIPE
) -> tuple[subprocess.Popen[str], str]:
    """Start ``python -m module args`` from the repository root; return it and the URL of its ready line.

    ``stderr``: where its standard error goes (a file for a process that may run for hours: a pipe
    nobody reads would fill and block it). Raises RuntimeError, after stopping it, when the process prints
    nothing within ENTRY_POINT_TIMEOUT or a first line that is not ``ready <url>``."""
    proc = subprocess.Popen(
        [sys.executable, "-m", module, *args],
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
    )
    assert proc.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        if not selector.select(ENTRY_POINT_TIMEOUT):
            stop_entry_point(proc)
            raise RuntimeError(f"{module} printed nothing in {ENTRY_POINT_TIMEOUT:.0f} s")
    line = proc.stdout.readline()
    if not line.startswith("ready "):
        out, err = stop_entry_point(proc)
        raise RuntimeError(f"{module} did not start: {line}{out}{err or ''}")
    return proc, line.split()[1]


def stop_entry_point(proc: subprocess.Popen[str]) -> tuple[str, str]:
    """SIGTERM the process by its PID, wait (SIGKILL if it hangs), and return the rest of its stdout and
    stderr (None for a stream that was not piped). Safe on a process that already ended."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        return proc.communicate(timeout=ENTRY_POINT_TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
