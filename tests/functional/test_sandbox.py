"""``scripts/sandbox PILLAR_DIR`` driven as the README tells an operator to: start it with a pillar
directory of one's own, run the plan and apply commands it prints, Ctrl-C it; everything it started is
gone afterwards and only the operator's pillar remains."""

from __future__ import annotations

import os
import selectors
import shlex
import signal
import socket
import subprocess
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

from tests.support.saltrun import REPO

pytestmark = pytest.mark.functional

#: scripts/sandbox runs scripts/bootstrap (pip) before it starts anything.
READY_TIMEOUT = 600
TEMPLATE = "local:vztmpl/debian-13-standard_13.0-1_amd64.tar.zst"
ESTATE = {
    "proxmox": {
        "lxc": {
            "mine": {
                "vmid": 170,
                "node": "pve2",
                "ostemplate": TEMPLATE,
                "unprivileged": True,
                "hostname": "mine",
                "rootfs": "local-lvm:4",
                "net0": "name=eth0,bridge=vmbr0,ip=dhcp",
            }
        },
        "pools": {"sandbox": {"comment": "Tried in the sandbox"}},
    }
}


def _read_until_ready(proc: subprocess.Popen[bytes]) -> list[str]:
    lines: list[str] = []
    deadline = time.monotonic() + READY_TIMEOUT
    assert proc.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if not selector.select(deadline - time.monotonic()):
                break
            # Unbuffered (bufsize=0): readline takes one line off the pipe, so select sees the rest.
            line = proc.stdout.readline().decode()
            if not line:
                break
            lines.append(line.rstrip("\n"))
            if line == "ready\n":
                return lines
    pytest.fail("scripts/sandbox did not print ready:\n" + "\n".join(lines))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (exited, not yet reaped by its parent) is gone as far as serving goes.
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split(") ", 1)[1][0] != "Z"


def _listening(url: str) -> bool:
    parts = urlsplit(url)
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex((parts.hostname, parts.port)) == 0


def test_sandbox_runs_your_pillar_and_stops_everything(tmp_path):
    pillar = tmp_path / "my-pillar"
    pillar.mkdir()
    (pillar / "top.sls").write_text("base:\n  '*':\n    - estate\n")
    (pillar / "estate.sls").write_text(yaml.safe_dump(ESTATE))
    proc = subprocess.Popen(
        [str(REPO / "scripts" / "sandbox"), str(pillar)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        bufsize=0,
    )
    try:
        lines = _read_until_ready(proc)
        text = "\n".join(lines)
        shown = {
            key: line.split(":", 1)[1].strip()
            for line in lines
            for key in ("plan", "apply")
            if line.startswith(f"  {key}:")
        }
        plan, apply = shown["plan"], shown["apply"]
        assert f"pillar_roots      {pillar}" in text
        pve_url = next(
            word for line in lines if line.startswith("fake PVE") for word in line.split() if "://" in word
        )
        bao_line = next(line for line in lines if line.startswith("OpenBao"))
        bao_url = next(word for word in bao_line.split() if "://" in word)
        pids = [int(word.rstrip(",)")) for word in bao_line.split() if word.rstrip(",)").isdigit()]
        pids.append(
            int(next(line for line in lines if line.startswith("fake PVE")).split("(pid ")[1].split(")")[0])
        )
        config_dir = Path(shlex.split(plan)[shlex.split(plan).index("-c") + 1])
        assert all(url.split("//")[1].startswith("127.0.0.1:") for url in (pve_url, bao_url))

        # The commands exactly as printed: the plan of this pillar, then its apply, then a clean plan.
        first = subprocess.run(shlex.split(plan), capture_output=True, text=True, timeout=300).stdout
        assert "+ proxmox-lxc-mine (proxmox_lxc.present)" in first, first
        assert (
            "Plan: 2 to create, 0 to update, 0 to destroy, 0 pending restart, 0 refused, 0 no change."
            in first
        )
        done = subprocess.run(shlex.split(apply), capture_output=True, text=True, timeout=300).stdout
        assert (
            "Apply: 2 created, 0 updated, 0 destroyed, 0 pending restart, 0 failed, 0 no change." in done
        ), done
        again = subprocess.run(shlex.split(plan), capture_output=True, text=True, timeout=300).stdout
        assert (
            "Plan: 0 to create, 0 to update, 0 to destroy, 0 pending restart, 0 refused, 2 no change."
            in again
        )

        # Ctrl-C: the sandbox stops what it started, by PID, and removes the minion config.
        proc.send_signal(signal.SIGINT)
        out, err = (stream.decode() for stream in proc.communicate(timeout=120))
    finally:
        # On a failure above, stop it as Ctrl-C would, so it stops its children; SIGKILL only if it hangs.
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.communicate(timeout=120)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
    assert proc.returncode == 0, err
    assert out.strip() == "stopped", out
    assert not any(_alive(pid) for pid in pids), pids
    assert not _listening(pve_url) and not _listening(bao_url)
    assert not config_dir.exists() and not config_dir.parent.exists()
    assert sorted(p.name for p in pillar.iterdir()) == ["estate.sls", "top.sls"], (
        "the pillar is the operator's"
    )


def test_sandbox_refuses_a_directory_without_top_sls(tmp_path):
    proc = subprocess.run(
        [str(REPO / ".venv" / "bin" / "python"), str(REPO / "demo" / "sandbox.py"), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and f"{tmp_path} is not a pillar directory" in proc.stderr
    assert "top.sls" in proc.stderr and not proc.stdout
