"""How a guest family's config keys are described: a ``Key`` per scalar key (how it compares, its
default, whether ``''`` clears it, PVE's rule), ``indexed_key`` for ``netN``, ``mpN``, ``scsiN``, …,
and a ``PropString`` table of ``SubKey`` rows per property string (``netN``, ``rootfs``, drives, …).
Each family's tables (``lxc.schema``, ``qemu.schema``) are made of these; ``STARTUP`` is pve-common's,
the same for both.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

from salt_proxmox.pve.constraints import Rule


@dataclass(frozen=True)
class Key:
    """How one scalar key is compared and validated.

    ``compare``: ``number``, ``flag``, ``text``, ``description``, ``tags``, ``list`` (ordered
    resolver list), ``startup`` or ``features``. ``default``: what absence means in the live
    config (None: absence is not any declarable value). ``clearable``: ``''`` sends ``delete=``
    (pve-container ``src/PVE/LXC/Config.pm`` ``update_pct_config`` deletes any key but
    ``memory``, ``rootfs``, ``ostype`` — "unable to delete required option" — and the read-only
    ``unprivileged``). ``form``: the table of a key whose value is a property string compared as an
    option map (``features``).
    """

    compare: str
    rule: Rule
    default: str | None = None
    clearable: bool = True
    form: PropString | None = None


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


#: A sub-key whose value PVE takes as any text.
_ANY = Rule()


@dataclass(frozen=True)
class SubKey:
    """One sub-key of a property string, as one row of its format's table (pve-container
    ``src/PVE/LXC/Config.pm`` ``$netconf_desc``, qemu-server ``PVE/QemuServer/Network.pm``
    ``$net_fmt``: a sub-key's type, default and description in one place).

    ``rule``: PVE's rule for its value (a ``Rule("flag")`` is a boolean, compared as 1/0).
    ``default``: what absence means, so a value equal to it is no change (None: absence is not any
    value). ``lead``: printed before the others (the format's default key and its required keys,
    in table order; pve-common ``JSONSchema.pm`` ``print_property_string``). ``compare``: how two
    values compare besides ``flag`` rows: ``set`` (a ``;`` list whose order PVE does not keep
    meaningful), ``mac`` (a MAC address, any case), ``''`` as written.
    """

    rule: Rule = _ANY
    default: str | None = None
    lead: bool = False
    compare: str = ""


@dataclass(frozen=True)
class PropString:
    """One property-string format: its rows (``SubKey``) by sub-key, in PVE's table order.

    ``name``: the format's name as messages and plans know it (``net``, ``drive``, …);
    ``default_key``: the sub-key a bare item is (the volume of ``rootfs``/``mpN``/a drive, ``order``
    of ``startup``); ``bare``: the default key is printed without its name, as PVE prints a
    volume. ``salt_proxmox.wire.propstring`` parses, prints and compares with it (``flags``,
    ``sets``, ``upper``, ``defaults``, ``lead``), ``options_problem`` checks with ``rules``.
    """

    name: str
    rows: Mapping[str, SubKey]
    default_key: str | None = None
    bare: bool = False

    def plus(self, name: str, **rows: SubKey) -> PropString:
        """This format with more rows (``$mp_desc`` is ``$rootfs_desc`` plus ``mp``, ``backup``, …)."""
        return PropString(name, {**self.rows, **rows}, self.default_key, self.bare)

    @cached_property
    def rules(self) -> dict[str, Rule]:
        return {key: row.rule for key, row in self.rows.items()}

    @cached_property
    def defaults(self) -> dict[str, str]:
        return {key: row.default for key, row in self.rows.items() if row.default is not None}

    @cached_property
    def lead(self) -> tuple[str, ...]:
        return tuple(key for key, row in self.rows.items() if row.lead)

    @cached_property
    def flags(self) -> frozenset[str]:
        return frozenset(key for key, row in self.rows.items() if row.rule.kind == "flag")

    @cached_property
    def sets(self) -> frozenset[str]:
        return frozenset(key for key, row in self.rows.items() if row.compare == "set")

    @cached_property
    def upper(self) -> frozenset[str]:
        return frozenset(key for key, row in self.rows.items() if row.compare == "mac")


#: pve-common ``JSONSchema.pm`` ``pve-startup-order`` (``[order=]N,up=N,down=N``), the same for
#: containers and VMs: ``order`` the default key; checked whole by ``pve.constraints.check_startup``.
STARTUP = PropString(
    "startup",
    {
        "order": SubKey(Rule("integer", minimum=0), lead=True),
        "up": SubKey(Rule("integer", minimum=0)),
        "down": SubKey(Rule("integer", minimum=0)),
    },
    default_key="order",
)
