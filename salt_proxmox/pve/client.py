"""The PVE HTTP client: one ``requests.Session`` per target, API-token auth, member failover.

- TLS is verified by default (``verify`` true, or a CA bundle path); ``false`` only when stated.
- Every call has a timeout (seconds; ``timeout`` of the target, default 30).
- Members are tried in order only when one does not answer (a connection error, a timeout, or a
  TLS handshake that failed: nothing was sent, so reads and writes alike go to the next member):
  an HTTP answer, even a 5xx, is an answer and is not retried elsewhere.
- A write whose request may have reached PVE but whose answer says nothing about its fate is
  ``Uncertain``, never re-sent and never "nothing was written": a connection broken or timed out
  after sending, a gateway's 502/504 or pveproxy's AnyEvent::HTTP 596/597/599 (the request or the
  answer broke between nodes: AnyEvent::HTTP's pseudo statuses), a success that is not PVE's JSON
  (an HTML page), a body cut off (``ChunkedEncodingError``) or one that cannot be decompressed.
- Redirects are not followed: PVE's API never redirects, and a redirected write could be sent
  twice. Every other ``requests`` failure is described by its kind, never by its text, which may
  quote a header.
- Path labels are percent-encoded (a UPID holds ``:``, ``@`` and ``!``); PVE's
  ``APIServer/AnyEvent.pm`` unescapes before routing.
- The token is sent as ``Authorization: PVEAPIToken=USER@REALM!TOKENID=SECRET``
  (pve-access-control ``PVE::AccessControl``); the header is built per request and never kept
  in an error or a log line. It goes as the request's ``auth`` (``TokenAuth``), not as a bare
  header: requests looks up ``~/.netrc`` for a request with no ``auth`` and lets the Basic
  credentials it finds there replace any ``Authorization`` header (``Session.prepare_request``,
  ``PreparedRequest.prepare_auth``).
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import quote

import requests
from requests.adapters import HTTPAdapter
from requests.auth import AuthBase

from salt_proxmox.errors import DeclarationError, Uncertain, boolean_problem
from salt_proxmox.pve.errors import PVE_WORDS, PveMalformed, PveRequestFailed, PveUnreachable, Words, classify
from salt_proxmox.run import overlap

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


#: What an HTTP header value may hold (RFC 9110 field-value: visible ASCII and spaces; http.client
#: sends latin-1 only and requests refuses a CR or LF, quoting the whole value in its error).
_HEADER_SAFE = re.compile(r"[\x21-\x7e]+")


def header_problem(key: str, value: object) -> str | None:
    """None when ``value`` can go in an HTTP header, else the sentence naming ``key``, without
    repeating the value (a YAML block scalar leaves a trailing ``\n``)."""
    if not isinstance(value, str) or not value:
        return f"{key} is missing or empty"
    if not _HEADER_SAFE.fullmatch(value):
        return (
            f"{key} holds a line break, a space, a control or a non-ASCII character (a YAML block scalar "
            "leaves a trailing newline); publish it as a plain one-line string"
        )
    return None


def credential_problem(token_id: object, secret: object) -> str | None:
    """None when a PVE token id and secret can go in the Authorization header, else which of them
    cannot and why (``header_problem``)."""
    return header_problem("token_id", token_id) or header_problem("secret", secret)


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
    #: The most guest tasks an apply runs at once on the target, and on one node
    #: (``salt_proxmox.run.overlap``; a PVE target's ``task_concurrency``, ``task_concurrency_per_node``).
    task_concurrency: int = 1
    task_concurrency_per_node: int = 1
    credentials: Mapping[str, object] = field(default_factory=dict, repr=False)
    #: The configuration section it is read from: ``proxmox:targets`` (PVE clusters) or
    #: ``proxmox:pbs_targets`` (Proxmox Backup Servers, ``salt_proxmox.pbs.client``).
    section: str = "proxmox:targets"
    #: ``root_lane`` as configured (``salt_proxmox.pve.lane.parse_root_lane`` checks it).
    root_lane: object = None
    #: ``migrate``: every guest of the target declared on another node than its own is migrated there
    #: (``salt_proxmox.guest.migrate``); a guest's own ``migrate`` overrides it.
    migrate: bool = False

    @property
    def key(self) -> str:
        """What the run's cache keys this target's credentials and sessions by: its name for a PVE
        target, ``<section>:<name>`` for another kind, so a PBS target named like a PVE one never
        shares its tokens."""
        return self.name if self.section == TARGETS else f"{self.section}:{self.name}"


#: The section PVE targets are configured in.
TARGETS = "proxmox:targets"


def parse_target(
    name: str, raw: object, section: str = TARGETS, product: str = "PVE", port: int = 8006
) -> Target:
    """Check one ``proxmox:targets`` entry.

    ``section``, ``product`` and ``port``: where it is configured, what serves it and on which port,
    for the sentences (a Proxmox Backup Server: ``proxmox:pbs_targets``, PBS, 8007).

    Raises DeclarationError naming the key: ``members`` must be a non-empty list of https URLs
    (http only for loopback test servers is still refused: PVE serves https only),
    ``verify`` a bool or a path, ``timeout`` a positive number of seconds, ``concurrency`` a
    whole number from 1 to ``MAX_CONCURRENCY``; ``task_concurrency`` and ``task_concurrency_per_node``
    (a PVE target only) as ``salt_proxmox.run.overlap.parse_bounds`` checks them, ``migrate`` (a PVE
    target only) a boolean (``errors.boolean_problem``).
    """
    if not isinstance(raw, Mapping):
        raise DeclarationError(f"{section}:{name}: expected a mapping")
    problems = []
    known = {"members", "verify", "timeout", "concurrency", "credentials"}
    if section == TARGETS:
        known.add("root_lane")  # checked by run.config (pve.lane.parse_root_lane)
        known.add("migrate")  # guest.migrate: a boolean
    # Guest tasks overlap on a PVE cluster only (salt_proxmox.run.overlap): a PBS target has none.
    known.update(overlap.KEYS if section == TARGETS else ())
    unknown = sorted(set(raw) - known)
    if unknown:
        problems.append(f"{section}:{name}: unknown key(s) {', '.join(map(str, unknown))}")
    members = raw.get("members")
    if isinstance(members, str):
        members = [members]
    if not isinstance(members, list) or not members or not all(isinstance(m, str) for m in members):
        problems.append(f"{section}:{name}:members: expected a list of https://host:{port} URLs")
        members = []
    elif bad := [m for m in members if not m.startswith("https://")]:
        problems.append(f"{section}:{name}:members: {', '.join(bad)}: {product}'s API is served over https")
    verify = raw.get("verify", True)
    problem = verify_problem(verify)
    if problem:
        problems.append(f"{section}:{name}:verify: {problem}")
    timeout = raw.get("timeout", DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        problems.append(f"{section}:{name}:timeout: expected a positive number of seconds")
    concurrency = raw.get("concurrency", DEFAULT_CONCURRENCY)
    whole = isinstance(concurrency, int) and not isinstance(concurrency, bool)
    if not whole or not 1 <= concurrency <= MAX_CONCURRENCY:
        problems.append(
            f"{section}:{name}:concurrency: expected a whole number of reads, 1 to {MAX_CONCURRENCY}"
        )
    (tasks, tasks_per_node), task_problems = overlap.parse_bounds(section, name, raw)
    problems.extend(task_problems)
    migrate = raw.get("migrate", False)
    if section == TARGETS and (problem := boolean_problem("migrate", migrate)):
        problems.append(f"{section}:{name}:{problem}")
    credentials = raw.get("credentials")
    if not isinstance(credentials, Mapping):
        problems.append(f"{section}:{name}:credentials: expected a mapping (source: openbao|static)")
        credentials = {}
    if problems:
        raise DeclarationError(problems)
    return Target(
        name=name,
        members=tuple(m.rstrip("/") for m in members),
        verify=verify,
        timeout=float(timeout),
        concurrency=concurrency,
        task_concurrency=tasks,
        task_concurrency_per_node=tasks_per_node,
        credentials=credentials,
        section=section,
        root_lane=raw.get("root_lane"),
        migrate=migrate is True,
    )


class TokenAuth(AuthBase):
    """A request's API-token ``Authorization`` header (``value``: ``PVEAPIToken=…`` or
    ``PBSAPIToken=…``), given as requests' ``auth`` so that requests never puts a ``~/.netrc``
    entry's Basic credentials in its place. Its ``repr`` names no secret."""

    def __init__(self, value: str) -> None:
        self._value = value

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        request.headers["Authorization"] = self._value
        return request

    def __repr__(self) -> str:
        return "TokenAuth(<hidden>)"


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


#: Strings YAML 1.2 or a quoted pillar value leave where a boolean was meant.
_BOOLEAN_WORDS = frozenset({"true", "false", "yes", "no", "on", "off", "1", "0", "y", "n"})


def verify_problem(verify: object) -> str | None:
    """None when ``verify`` is a bool or the path of a CA bundle that exists (file or directory,
    as requests takes it), else the sentence. ``"false"`` (a quoted string) is not false: taken
    as a path it would fail every request with a message about a missing file."""
    if isinstance(verify, bool):
        return None
    if not isinstance(verify, str) or not verify:
        return "expected true, false or a CA bundle path"
    if verify.strip().lower() in _BOOLEAN_WORDS:
        return (
            f"{verify!r} is a string, not a boolean: write true or false without quotes, or a CA bundle path"
        )
    if not os.path.exists(verify):
        return (
            f"the CA bundle {verify} does not exist: give the path of the PEM file that signed the "
            "members' certificates"
        )
    return None


def api_path(*labels: object) -> str:
    """Join path labels, each percent-encoded (``nodes/pve1/tasks/UPID%3Apve1%3A...``)."""
    return "/".join(quote(str(label), safe="") for label in labels)


class PveClient:
    """Calls one target's API. ``request`` returns the ``data`` member of PVE's JSON answer.

    Counts every request it sends in ``sent`` (method, path) so callers and tests can reason
    about what was written. ``words``: what its sentences name (``pve.errors.Words``).
    """

    words: Words = PVE_WORDS

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
        envelope: bool = False,
    ) -> object:
        """Send one call; ``path`` is relative to ``/api2/json/`` and already encoded.

        Returns PVE's ``data``; with ``envelope`` the whole answer object instead, for the few
        members PVE puts beside ``data`` (``changes`` of ``GET /nodes/{node}/network``: pve-manager
        ``PVE/API2/Network.pm`` ``index``, ``set_result_attrib``).

        ``form`` goes as ``application/x-www-form-urlencoded``, or with ``as_json`` as a JSON
        object. Only JSON carries an empty value: pve-http-server 6.0.5 ``decode_urlencoded``
        splits ``key=`` into a key without a value, which every API method reads as not given
        (so ``comment=`` cannot clear a pool's comment; ``{"comment": ""}`` can).

        Raises DeclarationError for a credential that cannot go in a header (before anything is
        sent), PveError (or PveConfigMissing) for an HTTP failure, PveMalformed for a read whose
        answer is not JSON with a ``data`` member (or a redirect), PveUnreachable when no member
        answered (each member's failure named: refused, timed out, TLS), PveRequestFailed when the
        request could not be made, and Uncertain when a write may have reached PVE but its answer
        does not say what happened.
        """
        auth = self.auth_for(method, credential)
        failures: list[str] = []
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
                    auth=auth,
                    timeout=self.target.timeout,
                    # Per request: requests lets REQUESTS_CA_BUNDLE override a Session's verify.
                    verify=self.target.verify,
                    allow_redirects=False,
                )
            except requests.exceptions.SSLError:
                # The handshake failed, so no request was sent: the next member may be fine.
                failures.append(f"{member}: TLS failed ({self._tls_hint()})")
            except requests.exceptions.ConnectTimeout:
                failures.append(f"{member}: connect timed out after {self.target.timeout:g}s")
            except requests.exceptions.ConnectionError as exc:
                if method != "GET" and _may_have_sent(exc):
                    raise Uncertain(
                        f"{method} {path}: the connection to {member} broke after the request was sent; "
                        f"{self.words.product} may or may not have acted. {check_write(self.words)}"
                    ) from None
                failures.append(f"{member}: connection failed ({_connection_kind(exc)})")
            except requests.exceptions.Timeout:
                if method != "GET":
                    raise Uncertain(
                        f"{method} {path}: {member} did not answer within {self.target.timeout:g}s after "
                        f"the request was sent; {self.words.product} may or may not have acted. "
                        f"{check_write(self.words)}"
                    ) from None
                failures.append(f"{member}: read timed out after {self.target.timeout:g}s")
            except (
                requests.exceptions.ChunkedEncodingError,
                requests.exceptions.ContentDecodingError,
            ) as exc:
                why = (
                    "was cut off"
                    if isinstance(exc, requests.exceptions.ChunkedEncodingError)
                    else ("could not be decompressed")
                )
                if method != "GET":
                    raise Uncertain(
                        f"{method} {path}: the answer of {member} {why}; {self.words.product} may or may not "
                        f"have acted. {check_write(self.words)}"
                    ) from None
                raise PveMalformed(method, path, f"the answer {why}", self.words) from None
            except requests.exceptions.RequestException as exc:
                # Invalid URL, header or schema, too many redirects...: described by kind only, as
                # the text may quote the request's headers.
                raise PveRequestFailed(
                    f"{method} {path}: the request to {member} could not be made ({type(exc).__name__}). "
                    f"Check {self.target.section}:{self.target.name} (members, verify)."
                ) from None
            except OSError as exc:
                # requests raises a bare OSError for a CA bundle path that vanished since it was checked.
                raise PveRequestFailed(
                    f"{method} {path}: {self.target.section}:{self.target.name}:verify: "
                    f"{exc.strerror or 'the CA bundle cannot be used'}"
                ) from None
            else:
                return self.decode(method, path, response, member, envelope)
            log.debug("PVE member %s of %s did not answer: %s", index + 1, self.target.name, failures[-1])
        raise PveUnreachable(
            f"{method} {path}: no member of target {self.target.name} answered ({'; '.join(failures)}). "
            f"Check the members' addresses, {self.words.reach}, that "
            "this minion reaches their port, and for TLS that verify names the CA that signed their "
            "certificates, then run the state again."
        )

    def auth_for(self, method: str, credential: Credential) -> AuthBase:
        """The ``auth`` of one request (``method``) with ``credential``: its token's header
        (``TokenAuth``). Raises DeclarationError for a credential that cannot go in a header. The root
        lane's ticket client gives a ticket's cookie instead (``salt_proxmox.pve.ticket``)."""
        problem = credential_problem(credential.token_id, credential.secret)
        if problem:
            raise DeclarationError(
                f"the {credential.role} credential of target {self.target.name}: {problem}"
            )
        return TokenAuth(self.authorization(credential))

    def authorization(self, credential: Credential) -> str:
        """The ``Authorization`` header value for ``credential`` (PVE's ``PVEAPIToken=``)."""
        return credential.header()

    def decode(
        self, method: str, path: str, response: requests.Response, member: str, envelope: bool
    ) -> object:
        """The answer's ``data`` (``envelope``: the whole answer), or the error it carries."""
        return _decode(method, path, response, member, envelope, self.words)

    def _tls_hint(self) -> str:
        verify = self.target.verify
        if isinstance(verify, str):
            return f"the certificate is not signed by the CA bundle {verify} (verify)"
        return "the certificate is not trusted by the system CAs: set verify to the cluster's CA bundle path"


def check_write(words: Words = PVE_WORDS) -> str:
    """What an operator checks after an uncertain write."""
    return f"Read the object and {words.tasks} before running the state again; nothing was retried."


#: Statuses that, answering a write, leave its fate unknown: a gateway that lost the upstream
#: (502, 504) and pveproxy's AnyEvent::HTTP pseudo statuses for a proxied request that broke while
#: being sent or answered (596, 597) or otherwise (599). 595 is a connection that never opened.
UNCERTAIN_STATUSES = frozenset({502, 504, 596, 597, 599})


def _connection_kind(exc: requests.exceptions.ConnectionError) -> str:
    text = str(exc)
    for needle, kind in (
        ("Connection refused", "connection refused"),
        ("Errno 111", "connection refused"),
        ("Name or service", "name not resolved"),
        ("No route to host", "no route to host"),
        ("Errno 113", "no route to host"),
    ):
        if needle in text:
            return kind
    return type(exc).__name__


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


def _decode(
    method: str,
    path: str,
    response: requests.Response,
    member: str = "",
    envelope: bool = False,
    words: Words = PVE_WORDS,
) -> object:
    if 300 <= response.status_code < 400:
        # Not followed (allow_redirects=False): the member URL points at something else than pveproxy.
        raise PveMalformed(
            method,
            path,
            f"HTTP {response.status_code}, a redirect; {words.product}'s API never redirects",
            words,
        )
    if method != "GET" and response.status_code in UNCERTAIN_STATUSES:
        raise Uncertain(
            f"{method} {path}: HTTP {response.status_code} {response.reason or ''} from "
            f"{member or 'the member'} after the request was sent: a proxy or the member lost the answer, "
            f"{words.product} may or may not have acted. {check_write(words)}"
        )
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
        if method != "GET":
            raise Uncertain(
                f"{method} {path}: {member or 'the member'} answered HTTP {response.status_code} without "
                f"{words.product}'s JSON (a proxy or portal page?), so {words.product} may or may not have "
                f"acted. {check_write(words)}"
            )
        raise PveMalformed(method, path, "the body is not a JSON object with a data member", words)
    return body if envelope else body["data"]
