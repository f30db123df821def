"""Every container config key this family manages, defined once: how it compares, its default,
whether ``''`` may clear it, and PVE's schema rule for it.

Source: pve-container ``src/PVE/LXC/Config.pm`` (``$confdesc``, PVE 9 line, 6.x), and the
``POST /nodes/{node}/lxc`` / ``PUT .../config`` / ``PUT .../resize`` parameters of
``src/PVE/API2/LXC.pm`` and ``src/PVE/API2/LXC/Config.pm``. A key not listed here is refused
by name, never ignored and never written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from salt_proxmox.pve.constraints import (
    Endpoint,
    Rule,
    check_addresses,
    check_dns_name,
    check_dns_names,
    check_resize,
    check_startup,
    check_tags,
)


@dataclass(frozen=True)
class Key:
    """How one scalar key is compared and validated.

    ``compare``: ``number``, ``flag``, ``text``, ``description``, ``tags``, ``list`` (ordered
    resolver list), ``startup`` or ``features``. ``default``: what absence means in the live
    config (None: absence is not any declarable value). ``clearable``: ``''`` sends ``delete=``.
    """

    compare: str
    rule: Rule
    default: str | None = None
    clearable: bool = False


_ARCHES = ("amd64", "i386", "arm64", "armhf", "riscv32", "riscv64")
_OSTYPES = (
    "debian", "devuan", "ubuntu", "centos", "fedora", "opensuse", "archlinux", "alpine", "gentoo",
    "nixos", "unmanaged",
)  # fmt: skip

#: Scalar keys (``$confdesc``). Defaults are the ones PVE documents there; ``cores`` absent means
#: every host core, which no declared number equals, so it has no default.
SCALARS: dict[str, Key] = {
    "arch": Key("text", Rule("enum", choices=_ARCHES), default="amd64"),
    "cmode": Key("text", Rule("enum", choices=("shell", "console", "tty")), default="tty"),
    "console": Key("flag", Rule("boolean"), default="1"),
    "cores": Key("number", Rule("integer", minimum=1, maximum=8192)),
    "cpulimit": Key("number", Rule("number", minimum=0, maximum=8192), default="0"),
    "cpuunits": Key("number", Rule("integer", minimum=0, maximum=500000)),
    "description": Key("description", Rule(max_length=8192), clearable=True),
    "features": Key("features", Rule(), clearable=True),
    "hostname": Key("text", Rule(max_length=255, check=check_dns_name)),
    "memory": Key("number", Rule("integer", minimum=16), default="512"),
    "nameserver": Key("list", Rule(check=check_addresses), clearable=True),
    "onboot": Key("flag", Rule("boolean"), default="0"),
    "ostype": Key("text", Rule("enum", choices=_OSTYPES)),
    "protection": Key("flag", Rule("boolean"), default="0"),
    "searchdomain": Key("list", Rule(check=check_dns_names), clearable=True),
    "startup": Key("startup", Rule(check=check_startup), clearable=True),
    "swap": Key("number", Rule("integer", minimum=0), default="512"),
    "tags": Key("tags", Rule(check=check_tags), clearable=True),
    "timezone": Key("text", Rule(max_length=255), clearable=True),
    "tty": Key("number", Rule("integer", minimum=0, maximum=6), default="2"),
}

#: Indexed keys and their index ranges (``$MAX_MOUNT_POINTS`` 256, ``$MAX_LXC_NETWORKS`` 32,
#: ``$MAX_DEVICES`` 256).
INDEXED = {"mp": 256, "net": 32, "dev": 256}
_INDEXED = re.compile(r"^(mp|net|dev|unused)(\d+)$")

#: Keys of the state, not of the config.
STATE_ARGS = frozenset({"name", "vmid", "node", "target", "adopt", "removal"})
#: Consumed at create, never read back: ``ostemplate`` is identity, ``start`` a one-off act.
CREATE_ONLY = frozenset({"ostemplate", "start"})
#: Keys never stored in grains or returns (SPEC §6): notes a human wrote, and PVE's bookkeeping.
NEVER_STORED = frozenset({"description", "digest", "lock", "env"})

#: NIC options (``$netconf_desc``).
NET_OPTIONS = frozenset(
    {"name", "bridge", "hwaddr", "ip", "gw", "ip6", "gw6", "mtu", "rate", "tag", "trunks", "type",
     "firewall", "link_down", "host-managed"}
)  # fmt: skip
#: Feature flags (``$features_desc``).
FEATURE_OPTIONS = frozenset({"nesting", "keyctl", "fuse", "mknod", "mount", "force_rw_sys"})
#: Device options (``$dev_desc``).
DEV_OPTIONS = frozenset({"path", "mode", "uid", "gid", "deny-write"})


def indexed(key: str) -> tuple[str, int] | None:
    """``('mp', 3)`` for ``mp3``; None for a key that is not indexed or out of PVE's range."""
    match = _INDEXED.match(key)
    if not match:
        return None
    family, index = match.group(1), int(match.group(2))
    if family != "unused" and index >= INDEXED[family]:
        return None
    return family, index


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
