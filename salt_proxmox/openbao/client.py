"""An authenticated ``hvac.Client`` from the ``openbao:`` configuration block (docs/design.md §3).

    openbao:
      url: https://bao:8200
      verify: true                 # or a CA bundle path
      timeout: 30                  # seconds
      auth: {method: token, token: ...}
      # auth: {method: approle, role_id: ..., secret_id: ..., mount: approle}

AppRole login is OpenBao's ``POST /v1/auth/<mount>/login`` (hvac ``auth.approle.login``). The
token, role id and secret id are never put in an error text or a log line.
"""

from __future__ import annotations

from collections.abc import Mapping

import hvac
import hvac.exceptions
import requests

from salt_proxmox.errors import DeclarationError, SaltProxmoxError
from salt_proxmox.pve.client import header_problem, verify_problem


class OpenBaoError(SaltProxmoxError):
    """OpenBao could not be used: unreachable, sealed, permission denied, or a malformed answer."""


def describe_failure(exc: BaseException) -> str:
    """A secret-free sentence for an hvac or requests failure, with its remedy."""
    if isinstance(exc, hvac.exceptions.VaultDown):
        return "OpenBao is sealed or in standby (HTTP 503): unseal it, then run again"
    if isinstance(exc, hvac.exceptions.Forbidden):
        # OpenBao answers 403 both for a token it does not know (invalid, expired, revoked) and for
        # a valid token without a policy for the path (vault/request_handling.go: ErrPermissionDenied).
        return (
            "permission denied (HTTP 403): the OpenBao token is invalid or expired, or it (or the AppRole) "
            "lacks a policy that lets it read this path"
        )
    if isinstance(exc, hvac.exceptions.InvalidPath):
        return "no such path (HTTP 404): check the path and that the secrets engine is mounted"
    if isinstance(exc, hvac.exceptions.Unauthorized):
        return "authentication failed (HTTP 401): the OpenBao token or AppRole credentials are not valid"
    if isinstance(exc, hvac.exceptions.VaultError):
        return f"OpenBao answered an error ({type(exc).__name__})"
    if isinstance(exc, requests.exceptions.SSLError):
        return (
            "TLS verification failed: set openbao:verify to the CA bundle that signed OpenBao's certificate"
        )
    if isinstance(exc, requests.exceptions.Timeout):
        return "OpenBao did not answer in time"
    if isinstance(exc, requests.exceptions.ConnectionError):
        return "OpenBao is unreachable (connection failed): check openbao:url and that the server runs"
    return f"OpenBao call failed ({type(exc).__name__})"


def parse_config(raw: object) -> dict:
    """Check the ``openbao:`` block. Raises DeclarationError naming the key."""
    if not isinstance(raw, Mapping):
        raise DeclarationError("openbao: expected a mapping with url, auth (and verify)")
    problems = []
    url = raw.get("url")
    if not isinstance(url, str) or not url.startswith(("https://", "http://")):
        problems.append("openbao:url: expected an http(s) URL")
    verify = raw.get("verify", True)
    problem = verify_problem(verify)
    if problem:
        problems.append(f"openbao:verify: {problem}")
    auth = raw.get("auth")
    if not isinstance(auth, Mapping):
        problems.append("openbao:auth: expected {method: token, token: ...} or {method: approle, ...}")
        auth = {}
    method = auth.get("method", "token")
    if method == "token":
        if not isinstance(auth.get("token"), str) or not auth.get("token"):
            problems.append("openbao:auth:token: required for method token")
        elif problem := header_problem("openbao:auth:token", auth["token"]):
            # Sent as the X-Vault-Token header.
            problems.append(problem)
    elif method == "approle":
        for key in ("role_id", "secret_id"):
            if not isinstance(auth.get(key), str) or not auth.get(key):
                problems.append(f"openbao:auth:{key}: required for method approle")
    else:
        problems.append(f"openbao:auth:method: expected token or approle, got {method!r}")
    timeout = raw.get("timeout", 30)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        problems.append("openbao:timeout: expected a positive number of seconds")
    if problems:
        raise DeclarationError(problems)
    return {"url": url, "verify": verify, "auth": dict(auth), "timeout": float(timeout)}


def connect(raw: object) -> hvac.Client:
    """An authenticated client. Raises DeclarationError for bad config, OpenBaoError otherwise."""
    config = parse_config(raw)
    client = hvac.Client(url=config["url"], verify=config["verify"], timeout=config["timeout"])
    auth = config["auth"]
    try:
        if auth.get("method", "token") == "token":
            client.token = auth["token"]
        else:
            client.auth.approle.login(
                role_id=auth["role_id"],
                secret_id=auth["secret_id"],
                mount_point=auth.get("mount", "approle"),
            )
    except (hvac.exceptions.VaultError, requests.exceptions.RequestException) as exc:
        raise OpenBaoError(f"OpenBao login failed: {describe_failure(exc)}") from None
    return client
