"""What the salt-call benchmarks share: the bench containers and their pillar, a minion configured
for a fake cluster, and one timed ``salt-call --local`` with its peak RSS, CPU seconds and requests.

``bench/salt_run.py`` (its plan, no-drift apply, create and profile runs), ``bench/overlap.py`` (its
overlapping creates) and ``bench/master_run.py`` (the estates' pillars and ``salt-call`` minions) use
them; this module imports none of them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.support.cluster import ServedCluster
from tests.support.guests import TARGET, declaration
from tests.support.saltrun import FORMULA, write_minion_config

FIRST_VMID = 1000
SALT_CALL = Path(sys.executable).parent / "salt-call"


@dataclass
class Run:
    """One salt-call: wall seconds, peak RSS (MiB), CPU seconds (user + system: what a machine
    shared with other work does not inflate as it does the wall time), the PVE requests it sent,
    its state rows."""

    wall: float
    rss_mib: float
    cpu: float
    requests: list[tuple[str, str]]
    rows: list[dict[str, Any]] = field(default_factory=list)
    failure: str = ""


def bench_declaration(vmid: int) -> dict[str, Any]:
    """The declaration of bench container ``vmid``: the integration tests' creatable container,
    without a mount point, spread over both nodes."""
    return declaration(vmid=vmid, node="pve1" if vmid % 2 == 0 else "pve2", mp0=None)


def state_id(vmid: int) -> str:
    return f"ct{vmid}"


def write_pillar(pillar_dir: Path, vmids: range) -> None:
    """``top.sls`` and ``proxmox.sls`` declaring the containers ``vmids``."""
    pillar_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    (pillar_dir / "top.sls").write_text(yaml.safe_dump({"base": {"*": ["proxmox"]}}))
    lxc = {state_id(vmid): bench_declaration(vmid) for vmid in vmids}
    (pillar_dir / "proxmox.sls").write_text(yaml.safe_dump({"proxmox": {"lxc": lxc}}))


def minion(cluster: ServedCluster, work: Path, concurrency: int | None) -> Path:
    """A minion config directory for ``cluster`` with static credentials and the bench pillar,
    logging to its file at Salt's default level (warning)."""
    assert cluster.seeded is not None
    (read_id, read_secret), (prov_id, prov_secret) = cluster.seeded.read_token, cluster.seeded.provision_token
    config_dir = work / "minion"
    write_minion_config(
        config_dir,
        cluster.url,
        cluster.cafile,
        static={
            "read": {"token_id": read_id, "secret": read_secret},
            "provision": {"token_id": prov_id, "secret": prov_secret},
        },
        target=TARGET,
        pillar_roots=[str(work / "pillar")],
        extra={"file_roots": {"base": [str(FORMULA)]}},
    )
    path = config_dir / "minion"
    config = yaml.safe_load(path.read_text())
    # Salt's default log file level, as an operator's minion has it: the tests' minion logs at debug
    # (to prove no secret reaches the log), which writes every request and state line to disk.
    config["log_level_logfile"] = "warning"
    if concurrency is not None:
        config["proxmox"]["targets"][TARGET]["concurrency"] = concurrency
    path.write_text(yaml.safe_dump(config))
    return config_dir


def salt_call(cluster: ServedCluster, config_dir: Path, *args: str, profile: Path | None = None) -> Run:
    """One ``salt-call --local`` in its own process, timed, with its peak RSS and its requests."""
    assert cluster.pve is not None
    command = [str(SALT_CALL), "--local", "-c", str(config_dir), "--out=json", "--log-level=quiet", *args]
    if profile is not None:
        command = [sys.executable, "-m", "cProfile", "-o", str(profile), *command]
    start = len(cluster.pve.requests)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        began = time.perf_counter()
        proc = subprocess.Popen(
            command, stdout=out, stderr=err, env={**os.environ, "PYTHONWARNINGS": "ignore"}
        )
        _pid, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - began
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    requests = [(method, path) for method, path, _body in cluster.pve.requests[start:]]
    run = Run(
        wall=wall, rss_mib=usage.ru_maxrss / 1024, cpu=usage.ru_utime + usage.ru_stime, requests=requests
    )
    try:
        ret = json.loads(stdout)["local"]
    except (ValueError, KeyError, TypeError):
        run.failure = f"exit {proc.returncode}, no JSON return: {(stdout + stderr)[-2000:]}"
        return run
    if isinstance(ret, dict) and all(isinstance(v, dict) for v in ret.values()):
        run.rows = list(ret.values())
    elif args[0] == "state.apply":
        run.failure = f"state.apply returned {str(ret)[:2000]}"
    return run
