"""The `mxjob` cluster commands (docs/cli.md) against a real API server and Metacontroller
(KWOK pods, ended by the test as a kubelet would end them): states, exit statuses, the last
failure after its pods are gone, `kubectl wait` on the conditions, and a terminal's width and
colours with many jobs and a large one. Logs need a real kubelet: tests/realnode/test_cli.py."""

import fcntl
import json
import os
import pty
import re
import struct
import subprocess
import termios
import time
from pathlib import Path

import yaml

from tests.builders import replica
from tests.e2e.conftest import MXJOB, NAMESPACE, Cluster, wait_for
from tests.e2e.test_lifecycle import job
from tools.cluster.stack import exit_patch

TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "/app/train.py", line 3, in <module>\n'
    '    raise RuntimeError("CUDA out of memory")\n'
    "RuntimeError: CUDA out of memory\n"
)


def fail_with_log(cluster: Cluster, pod: str, code: int, message: str) -> None:
    """End a pod as a kubelet ends a failed container under FallbackToLogsOnError: the end of
    its log in the terminated state's message."""
    obj = cluster.get("pod", pod)
    assert obj is not None
    patch = exit_patch(obj, code)
    for status in patch["status"]["containerStatuses"]:
        if status["name"] == "mxnet":
            status["state"]["terminated"]["message"] = message
    cluster.kubectl(
        "patch", "pod", "-n", NAMESPACE, pod, "--subresource=status", "--type=strategic",
        "-p", json.dumps(patch),
    )  # fmt: skip


def test_a_failing_job_from_submit_to_delete(cluster: Cluster, tmp_path: Path) -> None:
    """submit, wait --for Running, get, a Worker failing, wait (exit 1 with the reason), the
    failure's words after cleanPodPolicy All removed the pods, kubectl wait and delete."""
    name = "cli-fail"
    spec = job(name, {"Worker": replica(2, "ExitCode")}, cleanPodPolicy="All")
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(spec))

    submitted = cluster.mxjob("submit", "-f", str(path))
    assert (submitted.returncode, submitted.stdout) == (
        0,
        f"mxjob/{name} created in namespace {NAMESPACE}\n",
    ), submitted.stderr
    running = cluster.mxjob("wait", name, "--for", "Running", "--timeout", "90s")
    assert (running.returncode, running.stdout) == (0, f"mxjob/{name} Running\n"), running.stderr
    pod = cluster.get("pod", f"{name}-worker-0")
    assert pod is not None
    mxnet = next(c for c in pod["spec"]["containers"] if c["name"] == "mxnet")
    assert mxnet["terminationMessagePolicy"] == "FallbackToLogsOnError"

    wait_for("both Workers counted", lambda: _active(cluster, name) == 2, 60)
    got = cluster.mxjob("get")
    row = next(line.split() for line in got.stdout.splitlines() if line.startswith(name))
    assert row[:6] == [name, "Running", "2/2", "0", "0", "0"], got.stdout
    assert "\x1b" not in got.stdout  # not a terminal: no colours

    fail_with_log(cluster, f"{name}-worker-1", 1, TRACEBACK)
    waited = cluster.mxjob("wait", name, "--timeout", "90s")
    assert waited.returncode == 1, waited
    assert waited.stderr.splitlines()[:2] == [
        f"mxjob/{name} Failed, not Succeeded:",
        f"MXJob {name} has failed: Worker replica 1 (pod {name}-worker-1) exited with code 1"
        ' (general error) saying "RuntimeError: CUDA out of memory", which restartPolicy'
        " ExitCode does not retry.",
    ]
    assert waited.stderr.splitlines()[-1] == "  RuntimeError: CUDA out of memory"
    assert cluster.mxjob("wait", name, "--for", "Failed").returncode == 0

    wait_for("every pod removed (cleanPodPolicy All)", lambda: not cluster.pods(name), 60)
    described = cluster.mxjob("describe", name)
    assert described.returncode == 0, described.stderr
    story = described.stdout
    assert "State:       Failed (MXJobFailed)" in story
    assert "(none: not created yet, or deleted as cleanPodPolicy says)" in story
    assert f"worker-1 (pod {name}-worker-1, attempt 0) exited with code 1 (Error)" in story
    assert "    RuntimeError: CUDA out of memory" in story
    kubectl = cluster.kubectl("describe", "mxjob", name, "-n", NAMESPACE).stdout
    assert "Last Failure:" in kubectl and "RuntimeError: CUDA out of memory" in kubectl, kubectl
    data = json.loads(cluster.mxjob("describe", name, "-o", "json").stdout)
    assert (data["state"], data["lastFailure"]["pod"], data["pods"]) == (
        "Failed",
        f"{name}-worker-1",
        [],
    )

    for condition, code in (("Failed", 0), ("Succeeded", 1)):
        proc = cluster.kubectl(
            "wait", f"--for=condition={condition}", f"mxjob/{name}", "-n", NAMESPACE,
            "--timeout=3s", check=False,
        )  # fmt: skip
        assert proc.returncode == code, (condition, proc.stdout, proc.stderr)

    deleted = cluster.mxjob("delete", name)
    assert deleted.returncode == 0, deleted.stderr
    assert deleted.stdout.startswith(f"mxjob/{name} deleted, with 0 pods, "), deleted.stdout
    assert cluster.get("mxjob", name) is None
    assert not cluster.list("configmaps", f"training.kubeflow.org/job-name={name}")
    gone = cluster.mxjob("describe", name)
    assert (gone.returncode, gone.stderr) == (
        1,
        f"mxjob describe: no MXJob {name} in namespace {NAMESPACE}\n",
    )


def _active(cluster: Cluster, name: str) -> int:
    status = cluster.status(name).get("replicaStatuses", {}).get("Worker", {})
    return int(status.get("active", 0))


def test_wait_returns_when_the_job_succeeds_as_kubectl_wait_does(cluster: Cluster) -> None:
    name = "cli-ok"
    cluster.apply(job(name, {"Worker": replica(1)}))
    cluster.wait_condition(name, "Running")
    timed_out = cluster.mxjob("wait", name, "--timeout", "2s")
    assert timed_out.returncode == 3, timed_out
    assert timed_out.stderr == f"mxjob/{name}: still Running after 2s, not Succeeded\n"

    env = {**os.environ, "KUBECONFIG": str(cluster.stack.kubeconfig)}
    kubectl = [str(cluster.stack.bin("kubectl")), "--kubeconfig", str(cluster.stack.kubeconfig)]
    waiting = [
        subprocess.Popen(
            [str(MXJOB), "wait", name, "--timeout", "90s"], env=env, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True,
        ),
        subprocess.Popen(
            [*kubectl, "wait", "--for=condition=Succeeded", f"mxjob/{name}", "-n", NAMESPACE,
             "--timeout=90s"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        ),
    ]  # fmt: skip
    time.sleep(1)  # both are watching
    cluster.stack.terminate_pod(NAMESPACE, f"{name}-worker-0", 0)
    outputs = [proc.communicate(timeout=120) for proc in waiting]
    assert [proc.returncode for proc in waiting] == [0, 0], outputs
    assert outputs[0][0] == f"mxjob/{name} Succeeded\n"
    assert "condition met" in outputs[1][0]
    missing = cluster.mxjob("wait", "no-such-job")
    assert (missing.returncode, missing.stderr) == (
        2,
        f"mxjob wait: no MXJob no-such-job in namespace {NAMESPACE}\n",
    )
    cluster.delete("mxjob", name)


def in_terminal(cluster: Cluster, args: list[str], columns: int) -> str:
    """What `mxjob` writes to a terminal `columns` wide (a pseudo-terminal)."""
    main, side = pty.openpty()
    fcntl.ioctl(side, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = {**os.environ, "KUBECONFIG": str(cluster.stack.kubeconfig), "TERM": "xterm"}
    env.pop("NO_COLOR", None)
    env.pop("COLUMNS", None)
    proc = subprocess.Popen([str(MXJOB), *args], env=env, stdout=side, stderr=subprocess.PIPE)
    os.close(side)
    chunks = []
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # EIO: the command closed its terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    proc.wait(timeout=60)
    os.close(main)
    assert proc.stderr is not None
    with proc.stderr:
        assert proc.returncode == 0, proc.stderr.read()
    return b"".join(chunks).decode().replace("\r\n", "\n")


def test_many_jobs_and_a_large_one_fit_a_terminal(cluster: Cluster) -> None:
    """20 jobs and one of 60 Workers: `get -A` lists them all, `describe` every pod; on an
    80-column terminal no line is wider and the states are coloured, piped nothing is."""
    names = [f"cli-many-{i:02d}" for i in range(20)]
    documents = [job(n, {"Worker": replica(1)}) for n in names]
    documents.append(job("cli-large", {"Worker": replica(60)}))
    cluster.apply("\n---\n".join(json.dumps(d) for d in documents))
    wait_for("60 Workers active", lambda: _active(cluster, "cli-large") == 60, 240)
    wait_for(
        "every small job Running",
        lambda: all((cluster.condition(n) or ("",))[0] == "Running" for n in names),
        120,
    )
    listed = cluster.mxjob("get", "-A", "-o", "json")
    items = {i["name"]: i for i in json.loads(listed.stdout)["items"]}
    assert set(items) >= {*names, "cli-large"}
    assert (items["cli-large"]["active"], items["cli-large"]["replicas"]["Worker"]["desired"]) == (
        60,
        60,
    )
    shown = in_terminal(cluster, ["get", "-A"], 80)
    plain = _plain(shown)
    assert all(len(line) <= 80 for line in plain.splitlines()), plain
    assert sum(line.split()[1].startswith("cli-") for line in plain.splitlines()[1:]) >= 21
    assert "\x1b[36mRunning" in shown  # coloured on a terminal
    described = cluster.mxjob("describe", "cli-large")
    pods = described.stdout.split("Pods:\n")[1].split("\n\n")[0].splitlines()[1:]
    assert [p.split()[0] for p in pods] == [f"worker-{i}" for i in range(60)]
    wide = _plain(in_terminal(cluster, ["describe", "cli-large"], 80))
    assert all(len(line) <= 80 for line in wide.splitlines()), wide
    for name in [*names, "cli-large"]:
        cluster.delete("mxjob", name)


def _plain(text: str) -> str:
    """Text without its colours."""
    return re.sub(r"\x1b\[[0-9;]*m", "", text)
