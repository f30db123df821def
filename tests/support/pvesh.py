"""A fake ``pvesh`` for the root lane's tests, and the request log that says who sent each request.

``write_fake_pvesh(served, directory)`` writes an executable ``pvesh`` (a shell script running this
module with a private JSON file beside it) that forwards each call to the served fakepve logged in
as ``root@pam`` (a ticket and its CSRF token from ``POST /access/ticket``, as any root@pam client
has), and prints what pve-manager's ``pvesh`` prints (``PVE/CLI/pvesh.pm``; pve-common
``PVE/CLIFormatter.pm`` ``print_api_result``, ``PVE/Exception.pm`` ``stringify``,
``PVE/RESTEnvironment.pm`` ``setup_default_cli_env`` and ``fork_worker``):

- data as pretty JSON on stdout (nothing for a ``null`` answer), exit 0;
- a task runs in the foreground, then its UPID is printed as JSON, exit 0 whatever the task's end:
  an ``OK`` end prints nothing, ``TASK ERROR: <why>`` prints ``<why>`` on stderr and ``WARNINGS: <n>``
  prints ``Task finished with <n> warning(s)!`` on stderr (pve-common ``PVE/RESTEnvironment.pm``
  ``$tee_worker``, which ``fork_worker`` runs for a CLI caller);
- a refusal on stderr as Perl's ``die`` prints a ``PVE::Exception``: ``<code> <message>``, a 400's
  ``<param>: <reason>`` lines and the usage; a 500 as a bare ``die`` prints it (its message alone,
  as pveproxy answers a bare die with 500: pve-manager ``PVE/HTTPServer.pm`` ``rest_handler``), exit 255;
- ``root: false`` makes it the pvesh a non-root user runs: ``please run as root``, exit 255;
- ``GET /cluster/status`` marks ``node`` as the ``local`` one, the node pvesh runs on;
- ``after`` (``{"<verb> <path>": how}``) spoils each matching call once fakepve answered it, as a node can:
  ``hang`` never exits (a pvesh stuck on pmxcfs), ``cut`` prints only the first half of its output
  (stdout cut off).

``SendersPve`` (a base of ``tests.support.cluster.ServedPve``) keeps ``senders``: each request's
method, path and the identity fakepve authenticated (a token id, or ``root@pam`` for a ticket), so a
test proves which identity sent a write. fakepve's own ``requests`` log keeps no identity.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
import time
from pathlib import Path
from typing import Any

from fakepve.server import USER

#: ``setup_default_cli_env``'s refusal, and the exit status of Perl's ``die`` with ``$!`` unset.
NOT_ROOT = "please run as root"
DIE = 255


class SendersPve:
    """Records ``(method, path, identity)`` of every request fakepve logs (module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.senders: list[tuple[str, str, str | None]] = []

    def _record(self, request, body):
        self.senders.append((request.method, request.path.removeprefix("/api2/json"), request.get(USER)))
        return super()._record(request, body)


#: How ``after`` spoils a call (module docstring).
SPOILS = ("hang", "cut")


def write_fake_pvesh(
    served, directory: Path, node: str = "pve1", root: bool = True, after: dict[str, str] | None = None
) -> Path:
    """Write ``directory/pvesh`` forwarding to ``served`` (a ``ServedCluster``) as root@pam on
    ``node``; ``root`` False: a pvesh run by a non-root user; ``after``: calls it spoils (module
    docstring). Returns its path."""
    assert set((after or {}).values()) <= set(SPOILS), after
    directory.mkdir(parents=True, exist_ok=True)
    config = directory / "fake-pvesh.json"
    assert served.pve is not None
    settings = {
        "url": served.url,
        "cafile": served.cafile,
        "user": served.pve.user,
        "password": served.pve.password,
        "node": node,
        "root": root,
        "after": dict(after or {}),
    }
    fd = os.open(config, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump(settings, handle)
    repo = Path(__file__).resolve().parents[2]
    script = directory / "pvesh"
    script.write_text(
        f"#!/bin/sh\nPYTHONPATH='{repo}' exec '{sys.executable}' -m tests.support.pvesh '{config}' \"$@\"\n"
    )
    script.chmod(stat.S_IRWXU)
    return script


def _parse(args: list[str]) -> tuple[str, str, dict[str, str]]:
    verb, path, rest = args[0], args[1], args[2:]
    values: dict[str, str] = {}
    while rest:
        key, value, rest = rest[0].removeprefix("--"), rest[1], rest[2:]
        values[key] = value
    values.pop("output-format", None)
    return verb, path, values


def _failed(status: int, message: str, errors: dict | None, verb: str) -> int:
    message = message.rstrip("\n")
    if status == 500:
        print(message, file=sys.stderr)
    else:
        print(f"{status} {message}", file=sys.stderr)
    for key, reason in (errors or {}).items():
        print(f"{key}: {str(reason).rstrip()}", file=sys.stderr)
    if status == 400:
        print(f"USAGE: pvesh {verb} <api_path> [OPTIONS] [FORMAT_OPTIONS]", file=sys.stderr)
    return DIE


def main(argv: list[str]) -> int:
    """Run one pvesh call (module docstring); returns the exit status."""
    import requests

    settings = json.loads(Path(argv[0]).read_text())
    if not settings["root"]:
        print(NOT_ROOT, file=sys.stderr)
        return DIE
    verb, path, values = _parse(argv[1:])
    method = {"get": "GET", "create": "POST", "set": "PUT", "delete": "DELETE"}[verb]
    base = f"{settings['url']}/api2/json"
    session = requests.Session()
    # Per request: REQUESTS_CA_BUNDLE would override a Session's verify.
    verify = settings["cafile"]
    login = session.post(
        f"{base}/access/ticket",
        data={"username": settings["user"], "password": settings["password"]},
        verify=verify,
    ).json()["data"]
    session.cookies.set("PVEAuthCookie", login["ticket"])
    session.headers["CSRFPreventionToken"] = login["CSRFPreventionToken"]
    query = method in ("GET", "DELETE")
    answer = session.request(
        method, base + path, params=values if query else None, data=None if query else values, verify=verify
    )
    body = answer.json() if answer.content else {}
    if answer.status_code >= 400:
        return _failed(
            answer.status_code, str(body.get("message") or answer.reason), body.get("errors"), verb
        )
    data = body.get("data")
    if path.rstrip("/") == "/cluster/status" and isinstance(data, list):
        for row in data:
            if row.get("type") == "node":
                row["local"] = 1 if row.get("name") == settings["node"] else 0
    if isinstance(data, str) and data.startswith("UPID:") and method != "GET":
        # The CLI runs a task in the foreground and tees its end to stdout (fork_worker's $sync).
        upid_node = data.split(":")[1]
        while True:
            status = session.get(f"{base}/nodes/{upid_node}/tasks/{data}/status", verify=verify).json()[
                "data"
            ]
            if status.get("status") == "stopped":
                break
            time.sleep(0.05)
        end = str(status.get("exitstatus"))
        warned = re.match(r"^WARNINGS: (\d+)$", end)
        if warned:
            print(f"Task finished with {warned.group(1)} warning(s)!", file=sys.stderr)
        elif end != "OK":
            print(end, file=sys.stderr)
    out = "" if data is None else json.dumps(data, indent=3, sort_keys=True) + "\n"
    spoil = settings["after"].get(f"{verb} {path}")
    if spoil == "hang":
        time.sleep(3600)
    if spoil == "cut":
        out = out[: len(out) // 2]
    sys.stdout.write(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
