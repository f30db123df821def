"""The index of a store's rows by state (``<target>/<family>`` and state id to row key), built once
per change of the store and carried over each row a run writes, never rebuilt per state.
"""

from __future__ import annotations

from collections.abc import Mapping

from salt_proxmox.ownership.rows import OwnershipCorrupt, check_row


def state_index(rows: Mapping[str, object]) -> tuple[dict, dict]:
    """``({(prefix, state_id): (key, row)}, {prefix: OwnershipCorrupt})`` over ``rows``, prefix
    being ``<target>/<family>/``: the first row (by key) of each state id, as stored (the caller
    copies the one it returns), and the first malformed row of each family."""
    by_state: dict = {}
    corrupt: dict = {}
    for key, row in sorted(rows.items()):
        if not isinstance(row, dict) or key.count("/") < 2:
            continue
        prefix = "/".join(key.split("/", 2)[:2]) + "/"
        try:
            state_id = check_row(key, row).get("state_id")
        except OwnershipCorrupt as exc:
            corrupt.setdefault(prefix, exc)
            continue
        by_state.setdefault((prefix, state_id), (key, row))
    return by_state, corrupt


def state_index_after(
    index: tuple[dict, dict], key: str, before: object, after: object
) -> tuple[dict, dict] | None:
    """``state_index`` of the rows after row ``key`` changed from ``before`` to ``after``, from
    the index before; None when only a new build can tell (a family with a malformed row, or the
    row that was first for its state id changing its state id or leaving)."""
    by_state, corrupt = index
    if key.count("/") < 2:
        return index
    prefix = "/".join(key.split("/", 2)[:2]) + "/"
    if prefix in corrupt:
        return None
    ids = []
    for row in (before, after):
        if not isinstance(row, dict):
            ids.append(None)
            continue
        try:
            ids.append((prefix, check_row(key, row).get("state_id")))
        except OwnershipCorrupt:
            return None
    old, new = ids
    if old is not None and old != new and by_state.get(old, ("",))[0] == key:
        return None
    by_state = dict(by_state)
    # ``<=``: the row that was first for its state id keeps its place with its new content.
    if new is not None and (new not in by_state or key <= by_state[new][0]):
        by_state[new] = (key, after)
    return by_state, corrupt
