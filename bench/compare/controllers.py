"""The two controllers, each installed on a stack of its own as its users install it.

- mxjob: the project's CRD, the hook under gunicorn (2 workers, as the Deployment runs it) and
  the production CompositeController pointed at it, driven by the stack's Metacontroller
  v4.17.2 (`--client-go-qps=100 --client-go-burst=200`, as docs/metacontroller.md advises;
  `--metacontroller-qps` changes it);
  the same way as the KWOK tier's tests (tests/e2e/conftest.py) and `make bench-system`.
- Kubeflow training-operator: its own MXJob CRD, its webhook configuration from v1.8, and its
  manager with `--enable-scheme=mxjob` and its default client limits (controller-runtime's
  20 QPS, burst 30), out of cluster (tools/cluster/training_operator.py).
"""

from __future__ import annotations

import re
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from bench.system import cpu_seconds
from testsupport.server import ROOT, local_controller, serve
from tools.cluster import training_operator as operator
from tools.cluster.stack import Stack

_CLIENT_REQUESTS = re.compile(r"^rest_client_requests_total\{(?P<labels>[^}]*)\} (?P<n>\S+)$")


@dataclass(frozen=True)
class Controller:
    """A running controller: its name, its processes by component (for CPU time) and the
    Prometheus endpoints whose client-go counters are its API requests."""

    name: str
    pids: Callable[[], dict[str, list[int]]]
    metrics: tuple[str, ...]

    def cpu(self) -> dict[str, float]:
        """CPU seconds (user + system) used so far, by component."""
        return {component: cpu_seconds(pids) for component, pids in self.pids().items()}

    def requests(self) -> Counter[str]:
        """API requests sent so far, by HTTP method (`rest_client_requests_total`)."""
        counts: Counter[str] = Counter()
        for url in self.metrics:
            with urllib.request.urlopen(url, timeout=10) as answer:
                text = answer.read().decode()
            for line in text.splitlines():
                found = _CLIENT_REQUESTS.match(line)
                if found:
                    method = re.search(r'method="([A-Z]+)"', found["labels"])
                    counts[method.group(1) if method else "?"] += int(float(found["n"]))
        return counts


@contextmanager
def mxjob(stack: Stack) -> Iterator[Controller]:
    """This project on the stack's Metacontroller."""
    stack.install_project(ROOT, hook_cmd="")
    with serve(workers=2) as hook:
        stack.kubectl("apply", "-f", "-", input=local_controller(hook.port))
        metacontroller = stack.pids["metacontroller"]
        yield Controller(
            name="mxjob",
            pids=lambda: {
                "hook": [hook.pid, *hook.worker_pids()],
                "metacontroller": [metacontroller],
            },
            metrics=(f"http://127.0.0.1:{stack.ports['metacontroller']}/metrics",),
        )


@contextmanager
def training_operator(stack: Stack, version: str) -> Iterator[Controller]:
    """Kubeflow training-operator `version` running MXJobs only."""
    with (
        operator.installed(stack, version, ["mxjob"]) as release,
        operator.manager(stack, release, ["mxjob"]) as manager,
    ):
        yield Controller(
            name=f"training-operator {version}",
            pids=lambda: {"training-operator": [manager.process.pid]},
            metrics=(manager.metrics,),
        )
