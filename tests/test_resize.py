"""Table tests for docs/restarts.md#resizing: how the spec's cluster differs from the one a run
started with (its config ConfigMap), in the words of the restart's message; how long a run
edits started runs before an edit restarts it (#edits-in-a-row); the names a run begun before
the upgrade keeps (#upgrading)."""

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from hooks.core.build.env import config_map_data
from hooks.core.children import ConfigMap, decode_child
from hooks.core.job import Job
from hooks.core.naming import RunNames
from hooks.core.restart.resize import change, edit_waits, edits_in_a_row, held, run_names
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


@pytest.mark.parametrize(
    ("edits", "seconds"),
    [(0, 0), (1, 30), (2, 60), (3, 120), (4, 240), (5, 300), (6, 300), (10**9, 300)],
)
def test_a_run_edits_started_waits_twice_as_long_for_each_in_a_row(
    edits: int, seconds: int
) -> None:
    """docs/restarts.md#edits-in-a-row: 30 s, doubled, up to 5 minutes; none after a run no
    edit started (the job's first, or a failure's)."""
    assert edit_waits(edits) == timedelta(seconds=seconds)


START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("edits", "after", "row"),
    [(0, 5, 1), (1, 40, 2), (4, 300, 5), (4, 599, 5), (4, 600, 1), (7, 3600, 1)],
)
def test_a_row_of_edits_ends_once_a_run_had_run_ten_minutes(
    edits: int, after: int, row: int
) -> None:
    assert edits_in_a_row(edits, START, START + timedelta(seconds=after)) == row


@pytest.mark.parametrize(
    ("edits", "after", "until"),
    [(0, 1, None), (1, 10, 30), (1, 30, None), (2, 59, 60), (5, 299, 300), (5, 300, None)],
)
def test_an_edit_waits_until_its_run_has_run_its_wait(
    edits: int, after: int, until: int | None
) -> None:
    job = job_of(edited(TRAIN, Worker=3))
    waits = held(job, "resized from 2 to 3 Workers", edits, START, START + timedelta(seconds=after))
    if until is None:
        assert waits is None
    else:
        assert waits is not None and waits.until == START + timedelta(seconds=until)
        assert waits.words.startswith("resized from 2 to 3 Workers restarts the whole job at ")


def test_a_never_job_whose_name_leaves_no_room_for_a_new_run_is_not_resized() -> None:
    """Never spared the name the `-r<attempt>` of restarted pods (hooks/core/validation.py);
    its resize would make pods the API server refuses after deleting the running ones."""
    spec, problems = load(mxjob(replicas={"Worker": replica(3)})["spec"])
    assert spec is not None and not problems
    for name, fits in (("a" * 48, True), ("a" * 49, False)):
        job = Job(name, "default", spec, None, None, None)
        waits = held(job, "resized from 2 to 3 Workers", 0, START, START)
        assert (waits is None) is fits, name
        if waits is not None:
            assert waits.until is None and "at most 48 characters" in waits.words


def _config(job: Job, subdomain: str | None, name: str = "mnist-mxjob-config") -> ConfigMap:
    data = config_map_data(job.name, job.spec, subdomain)
    return decode_child(ConfigMap, {"metadata": {"name": name}, "data": data})


def _per_job(job: Job) -> Job:
    spec, problems = load(mxjob(replicas=TRAIN, serviceMode="PerJob")["spec"])
    assert spec is not None and not problems
    return Job(job.name, job.namespace, spec, None, None, None)


@pytest.mark.parametrize(
    ("run", "shared", "observed", "names"),
    [
        (0, False, None, RunNames("mnist-mxjob-config", "mnist-mxjob")),
        (2, False, None, RunNames("mnist-mxjob-cfg-2", "mnist-mxjob")),
        (2, True, None, RunNames("mnist-mxjob-config", "mnist-mxjob")),
        (0, False, "mnist-mxjob", RunNames("mnist-mxjob-config", "mnist-mxjob")),
        (0, False, "mnist", RunNames("mnist-mxjob-config", "mnist")),
        (2, True, "mnist", RunNames("mnist-mxjob-config", "mnist")),
        (0, False, "", RunNames("mnist-mxjob-config", "mnist-mxjob")),
    ],
    ids=[
        "new job",
        "a run of this version",
        "a run begun before, between runs",
        "a run of this version, running",
        "a PerJob run begun before",
        "a later PerJob run begun before",
        "a run begun with a Service per replica",
    ],
)
def test_a_run_begun_before_the_upgrade_keeps_its_names(
    run: int, shared: bool, observed: str | None, names: RunNames
) -> None:
    """docs/restarts.md#upgrading: the config every run read before, and the one Service
    named after the job, for as long as a run that began with them lasts."""
    job = _per_job(job_of(TRAIN))
    config_maps = {}
    if observed is not None:
        config = _config(job, observed or None, names.config)
        config_maps[config.metadata.name] = config
    assert run_names(job, run, shared_config=shared, config_maps=config_maps) == names
