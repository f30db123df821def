"""Bad input is refused before any network call, one sentence per key, naming the key.

``parse_declaration`` (docs/design.md §3, §5a) and ``pve.constraints.check_form`` (§5a). Rules are
pve-container ``src/PVE/LXC/Config.pm`` ``$confdesc`` and the parameters of
``src/PVE/API2/LXC.pm`` / ``src/PVE/API2/LXC/Config.pm``; formats are pve-common
``src/PVE/JSONSchema.pm`` (``pve-vmid``, ``pve-node``, ``dns-name``, ``pve-tag-list``,
``pve-startup-order``, ``parse_size``).
"""

from __future__ import annotations

import pytest

from salt_proxmox.errors import DeclarationError
from salt_proxmox.lxc import schema
from salt_proxmox.lxc.props import parse_declaration
from salt_proxmox.pve.constraints import check_form

TEMPLATE = "local:vztmpl/debian-13-standard_13.0-1_amd64.tar.zst"


def parse(config: dict | None = None, **state: object):
    args = {"vmid": 150, "node": "pve1", "target": "homelab", **state}
    return parse_declaration("web", config=config or {}, **args)


def problems_of(config: dict | None = None, **state: object) -> list[str]:
    with pytest.raises(DeclarationError) as caught:
        parse(config, **state)
    assert str(caught.value) == "; ".join(caught.value.problems)
    return caught.value.problems


def names(problems: list[str], key: str) -> bool:
    return any(problem.startswith(f"{key}:") for problem in problems)


def test_a_good_declaration_is_wire_spelled() -> None:
    declared = parse(
        {"hostname": "web", "memory": 1024, "onboot": True, "ostemplate": TEMPLATE, "start": "yes"},
        vmid="150",
        adopt=True,
        removal="destroy",
    )
    assert declared.vmid == 150
    assert declared.config == {"hostname": "web", "memory": "1024", "onboot": "1"}
    assert (declared.ostemplate, declared.start, declared.adopt, declared.removal) == (
        TEMPLATE,
        True,
        True,
        "destroy",
    )


# --------------------------------------------------------------------------------------------
# keys this family does not manage ($confdesc has them, or nobody does): refused by name
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    [
        pytest.param("hookscript", id="hookscript-root-only-not-managed"),
        pytest.param("unused0", id="unusedN-is-pve-bookkeeping"),
        pytest.param("mp256", id="mp-index-beyond-MAX_MOUNT_POINTS"),
        pytest.param("net32", id="net-index-beyond-MAX_LXC_NETWORKS"),
        pytest.param("dev256", id="dev-index-beyond-MAX_DEVICES"),
        pytest.param("digest", id="digest-is-not-declared"),
        pytest.param("lock", id="lock"),
        pytest.param("memroy", id="typo"),
        pytest.param("Memory", id="keys-are-case-sensitive"),
    ],
)
def test_unknown_key_is_refused_by_name(key: str) -> None:
    problems = problems_of({key: "1"})
    assert problems == [
        f"{key}: not a container config key this state manages (see pve-container src/PVE/LXC/Config.pm); "
        "remove it from the declaration"
    ]


def test_non_string_key_is_refused() -> None:
    assert problems_of({123: "x"}) == ["123: config keys are strings"]


# --------------------------------------------------------------------------------------------
# wrong types: PVE config values are scalars
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["hostname", "tags", "memory", "net0", "features", "ostemplate", "start"])
@pytest.mark.parametrize(
    ("value", "type_name"),
    [(["a", "b"], "list"), ({"a": 1}, "dict"), (None, "NoneType")],
    ids=["list", "dict", "None"],
)
def test_wrong_type_is_refused_naming_key_and_type(key: str, value: object, type_name: str) -> None:
    problems = problems_of({key: value})
    assert problems == [f"{key}: expected a string, number or boolean, got {type_name}"]


# --------------------------------------------------------------------------------------------
# values PVE's schema rejects
# --------------------------------------------------------------------------------------------

BAD_VALUES = [
    # --- property strings: $netconf_desc ---
    pytest.param("net0", "bridge=vmbr0,ip=dhcp", "a NIC needs name=", id="net-without-name"),
    pytest.param(
        "net0", "name=eth0,bridge=vmbr0,speed=10", "unknown option(s) speed", id="net-unknown-option"
    ),
    pytest.param(
        "net0", "name=eth0,hwaddr=zz:00:00:00:00:01", "is not a unicast MAC address", id="net-bad-mac"
    ),
    pytest.param(
        "net0", "name=eth0,hwaddr=BC:24:11:00:01", "is not a unicast MAC address", id="net-short-mac"
    ),
    pytest.param("net0", "eth0,bridge=vmbr0", "no default key", id="net-bare-item"),
    pytest.param("net0", "name=eth0,name=eth1", "duplicate key", id="net-duplicate-key"),
    # --- $features_desc: booleans, plus mount ---
    pytest.param("features", "nesting=1,bogus=1", "unknown option(s) bogus", id="features-unknown"),
    pytest.param("features", "nesting=2", "nesting=2: type check", id="features-non-boolean"),
    pytest.param("features", "keyctl=maybe", "keyctl=maybe: type check", id="features-non-boolean-word"),
    pytest.param("features", "nesting", "no default key", id="features-bare"),
    # --- $dev_desc ---
    pytest.param("dev0", "/dev/net/tun,colour=red", "unknown option(s) colour", id="dev-unknown"),
    pytest.param("dev0", "/dev/net/tun,deny-write=maybe", "type check", id="dev-deny-write-non-boolean"),
    # --- volumes: parse_size and the storage:GiB spelling ---
    pytest.param("rootfs", "local:40GB", "is not a volume name", id="rootfs-40GB"),
    pytest.param("rootfs", "local:-1G", "is not a volume name", id="rootfs-negative"),
    pytest.param("mp0", "tank:8,mp=/d,size=40GB", "not a PVE size", id="mp-size-40GB"),
    pytest.param("mp0", "tank:8,mp=/d,size=-1G", "not a PVE size", id="mp-size-negative"),
    pytest.param("mp0", "tank:8", "needs mp=", id="mp-without-path"),
    pytest.param("rootfs", "local:8,mp=/x", "unknown option(s) mp", id="rootfs-with-mp"),
    pytest.param("mp0", "tank:8,mp=/d,colour=red", "unknown mount point option", id="mp-unknown-option"),
    # --- $confdesc ranges and enums ---
    pytest.param("memory", 15, "minimum value of 16", id="memory-below-16"),
    pytest.param("memory", "8", "minimum value of 16", id="memory-string-below-16"),
    pytest.param("memory", 1024.5, "type check ('integer') failed", id="memory-fraction"),
    pytest.param("memory", "lots", "type check ('integer') failed", id="memory-word"),
    pytest.param("cores", 8193, "maximum value of 8192", id="cores-above-8192"),
    pytest.param("cores", 0, "minimum value of 1", id="cores-zero"),
    pytest.param("cpulimit", 8193, "maximum value of 8192", id="cpulimit-above"),
    pytest.param("cpulimit", -1, "minimum value of 0", id="cpulimit-negative"),
    pytest.param("tty", 7, "maximum value of 6", id="tty-above-6"),
    pytest.param("swap", -1, "minimum value of 0", id="swap-negative"),
    pytest.param("arch", "x86", "enumeration", id="arch-not-in-enum"),
    pytest.param("cmode", "serial", "enumeration", id="cmode-not-in-enum"),
    pytest.param("ostype", "windows", "enumeration", id="ostype-not-in-enum"),
    pytest.param("onboot", "maybe", "type check ('boolean') failed", id="onboot-non-boolean"),
    pytest.param("unprivileged", "2", "type check ('boolean') failed", id="unprivileged-non-boolean"),
    pytest.param("description", "x" * 8193, "may only be 8192 characters long", id="description-too-long"),
    # --- formats: dns-name, pve-tag-list, address-list, dns-name-list, pve-startup-order ---
    pytest.param("hostname", "web_1", "valid DNS name", id="hostname-underscore"),
    pytest.param("hostname", "-web", "valid DNS name", id="hostname-leading-hyphen"),
    pytest.param("hostname", "web-", "valid DNS name", id="hostname-trailing-hyphen"),
    pytest.param("hostname", "a..b", "valid DNS name", id="hostname-empty-label"),
    pytest.param("hostname", "wéb", "valid DNS name", id="hostname-non-ascii"),
    pytest.param("hostname", "a" * 256, "may only be 255 characters long", id="hostname-too-long"),
    pytest.param("tags", "a$b", "invalid tag(s) a$b", id="tags-dollar"),
    pytest.param("tags", "good;bad!", "invalid tag(s) bad!", id="tags-bang"),
    pytest.param("tags", "-lead", "invalid tag(s) -lead", id="tags-leading-hyphen"),
    pytest.param("tags", "ä", "invalid tag(s)", id="tags-non-ascii"),
    pytest.param("nameserver", "10.0.0.1 dns.example", "is not an IP address", id="nameserver-name"),
    pytest.param("searchdomain", "ok.example bad_domain", "valid DNS name", id="searchdomain-underscore"),
    pytest.param("startup", "order=x", "not [order=]N", id="startup-word"),
    pytest.param("startup", "first", "not [order=]N", id="startup-garbage"),
    # --- create-only keys ---
    pytest.param("start", "maybe", "not a boolean", id="start-non-boolean"),
    pytest.param("ostemplate", "", "give a template volume", id="ostemplate-empty"),
]


@pytest.mark.parametrize(("key", "value", "fragment"), BAD_VALUES)
def test_bad_value_is_refused_naming_key(key: str, value: object, fragment: str) -> None:
    problems = problems_of({key: value})
    assert len(problems) == 1, problems
    assert problems[0].startswith(f"{key}: ")
    assert fragment in problems[0]


@pytest.mark.parametrize("key", ["hostname", "description", "tags", "net0", "timezone"])
def test_huge_string_is_refused(key: str) -> None:
    # PVE's API server refuses a request body over 64 KiB (pve-http-server AnyEvent.pm
    # $limit_max_post); refused before any rule runs on it, the value clipped in the message.
    problems = problems_of({key: "a" * 70000})
    assert len(problems) == 1 and len(problems[0]) < 300, problems
    assert problems[0].startswith(f"{key}: 'aaaa") and "(70000 characters)" in problems[0]
    assert "$limit_max_post" in problems[0]


@pytest.mark.parametrize(
    ("key", "value"),
    [
        pytest.param("hostname", "web-1.example.com", id="hostname-fqdn"),
        pytest.param("tags", "prod;web,DNS a_b+c.d", id="tags-all-separators"),
        pytest.param("nameserver", "10.0.0.1 2001:db8::1", id="nameserver-v4-v6"),
        pytest.param("startup", "order=1,up=30,down=60", id="startup-full"),
        pytest.param("startup", "3", id="startup-bare"),
        pytest.param("memory", 16, id="memory-minimum"),
        pytest.param("cores", 8192, id="cores-maximum"),
        pytest.param("features", "mount=nfs;cifs,nesting=1", id="features-mount"),
        pytest.param("net0", "name=eth0,bridge=vmbr0,hwaddr=bc:24:11:00:00:01", id="net-lower-mac"),
        pytest.param("dev0", "/dev/net/tun,mode=0666,deny-write=1", id="dev"),
        pytest.param("mp0", "/srv/share,mp=/share", id="bind-mp-parses"),
        pytest.param("hostname", "", id="empty-is-a-clear-request"),
    ],
)
def test_good_values_parse(key: str, value: object) -> None:
    assert key in parse({key: value}).config


@pytest.mark.parametrize("value", ["up=30,order=1", "down=60,up=30"])
def test_startup_in_any_order_parses(value: str) -> None:
    # pve-common JSONSchema.pm pve_parse_startup_order splits on ',' and reads each part by itself.
    assert parse({"startup": value}).config["startup"] == value


def test_startup_without_separator_is_refused() -> None:
    # pve_parse_startup_order: '1up=30' is one part matching none of order/up/down.
    assert names(problems_of({"startup": "1up=30"}), "startup")


@pytest.mark.parametrize(
    ("key", "value"),
    [
        # $netconf_desc: mtu minimum 64, tag 1-4094, type enum [veth], name pattern [-_.\w\d]+
        pytest.param("net0", "name=eth0,bridge=vmbr0,mtu=10", id="net-mtu-below-64"),
        pytest.param("net0", "name=eth0,bridge=vmbr0,tag=5000", id="net-tag-above-4094"),
        pytest.param("net0", "name=eth0,type=macvlan", id="net-type-not-veth"),
        pytest.param("net0", "name=eth 0", id="net-name-with-space"),
        # $rootfs_desc/$mp_desc mountoptions: discard|lazytime|noatime|nodev|noexec|nosuid
        pytest.param("mp0", "tank:8,mp=/d,mountoptions=bogus", id="mountoptions-unknown"),
        # $rootfs_desc has no backup (only $mp_desc does): PVE answers 400 for it on rootfs
        pytest.param("rootfs", "local:8,backup=1", id="rootfs-backup"),
    ],
)
def test_property_string_option_values_are_checked(key: str, value: str) -> None:
    assert names(problems_of({key: value}), key)


# --------------------------------------------------------------------------------------------
# state arguments: vmid, node, target, adopt, removal
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("vmid", "fragment"),
    [
        pytest.param(99, "outside PVE's range 100-999999999", id="99-below-pve-vmid"),
        pytest.param(1_000_000_000, "outside PVE's range", id="1e9-above-pve-vmid"),
        pytest.param(0, "outside PVE's range", id="zero"),
        pytest.param(-150, "outside PVE's range", id="negative"),
        pytest.param(True, "expected an integer, got bool", id="True-is-not-a-vmid"),
        pytest.param("abc", "is not an integer", id="word"),
        pytest.param("", "is not an integer", id="empty"),
        pytest.param("1e3", "is not an integer", id="exponent"),
        pytest.param(" 150", "is not an integer", id="padded"),
        pytest.param(150.0, "expected an integer, got float", id="float"),
        pytest.param(None, "expected an integer, got NoneType", id="None"),
        pytest.param([150], "expected an integer, got list", id="list"),
    ],
)
def test_bad_vmid(vmid: object, fragment: str) -> None:
    # pve-common JSONSchema.pm pve-vmid: integer 100 - 999999999.
    problems = problems_of(vmid=vmid)
    assert names(problems, "vmid")
    assert fragment in problems[0]


@pytest.mark.parametrize("vmid", [100, 999_999_999, "150"])
def test_good_vmid(vmid: object) -> None:
    assert parse(vmid=vmid).vmid == int(vmid)


def test_unicode_digit_vmid_is_a_declaration_error() -> None:
    assert names(problems_of(vmid="²"), "vmid")


@pytest.mark.parametrize(
    "node",
    [
        pytest.param("pve_1", id="underscore"),
        pytest.param("-pve", id="leading-hyphen"),
        pytest.param("pve1.example.com", id="fqdn-is-not-a-node-name"),
        pytest.param("", id="empty"),
        pytest.param("pvé", id="non-ascii"),
        pytest.param(None, id="None"),
        pytest.param(1, id="int"),
    ],
)
def test_bad_node(node: object) -> None:
    # pve-common pve_verify_node_name: ^[a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?$
    problems = problems_of(node=node)
    assert problems == [f"node: {node!r} is not a PVE node name (pve-node)"]


@pytest.mark.parametrize("target", ["", None, 5])
def test_bad_target(target: object) -> None:
    assert names(problems_of(target=target), "target")


@pytest.mark.parametrize("removal", ["delete", "RETAIN", None, True])
def test_removal_is_retain_or_destroy(removal: object) -> None:
    assert problems_of(removal=removal) == [f"removal: expected one of retain, destroy, got {removal!r}"]


@pytest.mark.parametrize("adopt", ["yes", "true", 1, None])
def test_adopt_is_a_bool(adopt: object) -> None:
    assert problems_of(adopt=adopt) == [f"adopt: expected true or false (a boolean, unquoted), got {adopt!r}"]


def test_every_problem_is_listed() -> None:
    problems = problems_of({"memory": 8, "hookscript": "x", "tags": "a$"}, vmid=5, node="a_b", adopt="no")
    for key in ("vmid", "node", "adopt", "memory", "hookscript", "tags"):
        assert names(problems, key), key


# --------------------------------------------------------------------------------------------
# check_form: the endpoint's schema, before any write
# --------------------------------------------------------------------------------------------


def refused(endpoint, form: dict, presence: bool) -> list[str]:
    with pytest.raises(DeclarationError) as caught:
        check_form(endpoint, form, presence)
    return caught.value.problems


def test_create_requires_ostemplate() -> None:
    # API2/LXC.pm create_vm: ostemplate is not optional (vmid neither).
    for form in ({"vmid": "150"}, {"vmid": "150", "ostemplate": ""}):
        assert refused(schema.CREATE, form, presence=True) == [
            "POST /nodes/{node}/lxc: ostemplate: property is missing and it is not optional"
        ]
    assert refused(schema.CREATE, {}, presence=True) == [
        "POST /nodes/{node}/lxc: vmid: property is missing and it is not optional",
        "POST /nodes/{node}/lxc: ostemplate: property is missing and it is not optional",
    ]


def test_create_checks_each_key() -> None:
    problems = refused(
        schema.CREATE,
        {"vmid": "99", "ostemplate": TEMPLATE, "memory": "8", "hookscript": "x", "start": "maybe"},
        presence=True,
    )
    assert problems == [
        "POST /nodes/{node}/lxc: vmid: value must have a minimum value of 100",
        "POST /nodes/{node}/lxc: memory: value must have a minimum value of 16",
        "POST /nodes/{node}/lxc: hookscript: property is not defined in schema",
        "POST /nodes/{node}/lxc: start: type check ('boolean') failed - got 'maybe'",
    ]


def test_create_accepts_a_good_form() -> None:
    check_form(
        schema.CREATE,
        {"vmid": "150", "ostemplate": TEMPLATE, "memory": "1024", "rootfs": "local-zfs:8", "start": "1"},
        presence=True,
    )


def test_update_has_no_required_keys_and_skips_digest_and_delete() -> None:
    # PUT .../config: every key optional; digest and delete are the endpoint's own.
    check_form(
        schema.UPDATE, {"memory": "1024", "digest": "0" * 40, "delete": "tags,description"}, presence=False
    )
    check_form(schema.UPDATE, {}, presence=False)


def test_update_checks_values() -> None:
    assert refused(schema.UPDATE, {"cores": "0", "tags": "a$"}, presence=False) == [
        "PUT /nodes/{node}/lxc/{vmid}/config: cores: value must have a minimum value of 1",
        "PUT /nodes/{node}/lxc/{vmid}/config: tags: invalid tag(s) a$: a tag is letters, digits, _ - + .",
    ]


@pytest.mark.parametrize("size", ["+10G", "10G", "10.5G", "1024", "+1T", "512M"])
def test_resize_accepts_its_size_pattern(size: str) -> None:
    # API2/LXC.pm resize_vm size: \+?\d+(\.\d+)?[KMGT]?
    check_form(schema.RESIZE, {"disk": "mp0", "size": size}, presence=True)


@pytest.mark.parametrize("size", ["10GB", "-1G", "abc", "10g", "+", "1.G"])
def test_resize_refuses_other_sizes(size: str) -> None:
    assert refused(schema.RESIZE, {"disk": "rootfs", "size": size}, presence=True) == [
        "PUT /nodes/{node}/lxc/{vmid}/resize: size: not [+]N[.N][K|M|G|T]"
    ]


@pytest.mark.parametrize("disk", ["rootfs", "mp0", "mp255"])
def test_resize_disk_enum_accepts(disk: str) -> None:
    check_form(schema.RESIZE, {"disk": disk, "size": "+1G"}, presence=True)


@pytest.mark.parametrize("disk", ["mp256", "net0", "dev0", "unused0", "ROOTFS"])
def test_resize_disk_enum_refuses(disk: str) -> None:
    (problem,) = refused(schema.RESIZE, {"disk": disk, "size": "+1G"}, presence=True)
    assert problem.startswith("PUT /nodes/{node}/lxc/{vmid}/resize: disk: value ")
    assert "does not have a value in the enumeration" in problem


def test_resize_requires_disk_and_size() -> None:
    assert refused(schema.RESIZE, {}, presence=True) == [
        "PUT /nodes/{node}/lxc/{vmid}/resize: disk: property is missing and it is not optional",
        "PUT /nodes/{node}/lxc/{vmid}/resize: size: property is missing and it is not optional",
    ]
