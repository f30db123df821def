"""Outputter ``proxmox_owned``: what ``proxmox.owned`` returns, as a table, one line per ownership row.

.. code-block:: bash

    salt-call proxmox.owned               # this outputter is the function's default
    salt-call proxmox.owned check=True
    salt-call proxmox.owned --out=json    # the same entries as data

Columns: family, target, id, state id, phase (owned/creating), declared (``yes``; ``NO`` for an
object the pillar no longer declares), and after ``check=True`` the live object (present, absent, or
why it could not be read) and whether it still carries its row's fingerprint (``yes``/``NO``, ``-``
when not judged), with what differs below the line. A last line counts the rows and the orphans.

Like ``proxmox_plan``, it reads returns only (nothing of ``salt_proxmox``), so it runs wherever the
output is printed; anything that is not a list of entries is printed as JSON.
"""

from __future__ import annotations

import json

__virtualname__ = "proxmox_owned"

COLUMNS = (
    ("family", "FAMILY"),
    ("target", "TARGET"),
    ("id", "ID"),
    ("state_id", "STATE ID"),
    ("phase", "PHASE"),
    ("declared", "DECLARED"),
)
CHECKED = (("live", "LIVE"), ("fingerprint", "FINGERPRINT"))


def __virtual__():
    return __virtualname__


def _cell(key: str, value: object) -> str:
    if key in ("declared", "fingerprint"):
        return {True: "yes", False: "NO"}.get(value, "-")  # type: ignore[arg-type]
    return "-" if value in (None, "") else str(value)


def _entries(data: object) -> list[dict] | None:
    """``data`` as the entries of one minion (salt-call hands ``{"local": [...]}``), or None."""
    if isinstance(data, dict) and len(data) == 1:
        data = next(iter(data.values()))
    if isinstance(data, list) and all(isinstance(entry, dict) and "family" in entry for entry in data):
        return data
    return None


def render(data: object) -> str:
    """The table for ``data`` (``proxmox.owned``'s return), or ``data`` as JSON."""
    entries = _entries(data)
    if entries is None:
        return json.dumps(data, indent=2, sort_keys=True, default=str)
    columns = COLUMNS + (CHECKED if any("live" in entry for entry in entries) else ())
    table = [[title for _, title in columns]]
    table += [[_cell(key, entry.get(key)) for key, _ in columns] for entry in entries]
    widths = [max(len(row[i]) for row in table) for i in range(len(columns))]
    lines = []
    for index, row in enumerate(table):
        lines.append("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
        if index:
            lines.extend(f"    differs: {item}" for item in entries[index - 1].get("differs") or [])
    orphans = sum(1 for entry in entries if entry.get("declared") is False)
    lines.append(
        f"{len(entries)} owned, {orphans} no longer declared"
        + (" (ensure: absent forgets one; removal: destroy deletes it)" if orphans else "")
    )
    return "\n".join(lines)


def output(data, **kwargs):  # pylint: disable=unused-argument
    """Salt's outputter entry point."""
    return render(data)
