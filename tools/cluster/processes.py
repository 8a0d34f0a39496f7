"""Host processes a test runs beside a stack against its API server (gang schedulers, Kueue,
training-operator): started in a process group of their own with output in the stack's logs,
waited for until ready, stopped by PID when their block ends."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from pathlib import Path

from tools.cluster import build
from tools.cluster.node import StackError
from tools.cluster.probes import http_ok
from tools.cluster.stack import Stack, tail


@contextmanager
def process(
    stack: Stack,
    name: str,
    argv: Sequence[str],
    ready: Callable[[], bool],
    env: dict[str, str] | None = None,
    timeout: float = 120,
) -> Iterator[subprocess.Popen[bytes]]:
    """Run argv (its own process group, output in the stack's logs) until the block ends; wait
    for `ready` first, failing with the log's tail if it exits or does not get ready."""
    log = stack.log_file(name)
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        proc = subprocess.Popen(
            list(argv),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=stack.run_dir,
            env=env,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + timeout
        while not ready():
            if proc.poll() is not None or time.monotonic() > deadline:
                state = f"exited ({proc.returncode})" if proc.poll() is not None else "not ready"
                raise StackError(f"{name} {state}; see {log}:\n{tail(log)}")
            time.sleep(0.25)
        yield proc
    finally:
        _stop(proc)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    for sig, wait in ((signal.SIGTERM, 15.0), (signal.SIGKILL, 5.0)):
        if proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue


def source(stack: Stack, component: build.Component) -> Path:
    """The release tree a component was built in (its CRDs and manifests), built first if it
    is not yet (or waited for while a prepare beside the tests builds it)."""
    return build.need(component, stack.cache_dir, stack.log) / "src"


def install_crds(stack: Stack, *files: Path) -> None:
    """Apply the CRDs and wait until every one is Established. `kubectl wait` fails at once on
    a CRD whose status has no conditions yet (one just created), so it is asked again."""
    for crd in files:
        stack.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(crd))
    deadline = time.monotonic() + 60
    while True:
        proc = stack.kubectl(
            "wait", "--for=condition=Established", "--timeout=60s", "crd", "--all",
            timeout=90, check=time.monotonic() > deadline,
        )  # fmt: skip
        if proc.returncode == 0:
            return
        time.sleep(0.5)


def healthz(port: int, path: str = "/healthz") -> Callable[[], bool]:
    return partial(http_ok, f"http://127.0.0.1:{port}{path}")


def kube_env(stack: Stack) -> dict[str, str]:
    """The environment of a process that finds the stack's API server through KUBECONFIG."""
    return {**os.environ, "KUBECONFIG": str(stack.kubeconfig)}
