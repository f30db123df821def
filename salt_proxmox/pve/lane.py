"""The root lane: a second transport for the writes PVE lets only ``root@pam`` make
(``proxmox:targets:<t>:root_lane``). Reads stay on the read token; only root-only keys go this way.

One interface (``Lane``: ``label``, ``request``), two implementations: ``PveshLane`` here, ``pvesh``
run as root on a node of the target's cluster, and ``salt_proxmox.pve.ticket.TicketLane``, the
target's own API with a root@pam ticket got with its password from OpenBao (no node of its own, so
nothing written as a file on a node goes that way). ``pvesh`` calls the same API handlers as
pveproxy, as ``root@pam`` and with no credential (pve-manager ``PVE/CLI/pvesh.pm`` ``call_api_method``;
``setup_environment`` is pve-common ``PVE/RESTEnvironment.pm`` ``setup_default_cli_env``, whose user
is ``root@pam`` and which dies ``please run as root`` for any other uid). So "am I root" is asked of
``pvesh`` itself: a pvesh that answers runs as root@pam, one that is not root says so and exits.

What ``pvesh`` prints, and how it is read (``pvesh_error``, ``pvesh_result``):

- a success prints ``data`` as JSON with ``--output-format json`` (pve-common
  ``PVE/CLIFormatter.pm`` ``print_api_result``: ``to_json(...) . "\n"``, one line; ``json-pretty``
  spreads it over lines, each value still starting a line), nothing when the
  method returns ``null`` (a container's ``PUT …/config``); a task started from the CLI runs in the
  foreground (``PVE/RESTEnvironment.pm`` ``fork_worker``: ``$sync`` for ``cli``): its log lines go to
  stdout before the UPID, which is the last JSON value, and pvesh exits 0 however the task ended
  (``$tee_worker`` prints a ``TASK ERROR``'s reason on stderr), so the task's end is read from its
  status, as any task's;
- a failure exits non-zero with the error on stderr as Perl's ``die`` prints it: a
  ``PVE::Exception`` stringified (pve-common ``PVE/Exception.pm`` ``stringify``: ``<code> <msg>``,
  then one ``<param>: <reason>`` line per ``errors`` entry, then the usage for a 400), any other
  ``die`` its bare text. The HTTP server answers the same errors with the exception's code, or 500
  for a bare ``die`` (pve-manager ``PVE/HTTPServer.pm`` ``rest_handler``), so each maps onto the
  same ``PveError`` (``pve.errors.classify``) an HTTP answer would.

Values are passed as an argv list, never through a shell. A process's argv is readable by every
local user (``/proc/<pid>/cmdline``), so the lane never carries a secret (``SecretInLane``) and its
log lines name the path and the keys, never a value.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import unquote

from salt_proxmox.errors import DeclarationError, Uncertain
from salt_proxmox.pve.errors import PVE_WORDS, PveError, Words, classify

log = logging.getLogger(__name__)

#: ``pvesh``'s verbs (pve-manager ``PVE/CLI/pvesh.pm`` ``$method_map``).
VERBS = {"GET": "get", "POST": "create", "PUT": "set", "DELETE": "delete"}
#: The lanes ``root_lane: <via>`` names: ``pvesh`` on a node (``PveshLane``), or the API with a
#: root@pam ticket (``salt_proxmox.pve.ticket.TicketLane``).
KINDS = ("pvesh", "ticket")
DEFAULT_TIMEOUT = 120.0
DEFAULT_PVE_DIR = "/etc/pve"
DEFAULT_LOCK_DIR = "/run/lock"
#: The key of root@pam's password at the ticket lane's OpenBao path, unless ``password:key`` says.
DEFAULT_PASSWORD_KEY = "password"  # noqa: S105 - a key's name, not a password
#: pve-common ``PVE/RESTEnvironment.pm`` ``setup_default_cli_env``.
NOT_ROOT = "please run as root"
_CODED = re.compile(r"^(\d{3}) (.*)$")
_PARAM = re.compile(r"^([A-Za-z][\w-]*): (.*)$")


@dataclass(frozen=True)
class LaneConfig:
    """``proxmox:targets:<t>:root_lane`` as configured: ``via`` (``pvesh`` or ``ticket``).

    For ``pvesh``: the ``pvesh`` to run (a path; None: ``pvesh`` on the minion's PATH), ``timeout``
    (seconds one call may take), and where the node keeps what no API call writes: ``pve_dir``
    (pmxcfs, ``/etc/pve``: a container's raw ``lxc.*`` lines live in ``<pve_dir>/lxc/<vmid>.conf``)
    and ``lock_dir`` (``/run/lock``: PVE's per-guest config locks, pve-guest-common
    ``PVE/AbstractConfig.pm`` ``config_file_lock``).

    For ``ticket`` (``salt_proxmox.pve.ticket``): ``password_path``, the OpenBao path holding
    root@pam's password (as ``hvac``'s ``read`` takes it: a KV version 2 mount's ``data/`` segment
    named), and ``password_key``, its key there; calls take the target's ``timeout``."""

    via: str
    pvesh: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    pve_dir: str = DEFAULT_PVE_DIR
    lock_dir: str = DEFAULT_LOCK_DIR
    password_path: str | None = None
    password_key: str = DEFAULT_PASSWORD_KEY


#: The keys of each ``via``.
KEYS = {"pvesh": {"via", "pvesh", "timeout", "pve_dir", "lock_dir"}, "ticket": {"via", "password"}}


def parse_root_lane(target: str, raw: object, source: object = None) -> LaneConfig | None:
    """Check ``proxmox:targets:<target>:root_lane``: absent (None), ``pvesh``, a mapping ``{via:
    pvesh, pvesh: <absolute path>, timeout: <seconds>, pve_dir: <absolute path>, lock_dir: <absolute
    path>}``, or ``{via: ticket, password: {path: <OpenBao path>, key: <key, default password>}}``.
    ``source``: the target's ``credentials:source``; the ticket lane needs ``openbao``, as root@pam's
    password is read through the target's own OpenBao connection and never kept in pillar.

    Raises DeclarationError naming the key and the rule; nothing is run."""
    key = f"proxmox:targets:{target}:root_lane"
    if raw is None:
        return None
    if isinstance(raw, str):
        raw = {"via": raw}
    if not isinstance(raw, Mapping):
        raise DeclarationError(f"{key}: expected pvesh, or a mapping with via: pvesh or via: ticket")
    problems = []
    via = raw.get("via")
    if via not in KINDS:
        problems.append(f"{key}:via: expected pvesh or ticket, got {via!r}")
    unknown = sorted(map(str, set(raw) - KEYS.get(str(via), set().union(*KEYS.values()))))
    if unknown:
        problems.append(
            f"{key}: unknown key(s) {', '.join(unknown)}"
            + (f" (via: {via} takes {', '.join(sorted(KEYS[via] - {'via'}))})" if via in KEYS else "")
        )
    if via == "ticket":
        path, name, more = _ticket_password(key, raw.get("password"), source)
        if problems or more:
            raise DeclarationError([*problems, *more])
        return LaneConfig(via="ticket", password_path=path, password_key=name)
    path = raw.get("pvesh")
    if path is not None and not (isinstance(path, str) and os.path.isabs(path)):
        problems.append(f"{key}:pvesh: expected the absolute path of pvesh")
    dirs = {
        key: raw.get(key, default)
        for key, default in (("pve_dir", DEFAULT_PVE_DIR), ("lock_dir", DEFAULT_LOCK_DIR))
    }
    for name, value in dirs.items():
        if not (isinstance(value, str) and os.path.isabs(value)):
            problems.append(f"{key}:{name}: expected an absolute path")
    timeout = raw.get("timeout", DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        problems.append(f"{key}:timeout: expected a positive number of seconds")
    if problems:
        raise DeclarationError(problems)
    return LaneConfig(via=str(via), pvesh=path, timeout=float(timeout), **dirs)


def _ticket_password(key: str, raw: object, source: object) -> tuple[str, str, list[str]]:
    """``(path, key, problems)`` of a ticket lane's ``password`` (``parse_root_lane``)."""
    problems = []
    if source != "openbao":
        problems.append(
            f"{key}:via: the ticket lane reads root@pam's password from OpenBao through the target's "
            f"credentials, and its credentials:source is {source!r}: set credentials:source: openbao, or "
            "use root_lane: pvesh on a node of the cluster"
        )
    if not isinstance(raw, Mapping):
        problems.append(
            f"{key}:password: expected {{path: <OpenBao path>, key: <key>}} naming where root@pam's "
            "password is kept in OpenBao (never the password itself)"
        )
        return "", DEFAULT_PASSWORD_KEY, problems
    unknown = sorted(map(str, set(raw) - {"path", "key"}))
    if unknown:
        problems.append(f"{key}:password: unknown key(s) {', '.join(unknown)} (path, key)")
    path, name = raw.get("path"), raw.get("key", DEFAULT_PASSWORD_KEY)
    if not isinstance(path, str) or not path.strip("/"):
        problems.append(
            f"{key}:password:path: expected the OpenBao path of root@pam's password (a KV version 2 "
            "mount's with its data/ segment: secret/data/pve/root)"
        )
        path = ""
    if not isinstance(name, str) or not name:
        problems.append(f"{key}:password:key: expected the key under which the password is kept")
        name = DEFAULT_PASSWORD_KEY
    return path.strip("/"), name, problems


class SecretInLane(DeclarationError):
    """A form holding a secret was about to go through ``pvesh``'s argv; nothing was run."""


class Lane(Protocol):
    """What a root lane offers: its ``label`` for the plan (``pvesh on pve1`` once its node is
    known, ``ticket for root@pam``), ``words`` (what its sentences name, PVE's), its ``config``
    (``LaneConfig``) and ``request`` (``PveClient.request``'s shape, as root@pam:
    ``pve.tasks.await_task`` polls a lane's task through it). Its preconditions are checked by
    ``guest.lane.lane_check``."""

    label: str
    words: Words
    config: LaneConfig
    #: Whether a form holding a secret may go through it: not pvesh's argv (``SecretInLane``), the
    #: ticket lane's HTTPS form as a token's write does.
    carries_secrets: bool

    def request(
        self,
        method: str,
        path: str,
        credential: object = None,
        params: Mapping[str, str] | None = None,
        form: Mapping[str, str] | None = None,
    ) -> object: ...


def pvesh_argv(pvesh: str, method: str, path: str, form: Mapping[str, str] | None = None) -> list[str]:
    """The argv of one call: ``pvesh <get|create|set|delete> /<path> --<param> <value> ...
    --output-format json``. ``path`` as the client takes it (percent-encoded labels), decoded:
    pvesh routes the raw path (``PVE::API2->find_handler``). Raises ValueError for another method."""
    verb = VERBS.get(method)
    if verb is None:
        raise ValueError(f"pvesh has no verb for {method}")
    argv = [pvesh, verb, "/" + unquote(path.lstrip("/"))]
    for key, value in (form or {}).items():
        argv += [f"--{key}", str(value)]
    return [*argv, "--output-format", "json"]


def pvesh_error(method: str, path: str, returncode: int, stderr: str) -> PveError:
    """The ``PveError`` of a pvesh that exited ``returncode`` (non-zero) with ``stderr``: the
    status a leading ``<code> `` gives (``PVE::Exception`` ``stringify``), else 500 as pveproxy
    answers a bare ``die`` (``PVE/HTTPServer.pm`` ``rest_handler``); a 400's ``<param>: <reason>``
    lines as ``errors``; the usage text and Perl's ``at <file> line <n>.`` suffix dropped."""
    lines = [line.rstrip() for line in stderr.splitlines() if line.strip()]
    if not lines:
        return PveError(method, path, 500, f"pvesh exited {returncode} and printed nothing")
    first = lines[0]
    coded = _CODED.match(first)
    status, message = (int(coded.group(1)), coded.group(2)) if coded else (500, first)
    errors: dict[str, str] = {}
    rest = lines[1:]
    if status == 400:
        for line in rest:
            found = _PARAM.match(line)
            if not found:
                break  # the usage follows the errors
            errors[found.group(1)] = found.group(2)
    elif not coded:
        # A bare die of several lines (a task's "TASK ERROR" is one): PVE's message is all of them.
        message = " ".join([first, *rest])
    message = re.sub(r" at \S+ line \d+\.?$", "", message)
    return classify(method, path, status, message, errors or None)


def pvesh_result(method: str, path: str, stdout: str) -> object:
    """``data`` of a successful call: None for no output, else the last JSON value pvesh printed
    (a task's log lines come first), which starts a line (``print_api_result``, module docstring):
    the tail of a line cut off is never taken for an answer (``"UPID:pve1:0000`` is no ``0``).
    Raises Uncertain for a write whose output holds no JSON (PVE may have acted), ValueError for a
    read's."""
    text = stdout.strip()
    if not text:
        return None
    decoder = json.JSONDecoder()
    lines = [0, *(i + 1 for i, ch in enumerate(text) if ch == "\n")]
    for start in [i for i in lines if text[i] in '{["' or text[i].isdigit()]:
        try:
            value, end = decoder.raw_decode(text, start)
        except ValueError:
            continue
        if not text[end:].strip():
            return value
    if method != "GET":
        raise Uncertain(
            f"{method} {path} via pvesh: the output holds no JSON answer, so PVE may or may not have acted. "
            "Read the object before running the state again."
        )
    raise ValueError(f"pvesh get {path}: the output is not JSON")


class PveshLane:
    """The ``pvesh`` lane: calls run as subprocesses, as root@pam on this minion's node. ``words``: what
    its sentences name (PVE's: ``pve.tasks.await_task`` polls a lane's task and names its log command)."""

    words: Words = PVE_WORDS
    #: pvesh's argv is readable by every user of the node (``SecretInLane``).
    carries_secrets = False

    def __init__(self, config: LaneConfig):
        self.config = config
        self.label = "pvesh"
        self.sent: list[tuple[str, str]] = []

    def executable(self) -> str | None:
        """The ``pvesh`` to run: the configured path when it is an executable file, else ``pvesh``
        on PATH; None when there is none."""
        if self.config.pvesh is not None:
            path = self.config.pvesh
            return path if os.path.isfile(path) and os.access(path, os.X_OK) else None
        return shutil.which("pvesh")

    def request(
        self,
        method: str,
        path: str,
        credential: object = None,
        params: Mapping[str, str] | None = None,
        form: Mapping[str, str] | None = None,
        secrets: Sequence[str] = (),
    ) -> object:
        """Run one call as root@pam; returns its ``data`` (``pvesh_result``). ``credential`` is
        ignored (pvesh needs none); ``params`` and ``form`` both become ``--<param> <value>``.

        Raises SecretInLane when ``secrets`` names a key of the form (nothing run), PveError for a
        refusal (``pvesh_error``), Uncertain when a write timed out or its answer cannot be read,
        PveError 500 when pvesh cannot be run at all (nothing was sent)."""
        values = {**(params or {}), **(form or {})}
        carried = sorted(set(secrets) & set(values))
        if carried:
            raise SecretInLane(
                f"{', '.join(carried)}: a secret never goes through the root lane (pvesh's argv is readable "
                "by every user of the node)"
            )
        pvesh = self.executable()
        if pvesh is None:
            raise PveError(method, path, 500, f"pvesh cannot be run ({self.config.pvesh or 'not on PATH'})")
        argv = pvesh_argv(pvesh, method, path, values)
        log.debug("root lane: pvesh %s /%s (keys: %s)", argv[1], path, ", ".join(sorted(values)) or "none")
        self.sent.append((method, path))
        try:
            # An argv list, never a shell.
            done = subprocess.run(
                argv, capture_output=True, text=True, timeout=self.config.timeout, check=False
            )
        except subprocess.TimeoutExpired:
            if method == "GET":
                raise PveError(method, path, 500, f"pvesh timed out after {self.config.timeout:g}s") from None
            raise Uncertain(
                f"{method} {path} via pvesh: no answer within {self.config.timeout:g}s; PVE may or may not "
                "have acted. Read the object before running the state again."
            ) from None
        except OSError as exc:
            raise PveError(method, path, 500, f"pvesh cannot be run ({exc.strerror})") from None
        if done.returncode != 0:
            raise pvesh_error(method, path, done.returncode, done.stderr)
        return pvesh_result(method, path, done.stdout)
