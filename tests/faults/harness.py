"""What a fault scenario runs in, and the checks every scenario gets.

A ``Run`` is one scenario's world: a freshly seeded fake cluster (``ServedCluster``), the ownership
store the state sees (a ``MemoryStore`` here; the rows file beside the grains file under ``salt-call``), the
``proxmox:targets`` and ``openbao:`` blocks the Salt module would read, and the secrets that must
never show. A scenario's ``setup`` changes that world through fakepve's own fault injection
(``fail()``, ``lose_quorum()``, ``set_node_offline()``, ``hold_config_lock()``, ``time_scale``,
removing a token from ``apitokens``) and, where fakepve has no switch for a fault, through the few
helpers below:

- ``serve_config`` answers one config GET with a body of the test's choosing (a 200 that is not a
  config); ``extra_index_rows`` adds rows to ``cluster/resources``: fakepve looks both up on the
  instance for every request, so wrapping them there changes only those answers;
- ``dead_member`` is a loopback port that is bound but not listening: connecting is refused at once;
- ``before`` runs an action just before the client sends a matching request — "between calls":
  a concurrent edit, a node going offline, a token revoked — and the request then really goes out;
  ``before_lane`` the same before the product runs ``pvesh`` for a matching call of the root lane;
- ``root_lane`` gives the target a root lane (``proxmox:targets:<t>:root_lane``): a fake ``pvesh``
  (``tests.support.pvesh``) in a directory of the run's own, forwarding to the fake cluster as
  root@pam, and a ``pve_dir``/``lock_dir`` under it, where the fake keeps the containers' config
  files when asked (``tests.support.pmxcfs``);
- ``lose_answer`` lets a matching request really reach fakepve (PVE acts on it) and replaces its
  answer, as a proxy between the minion and pveproxy would lose it: a 504, pveproxy's 596/597, an
  HTML 200, a body cut off or one that cannot be decompressed;
- ``FailingStore`` is the ownership store of a rows file that cannot be written: saving a row of
  the given phase fails as a read-only filesystem does.

The checks (``leaks``, ``disagreements``, ``forbidden_writes``) are the promises every row of the
matrix keeps, whatever it injects.
"""

from __future__ import annotations

import contextlib
import json
import logging
import secrets
import shutil
import socket
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote

import hvac
import requests

from salt_proxmox.ownership.rows import CREATING, OWNED
from salt_proxmox.ownership.stores import MemoryStore, OwnershipFileError
from salt_proxmox.run.context import PveContext
from tests.support.cluster import ServedCluster
from tests.support.guests import TARGET, requests_since
from tests.support.pvesh import write_fake_pvesh

LOOPBACK = "127.0.0.1"


@dataclass
class Hook:
    """Run ``action(run)`` before the client sends ``method`` to a path ending in ``suffix``."""

    method: str
    suffix: str
    action: Callable[[Run], None]
    once: bool = True
    fired: int = 0
    #: A call of the root lane (``pvesh``) rather than of the client.
    lane: bool = False


#: How ``lose_answer`` loses an answer: a replacement (status, body) or an exception to raise.
LOST_ANSWERS: dict[str, tuple[int, bytes] | Exception] = {
    "504": (504, b"<html><body><h1>504 Gateway Time-out</h1></body></html>"),
    "596": (596, b""),
    "597": (597, b""),
    "html-200": (200, b"<html><body>Welcome to the portal</body></html>"),
    "chunked": requests.exceptions.ChunkedEncodingError("Connection broken: IncompleteRead(12 bytes read)"),
    "gzip": requests.exceptions.ContentDecodingError("Received response with content-encoding: gzip"),
    "read-timeout": requests.exceptions.ReadTimeout("Read timed out. (read timeout=30)"),
}


class FailingStore(MemoryStore):
    """A MemoryStore whose save fails, as the rows file on a read-only filesystem does, when it
    would set a row to ``phase``."""

    PATH = "/etc/salt/salt_proxmox_owned.json"

    def __init__(self, rows, phase: str):
        super().__init__(rows)
        self.phase = phase

    def save(self, rows: dict[str, dict], changed: str | None = None) -> None:
        if any(
            isinstance(r, dict) and r.get("phase") == self.phase and self.rows.get(k) != r
            for k, r in rows.items()
        ):
            raise OwnershipFileError(f"{self.PATH}: cannot be written (Read-only file system)")
        super().save(rows, changed)


class Faults:
    """What a scenario's world does whatever server it holds (``Run``: a PVE cluster; ``PbsRun`` of
    ``tests.faults.pbs_harness``: a PBS): its dataclass has ``hooks``, ``lost`` and ``_closers``."""

    hooks: list[Hook]
    lost: list[tuple[str, str, str]]
    _closers: list[Callable[[], None]]

    def before(self, method: str, suffix: str, action: Callable[[Any], None], once: bool = True) -> None:
        """Do ``action`` just before the first matching request (every one unless ``once``)."""
        self.hooks.append(Hook(method, suffix, action, once))

    def before_lane(self, method: str, suffix: str, action: Callable[[Any], None]) -> None:
        """Do ``action`` just before the product runs ``pvesh`` for the first matching call."""
        self.hooks.append(Hook(method, suffix, action, lane=True))

    def lose_answer(self, method: str, suffix: str, how: str) -> None:
        """The first ``method`` request to a path ending in ``suffix`` reaches the fake, which acts on
        it; its answer is then lost as ``LOST_ANSWERS[how]`` says."""
        self.lost.append((method, suffix, how))

    def dead_member(self) -> str:
        """An https URL on loopback where nothing listens (connect is refused), kept so for the run."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind((LOOPBACK, 0))
        self._closers.append(sock.close)
        return f"https://{LOOPBACK}:{sock.getsockname()[1]}"

    def close(self) -> None:
        """Release what the run bound (dead members)."""
        for closer in self._closers:
            closer()
        self._closers.clear()


@dataclass
class Run(Faults):
    """One scenario's world; see the module docstring.

    ``foreign``: vmids a setup or hook put on the cluster (somebody else's guests, not this state's);
    ``secrets``: every secret in play (token secrets, OpenBao tokens, AppRole secret ids, lease ids).
    The repr leaves out everything that holds a secret, so a failing assertion cannot print one.
    """

    cluster: ServedCluster
    store: MemoryStore
    targets: dict[str, Any] = field(repr=False)
    openbao: dict[str, Any] | None = field(default=None, repr=False)
    bao_root: hvac.Client | None = field(default=None, repr=False)
    secrets: list[str] = field(default_factory=list, repr=False)
    hooks: list[Hook] = field(default_factory=list)
    lost: list[tuple[str, str, str]] = field(default_factory=list)
    foreign: set[int] = field(default_factory=set)
    #: Other clusters a setup serves (a root lane's pvesh on a node of another cluster).
    others: list[ServedCluster] = field(default_factory=list)
    _closers: list[Callable[[], None]] = field(default_factory=list)

    @property
    def pve(self):
        """The fake's model: ``fail()``, ``apitokens``, ``ct()``, ``requests``, ..."""
        return self.cluster.pve

    @property
    def target(self) -> dict[str, Any]:
        """The one ``proxmox:targets`` entry, to change members or credentials."""
        return self.targets[TARGET]

    def token(self, token_id: str, *privs: str, path: str = "/") -> dict[str, str]:
        """Register a PVE API token with ``privs`` on ``path``; returns ``{token_id, secret}``."""
        secret = secrets.token_hex(16)
        self.pve.apitokens[token_id] = secret
        if privs:
            self.pve.grant(token_id, path, *privs)
        self.secrets.append(secret)
        return {"token_id": token_id, "secret": secret}

    def serve_config(self, vmid: int, data: object) -> None:
        """Answer the read of CT ``vmid``'s config (``GET .../lxc/{vmid}/pending``) with HTTP 200 and
        ``data``: a mapping as PVE's rows of that config (``{key, value}`` each), anything else as it is."""
        pve = self.pve
        original = pve.answer
        if isinstance(data, dict):
            data = [{"key": key, "value": value} for key, value in data.items()]

        async def answer(request, match, params, user, call=None):
            if request.method == "GET" and request.path.endswith(f"/lxc/{vmid}/pending"):
                return data
            return await original(request, match, params, user, call)

        pve.answer = answer

    def extra_index_rows(self, rows: list[object]) -> None:
        """Add ``rows`` to every ``GET cluster/resources`` answer."""
        pve = self.pve
        original = pve.ct_resources

        def ct_resources(user, kind=None):
            return [*original(user, kind), *rows]

        pve.ct_resources = ct_resources

    def root_lane(
        self, files: bool = False, timeout: float | None = None, served: Any = None, **fake: Any
    ) -> Path:
        """Give the target a root lane: a fake ``pvesh`` (``write_fake_pvesh``'s ``node``, ``root``,
        ``after`` from ``fake``) forwarding to ``served`` (default: the run's cluster) in a directory
        removed when the run closes, and ``pve_dir``/``lock_dir`` under it; with ``files`` the fake
        keeps the containers' config files in that ``pve_dir``. The root@pam password the fake pvesh
        logs in with joins ``secrets``. Returns the directory."""
        served = served or self.cluster
        where = Path(tempfile.mkdtemp(prefix="salt-proxmox-lane-"))
        self._closers.append(lambda: shutil.rmtree(where, ignore_errors=True))
        pvesh = write_fake_pvesh(served, where / "bin", **fake)
        lane: dict[str, Any] = {"via": "pvesh", "pvesh": str(pvesh), "pve_dir": str(where / "etc" / "pve"),
                                "lock_dir": str(where / "run" / "lock")}  # fmt: skip
        if timeout is not None:
            lane["timeout"] = timeout
        self.target["root_lane"] = lane
        if files:
            self.pve.pve_dir = where / "etc" / "pve"
            self.pve.files_out()
        self.secrets.append(served.pve.password)
        return where

    def add_guest(self, vmid: int, node: str = "pve1", **config: object) -> None:
        """Somebody else's container on the cluster (recorded in ``foreign``)."""
        self.pve.add_ct(vmid, node=node, status="stopped", config=dict(config), defaults=False)
        self.foreign.add(vmid)


def install_hooks(ctx: PveContext, run: Run) -> None:
    """Wrap ``ctx.client.request`` so ``run.hooks`` fire before matching requests, and the session's
    transport so ``run.lost`` answers are lost after fakepve acted."""
    if run.lost:
        _lose_answers(ctx.client.session, run.lost)
    if not run.hooks:
        return
    _hooked(ctx.client, [hook for hook in run.hooks if not hook.lane], run)
    if ctx.lane is not None:
        _hooked(ctx.lane, [hook for hook in run.hooks if hook.lane], run)


def _hooked(sender: Any, hooks: list[Hook], run: Run) -> None:
    """Wrap ``sender.request`` (the client's, or the lane's) so ``hooks`` fire before matching calls."""
    if not hooks:
        return
    original = sender.request

    def request(method, path, credential=None, params=None, form=None, **more):
        for hook in hooks:
            sent = "/" + unquote(path).lstrip("/")
            if hook.method == method and sent.endswith(hook.suffix) and not (hook.once and hook.fired):
                hook.fired += 1
                hook.action(run)
        return original(method, path, credential, params=params, form=form, **more)

    sender.request = request


def _lose_answers(session: requests.Session, lost: list[tuple[str, str, str]]) -> None:
    original = session.request
    pending = list(lost)

    def request(method, url, **kwargs):
        response = original(method, url, **kwargs)
        path = unquote(url.split("?", 1)[0])
        for rule in pending:
            if rule[0] == method and path.endswith(rule[1]):
                pending.remove(rule)
                how = LOST_ANSWERS[rule[2]]
                if isinstance(how, Exception):
                    raise how
                response.status_code, response._content = how
                response.headers["Content-Type"] = "text/html"
                break
        return response

    session.request = request


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s %(message)s"))
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@contextlib.contextmanager
def debug_log() -> Iterator[list[str]]:
    """Every log record at DEBUG and above, formatted with its traceback, while the block runs.

    A handler on the root logger rather than pytest's ``caplog``: the suite also runs with
    ``-p no:logging``, which removes ``caplog``.
    """
    handler = _Capture()
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield handler.lines
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


def with_lease_ids(monkeypatch, canary: str) -> None:
    """Give every OpenBao read a ``lease_id`` ending in ``canary``.

    A KV version 1 mount answers ``lease_id: ""``; the PVE-token secrets engines answer a real one.
    Adding one to each real answer gives the leak checks a lease id to look for.
    """
    original = hvac.Client.read

    def read(self, path, wrap_ttl=None):
        answer = original(self, path, wrap_ttl=wrap_ttl)
        if isinstance(answer, dict) and answer.get("data") is not None:
            answer = dict(answer, lease_id=f"{path}/{canary}")
        return answer

    monkeypatch.setattr(hvac.Client, "read", read)


def leaks(places: dict[str, str], secrets_in_play: Iterable[str]) -> list[str]:
    """Where a secret shows: ``["comment holds secret #2", ...]`` (the secret itself never printed)."""
    found = []
    for index, secret in enumerate(secrets_in_play):
        if not secret:
            continue
        for where, text in places.items():
            if secret in text:
                found.append(f"{where} holds secret #{index}")
    return found


def guests(run: Run) -> dict[int, str]:
    """vmid → node of every guest on the cluster, containers and VMs."""
    return {**{vm.vmid: vm.node for vm in run.pve.vms}, **{ct.vmid: ct.node for ct in run.pve.cts}}


def creates(log: list[tuple[str, str, Any]]) -> list[int]:
    """The vmids of the create POSTs in a request log: ``POST /nodes/{node}/lxc`` and ``…/qemu``
    (``vmid``), and a VM clone (``POST …/qemu/{template}/clone``, ``newid``)."""
    out = []
    for method, path, body in log:
        if method != "POST" or not path.startswith("/nodes/"):
            continue
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body or "")
        if path.rstrip("/").endswith(("/lxc", "/qemu")):
            out.append(int(parse_qs(text).get("vmid", ["0"])[0]))
        elif path.endswith("/clone"):
            out.append(int(parse_qs(text).get("newid", ["0"])[0]))
    return out


def forbidden_writes(run: Run, before: dict[int, str], log: list[tuple[str, str, Any]]) -> list[str]:
    """Writes the rules never allow, whatever the scenario: a create of a vmid that existed when the
    run began, or a second create in one run (a create is never repeated, least of all after an
    uncertain one)."""
    problems = []
    made = creates(log)
    problems += [f"POST create of CT {vmid}, which existed before the run" for vmid in made if vmid in before]
    if len(made) > 1:
        problems.append(f"{len(made)} create POSTs in one run: {made}")
    return problems


def disagreements(
    run: Run, before: dict[int, str], log: list[tuple[str, str, Any]], seeded: dict[str, dict]
) -> list[str]:
    """Where the ownership rows and the cluster disagree after a run.

    - an ``owned`` row for a guest the cluster does not have (on the row's node);
    - a ``creating`` row with no create POST behind it (in this run, or seeded so);
    - a guest this run made (not there before, not somebody else's) with no row at all.
    """
    problems = []
    now = guests(run)
    posted = set(creates(log))
    rows = run.store.rows
    for key, row in rows.items():
        if not isinstance(row, dict):
            continue  # a malformed row the state refused to read; it is reported, not repaired
        if key.split("/", 2)[1] not in ("lxc", "qemu"):
            continue  # another family's row (a firewall rule list): its row pins its phase
        vmid = int(key.rsplit("/", 1)[1])
        node = (row.get("declared") or {}).get("node")
        if row.get("phase") == OWNED and now.get(vmid) != node:
            problems.append(f"{key} is owned but the cluster has no CT {vmid} on {node}")
        if (
            row.get("phase") == CREATING
            and vmid not in posted
            and seeded.get(key, {}).get("phase") != CREATING
        ):
            problems.append(f"{key} is creating but no create of CT {vmid} was sent")
        if row.get("phase") not in (OWNED, CREATING):
            problems.append(f"{key} has phase {row.get('phase')!r}")
    for vmid in set(now) - set(before) - run.foreign:
        if not any(key.endswith((f"/lxc/{vmid}", f"/qemu/{vmid}")) for key in rows):
            problems.append(f"guest {vmid} was made by this run but no row records it")
    return problems


def pve_log(run: Run, start: int) -> list[tuple[str, str, Any]]:
    """fakepve's request log since ``start``: (method, decoded path, body)."""
    return requests_since(run.cluster, start)


#: The login of the fake ``pvesh`` (a root@pam ticket): it writes nothing to the cluster.
LOGIN = ("POST", "/access/ticket")


#: Who sent each request: ``(method, path, identity)`` (``SendersPve.senders``).
Senders = Sequence[tuple[str, str, str | None]]


def write_lines(log: list[tuple[str, str, Any]], senders: Senders = ()) -> list[str]:
    """``["POST /nodes/pve1/lxc", "PUT /nodes/pve1/lxc/150/config as root@pam", ...]``: the writes of
    a log, in order, logins left out; with ``senders`` (``SendersPve.senders`` of the same requests)
    a write root@pam sent (through the root lane) says so."""
    who = [sender[2] for sender in senders] if senders else [None] * len(log)
    return [
        f"{method} {path}" + (" as root@pam" if sender == "root@pam" else "")
        for (method, path, _), sender in zip(log, who, strict=True)
        if method != "GET" and (method, path) != LOGIN
    ]


def senders_of(run: Run, log: list[tuple[str, str, Any]]) -> Senders:
    """The identities of ``log``'s requests (the last ``len(log)`` entries of ``SendersPve.senders``,
    which records each request fakepve logs)."""
    return run.pve.senders[len(run.pve.senders) - len(log) :] if log else []


def dump(value: object) -> str:
    """A value as text for the leak checks."""
    return json.dumps(value, sort_keys=True, default=repr)
