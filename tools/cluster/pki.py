"""The few credentials a local control plane needs: a service-account key, a bearer token and a
webhook's serving certificate.

The service-account key is an RSA key in PKCS#1 PEM, made by `cryptography` (a test
dependency), so the tool needs neither an openssl CLI nor hand-written key generation.
"""

from __future__ import annotations

import datetime
import ipaddress
import secrets
from collections.abc import Sequence
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID


def write_rsa_key(path: Path) -> None:
    """A fresh 2048-bit RSA key as `RSA PRIVATE KEY` PEM, readable by kube-apiserver."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
    )


def new_token() -> str:
    return secrets.token_hex(16)


def write_serving_cert(directory: Path, ip: str, days: int = 7, names: Sequence[str] = ()) -> bytes:
    """A self-signed certificate for `ip` and DNS `names` (`tls.crt`, `tls.key` in directory)
    for a webhook the API server calls by URL; returns the certificate PEM, which is its own CA
    bundle. RSA in PKCS#1, the one key form every webhook server here reads (training-operator's
    certificate rotator takes no other)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"mxjob-e2e webhook {ip}")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address(ip)), *map(x509.DNSName, names)]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    pem = cert.public_bytes(serialization.Encoding.PEM)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "tls.crt").write_bytes(pem)
    (directory / "tls.key").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
    )
    return pem
