"""Table tests for docs/restarts.md#resizing: how the spec's cluster differs from the one a run
started with (its config ConfigMap), in the words of the restart's message."""

import copy
from typing import Any

import pytest

from hooks.core.build.env import config_map_data
from hooks.core.children import ConfigMap, decode_child
from hooks.core.job import Job
from hooks.core.restart.resize import change
from hooks.core.spec import load
from tests.builders import mxjob, replica

TRAIN = {"Scheduler": replica(1), "Server": replica(1), "Worker": replica(2)}
TUNE = {"TunerTracker": replica(1), "TunerServer": replica(2), "Tuner": replica(1)}


def job_of(replicas: dict[str, Any], mode: str = "MXTrain") -> Job:
    spec, problems = load(mxjob(replicas=replicas, mode=mode)["spec"])
    assert spec is not None and not problems, problems
    return Job("mnist", "default", spec, None, None, None)


def started_with(replicas: dict[str, Any], mode: str = "MXTrain") -> ConfigMap:
    """The config ConfigMap a run of these replicas was started with."""
    data = config_map_data("mnist", job_of(replicas, mode).spec, None)
    return decode_child(ConfigMap, {"metadata": {"name": "mnist-mxjob-config"}, "data": data})


def edited(replicas: dict[str, Any], **counts: int) -> dict[str, Any]:
    changed = copy.deepcopy(replicas)
    for rtype, count in counts.items():
        changed[rtype]["replicas"] = count
    return changed


def ported(replicas: dict[str, Any], rtype: str, port: int) -> dict[str, Any]:
    changed = copy.deepcopy(replicas)
    container = changed[rtype]["template"]["spec"]["containers"][0]
    container["ports"] = [{"name": "mxjob-port", "containerPort": port}]
    return changed


def keyed(replicas: dict[str, Any], key: str) -> dict[str, Any]:
    changed = copy.deepcopy(replicas)
    changed["TunerServer"]["template"]["metadata"] = {"annotations": {"tuner-server-key": key}}
    return changed


@pytest.mark.parametrize(
    ("mode", "was", "now", "words"),
    [
        ("MXTrain", TRAIN, TRAIN, None),
        ("MXTrain", TRAIN, edited(TRAIN, Worker=4), "resized from 2 to 4 Workers"),
        ("MXTrain", TRAIN, edited(TRAIN, Worker=1), "resized from 2 to 1 Worker"),
        (
            "MXTrain",
            TRAIN,
            edited(TRAIN, Server=2, Worker=3),
            "resized from 1 to 2 Servers and from 2 to 3 Workers",
        ),
        (
            "MXTrain",
            {"Worker": replica(2)},
            {"Worker": replica(3)},
            "resized from 2 to 3 Workers",
        ),
        ("MXTrain", TRAIN, ported(TRAIN, "Scheduler", 9092), "the Scheduler's port changed"),
        ("MXTune", TUNE, edited(TUNE, TunerServer=3), None),
        ("MXTune", keyed(TUNE, "a"), keyed(TUNE, "b"), "its tuner-server keys changed"),
    ],
    ids=[
        "unchanged",
        "grown",
        "shrunk to one",
        "two types",
        "worker-only",
        "a port",
        "TunerServers in place",
        "a tuner-server key",
    ],
)
def test_what_the_run_must_restart_for(
    mode: str, was: dict[str, Any], now: dict[str, Any], words: str | None
) -> None:
    job = job_of(now, mode)
    wanted = config_map_data(job.name, job.spec, None)
    assert change(job, started_with(was, mode), wanted) == words


@pytest.mark.parametrize(
    "data",
    [None, {}, {"cluster": "{not json", "labels": "{}"}, {"cluster": "[1]", "labels": "{}"}],
    ids=["no config", "no data", "not JSON", "not a cluster"],
)
def test_a_config_the_hook_cannot_read_never_restarts_a_running_job(data: Any) -> None:
    job = job_of(edited(TRAIN, Worker=4))
    wanted = config_map_data(job.name, job.spec, None)
    observed = None
    if data is not None:
        observed = decode_child(
            ConfigMap, {"metadata": {"name": "mnist-mxjob-config"}, "data": data}
        )
    assert change(job, observed, wanted) is None
