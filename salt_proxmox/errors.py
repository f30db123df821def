"""Errors every family shares.

``Refused`` means nothing was written and the plan cannot go on as declared; its text is the
sentence an operator reads, naming the key and what to do instead. ``DeclarationError`` is bad
input (unknown key, wrong type, a value PVE's schema rejects), found before any network call.
Neither message may carry a credential: they are built only from declared keys and PVE answers.
"""

from __future__ import annotations


class SaltProxmoxError(Exception):
    """Base class of every error this package raises on purpose."""


class DeclarationError(SaltProxmoxError):
    """The declaration itself is wrong; ``problems`` lists one sentence per key."""

    def __init__(self, problems: list[str] | str):
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        super().__init__("; ".join(self.problems))


class Refused(SaltProxmoxError):
    """A decision not to write: ``reasons`` are full sentences, each with its remedy."""

    def __init__(self, reasons: list[str] | str):
        self.reasons = [reasons] if isinstance(reasons, str) else list(reasons)
        super().__init__("\n".join(self.reasons))


class Uncertain(SaltProxmoxError):
    """A write was sent and its outcome cannot be known. Never retried automatically."""
