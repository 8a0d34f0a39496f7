"""The failure's own words on a real kubelet (docs/status.md#the-last-failure): a Worker's
exception stays in the MXJob after cleanPodPolicy All deleted its pod, in its status, in
`kubectl describe mxjob`, in the MXJobFailed Event and in what `mxjob wait` prints; a log of
megabytes of escape sequences and invalid UTF-8 leaves a status of bounded size."""

import json
import time
import unicodedata

from tests.e2e.conftest import NAMESPACE, wait_for
from tests.realnode.conftest import Node, mxjob, replica
from tests.realnode.test_events import job_events

#: A training script that finds a bad batch: its traceback is the end of its log. It logs to
#: stderr, as Python's logging does: stdout and stderr reach the log through two pipes, so a
#: line printed to stdout just before the traceback can land after it (seen once in CI).
CRASH = [
    "python",
    "-c",
    "import sys\n"
    "print('loading data', file=sys.stderr, flush=True)\n"
    "def load(batch):\n"
    "    raise ValueError(f'batch {batch} has 3 columns, the model wants 4')\n"
    "load(17)\n",
]
#: 4 MiB of what a log should not hold, then an exception: colours, cursor moves, a window
#: title, bidirectional overrides, NUL and BEL, invalid UTF-8, a 1 MiB line, and a last line of
#: 1.2 kB. The kubelet keeps the end of it (2 kB of the log, 4 kB of the file); the second job
#: writes it to its termination message file itself.
HOSTILE = (
    "import sys\n"
    "out = sys.stdout.buffer if TARGET == '-' else open(TARGET, 'wb')\n"
    "junk = b'\\x1b[31m\\x1b[2J\\x1b]0;pwned\\x07\\xe2\\x80\\xae\\x00\\x07\\xff\\xfe\\xc3\\n'\n"
    "out.write(junk * 100000)\n"
    "out.write(b'x' * (1 << 20) + b'\\n')\n"
    "out.write(b'\\x1b[1mRuntimeError: \\xff\\xfe' + '\\u00e9'.encode() * 600 + b'\\n')\n"
    "out.flush()\n"
    "sys.exit(3)\n"
)


def _crash_job(cluster: Node) -> dict[str, object]:
    image = cluster.image("mxjob-base")
    workers = replica(image, policy="ExitCode", command=CRASH)
    return mxjob("crash", {"Worker": workers}, runPolicy={"cleanPodPolicy": "All"})


def test_an_exception_outlives_its_pod(cluster: Node) -> None:
    started = time.monotonic()
    cluster.apply(_crash_job(cluster))
    waited = cluster.mxjob("wait", "crash", "--timeout", "180s")
    failed_after = time.monotonic() - started
    exception = "ValueError: batch 17 has 3 columns, the model wants 4"
    assert waited.returncode == 1, waited
    assert f'saying "{exception}"' in waited.stderr, waited.stderr
    assert waited.stderr.splitlines()[-1] == f"  {exception}", waited.stderr

    wait_for("the pod deleted (cleanPodPolicy All)", lambda: not cluster.pods("crash"), 60)
    status = cluster.status("crash")
    last = status["lastFailure"]
    assert (last["pod"], last["exitCode"], last["reason"]) == ("crash-worker-0", 1, "Error")
    assert last["message"].splitlines()[-1] == exception, last
    assert '  File "<string>", line 4, in load' in last["message"], last
    assert f'saying "{exception}"' in status["conditions"][-1]["message"]
    described = cluster.kubectl("describe", "mxjob", "crash", "-n", NAMESPACE).stdout
    assert "Last Failure:" in described and exception in described, described
    failed_events = wait_for(
        "the MXJobFailed Event",
        lambda: [e for e in job_events(cluster, "crash") if e["reason"] == "MXJobFailed"],
        60,
    )
    assert exception in failed_events[0]["message"], failed_events
    print(f"\nlast failure: Failed {failed_after:.1f}s after apply; lastFailure {json.dumps(last)}")
    cluster.delete("mxjob", "crash")


def test_a_hostile_log_leaves_a_status_of_bounded_size(cluster: Node) -> None:
    image = cluster.image("mxjob-base")
    jobs = {"loud-log": "-", "loud-message": "/dev/termination-log"}
    for name, target in jobs.items():
        command = ["python", "-c", f"TARGET = {target!r}\n{HOSTILE}"]
        workers = replica(image, policy="ExitCode", command=command)
        cluster.apply(mxjob(name, {"Worker": workers}))
    for name in jobs:
        cluster.wait_condition(name, "Failed", timeout=180)
        status = cluster.status(name)
        pod = cluster.get("pod", f"{name}-worker-0")
        assert pod is not None
        (mxnet,) = pod["status"]["containerStatuses"]
        kubelet = mxnet["state"]["terminated"].get("message", "")
        last = status["lastFailure"]
        message = last["message"]
        size = len(json.dumps(status, ensure_ascii=False).encode())
        print(
            f"\nhostile {name}: the kubelet's message {len(kubelet.encode())} bytes,"
            f" lastFailure.message {len(message.encode())} bytes in"
            f" {len(message.splitlines())} lines, the status {size} bytes"
        )
        assert last["exitCode"] == 3
        assert len(message.splitlines()) <= 5
        assert all(len(line.encode()) <= 200 for line in message.splitlines())
        assert not {unicodedata.category(c) for c in message.replace("\n", "")} & {"Cc", "Cf"}
        assert message.splitlines()[-1].startswith("RuntimeError: \ufffd\ufffdéé")
        assert size < 4096, status
        cluster.delete("mxjob", name)
