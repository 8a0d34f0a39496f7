"""A free port on 127.0.0.1: the one helper the stacks, the rejoin harness, the measuring scripts
and the tests share. Standard library only, so that the MXNet venv imports it too."""

import socket


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free now (bind it soon: another process may take it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
