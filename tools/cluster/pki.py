"""The few credentials a local control plane needs: a service-account key and a bearer token.

The service-account key is an RSA key in PKCS#1 PEM. ``openssl genrsa`` makes it when the CLI
exists; otherwise a small pure-Python generator does (the standard library has no RSA), so the
tool needs nothing but Python and the binaries it built.
"""

from __future__ import annotations

import base64
import secrets
import shutil
import subprocess
from pathlib import Path

_SMALL_PRIMES = [p for p in range(3, 2000, 2) if all(p % d for d in range(3, int(p**0.5) + 1, 2))]


def _is_probable_prime(n: int, rounds: int = 40) -> bool:
    if n < 2:
        return False
    for p in _SMALL_PRIMES:
        if n % p == 0:
            return n == p
    d, s = n - 1, 0
    while d % 2 == 0:
        d, s = d // 2, s + 1
    for _ in range(rounds):
        a = secrets.randbelow(n - 3) + 2
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = pow(x, 2, n)
            if x == n - 1:
                break
        else:
            return False
    return True


def _prime(bits: int, e: int) -> int:
    while True:
        candidate = secrets.randbits(bits) | (3 << (bits - 2)) | 1
        if candidate % e != 1 and _is_probable_prime(candidate):
            return candidate


def _der_len(n: int) -> bytes:
    if n < 0x80:
        return bytes([n])
    raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(raw)]) + raw


def _der_int(v: int) -> bytes:
    raw = v.to_bytes(v.bit_length() // 8 + 1, "big")  # leading zero keeps it positive
    return b"\x02" + _der_len(len(raw)) + raw


def python_rsa_pem(bits: int = 2048) -> bytes:
    """A PKCS#1 ``RSA PRIVATE KEY`` PEM made with the standard library only."""
    e = 65537
    while True:
        p, q = _prime(bits // 2, e), _prime(bits // 2, e)
        n = p * q
        if p != q and n.bit_length() == bits:
            break
    d = pow(e, -1, (p - 1) * (q - 1))
    fields = [0, n, e, d, p, q, d % (p - 1), d % (q - 1), pow(q, -1, p)]
    body = b"".join(_der_int(f) for f in fields)
    der = b"\x30" + _der_len(len(body)) + body
    b64 = base64.encodebytes(der).replace(b"\n", b"")
    lines = [b64[i : i + 64] for i in range(0, len(b64), 64)]
    return (
        b"-----BEGIN RSA PRIVATE KEY-----\n"
        + b"\n".join(lines)
        + b"\n-----END RSA PRIVATE KEY-----\n"
    )


def write_rsa_key(path: Path) -> None:
    openssl = shutil.which("openssl")
    if openssl:
        subprocess.run(
            [openssl, "genrsa", "-traditional", "-out", str(path), "2048"],
            check=False,
            capture_output=True,
        )
        if path.is_file() and path.stat().st_size > 0:
            return
    path.write_bytes(python_rsa_pem())


def new_token() -> str:
    return secrets.token_hex(16)
