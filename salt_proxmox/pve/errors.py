"""Typed PVE API errors.

An HTTP answer keeps its status, PVE's message and per-field ``errors``. PVE's JSON formatter
(pve-http-server ``src/PVE/APIServer/Formatter/Standard.pm``) puts the message in the status
line and, for API2 JSON, in the body's ``message``; 400s add ``errors: {field: reason}``.
Nothing here ever holds a request header, so no credential can reach an error text.
"""

from __future__ import annotations

import re

from salt_proxmox.errors import SaltProxmoxError

#: pve-guest-common ``src/PVE/AbstractConfig.pm`` ``load_config``: the one answer that says a
#: guest config is missing (HTTP 500). Nothing else is "not found".
_MISSING_CONFIG = re.compile(
    r"^Configuration file '(nodes/[^/']+/(?:lxc|qemu-server)/\d+\.conf)' does not exist$"
)


class PveError(SaltProxmoxError):
    """An HTTP answer that is not success. ``status``, ``message``, ``errors`` as PVE sent them."""

    def __init__(self, method: str, path: str, status: int, message: str, errors: dict | None = None):
        self.method = method
        self.path = path
        self.status = status
        self.message = message.strip()
        self.errors = dict(errors or {})
        detail = "".join(f"; {key}: {str(reason).strip()}" for key, reason in sorted(self.errors.items()))
        super().__init__(f"{method} {path}: HTTP {status} {self.message}{detail}")


class PveConfigMissing(PveError):
    """PVE's exact "Configuration file '...' does not exist" answer (HTTP 500)."""


class PveMalformed(SaltProxmoxError):
    """A 200 whose body does not have the shape the endpoint promises. Never an empty answer."""

    def __init__(self, method: str, path: str, why: str):
        self.method = method
        self.path = path
        super().__init__(f"{method} {path}: malformed answer from PVE: {why}")


class PveUnreachable(SaltProxmoxError):
    """No cluster member answered (connection refused, reset or timed out on every one)."""


def classify(method: str, path: str, status: int, message: str, errors: dict | None) -> PveError:
    """The typed error for an HTTP failure; the missing-config wording gets its own type."""
    if status == 500 and _MISSING_CONFIG.match(message.strip()):
        return PveConfigMissing(method, path, status, message, errors)
    return PveError(method, path, status, message, errors)
