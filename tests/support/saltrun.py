"""Running ``salt-call --local`` against the harness: a minion config in a private directory, the
call itself with JSON output, and a readable summary of a state run.

Shared by the demo (``demo/run.py``) and the functional tests, so both exercise the same path an
operator takes: the formula from ``formula/``, the pillar from ``pillar_examples/``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
FORMULA = REPO / "formula"
PILLAR = REPO / "pillar_examples"


def example_pillar(tmp_path: Path, change: Callable[[dict], None] | None = None) -> Path:
    """A copy of ``pillar_examples`` under ``tmp_path/pillar``, its ``proxmox.sls`` edited by
    ``change(data)``; returns the directory (a ``pillar_roots`` entry)."""
    root = tmp_path / "pillar"
    root.mkdir(exist_ok=True)
    for name in ("top.sls", "secrets.sls", "node.sls"):
        shutil.copy(PILLAR / name, root / name)
    data = yaml.safe_load((PILLAR / "proxmox.sls").read_text())
    if change is not None:
        change(data)
    (root / "proxmox.sls").write_text(yaml.safe_dump(data))
    return root


def pillar_secrets(pillar_dir: Path = PILLAR) -> list[str]:
    """Every value of ``secrets.sls`` in ``pillar_dir`` (the estate's secrets: a container's create
    ``password``, a VM's ``cipassword``, ...), for the checks that none reaches an output, a log,
    grains or a file."""
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for value in node.values():
                walk(value)
        elif isinstance(node, str):
            found.append(node)

    path = pillar_dir / "secrets.sls"
    if path.exists():
        walk(yaml.safe_load(path.read_text(encoding="utf-8")))
    return found


def snippet_contents(pillar_dir: Path = PILLAR) -> list[str]:
    """The content of every snippet ``node.sls`` in ``pillar_dir`` declares (``proxmox:snippets``):
    cloud-init user data may hold secrets, so the same checks as ``pillar_secrets`` apply to it."""
    path = pillar_dir / "node.sls"
    data = yaml.safe_load(path.read_text(encoding="utf-8")) if path.exists() else None
    storages = ((data or {}).get("proxmox") or {}).get("snippets") or {}
    return [entry["content"] for files in storages.values() for entry in files.values() if "content" in entry]


def files_holding(root: Path, secrets: list[str]) -> dict[str, list[int]]:
    """Every file under ``root`` holding one of ``secrets``: ``{path relative to root: [index in
    secrets of each it holds]}``. Compared as UTF-8 bytes, so a copy Salt pickled or packed with
    msgpack (``highstate.cache.p``, ``sls.p``, ``proc/`` job files), logged or wrote to grains counts;
    the secrets themselves are never shown. Sockets and other special files are skipped."""
    found: dict[str, list[int]] = {}
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.is_symlink():
            continue
        data = path.read_bytes()
        held = [index for index, secret in enumerate(secrets) if secret and secret.encode() in data]
        if held:
            found[str(path.relative_to(root))] = held
    return found


def write_minion_config(
    config_dir: Path,
    cluster_url: str,
    cafile: str,
    openbao: dict[str, str] | None = None,
    static: dict[str, dict[str, str]] | None = None,
    target: str = "demo",
    pillar_roots: list[str] | None = None,
    extra: dict[str, Any] | None = None,
    pbs: dict[str, Any] | None = None,
    root_lane: dict[str, str] | None = None,
) -> Path:
    """Write ``config_dir/minion`` (0600) for a masterless minion and return its path.

    ``openbao``: ``{"url", "token"}`` → credentials minted from OpenBao at ``proxmox/creds``;
    ``static``: ``{"read": {token_id, secret}, "provision": {...}}`` → static credentials.
    ``pbs``: ``{"url", "cafile"}`` of a PBS (tests.support.pbs) → ``proxmox:pbs_targets:backup1``, its
    tokens minted from OpenBao at ``proxmox/creds/pbs`` (``publish_pbs``), or with ``"static":
    {"read": ..., "provision": ...}`` static ones.
    ``root_lane``: the target's ``root_lane`` (``tests.support.lanes.node_lane``); ``top.sls`` then
    includes ``node.sls``, the example's declarations that go through it.
    Targets and OpenBao go in the minion config (read with ``config.get``); the estate comes
    from the pillar.
    """
    config_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    root = config_dir / "root"
    if openbao is not None:
        credentials: dict[str, Any] = {"source": "openbao", "path": "proxmox/creds"}
    else:
        credentials = {"source": "static", **(static or {})}
    config: dict[str, Any] = {
        "root_dir": str(root),
        "pki_dir": str(root / "pki"),
        "cachedir": str(root / "cache"),
        "sock_dir": str(root / "sock"),
        "log_file": str(root / "minion.log"),
        "log_level_logfile": "debug",
        "file_client": "local",
        "id": "salt-proxmox-demo",
        "file_roots": {"base": [str(FORMULA)]},
        "pillar_roots": {"base": pillar_roots or [str(PILLAR)]},
        "proxmox": {
            "targets": {target: {"members": [cluster_url], "verify": cafile, "credentials": credentials}}
        },
    }
    if root_lane is not None:
        config["proxmox"]["targets"][target]["root_lane"] = dict(root_lane)
    if pbs is not None:
        pbs_credentials = (
            {"source": "static", **pbs["static"]}
            if "static" in pbs
            else {"source": "openbao", "path": "proxmox/creds/pbs"}
        )
        config["proxmox"]["pbs_targets"] = {
            "backup1": {"members": [pbs["url"]], "verify": pbs["cafile"], "credentials": pbs_credentials}
        }
    if openbao is not None:
        config["openbao"] = {
            "url": openbao["url"],
            "verify": True,
            "auth": {"method": "token", "token": openbao["token"]},
        }
    config.update(extra or {})
    path = config_dir / "minion"
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path


def salt_call(
    config_dir: Path, *args: str, timeout: float = 600, salt_call_bin: Path | None = None
) -> tuple[dict[str, Any], str]:
    """Run ``salt-call --local -c config_dir <args> --out=json``; returns (the ``local`` return,
    the raw stdout+stderr). Raises RuntimeError when the output is not JSON.

    ``salt_call_bin``: the salt-call of another environment; default the one beside this Python."""
    salt_call_bin = salt_call_bin or Path(sys.executable).parent / "salt-call"
    command = [str(salt_call_bin), "--local", "-c", str(config_dir), "--out=json", "--log-level=quiet", *args]
    proc = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    raw = proc.stdout + proc.stderr
    try:
        return json.loads(proc.stdout)["local"], raw
    except (ValueError, KeyError, TypeError):
        raise RuntimeError(f"salt-call exited {proc.returncode} without a JSON return:\n{raw}") from None


def salt_call_text(
    config_dir: Path,
    *args: str,
    out: str = "proxmox_plan",
    timeout: float = 600,
    salt_call_bin: Path | None = None,
) -> str:
    """Run ``salt-call --local -c config_dir <args> --out=<out> --no-color``; returns its stdout as an
    operator sees it (the ``proxmox_plan`` outputter by default). ``salt_call_bin`` as for salt_call."""
    salt_call_bin = salt_call_bin or Path(sys.executable).parent / "salt-call"
    command = [str(salt_call_bin), "--local", "-c", str(config_dir), f"--out={out}", "--no-color"]
    proc = subprocess.run(
        [*command, "--log-level=quiet", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    return proc.stdout


def state_rows(ret: dict[str, Any] | list | str) -> list[dict[str, Any]]:
    """The state returns of a ``state.apply`` in run order: ``{id, function, result, changes, comment}``.

    A render error (a list of strings) becomes one failed row."""
    if not isinstance(ret, dict):
        return [{"id": "render", "function": "", "result": False, "changes": {}, "comment": str(ret)}]
    rows = []
    for key, value in sorted(ret.items(), key=lambda item: item[1].get("__run_num__", 0)):
        parts = key.split("_|-")
        rows.append(
            {
                "id": parts[1] if len(parts) > 1 else key,
                "function": f"{parts[0]}.{parts[-1]}" if len(parts) > 3 else key,
                "result": value.get("result"),
                "changes": value.get("changes") or {},
                "comment": value.get("comment") or "",
            }
        )
    return rows


def summary(title: str, rows: list[dict[str, Any]]) -> str:
    """A readable block: per state its result, changes and comment lines."""
    marks = {True: "ok     ", None: "pending", False: "FAILED "}
    lines = [f"== {title} =="]
    for row in rows:
        lines.append(f"  [{marks.get(row['result'], '?')}] {row['id']} ({row['function']})")
        for key, change in sorted(row["changes"].items()):
            if isinstance(change, dict) and set(change) <= {"old", "new"}:
                lines.append(f"        {key}: {change.get('old')!r} -> {change.get('new')!r}")
            else:
                lines.append(f"        {key}: {json.dumps(change, sort_keys=True)}")
        for comment in str(row["comment"]).splitlines():
            lines.append(f"        # {comment}")
    counts = {
        label: sum(1 for r in rows if r["result"] is value)
        for value, label in ((True, "ok"), (None, "pending"), (False, "failed"))
    }
    lines.append(
        f"  {len(rows)} states: {counts['ok']} ok, {counts['pending']} pending, {counts['failed']} failed"
    )
    return "\n".join(lines)


def edited_pillar(tmp_path: Path, change: Callable[[dict], None]) -> Path:
    """A pillar root under ``tmp_path`` holding ``pillar_examples`` with its ``proxmox.sls`` edited by
    ``change(data)`` (``top.sls``, ``secrets.sls`` and ``node.sls`` copied as they are)."""
    root = tmp_path / "pillar"
    root.mkdir(exist_ok=True)
    for name in ("top.sls", "secrets.sls", "node.sls"):
        shutil.copy(PILLAR / name, root / name)
    data = yaml.safe_load((PILLAR / "proxmox.sls").read_text())
    change(data)
    (root / "proxmox.sls").write_text(yaml.safe_dump(data))
    return root
