"""Property strings (``key=value,key=value``) and the canonical spelling of their values.

PVE parses these with pve-common ``src/PVE/JSONSchema.pm`` (``parse_property_string``): items
split on ``,``, each ``key=value``, and at most one bare item taken as the format's
``default_key`` (``name`` is not one; the volume of ``rootfs``/``mpN`` is, and ``order`` of
``startup`` is). PVE prints them back in its own key order with defaults it chooses to show, so
values are compared as maps with the format's defaults dropped, never as strings. Each format's
sub-keys (their defaults, which are booleans, which PVE prints first) are a table of the family that
owns it (``lxc.schema``, ``qemu.schema``, ``guest.schema.STARTUP``), passed in as a ``Format``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

#: Boolean spellings PVE's JSONSchema accepts for ``type => 'boolean'`` (pve-common
#: ``JSONSchema.pm`` ``check_type``: 1|0|true|false|yes|no|on|off, any case).
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


class Format(Protocol):
    """A property string's table as this module reads it (a family's ``guest.schema.PropString``):
    ``rows`` (its sub-keys), ``default_key`` (a bare item's sub-key, or None), ``bare`` (the default
    key printed without its name), ``defaults`` (what absence means per sub-key), ``lead``
    (sub-keys PVE prints first, in order), ``flags`` (booleans, compared as 1/0), ``sets`` (``;``
    lists compared as sets), ``upper`` (MAC addresses, compared upper-case)."""

    @property
    def rows(self) -> Mapping[str, object]: ...
    @property
    def default_key(self) -> str | None: ...
    @property
    def bare(self) -> bool: ...
    @property
    def defaults(self) -> Mapping[str, str]: ...
    @property
    def lead(self) -> tuple[str, ...]: ...
    @property
    def flags(self) -> frozenset[str]: ...
    @property
    def sets(self) -> frozenset[str]: ...
    @property
    def upper(self) -> frozenset[str]: ...


def flag(value: object) -> str:
    """``'1'`` or ``'0'`` for any boolean spelling PVE accepts.

    Raises ValueError for anything else (``'2'``, ``'maybe'``).
    """
    if isinstance(value, bool):
        return "1" if value else "0"
    text = str(value).strip().lower()
    if text in _TRUE:
        return "1"
    if text in _FALSE:
        return "0"
    raise ValueError(f"{value!r} is not a boolean (1/0, true/false, yes/no, on/off)")


def pve_boolean(key: str, value: object) -> tuple[bool | None, str | None]:
    """A state option or call argument that is one of PVE's boolean parameters under another name
    (``full`` of a clone, ``force_stop`` → ``forceStop``), read as PVE reads it: pve-common
    ``JSONSchema.pm`` ``parse_boolean`` takes ``1``/``0``, ``true``/``false``, ``yes``/``no``,
    ``on``/``off`` in any case (``flag``), and YAML's booleans are those too.

    Returns ``(value, None)``, or ``(None, sentence naming key)`` for anything else (``n``, ``2``,
    None): such a value is refused before any request, never taken as truthy. The product's own
    switches (``adopt``, ``test``, ``reboot_for_pending``) mirror nothing of PVE's and take a real
    boolean only (``errors.boolean_problem``)."""
    try:
        return flag(value) == "1", None
    except ValueError:
        return None, (
            f"{key}: expected a boolean as PVE spells it (true/false, 1/0, yes/no, on/off), got {value!r}"[
                :200
            ]
        )


def text_problem(value: object) -> str | None:
    """None unless ``value`` is a boolean or a float where PVE takes text, else why and how to
    quote it. Salt reads pillar and SLS as YAML 1.1, where an unquoted ``on``, ``off``, ``yes``,
    ``no``, ``true`` or ``false`` is a boolean and ``1.10`` the number 1.1: the text written is
    gone, and sending ``1`` or ``1.1`` would store something else than what was meant."""
    if isinstance(value, bool):
        return (
            f"got the boolean {str(value).lower()} where PVE takes text: YAML reads an unquoted on, off, "
            "yes, no, true or false as a boolean; quote the text (key: 'on')"
        )
    if isinstance(value, float):
        return (
            f"got the number {value!r} where PVE takes text: YAML reads an unquoted 1.10 as the number 1.1; "
            "quote the text (key: '1.10')"
        )
    return None


def wire(value: object) -> str:
    """A declared scalar as PVE's form encoding spells it: booleans as 1/0, numbers plain.

    Raises TypeError for a list, a dict or None: PVE config values are scalars.
    """
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, str):
        return value
    raise TypeError(f"expected a string, number or boolean, got {type(value).__name__}")


def pairs(value: str, default_key: str | None = None) -> list[tuple[str, str]]:
    """``'a=1,b=2'`` as ``[('a', '1'), ('b', '2')]``; a bare item is ``default_key``'s value.

    Raises ValueError for a bare item when the format has no default key, or a second bare
    item, or an empty key — PVE's ``parse_property_string`` rejects each.
    """
    out: list[tuple[str, str]] = []
    bare_seen = False
    for raw in value.split(","):
        part = raw.strip()
        if not part:
            continue
        key, eq, val = part.partition("=")
        if not eq:
            if default_key is None:
                raise ValueError(f"{part!r} has no '=' and this property string has no default key")
            if bare_seen:
                raise ValueError(f"{part!r}: only one value may omit its key ({default_key})")
            bare_seen = True
            out.append((default_key, part))
            continue
        key = key.strip()
        if not key:
            raise ValueError(f"{part!r} has an empty key")
        out.append((key, val.strip()))
    seen: set[str] = set()
    for key, _ in out:
        if key in seen:
            raise ValueError(f"duplicate key {key!r}")
        seen.add(key)
    return out


def carry(want: Mapping[str, str], live: Mapping[str, str] | None, key: str) -> dict[str, str]:
    """``want`` plus ``live``'s ``key`` when ``want`` names none: a sub-key PVE generated for the
    guest (a NIC's MAC, ``smbios1``'s uuid) is the guest's, and a write that leaves it out makes PVE
    draw a new one (pve-container ``parse_lxc_network``, qemu-server ``parse_net`` and
    ``create_vm``'s smbios1 uuid)."""
    out = dict(want)
    if live is not None and key not in out and live.get(key):
        out[key] = live[key]
    return out


def canonical_option(key: str, value: str, fmt: Format) -> str:
    """One sub-key's value in its comparable spelling in the format ``fmt``.

    Flags as 1/0 (``fmt.flags``; a value that is no boolean is kept as written); ``;`` sets sorted
    (``fmt.sets``); MACs upper-cased (``fmt.upper``: pve-common ``PVE::Tools`` prints generated
    MACs upper-case and PVE compares them case-insensitively).
    """
    if key in fmt.flags:
        try:
            return flag(value)
        except ValueError:
            return value
    if key in fmt.sets:
        return ";".join(sorted({part.strip() for part in value.split(";") if part.strip()}))
    if key in fmt.upper:
        return value.upper()
    return value


def canonical_map(items: Iterable[tuple[str, str]], fmt: Format) -> dict[str, str]:
    """``items`` (sub-key, value) as ``{key: canonical value}`` with ``fmt``'s defaults dropped."""
    out: dict[str, str] = {}
    for key, raw in items:
        canonical = canonical_option(key, raw, fmt)
        if fmt.defaults.get(key) == canonical:
            continue
        out[key] = canonical
    return out


def option_map(value: str, fmt: Format) -> dict[str, str]:
    """A property string of the format ``fmt`` as ``{key: canonical value}``, defaults dropped.
    Raises ValueError where ``pairs`` does."""
    return canonical_map(pairs(value, fmt.default_key), fmt)


def sorted_form(mapping: Mapping[str, str]) -> str:
    """An order-free spelling of a map, for comparing and for naming a value in a message."""
    return ",".join(f"{key}={value}" for key, value in sorted(mapping.items()))


def print_pairs(mapping: Mapping[str, str], lead: Iterable[str] = ()) -> str:
    """A map back to a property string, ``lead`` keys first (PVE wants ``name=`` first on a NIC)."""
    lead = [key for key in lead if key in mapping]
    rest = [key for key in mapping if key not in lead]
    return ",".join(f"{key}={mapping[key]}" for key in [*lead, *rest])


def pve_order(keys: Iterable[str], fmt: Format) -> list[str]:
    """``keys`` in the order PVE prints them in ``fmt``: its ``lead`` (the format's default key, then
    its required keys), then the rest sorted (pve-common ``src/PVE/JSONSchema.pm``
    ``print_property_string``: default key, then ``sort keys`` of the non-optional, then the rest)."""
    keys = list(keys)
    lead = [key for key in fmt.lead if key in keys]
    return lead + sorted(key for key in keys if key not in lead)


def _print_ordered(mapping: Mapping[str, str], fmt: Format) -> str:
    # A bare default key (a volume) is printed bare, as PVE prints it and as operators write it.
    return ",".join(
        mapping[key] if fmt.bare and key == fmt.default_key else f"{key}={mapping[key]}"
        for key in pve_order(mapping, fmt)
    )


def changed_options(old: str | None, new: str | None, fmt: Format) -> tuple[str | None, str | None]:
    """What a plan shows for one property-string key: ``(old, new)`` holding only the sub-keys whose
    values differ, each side a property string in PVE's print order (``tag=42`` → ``tag=43``).

    ``old`` is the live value, ``new`` the value to write (None: the key is absent on that side,
    shown whole on the other; ``''`` on the new side: the key is cleared). Values compare in their
    canonical spelling (``canonical_option``); a sub-key missing on one side counts as the format's
    default there (``fmt.defaults``), shown as that default, or is left out of that side when the
    format has none. A value that does not parse as a property string is shown as it is.
    """
    try:
        have = dict(pairs(old, fmt.default_key)) if old is not None else None
        want = dict(pairs(new, fmt.default_key)) if new else None
    except ValueError:
        return old, new
    if have is None or want is None:
        shown_old = None if have is None else _print_ordered(have, fmt)
        return shown_old, new if want is None else _print_ordered(want, fmt)
    defaults = fmt.defaults
    old_side: dict[str, str] = {}
    new_side: dict[str, str] = {}
    for key in {*have, *want}:
        was = have.get(key, defaults.get(key))
        wants = want.get(key, defaults.get(key))
        same = (
            was is not None
            and wants is not None
            and canonical_option(key, was, fmt) == canonical_option(key, wants, fmt)
        )
        if same or (was is None and wants is None):
            continue
        if was is not None:
            old_side[key] = was
        if wants is not None:
            new_side[key] = wants
    return _print_ordered(old_side, fmt), _print_ordered(new_side, fmt)
