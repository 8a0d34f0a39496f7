"""Kubeflow's Python SDK works unchanged (docs/migration.md#the-python-sdk): kubeflow-training
1.8.1, in a virtual environment of its own from requirements-sdk.txt (with kubernetes 29.0.0,
the client of its time), drives a real MXNet job on the real node from create_job to
delete_job. Its `get_job_logs(name)` reads the pods labelled job-role master: the Server."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.conftest import NAMESPACE, REPO, wait_for
from tests.realnode.conftest import WORKLOADS_CONFIGMAP, Node

DRIVER = Path(__file__).with_name("sdk_driver.py")
LOCK = REPO / "requirements-sdk.txt"


@pytest.fixture(scope="module")
def sdk_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtual environment with exactly the locked SDK and its kubernetes client."""
    venv = tmp_path_factory.mktemp("sdk") / "venv"
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [str(venv / "bin" / "pip"), "install", "--quiet", "--disable-pip-version-check",
         "--require-hashes", "--no-deps", "-r", str(LOCK)],
        check=True, timeout=600,
    )  # fmt: skip
    print(f"\nsdk: virtual environment made in {time.monotonic() - started:.1f}s")
    return venv / "bin" / "python"


def test_the_training_sdk_runs_an_mxjob_from_create_to_delete(
    cluster: Node, sdk_python: Path
) -> None:
    name = "sdk-mnist"
    versions = subprocess.run(
        [str(sdk_python), "-c", "from importlib.metadata import version as v;"
         " print(v('kubeflow-training'), v('kubernetes'))"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    assert versions == ["1.8.1", "29.0.0"]
    driven = subprocess.run(
        [str(sdk_python), str(DRIVER), str(cluster.stack.kubeconfig), NAMESPACE,
         cluster.image("mxjob-mxnet"), name, WORKLOADS_CONFIGMAP],
        capture_output=True, text=True, timeout=420, check=False,
        env={k: v for k, v in os.environ.items() if not k.startswith("PYTHON")},
    )  # fmt: skip
    assert driven.returncode == 0, driven.stderr[-3000:]
    result = json.loads(driven.stdout.splitlines()[-1])
    pods = [f"{name}-scheduler-0", f"{name}-server-0", f"{name}-worker-0", f"{name}-worker-1"]
    assert result["conditions"][-1] == "Succeeded"
    assert result["pods"] == pods
    assert result["masters"] == [f"{name}-server-0"]  # training-operator's IsMasterRole
    assert result["master_logs"] == [f"{name}-server-0"]
    assert result["worker_pods"] == pods[2:]
    for pod in pods[2:]:
        assert "finished 20 rounds" in result["worker_logs"][pod], result["worker_logs"]
    assert (result["succeeded"], result["failed"], result["deleted"]) == (True, False, True)
    wait_for("the job gone", lambda: cluster.get("mxjob", name) is None, 60)
    print(f"\nsdk: Succeeded {result['succeeded_after']}s after create_job")
