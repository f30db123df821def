"""PVE API tokens per role: read from config (``source: static``) or minted from OpenBao
(``source: openbao``), with the lease rules of docs/design.md §4.

The creds contract is the one the PVE-token secrets engines for OpenBao/Vault serve, and that a
KV version 1 mount answers too: ``GET /v1/<path>/<role>`` → ``data: {token_id, secret}`` (some
engines add ``token_id_full``, the ``user@realm!name`` form the PVE header needs; preferred
when present), with ``lease_id`` and ``lease_duration`` (seconds) beside ``data``.

- ``read`` is minted once per Salt run and reused from the run's cache (Salt's ``__context__``)
  while at least ``READ_MIN_LEFT`` seconds of its lease remain.
- ``provision`` is minted fresh for every write, so a long create has its whole lease; a lease
  shorter than the write's task bound is refused before anything is sent.
- A KV version 2 mount serves the same pair one level deeper: ``GET /v1/<mount>/data/<path>/<role>``
  answers ``data: {data: {token_id, secret}, metadata: {version, ...}}`` with no lease
  (OpenBao ``builtin/logical/kv`` ``pathData`` read, measured against the ``bao`` dev server);
  ``kv_payload`` unwraps it, so a ``path`` that names the ``data/`` segment of a KV v2 mount works.
  The same path without ``data/`` answers nothing (no secret is listed there), which the error says.
- A secret, lease id or token never reaches a return, a log line or an exception text.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, MutableMapping

import hvac.exceptions
import requests

from salt_proxmox.errors import DeclarationError, SaltProxmoxError
from salt_proxmox.openbao.client import OpenBaoError, connect, describe_failure
from salt_proxmox.pve.client import Credential, Target, credential_problem

ROLES = ("read", "provision")
#: Where the run's authenticated OpenBao client is kept in the run's cache (Salt's ``__context__``),
#: shared by the credentials and the ownership rows (``run.config.bao_store``).
BAO_CLIENT = "salt_proxmox.openbao.client"
READ_MIN_LEFT = 60.0
#: ``user@realm!tokenname`` (pve-access-control ``PVE::AccessControl::pve_verify_tokenid``).
TOKEN_ID = re.compile(r"^[^\s@!:]+@[A-Za-z][A-Za-z0-9.\-_]*![A-Za-z][A-Za-z0-9.\-_]*\Z")


class CredentialError(SaltProxmoxError):
    """No usable credential for a role. The text names the role and the cause, never a secret."""


def _check_pair(where: str, data: object) -> tuple[str, str]:
    if not isinstance(data, Mapping):
        raise CredentialError(f"{where}: expected {{token_id, secret}}, got no mapping")
    token_id = data.get("token_id_full") or data.get("token_id")
    secret = data.get("secret")
    if isinstance(token_id, str) and isinstance(secret, str) and token_id and secret:
        problem = credential_problem(token_id, secret)
        if problem:
            raise CredentialError(f"{where}: {problem}")
    if not isinstance(token_id, str) or not TOKEN_ID.match(token_id):
        raise CredentialError(
            f"{where}: token_id is missing or not user@realm!name; publish {{token_id, secret}} there "
            "(token_id as user@realm!tokenname, secret as the token's secret)"
        )
    if not isinstance(secret, str) or not secret:
        raise CredentialError(
            f"{where}: secret is missing or empty; publish {{token_id, secret}} there (secret as the "
            "token's secret)"
        )
    return token_id, secret


def kv_payload(data: object) -> object:
    """The credential pair inside one OpenBao answer's ``data``: the mapping itself (KV version 1, a
    PVE-token secrets engine), or its inner ``data`` when it has the KV version 2 shape
    ``{data: {...}, metadata: {version, ...}}`` (OpenBao ``builtin/logical/kv`` ``pathData`` read).
    Anything else is returned as it is, for ``_check_pair`` to name."""
    if (
        isinstance(data, Mapping)
        and set(data) == {"data", "metadata"}
        and isinstance(data.get("data"), Mapping)
        and isinstance(data.get("metadata"), Mapping)
        and "version" in data["metadata"]
    ):
        return data["data"]
    return data


def parse_credentials(target: Target) -> dict:
    """Check a target's ``credentials`` block. Raises DeclarationError naming the key."""
    raw = target.credentials
    where = f"{target.section}:{target.name}:credentials"
    source = raw.get("source")
    if source == "static":
        unknown = sorted(set(raw) - {"source", *ROLES})
        if unknown:
            raise DeclarationError(f"{where}: unknown key(s) {', '.join(map(str, unknown))}")
        for role in ROLES:
            if role in raw:
                try:
                    _check_pair(f"{where}:{role}", raw[role])
                except CredentialError as exc:
                    raise DeclarationError(str(exc)) from None
        if "read" not in raw:
            raise DeclarationError(f"{where}:read: a static source needs at least the read token")
        return {"source": "static"}
    if source == "openbao":
        unknown = sorted(set(raw) - {"source", "path"})
        if unknown:
            raise DeclarationError(f"{where}: unknown key(s) {', '.join(map(str, unknown))}")
        path = raw.get("path")
        if not isinstance(path, str) or not path.strip("/"):
            raise DeclarationError(
                f"{where}:path: the OpenBao path the roles are read under (e.g. proxmox/creds)"
            )
        return {"source": "openbao", "path": path.strip("/")}
    raise DeclarationError(f"{where}:source: expected openbao or static, got {source!r}")


class CredentialBroker:
    """Hands out credentials for one target within one Salt run.

    ``cache``: a mapping living as long as the run (Salt's ``__context__``); ``openbao``: the raw
    ``openbao:`` block (needed for ``source: openbao``); ``clock``: monotonic seconds.
    ``mints`` counts OpenBao reads per role, for tests and the benchmark.
    """

    def __init__(
        self,
        target: Target,
        cache: MutableMapping,
        openbao: Mapping | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.target = target
        self.cache = cache
        self.openbao = openbao
        self.clock = clock
        self.config = parse_credentials(target)
        self.mints = cache.setdefault(f"salt_proxmox.mints/{target.key}", {"read": 0, "provision": 0})

    def read(self) -> Credential:
        """The run's ``read`` credential, minted on first use and reused while its lease lasts."""
        key = f"salt_proxmox.read/{self.target.key}"
        cached = self.cache.get(key)
        if isinstance(cached, Credential) and self._left(cached) >= READ_MIN_LEFT:
            return cached
        credential = self._mint("read")
        self.cache[key] = credential
        return credential

    def provision(self, need_seconds: float = 0.0) -> Credential:
        """A fresh ``provision`` credential for one write.

        Raises CredentialError when its lease is shorter than ``need_seconds`` (the write's
        task bound): a token that expires mid-task cannot read its own task's end.
        """
        credential = self._mint("provision")
        if credential.lease_seconds and credential.lease_seconds < need_seconds:
            raise CredentialError(
                f"the provision credential of target {self.target.name} has a lease of "
                f"{credential.lease_seconds}s, shorter than this write's {need_seconds:g}s task bound. "
                "Raise the role's TTL in OpenBao, then run the state again."
            )
        return credential

    def _left(self, credential: Credential) -> float:
        if not credential.lease_seconds:
            return float("inf")
        return credential.lease_seconds - (self.clock() - credential.minted_at)

    def _mint(self, role: str) -> Credential:
        now = self.clock()
        if self.config["source"] == "static":
            raw = self.target.credentials.get(role)
            if raw is None:
                raise CredentialError(
                    f"target {self.target.name}: no static {role} credential is configured; add "
                    f"credentials:{role} or use source: openbao"
                )
            token_id, secret = _check_pair(f"static {role} credential", raw)
            self.mints[role] += 1
            return Credential(token_id, secret, role=role, minted_at=now)
        path = f"{self.config['path']}/{role}"
        client = self._client()
        try:
            answer = client.read(path)
        except (hvac.exceptions.VaultError, requests.exceptions.RequestException) as exc:
            raise CredentialError(
                f"minting the {role} credential from OpenBao {path}: {describe_failure(exc)}"
            ) from None
        self.mints[role] += 1
        if not isinstance(answer, Mapping):
            raise CredentialError(
                f"OpenBao {path} answered nothing for the {role} credential (no secret there): publish "
                f"{{token_id, secret}} at {path}, on a KV version 1 mount or a PVE-token secrets engine "
                "(a KV version 2 mount keeps it under <mount>/data/<path>: name that data/ segment in "
                "credentials:path)"
            )
        token_id, secret = _check_pair(f"OpenBao {path}", kv_payload(answer.get("data")))
        lease = answer.get("lease_duration", 0)
        if isinstance(lease, bool) or not isinstance(lease, int) or lease < 0:
            raise CredentialError(f"OpenBao {path}: lease_duration is not a number of seconds")
        lease_id = answer.get("lease_id") or ""
        return Credential(
            token_id, secret, role=role, lease_id=str(lease_id), lease_seconds=lease, minted_at=now
        )

    def openbao_client(self):
        """The run's authenticated OpenBao client (``hvac.Client``, made once per run from the
        ``openbao:`` block), for what a family keeps there itself (a PBS token's secret, an API
        token's: ``salt_proxmox.access.token``). Raises CredentialError when no block is configured or
        it cannot log in."""
        return self._client()

    def _client(self):
        key = BAO_CLIENT
        client = self.cache.get(key)
        if client is None:
            if self.openbao is None:
                raise CredentialError(
                    f"target {self.target.name} mints from OpenBao, but no openbao: block is configured"
                )
            try:
                client = connect(self.openbao)
            except OpenBaoError as exc:
                raise CredentialError(str(exc)) from None
            self.cache[key] = client
        return client
