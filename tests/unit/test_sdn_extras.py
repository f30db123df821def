"""SDN controllers, IPAMs and DNS servers (``salt_proxmox.sdn.extras`` and ``extras_rules``), each rule
against pve-network's source: master ``ecf98c5`` (PVE 9) and ``stable-bookworm`` (PVE 8)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from salt_proxmox.errors import DeclarationError
from salt_proxmox.pve.facts import Release
from salt_proxmox.sdn import extras, extras_rules, rules
from salt_proxmox.simple.spec import remember

TOKEN = "nb-secret-token-42"


def _ctx(release: str = "9.0") -> SimpleNamespace:
    memo = {"salt_proxmox.facts/lab/version": Release(release)}
    return SimpleNamespace(memo=memo, target=SimpleNamespace(name="lab"))


def _controller(**keys):
    return extras.CONTROLLER.declare("s", "lab", **keys)


def _ipam(**keys):
    return extras.IPAM.declare("s", "lab", **keys)


def _listing(monkeypatch, **by_kind):
    """``rules._ids`` answering ``by_kind[kind]`` rows for each listing (the read credential's view)."""
    paths = {path: kind for kind, (path, _) in rules.NAMED.items()}

    def ids(ctx, path, key, what):
        return dict(by_kind.get(paths.get(path, ""), {}))

    monkeypatch.setattr(rules, "_ids", ids)
    monkeypatch.setattr(rules, "zones", lambda ctx: dict(by_kind.get("zones", {})))


def test_peers_are_a_set_of_addresses_compared_by_meaning():
    # EvpnPlugin/BgpPlugin ``peers``: format ip-list; PVE keeps the text as sent, so order and spelling
    # are no drift.
    declared = _controller(
        name="ctl", type="bgp", node="pve1", asn=65000, peers=["2001:db8::0:1", "10.0.0.2"]
    )
    live = extras.CONTROLLER.parse(
        [{"controller": "ctl", "type": "bgp", "node": "pve1", "asn": 65000, "peers": "10.0.0.2,2001:db8::1"}],
        declared,
    )
    assert declared.values["peers"] == live["peers"] == "10.0.0.2,2001:db8::1"
    assert extras.CONTROLLER.update(declared, live) is None
    with pytest.raises(DeclarationError, match="peers: 'not-an-ip' is not an IP address"):
        _controller(name="ctl", type="evpn", asn=1, peers="10.0.0.1,not-an-ip")


@pytest.mark.parametrize(
    ("keys", "words"),
    [
        # pve-sdn-controller-id: a letter first, letters, digits, _ and -, 2-64 characters.
        (
            {"name": "9ctl", "type": "evpn", "asn": 1, "peers": "10.0.0.1"},
            "name: '9ctl' is not an SDN controller id",
        ),
        ({"name": "c" * 65, "type": "evpn", "asn": 1, "peers": "10.0.0.1"}, "2-64 characters"),
        # BgpPlugin options: node, asn and peers are not optional.
        ({"name": "ctl", "type": "bgp", "asn": 1, "peers": "10.0.0.1"}, "node: a bgp controller requires it"),
        # IsisPlugin options and pve_verify_sdn_isis_net.
        (
            {
                "name": "ctl",
                "type": "isis",
                "node": "pve1",
                "isis-domain": "d",
                "isis-ifaces": "eno1",
                "isis-net": "x",
            },
            "isis-net: value does not look like a valid isis net",
        ),
        # EvpnPlugin takes no node; BgpPlugin and IsisPlugin do.
        (
            {"name": "ctl", "type": "evpn", "asn": 1, "node": "pve1"},
            "node: not an option of a evpn controller",
        ),
        # asn: minimum 0, maximum 2**32 - 1 (EvpnPlugin properties).
        (
            {"name": "ctl", "type": "evpn", "asn": 2**32, "peers": "10.0.0.1"},
            "asn: 4294967296 is above the maximum",
        ),
        ({"name": "ctl", "type": "faucet"}, "type: expected one of evpn, bgp, isis"),
    ],
)
def test_bad_controller_declarations_are_refused_by_key(keys, words):
    with pytest.raises(DeclarationError, match=words):
        _controller(**keys)


def test_reversev6mask_is_in_no_dns_type_s_options():
    # Dns/Plugin.pm propertyList has reversev6mask; PowerdnsPlugin options take reversemaskv6 only.
    with pytest.raises(DeclarationError, match="reversev6mask: not an option of a powerdns dns"):
        extras.DNS_SERVER.declare(
            "s", "lab", name="pdns", type="powerdns", url="https://p", key="k", reversev6mask=64
        )


def test_the_token_is_sent_at_create_and_on_a_serial_bump_only_never_compared_nor_parsed():
    declared = _ipam(name="nb", type="netbox", url="https://nb/api", token=TOKEN, secret_serial=1)
    assert TOKEN not in repr(declared) and "token" not in declared.values
    assert extras.IPAM.create(declared).form["token"] == TOKEN
    # Ipams.pm index answers the section as ipams.cfg holds it: the token too. It is never kept.
    row = {"ipam": "nb", "type": "netbox", "url": "https://nb/api", "token": "other", "digest": "d1"}
    live = extras.IPAM.parse([row], declared)
    assert "token" not in live and TOKEN not in repr(live)
    assert extras.IPAM.update(declared, {**live, "secret_serial": 1}) is None, "another token is no drift"
    bumped = extras.IPAM.update(declared, {**live, "secret_serial": 0})
    assert bumped.form == {"token": TOKEN}
    assert extras.IPAM.export_values({**live}, declared) == {"type": "netbox", "url": "https://nb/api"}
    assert extras.IPAM.export_secrets(live) == {"token"}


def test_a_create_without_its_secret_is_refused_at_plan_naming_the_key():
    # NetboxPlugin options: token is not optional; the declaration read back from a row holds none.
    declared = _ipam(name="nb", type="netbox", url="https://nb/api")
    (refusal,) = extras_rules.ipam_refusals(_ctx(), declared, "create", None)
    assert refusal.startswith("token: a netbox IPAM needs it") and "secrets_pillar" in refusal
    assert extras_rules.ipam_refusals(_ctx(), declared, "update", {"type": "netbox"}) == []


def test_a_cleared_key_is_sent_as_delete():
    declared = extras.DNS_SERVER.declare("s", "lab", name="pdns", type="powerdns", url="https://p", ttl=None)
    call = extras.DNS_SERVER.update(declared, {"type": "powerdns", "url": "https://p", "ttl": 3600})
    assert call.form == {"delete": "ttl"}


def test_one_evpn_controller_per_cluster(monkeypatch):
    # EvpnPlugin on_update_hook: `only 1 global evpn controller can be defined`.
    _listing(monkeypatch, controller={"evpn1": {"controller": "evpn1", "type": "evpn"}})
    declared = _controller(name="evpn2", type="evpn", asn=65000, peers="10.0.0.1")
    (refusal,) = extras_rules.controller_refusals(_ctx(), declared, "create", None)
    assert "only 1 global evpn controller can be defined" in refusal and "evpn1" in refusal


def test_evpn_peers_or_fabric_by_release(monkeypatch):
    # PVE 9 EvpnPlugin on_update_hook: exactly one of peers / fabric; PVE 8 options: peers required, and
    # stable-bookworm's EvpnPlugin has no fabric property.
    _listing(monkeypatch)
    both = _controller(name="ev", type="evpn", asn=1, peers="10.0.0.1", fabric="f1")
    (refusal,) = extras_rules.controller_refusals(_ctx(), both, "create", None)
    assert "must have exactly one of peers / fabric defined" in refusal
    fabric = _controller(name="ev", type="evpn", asn=1, fabric="f1")
    assert extras_rules.controller_refusals(_ctx(), fabric, "create", None) == []
    (refusal,) = extras_rules.controller_refusals(_ctx("8.4"), fabric, "create", None)
    assert "fabric is PVE 9's" in refusal


def test_a_second_bgp_controller_for_a_node_is_refused(monkeypatch):
    _listing(
        monkeypatch, controller={"b1": {"type": "bgp", "node": "pve1"}, "b2": {"type": "bgp", "node": "pve2"}}
    )
    declared = _controller(name="b3", type="bgp", node="pve1", asn=65000, peers="10.0.0.1")
    (refusal,) = extras_rules.controller_refusals(_ctx(), declared, "create", None)
    assert "controller b1 is node pve1's bgp controller already" in refusal
    assert "only 1 bgp controller can be defined" in refusal


def test_the_type_cannot_change():
    declared = _controller(name="ctl", type="evpn", asn=1, peers="10.0.0.1")
    (refusal,) = extras_rules._type_change(declared, {"type": "bgp"}, "controller")
    assert "PVE cannot change its type" in refusal


def test_a_zone_may_name_a_controller_ipam_and_dns_this_run_declares_before_it(monkeypatch):
    # pve-network Zones.pm create: `<id> not existing` / `<id> don't exist` unless the object exists; one
    # this run creates before the zone (the formula requires it) will.
    _listing(monkeypatch)
    ctx = _ctx()
    remember(ctx, "sdn_controller", "evpnctl", {"type": "evpn", "asn": 65000, "peers": "10.0.0.1"})
    remember(ctx, "sdn_ipam", "nb", {"type": "netbox", "url": "https://nb"})
    remember(ctx, "sdn_dns", "pdns", {"type": "powerdns", "url": "https://p"})
    from salt_proxmox.sdn import objects

    zone = objects.ZONE.declare(
        "s", "lab", name="ev", type="evpn", controller="evpnctl", **{"vrf-vxlan": 10}, ipam="nb", dns="pdns"
    )
    assert [line for line in rules.zone_refusals(ctx, zone, "create", None) if "vrf-vxlan" not in line] == []


@pytest.mark.parametrize(
    ("spec", "kind", "zone", "words"),
    [
        (extras.CONTROLLER, "controller", {"controller": "ctl"}, "controller <id> is used by <zone>"),
        (extras.IPAM, "ipam", {"ipam": "ctl"}, "Ipams.pm delete does not look"),
        (extras.DNS_SERVER, "dns", {"reversedns": "ctl"}, "Dns.pm delete does not look"),
    ],
)
def test_nothing_a_zone_names_is_deleted_from_under_it(monkeypatch, spec, kind, zone, words):
    _listing(monkeypatch, zones={"lab": {"type": "evpn", **zone}})
    probe = spec.identify("s", "lab", name="ctl")
    refusal = {
        "controller": extras_rules.controller_refusals,
        "ipam": extras_rules.ipam_refusals,
        "dns": extras_rules.dns_refusals,
    }[kind](_ctx(), probe, "delete", {})
    assert len(refusal) == 1 and "zone(s) lab name it" in refusal[0] and words in refusal[0]


def test_the_pve_ipam_is_never_deleted(monkeypatch):
    # Ipams.pm config adds the pve IPAM to every read: a delete would leave it, and its zones' addresses.
    _listing(monkeypatch)
    (refusal,) = extras_rules.ipam_refusals(
        _ctx(), extras.IPAM.identify("s", "lab", name="pve"), "delete", {}
    )
    assert "PVE's own IPAM, never deleted" in refusal and "adopt: true" in refusal


def test_ipam_and_dns_writes_are_not_staged_and_the_plan_says_so():
    declared = _ipam(name="nb", type="netbox", url="https://nb/api", token=TOKEN)
    effects = extras_rules.direct_side_effects(_ctx(), declared, "create")
    assert "takes effect without the SDN apply" in effects[0]
    assert "PVE asks https://nb/api" in effects[1]
    assert all(TOKEN not in line for line in effects)
