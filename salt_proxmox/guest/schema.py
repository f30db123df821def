"""How a guest family's config keys are described: a ``Key`` per scalar key (how it compares, its
default, whether ``''`` clears it, PVE's rule) and ``indexed_key`` for ``netN``, ``mpN``, ``scsiN``, …
Each family's table (``lxc.schema``, ``qemu.schema``) is made of these.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from salt_proxmox.pve.constraints import Rule


@dataclass(frozen=True)
class Key:
    """How one scalar key is compared and validated.

    ``compare``: ``number``, ``flag``, ``text``, ``description``, ``tags``, ``list`` (ordered
    resolver list), ``startup`` or ``features``. ``default``: what absence means in the live
    config (None: absence is not any declarable value). ``clearable``: ``''`` sends ``delete=``
    (pve-container ``src/PVE/LXC/Config.pm`` ``update_pct_config`` deletes any key but
    ``memory``, ``rootfs``, ``ostype`` — "unable to delete required option" — and the read-only
    ``unprivileged``).
    """

    compare: str
    rule: Rule
    default: str | None = None
    clearable: bool = True


def indexed_key(key: str, pattern: re.Pattern[str], ranges: Mapping[str, int]) -> tuple[str, int] | None:
    """``(family, index)`` of an indexed config key of any guest family: ``pattern`` matches
    ``<family><index>``, and the index must be below ``ranges[family]`` (``unusedN`` has no bound).
    None for any other key."""
    match = pattern.match(key)
    if not match:
        return None
    family, index = match.group(1), int(match.group(2))
    if family != "unused" and index >= ranges[family]:
        return None
    return family, index
