"""kube-state-metrics as a host process beside a KWOK-tier stack: only the custom-resource
metrics of one configuration file (manifests/components/kube-state-metrics), served on
127.0.0.1, stopped by PID when the block ends (tests/e2e/test_kube_state_metrics.py)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tools.cluster import build
from tools.cluster.processes import healthz, process
from tools.cluster.stack import Stack
from tools.ports import free_port


@contextmanager
def kube_state_metrics(stack: Stack, config: Path) -> Iterator[str]:
    """Run kube-state-metrics against the stack's API server with the custom-resource-state
    configuration `config` and nothing else; yield the URL of its `/metrics`."""
    build.need(build.KUBE_STATE_METRICS, stack.cache_dir, stack.log)
    port = free_port()
    argv = [
        str(stack.bin("kube-state-metrics")),
        f"--kubeconfig={stack.kubeconfig}",
        "--custom-resource-state-only=true",
        f"--custom-resource-state-config-file={config}",
        "--host=127.0.0.1",
        f"--port={port}",
        "--telemetry-host=127.0.0.1",
        f"--telemetry-port={free_port()}",
    ]
    with process(stack, "kube-state-metrics", argv, healthz(port)):
        yield f"http://127.0.0.1:{port}/metrics"
