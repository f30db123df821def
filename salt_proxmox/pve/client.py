"""The PVE HTTP client: one ``requests.Session`` per target, API-token auth, member failover.

- TLS is verified by default (``verify`` true, or a CA bundle path); ``false`` only when stated.
- Every call has a timeout (seconds; ``timeout`` of the target, default 30).
- Members are tried in order only when one does not answer (a connection error or timeout): an
  HTTP answer, even a 5xx, is an answer and is not retried elsewhere. A write that timed out
  after sending is not re-sent to another member: its outcome is unknown (``Uncertain``).
- Path labels are percent-encoded (a UPID holds ``:``, ``@`` and ``!``); PVE's
  ``APIServer/AnyEvent.pm`` unescapes before routing.
- The token is sent as ``Authorization: PVEAPIToken=USER@REALM!TOKENID=SECRET``
  (pve-access-control ``PVE::AccessControl``); the header is built per request and never kept
  in an error or a log line.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import quote

import requests
from requests.adapters import HTTPAdapter

from salt_proxmox.errors import DeclarationError, Uncertain
from salt_proxmox.pve.errors import PveMalformed, PveUnreachable, classify

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 30.0
#: Reads a run sends at once when it reads ahead (``salt_proxmox.readahead``), unless the target
#: says ``concurrency``.
DEFAULT_CONCURRENCY = 8
#: The most a target may ask for, so that a slip of the pen (800) cannot open hundreds of
#: connections to one node at once.
MAX_CONCURRENCY = 64


@dataclass(frozen=True)
class Credential:
    """One PVE API token: ``token_id`` is ``user@realm!name``. ``lease_seconds`` is the lease
    OpenBao granted (0: no lease bound); ``minted_at`` a monotonic clock reading, seconds.

    ``repr``/``str`` never show the secret or the lease id.
    """

    token_id: str
    secret: str = field(repr=False)
    role: str = "read"
    lease_id: str = field(default="", repr=False)
    lease_seconds: int = 0
    minted_at: float = 0.0

    def header(self) -> str:
        """The Authorization header value. Only the client calls this."""
        return f"PVEAPIToken={self.token_id}={self.secret}"


@dataclass(frozen=True)
class Target:
    """One cluster as configured under ``proxmox:targets:<name>``.

    ``members``: base URLs (``https://pve1:8006``) tried in order; ``verify``: True, False or a
    CA bundle path; ``timeout``: seconds per request; ``concurrency``: the most reads a run
    sends at once when it reads ahead; ``credentials``: the raw credentials block (see
    ``salt_proxmox.openbao.creds``).
    """

    name: str
    members: tuple[str, ...]
    verify: bool | str = True
    timeout: float = DEFAULT_TIMEOUT
    concurrency: int = DEFAULT_CONCURRENCY
    credentials: Mapping[str, object] = field(default_factory=dict, repr=False)


def parse_target(name: str, raw: object) -> Target:
    """Check one ``proxmox:targets`` entry.

    Raises DeclarationError naming the key: ``members`` must be a non-empty list of https URLs
    (http only for loopback test servers is still refused: PVE serves https only),
    ``verify`` a bool or a path, ``timeout`` a positive number of seconds, ``concurrency`` a
    whole number from 1 to ``MAX_CONCURRENCY``.
    """
    if not isinstance(raw, Mapping):
        raise DeclarationError(f"proxmox:targets:{name}: expected a mapping")
    problems = []
    unknown = sorted(set(raw) - {"members", "verify", "timeout", "concurrency", "credentials"})
    if unknown:
        problems.append(f"proxmox:targets:{name}: unknown key(s) {', '.join(map(str, unknown))}")
    members = raw.get("members")
    if isinstance(members, str):
        members = [members]
    if not isinstance(members, list) or not members or not all(isinstance(m, str) for m in members):
        problems.append(f"proxmox:targets:{name}:members: expected a list of https://host:8006 URLs")
        members = []
    elif bad := [m for m in members if not m.startswith("https://")]:
        problems.append(f"proxmox:targets:{name}:members: {', '.join(bad)}: PVE's API is served over https")
    verify = raw.get("verify", True)
    if not isinstance(verify, bool | str) or verify == "":
        problems.append(f"proxmox:targets:{name}:verify: expected true, false or a CA bundle path")
    timeout = raw.get("timeout", DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        problems.append(f"proxmox:targets:{name}:timeout: expected a positive number of seconds")
    concurrency = raw.get("concurrency", DEFAULT_CONCURRENCY)
    whole = isinstance(concurrency, int) and not isinstance(concurrency, bool)
    if not whole or not 1 <= concurrency <= MAX_CONCURRENCY:
        problems.append(
            f"proxmox:targets:{name}:concurrency: expected a whole number of reads, 1 to {MAX_CONCURRENCY}"
        )
    credentials = raw.get("credentials")
    if not isinstance(credentials, Mapping):
        problems.append(f"proxmox:targets:{name}:credentials: expected a mapping (source: openbao|static)")
        credentials = {}
    if problems:
        raise DeclarationError(problems)
    return Target(
        name=name,
        members=tuple(m.rstrip("/") for m in members),
        verify=verify,
        timeout=float(timeout),
        concurrency=concurrency,
        credentials=credentials,
    )


def new_session(target: Target) -> requests.Session:
    """The one ``requests.Session`` a target's calls share within a run, keeping up to
    ``target.concurrency`` connections per member alive (requests' default keeps 10).

    Reads ahead share it from several threads: each request prepares its own ``Request``, the
    connection pool (urllib3's) hands each thread its own connection under a lock, and PVE's
    token auth sets no cookie, so the cookie jar (itself locked) stays empty. A pool as large as
    the threads means no thread opens a connection it then has to throw away.
    """
    session = requests.Session()
    size = max(target.concurrency, 10)
    session.mount("https://", HTTPAdapter(pool_connections=size, pool_maxsize=size))
    return session


def api_path(*labels: object) -> str:
    """Join path labels, each percent-encoded (``nodes/pve1/tasks/UPID%3Apve1%3A...``)."""
    return "/".join(quote(str(label), safe="") for label in labels)


class PveClient:
    """Calls one target's API. ``request`` returns the ``data`` member of PVE's JSON answer.

    Counts every request it sends in ``sent`` (method, path) so callers and tests can reason
    about what was written.
    """

    def __init__(self, target: Target, session: requests.Session | None = None):
        self.target = target
        self.session = session or requests.Session()
        self.sent: list[tuple[str, str]] = []

    def request(
        self,
        method: str,
        path: str,
        credential: Credential,
        params: Mapping[str, str] | None = None,
        form: Mapping[str, str] | None = None,
        as_json: bool = False,
    ) -> object:
        """Send one call; ``path`` is relative to ``/api2/json/`` and already encoded.

        ``form`` goes as ``application/x-www-form-urlencoded``, or with ``as_json`` as a JSON
        object. Only JSON carries an empty value: pve-http-server 6.0.5 ``decode_urlencoded``
        splits ``key=`` into a key without a value, which every API method reads as not given
        (so ``comment=`` cannot clear a pool's comment; ``{"comment": ""}`` can).

        Raises PveError (or PveConfigMissing) for an HTTP failure, PveMalformed for a success
        whose body is not JSON with a ``data`` member, PveUnreachable when no member answered a
        read, and Uncertain when a write may have reached PVE but no answer came back.
        """
        last_error: Exception | None = None
        for index, member in enumerate(self.target.members):
            url = f"{member}/api2/json/{path}"
            self.sent.append((method, path))
            try:
                response = self.session.request(
                    method,
                    url,
                    params=params,
                    data=None if as_json else form,
                    json=dict(form or {}) if as_json else None,
                    headers={"Authorization": credential.header()},
                    timeout=self.target.timeout,
                    # Per request: requests lets REQUESTS_CA_BUNDLE override a Session's verify.
                    verify=self.target.verify,
                )
            except requests.exceptions.ConnectTimeout as exc:
                last_error = exc
            except requests.exceptions.ConnectionError as exc:
                if method != "GET" and _may_have_sent(exc):
                    raise Uncertain(
                        f"{method} {path}: the connection to {member} broke after the request was sent; "
                        "PVE may or may not have acted. Read the object and the task list before retrying."
                    ) from None
                last_error = exc
            except requests.exceptions.Timeout:
                if method != "GET":
                    raise Uncertain(
                        f"{method} {path}: {member} did not answer within {self.target.timeout:g}s after "
                        "the request was sent; PVE may or may not have acted. Read the object and the task "
                        "list before retrying."
                    ) from None
                last_error = TimeoutError(f"read timed out after {self.target.timeout:g}s")
            else:
                return _decode(method, path, response)
            log.debug(
                "PVE member %s of %s did not answer (%s)",
                index + 1,
                self.target.name,
                type(last_error).__name__,
            )
        raise PveUnreachable(
            f"{method} {path}: no member of target {self.target.name} answered "
            f"({', '.join(self.target.members)}): {type(last_error).__name__}. Check the members' "
            "addresses, that pveproxy runs on them (`systemctl status pveproxy`) and that this minion "
            "reaches their port, then run the state again."
        )


def _may_have_sent(exc: requests.exceptions.ConnectionError) -> bool:
    """False only when the connection was never established (nothing was sent)."""
    text = str(exc)
    return not any(
        word in text
        for word in (
            "Connection refused",
            "Failed to establish",
            "Name or service",
            "No route to host",
            "Errno 111",
            "Errno 113",
        )
    )


def _decode(method: str, path: str, response: requests.Response) -> object:
    try:
        body = response.json()
    except ValueError:
        body = None
    if response.status_code >= 400:
        message = ""
        errors = None
        if isinstance(body, dict):
            message = str(body.get("message") or "")
            errors = body.get("errors") if isinstance(body.get("errors"), dict) else None
        if not message:
            message = response.reason or "no message"
        raise classify(method, path, response.status_code, message, errors)
    if not isinstance(body, dict) or "data" not in body:
        raise PveMalformed(method, path, "the body is not a JSON object with a data member")
    return body["data"]
