"""A node's pveproxy certificate (``proxmox_certificate``) against the served fake cluster, whose
certificate files are ``tests.support.certificates.CertificatePve`` and whose node config is
``tests.support.acme.AcmePve`` (pve-manager ``PVE/API2/Certificates.pm``, ``PVE/API2/ACME.pm``,
``PVE/NodeConfig.pm``, ``PVE/CertHelpers.pm``).

A plan only reads; an apply writes what it showed, awaits an order's task, and a replan is clean. ACME:
the node config is written, then a new order when the served certificate does not cover a declared domain,
a renewal when it expires within ``renew_days``. Custom: compared by fingerprint, never by the key, which
is in no return, row, run cache or log. Every write restarts pveproxy, so the plan says that this minion's
own connection meets the new certificate, and refuses, naming ``proxmox:targets:<t>:verify``, unless the
new certificate verifies against that bundle or is declared ``trusted``. A failed ``info`` read is never
absence. Every key here is made when the test runs (``tests.support.certificates.issue``)."""

from __future__ import annotations

import logging
from pathlib import Path
from urllib.parse import parse_qs

import pytest
from cryptography.hazmat.primitives import serialization

from salt_proxmox.certificate import spec
from salt_proxmox.ownership.stores import MemoryStore
from salt_proxmox.simple.lifecycle import present
from tests.support.certificates import info_row, issue
from tests.support.guests import TARGET, make_context, requests_since, static_targets, writes
from tests.support.saltworld import Low, SaltWorld

NODE = "pve1"
DOMAIN = "pve1.example.org"
PLUGIN = "lab-dns"
ORDER = f"/nodes/{NODE}/certificates/acme/certificate"
INFO = f"/nodes/{NODE}/certificates/info"
ACME = {"name": NODE, "type": "acme", "domains": [{"domain": DOMAIN, "plugin": PLUGIN}], "trusted": True}


def _form(body: object) -> dict[str, str]:
    text = body.decode() if isinstance(body, bytes) else str(body or "")
    return {key: values[0] for key, values in parse_qs(text, keep_blank_values=True).items()}


def _acme_cluster(served) -> None:
    """The DNS plugin and the default account the ACME declarations name (ACMEPlugin.pm, ACMEAccount.pm)."""
    served.pve.acme_plugins[PLUGIN] = {"type": "dns", "api": "cf", "data": "Q0ZfVG9rZW49eA"}
    served.pve.acme_accounts["default"] = {
        "account": {"contact": ["mailto:ops@example.org"], "status": "valid"},
        "directory": "https://acme-staging-v02.api.letsencrypt.org/directory",
        "location": "https://acme-staging-v02.api.letsencrypt.org/acme/acct/1",
    }


def _served(served) -> dict | None:
    text = served.pve.node_certs.get(NODE)
    return info_row("pveproxy-ssl.pem", text) if text else None


def _awaited(log, kind: str) -> bool:
    """Whether the log reads the status of a task of ``kind`` on the node (fork_worker's UPID)."""
    return any(
        m == "GET"
        and p.startswith(f"/nodes/{NODE}/tasks/UPID:")
        and f":{kind}:" in p
        and p.endswith("/status")
        for m, p, _ in log
    )


def _plan_apply_replan(served, ctx, declared: dict) -> tuple:
    """The plan (nothing written), the apply's request log (it succeeds), and a clean replan."""
    start = len(served.pve.requests)
    plan = present(ctx, spec.SPEC, True, "cert", **declared)
    assert plan.result is None, plan.comment
    assert writes(requests_since(served, start)) == [], "a plan never writes"
    start = len(served.pve.requests)
    done = present(ctx, spec.SPEC, False, "cert", **declared)
    assert done.result is True, done.comment
    log = requests_since(served, start)
    again = present(ctx, spec.SPEC, True, "cert", **declared)
    assert (again.result, again.changes) == (True, {}), again.comment
    return plan, log


def test_an_acme_order_writes_the_node_config_then_orders_and_replans_clean(fresh_cluster):
    """API2/ACME.pm new_certificate: the domains come from the node config (NodeConfig.pm get_acme_conf,
    written by API2/NodeConfig.pm set_options), so the PUT precedes the POST order (force only over an
    existing pveproxy-ssl.pem), task acmenewcert, whose worker calls CertHelpers.pm set_cert_files and
    then ``systemctl reload-or-restart pveproxy``. The node serves only its pve-ssl.pem, which does not
    cover the domain."""
    _acme_cluster(fresh_cluster)
    pve = fresh_cluster.pve
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    plan, log = _plan_apply_replan(fresh_cluster, ctx, ACME)
    sent = writes(log)
    text = "\n".join(plan.comment)
    assert "task acmenewcert" in text and PLUGIN in text, text
    assert "pveproxy on pve1 restarts" in text and "this minion's API connections" in text, text
    assert [(m, p) for m, p, _ in sent] == [("PUT", f"/nodes/{NODE}/config"), ("POST", ORDER)], sent
    config = _form(sent[0][2])
    assert config["acme"] == "account=default" and config["acmedomain0"] == f"{DOMAIN},plugin={PLUGIN}"
    assert _form(sent[1][2]) == {"force": "0"}, "no pveproxy-ssl.pem before: no force"
    assert pve.node_configs[NODE]["acmedomain0"] == f"{DOMAIN},plugin={PLUGIN}"
    assert DOMAIN in _served(fresh_cluster)["san"], pve.certificates_state()
    assert pve.pveproxy_restarts.get(NODE) == 1
    assert _awaited(log, "acmenewcert"), "the order's task is awaited"


@pytest.mark.parametrize(
    ("days_left", "renew_days", "force"),
    [(10, 30, "0"), (45, 60, "1")],
    ids=["within-pve-30", "beyond-pve-30-force"],
)
def test_an_acme_certificate_expiring_within_the_window_is_renewed_then_clean(
    fresh_cluster, days_left, renew_days, force
):
    """API2/ACME.pm renew_certificate (PUT, task acmerenew): it refuses a certificate that expires later
    than 30 days unless force (PVE::Certificate::check_expiry), restarts pveproxy, then revokes the old
    certificate at the CA; the plan says so, and the order is awaited as the task it is."""
    _acme_cluster(fresh_cluster)
    pve = fresh_cluster.pve
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    declared = {**ACME, "renew_days": renew_days}
    _plan_apply_replan(fresh_cluster, ctx, declared)
    # Time passes: the served ACME certificate now expires within the window.
    pve.node_certs[NODE] = issue([DOMAIN], days=days_left, issuer=pve._cert_acme[2])[0]
    old = _served(fresh_cluster)["fingerprint"]
    restarts = pve.pveproxy_restarts[NODE]
    plan, log = _plan_apply_replan(fresh_cluster, ctx, declared)
    sent = writes(log)
    assert _awaited(log, "acmerenew"), "the renewal's task is awaited"
    text = "\n".join(plan.comment)
    assert "task acmerenew" in text and "revokes the old certificate" in text, text
    assert "pveproxy on pve1 restarts" in text, text
    assert [(m, p, _form(b)) for m, p, b in sent] == [("PUT", ORDER, {"force": force})], sent
    assert pve.revoked == [old]
    assert _served(fresh_cluster)["fingerprint"] != old
    assert pve.pveproxy_restarts[NODE] == restarts + 1


def _pillar_key(key: str) -> dict:
    return {"proxmox": {"certificates": {NODE: {"key": key}}}}


def _custom_low(cert: str) -> Low:
    return Low(
        "proxmox_certificate",
        "present",
        {"name": NODE, "type": "custom", "certificates": cert, "trusted": True,
         "secrets_pillar": f"proxmox:certificates:{NODE}"},
    )  # fmt: skip


def _traditional(key: str) -> str:
    """The same private key in another PEM spelling (``BEGIN EC PRIVATE KEY``): another text, one key."""
    loaded = serialization.load_pem_private_key(key.encode(), password=None)
    return loaded.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    ).decode()


def test_a_custom_certificate_from_pillar_is_compared_by_fingerprint_and_its_key_is_never_shown(
    fresh_cluster, tmp_path, caplog
):
    """API2/Certificates.pm upload_custom_cert (restart=1; force only over an existing file, CertHelpers.pm
    set_cert_files) through the skin, the key from the pillar mapping secrets_pillar names. info's
    fingerprint (pve-common Certificate.pm get_certificate_info) is what is compared: the same key in
    another spelling is no drift, another certificate is. The key is sent to PVE's upload and nowhere
    else: no return, comment, failure, ownership row, run cache or log line holds any line of it."""
    caplog.set_level(logging.DEBUG)
    pve = fresh_cluster.pve
    cert, key, _ = issue([DOMAIN])
    cert2, key2, _ = issue([DOMAIN, "pve.example.org"])
    rows = tmp_path / "rows.json"
    world = SaltWorld({"proxmox": {"targets": static_targets(fresh_cluster)}}, _pillar_key(key), rows)
    returns = []

    def run(low, test):
        start = len(pve.requests)
        (ret,) = world.run([low], test=test)
        returns.append(ret)
        return ret, writes(requests_since(fresh_cluster, start))

    plan, sent = run(_custom_low(cert), True)
    assert plan["result"] is None and sent == [], plan
    fingerprint = info_row("pveproxy-ssl.pem", cert)["fingerprint"]
    assert fingerprint in repr(plan["changes"]), plan["changes"]
    said = plan["comment"]
    assert "pveproxy on pve1 restarts" in said and "upload_custom_cert restart=1" in said, said
    assert "this minion's API connections to it then see it" in said, said
    done, sent = run(_custom_low(cert), False)
    assert done["result"] is True, done["comment"]
    assert [(m, p) for m, p, _ in sent] == [("POST", f"/nodes/{NODE}/certificates/custom")], sent
    upload = _form(sent[0][2])
    assert (upload["certificates"], upload["key"], upload["restart"]) == (cert, key, "1")
    assert "force" not in upload, "a create never overwrites a file this run could not read"
    assert _served(fresh_cluster)["fingerprint"] == fingerprint and pve.pveproxy_restarts[NODE] == 1
    again, sent = run(_custom_low(cert), True)
    assert (again["result"], again["changes"], sent) == (True, {}, []), again

    # The key alone changes its spelling: the certificate is the same, so nothing is planned or written.
    world.pillar.clear()
    world.pillar.update(_pillar_key(_traditional(key)))
    for test in (True, False):
        same, sent = run(_custom_low(cert), test)
        assert (same["result"], same["changes"], sent) == (True, {}, []), same

    # Another certificate is drift by its fingerprint: the upload again, with force over our own file.
    world.pillar.clear()
    world.pillar.update(_pillar_key(key2))
    plan, sent = run(_custom_low(cert2), True)
    assert plan["result"] is None and sent == [], plan
    new = info_row("pveproxy-ssl.pem", cert2)["fingerprint"]
    assert fingerprint in repr(plan["changes"]) and new in repr(plan["changes"]), plan["changes"]
    pve.fail(
        "POST", f"/nodes/{NODE}/certificates/custom", 500, "unable to open file - Permission denied", times=1
    )
    failed, sent = run(_custom_low(cert2), False)
    assert failed["result"] is False and "Permission denied" in failed["comment"], failed
    done, sent = run(_custom_low(cert2), False)
    assert done["result"] is True, done["comment"]
    assert [_form(b).get("force") for _, _, b in sent] == ["1"], sent
    assert _served(fresh_cluster)["fingerprint"] == new

    # A key of another certificate is refused by name, never quoted (pem.key_problem).
    world.pillar.clear()
    world.pillar.update(_pillar_key(key))
    wrong, sent = run(_custom_low(cert2), True)
    assert wrong["result"] is False and "key:" in wrong["comment"] and sent == [], wrong

    seen = "\n".join([repr(returns), rows.read_text(), repr(world.context), caplog.text])
    for secret in (key, _traditional(key), key2):
        body = [line for line in secret.splitlines() if "-----" not in line]
        assert body and not any(line in seen for line in body), "a line of the private key was shown"


def _verifying_targets(served, bundle: str | bool) -> dict:
    """The target reached as https://localhost:<port> (a name the fake's certificate holds), verifying TLS
    with ``bundle``."""
    targets = static_targets(served)
    targets[TARGET]["members"] = [served.url.replace("127.0.0.1", "localhost")]
    targets[TARGET]["verify"] = bundle
    return targets


@pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")
def test_the_minions_own_connection_must_verify_the_new_certificate_or_the_plan_is_refused(
    fresh_cluster, tmp_path
):
    """API2/Certificates.pm upload_custom_cert (``restart``: ``systemctl reload-or-restart pveproxy``) and
    API2/ACME.pm new_certificate's worker (the same after CertHelpers.pm set_cert_files): the node this
    minion talks to serves the new certificate at once. The target
    pins no fingerprint (pve/client.py verifies a CA bundle: proxmox:targets:<t>:verify), so the plan is
    refused, naming that setting and its bundle, unless the declared chain verifies against it for a member
    host, or the declaration says trusted: true (always needed for an ACME certificate not yet issued);
    verify: false checks nothing."""
    _acme_cluster(fresh_cluster)
    pve = fresh_cluster.pve
    ca_pem, _, ca = issue(["Lab CA"], days=365)
    bundle = tmp_path / "bundle.pem"
    bundle.write_text(Path(fresh_cluster.cafile).read_text() + ca_pem)
    ctx = make_context(_verifying_targets(fresh_cluster, str(bundle)), store=MemoryStore())
    pin = f"proxmox:targets:{TARGET}:verify checks TLS against {bundle}"
    stranger, stranger_key, _ = issue(["localhost"])
    elsewhere, elsewhere_key, _ = issue(["pve1.example.org"], issuer=ca)
    for cert, key, reason in (
        (stranger, stranger_key, "does not chain to a CA of"),
        (elsewhere, elsewhere_key, "names none of the target's member hosts (localhost)"),
    ):
        start = len(pve.requests)
        for test in (True, False):
            said = present(ctx, spec.SPEC, test, "cert", name=NODE, type="custom", certificates=cert, key=key)
            text = "\n".join(said.comment)
            assert said.result is False and pin in text and reason in text, text
            assert "Nothing was written." in said.comment
        assert writes(requests_since(fresh_cluster, start)) == [] and NODE not in pve.node_certs
    vouched = present(ctx, spec.SPEC, True, "cert", name=NODE, type="custom", certificates=stranger,
                      key=stranger_key, trusted=True)  # fmt: skip
    assert vouched.result is None, vouched.comment
    good, good_key, _ = issue(["localhost"], issuer=ca)
    plan = present(ctx, spec.SPEC, True, "cert", name=NODE, type="custom", certificates=good, key=good_key)
    assert plan.result is None, plan.comment
    done = present(ctx, spec.SPEC, False, "cert", name=NODE, type="custom", certificates=good, key=good_key)
    assert done.result is True and pve.node_certs[NODE] == good, done.comment

    acme_ctx = make_context(_verifying_targets(fresh_cluster, str(bundle)), store=MemoryStore())
    untrusted = {**ACME, "trusted": False, "adopt": True}
    start = len(pve.requests)
    said = present(acme_ctx, spec.SPEC, True, "acme", **untrusted)
    text = "\n".join(said.comment)
    assert said.result is False and pin in text and "the CA has not issued yet" in text, text
    assert writes(requests_since(fresh_cluster, start)) == []
    blind = make_context(_verifying_targets(fresh_cluster, False), store=MemoryStore())
    assert present(blind, spec.SPEC, True, "acme", **untrusted).result is None


@pytest.mark.parametrize("test", [True, False], ids=["plan", "apply"])
@pytest.mark.parametrize(
    ("kind", "path"), [("custom", INFO), ("acme", INFO), ("acme", f"/nodes/{NODE}/config")]
)
def test_a_failed_read_is_never_absence(fresh_cluster, test, kind, path):
    """API2/Certificates.pm info lists each certificate file that exists: only its answer can say that
    pveproxy-ssl.pem is absent (and NodeConfig.pm get_config that no ACME key is set). A 500 on either
    read fails the state naming the read, and nothing is written (an upload or order would replace a
    certificate this run never saw)."""
    _acme_cluster(fresh_cluster)
    pve = fresh_cluster.pve
    ctx = make_context(static_targets(fresh_cluster), store=MemoryStore())
    cert, key, _ = issue([DOMAIN])
    declared = ACME if kind == "acme" else {"name": NODE, "type": "custom", "certificates": cert, "key": key,
                                            "trusted": True}  # fmt: skip
    pve.fail("GET", path, 500, "got timeout")
    start = len(pve.requests)
    said = present(ctx, spec.SPEC, test, "cert", **declared)
    text = "\n".join(said.comment)
    assert said.result is False and said.changes == {}, said.comment
    assert path.lstrip("/") in text and "500" in text and "got timeout" in text, text
    assert writes(requests_since(fresh_cluster, start)) == []
    assert NODE not in pve.node_certs and NODE not in pve.node_configs
