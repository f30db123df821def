"""Errors every family shares.

``Refused`` means nothing was written and the plan cannot go on as declared; its text is the
sentence an operator reads, naming the key and what to do instead. ``DeclarationError`` is bad
input (unknown key, wrong type, a value PVE's schema rejects), found before any network call.
Neither message may carry a credential: they are built only from declared keys and PVE answers.
"""

from __future__ import annotations

#: Longest declared value a message repeats in full; longer ones are shortened (``shown``).
SHOWN_MAX = 60
#: Longest problem sentence a DeclarationError keeps; a longer one loses its middle (``clip``).
PROBLEM_MAX = 600


def shown(value: object, limit: int = SHOWN_MAX, quote: bool = True) -> str:
    """A declared value as a message repeats it: ``repr`` (or the text, ``quote=False``), cut to
    ``limit`` characters with its length named — ``'hhhh...' (100000 characters)``.

    Input is echoed so an operator finds it; a 100 000-character value echoed whole would bury the
    sentence (and every log line that carries it).
    """
    text = repr(value) if quote else str(value)
    if len(text) <= limit:
        return text
    size = f" ({len(value)} characters)" if isinstance(value, str) else ""
    return f"{text[: limit - 3]}...{size}"


def clip(sentence: str, limit: int = PROBLEM_MAX) -> str:
    """``sentence`` cut to about ``limit`` characters by dropping its middle (the key it names comes
    first and the remedy last, so both stay)."""
    if len(sentence) <= limit:
        return sentence
    keep = (limit - 40) // 2
    return f"{sentence[:keep]} ...({len(sentence) - 2 * keep} characters left out)... {sentence[-keep:]}"


class SaltProxmoxError(Exception):
    """Base class of every error this package raises on purpose."""


class DeclarationError(SaltProxmoxError):
    """The declaration itself is wrong; ``problems`` lists one sentence per key, each at most
    ``PROBLEM_MAX`` characters (``clip``), whatever input it repeats."""

    def __init__(self, problems: list[str] | str):
        raw = [problems] if isinstance(problems, str) else list(problems)
        self.problems = [clip(str(problem)) for problem in raw]
        super().__init__("; ".join(self.problems))

    def refusals(self) -> list[str]:
        """The comment lines a state shows for it: ``Refused: <problem>``, one per problem."""
        return [f"Refused: {problem}" for problem in self.problems]


class Refused(SaltProxmoxError):
    """A decision not to write: ``reasons`` are full sentences, each with its remedy."""

    def __init__(self, reasons: list[str] | str):
        self.reasons = [reasons] if isinstance(reasons, str) else list(reasons)
        super().__init__("\n".join(self.reasons))


class Uncertain(SaltProxmoxError):
    """A write was sent and its outcome cannot be known. Never retried automatically."""
