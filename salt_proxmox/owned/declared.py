"""Which ownership rows a run's declarations name, for every registered family (``registry.FAMILIES``):
what ``proxmox.owned`` calls ``declared`` and what a plan's note of owned objects the pillar no longer
declares compares the rows with.

A chunk is keyed as its own family keys it when it refuses a second declaration of one object
(``simple.lifecycle.chunk_keys`` for an ``ObjectSpec`` kind, ``guest.live.chunk_keys`` for a guest,
``openbao_policy.lifecycle.chunk_keys`` for a policy): one rule per family, read here, not written
again. A chunk of another state module (not this project's), or an apply, declares no row.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, MutableMapping

from salt_proxmox import registry
from salt_proxmox.errors import SaltProxmoxError
from salt_proxmox.ownership.report import undeclared_lines
from salt_proxmox.run.lowstate import Chunk, Run


def chunk_row_keys(
    chunk: Chunk, default_target: str | None, pbs_default: str | None = None
) -> frozenset[str]:
    """The ownership row keys ``chunk`` declares (empty for a chunk of no family, an apply, or one
    whose identity cannot be read: it is refused when it runs). A ``rename_from`` names the old
    object's row too: the rename forgets it. A family on a PBS target (``proxmox:pbs:…``) names its
    target from ``proxmox:pbs_targets``: ``pbs_default`` when the chunk names none."""
    family = registry.BY_STATE.get(chunk.state)
    kind = family.kind_of(chunk.fun) if family is not None else None
    if family is None or kind is None:
        return frozenset()
    if family.section.startswith("proxmox:pbs:"):
        default_target = pbs_default
    if kind.spec is not None:
        from salt_proxmox.simple.lifecycle import chunk_keys

        return chunk_keys(kind.load(), chunk, default_target)
    if family.guest is not None:
        from salt_proxmox.guest.live import chunk_keys as guest_keys

        return guest_keys(registry.guests()[family.name], chunk, default_target)
    if family.module == "openbao":
        from salt_proxmox.openbao_policy.lifecycle import chunk_keys as policy_keys

        return policy_keys(chunk)
    if kind.keys is not None:
        return kind.row_keys(chunk, default_target)
    raise LookupError(f"{family.name}: no rule keys its declarations (run.declared.chunk_row_keys)")


def lowstate_row_keys(
    sls: str, low: object, default_target: str | None, pbs_default: str | None = None
) -> set[str]:
    """``declared_row_keys`` of the lowstate ``low`` the formula ``sls`` rendered (``state.show_low_sls``:
    the chunks a state run would get). Raises SaltProxmoxError when ``low`` is not a list of chunks (the
    formula did not render, so what it declares is unknown)."""
    if not isinstance(low, list) or not all(isinstance(item, dict) for item in low):
        raise SaltProxmoxError(
            f"the formula {sls} did not render from the current pillar, so what it declares is unknown: "
            f"{low if isinstance(low, list | str) else type(low).__name__}. Pass sls=<the formula's sls>."
        )
    chunks = [chunk for chunk in (Chunk.of(item) for item in low) if chunk is not None]
    return declared_row_keys(chunks, default_target, pbs_default)


def declared_row_keys(
    chunks: Iterable[Chunk], default_target: str | None, pbs_default: str | None = None
) -> set[str]:
    """Every row key ``chunks`` declare present or absent (an absent entry still declares its object:
    it forgets or deletes it)."""
    found: set[str] = set()
    for chunk in chunks:
        found |= chunk_row_keys(chunk, default_target, pbs_default)
    return found


#: Where the run's cache keeps the key of the run whose note is given (once per run).
NOTED = "salt_proxmox.undeclared_noted"


def undeclared_once(
    run: Run | None,
    cache: MutableMapping,
    rows: Mapping[str, object] | Callable[[], Mapping[str, object]],
    default_target: str | None,
    pbs_default: str | None = None,
) -> list[str]:
    """The note of the owned objects ``run`` does not declare (``report.undeclared_lines``), for the
    first state of the run that asks; every later state of the run, and a call outside a run, gets
    none. ``rows``: every row the minion holds, or the function reading them, called only by the
    state that gives the note (every state asks: a read of every row per state costs N² at N). What
    the function raises propagates, and the note is then left to a later state of the run."""
    if run is None or cache.get(NOTED) == run.key:
        return []
    rows = rows() if callable(rows) else rows
    cache[NOTED] = run.key
    return undeclared_lines(rows, declared_row_keys(run.chunks, default_target, pbs_default))
