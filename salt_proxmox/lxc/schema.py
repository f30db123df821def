"""Every container config key this family manages, defined once: how it compares, its default,
whether ``''`` may clear it, and PVE's schema rule for it.

Source: pve-container ``src/PVE/LXC/Config.pm`` (``$confdesc``, PVE 9 line, 6.x), and the
``POST /nodes/{node}/lxc`` / ``PUT .../config`` / ``PUT .../resize`` parameters of
``src/PVE/API2/LXC.pm`` and ``src/PVE/API2/LXC/Config.pm``. A key not listed here is refused
by name, never ignored and never written.
"""

from __future__ import annotations

import re

from salt_proxmox.guest.schema import STARTUP, Key, PropString, SubKey, indexed_key
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
from salt_proxmox.wire.volumes import Volume, VolumeFamily, parse_volume

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
_FLAG_OFF = SubKey(_FLAG, default="0")

#: Each property string's table (pve-container ``src/PVE/LXC/Config.pm``): a sub-key's rule, its
#: default (what absence means: ``replicate`` on, the other booleans off; ``acl`` has none, unset is
#: the storage's own), and the sub-keys PVE prints first (``name`` is required in ``$netconf_desc``,
#: ``volume`` the default key of ``$rootfs_desc``/``$mp_desc``, ``mp`` required there, ``path`` the
#: default key of ``$dev_desc``).
NET = PropString(
    "net",
    {
        "name": SubKey(Rule(check=_pattern(r"[-_.\w\d]+", "an interface name")), lead=True),
        "bridge": SubKey(Rule(check=check_bridge_id)),
        "hwaddr": SubKey(Rule(check=check_mac), compare="mac"),
        "ip": SubKey(Rule(check=lambda value: check_ip_config(value, 4))),
        "gw": SubKey(Rule(check=lambda value: check_address(value, 4))),
        "ip6": SubKey(Rule(check=lambda value: check_ip_config(value, 6))),
        "gw6": SubKey(Rule(check=lambda value: check_address(value, 6))),
        "mtu": SubKey(Rule("integer", minimum=64, maximum=65535)),
        "rate": SubKey(Rule("number", minimum=0)),
        "tag": SubKey(Rule("integer", minimum=1, maximum=4094)),
        "trunks": SubKey(Rule(check=_pattern(r"\d+(?:;\d+)*", "a ;-list of VLAN ids"))),
        "type": SubKey(Rule("enum", choices=("veth",)), default="veth"),
        "firewall": _FLAG_OFF,
        "link_down": _FLAG_OFF,
        "host-managed": _FLAG_OFF,
    },
)
#: ``$features_desc``. ``mount`` is compared and sent verbatim, not as a set: pve-container
#: ``src/PVE/LXC.pm`` ``check_ct_modify_config_perm`` compares each feature's old and new value as
#: strings (``$old ne $new``), so ``mount=nfs;cifs`` against a live ``cifs;nfs`` is a change only
#: root@pam may make.
FEATURES = PropString(
    "features",
    {
        "nesting": _FLAG_OFF,
        "keyctl": _FLAG_OFF,
        "fuse": _FLAG_OFF,
        "mknod": _FLAG_OFF,
        "force_rw_sys": _FLAG_OFF,
        "mount": SubKey(Rule(check=_pattern(r"[a-zA-Z0-9_; ]+", "a ;-list of file system types"))),
    },
)
#: ``$dev_desc``.
DEV = PropString(
    "dev",
    {
        "path": SubKey(Rule(check=_absolute_path), lead=True),
        "mode": SubKey(Rule(check=_pattern(r"0[0-7]{3}", "an octal mode like 0660"))),
        "uid": SubKey(Rule("integer", minimum=0)),
        "gid": SubKey(Rule("integer", minimum=0)),
        "deny-write": _FLAG_OFF,
    },
    default_key="path",
)
#: ``$rootfs_desc``: ``mountoptions`` is a ``;`` set whose order PVE does not keep meaningful.
ROOTFS = PropString(
    "rootfs",
    {
        "volume": SubKey(lead=True),
        "size": SubKey(Rule(check=check_size)),
        "acl": SubKey(_FLAG),
        "idmap": SubKey(Rule(check=_IDMAP)),
        "mountoptions": SubKey(Rule(check=_MOUNTOPTIONS), compare="set"),
        "quota": _FLAG_OFF,
        "replicate": SubKey(_FLAG, default="1"),
        "ro": _FLAG_OFF,
        "shared": _FLAG_OFF,
    },
    default_key="volume",
    bare=True,
)
#: ``$mp_desc``: ``$rootfs_desc`` plus ``mp`` (required), ``backup`` and ``keepattrs`` (vzdump always
#: includes the rootfs). Both ``rootfs`` and ``mpN`` values compare with it.
MP = ROOTFS.plus(
    "volume", mp=SubKey(Rule(check=_absolute_path), lead=True), backup=_FLAG_OFF, keepattrs=_FLAG_OFF
)

#: Each property-string key's options and their rules, by table (``props`` checks with them).
OPTIONS: dict[str, dict[str, Rule]] = {
    "net": NET.rules,
    "features": FEATURES.rules,
    "dev": DEV.rules,
    "rootfs": ROOTFS.rules,
    "mp": MP.rules,
}


#: Containers' volumes (``rootfs``, ``mpN``) for ``salt_proxmox.wire.volumes.judge_volume``.
def parse_mountpoint(value: str) -> Volume:
    """A ``rootfs``/``mpN`` value parsed with the container's ``$mp_desc`` (``MP``: pve-container
    ``src/PVE/LXC/Config.pm``; ``rootfs`` takes fewer, which ``OPTIONS`` checks). Raises ValueError
    as ``wire.volumes.parse_volume`` does."""
    return parse_volume(value, MP)


VOLUMES = VolumeFamily(
    parse=parse_mountpoint,
    options=MP,
    move="pct move-volume",
    noun="a container volume",
    shrink="`unable to shrink disk size`",
)

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
    "features": Key("features", Rule(), form=FEATURES),
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


def property_format(key: str) -> PropString | None:
    """``key``'s property-string table, or None for a scalar: ``MP`` for ``rootfs``/``mpN`` (the
    ``$mp_desc`` superset, as both compare), ``NET``, ``DEV``, ``FEATURES``, and pve-common's
    ``STARTUP``."""
    family = (indexed(key) or ("", 0))[0]
    if key == "rootfs" or family == "mp":
        return MP
    return {"net": NET, "dev": DEV}.get(family) or {"features": FEATURES, "startup": STARTUP}.get(key)


#: Consumed at create, never read back: ``ostemplate`` is identity, ``start`` a one-off act.
CREATE_ONLY = frozenset({"ostemplate", "start"})
#: A create by restore (``guest.restore``): ``restore: <backup volume id>`` in place of ``ostemplate``;
#: the form sends the archive as ``ostemplate`` with ``restore=1`` and ``unique=1`` (pve-container
#: ``API2/LXC.pm`` ``create_vm``).
RESTORE = "restore"
RESTORE_FORM = ("restore", "unique")
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
    if key in RESTORE_FORM:
        return Rule("boolean")
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
