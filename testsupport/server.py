"""The hook under gunicorn on a free loopback port, started and stopped by the caller.

`with serve(workers=2) as server:` starts gunicorn with the project's config
(hooks/gunicorn_config.py) on 127.0.0.1, port 0 (the kernel picks a free one, read back from
gunicorn's "Listening at" line), waits until `/readyz` answers, and on exit stops the master it
started (SIGTERM, then SIGKILL after a grace period). Its log goes to a temporary file. With
`tls=` (a directory of `tls.crt`, `tls.key` and the `ca.crt` that signed them, for `localhost`)
it serves HTTPS, as the conversion webhook's pods do.
"""

import contextlib
import http.client
import json
import os
import re
import signal
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from email.message import Message
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "hooks" / "gunicorn_config.py"
APP = "hooks.app:create_app()"
_LISTENING = re.compile(r"Listening at: https?://127\.0\.0\.1:(\d+)")


@dataclass
class Server:
    """A running gunicorn master on 127.0.0.1:`port`."""

    process: subprocess.Popen[bytes]
    port: int
    log: Path
    workers: int
    env: dict[str, str] = field(default_factory=dict)
    #: What a client trusts to call it over HTTPS; None: it serves HTTP.
    tls: ssl.SSLContext | None = None

    @property
    def pid(self) -> int:
        return self.process.pid

    def worker_pids(self) -> list[int]:
        """The master's child processes (its workers), read from /proc."""
        pids = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            with contextlib.suppress(OSError, IndexError, ValueError):
                # The command name may hold spaces; the parent pid follows its closing paren.
                ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
                if ppid == self.pid:
                    pids.append(int(stat.parent.name))
        return sorted(pids)

    def connection(self, timeout: float = 60) -> http.client.HTTPConnection:
        if self.tls is not None:
            return http.client.HTTPSConnection(
                "localhost", self.port, timeout=timeout, context=self.tls
            )
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def call(
        self, method: str, path: str, body: bytes | None = None, timeout: float = 10
    ) -> tuple[int, bytes, Message]:
        """One request on its own connection, closed whatever happens: status, body, headers.

        A connection left open when a request fails (a timeout on a loaded machine) would be
        reported as an unclosed socket, which the test suite treats as an error.
        """
        headers = {"Content-Type": "application/json"} if body is not None else {}
        with contextlib.closing(self.connection(timeout)) as conn:
            conn.request(method, path, body=body, headers=headers)
            answer = conn.getresponse()
            return answer.status, answer.read(), answer.headers

    def log_lines(self) -> list[dict[str, object]]:
        """The server's log, one JSON object per line (lines that are not JSON are skipped)."""
        lines = []
        for line in self.log.read_text(errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                entry = json.loads(line)
                if isinstance(entry, dict):
                    lines.append(entry)
        return lines


def rss_kib(pid: int, field: str = "VmRSS") -> int:
    """Resident memory of a process from /proc/<pid>/status, in KiB: `VmRSS` now, `VmHWM`
    its peak so far."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise LookupError(f"no {field} for pid {pid}")


def cpu_seconds(pid: int) -> float:
    """CPU time a process (every thread of it) has used so far, user and system, in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    # utime and stime, fields 14 and 15 of stat(5), counted from the state (field 3).
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _wait_ready(server: Server, deadline: float) -> None:
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            break
        if len(server.worker_pids()) >= server.workers:
            with contextlib.suppress(OSError, http.client.HTTPException):
                if server.call("GET", "/readyz", timeout=2)[0] == 200:
                    return
        time.sleep(0.05)
    raise RuntimeError(f"gunicorn did not become ready; log:\n{server.log.read_text()[-4000:]}")


@contextlib.contextmanager
def serve(
    workers: int = 1,
    env: dict[str, str] | None = None,
    start_timeout: float = 30,
    tls: Path | None = None,
) -> Iterator[Server]:
    """gunicorn with `workers` workers on a free loopback port, stopped on exit."""
    fd, name = tempfile.mkstemp(prefix="mxjob-gunicorn-", suffix=".log")
    log = Path(name)
    settings = {
        **os.environ,
        "HOST": "127.0.0.1",
        "PORT": "0",
        "WEB_CONCURRENCY": str(workers),
        **({"MXJOB_TLS_DIR": str(tls)} if tls is not None else {}),
        **(env or {}),
    }
    command = [sys.executable, "-m", "gunicorn", "--config", str(CONFIG), APP]
    process = subprocess.Popen(
        command, cwd=ROOT, env=settings, stdout=fd, stderr=fd, stdin=subprocess.DEVNULL
    )
    os.close(fd)
    try:
        deadline = time.monotonic() + start_timeout
        port = None
        while port is None and time.monotonic() < deadline and process.poll() is None:
            found = _LISTENING.search(log.read_text(errors="replace"))
            port = int(found.group(1)) if found else None
            if port is None:
                time.sleep(0.05)
        if port is None:
            raise RuntimeError(f"gunicorn did not start; log:\n{log.read_text()[-4000:]}")
        trust = None if tls is None else ssl.create_default_context(cafile=tls / "ca.crt")
        server = Server(process, port, log, workers, settings, trust)
        _wait_ready(server, deadline)
        yield server
    finally:
        _stop(process)
        log.unlink(missing_ok=True)


def _stop(process: subprocess.Popen[bytes], grace: float = 10) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def local_controller(port: int) -> str:
    """The local CompositeController overlay (production but for the webhook URL), calling a
    hook on 127.0.0.1:`port`: how the KWOK tier and `make bench-system` reach the hook."""
    built = subprocess.run(
        ["kubectl", "kustomize", str(ROOT / "metacontroller" / "overlays" / "local")],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return built.replace("http://127.0.0.1:8080/", f"http://127.0.0.1:{port}/")
