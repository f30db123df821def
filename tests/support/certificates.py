"""Node certificates: test certificates made when the tests run (never a committed key), and a FakePve that
keeps each node's certificate files as pve-manager does.

fakepve 0.5.0 answers ``GET /nodes/{node}/certificates/info`` with synthesised rows and stores no upload.
``CertificatePve`` adds stateful routes (the ``_routes_*`` mechanism), written from pve-manager
``PVE/API2/Certificates.pm`` (``info``, ``upload_custom_cert``, ``remove_custom_cert``), ``PVE/API2/ACME.pm``
(``new_certificate``, ``renew_certificate``: tasks ``acmenewcert``/``acmerenew``) and ``PVE/CertHelpers.pm``
``set_cert_files`` (``Custom certificate file exists but force flag is not set.``), over pve-common
``PVE/Certificate.pm`` ``get_certificate_info``:

- ``node_certs``: per node, ``pveproxy-ssl.pem``'s PEM when there is one; ``info`` lists ``pve-root-ca.pem``,
  ``pve-ssl.pem`` (made per node, self-signed by the fake cluster CA) and it;
- ``pveproxy_restarts``: how many times each node's pveproxy was restarted (``restart=1``, every order);
- ``revoked``: the fingerprints a renewal revoked.

Differences from PVE: the CA is not contacted; an order issues a certificate for the node config's domains
valid 90 days from a CA of this module, whatever the plugins.
"""

from __future__ import annotations

import datetime
import json

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from fakepve.model import PveError
from fakepve.routing import die, param_error

from salt_proxmox.certificate import pem
from tests.support.ceph import CephPve


def issue(names: list[str], days: int = 90, issuer: tuple | None = None) -> tuple[str, str, tuple]:
    """``(certificate PEM, key PEM, (cert, key))`` for ``names`` (SANs), valid ``days`` from now, signed
    by ``issuer`` (a ``(cert, key)`` pair) or self-signed. The key exists only in memory."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0] if names else "test")])
    now = datetime.datetime.now(datetime.UTC)
    signer_cert, signer_key = issuer if issuer else (None, key)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(signer_cert.subject if signer_cert else subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in names]), critical=False)
        .add_extension(x509.BasicConstraints(ca=issuer is None, path_length=None), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(signer_key.public_key()), critical=False
        )
    )
    # What an RFC 5280 verifier (a TLS client) asks of a CA and of a server certificate.
    if issuer is None:
        usage = {"key_cert_sign": True, "crl_sign": True, "digital_signature": True}
    else:
        usage = {"key_cert_sign": False, "crl_sign": False, "digital_signature": True}
        builder = builder.add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
        )
    flags = dict.fromkeys(
        ("content_commitment", "key_encipherment", "data_encipherment", "key_agreement", "encipher_only",
         "decipher_only"),
        False,
    )  # fmt: skip
    builder = builder.add_extension(x509.KeyUsage(**usage, **flags), critical=True)
    cert = builder.sign(signer_key, hashes.SHA256())
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    return cert.public_bytes(serialization.Encoding.PEM).decode(), key_pem, (cert, key)


def info_row(filename: str, text: str) -> dict:
    """One ``pve-certificate-info`` row as ``get_certificate_info`` gives it."""
    cert = pem.chain(text)[0]
    facts = pem.facts(cert)
    return {
        "filename": filename,
        "fingerprint": facts.fingerprint,
        "san": list(facts.san),
        "notafter": facts.notafter,
        "subject": cert.subject.rfc4514_string(),
        "issuer": cert.issuer.rfc4514_string(),
        "pem": cert.public_bytes(serialization.Encoding.PEM).decode(),
    }


class CertificatePve(CephPve):
    """CephPve with each node's certificate files (module docstring)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.node_certs: dict[str, str] = {}
        self.pveproxy_restarts: dict[str, int] = {}
        self.revoked: list[str] = []
        self._cert_root = issue(["pve-root-ca"], days=3650)
        self._cert_acme = issue(["acme-ca"], days=3650)
        self._cert_own: dict[str, str] = {}

    def _routes_certificates(self):
        base = "/nodes/{node}/certificates"
        return [
            ("GET", f"{base}/info", self._cert_info),
            ("POST", f"{base}/custom", self._cert_upload),
            ("DELETE", f"{base}/custom", self._cert_remove),
            ("POST", f"{base}/acme/certificate", self._cert_order),
            ("PUT", f"{base}/acme/certificate", self._cert_renew),
        ]

    def _restart(self, node: str) -> None:
        self.pveproxy_restarts[node] = self.pveproxy_restarts.get(node, 0) + 1

    async def _cert_info(self, v, user):
        node = v["node"]
        if node not in self._cert_own:
            self._cert_own[node] = issue([node], days=700, issuer=self._cert_root[2])[0]
        rows = [
            info_row("pve-root-ca.pem", self._cert_root[0]),
            info_row("pve-ssl.pem", self._cert_own[node]),
        ]
        if node in self.node_certs:
            rows.append(info_row("pveproxy-ssl.pem", self.node_certs[node]))
        return rows

    async def _cert_upload(self, v, user):
        node = v["node"]
        if node in self.node_certs and not int(v.get("force") or 0):
            raise die(
                "Setting certificate files failed - Custom certificate file exists but force flag is not set."
            )
        if not v.get("key"):
            raise param_error(key="Attempted to upload custom certificate without (existing) key.")
        self.node_certs[node] = v["certificates"]
        if int(v.get("restart") or 0):
            self._restart(node)
        return info_row("pveproxy-ssl.pem", v["certificates"])

    async def _cert_remove(self, v, user):
        self.node_certs.pop(v["node"], None)
        if int(v.get("restart") or 0):
            self._restart(v["node"])
        return None

    def _acme_domains(self, node: str) -> list[str]:
        # NodeConfig.pm get_acme_conf: acme's domains (;-separated) and each acmedomainN's, lower-cased.
        config = getattr(self, "node_configs", {}).get(node, {})
        acme = dict(item.split("=", 1) for item in config.get("acme", "").split(",") if "=" in item)
        domains = [d.lower() for d in acme.get("domains", "").split(";") if d]
        domains += [
            config[key].split(",")[0].lower() for key in sorted(config) if key.startswith("acmedomain")
        ]
        if not domains:
            raise PveError(400, "ACME domain list in node configuration is missing!")
        return sorted(domains)

    async def _cert_order(self, v, user):
        node = v["node"]
        if node in self.node_certs and not int(v.get("force") or 0):
            raise param_error(force="Custom certificate exists but 'force' is not set.")
        domains = self._acme_domains(node)

        async def worker():
            self.node_certs[node] = issue(domains, 90, self._cert_acme[2])[0]
            self._restart(node)

        return await self.task(node, "acmenewcert", None, user, worker)

    async def _cert_renew(self, v, user):
        node = v["node"]
        if node not in self.node_certs:
            raise die("No current (custom) certificate found, please order a new certificate!")
        row = info_row("pveproxy-ssl.pem", self.node_certs[node])
        soon = row["notafter"] - datetime.datetime.now(datetime.UTC).timestamp() < 30 * 86400
        if not soon and not int(v.get("force") or 0):
            raise param_error(
                force="Certificate does not expire within the next 30 days, and 'force' is not set."
            )
        domains = self._acme_domains(node)

        async def worker():
            self.revoked.append(row["fingerprint"])
            self.node_certs[node] = issue(domains, 90, self._cert_acme[2])[0]
            self._restart(node)

        return await self.task(node, "acmerenew", None, user, worker)

    def certificates_state(self) -> str:
        """The nodes' served certificates, for a test's failure message (no key is kept)."""
        return json.dumps(sorted(self.node_certs))
