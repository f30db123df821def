"""The sandbox: the demo's fake cluster and OpenBao, kept running for an operator's own pillar.

    scripts/sandbox [PILLAR_DIR]

Starts three child processes on loopback, as the demo's cluster, PBS and OpenBao: ``python -m
tests.support.cluster`` (fakepve seeded with nodes pve1 and pve2, storages local, local-lvm and
local-zfs, the Debian 13 template and installer ISO, the running CT 120, VM 300, the stopped VM 220, the
cloud-init VM template 9000, the body of the example's download URL, and the read and provision API
tokens), ``python -m tests.support.pbs`` (a staging
Proxmox Backup Server with its own read and provision tokens and the user pve-backup@pbs)
and ``python -m tests.support.openbao`` (a dev server holding those tokens at ``proxmox/creds`` and
``proxmox/creds/pbs``). It
writes a minion config directory whose ``file_roots`` is the formula and whose ``pillar_roots`` is
PILLAR_DIR — by default a new copy of ``pillar_examples/``, kept when the sandbox stops so it can be
passed back next time — prints the ``salt-call`` commands that plan and apply that pillar, and serves
until Ctrl-C (SIGINT) or SIGTERM. Then it stops the children by their PID and removes the config
directory (it holds an OpenBao token and the grains of a cluster that no longer exists).

Exit status: 0 after a clean stop; 2 when PILLAR_DIR is not a directory with a ``top.sls``; 1 when
something could not start (everything already started is stopped first).
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.support.cluster import catch_stop_signals, private_dir  # noqa: E402
from tests.support.processes import start_entry_point, stop_entry_point  # noqa: E402
from tests.support.saltrun import PILLAR, write_minion_config  # noqa: E402


def pillar_dir(argument: str | None) -> tuple[Path, bool]:
    """The pillar_roots directory and whether it is a new copy of pillar_examples/. Raises ValueError
    naming the directory when it is not one with a top.sls (Salt would render no pillar at all)."""
    if argument is None:
        copy = Path(tempfile.mkdtemp(prefix="salt-proxmox-pillar-"))
        shutil.copytree(PILLAR, copy, dirs_exist_ok=True)
        return copy, True
    path = Path(argument).expanduser().resolve()
    if not (path / "top.sls").is_file():
        raise ValueError(
            f"{path} is not a pillar directory: it needs a top.sls naming the pillar files, as "
            f"{PILLAR}/top.sls does"
        )
    return path, False


def commands(config_dir: Path) -> dict[str, str]:
    """The salt-call commands an operator runs against the sandbox, as shell lines."""
    salt_call = [str(Path(sys.executable).parent / "salt-call"), "--local", "-c", str(config_dir)]
    # Salt logs each failed state's comment at ERROR (salt/state.py format_log); the outputter prints
    # it already, so the console shows only what is critical.
    out = ["--out=proxmox_plan", "--log-level=critical"]
    return {
        "plan": shlex.join([*salt_call, "state.apply", "proxmox", "test=True", *out]),
        "apply": shlex.join([*salt_call, "state.apply", "proxmox", *out]),
        "read": shlex.join([*salt_call, "proxmox.lxc_config", "node=pve1", "vmid=120"]),
    }


def main(argv: list[str] | None = None) -> int:
    """Run the sandbox until SIGINT or SIGTERM; returns the exit status."""
    parser = argparse.ArgumentParser(prog="scripts/sandbox", description=__doc__.splitlines()[0])
    parser.add_argument(
        "pillar_dir", nargs="?", help="pillar_roots (default: a new copy of pillar_examples/)"
    )
    args = parser.parse_args(argv)
    try:
        pillar, copied = pillar_dir(args.pillar_dir)
    except ValueError as exc:
        print(f"scripts/sandbox: {exc}", file=sys.stderr)
        return 2
    # Installed before anything starts: a signal during start-up still stops what was started.
    stopping = catch_stop_signals()
    workdir = private_dir(tempfile.mkdtemp(prefix="salt-proxmox-sandbox-"))
    children = []
    try:
        with open(workdir / "children.log", "w", encoding="utf-8") as log:
            state = workdir / "state"
            cluster, pve_url = start_entry_point(
                "tests.support.cluster", "--state-dir", str(state), stderr=log
            )
            children.append(cluster)
            pbs, pbs_url = start_entry_point("tests.support.pbs", "--state-dir", str(state), stderr=log)
            children.append(pbs)
            bao, bao_url = start_entry_point(
                "tests.support.openbao",
                "--state-dir",
                str(state),
                "--creds-from",
                str(state / "cluster.json"),
                "--pbs-creds-from",
                str(state / "pbs.json"),
                stderr=log,
            )
            children.append(bao)
            cafile = json.loads((state / "cluster.json").read_text(encoding="utf-8"))["cafile"]
            openbao = json.loads((state / "openbao.json").read_text(encoding="utf-8"))
            pbs_cafile = json.loads((state / "pbs.json").read_text(encoding="utf-8"))["cafile"]
            config_dir = workdir / "etc"
            write_minion_config(
                config_dir,
                pve_url,
                cafile,
                openbao={"url": bao_url, "token": openbao["token"]},
                pillar_roots=[str(pillar)],
                pbs={"url": pbs_url, "cafile": pbs_cafile},
            )
            lines = [
                f"fake PVE cluster  {pve_url}  (pid {cluster.pid}): nodes pve1, pve2;",
                "                   storages local, local-lvm, local-zfs; CT 120 (dns1, running, on pve1);",
                "                   VM 300 (router, on pve2); VM 220 (build, stopped, on pve2);",
                "                   VM template 9000 (debian-13-cloud, on pve1);",
                "                   ISO local:iso/debian-13.2.0-amd64-netinst.iso",
                f"fake PBS          {pbs_url}  (pid {pbs.pid}): target backup1, user pve-backup@pbs",
                f"OpenBao dev server {bao_url}  (pid {openbao['pid']}, started by pid {bao.pid})",
                f"minion config     {config_dir}/minion",
                f"pillar_roots      {pillar}"
                + ("  (a copy of pillar_examples/, kept on exit)" if copied else ""),
                "",
                "Edit the pillar, then:",
                f"  plan:  {commands(config_dir)['plan']}",
                f"  apply: {commands(config_dir)['apply']}",
                f"  read:  {commands(config_dir)['read']}",
                "",
                "Ctrl-C stops the cluster, PBS and OpenBao (by their PIDs) and removes the minion config.",
                "ready",
            ]
            print("\n".join(lines), flush=True)
            stopping.wait()
    except RuntimeError as exc:
        print(f"scripts/sandbox: {exc}", file=sys.stderr)
        return 1
    finally:
        for child in reversed(children):
            stop_entry_point(child)
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"stopped; pillar kept at {pillar}" if copied else "stopped", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
