"""Property tests (docs/design.md §10): printing a parsed property string and parsing it again is stable, and
applying what the judge says to write leaves nothing to write.

(a) ``pairs(print_pairs(m)) == m`` for generated net/features/volume maps; ``option_map`` is
    idempotent and order-free.
(b) For a generated live config and declaration, apply the judge's ``put`` (set keys), ``clear``
    (delete keys) and ``resize`` (set the volume's ``size=``) to the live config, the way PVE's
    ``update_pct_config`` and ``resize_vm`` would, then judge again: no drift and nothing to write
    — unless the first judge refused, in which case nothing would have been written.
"""

from __future__ import annotations

import random
import string
from decimal import Decimal

from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from salt_proxmox.lxc import schema
from salt_proxmox.lxc.judge import Change, judge
from salt_proxmox.lxc.props import parse_declaration
from salt_proxmox.wire.propstring import option_map, pairs, print_pairs, sorted_form
from salt_proxmox.wire.sizes import MIB, mib_text, new_volume_mib, parse_size

SETTINGS = settings(
    max_examples=200, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)

# --------------------------------------------------------------------------------------------
# (a) parse -> print -> parse
# --------------------------------------------------------------------------------------------

FAMILY_KEYS = {
    "net": sorted(schema.NET_OPTIONS),
    "features": sorted(schema.FEATURE_OPTIONS),
    "volume": sorted(set(schema.MP.rows) - {"volume"}),
    "dev": sorted(schema.DEV_OPTIONS - {"path"}),
}
# A value never holds ',' (the item separator) nor edge whitespace (PVE trims items); '=' and ';'
# may appear inside.
VALUE_CHARS = string.ascii_letters + string.digits + ":/.;=_-+ "
value_text = st.text(VALUE_CHARS, max_size=12).map(str.strip)
flag_spelling = st.sampled_from(["0", "1", "true", "false", "yes", "no", "on", "off", "TRUE", "Off"])


def family_map(family: str) -> st.SearchStrategy[dict[str, str]]:
    keys = FAMILY_KEYS[family]
    return st.dictionaries(st.sampled_from(keys), st.one_of(value_text, flag_spelling), max_size=len(keys))


#: Each family's table (``lxc.schema``): its defaults and flags.
TABLES = {"net": schema.NET, "features": schema.FEATURES, "volume": schema.MP, "dev": schema.DEV}
any_family = st.sampled_from(sorted(FAMILY_KEYS))


@SETTINGS
@given(data=st.data(), family=any_family)
def test_print_then_parse_gives_the_map_back(data: st.DataObject, family: str) -> None:
    mapping = data.draw(family_map(family))
    assert dict(pairs(print_pairs(mapping))) == mapping
    assert pairs(print_pairs(mapping)) == list(mapping.items())


@SETTINGS
@given(mapping=family_map("volume"), volume=st.sampled_from(["tank:8", "local:subvol-100-disk-0", "/srv/a"]))
def test_volume_with_bare_default_key_round_trips(mapping: dict[str, str], volume: str) -> None:
    text = ",".join(filter(None, [volume, print_pairs(mapping)]))
    assert pairs(text, default_key="volume") == [("volume", volume), *mapping.items()]


@SETTINGS
@given(data=st.data(), family=any_family)
def test_option_map_is_idempotent_and_order_free(data: st.DataObject, family: str) -> None:
    mapping = data.draw(family_map(family))
    once = option_map(print_pairs(mapping), TABLES[family])
    assert option_map(print_pairs(once), TABLES[family]) == once
    shuffled = list(mapping.items())
    random.Random(data.draw(st.integers())).shuffle(shuffled)
    again = option_map(print_pairs(dict(shuffled)), TABLES[family])
    assert sorted_form(again) == sorted_form(once)


@SETTINGS
@given(gib=st.decimals(min_value=0, max_value=100000, places=2, allow_nan=False, allow_infinity=False))
def test_a_grow_to_mib_text_is_the_size_a_create_gives(gib) -> None:
    # pve-container LXC.pm create_disks allocates int(N*1024) MiB for storage:N; a grow to
    # mib_text of that count names the very same bytes, so create and grow agree.
    text = f"{gib:f}"
    mib = new_volume_mib(text)
    assert parse_size(mib_text(mib)) == mib * MIB
    assert mib * MIB <= parse_size(f"{text}G") < (mib + 1) * MIB


# --------------------------------------------------------------------------------------------
# (b) applying the judge's answer leaves no drift
# --------------------------------------------------------------------------------------------


def dns_label() -> st.SearchStrategy[str]:
    return st.from_regex(r"[a-z][a-z0-9]{0,6}", fullmatch=True)


def joined(items: st.SearchStrategy[list[str]]) -> st.SearchStrategy[str]:
    return st.tuples(items, st.sampled_from([" ", ",", ";", ", "])).map(lambda pair: pair[1].join(pair[0]))


IP = st.sampled_from(["10.0.0.1", "10.0.0.2", "192.0.2.53", "2001:db8::1", "fe80::1"])
TAG = st.sampled_from(["web", "Prod", "dns", "a_b", "x+y", "v1.2", "WEB"])

#: One valid value per scalar of schema.SCALARS (features is its own table below).
SCALAR_VALUES: dict[str, st.SearchStrategy[object]] = {
    "arch": st.sampled_from(["amd64", "arm64", "i386"]),
    "cmode": st.sampled_from(["shell", "console", "tty"]),
    "console": flag_spelling,
    "cores": st.integers(1, 8192),
    "cpulimit": st.one_of(st.integers(0, 64), st.sampled_from(["0.5", "1.50", "2.25"])),
    "cpuunits": st.integers(0, 10000),  # more is refused: CGroup.pm clamp_cpu_shares on cgroup v2
    "description": st.tuples(
        st.text(string.ascii_letters + " .-", max_size=16), st.sampled_from(["", "\n"])
    ).map("".join),
    "hostname": st.lists(dns_label(), min_size=1, max_size=3).map(".".join),
    "memory": st.integers(16, 65536),
    "nameserver": joined(st.lists(IP, min_size=1, max_size=3)),
    "onboot": st.one_of(flag_spelling, st.booleans()),
    "ostype": st.sampled_from(["debian", "alpine", "ubuntu"]),
    "protection": st.one_of(flag_spelling, st.booleans()),
    "searchdomain": joined(
        st.lists(st.sampled_from(["a.example", "b.example", "lan"]), min_size=1, max_size=3)
    ),
    "startup": st.sampled_from(["1", "order=1", "2,up=30", "order=2,up=30,down=60", "up=10"]),
    "swap": st.integers(0, 65536),
    "tags": joined(st.lists(TAG, max_size=4)),
    "timezone": st.sampled_from(["UTC", "Europe/Berlin", "host"]),
    "tty": st.integers(0, 6),
}
CLEARABLE = frozenset(key for key, spec in schema.SCALARS.items() if spec.clearable)

MACS = ["BC:24:11:00:00:01", "bc:24:11:00:00:01", "BC:24:11:00:00:02"]


@st.composite
def nic(draw, with_mac: bool) -> str:
    options = {"name": "eth0", "bridge": draw(st.sampled_from(["vmbr0", "vmbr1"]))}
    if draw(st.booleans()):
        options["ip"] = draw(st.sampled_from(["dhcp", "10.0.0.5/24"]))
    if draw(st.booleans()):
        options["firewall"] = draw(flag_spelling)
    if draw(st.booleans()):
        options["mtu"] = str(draw(st.sampled_from([1400, 1500, 9000])))
    if draw(st.booleans()):
        options["type"] = "veth"
    if with_mac:
        options["hwaddr"] = draw(st.sampled_from(MACS))
    items = list(options.items())
    random.Random(draw(st.integers())).shuffle(items)
    return ",".join(f"{key}={value}" for key, value in items)


DECLARED_FEATURES = st.sampled_from(["", "nesting=1", "nesting=0", "nesting=1,keyctl=0", "nesting=true"])
LIVE_FEATURES = st.sampled_from(
    [None, "nesting=1", "nesting=0", "keyctl=0", "nesting=1,keyctl=0", "keyctl=1"]
)


@st.composite
def mount_point(draw) -> tuple[str, str]:
    """(declared mp0, live mp0): a new-disk declaration against the live volume on one storage."""
    live_gib = draw(st.integers(1, 500))
    unit = draw(st.sampled_from(["G", "M"]))
    live_size = f"{live_gib}G" if unit == "G" else f"{live_gib * 1024}M"
    live_backup = draw(st.sampled_from(["", ",backup=0", ",backup=1"]))
    live = f"tank:subvol-100-disk-0,mp=/data{live_backup},size={live_size}"
    grow = draw(st.sampled_from(["0", "0", "1", "10", "0.5", "-1"]))
    declared_gib = f"{Decimal(str(max(live_gib + float(grow), 0.5))).normalize():f}"
    declared_backup = draw(st.sampled_from(["", ",backup=0", ",backup=1", ",backup=yes"]))
    path = draw(st.sampled_from(["/data", "/data", "/srv"]))
    return f"tank:{declared_gib},mp={path}{declared_backup}", live


@st.composite
def scenario(draw) -> tuple[dict[str, object], dict[str, object]]:
    """(declared config, live config) over SCALARS, net0, features, unprivileged and mp0."""
    declared: dict[str, object] = {}
    live: dict[str, object] = {"digest": "0" * 40}
    for key in draw(st.lists(st.sampled_from(sorted(SCALAR_VALUES)), unique=True, max_size=8)):
        if key in CLEARABLE and draw(st.integers(0, 4)) == 0:
            declared[key] = ""
        else:
            declared[key] = draw(SCALAR_VALUES[key])
    for key in draw(st.lists(st.sampled_from(sorted(SCALAR_VALUES)), unique=True, max_size=8)):
        live[key] = draw(SCALAR_VALUES[key])
    if draw(st.integers(0, 9)) > 0:
        live["unprivileged"] = 1
    if draw(st.booleans()):
        declared["unprivileged"] = draw(st.sampled_from([1, "1", True, 0]))
    if draw(st.booleans()):
        declared["features"] = draw(DECLARED_FEATURES)
    if (live_features := draw(LIVE_FEATURES)) is not None:
        live["features"] = live_features
    if draw(st.booleans()):
        declared["net0"] = "" if draw(st.integers(0, 5)) == 0 else draw(nic(with_mac=draw(st.booleans())))
    if draw(st.booleans()):
        live["net0"] = draw(nic(with_mac=True))
    if draw(st.booleans()):
        declared["mp0"], live["mp0"] = draw(mount_point())
    return declared, live


def with_size(value: str, size: str) -> str:
    """A mount point value with its ``size=`` set, as PVE rewrites it after ``resize_vm``."""
    items = dict(pairs(value, default_key="volume"))
    items["size"] = size
    volume = items.pop("volume")
    return ",".join([volume, print_pairs(items)])


def apply(live: dict[str, object], change: Change) -> dict[str, object]:
    """The live config after the config PUT (set put, delete clear) and then each resize."""
    after = dict(live)
    after.update(change.put)
    for key in change.clear:
        after.pop(key, None)
    for disk, size in change.resize:
        after[disk] = with_size(str(after[disk]), size)
    after["digest"] = "1" * 40
    return after


@SETTINGS
@given(case=scenario())
def test_applying_the_judges_answer_leaves_no_drift(case: tuple[dict, dict]) -> None:
    declared, live = case
    decl = parse_declaration("web", vmid=100, node="pve1", target="homelab", config=declared)
    first = judge(decl, live)
    # Every key the judge writes is a key it reports as drift.
    touched = {*first.put, *first.clear, *(disk for disk, _ in first.resize)}
    assert touched <= set(first.drift)
    event("refused" if first.refuse else ("writes" if first.writes else "clean"))
    assume(not first.refuse)  # a refused change writes nothing
    second = judge(decl, apply(live, first))
    assert second.drift == [], (first, second)
    assert (second.put, second.clear, second.resize, second.refuse) == ({}, [], [], [])


@SETTINGS
@given(case=scenario())
def test_judging_is_pure_and_repeatable(case: tuple[dict, dict]) -> None:
    declared, live = case
    decl = parse_declaration("web", vmid=100, node="pve1", target="homelab", config=declared)
    snapshot = dict(live)
    assert judge(decl, live) == judge(decl, live)
    assert live == snapshot
