"""The end-to-end tier: a real kube-apiserver, controller-manager, Metacontroller and KWOK on
127.0.0.1 (built once from the Go module proxy by tools/cluster), the project's CRD and
CompositeController installed from the repository, and the hook started like `make run`.

Skipped with a one-line reason when Go is missing, unless E2E=required (CI sets it).
"""

import contextlib
import functools
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml

from tests.required import unavailable
from testsupport.server import local_controller
from tools.ports import free_port

REPO = Path(__file__).resolve().parents[2]
#: The console script `make venv` installs (pyproject.toml), beside the Python running the tests.
MXJOB = Path(sys.executable).parent / "mxjob"
#: Where the tests make their jobs: `default`, or a namespace of each pytest-xdist worker where
#: several sessions share one stack (the real-node lane's job tests, tools/testrun/lanes.py).
WORKER = os.environ.get("PYTEST_XDIST_WORKER")
NAMESPACE = f"tests-{WORKER}" if WORKER else "default"
T = TypeVar("T")


@pytest.fixture(scope="session")
def hook_port() -> int:
    """The loopback port the hook serves on for this session."""
    return free_port()


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory, hook_port: int) -> Iterator[Any]:
    from tools.cluster import stack as cluster  # noqa: PLC0415 (only when the tier runs)
    from tools.cluster.build import KWOK_STACK, unavailable_reason  # noqa: PLC0415

    reason = unavailable_reason(components=KWOK_STACK)
    if reason:
        unavailable(f"end-to-end tier: {reason}")
    run_dir = tmp_path_factory.mktemp("stack")
    started = cluster.Stack(run_dir=run_dir, log=lambda line: print(line, flush=True)).start()
    try:
        port = hook_port
        started.install_project(REPO, hook_cmd=f"make -C {REPO} run PORT={port}", hook_port=port)
        started.kubectl("apply", "-f", "-", input=local_controller(port))
        yield started
    finally:
        started.stop(remove=True)


@contextlib.contextmanager
def controllers(stack: Any, log: Path, names: str, *flags: str) -> Iterator[None]:
    """A second kube-controller-manager running only the controllers `names` (comma-separated)
    against the stack, for the tests that need them: the tier's own runs only the namespace,
    garbage-collector and service-account controllers. Stopped by its PID."""
    with log.open("wb") as out:
        proc = subprocess.Popen(
            stack.controller_manager(f"--controllers={names}", *flags),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        yield
    finally:
        proc.terminate()
        proc.wait(timeout=30)


class Cluster:
    """Thin helpers over kubectl for the tests: apply, get, wait."""

    def __init__(self, stack: Any) -> None:
        self.stack = stack

    def kubectl(
        self, *args: str, stdin: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        proc: subprocess.CompletedProcess[str] = self.stack.kubectl(*args, input=stdin, check=check)
        return proc

    def apply(
        self, obj: dict[str, Any] | str, *, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        text = obj if isinstance(obj, str) else json.dumps(obj)
        return self.kubectl("apply", "-n", NAMESPACE, "-f", "-", stdin=text, check=check)

    def get(self, kind: str, name: str) -> dict[str, Any] | None:
        proc = self.kubectl("get", kind, name, "-n", NAMESPACE, "-o", "json", check=False)
        return json.loads(proc.stdout) if proc.returncode == 0 else None

    def list(self, kind: str, selector: str) -> list[dict[str, Any]]:
        proc = self.kubectl("get", kind, "-n", NAMESPACE, "-l", selector, "-o", "json")
        return list(json.loads(proc.stdout)["items"])

    def pods(self, job: str) -> dict[str, dict[str, Any]]:
        items = self.list("pods", f"training.kubeflow.org/job-name={job}")
        return {p["metadata"]["name"]: p for p in items}

    def services(self, job: str) -> dict[str, dict[str, Any]]:
        items = self.list("services", f"training.kubeflow.org/job-name={job}")
        return {s["metadata"]["name"]: s for s in items}

    def condition(self, job: str) -> tuple[str, str, str] | None:
        obj = self.get("mxjob", job)
        conditions = ((obj or {}).get("status") or {}).get("conditions") or []
        if not conditions:
            return None
        last = conditions[-1]
        return last["type"], last.get("reason", ""), last.get("message", "")

    def wait_condition(self, job: str, ctype: str, timeout: float = 90) -> tuple[str, str, str]:
        """Wait until the job's latest condition is `ctype`; its (type, reason, message)."""

        def probe() -> tuple[str, str, str] | None:
            found = self.condition(job)
            return found if found is not None and found[0] == ctype else None

        return wait_for(f"{job} {ctype}", probe, timeout)

    def status(self, job: str) -> dict[str, Any]:
        """The job's status ({} while it has none)."""
        return dict(((self.get("mxjob", job) or {}).get("status")) or {})

    def wait_gone(self, kind: str, name: str) -> None:
        wait_for(f"{kind} {name} gone", lambda: self.get(kind, name) is None, 60)

    def wait_pods(self, job: str, names: set[str]) -> dict[str, dict[str, Any]]:
        """Wait until every named pod of the job exists; all its pods."""

        def probe() -> dict[str, dict[str, Any]] | None:
            pods = self.pods(job)
            return pods if set(pods) >= names else None

        return wait_for(f"pods {sorted(names)}", probe, 90)

    def delete(self, kind: str, name: str) -> None:
        self.kubectl("delete", kind, name, "-n", NAMESPACE, "--ignore-not-found", "--wait=false")

    @functools.cached_property
    def kubeconfig(self) -> Path:
        """The stack's kubeconfig, its context's namespace NAMESPACE: what `mxjob` (and
        kubectl without `-n`) use, as a user's current namespace."""
        if NAMESPACE == "default":
            return Path(self.stack.kubeconfig)
        path = Path(self.stack.run_dir) / f"kubeconfig-{NAMESPACE}"
        shutil.copyfile(self.stack.kubeconfig, path)
        kubectl = [str(self.stack.bin("kubectl")), "--kubeconfig", str(path), "config"]
        subprocess.run([*kubectl, "set-context", "--current", f"--namespace={NAMESPACE}"],
                       check=True, capture_output=True)  # fmt: skip
        return path

    def mxjob(
        self, *args: str, stdin: str | None = None, timeout: float = 180
    ) -> subprocess.CompletedProcess[str]:
        """The `mxjob` command as a user runs it, with this cluster's kubeconfig (docs/cli.md)."""
        env = {**os.environ, "KUBECONFIG": str(self.kubeconfig)}
        return subprocess.run(
            [str(MXJOB), *args], input=stdin, env=env, capture_output=True, text=True,
            timeout=timeout, check=False,
        )  # fmt: skip


class Watch:
    """Every version of one existing object the API server sends on a watch, from now until
    `stop()`: a state that lasts one status write, or a pod gone a moment after its last update,
    is still seen."""

    def __init__(self, cluster: Cluster, kind: str, name: str) -> None:
        stack = cluster.stack
        self.seen: list[dict[str, Any]] = []
        kubectl = [str(stack.bin("kubectl")), "--kubeconfig", str(stack.kubeconfig)]
        self._proc = subprocess.Popen(
            [*kubectl, "get", kind, name, "-n", NAMESPACE, "--watch", "-o", "json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        assert self._proc.stdout is not None
        decoder, text = json.JSONDecoder(), ""
        for line in self._proc.stdout:
            text += line
            try:
                obj, end = decoder.raw_decode(text.lstrip())
            except ValueError:
                continue
            self.seen.append(obj)
            text = text.lstrip()[end:]

    def stop(self) -> list[dict[str, Any]]:
        """Stop watching; every version seen, oldest first."""
        self._proc.terminate()
        self._proc.wait(timeout=10)
        self._thread.join(timeout=10)
        if self._proc.stdout is not None:
            self._proc.stdout.close()
        return self.seen


def wait_for(what: str, probe: Callable[[], T | None], timeout: float = 60.0) -> T:
    """Poll until `probe` returns something truthy; fail naming `what` after `timeout`."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(0.5)
    pytest.fail(f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})")


@pytest.fixture(scope="session")
def cluster(stack: Any) -> Cluster:
    return Cluster(stack)


@contextlib.contextmanager
def installed_policy(
    cluster: Cluster, name: str, kind: str = "ValidatingAdmissionPolicy"
) -> Iterator[None]:
    """The install's admission policy `name` of `kind` and its binding (as the standard variant
    builds them) applied, then deleted."""
    built = cluster.kubectl("kustomize", str(REPO / "manifests" / "overlays" / "standard")).stdout
    policy = [
        d
        for d in yaml.safe_load_all(built)
        if d and d["kind"].startswith(kind) and d["metadata"]["name"] == name
    ]
    assert {d["kind"] for d in policy} == {kind, f"{kind}Binding"}
    text = "\n---\n".join(yaml.safe_dump(d) for d in policy)
    cluster.kubectl("apply", "-f", "-", stdin=text)
    try:
        yield
    finally:
        cluster.kubectl("delete", "-f", "-", "--ignore-not-found", stdin=text)
