"""The conversion webhook's certificates: what the keeper should hold now (a CA and a serving
pair), decided from what it holds (docs/api.md#the-conversion-webhooks-certificate).

A CA of our own signs the serving certificate, so renewing the serving certificate (yearly)
leaves the CRD's `caBundle` alone; only a CA renewal (after nine of its ten years) changes the
bundle, and then the old CA stays in it until it expires, so the API server trusts the pods that
still serve the old certificate while the kubelet refreshes their volume. A certificate not
valid yet at `now` (made by a clock ahead, or before the clock jumped back) is made again, like a
broken one. ECDSA P-256: small, fast to make, and read by the API server and Python's ssl alike.
Pure: `now` is a parameter.
"""

import datetime
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from cryptography import exceptions, x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

#: The keys of what is kept: `ca.*` what signs and trusts (the keeper's alone), `tls.*` the
#: serving pair the webhook's pods mount; each part has a Secret of its own
#: (mxjob.certs.controller).
CA_CERT, CA_KEY, TLS_CERT, TLS_KEY = "ca.crt", "ca.key", "tls.crt", "tls.key"
CA_KEYS, SERVING_KEYS = (CA_CERT, CA_KEY), (TLS_CERT, TLS_KEY)
CA_LIFETIME = datetime.timedelta(days=3650)
CA_RENEW_BEFORE = datetime.timedelta(days=365)
SERVING_LIFETIME = datetime.timedelta(days=365)
SERVING_RENEW_BEFORE = datetime.timedelta(days=30)
#: Certificates start a little in the past, for clocks that lag the one that made them.
BACKDATE = datetime.timedelta(minutes=5)


@dataclass(frozen=True)
class Plan:
    """The data to hold (None: keep it) and why, in words for the log."""

    data: dict[str, bytes] | None
    reason: str


def plan(
    data: Mapping[str, bytes] | None, dns_names: Sequence[str], now: datetime.datetime
) -> Plan:
    """What the keeper should hold at `now` (the CA and the serving pair, by CA_KEYS and
    SERVING_KEYS) for a server known by `dns_names`."""
    ca = _read_ca(data or {})
    if ca is None:
        return Plan(_issue(_new_ca(now), (), dns_names, now), "no readable CA yet: a new one")
    (ca_cert, ca_key), bundle = ca
    kept = [c for c in bundle if _valid(c, now)]
    if ca_cert.not_valid_before_utc > now or ca_cert.not_valid_after_utc - now <= CA_RENEW_BEFORE:
        why = "not valid yet" if ca_cert.not_valid_before_utc > now else "due"
        return Plan(_issue(_new_ca(now), kept, dns_names, now), f"the CA is {why}: a new one")
    problem = _serving_problem(data or {}, ca_cert, dns_names, now)
    if problem:
        return Plan(_issue((ca_cert, ca_key), kept[1:], dns_names, now), problem)
    return Plan(None, "valid")


def _valid(cert: x509.Certificate, now: datetime.datetime) -> bool:
    """Whether `now` is within the certificate's validity: after notBefore, before notAfter."""
    return cert.not_valid_before_utc <= now < cert.not_valid_after_utc


def _read_ca(
    data: Mapping[str, bytes],
) -> tuple[tuple[x509.Certificate, ec.EllipticCurvePrivateKey], list[x509.Certificate]] | None:
    """The signing CA and key, and every CA in the bundle (the signing one first)."""
    try:
        certs = x509.load_pem_x509_certificates(data[CA_CERT])
        key = serialization.load_pem_private_key(data[CA_KEY], password=None)
    except (KeyError, ValueError):
        return None
    if not isinstance(key, ec.EllipticCurvePrivateKey) or certs[0].public_key() != key.public_key():
        return None
    return (certs[0], key), certs


def _serving_problem(
    data: Mapping[str, bytes],
    ca: x509.Certificate,
    dns_names: Sequence[str],
    now: datetime.datetime,
) -> str | None:
    """Why the serving certificate must be made again, or None."""
    try:
        cert = x509.load_pem_x509_certificate(data[TLS_CERT])
        key = serialization.load_pem_private_key(data[TLS_KEY], password=None)
    except (KeyError, ValueError):
        return "no readable serving certificate: a new one"
    if cert.public_key() != key.public_key():
        return "the serving key does not match its certificate: a new one"
    try:
        cert.verify_directly_issued_by(ca)
    except (ValueError, TypeError, exceptions.InvalidSignature):
        return "the serving certificate is not the CA's: a new one"
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    if sorted(names.get_values_for_type(x509.DNSName)) != sorted(dns_names):
        return f"the serving certificate is not for {', '.join(dns_names)}: a new one"
    if cert.not_valid_before_utc > now:
        return "the serving certificate is not valid yet: a new one"
    if cert.not_valid_after_utc - now <= SERVING_RENEW_BEFORE:
        return "the serving certificate is due: a new one"
    return None


def _new_ca(now: datetime.datetime) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"mxjob conversion CA {now:%Y}")])
    cert = (
        _builder(name, name, key, now, CA_LIFETIME)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    return cert, key


def _issue(
    ca: tuple[x509.Certificate, ec.EllipticCurvePrivateKey],
    older: Sequence[x509.Certificate],
    dns_names: Sequence[str],
    now: datetime.datetime,
) -> dict[str, bytes]:
    """What is held: `ca` (with `older` CAs after it in the bundle) and a serving certificate
    for `dns_names` that it signs."""
    ca_cert, ca_key = ca
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, dns_names[0])])
    cert = (
        _builder(subject, ca_cert.subject, key, now, SERVING_LIFETIME)
        .add_extension(x509.SubjectAlternativeName(map(x509.DNSName, dns_names)), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    return {
        CA_CERT: b"".join(_pem(c) for c in (ca_cert, *older)),
        CA_KEY: _key_pem(ca_key),
        TLS_CERT: _pem(cert),
        TLS_KEY: _key_pem(key),
    }


def _builder(
    subject: x509.Name,
    issuer: x509.Name,
    key: ec.EllipticCurvePrivateKey,
    now: datetime.datetime,
    lifetime: datetime.timedelta,
) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(now + lifetime)
    )


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
