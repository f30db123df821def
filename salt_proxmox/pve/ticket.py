"""The ticket lane: the root lane over the target's own HTTPS API, logged in as ``root@pam`` with its
password (``root_lane: {via: ticket, password: {path: <OpenBao path>, key: password}}``).

- The password is read through the target's own OpenBao connection (``credentials: source: openbao``,
  ``CredentialBroker.openbao_client``), a KV version 1 or 2 answer as ``openbao.creds.kv_payload``
  unwraps it, and exchanged for a ticket and a CSRF token: ``POST /access/ticket`` with ``username``
  ``root@pam`` and ``password`` (pve-access-control ``src/PVE/API2/AccessControl.pm``
  ``create_ticket``, which needs no authentication: pve-manager ``PVE/HTTPServer.pm``
  ``auth_handler``; ``allowtoken => 0``, so no API token can make one). PVE answers every failure
  (a wrong password, a disabled user) with ``401 authentication failure``, to give nothing away;
  a user with a second factor gets ``NeedTFA: 1`` and a ticket that serves only the second factor's
  ``POST /access/tfa`` (``create_ticket_do``, ``auth_handler``'s ``No ticket``), which a run with
  nobody at the keyboard cannot answer: refused (``TicketRefused``) with why and the remedy.
- Calls then go through the token client's loop (``PveClient.request``: the target's members,
  session, TLS, timeout, and the same ``PveError``/``Uncertain`` classification), with the ticket in
  cookie ``PVEAuthCookie`` and, on every method but ``GET``, the CSRF token in header
  ``CSRFPreventionToken`` (pve-http-server ``src/PVE/APIServer/AnyEvent.pm``
  ``authenticate_and_handle_request`` reads both, the cookie before any ``Authorization``;
  ``auth_handler`` checks the CSRF token on writes made with a ticket). Both go in the request's
  ``auth`` (``TicketAuth``), never in the session's cookie jar, which the token client shares: a
  jar's ticket would make PVE take the token client's calls for root@pam's.
- The ticket is fetched once per run and kept in the run's memo (memory only, dropped when another
  run begins, ``run.memo``); PVE's tickets last two hours (pve-access-control
  ``src/PVE/AccessControl.pm`` ``$ticket_lifetime``), so a run older than ``RENEW_AFTER`` logs in again
  before its next call rather than meet a ``401`` mid-apply. The password, the ticket and the CSRF token
  never reach a return, a log line or an exception text: a failed login names the OpenBao path and
  key, never a value.
- A secret in a form is fine here (HTTPS, like the token client's): ``SecretInLane`` is about pvesh's
  argv only. The lane has no node of its own: what is written as files on a node (raw ``lxc.*`` lines,
  snippets) needs the pvesh lane (``guest.lane``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field

import hvac.exceptions
import requests
from requests.auth import AuthBase

from salt_proxmox.errors import SaltProxmoxError
from salt_proxmox.openbao.client import describe_failure
from salt_proxmox.openbao.creds import CredentialBroker, CredentialError, kv_payload
from salt_proxmox.pve.client import PveClient, Target, header_problem
from salt_proxmox.pve.errors import PveError
from salt_proxmox.pve.lane import LaneConfig

log = logging.getLogger(__name__)

#: The only user the lane logs in as.
ROOT = "root@pam"
#: The plan's name of the lane (``via root lane (ticket for root@pam)``).
LABEL = f"ticket for {ROOT}"
LOGIN = "access/ticket"
#: Seconds after which a ticket is renewed: half of PVE's two-hour ``$ticket_lifetime``.
RENEW_AFTER = 3600.0
#: Where the run's memo keeps the ticket of a target.
_MEMO = "salt_proxmox.root_lane.ticket/{target}"


class TicketRefused(SaltProxmoxError):
    """No ticket for root@pam: PVE refused the password, asked for a second factor, or answered
    another user or no ticket. The text names the OpenBao path and key, never a value."""


@dataclass(frozen=True)
class Login:
    """A root@pam ticket and its CSRF token (``create_ticket``'s answer); ``repr`` shows neither."""

    username: str
    ticket: str = field(repr=False)
    csrf: str = field(repr=False)
    #: When it was issued, on the lane's clock (seconds).
    issued: float = 0.0


class TicketAuth(AuthBase):
    """A request's ticket cookie, and on a write its CSRF token (module docstring); with no login,
    nothing: the login itself, kept from a ``~/.netrc`` entry's Basic credentials as ``TokenAuth``
    is. Its ``repr`` names no secret."""

    def __init__(self, login: Login | None, write: bool) -> None:
        self._login = login
        self._write = write

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        if self._login is not None:
            # Set after requests' own cookies (prepare_auth follows prepare_cookies): this one only.
            request.headers["Cookie"] = f"PVEAuthCookie={self._login.ticket}"
            if self._write:
                request.headers["CSRFPreventionToken"] = self._login.csrf
        return request

    def __repr__(self) -> str:
        return "TicketAuth(<hidden>)"


class TicketClient(PveClient):
    """``PveClient`` with a ticket where the token client puts a token: a ``Login`` (or None for
    the login call itself) is the credential."""

    def auth_for(self, method: str, credential: object) -> AuthBase:  # type: ignore[override]
        """``TicketAuth`` for ``credential`` (a ``Login`` or None); the CSRF token on every method
        but ``GET`` (``auth_handler``: ``$method ne 'GET'``)."""
        return TicketAuth(credential if isinstance(credential, Login) else None, method != "GET")


class TicketLane:
    """The ticket lane of one target (module docstring): ``request`` in ``PveshLane.request``'s
    shape, as root@pam; ``label`` ``ticket for root@pam``."""

    def __init__(
        self,
        config: LaneConfig,
        target: Target,
        session: requests.Session,
        broker: CredentialBroker,
        memo: MutableMapping[str, object],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.clock = clock
        self.label = LABEL
        #: A secret in a form goes over HTTPS, as with the token client.
        self.carries_secrets = True
        self.client = TicketClient(target, session)
        #: What its sentences name: the token client's (PVE's) words.
        self.words = self.client.words
        self.broker = broker
        self.memo = memo
        self._key = _MEMO.format(target=target.name)

    @property
    def sent(self) -> list[tuple[str, str]]:
        """``(method, path)`` of every request sent, the login's included."""
        return self.client.sent

    @property
    def where(self) -> str:
        """The OpenBao path and key of the password, for the sentences."""
        return f"OpenBao {self.config.password_path} (key {self.config.password_key})"

    def password(self) -> str:
        """root@pam's password from OpenBao (module docstring). Raises CredentialError naming the
        path and key (no OpenBao block or login, the read failed, no secret or no such key there)."""
        client = self.broker.openbao_client()
        path = self.config.password_path
        try:
            answer = client.read(path)
        except (hvac.exceptions.VaultError, requests.exceptions.RequestException) as exc:
            raise CredentialError(
                f"reading root@pam's password from {self.where}: {describe_failure(exc)}"
            ) from None
        if not isinstance(answer, Mapping):
            raise CredentialError(
                f"{self.where} answered nothing (no secret there): keep root@pam's password there, on a KV "
                "version 1 mount, or name a KV version 2 mount's data/ segment in the path"
            )
        data = kv_payload(answer.get("data"))
        value = data.get(self.config.password_key) if isinstance(data, Mapping) else None
        if not isinstance(value, str) or not value:
            raise CredentialError(
                f"{self.where}: the key is missing or not a non-empty string; keep root@pam's password "
                "under that key"
            )
        return value

    def login(self) -> Login:
        """The run's root@pam ticket: the memo's, else one ``POST /access/ticket`` (module
        docstring). Raises CredentialError (the password cannot be read), TicketRefused (PVE
        refused it, asked for a second factor, or answered another user or no ticket), and what the
        client raises when no member answers (PveUnreachable, Uncertain, PveRequestFailed)."""
        found = self.memo.get(self._key)
        if isinstance(found, Login) and self.clock() - found.issued < RENEW_AFTER:
            return found
        form = {"username": ROOT, "password": self.password()}
        log.debug("root lane: POST /%s for %s (password from %s)", LOGIN, ROOT, self.where)
        try:
            answer = self.client.request("POST", LOGIN, None, form=form)
        except PveError as exc:
            # The status and PVE's message only: a 400's per-parameter reasons are left out.
            why = (
                "PVE refused root@pam's password (401 authentication failure: pve-access-control "
                "AccessControl.pm create_ticket answers every failure so, a wrong password as a disabled "
                "user)"
                if exc.status == 401
                else f"PVE answered {exc.status} {exc.message}"
            )
            raise TicketRefused(
                f"no ticket for root@pam with the password from {self.where}: {why}."
            ) from None
        login = self._checked(answer)
        self.memo[self._key] = login = Login(login.username, login.ticket, login.csrf, self.clock())
        return login

    def _checked(self, answer: object) -> Login:
        """The ``Login`` in ``create_ticket``'s answer, else TicketRefused saying why."""
        if isinstance(answer, Mapping) and answer.get("NeedTFA"):
            raise TicketRefused(
                f"root@pam (password from {self.where}) has a second factor: PVE answers its login with "
                "NeedTFA and a ticket that serves only the second factor's POST /access/tfa "
                "(pve-access-control AccessControl.pm create_ticket_do, pve-manager HTTPServer.pm "
                "auth_handler), which a run cannot answer unattended. Use root_lane: pvesh on a node of the "
                "cluster, which needs no login."
            )
        username = answer.get("username") if isinstance(answer, Mapping) else None
        if username != ROOT:
            raise TicketRefused(
                f"the login with the password from {self.where} answered user {username!r}, not root@pam: "
                "only root@pam may make the lane's writes."
            )
        ticket, csrf = answer.get("ticket"), answer.get("CSRFPreventionToken")
        if header_problem("ticket", ticket) or header_problem("CSRFPreventionToken", csrf):
            raise TicketRefused(
                f"the login of root@pam (password from {self.where}) answered no usable ticket and CSRF "
                "token."
            )
        return Login(ROOT, str(ticket), str(csrf))

    def request(
        self,
        method: str,
        path: str,
        credential: object = None,
        params: Mapping[str, str] | None = None,
        form: Mapping[str, str] | None = None,
        secrets: Sequence[str] = (),
    ) -> object:
        """Send one call as root@pam with the run's ticket (``login``); returns PVE's ``data``.
        ``credential`` and ``secrets`` are ignored (the ticket is the credential, and a form's secret
        goes over HTTPS as with the token). Raises what ``login`` raises, then what
        ``PveClient.request`` raises (PveError for a refusal, Uncertain for a write whose fate is
        unknown, PveUnreachable when no member answers)."""
        return self.client.request(method, path, self.login(), params=params, form=form)
