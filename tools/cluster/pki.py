"""The few credentials a local control plane needs: a service-account key and a bearer token.

The service-account key is an RSA key in PKCS#1 PEM, made by `cryptography` (a test
dependency), so the tool needs neither an openssl CLI nor hand-written key generation.
"""

from __future__ import annotations

import secrets
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa


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
