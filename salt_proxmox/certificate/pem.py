"""What a node's certificate says, read with the ``cryptography`` library: fingerprints, names, expiry,
and whether this minion's own API connection would trust it.

Sources: pve-common ``src/PVE/Certificate.pm`` ``get_certificate_info`` (``fingerprint`` is
``Net::SSLeay::X509_get_fingerprint($cert, 'sha256')``: upper-case hex pairs joined by ``:``; ``san``
the DNS names and IP addresses; ``notafter`` epoch seconds) and ``strip_leading_text`` (text before
the first ``-----BEGIN`` is dropped); pve-manager ``PVE/API2/Certificates.pm`` ``upload_custom_cert``
(``certificates``: format ``pem-certificate-chain``, the leaf first; ``key``: ``pem-string``).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import urlsplit

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.x509.verification import PolicyBuilder, Store, VerificationError


@dataclass(frozen=True)
class Facts:
    """One certificate: ``fingerprint`` (SHA-256 as PVE prints it), ``san`` (DNS names lower-cased and
    IP addresses, sorted), ``notafter`` (epoch seconds, UTC)."""

    fingerprint: str
    san: tuple[str, ...]
    notafter: int


def chain(text: object) -> list[x509.Certificate]:
    """The certificates of a PEM chain (``pem-certificate-chain``), the leaf first. Raises ValueError
    for no text, or text holding no PEM certificate."""
    if not isinstance(text, str) or "-----BEGIN CERTIFICATE-----" not in text:
        raise ValueError("expected a PEM certificate chain (pem-certificate-chain), the leaf first")
    try:
        return x509.load_pem_x509_certificates(text.encode())
    except ValueError:
        raise ValueError("not a readable PEM certificate chain (pem-certificate-chain)") from None


def facts(cert: x509.Certificate) -> Facts:
    """The ``Facts`` of one certificate, as ``get_certificate_info`` shows them."""
    digest = cert.fingerprint(hashes.SHA256()).hex().upper()
    names: list[str] = []
    try:
        ext = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        names = [n.lower() for n in ext.get_values_for_type(x509.DNSName)]
        names += [str(ip) for ip in ext.get_values_for_type(x509.IPAddress)]
    except x509.ExtensionNotFound:
        pass
    return Facts(
        fingerprint=":".join(digest[i : i + 2] for i in range(0, len(digest), 2)),
        san=tuple(sorted(set(names))),
        notafter=int(cert.not_valid_after_utc.timestamp()),
    )


def key_problem(key: object, leaf: x509.Certificate) -> str | None:
    """None when ``key`` is a PEM private key whose public key is the certificate's, else the reason
    (never quoting the key)."""
    if not isinstance(key, str) or "-----BEGIN" not in key:
        return "expected a PEM private key (pem-string), never shown"
    try:
        private = serialization.load_pem_private_key(key[key.index("-----BEGIN") :].encode(), password=None)
    except (ValueError, TypeError):
        return "not a readable unencrypted PEM private key (pveproxy cannot use an encrypted one)"
    fmt = (serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    if private.public_key().public_bytes(*fmt) != leaf.public_key().public_bytes(*fmt):
        return "it is not the key of the certificate's public key (the leaf, the chain's first)"
    return None


def covers(san: Iterable[str], domains: Iterable[str]) -> list[str]:
    """The ``domains`` a certificate with names ``san`` does not cover (exact names, lower-cased: PVE
    orders exactly its configured domains, ``API2/ACME.pm`` ``$order_certificate``)."""
    held = {name.lower() for name in san}
    return sorted(domain for domain in domains if domain.lower() not in held)


def when(epoch: int) -> str:
    """An epoch as an ISO date (UTC)."""
    return datetime.fromtimestamp(epoch, tz=UTC).strftime("%Y-%m-%d")


def trust_bundle(verify: bool | str) -> str | None:
    """The CA bundle the minion's connection verifies with: the path ``verify`` names, requests' own
    (certifi's) for ``True``, None for ``False`` (nothing is checked)."""
    if verify is False:
        return None
    if isinstance(verify, str):
        return verify
    import requests.certs

    return requests.certs.where()


def trust_problem(certs: list[x509.Certificate], bundle: str, members: Iterable[str]) -> str | None:
    """None when the chain ``certs`` (leaf first) verifies against the CA certificates of ``bundle``
    for one of the target's member hosts (``members``: ``https://host:8006`` URLs), now, as a TLS
    client checks it; else the reason. A bundle that is a directory is not read: the reason says so."""
    try:
        with open(bundle, "rb") as handle:
            roots = x509.load_pem_x509_certificates(handle.read())
    except (OSError, ValueError):
        return f"the CA bundle {bundle} could not be read as PEM certificates"
    builder = PolicyBuilder().store(Store(roots)).time(datetime.now(UTC))
    hosts = [urlsplit(member).hostname or "" for member in members]
    named = [host for host in hosts if host.lower() in facts(certs[0]).san]
    if not named:
        return f"it names none of the target's member hosts ({', '.join(hosts)})"
    for host in named:
        try:
            subject = x509.IPAddress(ipaddress.ip_address(host))
        except ValueError:
            subject = x509.DNSName(host)
        try:
            builder.build_server_verifier(subject).verify(certs[0], certs[1:])
            return None
        except VerificationError as why:
            reason = str(why)
    return f"it does not chain to a CA of {bundle} ({reason})"
