"""Pure rules of ACME challenge plugins (salt_proxmox.datacenter.acme), each beside its pve-manager
(``PVE/API2/ACMEPlugin.pm``, ``PVE/NodeConfig.pm``, ``PVE/CLI/pvenode.pm``) or proxmox-acme
(``PVE/ACME/Challenge.pm``, ``DNSChallenge.pm``) source."""

from __future__ import annotations

import base64
import json
from types import SimpleNamespace

import pytest

from salt_proxmox.access.privileges import simple_needs
from salt_proxmox.datacenter import acme
from salt_proxmox.errors import DeclarationError

DATA = {"CF_Token": "cf-token-never-shown", "CF_Account_ID": "acct"}


def _declare(**options):
    return acme.declare("sid", "lab", **options)


def _dns(**options):
    return _declare(name="example-dns", type="dns", api="cf", **options)


class _Client:
    """PVE's answers by path, and the calls made."""

    def __init__(self, answers):
        self.answers, self.calls = answers, []

    def request(self, method, path, credential, params=None, form=None, **_):
        self.calls.append((method, path))
        return self.answers[path]


def _ctx(answers):
    return SimpleNamespace(
        memo={}, target=SimpleNamespace(name="lab"), client=_Client(answers), broker=SimpleNamespace(read=str)
    )


SCHEMA = [
    {"id": "cf", "type": "dns"},
    {"id": "ovh", "type": "dns"},
    {"id": "standalone", "type": "standalone"},
]


def test_pve_s_defaults_are_no_drift_and_a_cleared_option_is_written_as_delete():
    # DNSChallenge.pm properties: validation-delay default 30 (setup: `// 30`); Challenge.pm: disable and
    # nodes optional (no nodes: every node).
    decl = _dns(**{"validation-delay": 30, "disable": False, "nodes": ""})
    live = acme.parse({"type": "dns", "api": "cf", "plugin": "example-dns", "digest": "d"}, decl)
    assert acme.SPEC.differences(live, decl) == {}
    assert acme.update(decl, live) is None
    # ACMEPlugin.pm update_plugin: `delete` drops the key, so PVE uses its default again.
    held = acme.parse({"type": "dns", "api": "cf", "validation-delay": 120, "nodes": "pve1"}, decl)
    assert acme.update(decl, held).form == {"delete": "nodes,validation-delay"}


def test_nodes_are_a_set():
    # Challenge.pm: nodes is a pve-node-list; PVE keeps the order written, which means nothing.
    decl = _dns(nodes=["pve2", "pve1", "pve2"])
    live = acme.parse({"type": "dns", "api": "cf", "nodes": "pve1,pve2"}, decl)
    assert decl.values["nodes"] == "pve1,pve2" and acme.SPEC.differences(live, decl) == {}


def test_data_is_sent_base64url_at_create_and_on_a_serial_bump_only_never_compared_or_shown():
    # pvenode.pm param_mapping: data is `encode_value`d, "base64url encode for storage in plugin config";
    # SectionConfig.pm check_config decodes it. GET returns it (get_plugin_config), but it is never compared.
    decl = _dns(data=DATA, secret_serial=2)
    sent = acme.create(decl).form["data"]
    assert base64.urlsafe_b64decode(sent).decode() == "CF_Token=cf-token-never-shown\nCF_Account_ID=acct\n"
    assert DATA["CF_Token"] not in repr(decl) and DATA["CF_Token"] not in json.dumps(decl.stored())
    live = acme.parse({"type": "dns", "api": "cf", "data": "b3RoZXI9MQo"}, decl)
    assert "data" not in live
    assert acme.update(decl, {**live, "secret_serial": 2}) is None
    assert acme.update(decl, {**live, "secret_serial": 1}).form == {"data": sent}
    assert acme.export_values(live, decl) == {"type": "dns", "api": "cf"}
    assert acme.SPEC.export_secrets(live) == {"data"}


@pytest.mark.parametrize(
    ("options", "key", "words"),
    [
        ({"type": "dns"}, "api", "requires it"),  # DNSChallenge.pm options: api => {} (not optional)
        ({"type": "dns", "api": "cf", "validation-delay": 172801}, "validation-delay", "above the maximum"),
        ({"type": "dns", "api": "cf", "validation-delay": -1}, "validation-delay", "below the minimum"),
        ({"type": "standalone", "api": "cf"}, "api", "unexpected property 'api'"),  # StandAlone.pm options
        ({"type": "http"}, "type", "not an ACME plugin type"),
        ({"type": "dns", "api": "cf", "data": "no equals sign"}, "data", "KEY=value"),
        ({"type": "dns", "api": "cf", "secret_serial": 1}, "secret_serial", "holds no data"),
        ({"type": "dns", "api": "cf", "colour": "red"}, "colour", "unknown key"),
    ],
)
def test_bad_declarations_are_refused_by_key(options, key, words):
    with pytest.raises(DeclarationError) as caught:
        _declare(name="example-dns", **options)
    assert any(r.startswith(f"{key}:") and words in r for r in caught.value.problems), caught.value
    assert "no equals sign" not in str(caught.value)


def test_the_built_in_standalone_id_is_never_a_dns_plugin():
    # Challenge.pm parse_config: a `standalone` section of another type is replaced by the standalone one.
    with pytest.raises(DeclarationError, match="name: standalone is PVE's built-in standalone plugin"):
        _declare(name="standalone", type="dns", api="cf")
    assert _declare(name="standalone", type="standalone").values == {"type": "standalone"}


def test_an_api_proxmox_acme_lacks_is_refused_at_plan():
    # ACMEAccount.pm challengeschema over DNSChallenge.pm get_supported_plugins: the DNS APIs this node has.
    ctx = _ctx({"cluster/acme/challenge-schema": SCHEMA})
    assert acme.refusals(ctx, _dns(), "create", None) == []
    (refusal,) = acme.refusals(ctx, _declare(name="x1", type="dns", api="nosuch"), "create", None)
    assert refusal.startswith("api: nosuch is not a DNS API") and "challenge-schema lists 2" in refusal


def test_a_type_change_is_refused_naming_a_new_id():
    # ACMEPlugin.pm update_plugin: updateSchema has no type; the plugin is looked up from the stored section.
    ctx = _ctx({"cluster/acme/challenge-schema": SCHEMA})
    decl = _declare(name="example-dns", type="standalone")
    live = acme.parse({"type": "dns", "api": "cf"}, _dns())
    (refusal,) = acme.refusals(ctx, decl, "update", live)
    assert "PVE cannot change its type" in refusal and "new id" in refusal


def test_the_built_in_standalone_plugin_is_never_deleted():
    # Challenge.pm parse_config adds it back whenever plugins.cfg lacks it: a delete would not stick.
    (refusal,) = acme.refusals(_ctx({}), acme.identify("sid", "lab", name="standalone"), "delete", {})
    assert "built-in standalone plugin" in refusal and "removal: retain" in refusal


def test_a_plugin_a_node_s_certificate_names_is_never_deleted():
    # NodeConfig.pm get_acme_conf: acmedomainN's plugin (default standalone) must exist ("plugin '<id>' for
    # domain '<domain>' not found!"); ACMEPlugin.pm delete_plugin checks nothing.
    answers = {
        "nodes": [{"node": "pve1"}, {"node": "pve2"}],
        "nodes/pve1/config": {"acmedomain0": "pve1.example.org,plugin=example-dns", "digest": "x"},
        "nodes/pve2/config": {"acmedomain3": "domain=pve2.example.org,plugin=other", "digest": "y"},
    }
    decl = acme.identify("sid", "lab", name="example-dns")
    (refusal,) = acme.refusals(_ctx(answers), decl, "delete", {})
    assert "pve1: acmedomain0 (pve1.example.org)" in refusal and "pve2" not in refusal
    assert acme.refusals(_ctx(answers), acme.identify("sid", "lab", name="unused"), "delete", {}) == []


def test_a_plugin_is_read_and_written_with_sys_modify_on_root():
    # ACMEPlugin.pm: every method, get_plugin_config and index too, checks ['perm', '/', ['Sys.Modify']].
    decl = _dns()
    (read,) = simple_needs("acme_plugin", "read", decl)
    (write,) = simple_needs("acme_plugin", "create", decl)
    # So the provision credential reads them (ObjectSpec.reads_with): the read token holds no Sys.Modify.
    assert (read.credential, read.path, read.privileges) == ("provision", "/", ("Sys.Modify",))
    assert acme.SPEC.reads_with == "provision"
    assert (write.credential, write.path, write.privileges) == ("provision", "/", ("Sys.Modify",))


def test_absence_is_pve_s_exact_answer_and_an_update_carries_the_digest():
    # ACMEPlugin.pm $modify_cfg_for_api: die "ACME plugin '$pluginid' not defined\n"; update_plugin:
    # assert_if_modified($cfg->{digest}, $digest).
    decl = _dns()
    assert acme.SPEC.is_absent(
        SimpleNamespace(status=500, message="ACME plugin 'example-dns' not defined"), decl
    )
    assert not acme.SPEC.is_absent(
        SimpleNamespace(status=500, message="ACME plugin 'other' not defined"), decl
    )
    assert acme.SPEC.write_guard(None, None, decl, {"digest": "abc"}) == {"digest": "abc"}
