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


def boolean_problem(key: str, value: object) -> str | None:
    """None when ``value`` is a boolean, else the sentence naming ``key``: the one rule for every
    switch of this product (``adopt``, ``full``, ``force_stop``, ``reboot_for_pending``, ``test``),
    in a state's declaration and in an execution function's arguments alike.

    Accepted: ``True`` and ``False`` only, which is what YAML (Salt's pillar and SLS, and the
    ``key=value`` arguments of ``salt-call``, read as YAML) makes of an unquoted true, false, yes,
    no, on or off. Refused: every string (a quoted ``'false'``, or an ``n`` YAML leaves as text, is
    truthy to Python, so taking it would act as true), numbers (``1``, ``0``), None. PVE's own
    boolean config keys (``onboot``, ``unprivileged``, an ACL's ``propagate``) are no switches:
    they take PVE's spellings (``wire.propstring.flag``)."""
    if isinstance(value, bool):
        return None
    return f"{key}: expected true or false (a boolean, unquoted), got {shown(value)}"


def boolean(key: str, value: object) -> bool:
    """``value`` when it is a boolean (``boolean_problem``). Raises DeclarationError naming ``key``
    and the accepted values otherwise."""
    problem = boolean_problem(key, value)
    if problem:
        raise DeclarationError(problem)
    return value  # type: ignore[return-value]
