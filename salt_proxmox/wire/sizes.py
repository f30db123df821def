"""Disk sizes as pve-common parses them.

pve-common ``src/PVE/JSONSchema.pm`` ``parse_size``: ``^(\\d+(\\.\\d+)?)([KMGT])?$`` — binary
units (K = 1024), a bare number is bytes, and nothing else (``40GB``, ``-1G``, ``40g`` are
invalid). pve-container's resize takes ``\\+?\\d+(\\.\\d+)?[KMGT]?`` (``PUT .../resize``, ``size``).
"""

from __future__ import annotations

import re
from decimal import Decimal

_SIZE = re.compile(r"^(\d+(?:\.\d+)?)([KMGT])?$", re.ASCII)
_UNITS = {None: 0, "K": 1, "M": 2, "G": 3, "T": 4}
GIB = 1024**3


def parse_size(text: str) -> int:
    """Bytes in ``text`` (``'40G'`` → 42949672960, ``'1.5T'``, ``'100'`` bytes).

    Raises ValueError naming PVE's rule for any other spelling.
    """
    match = _SIZE.match(str(text).strip())
    if match is None:
        raise ValueError(
            f"{text!r} is not a PVE size: a number with an optional binary unit K, M, G or T "
            "(e.g. 8G, 1.5T; 40GB and negative sizes are invalid)"
        )
    number, unit = match.groups()
    return int(Decimal(number) * (1024 ** _UNITS[unit]))


def gib_text(number: str) -> str:
    """A new-disk GiB count (``'200.5'``) as a resize size (``'200.5G'``), fractions kept."""
    return f"{Decimal(number).normalize():f}G"
