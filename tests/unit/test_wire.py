"""How values are spelled on the wire: sizes, property strings, canonical option values, volumes.

Each case says which PVE rule it pins. Sizes are pve-common ``src/PVE/JSONSchema.pm``
``parse_size``; property strings its ``parse_property_string``; volumes pve-container
``src/PVE/LXC/Config.pm`` (``$rootfs_desc``, ``$mp_desc``, ``classify_mountpoint``) and the
resize rules of ``src/PVE/API2/LXC.pm``.
"""

from __future__ import annotations

import pytest

from salt_proxmox.lxc.schema import DEV, FEATURES, MP, NET, VOLUMES, parse_mountpoint
from salt_proxmox.wire.propstring import (
    canonical_option,
    flag,
    option_map,
    pairs,
    print_pairs,
    sorted_form,
    wire,
)
from salt_proxmox.wire.sizes import GIB, mib_text, new_volume_mib, parse_size
from salt_proxmox.wire.volumes import judge_volume

KIB, MIB, TIB = 1024, 1024**2, 1024**4
#: The container tables the property-string cases below read (``lxc.schema``), by format.
TABLES = {"net": NET, "features": FEATURES, "dev": DEV, "volume": MP}

# --------------------------------------------------------------------------------------------
# sizes: parse_size takes ^(\d+(\.\d+)?)([KMGT])?$ and nothing else
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "size"),
    [
        pytest.param("40G", 40 * GIB, id="40G-binary-gibibytes"),
        pytest.param("1.5T", int(1.5 * TIB), id="1.5T-fraction-kept"),
        pytest.param("512M", 512 * MIB, id="512M"),
        pytest.param("100", 100, id="bare-number-is-bytes"),
        pytest.param("8K", 8 * KIB, id="8K"),
        pytest.param("0.5G", GIB // 2, id="half-a-gib"),
        pytest.param(" 40G ", 40 * GIB, id="surrounding-space-ignored"),
    ],
)
def test_parse_size_accepts_pve_spellings(text: str, size: int) -> None:
    # JSONSchema.pm parse_size: K/M/G/T are powers of 1024; no unit is bytes.
    assert parse_size(text) == size


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("40GB", id="40GB-decimal-suffix-is-not-pve"),
        pytest.param("-1G", id="negative"),
        pytest.param("40g", id="lower-case-unit"),
        pytest.param("", id="empty"),
        pytest.param("G", id="unit-without-number"),
        pytest.param("1.G", id="dot-without-fraction"),
        pytest.param("4 0G", id="inner-space"),
        pytest.param("+5G", id="plus-is-only-for-resize"),
        pytest.param("1P", id="no-petabytes"),
    ],
)
def test_parse_size_refuses_everything_else(text: str) -> None:
    # parse_size dies on anything but its one pattern; the message names the rule.
    with pytest.raises(ValueError, match="not a PVE size"):
        parse_size(text)


@pytest.mark.parametrize(
    ("text", "size"),
    [
        pytest.param("40GiB", 40 * GIB, id="GiB"),
        pytest.param("512MiB", 512 * MIB, id="MiB"),
        pytest.param("8KiB", 8 * KIB, id="KiB"),
        pytest.param("1.5TiB", int(1.5 * TIB), id="TiB-fraction"),
    ],
)
def test_parse_size_accepts_the_verbose_binary_suffixes(text: str, size: int) -> None:
    # pve-common JSONSchema.pm parse_size: ^(\d+(\.\d+)?)([KMGT](?:iB)?)?$ since libpve-common-perl
    # 8.3.3 / 9.0.9 ("schema: support sizes with verbose suffixes {K, M, G, T}iB").
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["40Gi", "40GIB", "40gib", "40iB", "40B"])
def test_parse_size_refuses_half_verbose_suffixes(text: str) -> None:
    # Only the exact KiB/MiB/GiB/TiB forms are in PVE's pattern.
    with pytest.raises(ValueError, match="not a PVE size"):
        parse_size(text)


@pytest.mark.parametrize(
    ("gib", "mib"),
    [
        pytest.param("8", 8192, id="whole"),
        pytest.param("8.5", 8704, id="exact-half"),
        pytest.param("8.3", 8499, id="fraction-cut-to-whole-mib"),
        pytest.param("0.001", 1, id="tiny"),
        pytest.param("0.0001", 0, id="below-one-mib"),
    ],
)
def test_a_new_volume_is_int_n_times_1024_mib(gib: str, mib: int) -> None:
    # pve-container src/PVE/LXC.pm create_disks: $size_kb = int(${size_gb} * 1024) * 1024, and
    # the config's size= is $size_kb * 1024 bytes: storage:8.3 is 8499 MiB, not 8.3 GiB.
    assert new_volume_mib(gib) == mib


@pytest.mark.parametrize(
    ("mib", "text"),
    [
        pytest.param(8192, "8G", id="whole-gib"),
        pytest.param(8499, "8499M", id="fraction-in-mib"),
        pytest.param(205312, "205312M", id="half-gib-in-mib"),
    ],
)
def test_mib_text_is_a_resize_size_of_the_same_bytes(mib: int, text: str) -> None:
    # resize_vm's size pattern \+?\d+(\.\d+)?[KMGT]? takes both spellings; they name mib MiB.
    assert mib_text(mib) == text
    assert parse_size(text) == mib * MIB


# --------------------------------------------------------------------------------------------
# property strings
# --------------------------------------------------------------------------------------------


def test_pairs_keeps_order_and_values() -> None:
    # parse_property_string: items split on ',', each key=value; '=' inside a value is the value's.
    assert pairs("name=eth0,bridge=vmbr0,ip=dhcp") == [("name", "eth0"), ("bridge", "vmbr0"), ("ip", "dhcp")]
    assert pairs("a=b=c") == [("a", "b=c")]
    assert pairs("") == []
    assert pairs("a=1,,b=2") == [("a", "1"), ("b", "2")]


def test_pairs_bare_item_is_the_default_key() -> None:
    # The volume of rootfs/mpN is the format's default_key (Config.pm $rootfs_desc: default_key => 1).
    assert pairs("local:8,size=8G", default_key="volume") == [("volume", "local:8"), ("size", "8G")]
    assert pairs("size=8G,local:8", default_key="volume") == [("size", "8G"), ("volume", "local:8")]


@pytest.mark.parametrize(
    ("value", "default_key", "message"),
    [
        pytest.param("a=1,a=2", None, "duplicate key 'a'", id="duplicate-key"),
        pytest.param("eth0,bridge=vmbr0", None, "no default key", id="bare-item-without-default-key"),
        pytest.param("x,y", "volume", "only one value may omit its key", id="second-bare-item"),
        pytest.param("=1", None, "empty key", id="empty-key"),
        pytest.param(
            "local:8,volume=local:9", "volume", "duplicate key 'volume'", id="bare-and-named-default"
        ),
    ],
)
def test_pairs_refuses_what_parse_property_string_refuses(
    value: str, default_key: str | None, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        pairs(value, default_key)


@pytest.mark.parametrize(
    ("spelling", "canonical"),
    [
        *[pytest.param(s, "1", id=f"true-{s}") for s in ("1", "true", "TRUE", "yes", "Yes", "on", "ON")],
        *[pytest.param(s, "0", id=f"false-{s}") for s in ("0", "false", "False", "no", "NO", "off", "Off")],
        pytest.param(True, "1", id="python-True"),
        pytest.param(False, "0", id="python-False"),
        pytest.param(1, "1", id="int-1"),
        pytest.param(0, "0", id="int-0"),
        pytest.param(" on ", "1", id="padded"),
    ],
)
def test_flag_spellings(spelling: object, canonical: str) -> None:
    # JSONSchema.pm check_type boolean: 1|0|true|false|yes|no|on|off, any case, are one value each.
    assert flag(spelling) == canonical


@pytest.mark.parametrize("spelling", ["2", "maybe", "", "enabled", "10"])
def test_flag_refuses_non_booleans(spelling: str) -> None:
    with pytest.raises(ValueError, match="not a boolean"):
        flag(spelling)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        pytest.param(True, "1", id="bool-true"),
        pytest.param(False, "0", id="bool-false"),
        pytest.param(1024, "1024", id="int"),
        pytest.param(2.0, "2", id="whole-float"),
        pytest.param(0.5, "0.5", id="fraction"),
        pytest.param("text", "text", id="string"),
    ],
)
def test_wire_spells_scalars_as_pve_form_encoding_does(value: object, text: str) -> None:
    assert wire(value) == text


@pytest.mark.parametrize("value", [["a"], {"a": 1}, None, ("a",)], ids=["list", "dict", "None", "tuple"])
def test_wire_refuses_non_scalars(value: object) -> None:
    # PVE config values are scalars; a list or mapping is a declaration mistake, not a value.
    with pytest.raises(TypeError):
        wire(value)


@pytest.mark.parametrize(
    ("value", "family", "expected"),
    [
        pytest.param(
            "name=eth0,bridge=vmbr0,firewall=0,host-managed=0,link_down=0,type=veth",
            "net",
            {"name": "eth0", "bridge": "vmbr0"},
            id="net-defaults-dropped",  # Config.pm $netconf_desc: off flags, type veth
        ),
        pytest.param(
            "name=eth0,firewall=1,link_down=yes",
            "net",
            {"name": "eth0", "firewall": "1", "link_down": "1"},
            id="net-non-defaults-kept-canonical",
        ),
        pytest.param(
            "nesting=0,keyctl=0,fuse=0,mknod=0,force_rw_sys=0",
            "features",
            {},
            id="features-all-off-is-empty",  # $features_desc: every flag defaults 0
        ),
        pytest.param(
            "nesting=true,keyctl=off",
            "features",
            {"nesting": "1"},
            id="features-spelling-canonical",
        ),
        pytest.param(
            "/dev/net/tun,deny-write=0",
            "dev",
            {"path": "/dev/net/tun"},
            id="dev-deny-write-0-dropped",  # $dev_desc deny-write default 0
        ),
        pytest.param(
            "backup=0,keepattrs=0,quota=0,replicate=1,ro=0,shared=0",
            "volume",
            {},
            id="volume-defaults-dropped",  # $mp_desc: replicate defaults 1, the rest 0
        ),
        pytest.param(
            "replicate=0,ro=1",
            "volume",
            {"replicate": "0", "ro": "1"},
            id="volume-non-defaults-kept",
        ),
        pytest.param(
            "firewall=0",
            "features",
            {"firewall": "0"},
            id="another-familys-default-is-not-dropped",
        ),
    ],
)
def test_option_map_drops_each_familys_defaults(value: str, family: str, expected: dict[str, str]) -> None:
    # Each family's table (lxc.schema) carries its defaults and its default key (a dev's bare path).
    assert option_map(value, TABLES[family]) == expected


def test_family_defaults_are_the_documented_ones() -> None:
    # docs/design.md §6 list, restated: a rename or typo in the table would silently create forever-diffs.
    assert NET.defaults == {"firewall": "0", "host-managed": "0", "link_down": "0", "type": "veth"}
    assert set(FEATURES.defaults) == {"force_rw_sys", "fuse", "keyctl", "mknod", "nesting"}
    assert set(FEATURES.defaults.values()) == {"0"}
    assert DEV.defaults == {"deny-write": "0"}
    assert MP.defaults == {
        "backup": "0",
        "keepattrs": "0",
        "quota": "0",
        "replicate": "1",
        "ro": "0",
        "shared": "0",
    }


@pytest.mark.parametrize(
    ("key", "value", "canonical"),
    [
        pytest.param("hwaddr", "bc:24:11:aa:bb:0c", "BC:24:11:AA:BB:0C", id="mac-upper"),
        pytest.param("hwaddr", "BC:24:11:AA:BB:0C", "BC:24:11:AA:BB:0C", id="mac-already-upper"),
        # check_ct_modify_config_perm compares a feature's old and new value as strings.
        pytest.param("mount", "nfs;cifs", "nfs;cifs", id="features-mount-kept-verbatim"),
        pytest.param("mountoptions", "noatime; nosuid;", "noatime;nosuid", id="mountoptions-is-a-set"),
        pytest.param("mountoptions", "nosuid;noatime", "noatime;nosuid", id="mountoptions-order-free"),
        pytest.param("backup", "yes", "1", id="flag-key"),
        pytest.param("backup", "maybe", "maybe", id="flag-key-unreadable-kept-raw"),
        pytest.param("bridge", "vmbr0", "vmbr0", id="plain-text-untouched"),
    ],
)
def test_canonical_option(key: str, value: str, canonical: str) -> None:
    # PVE::Tools prints generated MACs upper case and compares case-insensitively; ';' lists
    # (mount, mountoptions) are sets to PVE.
    table = {"hwaddr": NET, "mount": FEATURES, "bridge": NET}.get(key, MP)
    assert canonical_option(key, value, table) == canonical


def test_sorted_form_is_order_free() -> None:
    assert sorted_form({"b": "2", "a": "1"}) == "a=1,b=2" == sorted_form({"a": "1", "b": "2"})


def test_print_pairs_puts_lead_keys_first() -> None:
    # PVE prints name= first on a NIC; print_pairs keeps the rest in insertion order.
    assert print_pairs({"bridge": "vmbr0", "name": "eth0", "ip": "dhcp"}, lead=("name",)) == (
        "name=eth0,bridge=vmbr0,ip=dhcp"
    )
    assert print_pairs({"a": "1"}, lead=("name",)) == "a=1"
    assert print_pairs({}) == ""


# --------------------------------------------------------------------------------------------
# volumes: classify_mountpoint plus the storage:GiB new-disk spelling
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "kind", "storage"),
    [
        pytest.param("local-zfs:40", "new", "local-zfs", id="storage-colon-gib-is-new"),
        pytest.param("local-zfs:0.5,mp=/x", "new", "local-zfs", id="fractional-gib-is-new"),
        pytest.param("local-zfs:subvol-1-disk-0,size=40G", "volume", "local-zfs", id="allocated-volume"),
        pytest.param("local:100/vm-100-disk-0.raw,mp=/d", "volume", "local", id="dir-volume"),
        pytest.param("/srv/share,mp=/share", "bind", None, id="absolute-path-is-bind"),
        pytest.param("/dev/sdb1,mp=/disk", "device", None, id="dev-path-is-device"),
    ],
)
def test_parse_volume_kinds(value: str, kind: str, storage: str | None) -> None:
    volume = parse_mountpoint(value)
    assert volume.kind == kind
    assert volume.storage == storage
    # bind and device mount points are root@pam's (LXC.pm check_ct_modify_config_perm).
    assert volume.host_path == (kind in ("bind", "device"))


def test_parse_volume_new_keeps_the_gib_count_and_options() -> None:
    volume = parse_mountpoint("tank:200.5,mp=/data,backup=1")
    assert (volume.new_gib, volume.options) == ("200.5", {"mp": "/data", "backup": "1"})


@pytest.mark.parametrize(
    ("value", "message"),
    [
        pytest.param("local:40GB", "not a volume name", id="size-like-volume-name-40GB"),
        pytest.param("local:40G", "not a volume name", id="size-like-volume-name-40G"),
        pytest.param("local:-1", "not a volume name", id="negative-gib"),
        pytest.param("local:8,foo=1", "unknown mount point option", id="unknown-option"),
        pytest.param("local:8,size=40GB", "not a PVE size", id="size-option-not-a-size"),
        pytest.param("mp=/x", "needs a volume", id="no-volume"),
        pytest.param("relative/path,mp=/x", "not storage:size", id="no-storage-no-absolute-path"),
        pytest.param("local:", "not storage:size", id="storage-without-name"),
        pytest.param("1local:vol", "not storage:size", id="storage-id-must-start-with-letter"),
    ],
)
def test_parse_volume_refuses(value: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_mountpoint(value)


LIVE_MP = "tank:subvol-100-disk-0,mp=/data,backup=0,size=200G"


@pytest.mark.parametrize(
    ("declared", "live", "put", "resize"),
    [
        pytest.param("tank:200,mp=/data", LIVE_MP, None, None, id="same-size-same-options"),
        pytest.param("tank:250,mp=/data", LIVE_MP, None, "250G", id="grow"),
        pytest.param("tank:200.5,mp=/data", LIVE_MP, None, "205312M", id="fractional-grow-in-mib"),
        pytest.param(
            "tank:200,mp=/data,backup=1",
            LIVE_MP,
            "tank:subvol-100-disk-0,mp=/data,backup=1,size=200G",
            None,
            id="option-change-written-with-live-volume-and-size",
        ),
        pytest.param(
            "tank:200,backup=1,mp=/data",
            LIVE_MP,
            "tank:subvol-100-disk-0,mp=/data,backup=1,size=200G",
            None,
            id="mp-first-whatever-the-declared-order",
        ),
        pytest.param(
            "tank:300,mp=/srv",
            LIVE_MP,
            "tank:subvol-100-disk-0,mp=/srv,size=200G",
            "300G",
            id="option-change-and-grow",
        ),
        pytest.param(
            "tank:200,mp=/data",
            "tank:subvol-100-disk-0,mp=/data,size=204800M",
            None,
            None,
            id="same-bytes-in-another-unit",
        ),
        pytest.param(
            "tank:8,mp=/data,mountoptions=nosuid;noatime",
            "tank:subvol-100-disk-0,mp=/data,mountoptions=noatime;nosuid,size=8G",
            None,
            None,
            id="mountoptions-set",
        ),
        pytest.param(
            "tank:8,mp=/data,replicate=1,ro=0",
            "tank:subvol-100-disk-0,mp=/data,size=8G",
            None,
            None,
            id="volume-defaults-spelled-out",
        ),
        pytest.param(
            "tank:subvol-100-disk-0,mp=/data",
            LIVE_MP,
            None,
            None,
            id="declared-live-volume-id-same",
        ),
        pytest.param(
            "tank:subvol-100-disk-0,mp=/data,size=200G",
            LIVE_MP,
            None,
            None,
            id="declared-live-volume-id-with-its-size",
        ),
        pytest.param(
            "tank:subvol-100-disk-0,mp=/data,backup=1",
            LIVE_MP,
            "tank:subvol-100-disk-0,mp=/data,backup=1,size=200G",
            None,
            id="declared-live-volume-option-change",
        ),
    ],
)
def test_judge_volume_writes(declared: str, live: str, put: str | None, resize: str | None) -> None:
    verdict = judge_volume("mp0", declared, live, VOLUMES)
    assert (verdict.put, verdict.resize, verdict.refuse, verdict.root_only) == (put, resize, None, False)
    assert verdict.differs == bool(put or resize)


@pytest.mark.parametrize(
    ("declared", "live", "message"),
    [
        pytest.param("tank:100,mp=/data", LIVE_MP, "cannot shrink", id="shrink-refused"),
        pytest.param("tank:199.9,mp=/data", LIVE_MP, "cannot shrink", id="fractional-shrink-refused"),
        pytest.param("other:200,mp=/data", LIVE_MP, "pct move-volume", id="other-storage-refused"),
        pytest.param(
            "tank:subvol-100-disk-1,mp=/data",
            LIVE_MP,
            "Swapping a volume",
            id="swapping-volume-id-refused",  # PVE moves the old one to unusedN
        ),
        pytest.param(
            "tank:subvol-100-disk-0,mp=/data,size=300G",
            LIVE_MP,
            "size= on an existing volume",
            id="size-option-is-not-a-grow-request",
        ),
        pytest.param(
            "tank:8,mp=/data", "tank:subvol-100-disk-0,mp=/data", "reports no size", id="live-no-size"
        ),
    ],
)
def test_judge_volume_refuses(declared: str, live: str, message: str) -> None:
    verdict = judge_volume("mp0", declared, live, VOLUMES)
    assert verdict.refuse is not None and message in verdict.refuse
    assert verdict.refuse.startswith("mp0: ")
    assert (verdict.put, verdict.resize) == (None, None)
    assert verdict.differs


@pytest.mark.parametrize(
    ("declared", "live", "root_only"),
    [
        pytest.param("/srv/a,mp=/a", "/srv/a,mp=/a", False, id="bind-same"),
        pytest.param("/srv/a,mp=/a,ro=0", "/srv/a,mp=/a", False, id="bind-same-defaults-spelled"),
        pytest.param("/srv/b,mp=/a", "/srv/a,mp=/a", True, id="bind-other-path"),
        pytest.param("/srv/a,mp=/a,ro=1", "/srv/a,mp=/a", True, id="bind-option-change"),
        pytest.param("/dev/sdb1,mp=/disk", "/dev/sdb1,mp=/disk", False, id="device-same"),
        pytest.param("/dev/sdc1,mp=/disk", "/dev/sdb1,mp=/disk", True, id="device-other"),
        pytest.param("tank:8,mp=/a", "/srv/a,mp=/a", True, id="bind-to-volume"),
        pytest.param("/srv/a,mp=/a", "tank:subvol-100-disk-0,mp=/a,size=8G", True, id="volume-to-bind"),
    ],
)
def test_judge_volume_bind_and_device_are_root_only(declared: str, live: str, root_only: bool) -> None:
    # check_ct_modify_config_perm: "mount point type bind|device is only allowed for root@pam".
    verdict = judge_volume("mp0", declared, live, VOLUMES)
    assert verdict.root_only is root_only
    assert (verdict.put, verdict.resize, verdict.refuse) == (None, None, None)


def test_live_mount_point_with_keepattrs_is_readable() -> None:
    # pve-container Config.pm $mp_desc (PVE 9): keepattrs, boolean, default 0. A live mp0 that
    # carries it must still be judged; the MP table already lists it as a volume default.
    live = "tank:subvol-100-disk-0,mp=/data,keepattrs=1,size=8G"
    assert judge_volume("mp0", "tank:8,mp=/data,keepattrs=1", live, VOLUMES).differs is False
