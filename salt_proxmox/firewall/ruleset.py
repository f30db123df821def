"""One firewall rule as PVE stores it, and the scopes a rule list lives in (docs/design.md §7c).

Source: pve-firewall 6.0.4 (git 6f1311f) ``src/PVE/Firewall.pm`` (``$rule_properties``,
``verify_rule``, ``parse_fw_rule``, ``$format_rules``, ``copy_rule_data``, ``parse_address_list``,
``parse_port_name_number_or_range``, ``$pve_fw_macros``, ``$icmp_type_names``) and
``src/PVE/API2/Firewall/Rules.pm``.

PVE keeps a rule list as lines of a ``.fw`` file: every write goes through ``$format_rules`` and every
read through ``parse_fw_rule``, so what ``GET …/rules`` answers is the declared rule after that round
trip. This module compares in that spelling (``canonical``):

- ``type`` lower case (``parse_fw_rule``: ``lc``); ``enable`` always there, ``0`` or ``1`` (a line
  starting ``|`` is 0, any other 1). **A rule declared without ``enable`` is disabled**: the create
  stores ``enable => 0`` when none is given (``create_rule``), so this product reads a missing
  ``enable`` as ``0`` and says so in the plan; declare ``enable: 1`` for a rule that should act.
- ``macro`` in PVE's preferred spelling (``verify_rule``: ``$pve_fw_preferred_macro_names``, so
  ``ssh`` is ``SSH``); ``log: nolog`` is no logging, the same as no ``log`` (both generate no LOG rule).
- ``comment`` trimmed (``parse_fw_rule``: ``#\\s*(.*?)\\s*$``); ``$format_rules`` writes no comment
  that is empty, blank or ``0`` (false in Perl), so those are refused rather than silently lost.
- a ``group`` rule keeps ``action``, ``iface``, ``enable`` and ``comment`` only (``$format_rules``
  writes nothing else for it): any other key on one is refused.
- every other value is stored as written (``copy_rule_data``): ``80,443`` and ``443,80`` are two
  spellings PVE keeps apart, so they are compared as text; ``''`` or ``-`` deletes the key
  (``copy_rule_data``), so ``-`` is refused and ``''`` is "not set".

A value holding white space or ``#`` would break the ``.fw`` line (``parse_fw_rule`` splits on
``\\S+`` and cuts the comment at ``#``): refused. ``iface``, ``source``, ``dest``, ``proto``,
``dport``, ``sport``, ``icmp-type`` are checked as ``verify_rule`` checks them; port service names
are read by PVE from the node's ``/etc/services``, which the read credential cannot see: a name is
checked for its shape only.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass

from salt_proxmox.errors import DeclarationError
from salt_proxmox.firewall.scope import parse as parse_firewall_scope

#: ``$rule_properties``' rule fields, in ``$format_rules``' order after type and action.
FIELDS = ("type", "action", "macro", "iface", "source", "dest", "proto", "dport", "sport", "log",
          "icmp-type", "enable", "comment")  # fmt: skip
#: The keys a ``group`` rule keeps through ``$format_rules``.
GROUP_FIELDS = ("type", "action", "iface", "enable", "comment")

NAME = r"[A-Za-z][A-Za-z0-9\-_]+"
#: ``$max_group_name_length``, ``$max_ipset_name_length``, ``$max_alias_name_length``.
GROUP_MAX, IPSET_MAX, ALIAS_MAX = 18, 64, 64

#: ``$rule_env_direction_lookup``: the rule types each scope takes.
TYPES = {
    "cluster": ("in", "out", "forward", "group"),
    "host": ("in", "out", "forward", "group"),
    "group": ("in", "out", "forward"),
    "vm": ("in", "out", "group"),
    "ct": ("in", "out", "group"),
}
#: ``$rule_env_iface_lookup``.
IFACE = {"cluster": True, "host": True, "group": False, "vm": True, "ct": True}
LOG_LEVELS = ("emerg", "alert", "crit", "err", "warning", "notice", "info", "debug", "nolog")
#: ``$PROTOCOLS_WITH_PORTS``.
WITH_PORTS = ("udp", "17", "udplite", "136", "tcp", "6", "dccp", "33", "sctp", "132")
ICMP = ("icmp", "icmpv6", "ipv6-icmp")
#: Debian netbase's ``/etc/protocols`` (names PVE's ``get_etc_protocols`` reads; ``icmpv6`` added by it).
PROTOCOLS = {
    "ip": 0, "hopopt": 0, "icmp": 1, "igmp": 2, "ggp": 3, "ipencap": 4, "st": 5, "tcp": 6, "egp": 8,
    "igp": 9, "pup": 12, "udp": 17, "hmp": 20, "xns-idp": 22, "rdp": 27, "iso-tp4": 29, "dccp": 33,
    "xtp": 36, "ddp": 37, "idpr-cmtp": 38, "ipv6": 41, "ipv6-route": 43, "ipv6-frag": 44, "idrp": 45,
    "rsvp": 46, "gre": 47, "esp": 50, "ah": 51, "skip": 57, "ipv6-icmp": 58, "ipv6-nonxt": 59,
    "ipv6-opts": 60, "rspf": 73, "vmtp": 81, "eigrp": 88, "ospf": 89, "ax.25": 93, "ipip": 94,
    "etherip": 97, "encap": 98, "pim": 103, "ipcomp": 108, "vrrp": 112, "l2tp": 115, "isis": 124,
    "sctp": 132, "fc": 133, "mobility-header": 135, "udplite": 136, "mpls-in-ip": 137, "manet": 138,
    "hip": 139, "shim6": 140, "wesp": 141, "rohc": 142, "ethernet": 143, "mptcp": 262, "icmpv6": 58,
}  # fmt: skip
#: ``$icmp_type_names`` and ``$icmpv6_type_names``.
_ICMP_NAMES = """any echo-reply destination-unreachable network-unreachable host-unreachable
protocol-unreachable port-unreachable fragmentation-needed source-route-failed network-unknown host-unknown
network-prohibited host-prohibited TOS-network-unreachable TOS-host-unreachable communication-prohibited
host-precedence-violation precedence-cutoff source-quench redirect network-redirect host-redirect
TOS-network-redirect TOS-host-redirect echo-request router-advertisement router-solicitation time-exceeded
ttl-zero-during-transit ttl-zero-during-reassembly parameter-problem ip-header-bad required-option-missing
timestamp-request timestamp-reply address-mask-request address-mask-reply"""
ICMP_TYPES = frozenset(_ICMP_NAMES.split())
_ICMPV6_NAMES = """destination-unreachable no-route communication-prohibited beyond-scope
address-unreachable port-unreachable failed-policy reject-route packet-too-big time-exceeded
ttl-zero-during-transit ttl-zero-during-reassembly parameter-problem bad-header unknown-header-type
unknown-option echo-request echo-reply router-solicitation router-advertisement neighbor-solicitation
neighbour-solicitation neighbor-advertisement neighbour-advertisement redirect"""
ICMPV6_TYPES = frozenset(_ICMPV6_NAMES.split())

#: ``$pve_fw_macros`` (and ``$pve_ipv6fw_macros``' own): each macro's ``(proto, dport, sport)`` rows, the
#: template ``apply_macro`` expands a rule into (IPv4 rows; the IPv6 variants differ only for ICMP).
MACROS: dict[str, tuple[tuple[str, str | None, str | None], ...]] = {
    "Amanda": (("udp", "10080", None), ("tcp", "10080", None)),
    "Auth": (("tcp", "113", None),),
    "BGP": (("tcp", "179", None),),
    "BitTorrent": (("tcp", "6881:6889", None), ("udp", "6881", None)),
    "BitTorrent32": (("tcp", "6881:6999", None), ("udp", "6881", None)),
    "Ceph": (("tcp", "6789", None), ("tcp", "3300", None), ("tcp", "6800:7300", None)),
    "CVS": (("tcp", "2401", None),),
    "Citrix": (("tcp", "1494", None), ("udp", "1604", None), ("tcp", "2598", None)),
    "DAAP": (("tcp", "3689", None), ("udp", "3689", None)),
    "DCC": (("tcp", "6277", None),),
    "DHCPfwd": (("udp", "67:68", "67:68"),),
    "DHCPv6": (("udp", "546:547", "546:547"),),
    "DNS": (("udp", "53", None), ("tcp", "53", None)),
    "Distcc": (("tcp", "3632", None),),
    "FTP": (("tcp", "21", None),),
    "Finger": (("tcp", "79", None),),
    "GNUnet": (("tcp", "2086", None), ("udp", "2086", None), ("tcp", "1080", None), ("udp", "1080", None)),
    "GRE": (("47", None, None),),
    "Git": (("tcp", "9418", None),),
    "HKP": (("tcp", "11371", None),),
    "HTTP": (("tcp", "80", None),),
    "HTTPS": (("tcp", "443", None),),
    "ICPV2": (("udp", "3130", None),),
    "ICQ": (("tcp", "5190", None),),
    "IMAP": (("tcp", "143", None),),
    "IMAPS": (("tcp", "993", None),),
    "IPIP": (("94", None, None),),
    "IPsec": (("udp", "500", "500"), ("50", None, None)),
    "IPsecah": (("udp", "500", "500"), ("51", None, None)),
    "IPsecnat": (("udp", "500", None), ("udp", "4500", None), ("50", None, None)),
    "IRC": (("tcp", "6667", None),),
    "Jetdirect": (("tcp", "9100", None),),
    "L2TP": (("udp", "1701", None),),
    "LDAP": (("tcp", "389", None),),
    "LDAPS": (("tcp", "636", None),),
    "MSNP": (("tcp", "1863", None),),
    "MSSQL": (("tcp", "1433", None),),
    "Mail": (("tcp", "25", None), ("tcp", "465", None), ("tcp", "587", None)),
    "MDNS": (("udp", "5353", None),),
    "Munin": (("tcp", "4949", None),),
    "MySQL": (("tcp", "3306", None),),
    "NeighborDiscovery": (
        ("icmpv6", "router-solicitation", None),
        ("icmpv6", "router-advertisement", None),
        ("icmpv6", "neighbor-solicitation", None),
        ("icmpv6", "neighbor-advertisement", None),
    ),
    "NNTP": (("tcp", "119", None),),
    "NNTPS": (("tcp", "563", None),),
    "NTP": (("udp", "123", None),),
    "OSPF": (("89", None, None),),
    "OpenVPN": (("udp", "1194", None),),
    "PCA": (("udp", "5632", None), ("tcp", "5631", None)),
    "PMG": (("tcp", "8006", None),),
    "POP3": (("tcp", "110", None),),
    "POP3S": (("tcp", "995", None),),
    "PPtP": (("47", None, None), ("tcp", "1723", None)),
    "Ping": (("icmp", "echo-request", None),),
    "PostgreSQL": (("tcp", "5432", None),),
    "Printer": (("tcp", "515", None),),
    "RDP": (("tcp", "3389", None),),
    "RIP": (("udp", "520", None),),
    "RNDC": (("tcp", "953", None),),
    "Razor": (("tcp", "2703", None),),
    "Rdate": (("tcp", "37", None),),
    "Rsync": (("tcp", "873", None),),
    "SANE": (("tcp", "6566", None),),
    "SMB": (
        ("udp", "135,445", None),
        ("udp", "137:139", None),
        ("udp", "1024:65535", "137"),
        ("tcp", "135,139,445", None),
    ),
    "SMBswat": (("tcp", "901", None),),
    "SMTP": (("tcp", "25", None),),
    "SMTPS": (("tcp", "465", None),),
    "SNMP": (("udp", "161:162", None), ("tcp", "161", None)),
    "SPAMD": (("tcp", "783", None),),
    "SSH": (("tcp", "22", None),),
    "SVN": (("tcp", "3690", None),),
    "SixXS": (("tcp", "3874", None), ("udp", "3740", None), ("41", None, None), ("udp", "5072,8374", None)),
    "SPICEproxy": (("tcp", "3128", None),),
    "Squid": (("tcp", "3128", None),),
    "Submission": (("tcp", "587", None),),
    "Syslog": (("udp", "514", None), ("tcp", "514", None)),
    "TFTP": (("udp", "69", None),),
    "Telnet": (("tcp", "23", None),),
    "Telnets": (("tcp", "992", None),),
    "Time": (("tcp", "37", None),),
    "Trcrt": (("udp", "33434:33524", None), ("icmp", "echo-request", None)),
    "VNC": (("tcp", "5900:5999", None),),
    "VNCL": (("tcp", "5500", None),),
    "Web": (("tcp", "80", None), ("tcp", "443", None)),
    "Webcache": (("tcp", "8080", None),),
    "Webmin": (("tcp", "10000", None),),
    "Whois": (("tcp", "43", None),),
}
#: ``$pve_fw_preferred_macro_names``: a macro named in any case is stored in this spelling.
PREFERRED = {name.lower(): name for name in MACROS}

#: Perl's ``\s``, trimmed around a comment by ``parse_fw_rule``.
_SPACE = " \t\n\r\f\v"

#: A rule in this module's canonical form: ``{field: text}`` (``enable`` is ``0``/``1`` as int).
Rule = dict


@dataclass(frozen=True)
class Scope:
    """Where a rule list lives. ``name`` is how it is declared (``cluster``, ``node/pve1``, ``vm/510``,
    ``ct/120``, ``group/webgrp``); ``env`` is pve-firewall's rule_env (``cluster``, ``host``, ``vm``,
    ``ct``, ``group``); ``key`` the node, vmid or group name."""

    name: str
    env: str
    key: str = ""

    @property
    def label(self) -> str:
        """How a sentence names it: ``the cluster's rules``, ``node pve1's rules``, ``VM 510's rules``,
        ``security group webgrp``."""
        return {
            "cluster": "the cluster's firewall rules",
            "host": f"node {self.key}'s firewall rules",
            "vm": f"VM {self.key}'s firewall rules",
            "ct": f"CT {self.key}'s firewall rules",
            "group": f"security group {self.key}'s rules",
        }[self.env]


def parse_scope(value: object) -> Scope:
    """``cluster``, ``node/<node>``, ``vm/<vmid>``, ``ct/<vmid>`` or ``group/<name>`` → Scope.

    The firewall's own scopes are read by the one scope parser of the family
    (``firewall.scope.parse``); a security group's name is lower case: pve-firewall keys groups by
    ``lc`` when it reads ``cluster.fw`` (``generic_fw_config_parser``) and looks a group rule's
    ``action`` up as written (``generate_group_rules``), so a mixed-case name would name nothing.
    Raises ValueError."""
    if not isinstance(value, str):
        raise ValueError("the scope is text: cluster, node/<node>, vm/<vmid>, ct/<vmid> or group/<name>")
    kind, _, key = value.partition("/")
    if kind == "group":
        problem = group_name_problem(key)
        if problem:
            raise ValueError(f"{value}: {problem}")
        return Scope(value, "group", key)
    try:
        parsed = parse_firewall_scope(value)
    except DeclarationError:
        raise ValueError(
            f"{value!r} is no scope: cluster, node/<node>, vm/<vmid> (100 and up), ct/<vmid> or group/<name>"
        ) from None
    if parsed.kind == "cluster":
        return Scope(value, "cluster")
    if parsed.kind == "node":
        return Scope(value, "host", parsed.node)
    return Scope(value, parsed.kind, str(parsed.vmid))


def group_name_problem(name: str) -> str | None:
    """``pve-security-group-name`` (2 to 18 characters, ``[A-Za-z][A-Za-z0-9-_]+``) in lower case."""
    if not re.fullmatch(NAME, name) or not 2 <= len(name) <= GROUP_MAX:
        return f"a security group name is 2 to {GROUP_MAX} characters of [A-Za-z][A-Za-z0-9-_]+"
    if name != name.lower():
        return (
            "pve-firewall keys security groups in lower case (generic_fw_config_parser) and looks a group "
            f"rule's action up as written, so {name} would name no group: write {name.lower()}"
        )
    return None


def _text(key: str, value: object) -> str | None:
    """A declared value as the text PVE stores, None for not set. Raises ValueError."""
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ValueError(f"{key}: expected text, not {type(value).__name__}")
    text = str(value)
    if text == "-":
        raise ValueError(f"{key}: '-' is how PVE is told to delete a value (copy_rule_data); leave it out")
    if key != "comment" and (re.search(r"\s", text) or "#" in text):
        raise ValueError(f"{key}: {text!r} holds white space or '#', which break the rule's .fw line")
    return text


def _ports(key: str, text: str, icmp: bool) -> None:
    """``parse_port_name_number_or_range``. Raises ValueError in PVE's words."""
    items = text.split(",")
    if "" in items:
        raise ValueError(f"{key}: extraneous commas in list")
    count, icmp_port = 0, False
    for item in items:
        found = re.fullmatch(r"([0-9]+):([0-9]+)", item)
        if found:
            low, high = int(found.group(1)), int(found.group(2))
            for port in (low, high):
                if port > 65535:
                    raise ValueError(f"{key}: invalid port '{port}'")
            if low > high:
                raise ValueError(f"{key}: backwards range '{item}' not allowed, did you mean '{high}:{low}'?")
            count += 2
        elif item.isdigit():
            if int(item) > 65535:
                raise ValueError(f"{key}: invalid port '{item}'")
            count += 1
        elif icmp and (item in ICMP_TYPES or item in ICMPV6_TYPES):
            icmp_port = True
        elif not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._+-]*", item):
            raise ValueError(f"{key}: invalid port '{item}'")
    if icmp_port and count:
        raise ValueError(f"{key}: ICMP ports not allowed in port range")
    if count > 15:
        raise ValueError(f"{key}: too many entries in port list (> 15 numbers)")


def address_version(key: str, text: str) -> int | None:
    """``parse_address_list``: the IP version of a literal list, None for an IP set or alias
    reference. Raises ValueError in PVE's words."""
    if text.startswith("+"):
        if not re.fullmatch(r"\+(guest/|dc/|sdn/)?" + NAME, text) or len(text) > IPSET_MAX + 1:
            raise ValueError(f"{key}: invalid ipset name '{text}'")
        return None
    if re.fullmatch(r"(dc/|guest/)?" + NAME, text):
        if len(text) > ALIAS_MAX:
            raise ValueError(f"{key}: alias name too long")
        return None
    items = text.split(",")
    if "" in items:
        raise ValueError(f"{key}: extraneous commas in list")
    version = None
    ranged = False
    for item in items:
        try:
            if "-" in item:
                ranged = True
                first, last = item.split("-", 1)
                start, end = ipaddress.ip_address(first), ipaddress.ip_address(last)
                if start.version != end.version or start > end:
                    raise ValueError
                found = start.version
            else:
                found = ipaddress.ip_network(item, strict=False).version
        except ValueError:
            raise ValueError(f"{key}: invalid IP address: {item}") from None
        if version and found != version:
            raise ValueError(f"{key}: detected mixed ipv4/ipv6 addresses in address list '{text}'")
        version = found
    if ranged and len(items) > 1:
        raise ValueError(f"{key}: you can't use a range in a list")
    return version


def canonical(entry: object, env: str) -> Rule:
    """One declared rule (a mapping) → its canonical form for rule_env ``env``. Raises ValueError with
    every problem found, joined by ``; `` (the key first, as ``verify_rule`` names the field)."""
    if not isinstance(entry, Mapping):
        raise ValueError("a rule is a mapping of type, action, macro, source, dest, proto, dport, ...")
    problems: list[str] = []
    unknown = sorted(str(key) for key in entry if key not in FIELDS)
    if unknown:
        problems.append(f"unknown key(s) {', '.join(unknown)}: a rule has {', '.join(FIELDS)}")
    rule: Rule = {}
    for key in FIELDS:
        if key in ("enable", "comment") or key not in entry:
            continue
        try:
            text = _text(key, entry[key])
        except ValueError as exc:
            problems.append(str(exc))
            continue
        if text is not None:
            rule[key] = text
    enable = entry.get("enable", 0)
    if enable in (True, 1, "1"):
        rule["enable"] = 1
    elif enable in (False, 0, "0", None):
        rule["enable"] = 0
    else:
        problems.append(f"enable: expected 1 or 0 (true or false), not {enable!r}")
    try:
        comment = _text("comment", entry.get("comment"))
    except ValueError as exc:
        problems.append(str(exc))
        comment = None
    if comment is not None:
        if "\n" in comment or "\r" in comment:
            problems.append("comment: a line feed would end the rule's line in the .fw file")
        comment = comment.strip(_SPACE)
        if comment == "0":
            problems.append("comment: $format_rules writes a comment only when true in Perl: 0 is lost")
        elif comment:
            rule["comment"] = comment
    problems += _verify(rule, env)
    if problems:
        raise ValueError("; ".join(problems))
    if rule.get("log") == "nolog":
        del rule["log"]
    return rule


def _verify(rule: Rule, env: str) -> list[str]:
    """``verify_rule`` for ``env``, less the references (``references``): the problems, in PVE's words."""
    problems = []
    kind, action = rule.get("type"), rule.get("action")
    if not kind:
        problems.append("type: missing property")
    if not action:
        problems.append("action: missing property")
    if kind:
        if kind not in TYPES[env]:
            problems.append(f"type: invalid rule type '{kind}' for rule_env '{env}'")
        elif kind == "group":
            if action and group_name_problem(action):
                problems.append(f"action: {group_name_problem(action)}")
            extra = sorted(key for key in rule if key not in GROUP_FIELDS)
            if extra:
                problems.append(
                    f"{', '.join(extra)}: a group rule keeps only action, iface, enable and comment "
                    "($format_rules writes nothing else for it)"
                )
        elif action:
            if action not in ("ACCEPT", "DROP", "REJECT"):
                problems.append(f"action: unknown action '{action}'")
            elif kind == "forward" and action == "REJECT":
                problems.append("action: cannot define REJECT rules on forward chain")
    iface = rule.get("iface")
    if iface:
        if not IFACE[env]:
            problems.append("iface: parameter -i not allowed for this rule type")
        elif env in ("vm", "ct") and not re.fullmatch(r"net\d+", iface):
            problems.append("iface: value does not match the regex pattern 'net\\d+'")
        elif not re.fullmatch(r"[a-zA-Z][a-zA-Z0-9_.\-]{1,19}", iface):
            problems.append(f"iface: invalid network interface name '{iface}'")
    if rule.get("macro"):
        preferred = PREFERRED.get(rule["macro"].lower())
        if preferred is None:
            problems.append(f"macro: unknown macro '{rule['macro']}'")
        else:
            rule["macro"] = preferred
    if rule.get("log") and rule["log"] not in LOG_LEVELS:
        levels = ", ".join(LOG_LEVELS)
        problems.append(f"log: value '{rule['log']}' does not have a value in the enumeration {levels}")
    versions: set[int] = set()
    proto = rule.get("proto")
    icmp = proto in ICMP
    if proto:
        if proto not in PROTOCOLS and not (proto.isdigit() and int(proto) in PROTOCOLS.values()):
            problems.append(f"proto: unknown protocol '{proto}'")
        versions |= {4} if proto == "icmp" else {6} if proto in ("icmpv6", "ipv6-icmp") else set()
    for key in ("dport", "sport"):
        if rule.get(key):
            try:
                _ports(key, rule[key], icmp and key == "dport")
            except ValueError as exc:
                problems.append(str(exc))
            if not proto:
                problems.append(f"proto: missing property - '{key}' requires this property")
            elif proto not in WITH_PORTS and not (icmp and key == "dport"):
                problems.append(f"{key}: protocol '{proto}' does not support ports")
    icmp_type = rule.get("icmp-type")
    if icmp_type:
        if not icmp:
            problems.append("proto: missing property - 'icmp-type' requires this property")
        elif rule.get("dport"):
            problems.append("icmp-type: 'icmp-type' cannot be specified together with 'dport'")
        elif proto == "icmp" and icmp_type not in ICMP_TYPES:
            problems.append(f"icmp-type: invalid icmp-type '{icmp_type}' for proto 'icmp'")
        elif proto != "icmp" and icmp_type not in ICMPV6_TYPES:
            problems.append(f"icmp-type: invalid icmp-type '{icmp_type}' for proto '{proto}'")
    for key in ("source", "dest"):
        if rule.get(key):
            try:
                version = address_version(key, rule[key])
            except ValueError as exc:
                problems.append(str(exc))
                continue
            versions |= {version} if version else set()
    if len(versions) > 1:
        problems.append("detected mixed ipv4/ipv6 addresses in rule")
    if rule.get("macro") and not problems:
        problems += _macro_clash(rule)
    return problems


def _macro_clash(rule: Rule) -> list[str]:
    """``apply_macro`` with ``$verify``: a declared proto/dport/sport the macro's rows set otherwise."""
    problems = []
    for proto, dport, sport in MACROS[rule["macro"]]:
        for key, fixed in (("proto", proto), ("dport", dport), ("sport", sport)):
            if fixed is not None and rule.get(key) is not None and rule[key] != fixed:
                problems.append(f"{key}: parameter '{key}' already define in macro (value = '{fixed}')")
    return sorted(set(problems))


def from_live(row: object) -> Rule:
    """One row of ``GET …/rules`` → the canonical form (``pos``, ``digest``, ``ipversion`` and
    ``errors`` left out; ``log: nolog`` as none; ``enable`` 0/1). Raises ValueError for a row without
    ``type`` and ``action``."""
    if not isinstance(row, Mapping) or not isinstance(row.get("type"), str) or not row.get("action"):
        raise ValueError(f"a rule without type and action: {row!r}")
    rule: Rule = {}
    for key in FIELDS:
        value = row.get(key)
        if key == "enable":
            rule["enable"] = 0 if str(value) in ("0", "None") else 1
        elif value not in (None, ""):
            rule[key] = str(value)
    rule["type"] = rule["type"].lower()
    if "comment" in rule:
        rule["comment"] = rule["comment"].strip(_SPACE)
        if not rule["comment"]:
            del rule["comment"]
    if rule.get("log") == "nolog":
        del rule["log"]
    if rule.get("macro"):
        rule["macro"] = PREFERRED.get(rule["macro"].lower(), rule["macro"])
    return rule


def line(rule: Rule) -> str:
    """The rule as pve-firewall writes it into the ``.fw`` file (``$format_rules``), e.g.
    ``IN SSH(ACCEPT) -source +admins # ssh``; ``|`` marks a disabled rule."""
    text = "|" if not rule.get("enable") else ""
    text += rule["type"].upper()
    text += f" {rule['macro']}({rule['action']})" if rule.get("macro") else f" {rule['action']}"
    if rule.get("iface"):
        text += f" -i {rule['iface']}"
    if rule["type"] != "group":
        for key, flag in (("source", "-source"), ("dest", "-dest"), ("proto", "-p"), ("dport", "-dport"),
                          ("sport", "-sport"), ("log", "-log"), ("icmp-type", "-icmp-type")):  # fmt: skip
            if rule.get(key):
                text += f" {flag} {rule[key]}"
    if rule.get("comment"):
        text += f" # {rule['comment']}"
    return text


def frozen(rule: Rule) -> tuple:
    """A hashable form of a canonical rule (for equality and multiset counts)."""
    return tuple((key, rule[key]) for key in FIELDS if key in rule)


def references(rule: Rule) -> list[tuple[str, str, str, str]]:
    """What a rule names that must exist: ``[(kind, name, field, scope prefix)]`` with kind ``alias``,
    ``ipset`` or ``group``, the prefix ``dc/``, ``guest/`` or ``''``, and the name as PVE looks it up
    (``verify_rule``'s ``check_ipset_or_alias_property``: an alias in lower case, an IP set as written
    after its scope; a group rule's ``action``). ``sdn/`` IP sets belong to SDN and are not listed."""
    found = []
    for key in ("source", "dest"):
        value = rule.get(key)
        if not value:
            continue
        ipset = re.fullmatch(r"\+(guest/|dc/|sdn/)?(" + NAME + ")", value)
        if ipset:
            if ipset.group(1) != "sdn/":
                found.append(("ipset", ipset.group(2), key, ipset.group(1) or ""))
            continue
        alias = re.fullmatch(r"(dc/|guest/)?(" + NAME + ")", value)
        if alias:
            found.append(("alias", alias.group(2).lower(), key, alias.group(1) or ""))
    if rule.get("type") == "group":
        found.append(("group", rule["action"], "action", ""))
    return found


def changed_fields(old: Rule, new: Rule) -> tuple[dict[str, str], list[str]]:
    """``(fields to set, fields to delete)`` of the PUT that turns ``old`` into ``new`` in place
    (``update_rule``: ``copy_rule_data``, then ``delete_rule_properties``)."""
    put = {key: str(new[key]) for key in FIELDS if key in new and old.get(key) != new[key]}
    gone = [key for key in FIELDS if key in old and key not in new]
    return put, gone
