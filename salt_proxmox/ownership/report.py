"""What a minion owns, as an operator reads it (``proxmox.owned``, ``proxmox.forget``, and the note every
plan ends with): one entry per ownership row, and whether the current pillar still declares it.

A row key is ``<target>/<family>/<identity>`` (``rows.row_key``); the identity may hold ``/`` (a nested
pool ``prod/web``, an ACL entry's path), so only the first two ``/`` split it. Which keys a pillar
declares is the formula's business (``owned.declared``): this module takes them as a set and imports no
family.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from salt_proxmox.errors import SaltProxmoxError


def split_key(key: str) -> tuple[str, str, str]:
    """``homelab/lxc/150`` → ``("homelab", "lxc", "150")``. Raises ValueError for a key without a
    target, a family and an identity."""
    target, family, identity = [*key.split("/", 2), "", ""][:3]
    if not (target and family and identity):
        raise ValueError(f"{key!r} is not <target>/<family>/<identity>")
    return target, family, identity


def entries(rows: Mapping[str, object], declared: Collection[str] | None) -> list[dict]:
    """One entry per row, sorted by target, family and identity: ``{family, target, id, state_id,
    phase, declared}``; ``declared`` is True when ``declared`` (the row keys the current pillar
    declares) holds the key, False for an orphan, None when no pillar was read. A stored value that
    is no mapping, or a key of another shape, is listed with ``phase`` ``unreadable``, never
    dropped: it is still in the file."""
    found = []
    for key in sorted(rows):
        row = rows[key]
        try:
            target, family, identity = split_key(key)
        except ValueError:
            target, family, identity = "", "", key
        usable = isinstance(row, Mapping)
        found.append(
            {
                "family": family,
                "target": target,
                "id": identity,
                "state_id": row.get("state_id") if usable else None,
                "phase": row.get("phase") if usable else "unreadable",
                "declared": None if declared is None else key in declared,
                "row": key,
            }
        )
    return found


def undeclared_lines(rows: Mapping[str, object], declared: Collection[str]) -> list[str]:
    """The note a plan ends with: one line per row the run does not declare (an orphan: dropped from
    the pillar, still owned). Never a write: ``ensure: absent`` (or ``proxmox.forget``) drops it."""
    return [
        f"owned by this minion, no longer declared: {entry['family']} {entry['id']} on {entry['target']} "
        f"(state {entry['state_id']}); declare it, or ensure: absent to forget it (removal: destroy "
        "to delete it)"
        for entry in entries(rows, declared)
        if entry["declared"] is False
    ]


class NoSuchRow(SaltProxmoxError):
    """``proxmox.forget`` named a row this minion does not hold."""


def no_such_row(key: str, rows: Mapping[str, object]) -> NoSuchRow:
    """The refusal of forgetting ``key``, which ``rows`` lacks: it names the rows of the same target
    and family (or every row), so the operator can pick the one they meant."""
    prefix = key.rsplit("/", 1)[0] + "/" if key.count("/") >= 2 else ""
    near = sorted(name for name in rows if prefix and name.startswith(prefix)) or sorted(rows)
    shown = ", ".join(near[:20]) + (", …" if len(near) > 20 else "")
    return NoSuchRow(
        f"no ownership row {key}: nothing was forgotten. Rows are named <target>/<family>/<identity>"
        f"{f' ({shown})' if shown else ' (this minion holds none)'}; `salt-call proxmox.owned` lists them."
    )
