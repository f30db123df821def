"""The node network and SDN rules, pure: PVE's spellings, the refusals, the masking, the health read.

Each live value below is spelled as pve-common ``src/PVE/Network/Interfaces.pm``
(``__read_etc_network_interfaces``) or pve-network gives it back, not as the fake happens to.
"""

from __future__ import annotations

import ipaddress

import pytest

from salt_proxmox.errors import DeclarationError
from salt_proxmox.network import apply as network_apply
from salt_proxmox.network import interface, rules
from salt_proxmox.sdn import apply as sdn_apply
from salt_proxmox.sdn import objects
from tests.support.network import pending_config, read_interfaces, write_interfaces


def _declare(**over):
    declared = {"name": "vmbr1", "node": "pve1", "type": "bridge", "bridge_ports": "eno2 eno3"}
    declared.update(over)
    return interface.declare("s", "lab", **declared)


def test_listing_row_as_pve_prints_it_equals_the_declaration():
    """Ports sorted and de-duplicated, vlan-aware and autostart as 1, mtu as the text read from the
    file, comments with a newline per line, host bits of the cidr kept."""
    decl = _declare(
        bridge_ports=["eno3", "eno2", "eno3"],
        bridge_vlan_aware=True,
        autostart="yes",
        mtu=9000,
        comments="VM traffic  ",
        cidr="10.1.0.5/24",
    )
    row = {
        "iface": "vmbr1",
        "type": "bridge",
        "bridge_ports": "eno2 eno3",
        "bridge_vlan_aware": 1,
        "autostart": 1,
        "mtu": "9000",
        "comments": "VM traffic\n",
        "cidr": "10.1.0.5/24",
        "method": "static",
        "families": ["inet"],
    }
    live = interface.parse([row], decl)
    assert interface.SPEC.differences(live, decl) == {}


@pytest.mark.parametrize(
    ("over", "words"),
    [
        ({"name": "uplink", "type": "bond", "bridge_ports": None, "slaves": "eno1"}, "bondN"),
        ({"bridge_vids": "2-100"}, "VLAN-aware"),
        ({"bridge_vids": "1-100", "bridge_vlan_aware": True}, "invalid VLAN tag '1'"),
        (
            {
                "name": "bond0",
                "type": "bond",
                "bridge_ports": None,
                "slaves": "eno1",
                "bond_xmit_hash_policy": "layer2",
            },
            "balance-xor or 802.3ad",
        ),
        (
            {
                "name": "bond0",
                "type": "bond",
                "bridge_ports": None,
                "slaves": "eno1",
                "bond_mode": "active-backup",
                "bond-primary": "eno9",
            },
            "not among slaves",
        ),
        ({"name": "eno1.20", "type": "vlan", "bridge_ports": None, "vlan-raw-device": "eno2"}, "raw device"),
        ({"name": "vlanlab", "type": "vlan", "bridge_ports": None, "vlan-raw-device": "eno2"}, "vlan-id"),
        ({"type": "bond", "name": "bond0"}, "only a bridge takes it"),
        ({"comments": "0"}, "true in Perl"),
        ({"cidr": "10.1.0.1"}, "CIDR"),
        ({"cidr": "2001:db8::1/64"}, "IPv4"),
        # pve-manager PVE/API2/Network.pm: cidr is format CIDRv4 (pve_verify_cidrv4: prefix 8-32)
        ({"cidr": "10.0.0.1/7"}, "does not look like a valid IPv4 CIDR network"),
        ({"cidr6": "fd00::1/7"}, "does not look like a valid IPv6 CIDR network"),
        ({"mtu": 1000}, "minimum 1280"),
        ({"name": "9bad"}, "interface name"),
        ({"bogus": 1}, "not a key"),
        # A present declaration removes nothing: removal is interface_absent's.
        ({"removal": "destroy"}, "removal: an interface declared present is never removed"),
        ({"removal": "retain"}, "an argument of proxmox_network.interface_absent"),
    ],
)
def test_declarations_pve_would_drop_or_refuse_are_refused(over, words):
    declared = {k: v for k, v in over.items() if v is not None}
    if over.get("bridge_ports", "x") is None:
        declared["bridge_ports"] = None
    with pytest.raises(DeclarationError) as caught:
        _declare(**declared)
    assert words in str(caught.value)


def test_update_restates_the_unmanaged_address_and_deletes_a_false_flag():
    """update_network sets method manual without a cidr in the PUT; the writer prints
    bridge-vlan-aware yes for a defined 0, so a false flag must be deleted, not sent."""
    decl = _declare(bridge_vlan_aware=False)
    live = {"type": "bridge", "bridge_ports": "eno2 eno3", "bridge_vlan_aware": 1, "cidr": "10.1.0.5/24"}
    call = interface.update_call(decl, live)
    assert call.form == {
        "type": "bridge",
        "bridge_ports": "eno2 eno3",
        "cidr": "10.1.0.5/24",
        "delete": "bridge_vlan_aware",
    }
    assert interface.update_call(decl, {**live, "type": "eth"}) is None, "another type is another interface"


def test_pve_writer_quirks_the_fake_reproduces():
    """Interfaces.pm: a defined bridge_vlan_aware of 0 is written as yes; a numeric bond mode reads
    back as its name; ports read back sorted; comments gain a newline per line."""
    config = read_interfaces(
        "auto bond0\niface bond0 inet manual\n\tbond-slaves eno2 eno1\n\tbond-mode 4\n#uplink  \n\n",
        {"eno1", "eno2"},
    )
    assert config["bond0"]["bond_mode"] == "802.3ad" and config["bond0"]["slaves"] == "eno1 eno2"
    assert config["bond0"]["comments"] == "uplink\n" and config["bond0"]["autostart"] == 1
    config["vmbr9"] = {"type": "bridge", "method": "manual", "bridge_ports": "", "bridge_vlan_aware": 0}
    again = read_interfaces(write_interfaces(config), {"eno1", "eno2"})
    assert again["vmbr9"]["bridge_vlan_aware"] == 1 and again["vmbr9"]["bridge_vids"] == "2-4094"


def test_mask_hides_secret_looking_values_only():
    diff = "--- a\n+++ b\n@@ -1 +1 @@\n-\twpa-psk old-secret\n+\twpa-psk new-secret\n+\tmtu 9000\n"
    masked = network_apply.mask(diff)
    assert "secret" not in masked.replace("wpa-psk", "")
    assert "+\twpa-psk ***" in masked and "+\tmtu 9000" in masked
    assert network_apply.staged_lines(diff) == 3


class _Client:
    def __init__(self, rows):
        self.rows = rows

    def request(self, *args, **kwargs):
        return self.rows


class _Ctx:
    def __init__(self, rows):
        self.client = _Client(rows)


@pytest.mark.parametrize(
    ("rows", "reason"),
    [
        ([{"type": "cluster", "quorate": 1}, {"type": "node", "name": "pve1", "online": 1}], None),
        ([{"type": "cluster", "quorate": 0}, {"type": "node", "name": "pve1", "online": 1}], "not quorate"),
        (
            [{"type": "cluster", "quorate": 1}, {"type": "node", "name": "pve2", "online": 0}],
            "pve2 is offline",
        ),
        ([{"type": "node", "name": "solo", "online": 1}], None),
    ],
)
def test_cluster_health(rows, reason):
    """pve-manager PVE/API2/Cluster.pm status: quorate on the cluster row, online per node row."""
    found = network_apply.cluster_health(_Ctx(rows), None)
    assert found == reason if reason is None else reason in found


def test_sdn_declarations():
    """Each zone type takes its plugin's options; node lists compare sorted and comma-joined
    (encode_value); a vlan zone needs its bridge."""
    zone = objects.zone_declare(
        "s", "lab", name="lab", type="evpn", controller="c1", **{"vrf-vxlan": 100}, nodes="pve2,pve1"
    )
    assert zone.values["nodes"] == "pve1,pve2"
    with pytest.raises(DeclarationError, match="bridge: a vlan zone needs it"):
        objects.zone_declare("s", "lab", name="lab", type="vlan")
    with pytest.raises(DeclarationError, match="not a key"):
        objects.zone_declare("s", "lab", name="lab", type="simple", bridge="vmbr0")
    with pytest.raises(DeclarationError, match="SDN id"):
        objects.vnet_declare("s", "lab", name="toolongname", zone="lab")
    subnet = objects.subnet_declare(
        "s",
        "lab",
        name="10.2.0.0/24",
        vnet="v1",
        gateway="10.2.0.1",
        **{"dhcp-range": [{"start": "10.2.0.20", "end": "10.2.0.30"}]},
    )
    assert subnet.values["dhcp-range"] == ["start-address=10.2.0.20,end-address=10.2.0.30"]
    with pytest.raises(DeclarationError, match="not in"):
        objects.subnet_declare("s", "lab", name="10.2.0.0/24", vnet="v1", gateway="10.3.0.1")


def test_an_ipv4_slash_32_is_point_to_point_and_takes_a_gateway_outside_it() -> None:
    # pve-network SubnetPlugin.pm on_update_hook: $pointopoint = ip_is_ipv4($gateway) && $mask == 32;
    # the "not in subnet" check is skipped for it, and for nothing else (an IPv6 /128 is checked).
    decl = objects.subnet_declare("s", "lab", name="192.0.2.10/32", vnet="v1", gateway="192.0.2.1")
    assert decl.values["gateway"] == "192.0.2.1"
    with pytest.raises(DeclarationError, match="not in"):
        objects.subnet_declare("s", "lab", name="192.0.2.10/31", vnet="v1", gateway="192.0.2.1")
    with pytest.raises(DeclarationError, match="not in"):
        objects.subnet_declare("s", "lab", name="fd00::10/128", vnet="v1", gateway="fd00::1")


@pytest.mark.parametrize(
    ("cidr", "kept"),
    [
        ("10.2.0.5/24", "10.2.0.5/24"),  # host bits: PVE creates lab-10.2.0.5-24 and keeps them
        ("10.0.0.0/8", "10.0.0.0/8"),
        ("FD00:0::5/64", "fd00::5/64"),
        ("fd00::/8", "fd00::/8"),
        ("10.0.0.0/7", None),  # pve_verify_cidrv4: prefix length above 7
        ("0.0.0.0/0", None),
        ("fc00::/7", None),  # pve_verify_cidrv6 likewise
    ],
)
def test_subnet_cidr_as_pve_takes_it(cidr, kept):
    """pve-network SubnetPlugin.pm parse_sdn_subnet_id checks the subnet with pve-common
    pve_verify_cidrv4/v6: a prefix length of 8 to 32 (or 128), host bits not looked at."""
    if kept is None:
        with pytest.raises(DeclarationError, match=r"does not look like a valid IPv[46] CIDR network"):
            objects.subnet_declare("s", "lab", name=cidr, vnet="v1")
        return
    decl = objects.subnet_declare("s", "lab", name=cidr, vnet="v1")
    assert decl.names["name"] == kept
    zone_id = f"lab-{kept.replace('/', '-')}"
    live = objects.subnet_parse([{"subnet": zone_id, "cidr": kept, "digest": "d"}], decl)
    assert live is not None and live["id"] == zone_id
    # With host bits, the network's own address is another subnet to PVE (another id).
    given = ipaddress.ip_interface(kept)
    network = objects.subnet_parse([{"subnet": "x", "cidr": str(given.network)}], decl)
    assert (network is None) is (given.ip != given.network.network_address)


def test_subnet_listing_as_pve_answers_it():
    """Subnets.pm answers dhcp-range as objects and the cidr beside the id."""
    decl = objects.subnet_declare(
        "s",
        "lab",
        name="10.2.0.0/24",
        vnet="v1",
        snat=1,
        **{"dhcp-range": "start-address=10.2.0.20,end-address=10.2.0.30"},
    )
    row = {
        "subnet": "lab-10.2.0.0-24",
        "cidr": "10.2.0.0/24",
        "snat": 1,
        "dhcp-range": [{"start-address": "10.2.0.20", "end-address": "10.2.0.30"}],
        "digest": "d",
    }
    live = objects.subnet_parse([row], decl)
    assert objects.SUBNET.differences(live, decl) == {} and live["id"] == "lab-10.2.0.0-24"


def test_pending_config_states():
    """pve-network PVE::Network::SDN::pending_config: new, changed, deleted, and unchanged without state."""
    running = {"a": {"type": "simple", "mtu": 1500}, "b": {"type": "simple"}, "c": {"type": "simple"}}
    config = {"a": {"type": "simple", "mtu": 1400}, "b": {"type": "simple"}, "d": {"type": "simple"}}
    pending = pending_config(running, config)
    assert pending["a"]["state"] == "changed" and pending["a"]["pending"] == {"mtu": 1400}
    assert "state" not in pending["b"] and "pending" not in pending["b"]
    assert pending["c"]["state"] == "deleted" and pending["d"]["state"] == "new"


def test_one_object_one_declaration_within_a_module_of_several_families():
    """proxmox_sdn holds zones, vnets and subnets: a vnet named like a zone is another object, while
    two declarations of one interface (same node and iface) are twins; the states hand the run over."""
    from salt_proxmox.run.lowstate import Chunk
    from tests.support.salt_modules import Recorder, load

    module = load("_modules", "proxmox", {}, True)
    states, key_of = module._object_twins("sdn_vnet")
    zone = Chunk("z", "lab", "proxmox_sdn", "zone", {"type": "simple"})
    vnet = Chunk("v", "lab", "proxmox_sdn", "vnet", {"zone": "lab"})
    applied = Chunk("s", "sdn", "proxmox_sdn", "applied", {})
    assert states == ("proxmox_sdn",)
    # One function keys every chunk of the module (the run keys them once), each by its own family.
    assert key_of(zone, "demo") == {"demo/sdn_zone/lab"} and key_of(vnet, "demo") == {"demo/sdn_vnet/lab"}
    assert key_of(applied, "demo") == frozenset()
    assert module._object_twins("sdn_zone")[1](vnet, "demo") == {"demo/sdn_vnet/lab"}
    states, key_of = module._object_twins("network_interface")
    one = Chunk("a", "vmbr1", "proxmox_network", "interface", {"node": "pve1"})
    other = Chunk("b", "vmbr1", "proxmox_network", "interface_absent", {"node": "pve1"})
    elsewhere = Chunk("c", "vmbr1", "proxmox_network", "interface", {"node": "pve2"})
    assert states == ("proxmox_network",)
    assert key_of(one, "demo") == key_of(other, "demo") != key_of(elsewhere, "demo")
    states, key_of = module._object_twins("pool")
    assert states == ("proxmox_pool",) and key_of(Chunk("p", "prod", "proxmox_pool", "present", {}), "demo")

    low = {"__id__": "v", "state": "proxmox_sdn", "fun": "vnet", "name": "lab"}
    salt = Recorder("proxmox.sdn_vnet_present")
    state = load("_states", "proxmox_sdn", salt, True, low=low)
    state.__lowstate__ = [low]
    state.vnet("lab", "lab")
    ((_, _, passed),) = salt.calls
    assert passed["__low__"] is low and passed["__lowstate__"] == [low]


# ----------------------------------------------------------- what an apply step makes live


def test_staged_deletions_are_stanzas_the_staged_file_drops():
    """``diff -b -N -u interfaces interfaces.new`` (pve-common INotify.pm): a removed ``iface`` stanza is a
    deletion; one whose method changed is removed and added again, so it is not."""
    from salt_proxmox.wire.ifdiff import staged_deletions

    diff = (
        "--- /etc/network/interfaces\n+++ /etc/network/interfaces.new\n@@ -1,9 +1,6 @@\n"
        "-auto vmbr0\n-iface vmbr0 inet static\n-\taddress 10.0.0.11/24\n"
        "-iface vmbr1 inet manual\n+iface vmbr1 inet static\n+iface vmbr2 inet manual\n"
    )
    assert staged_deletions(diff) == ["vmbr0"]


def test_a_reload_task_is_judged_as_pve_lists_it():
    """pve-manager Tasks.pm ``node_tasks``: a running task has no ``status``; ``OK`` and ``WARNINGS: N``
    are not errors (pve-common UPID.pm ``status_is_error``); anything else is the error text."""
    from salt_proxmox.network.apply import reload_problem

    upid = "UPID:pve1:0000AAAA:0000BBBB:65000000:srvreload:networking:root@pam:"
    assert reload_problem("pve1", None) is None
    assert reload_problem("pve1", {"upid": upid, "status": "OK"}) is None
    assert reload_problem("pve1", {"upid": upid, "status": "WARNINGS: 2"}) is None
    running = reload_problem("pve1", {"upid": upid})
    assert running is not None and running[1] and "still running" in running[0]
    failed = reload_problem("pve1", {"upid": upid, "status": "command 'ifreload -a' failed: exit code 1"})
    assert (
        failed is not None
        and not failed[1]
        and upid in failed[0]
        and "pvesh set /nodes/pve1/network" in failed[0]
    )


# ------------------------------------------------------------------------ address method (DHCP/SLAAC)

#: A bridge as pve-common Interfaces.pm __read_etc_network_interfaces lists it from
#: ``iface vmbr1 inet dhcp`` + ``iface vmbr1 inet6 auto``: families in stanza order, each method
#: as written (``method``/``method6``), no cidr (the address is the DHCP server's).
DHCP_ROW = {
    "iface": "vmbr1",
    "type": "bridge",
    "bridge_ports": "eno2",
    "families": ["inet", "inet6"],
    "method": "dhcp",
    "method6": "auto",
    "comments": "uplink\n",
}


def test_the_fake_reads_and_writes_dhcp_and_slaac_stanzas_as_pve_does():
    """Interfaces.pm: each stanza's method is kept per family and written back as it was."""
    text = "auto vmbr1\niface vmbr1 inet dhcp\n\tbridge-ports eno2\n\niface vmbr1 inet6 auto\n#uplink\n\n"
    config = read_interfaces(text, {"eno1", "eno2"})
    assert {k: config["vmbr1"][k] for k in ("families", "method", "method6")} == {
        "families": ["inet", "inet6"],
        "method": "dhcp",
        "method6": "auto",
    }
    again = write_interfaces(config)
    assert "iface vmbr1 inet dhcp" in again and "iface vmbr1 inet6 auto" in again


def test_update_network_rewrites_the_method_from_the_put_alone():
    """pve-manager PVE/API2/Network.pm update_network: families = inet (cidr) / inet6 (cidr6) or
    [inet]; method = static with an address, else manual. The API takes no method."""
    assert rules.pve_families({"comments": "x"}) == {"inet": "manual"}
    assert rules.pve_families({"cidr": "10.0.0.2/24"}) == {"inet": "static"}
    assert rules.pve_families({"cidr6": "fd00::2/64"}) == {"inet6": "static"}
    assert rules.live_families({"families": ["inet", None], "method": "manual"}) == {"inet": "manual"}
    assert rules.live_families({}) == {"inet": "manual"}, "Interfaces.pm defaults: [inet], manual"


def test_an_update_of_a_dhcp_and_slaac_bridge_is_refused_naming_why():
    decl = _declare(bridge_ports="eno2", comments="uplink, 10G")
    live = interface.parse([DHCP_ROW], decl)
    call = interface.update_call(decl, live)
    (refusal,) = rules.address_method(decl, live, call.form)
    assert "`inet dhcp`, `inet6 auto`" in refusal and "would stage `inet manual`" in refusal
    assert "without the address it gets by dhcp (inet) and auto (inet6)" in refusal
    assert "update_network" in refusal and "/etc/network/interfaces on node pve1" in refusal


@pytest.mark.parametrize(
    ("row", "over", "refused"),
    [
        # static restated: nothing changes
        ({"families": ["inet"], "method": "static", "cidr": "10.1.0.5/24"}, {"mtu": 9000}, False),
        ({"families": ["inet"], "method": "manual"}, {"mtu": 9000}, False),
        # a static address declared over DHCP is the declaration's own change
        ({"families": ["inet"], "method": "dhcp"}, {"cidr": "10.1.0.5/24"}, False),
        # ...but the SLAAC stanza beside it would still be dropped
        ({"families": ["inet", "inet6"], "method": "dhcp", "method6": "auto"}, {"cidr": "10.1.0.5/24"}, True),
        # an inet6 static stanza is restated by its cidr6
        (
            {"families": ["inet", "inet6"], "method": "static", "method6": "static", "cidr": "10.1.0.5/24",
             "cidr6": "fd00::5/64"},
            {"mtu": 9000},
            False,
        ),
        # an inet6 manual stanza of its own would be dropped (its options and comments with it)
        ({"families": ["inet", "inet6"], "method": "manual", "method6": "manual"}, {"mtu": 9000}, True),
        ({"families": ["inet6"], "method6": "dhcp"}, {"mtu": 9000}, True),
    ],
)  # fmt: skip
def test_the_address_method_rule(row, over, refused):
    decl = _declare(bridge_ports="eno2", **over)
    live = interface.parse([{"iface": "vmbr1", "type": "bridge", "bridge_ports": "eno2", **row}], decl)
    call = interface.update_call(decl, live)
    assert bool(rules.address_method(decl, live, call.form)) is refused


# ------------------------------------------------------------------- SDN commit: each node's reload


def _upid(node: str, start: int, kind: str, user: str = "root@pam") -> str:
    """A UPID as pve-common Tools.pm upid_encode spells it (start time in hex)."""
    worker_id = "networking" if kind == "srvreload" else ""
    return f"UPID:{node}:0000A1B2:0012C3D4:{start:08X}:{kind}:{worker_id}:{user}:"


COMMIT = _upid("pve1", 0x6B0EE67E, "reloadnetworkall", "salt-provision@pve!apply")


@pytest.mark.parametrize(
    ("row", "before", "started"),
    [
        # pve-network API2/Network/SDN.pm reload: `pvesh set /nodes/<node>/network` forks the node's
        # srvreload task (pve-manager Network.pm reload_network_config) after the commit's task began.
        ({"upid": _upid("pve2", 0x6B0EE67F, "srvreload")}, None, True),
        ({"upid": _upid("pve2", 0x6B0EE67E, "srvreload")}, _upid("pve2", 0x6B0EE600, "srvreload"), True),
        # the newest is the one read before the commit: the commit started none (its warn)
        ({"upid": _upid("pve2", 0x6B0EE600, "srvreload")}, _upid("pve2", 0x6B0EE600, "srvreload"), False),
        # an older reload nobody read before (another run's), or none at all
        ({"upid": _upid("pve2", 0x6B0EE600, "srvreload")}, None, False),
        (None, None, False),
    ],
)
def test_the_reload_an_sdn_commit_started_on_a_node(row, before, started):
    assert (sdn_apply.started_by(COMMIT, row, before) is not None) is started


# -------------------------------------------------- node rules: what PVE's API and writer refuse or force

#: A node's interfaces as the listing gives them (pve-common Interfaces.pm
#: __read_etc_network_interfaces): vmbr0 with the node's address and default gateway over eno1,
#: bond0 over eno3, eno2 and eno4 spare NICs.
NODE = {
    "eno1": {"type": "eth", "method": "manual", "families": ["inet"]},
    "eno2": {"type": "eth", "method": "manual", "families": ["inet"]},
    "eno3": {"type": "eth", "method": "manual", "families": ["inet"], "autostart": 1},
    "eno4": {"type": "eth", "method": "static", "cidr": "10.9.0.4/24", "address": "10.9.0.4"},
    "bond0": {"type": "bond", "slaves": "eno3", "bond_mode": "balance-rr", "method": "manual"},
    "vmbr0": {
        "type": "bridge",
        "bridge_ports": "eno1",
        "method": "static",
        "address": "10.0.0.11",
        "cidr": "10.0.0.11/24",
        "gateway": "10.0.0.1",
    },
}


def _refusals(**declared):
    decl = interface.declare("s", "lab", **{"node": "pve1", **declared})
    return rules.node_refusals(decl, "create", interface.create_call(decl).form, NODE)


@pytest.mark.parametrize(
    ("declared", "words"),
    [
        # pve-manager PVE/API2/Network.pm create_network/update_network: $check_duplicate_gateway
        (
            {
                "name": "vmbr1",
                "type": "bridge",
                "bridge_ports": "eno2",
                "cidr": "10.1.0.1/24",
                "gateway": "10.1.0.254",
            },
            "Default gateway already exists on interface 'vmbr0'.",
        ),
        # $check_duplicate_ports
        (
            {"name": "vmbr1", "type": "bridge", "bridge_ports": "eno1"},
            "eno1 is already used on interface 'vmbr0'.",
        ),
        ({"name": "bond1", "type": "bond", "slaves": "eno3"}, "eno3 is already used on interface 'bond0'."),
        # pve-common Network/Interfaces.pm __write_etc_network_interfaces, "check vlan"
        ({"name": "eno9.20", "type": "vlan"}, "vlan 'eno9.20' - unable to find parent 'eno9'"),
        (
            {"name": "vlan30", "type": "vlan", "vlan-raw-device": "bond7"},
            "vlan 'vlan30' - unable to find parent 'bond7'",
        ),
        # "check bridgeport option": a static address on a port, from the bridge's side and the port's
        (
            {"name": "vmbr1", "type": "bridge", "bridge_ports": "eno4"},
            "iface eno4 - ip address can't be set on interface if bridged in vmbr1",
        ),
        (
            {"name": "eno1", "type": "eth", "cidr": "10.0.0.99/24"},
            "iface eno1 - ip address can't be set on interface if bridged in vmbr0",
        ),
        (
            {"name": "vmbr1", "type": "bridge", "bridge_ports": "eno8"},
            "bridge 'vmbr1' - unable to find bridge port",
        ),
        # "check bond"
        ({"name": "bond1", "type": "bond", "slaves": "eno8"}, "bond 'bond1' - unable to find slave 'eno8'"),
        (
            {"name": "bond1", "type": "bond", "slaves": "vmbr0"},
            "wrong interface type on slave 'vmbr0' ('bridge' != 'eth or bond')",
        ),
        # "check bond" forces autostart on every slave: a declared false would drift for ever
        ({"name": "eno3", "type": "eth", "autostart": False}, "slave of bond0"),
    ],
)
def test_node_rules_refuse_with_pves_words(declared, words):
    found = _refusals(**declared)
    assert any(words in line for line in found), found


@pytest.mark.parametrize(
    "declared",
    [
        {"name": "vmbr1", "type": "bridge", "bridge_ports": "eno2 eno1.10", "cidr": "10.1.0.1/24"},
        {"name": "eno1.20", "type": "vlan"},
        {"name": "vlan30", "type": "vlan", "vlan-raw-device": "bond0"},
        {"name": "bond1", "type": "bond", "slaves": "eno2", "autostart": True},
        {
            "name": "vmbr0",
            "type": "bridge",
            "bridge_ports": "eno1",
            "gateway": "10.0.0.1",
            "cidr": "10.0.0.11/24",
        },
    ],
)
def test_node_rules_let_what_pve_takes_pass(declared):
    assert _refusals(**declared) == []


def test_values_the_writer_forces_are_declared_as_it_writes_them():
    """Interfaces.pm __interface_to_string: ``bridge-vids 2-4094`` for a VLAN-aware bridge without
    bridge_vids, ``bond-mode balance-rr`` without bond_mode; the fake writes the same."""
    bridge = _declare(bridge_vlan_aware=True, bridge_vids="")
    bond = interface.declare("s", "lab", name="bond1", node="pve1", type="bond", slaves="eno2", bond_mode="")
    assert bridge.values["bridge_vids"] == "2-4094" and bond.values["bond_mode"] == "balance-rr"
    config = read_interfaces(write_interfaces({}), {"eno2", "eno3"})
    config["vmbr1"] = {"type": "bridge", "method": "manual", "bridge_ports": "eno3", "bridge_vlan_aware": 1}
    config["bond1"] = {"type": "bond", "method": "manual", "slaves": "eno2"}
    again = read_interfaces(write_interfaces(config), {"eno2", "eno3"})
    assert again["vmbr1"]["bridge_vids"] == "2-4094" and again["bond1"]["bond_mode"] == "balance-rr"
    assert again["eno2"]["autostart"] == 1, "a slave's autostart is forced on"


# ------------------------------------------ a declared empty cidr/cidr6: PVE's delete, and its gateway

#: vmbr1 as the listing gives a dual-stack bridge (Interfaces.pm __read_etc_network_interfaces maps
#: each address to cidr/address/netmask and each stanza's method to method/method6).
DUAL_ROW = {
    "iface": "vmbr1",
    "type": "bridge",
    "bridge_ports": "eno2",
    "families": ["inet", "inet6"],
    "method": "static",
    "method6": "static",
    "cidr": "10.1.0.5/24",
    "address": "10.1.0.5",
    "netmask": "24",
    "cidr6": "fd00::5/64",
    "address6": "fd00::5",
    "netmask6": "64",
}


@pytest.mark.parametrize(
    ("cleared", "kept", "families"),
    [("cidr6", "cidr", {"inet": "static"}), ("cidr", "cidr6", {"inet6": "static"})],
)
def test_a_declared_empty_address_is_planned_and_sent_as_delete(cleared, kept, families):
    """pve-manager PVE/API2/Network.pm update_network: ``delete`` drops each key listed, and for
    ``cidr``/``cidr6`` the address and netmask beside it; the family goes with its address. The
    plan shows the key cleared, the PUT lists it in ``delete`` and restates the other address, and
    the stanza PVE drops with it is the declaration's own change (not refused)."""
    decl = _declare(bridge_ports="eno2", **{cleared: ""})
    live = interface.parse([DUAL_ROW], decl)
    assert interface.SPEC.differences(live, decl) == {cleared: {"old": DUAL_ROW[cleared], "new": ""}}
    call = interface.update_call(decl, live)
    assert call.form == {"type": "bridge", "bridge_ports": "eno2", kept: DUAL_ROW[kept], "delete": cleared}
    assert rules.pve_families(call.form) == families
    assert rules.address_method(decl, live, call.form) == []


def test_a_cleared_address_of_a_dhcp_family_is_still_refused():
    """Only a static address the declaration clears may take its stanza with it: an ``inet6 auto``
    stanza has no cidr6 to clear, and the update would still drop it."""
    row = {**DUAL_ROW, "method6": "auto", "cidr6": None, "address6": None, "netmask6": None}
    decl = _declare(bridge_ports="eno2", cidr6="", mtu=9000)
    live = interface.parse([row], decl)
    (refusal,) = rules.address_method(decl, live, interface.update_call(decl, live).form)
    assert "`inet6 auto`" in refusal and "auto (inet6)" in refusal


def _gateway_refusals(declared: dict, row: dict | None):
    decl = _declare(bridge_ports="eno2", **declared)
    if row is None:
        return rules.gateway_without_address(decl, None, interface.create_call(decl).form)
    live = interface.parse([{**DUAL_ROW, **row}], decl)
    return rules.gateway_without_address(decl, live, interface.update_call(decl, live).form)


@pytest.mark.parametrize(
    ("declared", "row", "words"),
    [
        # update_network deletes only the keys listed: the gateway stays, and __interface_to_string
        # writes it into the `inet manual` stanza the update leaves
        ({"cidr": "", "cidr6": ""}, {"gateway": "10.1.0.1"}, "gateway 10.1.0.1 in an `inet manual` stanza"),
        # ... or it is lost with the inet stanza the writer no longer prints (families: inet6 only)
        ({"cidr": ""}, {"gateway": "10.1.0.1"}, "drops the gateway 10.1.0.1 with its `inet` stanza"),
        ({"cidr6": ""}, {"gateway6": "fd00::1"}, "drops the gateway6 fd00::1 with its `inet6` stanza"),
        # a gateway declared with the address cleared is sent, so written the same way
        ({"cidr6": "", "gateway6": "fd00::1"}, {"gateway6": "fd00::1"}, "gateway6 fd00::1"),
        # create_network: a gateway6 without a cidr6 is never written (no inet6 family)
        ({"gateway6": "fd00::1"}, None, "drops the gateway6 fd00::1 with its `inet6` stanza"),
        ({"gateway": "10.1.0.1"}, None, "gateway 10.1.0.1 in an `inet manual` stanza"),
    ],
)
def test_a_gateway_left_without_its_address_is_refused_at_plan(declared, row, words):
    (refusal,) = _gateway_refusals(declared, row)
    assert words in refusal, refusal
    key = "gateway6" if "gateway6" in words else "gateway"
    if row is None:
        assert "create_network" in refusal and f"leave {key} out" in refusal
    else:
        assert "update_network" in refusal and f"declare {key}: '' with it" in refusal


@pytest.mark.parametrize(
    ("declared", "row"),
    [
        ({"cidr6": "", "gateway6": ""}, {"gateway6": "fd00::1"}),  # cleared together: delete=cidr6,gateway6
        ({"cidr": "", "gateway": ""}, {"gateway": "10.1.0.1"}),
        ({"cidr6": ""}, {"gateway": "10.1.0.1"}),  # the other family's gateway keeps its address
        ({"mtu": 9000}, {"gateway": "10.1.0.1", "gateway6": "fd00::1"}),  # both addresses restated
        # an interface already holding a gateway without an address: this write does not make it so
        (
            {"mtu": 9000},
            {"families": ["inet"], "method": "manual", "cidr": None, "cidr6": None, "gateway": "10.1.0.1"},
        ),
        ({"cidr": "10.1.0.5/24", "gateway": "10.1.0.1"}, None),
    ],
)  # fmt: skip
def test_a_gateway_with_its_address_or_cleared_with_it_passes(declared, row):
    assert _gateway_refusals(declared, row) == []


def test_the_fake_deletes_an_address_as_update_network_does():
    """pve-manager PVE/API2/Network.pm update_network, ``delete=cidr6``: cidr6, address6 and
    netmask6 go, the inet6 family goes (no address6 in the PUT), gateway6 is kept in the config but
    no inet6 stanza is written for it (Interfaces.pm __write_etc_network_interfaces prints one
    stanza per family), so it reads back gone; ``delete=cidr`` with the gateway kept writes it into
    ``inet manual``."""
    import asyncio

    from tests.support.network import NetworkPve

    pve = NetworkPve()
    bridge = {"node": "pve1", "iface": "vmbr1", "type": "bridge", "bridge_ports": "eno2"}
    asyncio.run(
        pve._network_create(
            {**bridge, "cidr": "10.1.0.5/24", "cidr6": "fd00::5/64", "gateway6": "fd00::1"}, "root@pam"
        )
    )
    asyncio.run(pve._network_update({**bridge, "cidr": "10.1.0.5/24", "delete": "cidr6"}, "root@pam"))
    vmbr1 = pve.interfaces("pve1")["vmbr1"]
    assert not {"cidr6", "address6", "netmask6", "gateway6"} & set(vmbr1), vmbr1
    assert (vmbr1["families"], vmbr1["method"], vmbr1["cidr"]) == (["inet"], "static", "10.1.0.5/24")
    vmbr0 = {"node": "pve1", "iface": "vmbr0", "type": "bridge", "bridge_ports": "eno1"}
    # the node's one default gateway off vmbr0 first ($check_duplicate_gateway)
    asyncio.run(pve._network_update({**vmbr0, "cidr": "10.0.0.11/24", "delete": "gateway"}, "root@pam"))
    asyncio.run(pve._network_update({**bridge, "gateway": "10.1.0.1", "delete": "cidr"}, "root@pam"))
    vmbr1 = pve.interfaces("pve1")["vmbr1"]
    assert not {"cidr", "address", "netmask"} & set(vmbr1), vmbr1
    assert (vmbr1["method"], vmbr1["gateway"]) == ("manual", "10.1.0.1")
    assert "iface vmbr1 inet manual\n\tgateway 10.1.0.1\n" in pve.networks["pve1"]["staged"]
