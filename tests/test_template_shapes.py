"""Every field of a pod template the hook reads, given any JSON value: the sync is answered, and a
template the hook cannot use fails the job with MXJobInvalidSpec naming the field, never with an
exception (hypothesis).

The CRD keeps a template's unknown fields (`x-kubernetes-preserve-unknown-fields`), so the API
server lets through a template whose `initContainers` is a number; the hook reads such fields
itself. `READ` lists each one the hook reads, in the shapes a real template gives them; a case
puts any JSON value at one or two of them, in any replica type, with every install variant (no
gang, Volcano, scheduler-plugins, a Kueue queue), through the HTTP app in testing mode.
"""

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hooks.core.api import TUNER_SERVER_KEY
from tests.builders import CONTROLLER, mxjob, request
from testsupport import fuzzing

Json = dict[str, Any]
Path = tuple[str | int, ...]
#: A template with every field the hook reads (two containers, an init container).
FULL_TEMPLATE: Json = {
    "metadata": {"labels": {"team": "a"}, "annotations": {TUNER_SERVER_KEY: "gpu"}},
    "spec": {
        "schedulerName": "default-scheduler",
        "containers": [
            {
                "name": "mxnet",
                "image": "mxjob/mxnet:gpu",
                "imagePullPolicy": "IfNotPresent",
                "securityContext": {"runAsNonRoot": True},
                "env": [{"name": "PS_HEARTBEAT_TIMEOUT", "value": "5"}],
                "ports": [{"name": "mxjob-port", "containerPort": 9091, "protocol": "TCP"}],
                "resources": {"requests": {"cpu": "1"}, "limits": {"memory": "1Gi"}},
            },
            {"name": "sidecar", "image": "busybox", "resources": {"requests": {"cpu": "10m"}}},
        ],
        "initContainers": [
            {"name": "setup", "image": "busybox", "resources": {"limits": {"cpu": "100m"}}}
        ],
    },
}
MXNET: Path = ("spec", "containers", 0)
INIT: Path = ("spec", "initContainers", 0)
#: Where in a template the hook reads (hooks/core/spec.py, pods.py, env.py, rejoin.py, scheduling/,
#: services.py).
READ: tuple[Path, ...] = (
    (),
    ("metadata",),
    ("metadata", "labels"),
    ("metadata", "labels", "team"),
    ("metadata", "annotations"),
    ("metadata", "annotations", TUNER_SERVER_KEY),
    ("spec",),
    ("spec", "schedulerName"),
    ("spec", "containers"),
    MXNET,
    (*MXNET, "name"),
    (*MXNET, "image"),
    (*MXNET, "imagePullPolicy"),
    (*MXNET, "securityContext"),
    (*MXNET, "env"),
    (*MXNET, "env", 0),
    (*MXNET, "env", 0, "name"),
    (*MXNET, "env", 0, "value"),
    (*MXNET, "env", 0, "valueFrom"),
    (*MXNET, "ports"),
    (*MXNET, "ports", 0),
    (*MXNET, "ports", 0, "name"),
    (*MXNET, "ports", 0, "containerPort"),
    (*MXNET, "ports", 0, "protocol"),
    (*MXNET, "resources"),
    (*MXNET, "resources", "requests"),
    (*MXNET, "resources", "requests", "cpu"),
    (*MXNET, "resources", "limits"),
    ("spec", "containers", 1),
    ("spec", "containers", 1, "name"),
    ("spec", "containers", 1, "resources"),
    ("spec", "initContainers"),
    INIT,
    (*INIT, "name"),
    (*INIT, "resources"),
    (*INIT, "resources", "limits"),
    (*INIT, "resources", "limits", "cpu"),
)
#: What the API server can hold of a JSON value: any type, nested a little.
VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=6,
)
GANGS = {
    "none": None,
    "volcano": "scheduling.volcano.sh/v1beta1",
    "scheduler-plugins": "scheduling.x-k8s.io/v1alpha1",
}


def put(template: Json, path: Path, value: Any) -> Any:
    """The template with `value` at `path` (in place; the value itself for the empty path)."""
    if not path:
        return value
    node: Any = template
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return template


@st.composite
def bodies(draw: st.DrawFn, path: Path) -> Json:
    """A sync request of a Scheduler, a Server and Workers whose templates are FULL_TEMPLATE,
    with any value at `path` in the templates of some of them, in any install variant."""
    types = ("Scheduler", "Server", "Worker")
    replicas: Json = {t: {"replicas": 1} for t in types}
    value = draw(VALUES)
    changed = draw(st.lists(st.sampled_from(types), min_size=1, unique=True))
    for rtype, spec in replicas.items():
        spec["template"] = copy.deepcopy(FULL_TEMPLATE)
        if rtype in changed:
            spec["template"] = put(spec["template"], path, value)
    job = mxjob(replicas=replicas)
    if draw(st.booleans()):
        job["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "team-a"}
    controller = copy.deepcopy(CONTROLLER)
    gang = GANGS[draw(st.sampled_from(list(GANGS)))]
    if gang is not None:
        controller["spec"]["childResources"].append({"apiVersion": gang, "resource": "podgroups"})
    return request(job, controller=controller)


@pytest.mark.parametrize("path", READ, ids=lambda path: ".".join(map(str, path)) or "template")
@settings(max_examples=15)  # per field: ~60% of the values drawn are of another type already
@given(data=st.data())
def test_any_value_of_a_read_template_field_is_answered(path: Path, data: st.DataObject) -> None:
    """200 with the campaign's checks (no 5xx, no observed child dropped); a job that fails
    fails as MXJobInvalidSpec, its message naming a template field."""
    status, answer = post(data.draw(bodies(path)))
    assert status == 200
    last = answer["status"]["conditions"][-1]
    if last["type"] == "Failed":
        assert last["reason"] == "MXJobInvalidSpec", last
        assert ".template" in last["message"], last


def post(body: Json) -> tuple[int, Json]:
    """POST /sync through the app in testing mode; every answer passes the campaign's checks."""
    data = fuzzing.encode(body)
    case = fuzzing.Case(0, "template shape", "/sync", data, fuzzing.JSON, body)
    answer = fuzzing.post_in_process(case.path, case.body, case.content_type)
    assert fuzzing.check_answer(case, answer) == []
    return answer[0], fuzzing.decode(answer[2])


CPU_LIMIT: Path = (*MXNET, "resources", "limits", "cpu")
INIT_CPU: Path = (*INIT, "resources", "limits", "cpu")


@pytest.mark.parametrize("gang", GANGS)
@pytest.mark.parametrize(
    ("path", "value", "named"),
    [
        # Once a TypeError in pods.py on every sync (issue 29).
        (("spec", "initContainers"), 7, "spec.initContainers"),
        (("spec", "initContainers"), [7], "spec.initContainers[0]"),
        # Once decimal.Overflow and a ValueError (int() of 5001 digits) in quantity.py on every
        # sync under a gang scheduler (issue 37); elsewhere accepted, and the pods then pending
        # for ever (Kubernetes reads 1e9999999 CPUs, which no scheduler counts).
        (CPU_LIMIT, "1e9999999", "spec.containers[0].resources.limits.cpu"),
        (CPU_LIMIT, "1e5000", "spec.containers[0].resources.limits.cpu"),
        (INIT_CPU, "8Ei", "spec.initContainers[0].resources.limits.cpu"),
        (CPU_LIMIT, "-1", "spec.containers[0].resources.limits.cpu"),
        ((*MXNET, "resources", "requests"), ["cpu"], "spec.containers[0].resources.requests"),
        # Once accepted, then every pod refused by the API server (duplicate names, issue 37).
        (("spec", "containers", 1, "name"), "mxjob-rejoin-wait", "spec.containers[1].name"),
        (("spec", "containers", 1, "name"), "mxnet", "spec.containers[1].name"),
        ((*INIT, "name"), "mxnet", "spec.initContainers[0].name"),
        ((*INIT, "name"), "sidecar", "spec.initContainers[0].name"),
        ((*INIT, "name"), "mxjob-rejoin-wait", "spec.initContainers[0].name"),
    ],
)
def test_an_unreadable_template_field_fails_the_job_naming_it(
    path: Path, value: Any, named: str, gang: str
) -> None:
    replicas: Json = {"Scheduler": {"replicas": 1}, "Worker": {"replicas": 2}}
    for spec in replicas.values():
        spec["template"] = copy.deepcopy(FULL_TEMPLATE)
    replicas["Worker"]["template"] = put(replicas["Worker"]["template"], path, value)
    controller = copy.deepcopy(CONTROLLER)
    if GANGS[gang] is not None:
        rule = {"apiVersion": GANGS[gang], "resource": "podgroups"}
        controller["spec"]["childResources"].append(rule)
    status, answer = post(request(mxjob(replicas=replicas), controller=controller))
    assert status == 200
    last = answer["status"]["conditions"][-1]
    assert (last["type"], last["reason"]) == ("Failed", "MXJobInvalidSpec")
    assert f"spec.mxReplicaSpecs.Worker.template.{named}" in last["message"], last
    assert answer["children"] == []


def test_two_init_containers_of_one_name_fail_the_job_naming_the_second() -> None:
    replicas: Json = {"Worker": {"replicas": 1, "template": copy.deepcopy(FULL_TEMPLATE)}}
    inits = replicas["Worker"]["template"]["spec"]["initContainers"]
    inits.append(copy.deepcopy(inits[0]))
    status, answer = post(request(mxjob(replicas=replicas)))
    assert status == 200
    message = answer["status"]["conditions"][-1]["message"]
    assert (
        "spec.mxReplicaSpecs.Worker.template.spec.initContainers[1].name: 'setup' names another"
        in message
    ), message
