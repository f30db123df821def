"""PVE's own value rules, exactly, and what differs between PVE 8 and PVE 9 (no server).

Each test names the PVE source that defines the rule. Where fakepve answers otherwise (it does not
clamp cpuunits, allocates a fractional GiB to the byte, takes ``protection=on``), the test pins
real PVE's behaviour and says what fakepve does.
"""

from __future__ import annotations

import pytest

from salt_proxmox.errors import DeclarationError, Refused
from salt_proxmox.guest import lane
from salt_proxmox.lxc import schema
from salt_proxmox.lxc.family import LXC
from salt_proxmox.lxc.judge import create_form, create_refusals, creates_unprivileged, judge, release_refusals
from salt_proxmox.lxc.props import parse_declaration
from salt_proxmox.lxc.schema import VOLUMES
from salt_proxmox.pve.constraints import check_form
from salt_proxmox.pve.errors import classify
from salt_proxmox.pve.facts import (
    DEFAULT_TAG_STYLE,
    PRIVILEGES,
    Release,
    TagStyle,
    parse_release,
    parse_tag_style,
)
from salt_proxmox.wire.volumes import judge_volume

TEMPLATE = "local:vztmpl/debian-13-standard_13.0-1_amd64.tar.zst"
PVE8, PVE9 = Release("8.4", "8.4.14"), Release("9.0", "9.0.10")


def decl(**config: object):
    return parse_declaration("web", vmid=100, node="pve1", target="homelab", config=config)


def problems(**config: object) -> list[str]:
    with pytest.raises(DeclarationError) as caught:
        decl(**config)
    return caught.value.problems


def ct(**config: object) -> dict[str, object]:
    return {"digest": "0" * 40, "unprivileged": 1, **config}


# --------------------------------------------------------------------------------------------
# unprivileged at create: pve-container src/PVE/API2/LXC.pm create_vm
# --------------------------------------------------------------------------------------------


def test_an_undeclared_unprivileged_is_unprivileged_on_pve9_and_nesting_is_not_root_only() -> None:
    # create_vm (pve-container 6.0.6, PVE 9): `$unprivileged = 1 if !defined($unprivileged)`.
    wanted = decl(ostemplate=TEMPLATE, rootfs="local:8", features="nesting=1")
    assert creates_unprivileged(wanted, PVE9)
    assert create_refusals(wanted, PVE9) == []
    assert "unprivileged" not in create_form(wanted)


def test_an_undeclared_unprivileged_is_privileged_on_pve8() -> None:
    # create_vm on stable-bookworm (pve-container 5.x) has no default: the config's default 0.
    wanted = decl(ostemplate=TEMPLATE, rootfs="local:8", features="nesting=1")
    assert not creates_unprivileged(wanted, PVE8)
    assert any("Any feature on a privileged guest" in reason for reason in create_refusals(wanted, PVE8))


@pytest.mark.parametrize("release", [PVE8, PVE9], ids=["pve8", "pve9"])
def test_a_declared_unprivileged_wins_on_every_release(release: Release) -> None:
    assert creates_unprivileged(decl(unprivileged=True), release)
    assert not creates_unprivileged(decl(unprivileged=False), release)


# --------------------------------------------------------------------------------------------
# cpuunits: pve-common src/PVE/CGroup.pm clamp_cpu_shares (fakepve does not clamp)
# --------------------------------------------------------------------------------------------


def test_cpuunits_above_the_cgroup_v2_clamp_is_refused() -> None:
    # clamp_cpu_shares: `$shares = 10000 if $shares >= 10000` on cgroup v2; create_vm and update_vm
    # store the clamped value, so 20000 would read back as 10000 and differ forever. fakepve stores
    # 20000 as given; real PVE does not.
    (problem,) = problems(cpuunits=20000)
    assert problem.startswith("cpuunits: 20000 is above 10000") and "clamp_cpu_shares" in problem


@pytest.mark.parametrize("value", [0, 100, 10000])
def test_cpuunits_up_to_the_clamp_is_kept(value: int) -> None:
    assert decl(cpuunits=value).config["cpuunits"] == str(value)


# --------------------------------------------------------------------------------------------
# a new volume's size: pve-container src/PVE/LXC.pm create_disks (fakepve allocates to the byte)
# --------------------------------------------------------------------------------------------


def test_a_fractional_new_volume_is_no_phantom_resize_after_create() -> None:
    # create_disks: $size_kb = int(${size_gb} * 1024) * 1024, so rootfs local:8.3 is created with
    # size=8499M. Judged against that, nothing is left to grow.
    verdict = judge_volume("rootfs", "local:8.3", "local:subvol-100-disk-0,size=8499M", VOLUMES)
    assert not verdict.differs


def test_a_fractional_new_volume_against_fakepves_byte_exact_size_is_no_drift_either() -> None:
    # fakepve allocates int(8.3 * 1024**3) bytes; sizes compare in whole MiB, so that is 8499 MiB too.
    verdict = judge_volume(
        "rootfs", "local:8.3", f"local:subvol-100-disk-0,size={int(8.3 * 1024**3)}", VOLUMES
    )
    assert not verdict.differs


def test_a_fractional_grow_goes_to_the_mib_a_create_would_give() -> None:
    verdict = judge_volume("rootfs", "local:8.3", "local:subvol-100-disk-0,size=8G", VOLUMES)
    assert verdict.resize == "8499M"


# --------------------------------------------------------------------------------------------
# booleans on the wire: pve-common src/PVE/JSONSchema.pm check_type (fakepve takes protection=on)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("spelling", ["on", "yes", "true", "TRUE", True, 1])
def test_a_declared_boolean_is_sent_as_1(spelling: object) -> None:
    # check_type: `if ($value eq '1') ... elsif ($value eq '0')`, else "type check ('boolean')
    # failed" (the 1|true|yes|on test is commented out). fakepve takes protection=on; PVE answers 400.
    wanted = decl(protection=spelling, onboot=spelling, console=spelling, ostemplate=TEMPLATE)
    assert {wanted.config[key] for key in ("protection", "onboot", "console")} == {"1"}
    form = create_form(wanted)
    assert (form["protection"], form["onboot"], form["console"]) == ("1", "1", "1")


@pytest.mark.parametrize("spelling", ["off", "no", "false", False, 0])
def test_a_declared_false_is_sent_as_0(spelling: object) -> None:
    assert decl(protection=spelling).config["protection"] == "0"


def test_an_api_boolean_that_is_not_1_or_0_never_passes_the_vendor_constraints() -> None:
    with pytest.raises(DeclarationError, match=r"protection: type check \('boolean'\) failed - got 'on'"):
        check_form(schema.UPDATE, {"protection": "on"}, presence=False)
    check_form(schema.UPDATE, {"protection": "1"}, presence=False)


def test_a_boolean_inside_a_property_string_may_be_any_spelling_pve_parses() -> None:
    # parse_property_string reads boolean options with parse_boolean (1|on|yes|true, any case).
    assert judge(decl(features="nesting=on"), ct(features="nesting=1")).drift == []


# --------------------------------------------------------------------------------------------
# features: mount= is an ordered list (pve-container src/PVE/LXC.pm check_ct_modify_config_perm)
# --------------------------------------------------------------------------------------------


def test_mount_in_another_order_is_a_root_only_change_not_spelling() -> None:
    # check_ct_modify_config_perm: `$old ne $new` per feature; re-sorting mount= would turn a
    # no-op into a change PVE answers with 403 "changing feature flags (except nesting) is only
    # allowed for root@pam": a root write (the root lane's, or refused without one), never the token's.
    change = judge(decl(features="mount=nfs;cifs"), ct(features="mount=cifs;nfs"))
    assert change.drift == ["features"] and list(change.root) == ["features"]
    assert "Run `pct set 100 --features 'mount=nfs;cifs'` on node pve1" in change.root["features"]


def test_mount_in_the_live_order_is_no_change_and_is_sent_verbatim() -> None:
    assert (
        judge(decl(features="nesting=1,mount=nfs;cifs"), ct(features="mount=nfs;cifs,nesting=1")).drift == []
    )
    form = create_form(decl(ostemplate=TEMPLATE, unprivileged=1, features="nesting=1,mount=nfs;cifs"))
    assert "features" not in form  # mount= is root's: the lane writes it after the create
    laned = lane.create_change(LXC, decl(ostemplate=TEMPLATE, unprivileged=0, features="mount=nfs;cifs"))
    assert laned.put["features"] == "mount=nfs;cifs"


# --------------------------------------------------------------------------------------------
# formats: pve-common src/PVE/JSONSchema.pm
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        # pve_verify_mac_addr: ^[a-f0-9][02468ace](?::[a-f0-9]{2}){5}$ — the I/G bit clear.
        pytest.param(
            "name=eth0,hwaddr=01:00:5E:00:00:01", "is not a unicast MAC address", id="multicast-mac"
        ),
        pytest.param(
            "name=eth0,hwaddr=FF:FF:FF:FF:FF:FF", "is not a unicast MAC address", id="broadcast-mac"
        ),
        # pve_verify_cidrv4: prefix > 7 and <= 32.
        pytest.param("name=eth0,ip=10.0.0.1/7", "prefix 8-32", id="ipv4-prefix-7"),
        pytest.param("name=eth0,ip=10.0.0.1/33", "is not an IPv4 address/prefix", id="ipv4-prefix-33"),
        # pve_verify_cidrv6: prefix > 7 and <= 128.
        pytest.param("name=eth0,ip6=2001:db8::1/7", "prefix 8-128", id="ipv6-prefix-7"),
        # parse_property_string: key=value needs a value (^([^=]+)=(.+)$).
        pytest.param("name=eth0,bridge=", "bridge= has no value", id="empty-option"),
    ],
)
def test_nic_values_pve_refuses(value: str, fragment: str) -> None:
    (problem,) = problems(net0=value)
    assert problem.startswith("net0: ") and fragment in problem


@pytest.mark.parametrize(
    "value",
    [
        "name=eth0,hwaddr=02:00:00:00:00:01",  # locally administered unicast
        "name=eth0,hwaddr=bc:24:11:00:00:01",
        "name=eth0,ip=10.0.0.1/8",
        "name=eth0,ip=10.0.0.1/32",
        "name=eth0,ip6=2001:db8::1/128",
    ],
)
def test_nic_values_pve_takes(value: str) -> None:
    assert decl(net0=value).config["net0"] == value


@pytest.mark.parametrize(("key", "value"), [("features", "mount="), ("mp0", "tank:8,mp=/d,backup=")])
def test_an_empty_option_value_is_refused_in_every_family(key: str, value: str) -> None:
    (problem,) = problems(**{key: value})
    assert problem.startswith(f"{key}: ") and "has no value" in problem


@pytest.mark.parametrize("zone", ["host", "UTC", "Europe/Vienna", "America/New_York"])
def test_time_zones_pve_accepts(zone: str) -> None:
    # verify_ct_timezone ('host') and pve_verify_timezone ('UTC', else zone.tab's third column).
    assert decl(timezone=zone).config["timezone"] == zone


@pytest.mark.parametrize("zone", ["Mars/Olympus", "Etc/UTC", "US/Eastern", "utc"])
def test_time_zones_pve_refuses(zone: str) -> None:
    # Etc/UTC and US/Eastern are tz names but not in zone.tab, so pve_verify_timezone dies.
    (problem,) = problems(timezone=zone)
    assert (
        problem
        == f"timezone: invalid time zone '{zone}': not host, UTC or a zone of zone.tab (e.g. Europe/Vienna)"
    )


# --------------------------------------------------------------------------------------------
# PVE 8 and 9: pve-access-control src/PVE/AccessControl.pm $privgroups, pve-container Config.pm
# --------------------------------------------------------------------------------------------


def test_privilege_names_differ_between_pve8_and_pve9() -> None:
    # stable-bookworm has VM.Monitor; master (PVE 9) dropped it and added VM.GuestAgent.* and VM.Replicate.
    assert "VM.Monitor" in PRIVILEGES[8] and "VM.Monitor" not in PRIVILEGES[9]
    for name in ("VM.GuestAgent.Audit", "VM.GuestAgent.Unrestricted", "VM.Replicate"):
        assert name in PRIVILEGES[9] and name not in PRIVILEGES[8]
    assert PRIVILEGES[8] - {"VM.Monitor"} < PRIVILEGES[9]


def test_options_pve9_added_are_refused_on_pve8() -> None:
    # host-managed ($netconf_desc) and idmap ($rootfs_desc) exist on master only.
    wanted = decl(net0="name=eth0,bridge=vmbr0,host-managed=1", rootfs="local:8,idmap=passthrough")
    reasons = release_refusals(wanted, PVE8)
    assert [reason.split(":", 1)[0] for reason in reasons] == ["net0", "rootfs"]
    assert "host-managed= is an option of PVE 9; this cluster runs PVE 8.4" in reasons[0]
    assert release_refusals(wanted, PVE9) == []


@pytest.mark.parametrize(
    ("data", "major"),
    [
        ({"release": "8.4", "version": "8.4.14", "repoid": "c5e4e5a6"}, 8),
        ({"release": "9.0", "version": "9.0.10"}, 9),
    ],
)
def test_the_release_is_read_from_get_version(data: dict, major: int) -> None:
    assert parse_release(data).major == major


@pytest.mark.parametrize("release", ["7.4", "10.0"])
def test_a_release_whose_rules_are_unknown_is_refused(release: str) -> None:
    with pytest.raises(
        Refused, match=f"runs PVE {release}; this product knows the rules of PVE 8 and 9 only"
    ):
        parse_release({"release": release, "version": f"{release}.1"})


@pytest.mark.parametrize("data", [[], {"version": "9.0.1"}, {"release": "nine"}])
def test_a_malformed_version_answer_is_an_error(data: object) -> None:
    with pytest.raises(ValueError):
        parse_release(data)


# --------------------------------------------------------------------------------------------
# tag-style: pve-guest-common src/PVE/GuestHelpers.pm get_unique_tags
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("style", "declared", "stored"),
    [
        pytest.param(DEFAULT_TAG_STYLE, "Web;prod,web db", "db;prod;web", id="default-lower-sorted-unique"),
        pytest.param(
            TagStyle(case_sensitive=True), "Web;prod;web", "Web;prod;web", id="case-sensitive-sorted"
        ),
        pytest.param(TagStyle(ordered=True), "Web;prod;web;db", "web;prod;db", id="config-order-lower"),
        pytest.param(TagStyle(True, True), "b;A;a;b", "b;A;a", id="config-order-case-kept"),
    ],
)
def test_tags_are_stored_as_the_tag_style_says(style: TagStyle, declared: str, stored: str) -> None:
    assert style.unique(declared) == stored


def test_tag_order_is_spelling_by_default_and_a_change_with_ordering_config() -> None:
    wanted, live = decl(tags="web;db"), ct(tags="db;web")
    assert judge(wanted, live).drift == []
    change = judge(wanted, live, TagStyle(ordered=True))
    assert change.put == {"tags": "web;db"}


def test_tag_case_is_spelling_by_default_and_a_change_when_case_sensitive() -> None:
    wanted, live = decl(tags="Web"), ct(tags="web")
    assert judge(wanted, live).drift == []
    assert judge(wanted, live, TagStyle(case_sensitive=True)).put == {"tags": "Web"}


@pytest.mark.parametrize(
    ("data", "style"),
    [
        pytest.param({}, DEFAULT_TAG_STYLE, id="absent-is-default"),
        pytest.param(
            {"tag-style": {"case-sensitive": 1, "ordering": "config"}}, TagStyle(True, True), id="object"
        ),
        pytest.param({"tag-style": "ordering=alphabetical,shape=full"}, TagStyle(False, False), id="string"),
        pytest.param({"tag-style": "case-sensitive=1"}, TagStyle(True, False), id="string-case"),
    ],
)
def test_tag_style_is_read_from_cluster_options(data: dict, style: TagStyle) -> None:
    assert parse_tag_style(data) == style


# --------------------------------------------------------------------------------------------
# PVE's fixed refusals that still reach an apply: PVE's message and a remedy that fits
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "remedy"),
    [
        # pve-container API2/LXC.pm destroy_vm
        ("unable to destroy CT 150 - container is running", "stop it (`pct shutdown <vmid>` on the node)"),
        # destroy_vm without purge: HA resources, replication jobs (ReplicationConfig.pm)
        (
            "unable to remove CT 150 - used in HA resources and purge parameter not set.",
            "remove it from HA first (`ha-manager remove ct:<vmid>`)",
        ),
        (
            "There is a replication job '150-0' for guest '150' - Please remove that first.",
            "`pvesr delete <job>`",
        ),
        # AbstractConfig::check_protection
        ("can't remove CT 150 - protection mode enabled", "clear it first in a run of its own"),
        ("can't update CT 150 drive 'mp0' - protection mode enabled", "clear it first in a run of its own"),
        # API2/LXC.pm resize_vm
        ("unable to shrink disk size", "declare at least its live size"),
        # LXC/Config.pm update_pct_config
        ("unable to delete required option 'memory'", "PVE never deletes or changes this key"),
        # pve-manager API2/Pool.pm delete_pool / create_pool
        ("pool 'prod' is not empty (contains VM 150)", "move them out of it (sub-pools first)"),
        ("parent 'lab' of pool 'lab/web' does not exist", "The parent pool does not exist"),
        ("create pool failed: pool 'prod' already exists", "Something else created it"),
        # pve-access-control API2/ACL.pm update_acl, check_token_exist, verify_privname
        ("ACL update failed: role 'Nope' does not exist", "names something PVE does not have"),
        ("no such token 'x' for user 'a@pve'", "names something PVE does not have"),
        ("create role failed: invalid privilege 'VM.Monitor'", "PVE 8 and 9 differ"),
        # check_vmid_unused
        ("CT 150 already exists on node 'pve1'", "Another guest took this vmid"),
        # pve-network src/PVE/Network/SDN.pm lock_sdn_config, under lock_sdn_domain's errmsg
        (
            "create sdn zone object failed: invalid lock token provided! at "
            "/usr/share/perl5/PVE/Network/SDN.pm line 291.",
            "Another client holds PVE's global SDN lock",
        ),
        (
            "could not acquire lock for SDN config: invalid lock token provided! at "
            "/usr/share/perl5/PVE/Network/SDN.pm line 291.",
            "`pvesh delete /cluster/sdn/lock --force 1`",
        ),
    ],
)
def test_a_refusal_pve_explains_gets_its_remedy_not_the_journal(message: str, remedy: str) -> None:
    error = classify("PUT", "nodes/pve1/lxc/150/config", 500, message, None)
    assert message in str(error) and remedy in str(error)
    assert "journal" not in str(error)


@pytest.mark.parametrize(
    ("message", "remedy"),
    [
        # qemu-server API2/Qemu.pm destroy_vm: "VM $vmid is running - destroy failed"
        (
            "VM 210 is running - destroy failed",
            "PVE does not destroy a running VM: stop it (`qm shutdown <vmid>`",
        ),
        # pve-guest-common AbstractConfig::check_lock: "VM is locked (backup)"
        ("VM is locked (backup)", "`qm unlock <vmid>`"),
        (
            "unable to remove VM 210 - used in HA resources and purge parameter not set.",
            "`ha-manager remove vm:<vmid>`",
        ),
        ("can't remove VM 210 - protection mode enabled", "`qm set <vmid> --protection 0`"),
        # qemu-server API2/Qemu.pm's device checks (check_hostpci_perm and friends)
        ("only root can set 'hostpci0' config for non-mapped devices", "run the `qm set` PVE names"),
        ("only root can set 'usb0' config for real devices", "run the `qm set` PVE names"),
    ],
)
def test_a_vms_remedy_names_qm_and_vm_never_pct(message: str, remedy: str) -> None:
    error = str(classify("PUT", "nodes/pve1/qemu/210/config", 500, message, None))
    assert remedy in error and "pct" not in error and "ct:" not in error


def test_a_remedy_about_no_guest_in_particular_names_both_tools() -> None:
    error = str(classify("GET", "cluster/tasks", 500, "CT is locked (backup)", None))
    assert "`pct|qm unlock <vmid>`" in error


@pytest.mark.parametrize("status", [501])
def test_no_remedy_sends_a_pve_8_operator_to_pve_9(status: int) -> None:
    # PVE 8 and 9 are both supported: a missing endpoint is not "upgrade to 9".
    error = str(classify("GET", "cluster/sdn/rollback", status, "Not Implemented", None))
    assert "PVE 8 or 9" in error and "runs PVE 9" not in error


def test_a_500_pve_does_not_explain_still_points_at_the_journal() -> None:
    assert "journalctl" in str(classify("PUT", "x", 500, "got an unexpected internal error", None))


# --------------------------------------------------------------------------------------------
# a protected guest's volumes: pve-container src/PVE/LXC/Config.pm update_pct_config
# --------------------------------------------------------------------------------------------

LIVE_MP = "tank:subvol-100-disk-0,mp=/data,size=8G"


@pytest.mark.parametrize(
    "declared",
    [
        pytest.param({"mp0": "tank:8,mp=/data,backup=1"}, id="option-change"),
        pytest.param({"mp1": "tank:4,mp=/new"}, id="new-mount-point"),
    ],
)
def test_a_volume_write_to_a_protected_guest_is_refused(declared: dict) -> None:
    # check_protection for every rootfs/mpN key: "can't update CT 100 drive 'mp0' - protection mode enabled".
    (key,) = declared
    change = judge(decl(**declared), ct(protection=1, mp0=LIVE_MP))
    assert change.refuse == [
        f"{key}: CT 100 has protection: 1, and PVE refuses to change its volumes (`can't update CT 100 drive "
        f"'{key}' - protection mode enabled`). Clear protection in a run of its own first (declare "
        "protection: 0, apply, then declare this change), or run `pct set` on the node."
    ]
    assert judge(decl(**declared), ct(mp0=LIVE_MP)).refuse == []


def test_a_grow_and_other_keys_of_a_protected_guest_are_not_refused() -> None:
    # resize_vm does not check protection; neither does a scalar key.
    change = judge(decl(mp0="tank:10,mp=/data", hostname="web"), ct(protection=1, mp0=LIVE_MP))
    assert change.refuse == [] and change.resize == [("mp0", "10G")] and change.put == {"hostname": "web"}


@pytest.mark.parametrize(
    ("bridge", "taken"),
    [
        ("vmbr0", True),
        ("vmbr0.20", True),
        ("br-lan_1", True),
        ("vmbrΩ", True),  # Perl's \w on the API's decoded character string is Unicode
        ("vmbré", True),
        ("vmbr 0", False),
        ("vmbr/0", False),
        ("vmbr:0", False),
    ],
)
def test_a_bridge_name_is_one_rule_for_containers_and_vms(bridge: str, taken: bool) -> None:
    # pve-common JSONSchema.pm parse_bridge_id (format pve-bridge-id, the bridge of pve-container's
    # $netconf_desc and of qemu-server's $net_fmt): m/^[-_.\w\d]+$/ on the value pve-http-server's
    # decode_urlencoded decoded with Encode::decode('utf8'), so \w matches Unicode word characters.
    from salt_proxmox.qemu.props import parse_declaration as parse_vm

    container = {"net0": f"name=eth0,bridge={bridge}"}
    vm = {"net0": f"virtio,bridge={bridge}"}
    if taken:
        assert decl(**container).config["net0"]
        assert parse_vm("web", vmid=100, node="pve1", target="homelab", config=vm).config["net0"]
        return
    with pytest.raises(DeclarationError, match="bridge"):
        decl(**container)
    with pytest.raises(DeclarationError, match="bridge"):
        parse_vm("web", vmid=100, node="pve1", target="homelab", config=vm)
