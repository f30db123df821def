"""Every container config key this family manages, defined once: how it compares, its default,
whether ``''`` may clear it, and PVE's schema rule for it.

Source: pve-container ``src/PVE/LXC/Config.pm`` (``$confdesc``, PVE 9 line, 6.x), and the
``POST /nodes/{node}/lxc`` / ``PUT .../config`` / ``PUT .../resize`` parameters of
``src/PVE/API2/LXC.pm`` and ``src/PVE/API2/LXC/Config.pm``. A key not listed here is refused
by name, never ignored and never written.
"""

from __future__ import annotations

import re

from salt_proxmox.guest.schema import Key, indexed_key
from salt_proxmox.guest.words import Words
from salt_proxmox.pve.constraints import (
    Endpoint,
    Rule,
    check_address,
    check_addresses,
    check_bridge_id,
    check_dns_name,
    check_dns_names,
    check_ip_config,
    check_mac,
    check_resize,
    check_size,
    check_startup,
    check_tags,
)

#: The container family's words (``guest.words``): what its judge, remedies and messages name.
WORDS = Words(kind="lxc", state="proxmox_lxc", noun="container", label="CT", command="pct", ha_type="ct")

_ARCHES = ("amd64", "i386", "arm64", "armhf", "riscv32", "riscv64")
_OSTYPES = (
    "debian", "devuan", "ubuntu", "centos", "fedora", "opensuse", "archlinux", "alpine", "gentoo",
    "nixos", "unmanaged",
)  # fmt: skip

#: cgroup v2's largest CPU weight. pve-common ``src/PVE/CGroup.pm`` ``clamp_cpu_shares`` caps
#: ``cpuunits`` there on cgroup v2, and pve-container ``src/PVE/API2/LXC.pm`` ``create_vm`` and
#: ``src/PVE/API2/LXC/Config.pm`` ``update_vm`` store the capped value: a declared 20000 would be
#: stored as 10000 and differ forever. PVE 9 runs cgroup v2 only, PVE 8 by default.
CPUUNITS_V2_MAX = 10000


def _cpuunits(value: str) -> str | None:
    if int(value) > CPUUNITS_V2_MAX:
        return (
            f"{value} is above {CPUUNITS_V2_MAX}, which PVE stores instead on cgroup v2 (PVE 9, and PVE 8 "
            f"by default; pve-common CGroup.pm clamp_cpu_shares): declare at most {CPUUNITS_V2_MAX}"
        )
    return None


def _zone_names() -> frozenset[str] | None:
    """The zones of ``zone.tab`` (third column), or None when no zone.tab can be read here."""
    for path in ("/usr/share/zoneinfo/zone.tab",):
        try:
            with open(path, encoding="utf-8") as handle:
                lines = handle.read().splitlines()
        except OSError:
            continue
        return frozenset(
            parts[2]
            for line in lines
            if not line.lstrip().startswith("#") and len(parts := line.split("\t")) > 2
        )
    return None


_ZONES: list[frozenset[str] | None] = []


def check_timezone(value: str) -> str | None:
    """``pve-ct-timezone``: ``host``, ``UTC`` or a zone listed in ``zone.tab``.

    pve-container ``src/PVE/LXC/Config.pm`` ``verify_ct_timezone`` (``host``) and pve-common
    ``src/PVE/JSONSchema.pm`` ``pve_verify_timezone`` (``UTC``, else the third column of
    ``/usr/share/zoneinfo/zone.tab``): ``Etc/UTC`` or ``US/Eastern`` are not in it and PVE refuses
    them. The list is this host's zone.tab (tzdata differs little between hosts); without one,
    only the node can tell, and the value is left to PVE.
    """
    if value in ("host", "UTC"):
        return None
    if not _ZONES:
        _ZONES.append(_zone_names())
    zones = _ZONES[0]
    if zones is None or value in zones:
        return None
    return f"invalid time zone '{value}': not host, UTC or a zone of zone.tab (e.g. Europe/Vienna)"


#: Scalar keys (``$confdesc``). Defaults are the ones PVE documents there; ``cores`` absent means
#: every host core, which no declared number equals, so it has no default.
SCALARS: dict[str, Key] = {
    "arch": Key("text", Rule("enum", choices=_ARCHES), default="amd64"),
    "cmode": Key("text", Rule("enum", choices=("shell", "console", "tty")), default="tty"),
    "console": Key("flag", Rule("boolean"), default="1"),
    "cores": Key("number", Rule("integer", minimum=1, maximum=8192)),
    "cpulimit": Key("number", Rule("number", minimum=0, maximum=8192), default="0"),
    "cpuunits": Key("number", Rule("integer", minimum=0, maximum=500000, check=_cpuunits)),
    "description": Key("description", Rule(max_length=8192)),
    "features": Key("features", Rule()),
    "hostname": Key("text", Rule(max_length=255, check=check_dns_name)),
    "memory": Key("number", Rule("integer", minimum=16), default="512", clearable=False),
    "nameserver": Key("list", Rule(check=check_addresses)),
    "onboot": Key("flag", Rule("boolean"), default="0"),
    "ostype": Key("text", Rule("enum", choices=_OSTYPES), clearable=False),
    "protection": Key("flag", Rule("boolean"), default="0"),
    "searchdomain": Key("list", Rule(check=check_dns_names)),
    "startup": Key("startup", Rule(check=check_startup)),
    "swap": Key("number", Rule("integer", minimum=0), default="512"),
    "tags": Key("tags", Rule(check=check_tags)),
    "timezone": Key("text", Rule(max_length=255, check=check_timezone)),
    "tty": Key("number", Rule("integer", minimum=0, maximum=6), default="2"),
}

#: Indexed keys and their index ranges (``$MAX_MOUNT_POINTS`` 256, ``$MAX_LXC_NETWORKS`` 32,
#: ``$MAX_DEVICES`` 256).
INDEXED = {"mp": 256, "net": 32, "dev": 256}
_INDEXED = re.compile(r"^(mp|net|dev|unused)(\d+)\Z", re.ASCII)


def property_format(key: str) -> tuple[str, str | None] | None:
    """How ``key``'s value is a property string: ``(family, default key)`` for
    ``salt_proxmox.wire.propstring`` (``FAMILY_DEFAULTS``/``PRINT_LEAD`` family), or None for a
    scalar. pve-container ``src/PVE/LXC/Config.pm``: ``$rootfs_desc``/``$mp_desc`` (default key
    ``volume``), ``$netconf_desc``, ``$dev_desc`` (default key ``path``), ``$features_desc``; and
    pve-common's ``pve-startup-order`` (default key ``order``)."""
    family = (indexed(key) or ("", 0))[0]
    if key == "rootfs" or family == "mp":
        return ("volume", "volume")
    if family in ("net", "dev"):
        return (family, "path" if family == "dev" else None)
    if key == "features":
        return ("features", None)
    if key == "startup":
        return ("startup", "order")
    return None


#: Consumed at create, never read back: ``ostemplate`` is identity, ``start`` a one-off act.
CREATE_ONLY = frozenset({"ostemplate", "start"})
#: Secrets a create may carry: sent with ``POST /nodes/{node}/lxc`` once, never shown in a return,
#: kept in grains or compared after (PVE never reads them back: they live inside the guest).
#: pve-container ``src/PVE/API2/LXC.pm`` ``create_vm``: ``password`` (minLength 5),
#: ``ssh-public-keys`` (one OpenSSH key per line, ``PVE::Tools::validate_ssh_public_keys``).
CREATE_SECRETS = frozenset({"password", "ssh-public-keys"})
#: The create secrets that are secret (``ssh-public-keys`` are public keys): never a Salt state argument,
#: which Salt keeps in ``highstate.cache.p`` and in every state's lowstate; a state reads them from the
#: pillar mapping its ``secrets_pillar`` names (``_modules/proxmox.py``), as ``qemu.schema.SECRETS``.
SECRETS = frozenset({"password"})
#: Keys never stored in grains or returns (docs/design.md §6): notes a human wrote, and PVE's bookkeeping.
NEVER_STORED = frozenset({"description", "digest", "lock", "env"})


def _pattern(regex: str, what: str):
    compiled = re.compile(regex)

    def check(value: str) -> str | None:
        return None if compiled.fullmatch(value) else f"{value!r} is not {what}"

    return check


def _absolute_path(value: str) -> str | None:
    return None if value.startswith("/") else f"{value!r} is not an absolute path"


_FLAG = Rule("flag")
_MOUNT_OPTION = "(?:discard|lazytime|noatime|nodev|noexec|nosuid)"
_IDMAP_RANGE = "[ug]:[0-9]+:[0-9]+:[1-9][0-9]*"
_IDMAP = _pattern(
    f"passthrough|{_IDMAP_RANGE}(?:;{_IDMAP_RANGE})*", "an idmap (passthrough or u|g:ct:host:count;...)"
)
_MOUNTOPTIONS = _pattern(
    f"{_MOUNT_OPTION}(?:;{_MOUNT_OPTION})*", "a ;-list of discard, lazytime, noatime, nodev, noexec, nosuid"
)
_ROOTFS_OPTIONS = {
    "volume": Rule(),
    "size": Rule(check=check_size),
    "acl": _FLAG,
    "idmap": Rule(check=_IDMAP),
    "mountoptions": Rule(check=_MOUNTOPTIONS),
    "quota": _FLAG,
    "replicate": _FLAG,
    "ro": _FLAG,
    "shared": _FLAG,
}

#: Each property-string family's options and their rules: ``$netconf_desc``, ``$features_desc``,
#: ``$dev_desc``, ``$rootfs_desc`` and ``$mp_desc`` (which adds ``mp``, ``backup``,
#: ``keepattrs``: vzdump always includes the rootfs) in pve-container ``src/PVE/LXC/Config.pm``.
OPTIONS: dict[str, dict[str, Rule]] = {
    "net": {
        "name": Rule(check=_pattern(r"[-_.\w\d]+", "an interface name")),
        "bridge": Rule(check=check_bridge_id),
        "hwaddr": Rule(check=check_mac),
        "ip": Rule(check=lambda value: check_ip_config(value, 4)),
        "gw": Rule(check=lambda value: check_address(value, 4)),
        "ip6": Rule(check=lambda value: check_ip_config(value, 6)),
        "gw6": Rule(check=lambda value: check_address(value, 6)),
        "mtu": Rule("integer", minimum=64, maximum=65535),
        "rate": Rule("number", minimum=0),
        "tag": Rule("integer", minimum=1, maximum=4094),
        "trunks": Rule(check=_pattern(r"\d+(?:;\d+)*", "a ;-list of VLAN ids")),
        "type": Rule("enum", choices=("veth",)),
        "firewall": _FLAG,
        "link_down": _FLAG,
        "host-managed": _FLAG,
    },
    "features": {
        "nesting": _FLAG,
        "keyctl": _FLAG,
        "fuse": _FLAG,
        "mknod": _FLAG,
        "force_rw_sys": _FLAG,
        "mount": Rule(check=_pattern(r"[a-zA-Z0-9_; ]+", "a ;-list of file system types")),
    },
    "dev": {
        "path": Rule(check=_absolute_path),
        "mode": Rule(check=_pattern(r"0[0-7]{3}", "an octal mode like 0660")),
        "uid": Rule("integer", minimum=0),
        "gid": Rule("integer", minimum=0),
        "deny-write": _FLAG,
    },
    "rootfs": _ROOTFS_OPTIONS,
    "mp": {**_ROOTFS_OPTIONS, "mp": Rule(check=_absolute_path), "backup": _FLAG, "keepattrs": _FLAG},
}

NET_OPTIONS = frozenset(OPTIONS["net"])
FEATURE_OPTIONS = frozenset(OPTIONS["features"])
DEV_OPTIONS = frozenset(OPTIONS["dev"])


def indexed(key: str) -> tuple[str, int] | None:
    """``('mp', 3)`` for ``mp3``; None for a key that is not indexed or out of PVE's range."""
    return indexed_key(key, _INDEXED, INDEXED)


def is_config_key(key: str) -> bool:
    """True for every key this family may write to a container config."""
    if key in SCALARS or key in ("rootfs", "unprivileged"):
        return True
    found = indexed(key)
    return found is not None and found[0] != "unused"


def _rule_for(key: str) -> Rule | None:
    if key in SCALARS:
        return SCALARS[key].rule
    if key in ("rootfs", "ostemplate", "vmid"):
        return Rule()
    if key in ("unprivileged", "start"):
        return Rule("boolean")
    found = indexed(key)
    if found is not None and found[0] != "unused":
        return Rule()
    return None


def _rule_for_create(key: str) -> Rule | None:
    if key == "pool":
        return Rule()  # checked by props.pool_problem (the pool family's poolid rule)
    if key in CREATE_SECRETS:
        return Rule()  # checked by props.secret_problem, whose messages never repeat the value
    if key == "vmid":
        return Rule("integer", minimum=100, maximum=999_999_999)
    return _rule_for(key)


def _rule_for_resize(key: str) -> Rule | None:
    if key == "disk":
        return Rule("enum", choices=("rootfs", *(f"mp{i}" for i in range(INDEXED["mp"]))))
    if key == "size":
        return Rule(check=check_resize)
    return None


CREATE = Endpoint("POST /nodes/{node}/lxc", ("vmid", "ostemplate"), _rule_for_create)
UPDATE = Endpoint("PUT /nodes/{node}/lxc/{vmid}/config", (), _rule_for)
RESIZE = Endpoint("PUT /nodes/{node}/lxc/{vmid}/resize", ("disk", "size"), _rule_for_resize)


#: Keys a running container takes at once: pve-container ``src/PVE/LXC/Config.pm``
#: ``$LXC_FASTPLUG_OPTIONS``.
FASTPLUG = frozenset(
    {"description", "onboot", "startup", "protection", "hostname", "hookscript", "cores", "tags", "lock"}
)
#: Values ``vmconfig_hotplug_pending`` applies to a running container through its cgroup or veth.
_HOTPLUG_SET = frozenset({"cpulimit", "cpuunits", "memory", "swap"})
#: Removals it applies live (besides ``FASTPLUG``, ``netN`` and ``unusedN``).
_HOTPLUG_DELETE = frozenset({"swap", "cpulimit", "cpuunits"})


def applies_live(key: str, clear: bool, exists: bool) -> bool:
    """Whether writing ``key`` to a RUNNING container takes effect at once (True) or waits in
    ``[pve:pending]`` for its next start (False). ``clear``: a ``delete=``; ``exists``: the key is
    in the config in effect. A stopped container takes every change at once
    (``vmconfig_apply_pending``).

    pve-container ``src/PVE/LXC/Config.pm`` ``vmconfig_hotplug_pending``: ``FASTPLUG`` keys at once;
    ``cpulimit``, ``cpuunits``, ``memory``, ``swap`` and ``netN`` through the cgroup or veth; a NEW
    ``mpN`` or ``devN`` (not one that exists: "don't try to hotplug over existing mp"); removals of
    ``swap``, ``cpulimit``, ``cpuunits``, ``netN`` and ``unusedN``. Anything else ("skip
    non-hotpluggable") waits: ``rootfs``, an existing ``mpN``, ``nameserver``, ``features``, ...
    """
    family = (indexed(key) or ("", 0))[0]
    if key in FASTPLUG:
        return True
    if clear:
        return key in _HOTPLUG_DELETE or family in ("net", "unused")
    if key in _HOTPLUG_SET or family == "net":
        return True
    return family in ("mp", "dev") and not exists
