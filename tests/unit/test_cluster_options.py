"""Pure rules of the cluster options (salt_proxmox.datacenter.options and .dcformats), each beside its
pve-manager (``PVE/API2/Cluster.pm`` ``get_options``/``set_options``) or pve-cluster
(``src/PVE/DataCenterConfig.pm``) source."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from salt_proxmox.datacenter import dcformats, options
from salt_proxmox.errors import DeclarationError
from salt_proxmox.pve import facts
from salt_proxmox.pve.facts import Release, TagStyle

PROXY = "http://squid:pr0xy-pass-never-shown@proxy.example.org:3128/"
#: ``GET /cluster/options`` of a file holding nothing, as ``parse_datacenter_config`` answers it.
EMPTY = {"description": "", "mac_prefix": "BC:24:11", "allowed-tags": []}


def _declare(**keys):
    return options.declare("sid", "lab", name="datacenter", **keys)


def _live(decl, **data):
    return options.parse({**EMPTY, **data}, decl)


def test_property_strings_compare_by_meaning_against_pve_s_parsed_objects():
    # parse_datacenter_config answers migration, crs, tag-style, ... parsed (parse_property_string), in
    # no key order; a sub-key spelt at its default ($migration_format type default 'secure') is no drift.
    decl = _declare(
        migration="network=10.0.0.0/24,type=secure",
        crs={"ha-rebalance-on-start": "yes", "ha": "static"},
        **{"tag-style": "case-sensitive=0,ordering=config", "next-id": "upper=2000,lower=100"},
    )
    live = _live(
        decl,
        migration={"type": "secure", "network": "10.0.0.0/24"},
        crs={"ha": "static", "ha-rebalance-on-start": 1},
        **{"tag-style": {"ordering": "config"}, "next-id": {"upper": 2000}},
    )
    assert options.SPEC.differences(live, decl) == {}
    # type stays in what is written: it is required ($migration_format: no optional).
    assert decl.values["migration"] == "network=10.0.0.0/24,type=secure"
    # The bare value of a format with a default key ($migration_format type: default_key).
    assert dcformats.canonical("migration", "insecure") == "type=insecure"


def test_pve_s_defaults_are_no_drift_and_are_written_as_delete():
    # mac_prefix: parse_datacenter_config answers BC:24:11 when unset, write_datacenter_config drops it;
    # fencing default 'watchdog'; a property string of defaults alone ($ha_format conditional) is unset.
    decl = _declare(mac_prefix="bc:24:11", fencing="watchdog", ha="shutdown_policy=conditional")
    assert decl.values == {"mac_prefix": None, "fencing": None, "ha": None}
    set_by_hand = _live(decl, mac_prefix="02:00:00", ha={"shutdown_policy": "migrate"})
    call = options.SPEC.update(decl, set_by_hand)
    assert call.form == {"delete": "ha,mac_prefix"}
    assert options.SPEC.differences(_live(decl), decl) == {}


def test_only_declared_keys_are_compared_and_a_cleared_key_is_deleted():
    # set_options: each key sent is set, the ``delete`` list removed, the rest of the file left as it is.
    decl = _declare(keyboard="de", **{"consent-text": None})
    live = _live(decl, keyboard="en-us", language="fr", **{"consent-text": "Be nice"})
    assert set(live) == {"keyboard", "consent-text", "fingerprint"}
    call = options.SPEC.update(decl, live)
    assert call.form == {"keyboard": "de", "delete": "consent-text"}


def test_the_description_compares_as_pve_reads_its_comment_lines_back():
    # write_datacenter_config writes each line of split(/\n/) as '#'-comment (trailing empty lines gone),
    # parse_datacenter_config joins them with a newline after each.
    decl = _declare(description="Lab cluster\n\nrack 4\n\n")
    assert options.SPEC.differences(_live(decl, description="Lab cluster\n\nrack 4\n"), decl) == {}


def test_lists_compare_as_sets():
    # registered-tags and user-allow-list come back as lists (split(';')), written sorted.
    decl = _declare(
        **{"registered-tags": "prod;db", "user-tag-access": "user-allow=list,user-allow-list=b;a"}
    )
    live = _live(
        decl,
        **{
            "registered-tags": ["db", "prod"],
            "user-tag-access": {"user-allow": "list", "user-allow-list": ["a", "b"]},
        },
    )
    assert options.SPEC.differences(live, decl) == {}


@pytest.mark.parametrize(
    ("keys", "key", "words"),
    [
        ({"keyboard": "dvorak"}, "keyboard", "enumeration"),  # PVE/Tools.pm kvmkeymaplist
        ({"max_workers": 0}, "max_workers", "minimum value of 1"),
        ({"mac_prefix": "01:00"}, "mac_prefix", "unicast MAC address prefix"),  # pve_verify_mac_prefix
        ({"migration": "type=fast"}, "migration", "type"),
        ({"migration": "speed=1"}, "migration", "not a sub-key of migration"),
        ({"crs": "ha-auto-rebalance-threshold=50"}, "crs", "requires ha-auto-rebalance"),  # requires =>
        ({"location": "name=rack4"}, "location", "latitude"),  # pve-node-location: latitude not optional
        ({"email_from": "root"}, "email_from", "email address"),
        ({"next-id": "lower=5000,upper=1000"}, "next-id", "boundary rule broken"),  # write_datacenter_config
        ({"migration_unsecure": 1}, "migration_unsecure", "migration: type=insecure"),
        ({"colour": "red"}, "colour", "not a datacenter.cfg key"),
        ({"language": True}, "language", "quote the text"),
        ({}, "declare at least one", "datacenter.cfg key"),
    ],
)
def test_bad_declarations_are_refused_naming_the_key(keys, key, words):
    with pytest.raises(DeclarationError) as caught:
        _declare(**keys)
    assert key in str(caught.value) and words in str(caught.value)


def test_a_read_without_sys_audit_is_refused_never_taken_as_unset():
    # get_options answers console and tag-style alone to a caller without Sys.Audit on '/'.
    with pytest.raises(ValueError, match=r"Sys\.Audit on /"):
        options.parse({"tag-style": {"ordering": "config"}, "allowed-tags": []}, _declare(keyboard="de"))


def test_none_of_the_declared_keys_set_is_absent_and_needs_no_adopt():
    decl = _declare(keyboard="de")
    assert options.parse(dict(EMPTY), decl) is None
    assert options.parse({**EMPTY, "keyboard": "de"}, decl)["keyboard"] == "de"


def test_one_object_per_cluster_whatever_the_label():
    assert options.identify("a", "lab", name="dc").identity == options.identify("b", "lab", name="x").identity


def _ctx(major: str, cluster: tuple[bool, str] = (True, "")):
    return SimpleNamespace(release=Release(major), cluster=cluster)


def test_keys_and_values_newer_than_the_cluster_are_refused_at_plan(monkeypatch):
    # replication: pve-cluster 9.0.1; crs ha-auto-rebalance and ha=dynamic, a 4-bit mac_prefix suffix:
    # 9.1.2; location: 9.1.4. PVE refuses what its schema lacks (property is not defined in schema).
    seen = {}
    monkeypatch.setattr(facts, "release", lambda ctx: ctx.release)

    def package_at_least(ctx, package, version):
        seen[package] = version
        return ctx.cluster

    monkeypatch.setattr(facts, "package_at_least", package_at_least)
    decl = _declare(replication="network=10.1.0.0/24", crs="ha=dynamic", mac_prefix="BC:24:11:0")
    refused = options.refusals(_ctx("8.4"), decl, "update", {})
    assert [line.split(":")[0] for line in refused] == ["crs", "mac_prefix", "replication"]
    assert all("the cluster runs PVE 8.4" in line for line in refused)
    assert options.refusals(_ctx("9.1"), decl, "update", {}) == []
    assert seen == {"pve-cluster": (9, 1, 2)}
    old = _ctx("9.0", (False, "pve1 runs pve-cluster 9.0.1, older than 9.1.2"))
    assert [line.split(":")[0] for line in options.refusals(old, decl, "update", {})] == ["crs", "mac_prefix"]
    # Keys of every release need no read at all.
    assert options.refusals(None, _declare(keyboard="de"), "update", {}) == []


def test_http_proxy_s_password_is_never_shown_and_compared_by_value():
    decl = _declare(http_proxy=PROXY)
    assert PROXY not in repr(decl) and "pr0xy-pass" not in str(decl.values) + str(decl.stored())
    assert decl.values["http_proxy"] == "http://squid:<password>@proxy.example.org:3128/"
    assert options.SPEC.differences(_live(decl, http_proxy=PROXY), decl) == {}
    other = _live(decl, http_proxy=PROXY.replace("pr0xy", "0ther"))
    diff = options.SPEC.differences(other, decl)
    assert diff == {
        "http_proxy": {
            "old": "http://squid:<another password>@proxy.example.org:3128/",
            "new": "http://squid:<password>@proxy.example.org:3128/",
        }
    }
    # The write sends the password; nothing else shows it.
    assert options.SPEC.update(decl, other).form == {"http_proxy": PROXY}
    # The ownership row's declaration (the password as <password>) judges a destroy without it, and a
    # write of it is refused: its password is not known.
    recorded = options.declare("sid", "lab", **decl.stored())
    assert recorded.secrets == {}
    assert options.SPEC.differences(_live(recorded, http_proxy=PROXY), recorded) == {}
    assert "password is not known" in options.refusals(None, recorded, "update", {})[0]
    # The export leaves it out and names it as a secret.
    live = options.parse(
        {**EMPTY, "http_proxy": PROXY, "keyboard": "de"}, options.identify("x", "lab", name="d")
    )
    assert options.export_values(live, None) == {"keyboard": "de"}
    assert options.SPEC.export_secrets(live) == {"http_proxy"}


def test_a_plan_of_tag_style_makes_later_guests_compare_with_it_and_a_write_reads_it_again(monkeypatch):
    ctx = SimpleNamespace(
        memo={}, target=SimpleNamespace(name="lab"), broker=SimpleNamespace(provision=lambda: "p")
    )
    key = "salt_proxmox.facts/lab/cluster/options"
    ctx.memo[key] = TagStyle()
    decl = _declare(**{"tag-style": "case-sensitive=1,ordering=config"})
    assert options.side_effects(ctx, decl, "update")
    assert ctx.memo[key] == TagStyle(case_sensitive=True, ordered=True)
    sent = []
    monkeypatch.setattr("salt_proxmox.simple.lifecycle.send", lambda ctx, credential, call: sent.append(call))
    options.send(ctx, decl, options.SPEC.update(decl, {}), "update cluster options")
    assert sent and key not in ctx.memo


def test_the_export_is_of_the_cluster_row_or_a_lone_node():
    # GET /cluster/status: a 'cluster' row in a cluster; a node in none has nodeid 0 and no cluster row.
    assert options.SPEC.export_names({"type": "cluster", "name": "lab"}) == {"name": "cluster"}
    assert options.SPEC.export_names({"type": "node", "name": "pve1", "local": 1, "nodeid": 1}) is None
    assert options.SPEC.export_names({"type": "node", "name": "pve1", "local": 1, "nodeid": 0}) == {
        "name": "cluster"
    }


def test_a_required_sub_key_with_a_default_is_written_with_what_differs():
    """pve-cluster DataCenterConfig.pm $migration_format/$replication_format: ``type`` has a default
    but no ``optional``, so PVE's check_object refuses a property string without it ("property is
    missing and it is not optional"): kept beside any other sub-key, filled in when left out; alone and
    default it is as unset."""
    from salt_proxmox.datacenter.dcformats import format_value

    assert format_value("migration", "network=10.10.0.0/24") == "network=10.10.0.0/24,type=secure"
    assert format_value("migration", {"type": "secure", "network": "10.10.0.0/24"}) == (
        "network=10.10.0.0/24,type=secure"
    )
    assert format_value("migration", "type=secure") is None
    assert format_value("replication", "network=10.20.0.0/24") == "network=10.20.0.0/24,type=secure"


def test_the_operator_s_own_text_is_never_stored_in_the_row():
    """docs/design.md §6: a description (and the consent text) is notes a human wrote, never stored in
    grains or the ownership rows; it is still compared and written."""
    decl = _declare(description="Lab cluster", **{"consent-text": "Authorised use only", "keyboard": "de"})
    assert decl.values["description"] == "Lab cluster" and decl.values["consent-text"]
    assert set(decl.stored()) & {"description", "consent-text"} == set() and decl.stored()["keyboard"] == "de"
