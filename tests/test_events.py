"""Which Events tell a job's story (mxjob.events.story): one per condition that turned True, named
so that telling it twice is a duplicate, none for transitions the API server has expired; the
loop (mxjob.events.controller) going on past a job it cannot tell; and what the component's
ValidatingAdmissionPolicy lets its token create."""

import json
import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import pytest
import yaml
from kubernetes.client import ApiClient, CoreV1Api
from kubernetes.client.exceptions import ApiException

from hooks.logs import JsonFormatter
from mxjob.events.controller import Told, tell
from mxjob.events.story import RECENT, story
from tests.manifest_support import policy_admits

REPO = Path(__file__).resolve().parent.parent
NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
#: Readable RFC 3339 whose UTC moment has no year Python holds.
OUT_OF_RANGE = "0001-01-01T00:00:00+01:00"


def at(minutes: float) -> str:
    return (NOW - timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")


def condition(ctype: str, status: str, minutes: float, reason: str = "") -> dict[str, str]:
    return {
        "type": ctype,
        "status": status,
        "reason": reason or f"MXJob{ctype}",
        "message": f"MXJob train is {ctype.lower()}.",
        "lastTransitionTime": at(minutes),
        "lastUpdateTime": at(minutes),
    }


def job(*conditions: dict[str, str], uid: str = "u-1") -> dict[str, Any]:
    return {
        "metadata": {"name": "train", "namespace": "default", "uid": uid},
        "status": {"conditions": list(conditions)},
    }


def test_each_condition_that_turned_true_is_one_event_oldest_first() -> None:
    told = story(
        job(
            condition("Created", "True", 10),
            condition("Running", "False", 2),
            condition("Restarting", "True", 2, "MXJobRestarting"),
        ),
        NOW,
    )
    assert [(e.reason, e.type) for e in told] == [
        ("MXJobCreated", "Normal"),
        ("MXJobRestarting", "Warning"),
    ]
    assert told[1].message == "MXJob train is restarting."
    assert told[1].time == NOW - timedelta(minutes=2)


def test_the_name_is_the_transition_so_a_second_telling_is_a_duplicate() -> None:
    first = story(job(condition("Running", "True", 5)), NOW)
    again = story(job(condition("Running", "True", 5)), NOW + timedelta(minutes=1))
    assert [e.name for e in first] == [e.name for e in again]
    assert first[0].name.startswith("train.")
    # A new transition of the same type (Running again after a restart) is a new Event, and so
    # is the same moment of a job re-created under the same name.
    later = story(job(condition("Running", "True", 1)), NOW)
    other = story(job(condition("Running", "True", 5), uid="u-2"), NOW)
    assert len({first[0].name, later[0].name, other[0].name}) == 3


@pytest.mark.parametrize(
    ("conditions", "count"),
    [
        ([condition("Failed", "True", RECENT.total_seconds() / 60 - 1)], 1),
        ([condition("Failed", "True", RECENT.total_seconds() / 60 + 1)], 0),
        ([{"type": "Running", "status": "True", "lastTransitionTime": "yesterday"}], 0),
        ([{"status": "True", "lastTransitionTime": at(1)}], 0),
        (["not a condition"], 0),
    ],
    ids=["recent", "expired", "bad-time", "no-type", "not-an-object"],
)
def test_only_recent_readable_transitions_are_told(conditions: list[Any], count: int) -> None:
    assert len(story(job(*conditions), NOW)) == count


def test_a_failed_job_is_a_warning_and_a_job_without_status_tells_nothing() -> None:
    (failed,) = story(job(condition("Failed", "True", 1, "MXJobFailed")), NOW)
    assert (failed.type, failed.reason) == ("Warning", "MXJobFailed")
    assert story({"metadata": {"name": "x", "uid": "u"}}, NOW) == []
    assert story({"status": {"conditions": []}}, NOW) == []


def test_a_resume_is_told_though_its_condition_turned_false() -> None:
    (resumed,) = story(job(condition("Suspended", "False", 1, "MXJobResumed")), NOW)
    assert (resumed.type, resumed.reason) == ("Normal", "MXJobResumed")


# --- the loop: one job it cannot tell stops no other ------------------------------------------


class Core:
    """The one CoreV1Api call the loop makes; `refuse` fails the creates for a job's name."""

    def __init__(self, refuse: str = "") -> None:
        self.refuse, self.created = refuse, list[str]()

    def create_namespaced_event(self, namespace: str, body: Any, **_: Any) -> None:
        if body.involved_object.name == self.refuse:
            raise ApiException(status=422, reason="Unprocessable Entity")
        self.created.append(body.involved_object.name)


def named(name: str, *conditions: dict[str, str]) -> dict[str, Any]:
    told = job(*conditions, uid=f"u-{name}")
    told["metadata"]["name"] = name
    return told


@pytest.mark.parametrize(
    ("first", "refuse"),
    [
        # Once an OverflowError that ended every watch at this job (issue 29).
        (named("a", {**condition("Running", "True", 1), "lastTransitionTime": OUT_OF_RANGE}), ""),
        # An Event the API server refuses for one job.
        (named("a", condition("Running", "True", 1)), "a"),
    ],
)
def test_a_job_whose_events_cannot_be_told_stops_no_other(
    first: dict[str, Any], refuse: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The watch tells each job as it comes, the list first: the jobs after one that fails
    are told all the same, and the failure is logged with the job."""
    core, told = Core(refuse), Told()
    second = named("b", condition("Running", "True", 1))
    with caplog.at_level(logging.ERROR, logger="events"):
        counts = [tell(cast(CoreV1Api, core), j, told, NOW) for j in (first, second)]
    assert (counts, core.created) == ([0, 1], ["b"])
    if refuse:
        (line,) = [json.loads(JsonFormatter().format(r)) for r in caplog.records]
        assert (line["name"], line["action"]) == ("a", "error")


# --- what the component's token may write (manifests/components/events) ------------------------

EVENTS_ACCOUNT = "system:serviceaccount:mxjob-system:mxjob-events"
COMPONENT = REPO / "manifests" / "components" / "events" / "events.yaml"


def policy() -> dict[str, Any]:
    """The component's ValidatingAdmissionPolicy, bound to deny."""
    objects = {d["kind"]: d for d in yaml.safe_load_all(COMPONENT.read_text()) if d}
    binding = objects["ValidatingAdmissionPolicyBinding"]["spec"]
    spec: dict[str, Any] = objects["ValidatingAdmissionPolicy"]["spec"]
    assert binding == {"policyName": "mxjob-events", "validationActions": ["Deny"]}
    assert spec["failurePolicy"] == "Fail"
    assert objects["ServiceAccount"]["metadata"]["name"] == EVENTS_ACCOUNT.rsplit(":", 1)[1]
    return spec


def admitted(event: dict[str, Any], username: str = EVENTS_ACCOUNT) -> bool:
    request = {"operation": "CREATE", "userInfo": {"username": username}}
    return policy_admits(policy(), request, object=event)


class Recording(Core):
    """The loop's creates, kept as the API server receives them."""

    def __init__(self) -> None:
        super().__init__()
        self.bodies: list[dict[str, Any]] = []

    def create_namespaced_event(self, namespace: str, body: Any, **_: Any) -> None:
        self.bodies.append(ApiClient().sanitize_for_serialization(body))  # type: ignore[no-untyped-call]


def test_every_event_the_loop_tells_is_admitted() -> None:
    core = Recording()
    told = job(condition("Created", "True", 3), condition("Failed", "True", 1))
    tell(cast(CoreV1Api, core), told, Told(), NOW)
    assert len(core.bodies) == 2
    assert all(admitted(body) for body in core.bodies)


def test_a_stolen_events_token_may_tell_nothing_but_an_mxjobs_story() -> None:
    """Once RBAC alone stood between its token and an Event about any object of any namespace
    (a Pod's kill, a Node's pressure): now only an Event about an MXJob of its namespace, told
    by this component, is admitted."""
    core = Recording()
    tell(cast(CoreV1Api, core), job(condition("Running", "True", 1)), Told(), NOW)
    (real,) = core.bodies
    about = real["involvedObject"]
    forged = [
        {**real, "involvedObject": {**about, "kind": "Pod", "apiVersion": "v1"}},
        {**real, "involvedObject": {**about, "namespace": "kube-system"}},
        {**real, "source": {"component": "kubelet"}},
        {k: v for k, v in real.items() if k != "reportingComponent"},
    ]
    assert [admitted(event) for event in forged] == [False] * len(forged)
    assert admitted(forged[0], username="system:serviceaccount:kube-system:someone")


def test_a_condition_written_with_escape_sequences_is_told_clean() -> None:
    """The hook writes its words clean; a status written by another hand (or an older hook)
    reaches `kubectl describe` through the Events: told without what a terminal acts on."""
    written = condition("Failed", "True", 1, "MXJob\x1b[31mFailed")
    written["message"] = "\x1b]52;c;cm0gLXJmIH4=\x07gone\u202e\nnow"
    (told,) = story(job(written), NOW)
    assert (told.reason, told.message) == ("MXJobFailed", "gone now")
