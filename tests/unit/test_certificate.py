"""proxmox_certificate's rules, each beside its PVE source (salt_proxmox/certificate/spec.py, pem.py)."""

from __future__ import annotations

import time

import pytest

from salt_proxmox.certificate import pem, spec
from salt_proxmox.errors import DeclarationError
from tests.support.certificates import info_row, issue


def _custom(**extra):
    cert, key, _ = issue(["pve1.example.org"])
    return cert, key, spec.declare("s", "t", name="pve1", type="custom", certificates=cert, key=key, **extra)


def test_the_fingerprint_is_pves_sha256_spelling_and_never_the_key():
    # pve-common Certificate.pm get_certificate_info: X509_get_fingerprint(sha256), upper-case pairs and ':'.
    cert, key, decl = _custom()
    fingerprint = decl.values["fingerprint"]
    assert len(fingerprint.split(":")) == 32 and fingerprint == fingerprint.upper()
    assert fingerprint == info_row("pveproxy-ssl.pem", cert)["fingerprint"]
    assert key not in repr(decl) and key not in str(decl.stored())
    assert decl.secrets == {"key": key}


def test_a_key_of_another_certificate_is_refused_by_name_without_quoting_it():
    cert, _, _ = issue(["pve1.example.org"])
    _, other, _ = issue(["pve1.example.org"])
    with pytest.raises(DeclarationError) as caught:
        spec.declare("s", "t", name="pve1", type="custom", certificates=cert, key=other)
    assert "key:" in str(caught.value) and other not in str(caught.value)


@pytest.mark.parametrize(
    ("options", "key"),
    [
        ({"type": "custom", "certificates": "not pem"}, "certificates"),
        ({"type": "acme", "domains": ["bad_domain"]}, "domains"),
        ({"type": "acme", "domains": [f"d{i}.example.org" for i in range(7)]}, "domains"),  # $MAXDOMAINS 5
        ({"type": "acme", "domains": ["a.example.org", "A.example.org"]}, "domains"),  # get_acme_conf lc
        ({"type": "acme", "domains": ["a.example.org"], "renew_days": 0}, "renew_days"),
        ({"type": "acme", "domains": ["a.example.org"], "account": "bad name"}, "account"),
        ({"type": "acme", "domains": ["a.example.org"], "colour": "red"}, "colour"),
        ({"type": "other"}, "type"),
    ],
)
def test_bad_input_is_refused_by_name(options, key):
    with pytest.raises(DeclarationError) as caught:
        spec.declare("s", "t", name="pve1", **options)
    assert f"{key}:" in str(caught.value)


def test_the_node_config_is_read_as_get_acme_conf_reads_it():
    # NodeConfig.pm get_acme_conf: acme's domains are standalone, acmedomainN carry plugin/alias,
    # account defaults to 'default', domains lower-cased.
    conf = spec.acme_conf(
        {"acme": "domains=A.example.org", "acmedomain1": "b.example.org,plugin=dns1,alias=x.example.net"}
    )
    assert conf == {
        "account": "default",
        "domains": [
            {"domain": "a.example.org", "plugin": "standalone"},
            {"domain": "b.example.org", "plugin": "dns1", "alias": "x.example.net"},
        ],
        "keys": ["acme", "acmedomain1"],
    }
    assert spec.acme_conf({"description": "x"}) is None


def _acme(days=30):
    return spec.declare("s", "t", name="pve1", type="acme", domains=["a.example.org"], renew_days=days)


def test_an_order_when_the_certificate_does_not_cover_a_renewal_when_it_expires():
    # API2/ACME.pm: new_certificate (POST, force over an existing file), renew_certificate (PUT, force
    # when more than 30 days are left).
    decl = _acme()
    assert spec.order_call(decl, {"certificate": spec.SELF_SIGNED}).form == {"force": "0"}
    other = info_row("pveproxy-ssl.pem", issue(["b.example.org"])[0])
    assert spec.status(other, decl) == "does not cover a.example.org"
    assert spec.order_call(decl, {"certificate": spec.status(other, decl)}).method == "POST"
    soon = info_row("pveproxy-ssl.pem", issue(["a.example.org"], days=10)[0])
    state = spec.status(soon, decl)
    assert state.startswith("expires") and spec.order_call(decl, {"certificate": state}).form == {
        "force": "0"
    }
    far = info_row("pveproxy-ssl.pem", issue(["a.example.org"], days=50)[0])
    assert spec.status(far, decl) == "current" and spec.order_call(decl, {"certificate": "current"}) is None
    wide = _acme(days=60)
    state = spec.status(far, wide, now=time.time())
    assert spec.order_call(wide, {"certificate": state}) == spec.Call(
        "PUT", "nodes/pve1/certificates/acme/certificate", form={"force": "1"}
    )


def test_the_node_config_write_replaces_the_acme_keys_and_deletes_stale_ones():
    decl = _acme()
    form = spec._config_form(decl, {"keys": ["acme", "acmedomain3"]})
    assert form == {
        "acme": "account=default",
        "acmedomain0": "a.example.org,plugin=standalone",
        "delete": "acmedomain3",
    }


def test_the_trust_rule_checks_the_chain_against_the_bundle_for_a_member_host(tmp_path):
    ca_pem, _, ca = issue(["Test CA"], days=365)
    leaf_pem, _, _ = issue(["pve1.example.org"], issuer=ca)
    bundle = tmp_path / "ca.pem"
    bundle.write_text(ca_pem)
    chain = pem.chain(leaf_pem)
    assert pem.trust_problem(chain, str(bundle), ["https://pve1.example.org:8006"]) is None
    assert "names none" in pem.trust_problem(chain, str(bundle), ["https://pve2.example.org:8006"])
    stranger = pem.chain(issue(["pve1.example.org"])[0])
    assert "does not chain" in pem.trust_problem(stranger, str(bundle), ["https://pve1.example.org:8006"])
    assert pem.trust_bundle(False) is None and pem.trust_bundle(str(bundle)) == str(bundle)
