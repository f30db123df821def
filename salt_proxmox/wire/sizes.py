"""Disk sizes as pve-common parses them, and the size PVE gives a new volume.

pve-common ``src/PVE/JSONSchema.pm`` ``parse_size``: ``^(\\d+(\\.\\d+)?)([KMGT](?:iB)?)?$`` — binary
units (``K`` and ``KiB`` are both 1024), a bare number is bytes, and nothing else (``40GB``,
``-1G``, ``40g`` are invalid). The ``KiB``…``TiB`` forms came with libpve-common-perl 8.3.3
(PVE 8.4) and 9.0.9; this product accepts them in a declaration but never sends them: the sizes
it sends (a new volume's GiB count, a resize's ``NM``) are spelled the way every PVE 8 and 9
takes. pve-container's resize takes ``\\+?\\d+(\\.\\d+)?[KMGT]?`` (``PUT .../resize``, ``size``).
"""

from __future__ import annotations

import re
from decimal import Decimal

_SIZE = re.compile(r"^(\d+(?:\.\d+)?)(?:([KMGT])(?:iB)?)?\Z", re.ASCII)
_UNITS = {None: 0, "K": 1, "M": 2, "G": 3, "T": 4}
MIB = 1024**2
GIB = 1024**3


def parse_size(text: str) -> int:
    """Bytes in ``text`` (``'40G'`` and ``'40GiB'`` → 42949672960, ``'1.5T'``, ``'100'`` bytes).

    The fraction is truncated to whole bytes as ``parse_size``'s ``int($size)`` does. Raises
    ValueError naming PVE's rule for any other spelling.
    """
    match = _SIZE.match(str(text).strip())
    if match is None:
        raise ValueError(
            f"{text!r} is not a PVE size: a number with an optional binary unit K, M, G or T, or KiB, "
            "MiB, GiB or TiB (e.g. 8G, 1.5T, 512MiB; 40GB and negative sizes are invalid)"
        )
    number, unit = match.groups()
    return int(Decimal(number) * (1024 ** _UNITS[unit]))


def new_volume_mib(gib: str) -> int:
    """The MiB a new volume ``storage:<gib>`` is allocated with: ``int(N * 1024)``.

    pve-container ``src/PVE/LXC.pm`` ``create_disks``: ``$size_kb = int(${size_gb} * 1024) * 1024``
    — the GiB count is cut to whole MiB (``8.3`` → 8499 MiB, not 8.3 GiB), and that is the
    ``size=`` the config records. Perl multiplies doubles, so this does too (``float``): a count
    written with more digits than a double holds rounds as PVE rounds it. Raises ValueError for a
    count that is not a number.
    """
    return int(float(gib) * 1024)


def mib_text(mib: int) -> str:
    """A resize ``size`` for an absolute ``mib`` MiB: ``'12G'`` for whole GiB, else ``'8499M'``
    (both match PVE's resize pattern and name the same bytes)."""
    return f"{mib // 1024}G" if mib % 1024 == 0 else f"{mib}M"
