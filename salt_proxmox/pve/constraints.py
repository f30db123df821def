"""Vendor constraints: the PVE API schema's rules for a form, checked before any write (docs/design.md §5a).

Each ``Rule`` names its source. The formats are pve-common ``src/PVE/JSONSchema.pm`` (PVE 9
line): ``dns-name``, ``pve-tag-list``, ``pve-startup-order``, ``address-list``,
``dns-name-list``; sizes are ``parse_size`` (see ``salt_proxmox.wire.sizes``). A failing form
is refused naming key and rule, and nothing is sent.

Every pattern is ASCII-only (``re.ASCII``): PVE's formats name ASCII letters and digits, while a
Python ``str`` pattern's ``\\d`` also matches ``١٢`` and ``re.IGNORECASE`` folds the Kelvin sign
into ``k`` — values that would pass here and be refused by PVE after the write began. The one
exception is a format PVE writes with Perl's ``\\w`` (``pve-bridge-id``, ``BRIDGE_ID``), which
matches Unicode word characters in PVE as in Python.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from urllib.parse import urlencode

from salt_proxmox.errors import DeclarationError, shown
from salt_proxmox.wire.propstring import flag, pairs
from salt_proxmox.wire.sizes import parse_size

_DNS_LABEL = r"(?:[a-zA-Z0-9](?:[a-zA-Z0-9\-]*[a-zA-Z0-9])?)"
#: ``pve_verify_dns_name``: labels of letters, digits and inner hyphens, dot-separated.
DNS_NAME = re.compile(rf"^(?:{_DNS_LABEL}\.)*{_DNS_LABEL}\Z")
#: ``$PVE::JSONSchema::PVE_TAG_RE``.
TAG = re.compile(r"^[a-z0-9_][a-z0-9_\-+.]*\Z", re.IGNORECASE | re.ASCII)
#: ``pve-startup-order`` parts (``pve_parse_startup_order``): each comma-separated part on its own,
#: in any order — ``[order=]N``, ``up=N``, ``down=N``.
STARTUP_PART = re.compile(r"^(?:(?:order=)?\d+|up=\d+|down=\d+)\Z", re.ASCII)
#: ``pve-node`` (pve-common ``pve_verify_node_name``).
NODE = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9\-]*[a-zA-Z0-9])?\Z")
#: Resize ``size`` (pve-container ``src/PVE/API2/LXC.pm`` ``resize_vm``).
RESIZE_SIZE = re.compile(r"^\+?\d+(?:\.\d+)?[KMGT]?\Z", re.ASCII)
#: A node name is a host name, so one DNS label: at most 63 characters (RFC 1035 2.3.4; PVE's
#: ``pve_verify_node_name`` takes the label pattern above, and the node's hostname bounds it).
NODE_MAX = 63
#: pve-common ``JSONSchema.pm`` ``check_type``: ``is_integer`` is ``^[+-]?\d+$``, ``is_number``
#: ``^[+-]?(\d+\.\d+|\d+\.|\.\d+|\d+)([eE][+-]?\d+)?$`` — no ``_``, no spaces, no NaN or
#: infinity, which Python's ``int()``/``float()`` would all take.
INTEGER = re.compile(r"^[+-]?[0-9]+\Z")
NUMBER = re.compile(r"^[+-]?(?:[0-9]+\.[0-9]+|[0-9]+\.|\.[0-9]+|[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
#: ``pve-vmid``: ``100 - 999999999`` (pve-common ``JSONSchema.pm`` ``pve_verify_vmid``).
VMID_MIN, VMID_MAX = 100, 999_999_999


def split_list(value: str) -> list[str]:
    """pve-common ``PVE::Tools::split_list``: the items of a list separated by commas, semicolons
    or white space, empty items dropped (``-list`` formats, ``privs``, ACL ``roles``/``users``)."""
    return [part for part in re.split(r"[;,\s]+", value) if part]


def check_dns_name(value: str) -> str | None:
    """None when ``value`` is a DNS name, else the reason (PVE: ``value does not look like a valid
    DNS name``)."""
    if len(value) > 255 or not DNS_NAME.match(value):
        return "value does not look like a valid DNS name"
    return None


def check_tags(value: str) -> str | None:
    """``pve-tag-list``: tags split on ``;``, ``,`` or space, each matching PVE_TAG_RE."""
    bad = [tag for tag in split_list(value) if not TAG.match(tag)]
    return f"invalid tag(s) {', '.join(bad)}: a tag is letters, digits, _ - + ." if bad else None


def check_startup(value: str) -> str | None:
    """``pve-startup-order``."""
    parts = [part.strip() for part in value.split(",") if part.strip()]
    if parts and all(STARTUP_PART.match(part) for part in parts):
        return None
    return "not [order=]N[,up=N][,down=N]"


def check_addresses(value: str) -> str | None:
    """``address-list``: IP addresses split on ``;``, ``,`` or space."""
    for part in split_list(value):
        try:
            ipaddress.ip_address(part)
        except ValueError:
            return f"{part!r} is not an IP address"
    return None


def check_cidr(value: str, version: int | None = None) -> str | None:
    """None for an address/prefix PVE takes, else why. pve-common ``JSONSchema.pm``
    ``pve_verify_cidrv4``/``pve_verify_cidrv6`` (formats ``CIDRv4``, ``CIDRv6``; ``CIDR`` is
    either): an address of IP version ``version`` (either when None) with a prefix length of 8 to 32
    (IPv4) or 128 (IPv6); a /7 or shorter is refused. Host bits are not looked at."""
    try:
        interface = ipaddress.ip_interface(value)
    except ValueError:
        interface = None
    if interface is None or version not in (None, interface.version):
        return f"{value!r} is not an IPv{version or '4 or IPv6'} address/prefix"
    if not 8 <= interface.network.prefixlen <= interface.max_prefixlen:
        return (
            f"{value!r}: value does not look like a valid IPv{interface.version} CIDR network "
            f"(prefix 8-{interface.max_prefixlen})"
        )
    return None


#: pve-common ``JSONSchema.pm`` ``pve_verify_mac_addr``: the I/G bit (the low bit of the first
#: octet) must be clear, a unicast address.
MAC = re.compile(r"[0-9A-Fa-f][02468aceACE](?::[0-9A-Fa-f]{2}){5}\Z", re.ASCII)


#: ``pve-bridge-id`` (pve-common ``JSONSchema.pm`` ``parse_bridge_id``: ``m/^[-_.\w\d]+$/``), the
#: ``bridge`` of a container's ``netN`` (pve-container ``Config.pm`` ``$netconf_desc``) and of a VM's
#: (qemu-server ``QemuServer/Network.pm`` ``$net_fmt``). Perl's ``\w`` is Unicode here: pve-http-server
#: ``AnyEvent.pm`` ``decode_urlencoded`` hands the API ``Encode::decode('utf8', …)`` character
#: strings (``decode_json`` too), so ``vmbrΩ`` passes the format and ``vmbr 0`` does not. Python's
#: ``\w`` on a ``str`` is Unicode too, so the pattern is compiled without ``re.ASCII``.
BRIDGE_ID = re.compile(r"[-_.\w\d]+")


def check_bridge_id(value: str) -> str | None:
    """None for a bridge name PVE's ``pve-bridge-id`` format takes (``BRIDGE_ID``), else why."""
    return None if BRIDGE_ID.fullmatch(value) else f"{value!r} is not a bridge name"


def check_mac(value: str) -> str | None:
    """None for a unicast MAC address (format ``mac-addr``), else why."""
    return None if MAC.match(value) else f"{value!r} is not a unicast MAC address"


def check_address(value: str, version: int) -> str | None:
    """None for an IP address of ``version`` (4 or 6), else why: pve-common ``JSONSchema.pm``
    formats ``ipv4``/``ipv6`` (``pve_verify_ipv4``/``pve_verify_ipv6``; no IPv6 zone index)."""
    try:
        address = ipaddress.ip_address(value)
    except ValueError:
        address = None
    if address is None or address.version != version or "%" in value:
        return f"{value!r} is not an IPv{version} address"
    return None


#: The words ``pve-ipv4-config``/``pve-ipv6-config`` take besides an address/prefix
#: (pve-common ``JSONSchema.pm`` ``pve_verify_ipv4_config``/``pve_verify_ipv6_config``).
IP_CONFIG_WORDS = {4: ("dhcp", "manual"), 6: ("auto", "dhcp", "manual")}


def check_ip_config(value: str, version: int) -> str | None:
    """None for a ``pve-ipv4-config`` (``version`` 4: ``dhcp``, ``manual`` or a CIDRv4 with a
    prefix of 8-32) or ``pve-ipv6-config`` (6: ``auto``, ``dhcp``, ``manual`` or a CIDRv6 with a
    prefix of 8-128) value, else why (``pve_verify_ipv4_config``/``pve_verify_ipv6_config`` over
    ``pve_verify_cidrv4``/``v6``, whose prefix is digits, never a netmask)."""
    if value in IP_CONFIG_WORDS[version]:
        return None
    if not re.fullmatch(r"[^/]+/[0-9]{1,3}", value, re.ASCII):
        example = "/24" if version == 4 else "/64"
        words = " or ".join(IP_CONFIG_WORDS[version])
        return f"{value!r} is not {words} or an address with a prefix length (e.g. {example})"
    return check_cidr(value, version) or check_address(value.partition("/")[0], version)


def check_dns_names(value: str) -> str | None:
    """``dns-name-list``."""
    for part in split_list(value):
        if check_dns_name(part):
            return f"{part!r} does not look like a valid DNS name"
    return None


def check_size(value: str) -> str | None:
    """``parse_size``: binary units only."""
    try:
        parse_size(value)
    except ValueError as exc:
        return str(exc)
    return None


def check_resize(value: str) -> str | None:
    """The resize endpoint's ``size`` pattern."""
    return None if RESIZE_SIZE.match(value) else "not [+]N[.N][K|M|G|T]"


#: pve-http-server ``src/PVE/APIServer/AnyEvent.pm``: ``$limit_max_post = 64*1024``. A longer request
#: body is refused (HTTP 413) before any API method runs, so no value that long can ever be written.
MAX_POST = 64 * 1024


def post_problem(form: Mapping[str, str], secrets: Collection[str] = ()) -> str | None:
    """None when ``form`` fits in one PVE request body, else the sentence naming its longest value
    (clipped: ``shown``; the value of a key in ``secrets`` is never repeated)."""
    size = len(urlencode(dict(form)).encode("utf-8"))
    if size <= MAX_POST:
        return None
    key = max(form, key=lambda name: len(str(form[name])))
    value = "its value (not repeated here)" if key in secrets else shown(form[key])
    return (
        f"{key}: {value} would make a request of {size} bytes; PVE's API server takes at most "
        f"{MAX_POST} (pve-http-server $limit_max_post): shorten it"
    )


@dataclass(frozen=True)
class Rule:
    """One key's schema rule.

    ``kind``: ``integer``, ``number``, ``boolean`` (an API parameter: ``1``/``0`` only),
    ``flag`` (a boolean inside a property string, which ``parse_property_string`` reads with
    ``parse_boolean``: also on/off, yes/no, true/false), ``string`` or ``enum``;
    ``minimum``/``maximum`` for numbers; ``max_length`` for strings; ``choices`` for enums;
    ``check`` a format checker returning None or the reason (for numbers, run after the range).
    """

    kind: str = "string"
    minimum: float | None = None
    maximum: float | None = None
    max_length: int | None = None
    choices: tuple[str, ...] = ()
    check: Callable[[str], str | None] | None = None

    def problem(self, value: str) -> str | None:
        """None when ``value`` (its wire spelling) satisfies the rule, else the reason in PVE's words."""
        if self.kind in ("integer", "number"):
            if not (INTEGER if self.kind == "integer" else NUMBER).match(value):
                return f"type check ('{self.kind}') failed - got {shown(value)}"
            number = int(value) if self.kind == "integer" else float(value)
            if self.minimum is not None and number < self.minimum:
                return f"value must have a minimum value of {self.minimum:g}"
            if self.maximum is not None and number > self.maximum:
                return f"value must have a maximum value of {self.maximum:g}"
            return self.check(value) if self.check is not None else None
        if self.kind == "boolean":
            # pve-common JSONSchema.pm check_type: an API parameter of type boolean is '1' or
            # '0' and nothing else (the 1|true|yes|on test there is commented out).
            return None if value in ("1", "0") else f"type check ('boolean') failed - got {shown(value)}"
        if self.kind == "flag":
            try:
                flag(value)
            except ValueError:
                return f"type check ('boolean') failed - got {shown(value)}"
            return None
        if self.kind == "enum" and value not in self.choices:
            return (
                f"value {shown(value)} does not have a value in the enumeration '{', '.join(self.choices)}'"
            )
        if self.max_length is not None and len(value) > self.max_length:
            return f"value may only be {self.max_length} characters long, got {shown(value)}"
        if self.check is not None and value != "":
            return self.check(value)
        return None


@dataclass(frozen=True)
class Endpoint:
    """One write endpoint: its label, required keys, and the rule for each key it takes."""

    label: str
    required: tuple[str, ...]
    rule_for: Callable[[str], Rule | None]


def check_form(
    endpoint: Endpoint, form: Mapping[str, str], presence: bool, secrets: Collection[str] = ()
) -> None:
    """Refuse ``form`` unless every key passes its rule (and, with ``presence``, every required
    key is there). ``presence`` is False for partial config updates, whose keys are all optional.
    The values of the keys in ``secrets`` (a password) are checked, never repeated.

    Raises DeclarationError listing ``<endpoint>: <key>: <rule>`` for each problem; the caller
    sends nothing.
    """
    problems: list[str] = []
    if presence:
        problems += [
            f"{endpoint.label}: {key}: property is missing and it is not optional"
            for key in endpoint.required
            if form.get(key) in (None, "")
        ]
    for key, value in form.items():
        if key in ("digest", "delete"):
            continue
        rule = endpoint.rule_for(key)
        if rule is None:
            problems.append(f"{endpoint.label}: {key}: property is not defined in schema")
            continue
        reason = rule.problem(value)
        if reason and key in secrets:
            reason = "the value does not pass its rule; it is not repeated here"
        if reason:
            problems.append(f"{endpoint.label}: {key}: {reason}")
    too_long = post_problem(form, secrets)
    if too_long:
        problems.append(f"{endpoint.label}: {too_long}")
    if problems:
        raise DeclarationError(problems)


def vmid_number(value: object) -> int:
    """The vmid ``value`` declares (an int or a string of digits), within pve-common
    ``JSONSchema.pm`` ``pve_verify_vmid``'s range. Raises DeclarationError naming ``vmid``."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise DeclarationError(f"vmid: expected an integer, got {type(value).__name__}")
    if isinstance(value, str) and not re.fullmatch(r"[0-9]+", value):
        raise DeclarationError(f"vmid: {shown(value)} is not an integer")
    number = int(value)
    if not VMID_MIN <= number <= VMID_MAX:
        raise DeclarationError(f"vmid: {number} is outside PVE's range {VMID_MIN}-{VMID_MAX} (pve-vmid)")
    return number


def options_problem(value: str, rules: Mapping[str, Rule], default_key: str | None = None) -> str | None:
    """None when the property string ``value`` holds only options of ``rules``, each valid, else
    the reason naming the first bad option (pve-common ``JSONSchema.pm`` ``parse_property_string``:
    an unknown key dies with "invalid key in comma-separated list property", and ``key=`` with no
    value with "missing key in comma-separated list property"). A bare item is ``default_key``'s."""
    try:
        items = pairs(value, default_key)
    except ValueError as exc:
        return str(exc)
    unknown = sorted({key for key, _ in items} - set(rules))
    if unknown:
        return f"unknown option(s) {', '.join(unknown)}; allowed: {', '.join(sorted(rules))}"
    empty = [key for key, raw in items if raw == ""]
    if empty:
        return f"{empty[0]}= has no value; PVE refuses an empty option (leave the option out instead)"
    for option, raw in items:
        reason = rules[option].problem(raw)
        if reason:
            return f"{option}={raw}: {reason}"
    return None


#: pve-access-control ``verify_poolname``: up to three levels of ``[A-Za-z0-9.-_]+``. A pool id is
#: a PVE format every family that names a pool checks (the pool family, a guest's ``pool:``).
POOLID = re.compile(r"^[A-Za-z0-9.\-_]+(?:/[A-Za-z0-9.\-_]+){0,2}\Z")


def check_poolid(value: str) -> str | None:
    """None when ``value`` is a poolid PVE creates, else the reason in PVE's words."""
    if not POOLID.match(value):
        return f"pool name '{value}' contains invalid characters"
    if not value.rsplit("/", 1)[-1][:1].isalpha():
        return "pool name must start with a letter"
    return None
