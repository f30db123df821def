"""The keys of ``datacenter.cfg`` (``proxmox_cluster_options``), each as one row: its kind, PVE's rule,
the value PVE uses when it is unset, its property-string format, the release that has it.

Source: pve-cluster ``src/PVE/DataCenterConfig.pm`` on ``stable-bookworm`` (PVE 8) and ``master`` (PVE 9):
``$datacenter_schema`` and the formats it names (``$crs_format``, ``$migration_format``,
``$replication_format``, ``$ha_format``, ``$next_id_format``, ``$notification_format``, ``$u2f_format``,
``$webauthn_format``, ``$tag_style_format``, ``$user_tag_privs_format``), pve-common ``JSONSchema.pm``
(``bwlimit``, ``pve-node-location``, ``email-opt``, ``$PVE_TAG_RE``) and ``PVE/Tools.pm``
``kvmkeymaplist``. What differs by release:

- PVE 9 only (pve-cluster 9.0.1, "datacenter config: add replication settings"): ``replication``;
- pve-cluster 9.1.2 ("add auto rebalancing options", "add dynamic load scheduler option", "fix #2685:
  allow 4-bit suffix in mac_prefix"): ``crs``'s ``ha-auto-rebalance*`` and ``ha=dynamic``, a
  ``mac_prefix`` ending in one hex digit;
- pve-cluster 9.1.4 ("add location property"): ``location``.

Values compare by meaning (``canonical``): a property string as its sub-keys sorted with PVE's defaults
dropped (so key order, a default spelt out and PVE's parsed object on read are all the same), a value
equal to the key's default as None (unset), ``;`` lists as sets.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from salt_proxmox.errors import shown
from salt_proxmox.guest.schema import PropString, SubKey
from salt_proxmox.pve.constraints import TAG, Rule, check_cidr, split_list
from salt_proxmox.wire.propstring import canonical_option, flag, pairs, sorted_form, text_problem

#: pve-common ``PVE/Tools.pm`` ``kvmkeymaplist`` (the same on both branches).
KEYMAPS = tuple(
    split_list(
        "de de-ch da en-gb en-us es fi fr fr-be fr-ca fr-ch hu is it ja lt mk nl no pl pt pt-br sv sl tr"
    )
)
#: ``$datacenter_schema`` ``language`` (the same on both branches).
LANGUAGES = tuple(
    split_list("ar ca da de en es eu fa fr hr he it ja ka kr nb nl nn pl pt_BR ru sl sv tr ukr zh_CN zh_TW")
)
#: ``pve_verify_mac_prefix`` on PVE 8 and up to pve-cluster 9.1.1, and from 9.1.2 (a 4-bit suffix).
MAC_PREFIX_8 = re.compile(r"^[a-f0-9][02468ace](?::[a-f0-9]{2}){0,2}:?\Z", re.IGNORECASE)
MAC_PREFIX_9 = re.compile(r"^[a-f0-9][02468ace](?::[a-f0-9]{2}){0,2}(?::[a-f0-9]?)?\Z", re.IGNORECASE)
#: pve-common ``JSONSchema.pm`` ``pve_verify_email`` (``email-opt``).
EMAIL = re.compile(r"^[\w+\-~]+(\.[\w+\-~]+)*@[a-zA-Z0-9\-]+(\.[a-zA-Z0-9\-]+)*\Z")
#: ``$TAG_COLOR_OVERRIDE_RE`` joined by ``;`` (``tag-style``'s ``color-map``).
_COLOR = r"[0-9a-fA-F]{6}"
_OVERRIDE = rf"[a-z0-9_][a-z0-9_\-+.]*:{_COLOR}(?::{_COLOR})?"
COLOR_MAP = re.compile(rf"^{_OVERRIDE}(?:;{_OVERRIDE})*\Z", re.IGNORECASE)
PVE_OUI = "BC:24:11"
#: The pve-cluster versions within PVE 9 that added a key, a sub-key or a value (module docstring).
CLUSTER_9_1_2 = (9, 1, 2)
CLUSTER_9_1_4 = (9, 1, 4)


def _tags(text: str) -> str | None:
    bad = [tag for tag in text.split(";") if not TAG.match(tag)]
    return f"invalid tag(s) {', '.join(map(shown, bad))} ($PVE_TAG_RE, ';'-separated)" if bad else None


def _email(text: str) -> str | None:
    return None if EMAIL.match(text) else "value does not look like a valid email address"


def _mac_prefix(text: str) -> str | None:
    return None if MAC_PREFIX_9.match(text) else "value is not a valid unicast MAC address prefix"


_TRANSPORT = PropString(
    "migration",
    {
        "type": SubKey(Rule("enum", choices=("secure", "insecure")), default="secure", lead=True),
        "network": SubKey(Rule(check=check_cidr)),
    },
    default_key="type",
)
_NUMBER = Rule("number", minimum=0)
#: Each property-string key's format, by key.
FORMATS: dict[str, PropString] = {
    "crs": PropString(
        "crs",
        {
            "ha": SubKey(Rule("enum", choices=("basic", "static", "dynamic")), default="basic"),
            "ha-rebalance-on-start": SubKey(Rule("flag"), default="0"),
            "ha-auto-rebalance": SubKey(Rule("flag"), default="0"),
            "ha-auto-rebalance-threshold": SubKey(Rule("number", minimum=0, maximum=100), default="30"),
            "ha-auto-rebalance-method": SubKey(Rule("enum", choices=("bruteforce", "topsis")), "bruteforce"),
            "ha-auto-rebalance-hold-duration": SubKey(_NUMBER, default="3"),
            "ha-auto-rebalance-margin": SubKey(Rule("number", minimum=0, maximum=100), default="10"),
        },
    ),
    "migration": _TRANSPORT,
    "replication": PropString("replication", _TRANSPORT.rows, default_key="type"),
    "ha": PropString(
        "ha",
        {
            "shutdown_policy": SubKey(
                Rule("enum", choices=("freeze", "failover", "conditional", "migrate")), default="conditional"
            )
        },
    ),
    # ``min``/``max`` in ``$next_id_format`` are no JSONSchema keywords, so PVE bounds neither.
    "next-id": PropString(
        "next-id", {"lower": SubKey(Rule("integer"), "100"), "upper": SubKey(Rule("integer"), "1000000")}
    ),
    "notify": PropString(
        "notify",
        {
            "package-updates": SubKey(Rule("enum", choices=("auto", "always", "never")), default="auto"),
            "target-package-updates": SubKey(),
            "fencing": SubKey(Rule("enum", choices=("always", "never"))),
            "target-fencing": SubKey(),
            "replication": SubKey(Rule("enum", choices=("always", "never"))),
            "target-replication": SubKey(),
        },
    ),
    "u2f": PropString("u2f", {"appid": SubKey(), "origin": SubKey()}),
    "webauthn": PropString(
        "webauthn",
        {"rp": SubKey(), "origin": SubKey(), "id": SubKey(), "allow-subdomains": SubKey(Rule("flag"), "1")},
    ),
    "tag-style": PropString(
        "tag-style",
        {
            "shape": SubKey(Rule("enum", choices=("full", "circle", "dense", "none")), default="circle"),
            "color-map": SubKey(
                Rule(check=lambda t: None if COLOR_MAP.match(t) else "value does not match the regex pattern")
            ),
            "ordering": SubKey(Rule("enum", choices=("config", "alphabetical")), default="alphabetical"),
            "case-sensitive": SubKey(Rule("flag"), default="0"),
        },
    ),
    "user-tag-access": PropString(
        "user-tag-access",
        {
            "user-allow": SubKey(Rule("enum", choices=("none", "list", "existing", "free")), default="free"),
            "user-allow-list": SubKey(Rule(check=_tags), compare="set"),
        },
    ),
    "bwlimit": PropString(
        "bwlimit", {key: SubKey(_NUMBER) for key in ("default", "restore", "migration", "clone", "move")}
    ),
    "location": PropString(
        "location",
        {
            "name": SubKey(Rule(max_length=128)),
            "latitude": SubKey(Rule("number", minimum=-90, maximum=90)),
            "longitude": SubKey(Rule("number", minimum=-180, maximum=180)),
        },
    ),
}
#: Sub-keys a format requires (``optional`` unset) and those that need another (``requires``).
REQUIRED = {"location": ("latitude", "longitude")}
#: Required sub-keys with a default (``$migration_format``/``$replication_format`` ``type``: no
#: ``optional``, so JSONSchema ``check_object`` dies "property is missing and it is not optional"
#: when a written property string lacks it): kept in any value that says more than the defaults, the
#: default filled in when left out.
NEEDED = {"migration": ("type",), "replication": ("type",)}
REQUIRES = {
    ("crs", f"ha-auto-rebalance-{sub}"): "ha-auto-rebalance"
    for sub in ("threshold", "method", "hold-duration", "margin")
}


_ANY = Rule()


@dataclass(frozen=True)
class DcKey:
    """One ``datacenter.cfg`` key: ``kind`` (``text``, ``enum``, ``integer``, ``format``, ``tags``,
    ``mac``, ``description``, ``proxy``), PVE's ``rule`` for its value, ``default`` (the canonical value
    PVE uses when it is unset, so a declared value equal to it is None), and ``since``: the first
    pve-cluster version with it (``(8,)``: every supported release; ``(9,)``: PVE 9)."""

    kind: str
    rule: Rule = _ANY
    default: str | None = None
    since: tuple[int, ...] = (8,)


KEYS: dict[str, DcKey] = {
    "keyboard": DcKey("enum", Rule("enum", choices=KEYMAPS)),
    "language": DcKey("enum", Rule("enum", choices=LANGUAGES)),
    # ``applet`` is read and written as ``html5`` (parse/write_datacenter_config).
    "console": DcKey("enum", Rule("enum", choices=("applet", "vv", "html5", "xtermjs"))),
    "http_proxy": DcKey("proxy", Rule(check=lambda t: None if t.startswith("http://") else "value must match http://.*")),
    "email_from": DcKey("text", Rule(check=_email)),
    "max_workers": DcKey("integer", Rule("integer", minimum=1)),
    "fencing": DcKey("enum", Rule("enum", choices=("watchdog", "hardware", "both")), default="watchdog"),
    "mac_prefix": DcKey("mac", Rule(check=_mac_prefix), default=PVE_OUI),
    "description": DcKey("description", Rule(max_length=64 * 1024)),
    "consent-text": DcKey("text", Rule(max_length=64 * 1024)),
    "registered-tags": DcKey("tags", Rule(check=_tags)),
    **{key: DcKey("format") for key in FORMATS},
    "replication": DcKey("format", since=(9,)),
    "location": DcKey("format", since=CLUSTER_9_1_4),
}  # fmt: skip
#: Keys of the schema no declaration takes, and what to declare instead.
NOT_DECLARED = {
    "migration_unsecure": "deprecated since PVE 4.3 (DataCenterConfig.pm: merged into migration); declare "
    "migration: type=insecure",
}


def _number(text: str) -> str:
    value = float(text)
    return str(int(value)) if value.is_integer() else repr(value)


def format_value(key: str, value: object) -> str | None:
    """A property-string ``value`` of ``key`` (declared as its text or a mapping, or PVE's parsed
    object on read, lists as ``;`` lists) as its sub-keys sorted, each canonical, PVE's defaults
    dropped but the required ones (``NEEDED``); None when nothing but defaults is left. Raises
    ValueError naming the sub-key and rule."""
    fmt = FORMATS[key]
    if isinstance(value, Mapping):
        items = []
        for sub, raw in value.items():
            if isinstance(raw, list):
                raw = ";".join(map(str, raw))
            elif isinstance(raw, bool):
                raw = "1" if raw else "0"
            items.append((str(sub), str(raw)))
    elif isinstance(value, str):
        items = pairs(value, fmt.default_key)
    else:
        raise ValueError(f"expected a property string or a mapping of {key}'s sub-keys, got {shown(value)}")
    out: dict[str, str] = {}
    for sub, raw in items:
        row = fmt.rows.get(sub)
        if row is None:
            raise ValueError(f"{sub}: not a sub-key of {key} ({', '.join(fmt.rows)})")
        problem = row.rule.problem(raw)
        if problem:
            raise ValueError(f"{sub}: {problem}")
        if row.rule.kind in ("number", "integer"):
            out[sub] = _number(raw)
        else:
            out[sub] = flag(raw) if row.rule.kind == "flag" else canonical_option(sub, raw, fmt)
    for sub in REQUIRED.get(key, ()):
        if sub not in out:
            raise ValueError(f"{sub}: {key} requires it (property is missing and it is not optional)")
    for (owner, sub), needed in REQUIRES.items():
        if owner == key and sub in out and needed not in out:
            raise ValueError(f"{sub}: it requires {needed} (DataCenterConfig.pm $crs_format requires)")
    kept = {sub: text for sub, text in out.items() if not _same(fmt.defaults.get(sub), text, fmt.rows[sub])}
    if kept:
        for sub in NEEDED.get(key, ()):
            kept.setdefault(sub, out.get(sub) or str(fmt.defaults[sub]))
    return sorted_form(kept) or None


def _same(default: str | None, text: str, row: SubKey) -> bool:
    if default is None:
        return False
    if row.rule.kind in ("number", "integer"):
        return _number(default) == text
    return default == text


def description_value(value: str) -> str | None:
    """A description as PVE reads it back: ``write_datacenter_config`` writes each line of
    ``split(/\\n/)`` (trailing empty lines dropped) as a ``#`` comment, ``parse_datacenter_config``
    joins them with a newline after each: compared without trailing newlines, None when empty."""
    return value.rstrip("\n") or None


def tag_set(value: object) -> str | None:
    """``registered-tags`` as a ``;`` set (PVE answers a list; ``write_datacenter_config`` sorts it)."""
    items = value if isinstance(value, list) else str(value).split(";")
    return ";".join(sorted({str(item).strip() for item in items if str(item).strip()})) or None


def canonical(key: str, value: object) -> object:
    """``value`` of ``key`` (declared, or as ``GET /cluster/options`` answers it) in the spelling compared:
    None for unset or PVE's default. Raises ValueError naming the rule (``http_proxy`` is compared by
    ``datacenter.options``, which keeps its password apart)."""
    row = KEYS[key]
    if value is None or value == "" or value == [] or value == {}:
        return None
    if row.kind == "format":
        return format_value(key, value)
    if row.kind == "tags" and isinstance(value, list):
        value = ";".join(map(str, value))
    if isinstance(value, (list, Mapping)):
        raise ValueError(f"expected a single value, got {shown(value)}")
    problem = text_problem(value) if row.kind != "integer" else None
    if problem:
        raise ValueError(problem)
    text = str(value)
    if row.kind == "description":
        text = description_value(text) or ""
    elif row.kind == "tags":
        text = tag_set(text) or ""
    if not text:
        return None
    problem = row.rule.problem(text)
    if problem:
        raise ValueError(problem)
    if row.kind == "integer":
        return int(text)
    if row.kind == "mac":
        text = text.upper()
    if key == "console" and text == "applet":
        text = "html5"
    return None if text == row.default else text


def release_needs(key: str, value: object) -> tuple[int, ...]:
    """The first pve-cluster version that takes ``value`` (canonical) of ``key``: ``KEYS[key].since``, or
    9.1.2 for ``crs``'s ``ha-auto-rebalance*`` and ``ha=dynamic`` and a ``mac_prefix`` with a 4-bit
    suffix (``MAC_PREFIX_8`` refuses it)."""
    since = KEYS[key].since
    if key == "crs" and isinstance(value, str):
        subs = dict(pairs(value))
        if subs.get("ha") == "dynamic" or any(sub.startswith("ha-auto-rebalance") for sub in subs):
            return max(since, CLUSTER_9_1_2)
    if key == "mac_prefix" and isinstance(value, str) and not MAC_PREFIX_8.match(value):
        return max(since, CLUSTER_9_1_2)
    return since
