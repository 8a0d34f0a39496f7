"""Readiness probes a stack, its node and the components tests start beside it poll: an HTTP(S)
endpoint answering 2xx, a TCP port accepting."""

from __future__ import annotations

import socket
import ssl
import urllib.error
import urllib.request


def _insecure_ctx() -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def http_ok(url: str, token: str | None = None, timeout: float = 3.0) -> bool:
    """`url` answers 2xx (self-signed certificates accepted: every stack makes its own)."""
    req = urllib.request.Request(url)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=timeout, context=_insecure_ctx()) as resp:
            return 200 <= int(resp.status) < 300
    except (urllib.error.URLError, OSError, ValueError):
        return False


def tcp_open(host: str, port: int) -> bool:
    """Something accepts connections on host:port."""
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False
