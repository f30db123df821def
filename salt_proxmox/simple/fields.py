"""Keys of a simple object as data: one ``Field`` per PVE key, serving the declaration, the live
read and the write alike (docs/design.md §7).

A family whose object is a flat record of PVE keys (a node's network interface, an SDN zone,
vnet or subnet) describes each key once: its kind, its bounds, and how PVE spells it back. The
same ``canonical`` turns a declared value and a live one into one spelling, so the judge compares
values, never spellings; ``wire`` is what a form sends; ``rule`` is the vendor constraint
(``salt_proxmox.pve.constraints``) the form is checked against before it is sent.

Canonical values are JSON scalars (they are kept in ownership rows): flags ``0``/``1``, integers
as ``int``, everything else text. A cleared key (declared ``''`` or None, or absent from PVE's
answer) is ``''`` — ``0`` for a flag, since PVE writes a false flag as no line at all.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from salt_proxmox.errors import DeclarationError, shown
from salt_proxmox.pve.constraints import INTEGER, Rule, check_cidr, split_list
from salt_proxmox.wire.propstring import flag

KINDS = ("text", "flag", "integer", "choice", "set", "list", "address", "cidr")


@dataclass(frozen=True)
class Field:
    """One PVE key.

    - ``kind``: ``text``; ``flag`` (PVE boolean, compared as 0/1); ``integer`` (``minimum``/
      ``maximum``); ``choice`` (one of ``choices``); ``set`` (a ``split_list`` whose order PVE does
      not keep: sorted, space-joined); ``list`` (a ``split_list`` kept in order, space-joined);
      ``separator`` joins a set or list as PVE writes it (``,`` for SDN node lists);
      ``address`` (an IP address, ``version`` 4 or 6 when given); ``cidr`` (an address with its
      prefix length, host bits kept, as PVE keeps them);
    - ``check``: a further rule on the canonical text, returning None or the reason;
    - ``normal``: how PVE spells a text value back (applied to declared and live text alike).
    """

    kind: str = "text"
    minimum: int | None = None
    maximum: int | None = None
    choices: tuple[str, ...] = ()
    version: int | None = None
    separator: str = " "
    check: Callable[[str], str | None] | None = None
    normal: Callable[[str], str] | None = None

    def cleared(self) -> object:
        """The canonical value of a key PVE does not hold."""
        return 0 if self.kind == "flag" else ""

    def canonical(self, value: object) -> object:
        """``value`` (declared or live) in the one spelling compared. Raises ValueError(reason)."""
        if value is None or value == "":
            return self.cleared()
        if self.kind == "flag":
            return int(flag(value))
        if self.kind == "integer":
            if isinstance(value, bool) or not (
                isinstance(value, int) or (isinstance(value, str) and INTEGER.match(value))
            ):
                raise ValueError(f"expected an integer, got {shown(value)}")
            number = int(value)
            if self.minimum is not None and number < self.minimum:
                raise ValueError(f"{number} is below the minimum {self.minimum}")
            if self.maximum is not None and number > self.maximum:
                raise ValueError(f"{number} is above the maximum {self.maximum}")
            return number
        if self.kind in ("set", "list"):
            items = _items(value)
            if self.kind == "set":
                items = sorted(set(items))
            text = self.separator.join(items)
        elif isinstance(value, str):
            text = value
        elif isinstance(value, int | float) and not isinstance(value, bool):
            text = str(value)
        else:
            raise ValueError(f"expected text, got {type(value).__name__}")
        if self.kind == "choice" and text not in self.choices:
            raise ValueError(f"{shown(text)} is not one of {', '.join(self.choices)}")
        if self.kind == "address":
            text = _address(text, self.version)
        elif self.kind == "cidr":
            text = _cidr(text, self.version)
        if self.normal is not None:
            text = self.normal(text)
        if self.check is not None and text:
            problem = self.check(text)
            if problem:
                raise ValueError(problem)
        return text

    def wire(self, value: object) -> str:
        """A canonical value as a form sends it."""
        return str(value)

    def rule(self) -> Rule:
        """The vendor constraint for this key's wire spelling."""
        if self.kind == "flag":
            return Rule("boolean")
        if self.kind == "integer":
            return Rule("integer", minimum=self.minimum, maximum=self.maximum)
        if self.kind == "choice":
            return Rule("enum", choices=self.choices)

        def again(text: str) -> str | None:
            try:
                self.canonical(text)
            except ValueError as exc:
                return str(exc)
            return None

        return Rule("string", check=again)


def _items(value: object) -> list[str]:
    if isinstance(value, str):
        return split_list(value)
    if isinstance(value, list | tuple) and all(isinstance(item, str) for item in value):
        return [part for item in value for part in split_list(item)]
    raise ValueError(f"expected a list or a comma/space separated text, got {type(value).__name__}")


def _address(text: str, version: int | None) -> str:
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        raise ValueError(f"{shown(text)} is not an IP address") from None
    if version is not None and ip.version != version:
        raise ValueError(f"{shown(text)} is not an IPv{version} address")
    return ip.compressed


def _cidr(text: str, version: int | None) -> str:
    address, slash, prefix = text.partition("/")
    if not slash or not prefix.isascii() or not prefix.isdigit():
        raise ValueError(f"{shown(text)} is not address/prefix-length (CIDR)")
    try:
        ip = ipaddress.ip_interface(f"{address}/{int(prefix)}")
    except ValueError:
        raise ValueError(f"{shown(text)} is not an address with a valid prefix length (CIDR)") from None
    if version is not None and ip.version != version:
        raise ValueError(f"{shown(text)} is not an IPv{version} CIDR")
    canonical = f"{ip.ip.compressed}/{ip.network.prefixlen}"
    problem = check_cidr(canonical, version)  # the formats CIDRv4/CIDRv6: a prefix of 8 or more
    if problem:
        raise ValueError(problem)
    return canonical


def canonical_values(fields: Mapping[str, Field], declared: Mapping[str, object], where: str = "") -> dict:
    """The canonical values of the declared keys (each must be one of ``fields``). Raises
    DeclarationError naming every bad key and its rule."""
    problems, values = [], {}
    for key, value in declared.items():
        field = fields.get(key)
        if field is None:
            problems.append(f"{where}{key}: not a key this state manages ({', '.join(sorted(fields))})")
            continue
        try:
            values[key] = field.canonical(value)
        except ValueError as exc:
            problems.append(f"{where}{key}: {exc}")
    if problems:
        raise DeclarationError(problems)
    return values


def live_values(fields: Mapping[str, Field], data: Mapping[str, object]) -> dict:
    """The canonical values of every field in PVE's answer ``data`` (missing keys cleared).
    Raises ValueError naming a key PVE answered in a shape no field takes."""
    values = {}
    for key, field in fields.items():
        try:
            values[key] = field.canonical(data.get(key))
        except ValueError as exc:
            raise ValueError(f"{key}: {exc}") from None
    return values


def form_values(
    fields: Mapping[str, Field], values: Mapping[str, object], skip: tuple[str, ...] = ("type",)
) -> dict[str, str]:
    """The form keys of canonical ``values``: each set key in its ``wire`` spelling. A cleared key
    (``''``, ``0`` for a flag, ``[]``) is not sent: PVE clears a key through ``delete`` (see
    ``deleted_keys``). ``skip``: the keys the caller sends itself."""
    return {
        key: fields[key].wire(value)
        for key, value in values.items()
        if key not in skip and value not in ("", 0, [])
    }


def deleted_keys(
    values: Mapping[str, object], live: Mapping[str, object], skip: tuple[str, ...] = ("type",)
) -> list[str]:
    """The keys an update's ``delete`` lists (pve-manager ``PVE/API2/Network.pm``
    ``update_network``, pve-network ``src/PVE/API2/Network/SDN/{Zones,Vnets,Subnets}.pm``
    ``update``): declared cleared while ``live`` still holds a value."""
    return [
        key
        for key, value in values.items()
        if key not in skip and value in ("", 0, []) and live.get(key) not in (None, "", 0, [])
    ]


def serial(key: str, value: object) -> tuple[int | None, str | None]:
    """``(the integer, None)`` for a declared serial (``secret_serial``, ``password_serial``: a number
    whose change writes a secret again), or ``(None, the reason naming key)``."""
    if isinstance(value, bool) or not (
        isinstance(value, int) or (isinstance(value, str) and INTEGER.match(value))
    ):
        return None, f"{key}: expected an integer, got {shown(value)}"
    return int(value), None


def secret_serial(value: object, secrets: object, noun: str = "secret") -> tuple[int | None, str | None]:
    """``secret_serial`` declared beside a family's secrets: ``(the integer, None)``, or ``(None, the
    reason)`` when it is no integer (``serial``) or the declaration holds no ``noun`` it would write
    again (a serial whose change would write nothing is refused by name)."""
    number, problem = serial("secret_serial", value)
    if problem is None and not secrets:
        return None, f"secret_serial: the declaration holds no {noun} to write again"
    return number, problem
