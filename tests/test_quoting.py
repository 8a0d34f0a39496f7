"""Text from pods and the cluster as the hook quotes it (hooks/core/quoting.py): the cleaner on
any text, and every string a pod, the kubelet, a scheduler or Kueue writes that the hook quotes
in a status, through whole syncs (hypothesis).

Before issue 37 only a failure's termination message was cleaned: the rejoin wait's message
(which the job's own image can write), the kubelet's waiting and the scheduler's messages, the
pod's reasons, Kueue's eviction reason and a PodGroup's condition reached conditions, Events
and `mxjob wait` raw."""

import copy
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hooks.core.quoting import clean, unsafe
from tests.builders import (
    CONTROLLER,
    cluster_after,
    mxjob,
    replica,
    request,
    run,
    running,
    terminated,
    terminating,
    unschedulable,
    waiting,
)

Json = dict[str, Any]


@pytest.mark.parametrize(
    ("text", "limit", "kept"),
    [
        ("plain words", None, "plain words"),
        ("\x1b[31mred\x1b[0m", None, "red"),
        ("\x1b]52;c;cm0gLXJmIH4=\x07after", None, "after"),
        ("\x1b]0;title\x1b\\after", None, "after"),
        ("a\tb\nc\r\nd", None, "a b c  d"),
        ("\u202eevil\u202c", None, "evil"),
        ("zero\u200bwidth", None, "zerowidth"),
        ("bell\x07\x00nul\x9bcsi", None, "bellnulcsi"),
        ("private\ue000use", None, "privateuse"),
        ("trailing   ", None, "trailing"),
        ("x" * 300, 200, "x" * 197 + "…"),
        ("é" * 150, 200, "é" * 98 + "…"),
        ("short", 200, "short"),
        # Only twice the limit is looked at: what follows is cut, whatever it holds.
        ("\x00" * 400 + "late", 200, "…"),
    ],
)
def test_clean_keeps_what_a_terminal_shows_as_text(text: str, limit: int | None, kept: str) -> None:
    assert clean(text, limit) == kept


@given(st.text(), st.sampled_from([None, 3, 10, 200]))
def test_clean_leaves_nothing_a_terminal_acts_on_and_is_its_own_clean(
    text: str, limit: int | None
) -> None:
    kept = clean(text, limit)
    assert not any(unsafe(char) or char in "\n\r\t" for char in kept), ascii(kept)
    assert "\x1b" not in kept
    if limit is not None:
        assert len(kept.encode()) <= limit
    assert clean(kept, limit) == kept


# --- every pod-written string the hook quotes, through a sync ---------------------------------

#: Text with what terminals act on, among words.
HOSTILE = st.lists(
    st.sampled_from(
        [
            "word",
            " ",
            "\x1b[2J",
            "\x1b]52;c;cm0gLXJmIH4=\x07",
            "\x1b]0;title\x1b\\",
            "\x1b[1A",
            "\u202e",
            "\u200b",
            "\x07",
            "\x00",
            "\x9b",
            "\n",
            "\r",
            "\t",
            "\ue000",
        ]
    )
    | st.text(max_size=5),
    min_size=1,
    max_size=12,
).map("".join)
EXITCODE = {"Scheduler": replica(1, "ExitCode"), "Worker": replica(2, "ExitCode")}
VOLCANO = copy.deepcopy(CONTROLLER)
VOLCANO["spec"]["childResources"].append(
    {"apiVersion": "scheduling.volcano.sh/v1beta1", "resource": "podgroups"}
)


def _running(job: Json, controller: Json = CONTROLLER) -> list[Json]:
    return [
        running(c) if c["kind"] == "Pod" else c
        for c in cluster_after(run(request(job, controller=controller)))
    ]


def _worker(children: list[Json], change: Callable[[Json], Json]) -> list[Json]:
    return [change(c) if c["metadata"]["name"] == "mnist-worker-1" else c for c in children]


def failed_with(text: str) -> Callable[[Json], Json]:
    """The Worker failed (137), its pod's reason, its container's reason and message `text`."""

    def change(pod: Json) -> Json:
        ended = terminated(pod, 137, reason=text)
        ended["status"]["containerStatuses"][0]["state"]["terminated"].update(
            reason=text, message=text
        )
        return ended

    return change


def wait_failed_with(text: str) -> Callable[[Json], Json]:
    """The Worker's rejoin wait ended with reason and message `text`."""

    def change(pod: Json) -> Json:
        ended = terminated(pod, None)
        wait = {"exitCode": 128, "reason": text, "message": text}
        ended["status"]["initContainerStatuses"] = [
            {"name": "mxjob-rejoin-wait", "state": {"terminated": wait}}
        ]
        return ended

    return change


def evicted_with(text: str) -> Callable[[Json], Json]:
    """Kueue takes the Worker away, its TerminationTarget condition's reason `text`."""

    def change(pod: Json) -> Json:
        obj = terminating(terminated(pod, 143, minutes=20), minutes=20)
        obj["status"].setdefault("conditions", []).append(
            {"type": "TerminationTarget", "status": "True", "reason": text, "message": text}
        )
        return obj

    return change


def scenarios(text: str) -> Iterator[Json]:
    """A request for each place a pod's (or the cluster's) words reach the status."""
    job = mxjob(replicas=EXITCODE)
    children = _running(job)
    job["status"] = run(request(job, children)).status
    for change in (failed_with(text), wait_failed_with(text), evicted_with(text)):
        yield request(job, _worker(children, change))
    yield request(job, _worker(children, lambda p: waiting(p, "ImagePullBackOff", text)))
    yield request(job, _worker(children, lambda p: unschedulable(p, text)))
    gang = mxjob(replicas=EXITCODE, run_policy={"schedulingPolicy": {}})
    groups = cluster_after(run(request(gang, controller=VOLCANO)))
    for group in groups:
        condition = {"type": "Unschedulable", "status": "True", "reason": text, "message": text}
        group["status"] = {"phase": "Pending", "conditions": [condition]}
    yield request(gang, groups, VOLCANO)


def strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


@given(HOSTILE)
def test_no_status_quotes_what_a_terminal_acts_on(text: str) -> None:
    """Conditions (and so the Events told of them and `mxjob wait`), the last failure and the
    run records: whatever a pod or the cluster wrote, nothing a terminal acts on, no line
    break but between the lines of a failure's message."""
    for body in scenarios(text):
        answer = run(body)
        records = [c for c in answer.children if c["kind"] == "ConfigMap"]
        for said in [*strings(answer.status), *strings(records)]:
            for line in said.split("\n"):
                assert not any(unsafe(char) or char in "\r\t" for char in line), ascii(line)
