"""Where ``proxmox.export`` puts each object (the formula's sections, ``formula/proxmox/init.sls``), what
its filters keep, and the pillar file it writes (``salt_proxmox.export.pillar``)."""

from __future__ import annotations

import pytest
import yaml

from salt_proxmox import registry
from salt_proxmox.export.objects import Exported, default_values
from salt_proxmox.export.pillar import Export, Filters, family_filter, place, secret_note, to_yaml
from salt_proxmox.firewall.scope import export_place
from tests.support.formula import formula


def _family(name: str) -> registry.Family:
    return next(family for family in registry.FAMILIES if family.name == name)


def _placed(name: str, names: dict, declaration: dict, kind: int = 0) -> dict:
    family = _family(name)
    pillar: dict = {}
    place(pillar, family, family.kinds[kind], Exported(names, declaration, "x"))
    return pillar


def test_each_family_lands_where_the_formula_reads_it() -> None:
    assert _placed("pool", {"name": "prod"}, {"name": "prod", "comment": "c", "adopt": True}) == {
        "proxmox": {"pools": {"prod": {"comment": "c", "adopt": True}}}
    }
    assert _placed("policy", {"name": "p"}, {"name": "p", "fragments": ["x\n"], "adopt": True}) == {
        "openbao": {"policies": {"p": {"fragments": ["x\n"], "adopt": True}}}
    }
    iface = {"name": "vmbr1", "node": "pve1", "type": "bridge", "adopt": True}
    assert _placed("network", {"name": "vmbr1", "node": "pve1"}, iface) == {
        "proxmox": {"networks": {"pve1": {"interfaces": {"vmbr1": {"type": "bridge", "adopt": True}}}}}
    }
    subnet = {"name": "10.0.0.0/24", "vnet": "lab", "gateway": "10.0.0.1", "adopt": True}
    assert _placed("sdn", {"name": "10.0.0.0/24", "vnet": "lab"}, subnet, kind=5) == {
        "proxmox": {"sdn": {"subnets": {"lab-10.0.0.0-24": {"cidr": "10.0.0.0/24", "vnet": "lab",
                                                           "gateway": "10.0.0.1", "adopt": True}}}}
    }  # fmt: skip
    acl = {"path": "/vms", "role": "PVEAuditor", "user": "ops@pve", "propagate": True, "adopt": True}
    assert list(_placed("acl", acl, acl)["proxmox"]["acls"]) == ["PVEAuditor-ops-pve-on-vms"]
    root = {**acl, "path": "/"}
    assert list(_placed("acl", root, root)["proxmox"]["acls"]) == ["PVEAuditor-ops-pve-on-root"]
    ct = {"vmid": 120, "node": "pve1", "hostname": "dns1", "adopt": True}
    assert _placed("lxc", {"vmid": 120, "node": "pve1"}, ct) == {"proxmox": {"lxc": {"dns1": ct}}}


def test_the_placed_pillar_renders_one_present_state_per_object() -> None:
    """What the formula makes of an export: the object's own state, with adopt: true."""
    pillar = _placed("pool", {"name": "prod"}, {"name": "prod", "comment": "c", "adopt": True})
    states = formula().estate(pillar)
    assert states["proxmox-pool-prod"] == {
        "proxmox_pool.present": [{"name": "prod"}, {"adopt": True}, {"comment": "c"}]
    }


def test_filters_keep_only_objects_that_have_and_match_the_attribute() -> None:
    guest = _family("lxc")
    by_node = Filters(node="pve1")
    assert by_node.keeps(guest, {"vmid": 1, "node": "pve1", "pool": ""})
    assert not by_node.keeps(guest, {"vmid": 1, "node": "pve2", "pool": ""})
    assert not by_node.keeps(_family("pool"), {"name": "prod"}), "a cluster-wide object has no node"
    by_pool = Filters(pool="prod")
    assert by_pool.keeps(_family("pool"), {"name": "prod"}) and by_pool.keeps(
        guest, {"vmid": 1, "pool": "prod"}
    )
    assert not by_pool.keeps(guest, {"vmid": 2, "pool": "lab"})
    assert Filters(vmid=5).keeps(guest, {"vmid": 5}) and not Filters(vmid=5).keeps(guest, {"vmid": 6})


def test_the_family_filter_names_the_families_when_one_is_unknown() -> None:
    assert family_filter("pool, lxc") == {"pool", "lxc"} and family_filter(None) is None
    with pytest.raises(ValueError, match=r"no such family tape .*lxc"):
        family_filter("tape")


def test_a_live_object_declares_its_values_not_its_digest_identity_or_empty_ones() -> None:
    live = {"name": "x", "comment": "", "cidr": "10.0.0.0/24", "digest": "abc", "privs": []}
    assert default_values(live, {"name": "x"}) == {"cidr": "10.0.0.0/24"}


def test_the_pillar_file_holds_the_notes_as_comments_and_the_pillar_as_yaml() -> None:
    done = Export({"proxmox": {"pools": {"prod": {"adopt": True}}}}, ["VM 210: cipassword is a secret"], 1)
    text = to_yaml(done, "Exported\nby proxmox.export")
    assert text.splitlines()[:3] == [
        "# Exported",
        "# by proxmox.export",
        "# NOTE: VM 210: cipassword is a secret",
    ]
    assert yaml.safe_load(text) == done.pillar


def test_a_firewall_object_is_placed_by_its_scope_for_the_filters() -> None:
    """A firewall object names its scope (``scope`` of a guest's IP set or alias, ``name`` of options and a
    rule list), never ``vmid`` or ``node``: it is placed by that scope's guest (the guest index) or node."""
    places = {"vm/300": {"vmid": 300, "node": "pve2", "pool": "lab"}}
    firewall = _family("firewall")
    assert export_place(places, {"name": "admins", "scope": "vm/300"}) == places["vm/300"]
    assert export_place(places, {"name": "vm/300"}) == places["vm/300"]
    assert export_place(places, {"name": "node/pve1"}) == {"node": "pve1"}
    assert (
        export_place(places, {"name": "admins"}) == {} and export_place(places, {"name": "group/web"}) == {}
    )
    assert export_place(places, {"name": "ct/120"}) == {}, "a guest the index does not list is nowhere"
    placed = {**export_place(places, {"name": "vm/300"}), "name": "vm/300"}
    assert Filters(vmid=300).keeps(firewall, placed) and Filters(node="pve2").keeps(firewall, placed)
    assert Filters(pool="lab").keeps(firewall, placed) and not Filters(node="pve1").keeps(firewall, placed)


@pytest.mark.parametrize("guest_first", [True, False])
def test_a_guest_s_own_alias_and_a_cluster_alias_named_as_its_label_are_both_kept(guest_first: bool) -> None:
    """pve-firewall takes ``vm-510-gw`` as an alias name (``Firewall.pm`` ``$ip_alias_pattern``), the
    label a guest's own alias ``gw`` is placed under: whichever is read first, both are kept, the
    cluster's under its name (the key is its name) and the guest's under a free label."""
    family = _family("firewall_alias")
    own = {"name": "gw", "scope": "vm/510", "cidr": "10.0.0.1", "adopt": True}
    cluster = {"name": "vm-510-gw", "cidr": "10.9.9.9", "adopt": True}
    pillar: dict = {}
    for declaration in (own, cluster) if guest_first else (cluster, own):
        names = {key: declaration[key] for key in ("name", "scope") if key in declaration}
        place(pillar, family, family.kinds[0], Exported(names, dict(declaration), "x"))
    aliases = pillar["proxmox"]["firewall_aliases"]
    assert aliases == {"vm-510-gw": {"cidr": "10.9.9.9", "adopt": True}, "vm-510-gw-2": own}, aliases


@pytest.mark.parametrize(
    ("name", "kind", "declaration", "secret"),
    [
        ("cluster_options", 0, {"name": "cluster", "keyboard": "de"}, "http_proxy"),
        ("notification", 0, {"name": "ops-mail", "type": "smtp", "server": "mail.example.org"}, "password"),
        ("metric_server", 0, {"name": "influx", "type": "influxdb", "server": "influx.example.org"}, "token"),
        ("acme", 0, {"name": "lab-dns", "type": "dns", "api": "cf"}, "data"),
        ("sdn", 1, {"name": "netbox", "type": "netbox", "url": "https://nb.example.org/api"}, "token"),
        ("sdn", 2, {"name": "pdns", "type": "powerdns", "url": "https://pdns.example.org"}, "key"),
        ("storage", 0, {"name": "pbs", "type": "pbs", "server": "192.0.2.9"}, "password"),
    ],
)
def test_a_secret_s_note_names_the_pillar_path_its_state_reads_it_from(
    name: str, kind: int, declaration: dict, secret: str
) -> None:
    """A secret is never exported, whether PVE shows it (``http_proxy``, ACME ``data``, an IPAM ``token``
    to an auditor) or not: the note names the pillar path its value goes to, and that is the path the
    formula gives the entry's state as ``secrets_pillar``, so the value put there reaches the state."""
    family = _family(name)
    pillar: dict = {}
    found = Exported({"name": declaration["name"]}, {**declaration, "adopt": True}, "x", (secret,))
    path = place(pillar, family, family.kinds[kind], found)
    note = secret_note("x", path, secret)
    assert f" at {':'.join(path)}:{secret} in a secrets pillar file" in note
    assert "never shown" not in note, "PVE shows some of them to an auditor"
    entry = pillar
    for part in path:
        entry = entry[part]
    entry[secret] = "s3cret-for-a-unit-test"
    states = formula().estate(pillar)
    given = [
        arg["secrets_pillar"]
        for body in states.values()
        for args in body.values()
        for arg in args
        if "secrets_pillar" in arg
    ]
    assert given == [list(path)]
    assert "s3cret-for-a-unit-test" not in repr(states), "a secret is never a state argument"
