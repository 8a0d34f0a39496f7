"""What `mxjob get`, `describe`, `wait` and `logs` show (docs/cli.md), from objects as the API
server gives them: table tests of the pure parts (mxjob/jobs/view.py, waiting.py, replicas.py,
follow.py's line splitting). The commands against real clusters: tests/e2e/test_cli.py (KWOK)
and tests/realnode/test_last_failure.py."""

import argparse
import copy
import io
import json
from datetime import timedelta
from typing import Any

import pytest
import yaml

from hooks.core.public import unsafe
from mxjob.jobs import commands, view
from mxjob.jobs.commands import data_text
from mxjob.jobs.follow import Prefixes, _lines
from mxjob.jobs.options import _duration, namespace_refused
from mxjob.jobs.replicas import ReplicaFilter, job_replicas
from mxjob.jobs.waiting import ENDED_OTHERWISE, REACHED, Goal, verdict
from tests import golden
from tests.builders import NOW

FIXTURES = golden.FIXTURES


def job_after(case: str) -> dict[str, Any]:
    """The job of a golden case with the status the hook answered, as the API server holds it."""
    recorded = golden.load(FIXTURES / case)
    job: dict[str, Any] = copy.deepcopy(recorded.request["parent"])
    job["status"] = recorded.response["status"]
    return job


def pods_of(case: str) -> list[dict[str, Any]]:
    recorded = golden.load(FIXTURES / case)
    return list(recorded.request["children"].get("Pod.v1", {}).values())


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (0, "0s"),
        (119, "119s"),
        (125, "2m5s"),
        (600, "10m"),
        (3 * 3600 + 60, "3h1m"),
        (9 * 3600, "9h"),
        (50 * 3600, "2d2h"),
        (30 * 86400, "30d"),
        (800 * 86400, "2y"),
        (-5, "0s"),  # a clock behind the API server's
    ],
)
def test_age_is_written_as_kubectl_writes_it(seconds: int, shown: str) -> None:
    assert view.age(NOW - timedelta(seconds=seconds), NOW) == shown


def test_a_table_fits_the_width_by_cutting_its_last_column_then_dropping_columns() -> None:
    rows = [["mnist", "Running", "MXJob mnist is running; a long message " * 3]]
    lines = view.table(["NAME", "STATE", "MESSAGE"], rows, view.Paint(), width=40)
    assert lines[0] == "NAME    STATE     MESSAGE"
    assert lines[1].startswith("mnist   Running   MXJob mnist") and lines[1].endswith("…")
    assert len(lines[1]) == 40
    wide = view.table(["NAME", "STATE", "MESSAGE"], rows, view.Paint(), width=None)
    assert wide[1].endswith("message")
    dropped = view.table(["NAME", "STATE", "MESSAGE"], rows, view.Paint(), 30, drop=["MESSAGE"])
    assert dropped == ["NAME    STATE", "mnist   Running"]


@pytest.mark.parametrize(
    ("text", "room", "shown"),
    [
        ("a long message", None, "a long message"),  # no terminal: never cut
        ("a long message", 14, "a long message"),  # fits exactly
        ("a long message", 13, "a long messa…"),  # the mark takes the last character
        ("", 1, ""),
    ],
)
def test_free_text_is_cut_to_its_room_with_a_mark(text: str, room: int | None, shown: str) -> None:
    assert view.cut(text, room) == shown


# Columns of 4, 5 and 30 characters (the last free text): 4 + 3 + 5 + 3 + MIN_FREE = 35 needed.
FIT_CASES = [
    ("no terminal: every column, nothing cut", None, True, ["B", "C"], [0, 1, 2], None),
    ("the free text is counted at MIN_FREE: it fits", 35, True, ["C", "B"], [0, 1, 2], 20),
    ("one short: the first named column goes", 34, True, ["B", "C"], [0, 2], 27),
    ("dropped in the order named, until it fits", 24, True, ["C", "B"], [0, 1], None),
    ("never below MIN_FREE, however narrow", 10, True, [], [0, 1, 2], 20),
    ("no free text: the last column counted whole", 44, False, ["B"], [0, 2], None),
]  # fmt: skip


@pytest.mark.parametrize(
    ("why", "width", "free", "drop", "kept", "room"), FIT_CASES, ids=[c[0] for c in FIT_CASES]
)
def test_columns_are_dropped_in_order_until_the_table_fits(
    why: str, width: int | None, free: bool, drop: list[str], kept: list[int], room: int | None
) -> None:
    fit = view.Fit([4, 5, 30], "", free)
    keep = fit.kept(["A", "B", "C"], width, drop)
    assert (keep, fit.room(keep, width)) == (kept, room), why


def test_colours_only_when_painting_is_on() -> None:
    rows = [[view.Cell("Failed", "red")]]
    assert view.table(["STATE"], rows, view.Paint(on=False)) == ["STATE", "Failed"]
    assert view.table(["STATE"], rows, view.Paint(on=True)) == [
        "\x1b[1mSTATE\x1b[0m",
        "\x1b[31mFailed\x1b[0m",
    ]


def test_text_from_the_cluster_cannot_move_the_cursor() -> None:
    assert view.safe("a\x1b[2Jb\nc\u202ed\x07") == "ab cd"


#: What a status written by another hand, a pod's kubelet or the job's image can hold.
HOSTILE = "\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2J\u202eevil\u200b\x9b\r\n\ttab"


def hostile_job_and_pods() -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """A failed job whose every string from the cluster that a command prints holds HOSTILE:
    its conditions, last failure and namespace, its pods' run annotation, phase, reason and
    node, its Events."""
    job = job_after("worker-traceback-fails-the-job")
    job["metadata"]["namespace"] = HOSTILE
    for condition in job["status"]["conditions"]:
        condition.update(reason=HOSTILE, message=HOSTILE)
    job["status"]["conditions"].append({"type": HOSTILE, "status": "True", "message": HOSTILE})
    job["status"]["lastFailure"].update(pod=HOSTILE, reason=HOSTILE, message=HOSTILE + "\n2")
    pods = pods_of("worker-traceback-fails-the-job")
    for pod in pods:
        pod["metadata"].setdefault("annotations", {})["mxjob.kubeflow.org/run"] = HOSTILE
        pod["status"].update(phase=HOSTILE, reason=HOSTILE)
        pod.setdefault("spec", {})["nodeName"] = HOSTILE
    event = {
        "type": HOSTILE,
        "reason": HOSTILE,
        "message": HOSTILE,
        "source": {"component": HOSTILE},
    }
    return job, pods, [event]


def printed_clean(lines: list[str]) -> None:
    for line in lines:
        assert not any(unsafe(char) or char in "\n\r\t" for char in line), ascii(line)


def test_every_line_get_describe_and_wait_print_from_the_cluster_is_clean() -> None:
    """Once: the `run` annotation, a pod's phase and node, the state and its reason printed raw
    by describe and get, and the Failed message and the last failure's words by wait."""
    job, pods, events = hostile_job_and_pods()
    summary = view.summarize(job)
    printed_clean(view.job_table([summary], NOW, view.Paint(), None, namespaces=True))
    printed_clean(view.describe(job, pods, events, NOW, view.Paint(), None))
    for goal in Goal:
        found = verdict("mnist", job, goal)
        assert found is not None
        printed_clean(found.lines)


@pytest.mark.parametrize("output", ["json", "yaml"])
def test_data_output_escapes_what_a_terminal_acts_on_and_keeps_the_values(output: str) -> None:
    """`-o json|yaml` give the values as they are, written so that a terminal shows them."""
    job, pods, events = hostile_job_and_pods()
    value = view.description_json(job, pods, events, NOW)
    value["plane-16"] = "\U00100000\U000e0001"  # private use and a tag beyond the first plane
    text = data_text(value, output)
    printed_clean(text.split("\n"))
    assert (json.loads(text) if output == "json" else yaml.safe_load(text)) == value


def test_get_sums_the_replicas_and_shows_the_latest_state() -> None:
    summary = view.summarize(job_after("exitcode-replacement-running"))
    assert (summary.name, summary.state, summary.reason) == ("mnist", "Running", "MXJobRunning")
    total = summary.total
    assert (total.desired, total.active, total.failed, total.restarts) == (4, 4, 0, 1)
    assert list(summary.by_type) == ["Scheduler", "Server", "Worker"]
    lines = view.job_table([summary], NOW, view.Paint(), None, namespaces=False)
    assert lines[0].split() == [
        "NAME", "STATE", "ACTIVE", "SUCCEEDED", "FAILED", "RESTARTS", "PROGRESS", "AGE", "MESSAGE",
    ]  # fmt: skip
    assert lines[1].split()[:8] == ["mnist", "Running", "4/4", "0", "0", "1", "-", "60m"]
    narrow = view.job_table([summary], NOW, view.Paint(), 70, namespaces=True)
    assert narrow[0].split() == [
        "NAMESPACE",
        "NAME",
        "STATE",
        "ACTIVE",
        "FAILED",
        "RESTARTS",
        "AGE",
    ]
    assert max(map(len, narrow)) <= 70
    data = summary.as_json(NOW)
    assert (data["state"], data["restarts"], data["replicas"]["Worker"]["desired"]) == (
        "Running",
        1,
        2,
    )


def test_get_and_describe_show_the_progress_the_workers_reported() -> None:
    job = job_after("progress-in-the-status")
    summary = view.summarize(job)
    assert summary.point() == "e2 b140 40%"
    assert view.job_table([summary], NOW, view.Paint(), None, namespaces=False)[1].split()[6:8] == [
        "e2",
        "b140",
    ]
    text = "\n".join(view.describe(job, [], [], NOW, view.Paint(), None))
    assert (
        "Progress:    epoch 2 batch 140, 1834.51 samples/s, 40% (done about"
        " 2026-03-01T13:29:00Z), reported 60s ago by Worker 1" in text
    )
    assert summary.as_json(NOW)["progress"]["samplesPerSecond"] == 1834.51
    ended = {"epoch": 4, "lastReportTime": "bad", "replicaType": "Worker", "replicaIndex": 0}
    assert view.progress_words(ended, NOW) == "epoch 4 ended, by Worker 0"
    assert view.progress_words({}, NOW) == "-"


def test_describe_shows_the_checkpoint_claim_and_where_each_run_began() -> None:
    job = job_after("checkpoint-resume-points-in-the-status")
    text = "\n".join(view.describe(job, [], [], NOW, view.Paint(), None))
    assert (
        "Checkpoint:  claim mnist-checkpoint at /mxjob/checkpoint; runs began at epoch 0 (run 0),"
        " 2 (run 1)" in text
    )
    assert "Checkpoint:  -" in "\n".join(
        view.describe(job_after("progress-in-the-status"), [], [], NOW, view.Paint(), None)
    )
    odd = {"resumes": [{"run": "1", "epoch": 2}, "x"]}
    assert view.checkpoint_words(job, "mnist", odd) == "claim mnist-checkpoint at /mxjob/checkpoint"
    job["spec"]["checkpoint"]["retentionPolicy"] = {"whenDeleted": "Retain"}
    assert view.checkpoint_words(job, "mnist", {}) == (
        "claim mnist-checkpoint at /mxjob/checkpoint, kept when the job is deleted"
    )


def test_describe_tells_conditions_pods_in_order_and_the_last_failure() -> None:
    job = job_after("replacement-running-keeps-last-failure")
    pods = pods_of("replacement-running-keeps-last-failure")
    events = [
        {
            "type": "Warning",
            "reason": "MXJobRestarting",
            "message": job["status"]["conditions"][-2]["message"],
            "lastTimestamp": "2026-03-01T12:20:00Z",
            "source": {"component": "mxjob"},
        }
    ]
    text = "\n".join(view.describe(job, pods, events, NOW, view.Paint(), None))
    assert "State:       Running (MXJobRunning)" in text
    pod_lines = [line.split()[0] for line in text.split("Pods:\n")[1].split("\n\n")[0].split("\n")]
    assert pod_lines[1:] == ["scheduler-0", "server-0", "worker-0", "worker-0-r1", "worker-1"]
    assert (
        "  worker-0 (pod mnist-worker-0, attempt 0) exited with code 1 (Error) 40m ago\n"
        '      File "/workloads/train.py", line 128, in <module>' in text
    )
    assert (
        text.split("Last failure:\n")[1]
        .split("\n\n")[0]
        .endswith("    FloatingPointError: loss is nan at round 7")
    )
    assert "Warning   MXJobRestarting   40m   mxjob" in text
    assert "\x1b" not in text
    data = view.description_json(job, pods, events, NOW)
    assert [p["replica"] for p in data["pods"]][3] == "worker-0-r1"
    assert data["lastFailure"]["exitCode"] == 1


def test_describe_of_a_job_without_pods_or_events_says_so() -> None:
    job = job_after("last-failure-outlives-the-pods")
    text = "\n".join(view.describe(job, [], [], NOW, view.Paint(), 80))
    assert "(none: not created yet, or deleted as cleanPodPolicy says)" in text
    assert "FloatingPointError: loss is nan at round 7" in text
    assert all(len(line) <= 80 for line in text.split("\n") if not line.startswith("    "))


@pytest.mark.parametrize(
    ("case", "goal", "status", "first"),
    [
        ("dist-succeeded", Goal.SUCCEEDED, REACHED, "mxjob/mnist Succeeded"),
        ("dist-succeeded", Goal.RUNNING, REACHED, "mxjob/mnist Succeeded"),
        ("dist-succeeded", Goal.FAILED, ENDED_OTHERWISE, "mxjob/mnist Succeeded, not Failed"),
        ("worker-traceback-fails-the-job", Goal.FAILED, REACHED, "mxjob/mnist Failed"),
        (
            "worker-traceback-fails-the-job",
            Goal.SUCCEEDED,
            ENDED_OTHERWISE,
            "mxjob/mnist Failed, not Succeeded:",
        ),
        ("dist-all-running", Goal.RUNNING, REACHED, "mxjob/mnist Running"),
    ],
)
def test_wait_ends_on_the_state_or_on_an_end_that_rules_it_out(
    case: str, goal: Goal, status: int, first: str
) -> None:
    found = verdict("mnist", job_after(case), goal)
    assert found is not None
    assert (found.status, found.lines[0]) == (status, first)


def test_wait_on_a_failed_job_prints_why_and_the_log_tail() -> None:
    found = verdict("mnist", job_after("worker-traceback-fails-the-job"), Goal.SUCCEEDED)
    assert found is not None
    assert found.lines[1].startswith("MXJob mnist has failed: Worker replica 1")
    assert found.lines[2] == "the log of mnist-worker-1 ends:"
    assert found.lines[-1] == "  FloatingPointError: loss is nan at round 7"


@pytest.mark.parametrize(
    ("case", "goal"),
    [
        ("dist-all-running", Goal.SUCCEEDED),
        ("dist-first-sync", Goal.RUNNING),
        ("worker-traceback-in-the-restart", Goal.RUNNING),  # Restarting: not Running now
    ],
)
def test_wait_goes_on_while_the_state_may_still_come(case: str, goal: Goal) -> None:
    assert verdict("mnist", job_after(case), goal) is None


def test_wait_for_a_deleted_job_ends() -> None:
    found = verdict("mnist", None, Goal.SUCCEEDED)
    assert found is not None and found.status == ENDED_OTHERWISE


@pytest.mark.parametrize(
    ("text", "picked"),
    [
        ("worker-1", ["worker-1", "worker-1-r1"]),
        ("Worker", ["worker-0", "worker-1", "worker-1-r1"]),
        ("scheduler-0", ["scheduler-0"]),
        ("server-3", []),
    ],
)
def test_replica_picks_one_replica_with_every_attempt_or_one_type(
    text: str, picked: list[str]
) -> None:
    names = ["mnist-worker-1-r1", "mnist-server-0", "mnist-worker-1", "x-worker-0"]
    names += ["mnist-scheduler-0", "mnist-worker-0", "mnist-worker-1-config"]
    pods = [{"metadata": {"name": n}} for n in names]
    chosen = ReplicaFilter(text)
    assert [r.label for r, _ in job_replicas("mnist", pods) if chosen(r)] == picked


@pytest.mark.parametrize("text", ["chief-0", "worker-x", "", "-1"])
def test_replica_names_a_type(text: str) -> None:
    with pytest.raises(ValueError, match="names no replica"):
        ReplicaFilter(text)


def test_log_lines_are_split_whole_across_chunks_and_cleaned() -> None:
    rest = bytearray()
    assert _lines(b"one\ntw", rest) == ["one"]
    assert _lines(b"o\r\n\xffthree", rest) == ["two"]
    assert _lines(b"\n", rest) == ["\ufffdthree"]
    assert rest == b""
    assert _lines(HOSTILE.encode() + b"\n", rest) == ["evil", " tab"]
    prefixes = Prefixes(view.Paint())
    for label in ("worker-1", "scheduler-0", "worker-1-r1"):
        prefixes.add(label)
    assert prefixes("worker-1") == "worker-1    |"


@pytest.mark.parametrize(
    ("text", "seconds"), [("90", 90.0), ("90s", 90.0), ("10m", 600.0), ("1h30m", 5400.0)]
)
def test_durations(text: str, seconds: float) -> None:
    assert _duration(text) == seconds


@pytest.mark.parametrize("text", ["", "ten", "5d", "1m1h"])
def test_a_duration_that_is_none_is_refused(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        _duration(text)


@pytest.mark.parametrize(
    ("namespaces", "given", "refused"),
    [
        (["team-a"], "team-b", "team-a"),
        ([None, "team-a"], "team-b", "team-a"),
        (["team-a"], "team-a", None),
        ([None], "team-b", None),  # created in team-b
        (["team-a"], None, None),  # created in team-a, the file's
    ],
)
def test_submit_n_refuses_a_job_of_another_namespace_as_kubectl_does(
    namespaces: list[str | None], given: str | None, refused: str | None
) -> None:
    jobs = [{"metadata": {"name": "j", **({"namespace": ns} if ns else {})}} for ns in namespaces]
    said = namespace_refused(jobs, given)
    if refused is None:
        assert said is None
    else:
        assert said == (
            f'the namespace from the provided object "{refused}" does not match the namespace '
            f"\"{given}\". You must pass '--namespace={refused}' to perform this operation."
        )


class Listing:
    """A cluster holding jobs of two namespaces, as `get` reads them."""

    namespace = "team-a"
    held = (("team-a", "mnist"), ("team-a", "tvm"), ("team-b", "mnist"))

    def job(self, name: str) -> dict[str, Any] | None:
        return next(
            (j for j in self.jobs(every_namespace=False) if j["metadata"]["name"] == name), None
        )

    def jobs(self, *, every_namespace: bool) -> list[dict[str, Any]]:
        return [
            {"metadata": {"namespace": ns, "name": name}}
            for ns, name in self.held
            if every_namespace or ns == self.namespace
        ]


GET_CASES = [
    ("no name: every job of the namespace", [], False, ["team-a/mnist", "team-a/tvm"], []),
    ("-A: every job of every namespace", [], True,
     ["team-a/mnist", "team-a/tvm", "team-b/mnist"], []),
    ("names: each looked up in the namespace, each one missing told", ["tvm", "resnet"], False,
     ["team-a/tvm"], ["mxjob get: no MXJob resnet in namespace team-a"]),
    ("-A and names: those names in every namespace, none told missing", ["mnist", "resnet"], True,
     ["team-a/mnist", "team-b/mnist"], []),
]  # fmt: skip


@pytest.mark.parametrize(
    ("why", "names", "every", "found", "told"), GET_CASES, ids=[c[0] for c in GET_CASES]
)
def test_get_reads_the_jobs_named_or_lists_them(
    why: str, names: list[str], every: bool, found: list[str], told: list[str]
) -> None:
    err = io.StringIO()
    term = commands.Terminal(io.StringIO(), err)
    jobs = commands.asked_jobs(Listing(), names, term, every_namespace=every)  # type: ignore[arg-type]
    assert [f"{j['metadata']['namespace']}/{j['metadata']['name']}" for j in jobs] == found, why
    assert err.getvalue().splitlines() == told


class Recording:
    """A cluster that records what it is asked to create."""

    namespace = "team-b"

    def __init__(self) -> None:
        self.created: list[dict[str, Any]] = []

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        self.created.append(obj)
        return obj


def test_submit_n_creates_nothing_when_a_job_names_another_namespace() -> None:
    """Once created in the file's namespace A, whatever `-n B` said."""
    jobs = [
        {"metadata": {"name": "first"}},
        {"metadata": {"name": "second", "namespace": "team-a"}},
    ]
    arguments = argparse.Namespace(
        filename="jobs.yaml", namespace="team-b", wait=False, logs=False, goal=Goal.SUCCEEDED
    )
    err = io.StringIO()
    term = commands.Terminal(io.StringIO(), err)
    cluster = Recording()
    status = commands.run_submit(cluster, arguments, term, lambda path, err: jobs)  # type: ignore[arg-type]
    assert (status, cluster.created) == (commands.FAILED, [])
    assert err.getvalue().splitlines() == [
        'mxjob submit: the namespace from the provided object "team-a" does not match the '
        "namespace \"team-b\". You must pass '--namespace=team-a' to perform this operation.",
        "mxjob submit: nothing was created",
    ]
