"""The rules of ``proxmox_node``'s kinds (salt_proxmox/node), each beside the PVE source defining it."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from salt_proxmox.errors import DeclarationError
from salt_proxmox.node import common, dns, hosts, time
from tests.support.node_config import NodeConfigPve

LIVE_DNS = {"search": "example.org", "dns1": "192.0.2.53", "dns2": "192.0.2.54", "dns3": None}


def _dns(**keys):
    return dns.declare("s", "lab", name="pve1", adopt=True, **keys)


def test_dns_put_carries_search_and_every_kept_server():
    # Nodes.pm update_dns requires search; INotify.pm update_etc_resolv_conf rewrites every nameserver
    # line from the PUT alone, so an undeclared server the node holds is sent to be kept.
    call = dns.update(_dns(dns3="192.0.2.55"), LIVE_DNS)
    assert dict(call.form) == {
        "search": "example.org", "dns1": "192.0.2.53", "dns2": "192.0.2.54", "dns3": "192.0.2.55"
    }  # fmt: skip


def test_dns_a_cleared_server_is_left_out_of_the_put():
    # update_etc_resolv_conf writes only the dnsN the PUT holds: leaving one out is PVE's way to clear it.
    call = dns.update(_dns(dns2=None), LIVE_DNS)
    assert "dns2" not in call.form and call.form["dns1"] == "192.0.2.53"
    assert dns.update(_dns(dns1="192.0.2.53"), LIVE_DNS) is None  # only the declared keys compared


@pytest.mark.parametrize(
    ("keys", "named"),
    [
        ({"search": "a.example b.example"}, "search"),  # read_etc_resolv_conf reads the first word only
        ({"search": None}, "search"),  # update_dns: search is not optional
        ({"dns1": "ns1.example.org"}, "dns1"),  # format => 'ip'
        ({"dns1": "192.0.2.1", "dns2": "192.0.2.1"}, "dnsN"),  # written once (update_etc_resolv_conf)
        ({"dns1": "0.0.0.0"}, "dnsN"),  # noqa: S104 - update_etc_resolv_conf skips it
        ({}, "declare at least one"),
    ],
)
def test_dns_bad_input_is_refused_by_name(keys, named):
    with pytest.raises(DeclarationError) as caught:
        _dns(**keys)
    assert named in str(caught.value)


def test_dns_a_gap_and_a_missing_search_are_refused_at_plan():
    # read_etc_resolv_conf numbers nameservers in file order: dns3 with dns2 unset reads back as dns2.
    (gap,) = dns.refusals(None, _dns(dns2=None, dns3="192.0.2.9"), "update", LIVE_DNS)
    assert gap.startswith("dns3:")
    (search,) = dns.refusals(None, _dns(dns1="192.0.2.1"), "update", {**LIVE_DNS, "search": None})
    assert search.startswith("search:")
    # A declared server equal to one the node keeps under another dnsN would be written once.
    assert dns.refusals(None, _dns(dns3="192.0.2.53"), "update", LIVE_DNS)


def test_dns_servers_compare_as_addresses():
    live = dns.parse({"search": "example.org", "dns1": "2001:0db8::0001"}, _dns(dns1="2001:db8::1"))
    assert live["dns1"] == "2001:db8::1" and live["dns2"] is None


HOSTS = "127.0.0.1 localhost\n192.0.2.60\told-ci\n# keep me  exactly\n192.0.2.60 twice\n\n::1 ip6-localhost\n"


def _hosts(**keys):
    return hosts.declare("s", "lab", name="pve1", adopt=True, **keys)


def test_hosts_entries_keep_every_other_line_byte_for_byte():
    decl = _hosts(entries={"192.0.2.60": ["ci.example.org", "ci"], "192.0.2.61": "web", "::1": None})
    after = hosts.written(decl, HOSTS)
    # The entry's first line replaced, its later line dropped, a new entry appended, ::1 removed.
    assert (
        after == "127.0.0.1 localhost\n192.0.2.60 ci.example.org ci\n# keep me  exactly\n\n192.0.2.61 web\n"
    )
    live = hosts.parse({"data": HOSTS, "digest": "d" * 40}, decl)
    assert live["entries"]["192.0.2.60"] == "old-ci | twice"  # two lines: never as declared
    assert hosts.update(decl, live).form == {"data": after}


def test_hosts_an_entry_is_identified_by_its_address():
    decl = _hosts(entries={"2001:db8::0001": ["v6host"]})
    live = hosts.parse({"data": "2001:db8::1 v6host\n", "digest": "d" * 40}, decl)
    assert live["entries"] == {"2001:db8::1": "v6host"} and hosts.update(decl, live) is None


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        # INotify.pm write_etc_hosts: split(/\s+/) leaves a leading empty field before an indented line.
        ("  192.0.2.1 host", "Invalid IP ''"),
        ("192.0.2.1 host # a note", "Invalid Hostname '#'"),
        ("host 192.0.2.1", "Invalid IP 'host'"),
        ("   # an indented comment", None),
        ("192.0.2.1 host.example.org host ", None),
    ],
)
def test_hosts_lines_pve_refuses(line, problem):
    assert hosts.line_problem(line) == problem


def test_hosts_a_write_keeping_a_line_pve_refuses_is_refused_at_plan():
    decl = _hosts(entries={"192.0.2.61": ["web"]})
    live = {"data": "192.0.2.1 host # note\n", "digest": "d" * 40}
    (refusal,) = hosts.refusals(None, decl, "update", live)
    assert "line 1: Invalid Hostname '#'" in refusal
    with pytest.raises(DeclarationError, match="data: line 2: Invalid IP"):
        _hosts(data="127.0.0.1 localhost\nnot-an-ip x\n")
    with pytest.raises(DeclarationError, match="exactly one"):
        _hosts(data="127.0.0.1 localhost\n", entries={"192.0.2.1": "x"})


def test_hosts_a_write_carries_the_digest_it_was_judged_on():
    # write_etc_hosts asserts it (assert_if_modified) under its lock.
    assert hosts.SPEC.write_guard(None, None, _hosts(data="::1 x\n"), {"digest": "abc"}) == {"digest": "abc"}


def test_time_zone_names_are_checked_and_the_clock_is_no_drift():
    # Systemd.pm set_timezone (PVE 9) / INotify.pm write_etc_timezone (PVE 8): "No such timezone".
    with pytest.raises(DeclarationError, match="timezone:"):
        time.declare("s", "lab", name="pve1", timezone="Mars/Olympus")
    decl = time.declare("s", "lab", name="pve1", timezone="Europe/Vienna", adopt=True)
    one = time.parse({"timezone": "UTC", "time": 1, "localtime": 1}, decl)
    two = time.parse({"timezone": "UTC", "time": 2, "localtime": 3}, decl)
    assert one == two and time.update(decl, one).form == {"timezone": "Europe/Vienna"}


def test_a_node_the_cluster_lacks_is_refused_by_name():
    client = SimpleNamespace(request=lambda method, path, credential: [{"node": "pve1"}, {"node": "pve2"}])
    ctx = SimpleNamespace(target=SimpleNamespace(name="lab"), memo={}, client=client,
                          broker=SimpleNamespace(read=lambda: None))  # fmt: skip
    assert common.resolve(ctx, {"name": "pve2"}) == ({"name": "pve2"}, [])
    with pytest.raises(DeclarationError, match="name: node pve9 is not in the cluster"):
        common.resolve(ctx, {"name": "pve9"})


@pytest.mark.parametrize("spec", [dns.SPEC, hosts.SPEC, time.SPEC], ids=lambda spec: spec.family)
def test_destroy_is_refused_and_nothing_is_ever_absent(spec):
    # pve-manager PVE/API2/Nodes.pm registers no DELETE for dns, hosts or time.
    outcome = common.absent(None, spec, True, "s", removal="destroy", name="pve1")
    assert outcome.result is False and "cannot be deleted" in "\n".join(outcome.comment)
    assert spec.is_absent(object(), None) is False


def test_the_fake_rewrites_resolv_conf_as_update_etc_resolv_conf_does():
    # INotify.pm update_etc_resolv_conf: the PUT's search and servers (each once), other lines kept.
    pve = NodeConfigPve.__new__(NodeConfigPve)
    pve.node_resolv = {
        "pve1": "search old.example\nnameserver 192.0.2.1\noptions edns0\nnameserver 192.0.2.2\n"
    }
    put = {"node": "pve1", "search": "example.org", "dns1": "192.0.2.9", "dns2": "192.0.2.9"}
    asyncio.run(pve._node_dns_update(put, None))
    assert pve.node_resolv["pve1"] == "search example.org\nnameserver 192.0.2.9\noptions edns0\n"
    assert asyncio.run(pve._node_dns({"node": "pve1"}, None)) == {
        "search": "example.org",
        "dns1": "192.0.2.9",
    }
