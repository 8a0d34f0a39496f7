"""Table tests of the scheduling room (docs/scheduling.md): every scheduler meets the protocol,
which schedulers a job has, the replica types a topology places together, what the default
scheduler says, and which topologies are refused, by whom."""

from typing import Any

import pytest

from hooks.core.api import ReplicaType
from hooks.core.scheduling.default import DefaultScheduler
from hooks.core.scheduling.kueue import Kueue, Queue
from hooks.core.scheduling.pick import Gang, pick
from hooks.core.scheduling.protocol import PodMarks, Scheduler
from hooks.core.scheduling.scheduler_plugins import SchedulerPlugins
from hooks.core.scheduling.shared import together
from hooks.core.scheduling.volcano import Volcano
from hooks.core.spec import JobSpec, load
from tests.builders import mxjob, observed_pod, read_spec, replica

QUEUE = Queue("team-a")
CPU = {"requests": {"cpu": "1"}}
GPU = {"requests": {"cpu": "1", "nvidia.com/gpu": "1"}}
S, P, W = ReplicaType.SCHEDULER, ReplicaType.SERVER, ReplicaType.WORKER
#: Every scheduler of the room, typed as the protocol: mypy checks each meets it.
SCHEDULERS: list[Scheduler] = [DefaultScheduler(), Volcano(), SchedulerPlugins(), Kueue(QUEUE)]


def spec_of(
    topology: dict[str, Any] | None, replicas: dict[str, Any] | None = None, **kw: Any
) -> JobSpec:
    policy = {"schedulingPolicy": {"topology": topology}} if topology is not None else None
    return read_spec(replicas=replicas, run_policy=policy, **kw)


BLOCK = {"level": "example.com/block"}
TUNE = {"TunerTracker": replica(1), "TunerServer": replica(2), "Tuner": replica(1)}


@pytest.mark.parametrize("scheduler", SCHEDULERS, ids=lambda s: type(s).__name__)
def test_every_scheduler_answers_each_question_of_the_protocol(scheduler: Scheduler) -> None:
    """The protocol at run time too: each answer of the right shape for a small job."""
    spec = read_spec()
    group = scheduler.group("mnist", "default", spec)
    assert group is None or group["metadata"]["name"] == "mnist"
    assert isinstance(scheduler.marks("mnist", spec, W, 0), PodMarks)
    assert scheduler.problems(spec) == []
    words = scheduler.waits("mnist", spec, None, [])
    assert words is None or isinstance(words, str)
    assert isinstance(scheduler.admits_new_pods(None), bool)
    assert scheduler.name


def test_the_default_scheduler_says_nothing_of_a_job() -> None:
    spec = read_spec()
    default = DefaultScheduler()
    assert default.group("mnist", "default", spec) is None
    assert default.admits_new_pods(None)
    assert default.marks("mnist", spec, W, 0) == PodMarks()
    assert default.waits("mnist", spec, None, [observed_pod()]) is None
    assert not default.places_by_topology


@pytest.mark.parametrize(
    ("gang", "queue", "scheduler", "queued"),
    [
        (None, None, DefaultScheduler, None),
        (Gang.VOLCANO, None, Volcano, None),
        (Gang.SCHEDULER_PLUGINS, QUEUE, SchedulerPlugins, Kueue(QUEUE)),
        (None, QUEUE, DefaultScheduler, Kueue(QUEUE)),
    ],
)
def test_a_job_has_its_gang_scheduler_or_the_default_one_and_its_queue(
    gang: Gang | None, queue: Queue | None, scheduler: type, queued: Kueue | None
) -> None:
    picked = pick(gang, queue)
    assert type(picked.gang) is scheduler
    assert picked.queue == queued


def test_a_gang_and_a_queue_both_mark_the_pods_the_gangs_first() -> None:
    """Volcano's marks, then Kueue's: a job in a queue under the Volcano install has both."""
    marks = pick(Gang.VOLCANO, QUEUE).marks("mnist", read_spec(), W, 2)
    assert marks.spec == {"schedulerName": "volcano"}
    assert list(marks.annotations)[:2] == ["scheduling.k8s.io/group-name", "volcano.sh/task-spec"]
    assert marks.labels["kueue.x-k8s.io/pod-group-name"] == "mnist-mxjob-run-2"


def test_the_queue_says_why_a_job_waits_before_its_gang() -> None:
    gated = observed_pod(gates=frozenset({"kueue.x-k8s.io/admission"}))
    words = pick(Gang.SCHEDULER_PLUGINS, QUEUE).waits("mnist", read_spec(), None, [gated])
    assert words is not None and words.startswith("queued by Kueue")


@pytest.mark.parametrize(
    ("topology", "replicas", "mode", "placed"),
    [
        (None, None, None, ()),
        (BLOCK, None, None, (P, W)),
        ({**BLOCK, "replicaTypes": ["worker"]}, None, None, (W,)),
        ({**BLOCK, "replicaTypes": ["Scheduler", "Server", "Worker"]}, None, None, (S, P, W)),
        # A worker-only job: the Workers alone.
        (BLOCK, {"Worker": replica(4)}, None, (W,)),
        (
            BLOCK,
            TUNE,
            "MXTune",
            (ReplicaType.TUNER_SERVER, ReplicaType.TUNER),
        ),
    ],
)
def test_the_types_placed_together(
    topology: Any, replicas: Any, mode: str | None, placed: tuple[ReplicaType, ...]
) -> None:
    assert together(spec_of(topology, replicas, mode=mode)) == placed


SAME = {
    "Scheduler": replica(1),
    "Server": replica(2, resources=CPU),
    "Worker": replica(3, resources=CPU),
}
PAIR = {
    "Scheduler": replica(1),
    "Server": replica(1, resources=CPU),
    "Worker": replica(3, resources=GPU),
}
APART = {
    "Scheduler": replica(1),
    "Server": replica(2, resources=CPU),
    "Worker": replica(3, resources=GPU),
}


@pytest.mark.parametrize(
    ("topology", "replicas", "gang", "queue", "found"),
    [
        (None, SAME, None, None, []),
        (BLOCK, SAME, None, QUEUE, []),
        (BLOCK, PAIR, None, QUEUE, []),
        (BLOCK, SAME, Gang.VOLCANO, None, []),
        # Volcano places the whole gang: Servers and Workers asking differently are fine.
        (BLOCK, APART, Gang.VOLCANO, None, []),
        (
            BLOCK,
            APART,
            None,
            QUEUE,
            [
                "spec.runPolicy.schedulingPolicy.topology.replicaTypes: Kueue places replica types"
                " in one domain only as one pod set, whose pods ask the same resources and nodes,"
                " or as two pod sets of which one is a single pod: Server (2 pods) and Worker"
                " (3 pods) ask differently"
            ],
        ),
        (
            BLOCK,
            SAME,
            None,
            None,
            [
                "spec.runPolicy.schedulingPolicy.topology: the default scheduler places pods one"
                " by one and cannot keep them in one domain: queue the job with Kueue (label"
                " kueue.x-k8s.io/queue-name) or run it with the Volcano install"
            ],
        ),
        (
            BLOCK,
            SAME,
            Gang.SCHEDULER_PLUGINS,
            None,
            [
                "spec.runPolicy.schedulingPolicy.topology: scheduler-plugins' coscheduling places"
                " pods one by one and cannot keep them in one domain: queue the job with Kueue"
                " (label kueue.x-k8s.io/queue-name) or run it with the Volcano install"
            ],
        ),
        (BLOCK, SAME, Gang.SCHEDULER_PLUGINS, QUEUE, []),
        (
            {"level": "a" * 250 + ".io/block"},
            SAME,
            Gang.VOLCANO,
            None,
            [
                "spec.runPolicy.schedulingPolicy.topology.level: Volcano's highestTierName takes"
                " at most 253 characters"
            ],
        ),
        # Under Volcano and in a queue, Volcano's problem is told first.
        (
            {"level": "a" * 250 + ".io/block"},
            APART,
            Gang.VOLCANO,
            QUEUE,
            [
                "spec.runPolicy.schedulingPolicy.topology.level: Volcano's highestTierName takes"
                " at most 253 characters"
            ],
        ),
        (
            {**BLOCK, "replicaTypes": ["Tuner"]},
            SAME,
            None,
            QUEUE,
            [
                "spec.runPolicy.schedulingPolicy.topology.replicaTypes: Tuner is not a replica"
                " type of jobMode MXTrain"
            ],
        ),
        (
            {**BLOCK, "replicaTypes": ["Server"]},
            {"Worker": replica(2)},
            None,
            QUEUE,
            [
                "spec.runPolicy.schedulingPolicy.topology.replicaTypes: names no replica type this"
                " job has pods of (Server)"
            ],
        ),
    ],
)
def test_what_is_refused(
    topology: Any, replicas: Any, gang: Gang | None, queue: Queue | None, found: list[str]
) -> None:
    problems = pick(gang, queue).problems(spec_of(topology, replicas))
    assert [str(p) for p in problems] == found


@pytest.mark.parametrize(
    ("topology", "problem"),
    [
        ({"mode": "Required"}, "topology.level: is required"),
        ({"level": "Example.com/Block"}, "topology.level: must be a node label key"),
        ({"level": "a/b/c"}, "topology.level: must be a node label key"),
        ({**BLOCK, "mode": "Strict"}, "topology.mode: must be one of Required, Preferred"),
        ({**BLOCK, "replicaTypes": ["Master"]}, "topology.replicaTypes[0]: must be one of"),
    ],
)
def test_a_topology_that_cannot_be_read_names_its_field(
    topology: dict[str, Any], problem: str
) -> None:
    job = mxjob(run_policy={"schedulingPolicy": {"topology": topology}})
    spec, found = load(job["spec"])
    assert spec is None
    assert any(problem in str(p) for p in found), found
