"""Table tests of the validation rules that need the whole MXJob (docs/api.md#validation):
replica counts per job mode and the job name. Each row names the field paths refused."""

from typing import Any

import pytest

from hooks.core.spec import load
from hooks.core.validation import validate
from tests.builders import mxjob, replica

R = "spec.mxReplicaSpecs"


def problems(name: str = "mnist", **job: Any) -> list[str]:
    spec, unreadable = load(mxjob(name, **job)["spec"])
    assert spec is not None, unreadable
    return [p.path for p in validate(name, spec)]


@pytest.mark.parametrize(
    ("replicas", "mode", "paths"),
    [
        ({"Scheduler": replica(1), "Server": replica(2), "Worker": replica(3)}, None, []),
        ({"Worker": replica(4)}, None, []),  # worker-only
        ({"Scheduler": replica(1), "Worker": replica(1)}, None, []),
        ({"Server": replica(1), "Worker": replica(1)}, None, [f"{R}.Scheduler"]),
        ({"Scheduler": replica(2), "Worker": replica(1)}, None, [f"{R}.Scheduler.replicas"]),
        ({"Scheduler": replica(0), "Worker": replica(1)}, None, [f"{R}.Scheduler.replicas"]),
        ({"Scheduler": replica(1), "Server": replica(1)}, None, [f"{R}.Worker"]),
        ({"Worker": replica(0)}, None, [f"{R}.Worker"]),
        ({"Worker": replica(1), "Tuner": replica(1)}, "MXTrain", [f"{R}.Tuner"]),
        (
            {"TunerTracker": replica(1), "TunerServer": replica(2), "Tuner": replica(1)},
            "MXTune",
            [],
        ),
        (
            {"TunerTracker": replica(2), "TunerServer": replica(1), "Tuner": replica(1)},
            "MXTune",
            [f"{R}.TunerTracker.replicas"],
        ),
        (
            {"TunerTracker": replica(1), "Tuner": replica(1)},
            "MXTune",
            [f"{R}.TunerServer"],
        ),
        (
            {"TunerTracker": replica(1), "TunerServer": replica(1)},
            "MXTune",
            [f"{R}.Tuner.replicas"],
        ),
        (
            {
                "TunerTracker": replica(1),
                "TunerServer": replica(1),
                "Tuner": replica(1),
                "Worker": replica(1),
            },
            "MXTune",
            [f"{R}.Worker"],
        ),
    ],
)
def test_replica_rules(replicas: dict[str, Any], mode: str | None, paths: list[str]) -> None:
    assert sorted(problems(replicas=replicas, mode=mode)) == sorted(paths)


#: A job whose pods can be replaced reserves `-r9999`; its longest child name is then
#: `<name>-scheduler-0-r9999`, 18 characters after the name, so 45 characters fit.
REPLACEABLE = {
    "Scheduler": replica(1, "ExitCode"),
    "Server": replica(1, "ExitCode"),
    "Worker": replica(2, "ExitCode"),
}


@pytest.mark.parametrize(
    ("name", "refused"),
    [
        ("mnist", False),
        ("a", False),
        ("m" * 45, False),
        ("m" * 46, True),
        ("m" * 64, True),
        ("Mnist", True),  # DNS-1035: lower case
        ("1mnist", True),  # starts with a letter
        ("mnist-", True),  # ends with a letter or digit
        ("mn_ist", True),
        ("mn.ist", True),
    ],
)
def test_name_rules(name: str, refused: bool) -> None:
    assert problems(name, replicas=REPLACEABLE) == (["metadata.name"] if refused else [])
