"""Fuzzing the HTTP edge and the core behind it (hypothesis, through the Flask test client).

Whatever arrives, the hook never answers 500 and never raises: malformed JSON is a 400, a wrong
content type a 415, a body that is not a sync request a 422, and anything shaped like a sync
request a 200 whose body has exactly the keys of docs/http.md (the checks of
testsupport/fuzzing.py, which `make fuzz` runs on 100,000 requests through gunicorn). Inputs:
random JSON values, truncated JSON, content types, huge numbers, deep nesting, recorded
requests with a value replaced at any depth, random MXJob specs (valid and invalid, resource
quantities at Kubernetes' edges, reserved container names) and random observed children with
garbage fields; and for the conversion webhook, stored jobs with stashes of any shape, which
must always read at an old version.

The app runs with TESTING on, so a bug surfaces as the exception itself and hypothesis shrinks
the input. How many inputs were tried is printed in pytest's terminal summary and kept in
`.pytest_cache` (key `mxjob/fuzz`). Budget: about 30 s for the module on a loaded 2-CPU machine.
"""

import copy
import json
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from flask.testing import FlaskClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hooks.app import create_app
from hooks.core.conversion.review import convert
from hooks.core.conversion.versions import V1, V1_FIELDS
from hooks.core.fields import MAX_DEPTH
from tests import golden
from tests.builders import NOW, mxjob
from tests.conversion_cases import review as conversion_review
from testsupport import fuzzing

BASES: list[dict[str, Any]] = [golden.load(case).request for case in golden.folders()]
JSON = "application/json"
FUZZ = settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
#: Inputs tried, by test; reported at the end of the session.
TRIED: Counter[str] = Counter()

APP = create_app({"TESTING": True, "CLOCK": lambda: NOW})
CLIENT: FlaskClient = APP.test_client()


class _Summary:
    """A pytest plugin registered by the module fixture: one summary line with the counts."""

    def __init__(self, counts: dict[str, int]) -> None:
        self.counts = counts

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        total = sum(self.counts.values())
        detail = ", ".join(f"{k} {v}" for k, v in sorted(self.counts.items()))
        terminalreporter.write_line(f"fuzz: {total} inputs tried ({detail})")


@pytest.fixture(scope="module", autouse=True)
def _report(request: pytest.FixtureRequest) -> Iterator[None]:
    """Register the summary plugin and, at the end of the module, record the counts."""
    yield
    counts = dict(TRIED)
    cache = getattr(request.config, "cache", None)
    if cache is not None:
        cache.set("mxjob/fuzz", counts)
    request.config.pluginmanager.register(_Summary(counts), "mxjob-fuzz-summary")


def send(
    kind: str, data: bytes, path: str = "/sync", content_type: str | None = JSON
) -> tuple[int, Any]:
    """POST through the test client; the answer must pass the campaign's checks
    (testsupport/fuzzing.py: no 5xx, the error shape, the response shape, child names, running pods
    kept by an invalid spec). A bug raises here (TESTING), so hypothesis shrinks the input."""
    TRIED[kind] += 1
    answer = CLIENT.post(path, data=data, content_type=content_type)
    case = fuzzing.Case(0, kind, path, data, content_type, _request_of(data))
    got = (answer.status_code, answer.content_type or "", answer.data)
    assert fuzzing.check_answer(case, got) == [], answer.data[:500]
    return answer.status_code, json.loads(answer.data)


def _request_of(data: bytes) -> dict[str, Any] | None:
    """The request the checks compare the answer with, when the body is a JSON object."""
    try:
        body = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    return body if isinstance(body, dict) else None


def encode(value: object) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")


# --- building blocks ---------------------------------------------------------------------

HUGE = st.sampled_from(
    [
        2**31,
        2**53 + 1,
        2**63 - 1,
        2**63,
        2**64 - 1,
        2**64,
        -(2**63) - 1,
        10**30,
        1e308,
        -1e308,
        5e-324,
        0.5,
        -0.0,
    ]
) | st.integers(min_value=-(2**80), max_value=2**80)
DIGITS = st.sampled_from(["0", "7", "-1", "01", " 1", "1e3", "9" * 30, "9" * 4400])
KEYS = st.sampled_from(
    ["metadata", "name", "spec", "status", "kind", "labels", "phase", "containers", "image"]
) | st.text(max_size=8)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=16,
)
ANY = VALUES | HUGE | DIGITS
SMALL = st.integers(min_value=-2, max_value=6)
TIMES = (
    st.sampled_from(
        [
            "2026-03-01T12:00:00Z",
            "2026-03-01T12:00:30.123456Z",
            "2026-03-01T12:00:00+02:00",
            "0001-01-01T00:00:00Z",
            "9999-12-31T23:59:59Z",
            "2026-13-45T99:99:99Z",
            "yesterday",
            "",
        ]
    )
    | ANY
)


DEEP = "__deep__"


def nested_json(depth: int) -> str:
    """`depth` levels of alternating objects and arrays around "x", built without recursion."""
    opening = "".join('{"a":' if i % 2 == 0 else "[" for i in range(depth))
    closing = "".join("}" if i % 2 == 0 else "]" for i in reversed(range(depth)))
    return f'{opening}"x"{closing}'


# --- 1. whatever the body is ------------------------------------------------------------


@FUZZ
@given(body=ANY)
def test_any_json_value(body: object) -> None:
    status, _ = send("json-value", encode(body), "/sync")
    assert status in (200, 422)


@FUZZ
@given(data=st.binary(max_size=200))
def test_any_bytes(data: bytes) -> None:
    status, _ = send("bytes", data)
    assert status in (200, 400, 422)


@FUZZ
@given(base=st.sampled_from(BASES), cut=st.floats(min_value=0, max_value=1, exclude_max=True))
def test_truncated_json(base: dict[str, Any], cut: float) -> None:
    data = json.dumps(base).encode()
    status, body = send("truncated", data[: int(len(data) * cut)])
    assert status == 400
    assert body["error"] == "malformed_json"


@FUZZ
@given(
    content_type=st.one_of(
        st.none(),
        st.sampled_from(
            ["text/plain", "application/json-patch+json", "application/yaml", "multipart/x"]
        ),
        st.text(max_size=30),
    )
)
def test_content_types(content_type: str | None) -> None:
    data = json.dumps(BASES[0]).encode()
    try:
        status, _ = send("content-type", data, content_type=content_type)
    except ValueError:  # werkzeug refuses to build a request with a broken header value
        return
    mimetype = (content_type or "").split(";")[0].strip().lower()
    assert status == (200 if mimetype == JSON else 415)


# --- 2. a recorded request with values replaced at any depth -----------------------------


@st.composite
def mutated(draw: st.DrawFn) -> dict[str, Any]:
    """A recorded request with 1-3 values replaced or removed anywhere in it."""
    body: dict[str, Any] = copy.deepcopy(draw(st.sampled_from(BASES)))
    for _ in range(draw(st.integers(1, 3))):
        parent: Any = None
        key: Any = None
        node: Any = body
        while isinstance(node, dict | list) and node and draw(st.integers(0, 9)) > 0:
            keys = list(node) if isinstance(node, dict) else list(range(len(node)))
            parent, key = node, draw(st.sampled_from(keys))
            node = node[key]
        if parent is None:
            continue
        if isinstance(parent, dict) and draw(st.booleans()) and draw(st.booleans()):
            del parent[key]
            continue
        # A huge replica count is not fuzzed here: see test_huge_replica_counts below.
        value = SMALL | st.text(max_size=4) if key == "replicas" else ANY
        parent[key] = draw(value)
    return body


@FUZZ
@given(body=mutated())
def test_recorded_request_with_wrong_values_anywhere(body: dict[str, Any]) -> None:
    status, _ = send("mutated", encode(body), "/sync")
    assert status in (200, 422)


#: Nesting depths around the limits that matter: orjson writes 254 levels and reads 1024,
#: Python recurses about 1000 frames deep.
DEPTHS = (1, 254, 255, 400, 500, 1000, 1030)
PLACES = ("args", "node-selector", "pod-status", "controller", "parent-status")


@pytest.mark.usefixtures("default_recursion_limit")
@pytest.mark.parametrize("where", PLACES)
@pytest.mark.parametrize("depth", DEPTHS)
def test_deep_nesting(depth: int, where: str) -> None:
    """Deterministic, not generated: whether recursion overflows depends on the stack depth
    at the time, which hypothesis would (rightly) report as flaky while shrinking."""
    body = copy.deepcopy(BASES[0])
    deep = DEEP
    first = next(iter(body["parent"]["spec"]["mxReplicaSpecs"].values()))
    if where == "args":
        first["template"]["spec"]["containers"][0]["args"] = deep
    elif where == "node-selector":
        first["template"]["spec"]["nodeSelector"] = {"deep": deep}
    elif where == "pod-status":
        body["children"]["Pod.v1"] = {"p": {"metadata": {"name": "p"}, "status": deep}}
    elif where == "controller":
        body["controller"] = {"spec": deep}
    else:
        body["parent"]["status"] = {"conditions": deep}
    data = encode(body).replace(json.dumps(DEEP).encode(), nested_json(depth).encode())
    status, answer = send("deep", data)
    # Past orjson's limit (1024 levels in all) the body is refused as malformed JSON; a parent
    # status deeper than MAX_DEPTH is not one the hook wrote: rebuilt from the children; a child
    # nested past what msgspec scans (Python's recursion limit) is no object the API server
    # holds: refused, naming it.
    if depth > 1024:
        assert (status, answer["error"]) == (400, "malformed_json")
    elif where == "pod-status" and depth == 1000:
        assert (status, answer["error"]) == (422, "not_a_sync_request")
        assert "children.Pod.v1.p" in answer["message"]
    else:
        assert status == 200
        if where == "parent-status" and depth > MAX_DEPTH:
            assert answer["status"]["conditions"][0]["type"] == "Created"


# --- 3. random MXJob specs ----------------------------------------------------------------

TYPE_KEYS = st.sampled_from(
    ["Scheduler", "Server", "Worker", "TunerTracker", "TunerServer", "Tuner", "worker", "SERVER"]
) | st.sampled_from(["Chief", "PS", "", "Worker "])
PORTS = st.fixed_dictionaries(
    {"containerPort": st.integers(-1, 70000) | HUGE | ANY},
    optional={
        "name": st.sampled_from(["mxjob-port", "metrics", ""]) | ANY,
        "protocol": st.sampled_from(["TCP", "UDP"]) | ANY,
    },
)
ENV_VARS = st.fixed_dictionaries(
    {"name": st.sampled_from(["DMLC_ROLE", "MX_CONFIG", "A", ""]) | ANY},
    optional={"value": st.text(max_size=6) | ANY, "valueFrom": ANY},
)
#: Quantities Kubernetes reads, rounds, refuses, or reads and no scheduler counts
#: (`1e9999999` once raised decimal.Overflow under a gang scheduler).
QUANTITIES = st.sampled_from(
    ["1", "500m", "2Gi", "1e9999999", "1e5000", "8Ei", "-1", "1e-9999999", "0.5n", "1e2147483648"]
) | st.builds(
    "{}{}".format,
    st.integers(-(10**20), 10**20) | st.floats(0, 1e6, allow_nan=False),
    st.sampled_from(["", "m", "n", "k", "Ki", "Ei", "E", "e18", "e-12", "E3", "e0400"]),
)
AMOUNTS = st.dictionaries(
    st.sampled_from(["cpu", "memory", "nvidia.com/gpu"]), QUANTITIES | HUGE, max_size=2
)
RESOURCES = st.fixed_dictionaries({}, optional={"requests": AMOUNTS, "limits": AMOUNTS})
CONTAINERS = st.fixed_dictionaries(
    {
        "name": st.sampled_from(["mxnet", "mxnet", "sidecar", "MXNET", "mxjob-rejoin-wait", ""])
        | ANY,
        "image": st.sampled_from(["mxjob/mxnet:gpu", ""]) | ANY,
    },
    optional={
        "ports": st.lists(PORTS, max_size=3) | ANY,
        "env": st.lists(ENV_VARS, max_size=3) | ANY,
        "args": ANY,
        "resources": RESOURCES | ANY,
    },
)
TEMPLATES = st.fixed_dictionaries(
    {
        "spec": st.fixed_dictionaries(
            {"containers": st.lists(CONTAINERS, min_size=0, max_size=3) | ANY},
            optional={"initContainers": st.lists(CONTAINERS, max_size=2), "restartPolicy": ANY},
        )
        | ANY
    },
    optional={
        "metadata": st.fixed_dictionaries(
            {},
            optional={
                "labels": st.dictionaries(st.text(max_size=6), st.text(max_size=6) | ANY),
                "annotations": st.dictionaries(
                    st.sampled_from(["tuner-server-key", "x"]), st.text(max_size=6) | ANY
                ),
                "creationTimestamp": ANY,
            },
        )
        | ANY
    },
)
REPLICA_SPECS = st.fixed_dictionaries(
    {"template": TEMPLATES},
    optional={
        "replicas": SMALL | st.none() | st.booleans() | st.text(max_size=3) | st.floats(0, 3),
        "restartPolicy": st.sampled_from(["Always", "OnFailure", "Never", "ExitCode", "No"]) | ANY,
    },
)
NUMBERS = st.integers(-2, 100_000) | HUGE | ANY
SCHEDULING = st.fixed_dictionaries(
    {},
    optional={
        "minAvailable": NUMBERS,
        "queue": ANY,
        "priorityClass": ANY,
        "minResources": st.dictionaries(st.text(max_size=5), st.text(max_size=5)) | ANY,
        "scheduleTimeoutSeconds": NUMBERS,
    },
)
RUN_POLICY = {
    "cleanPodPolicy": st.sampled_from(["All", "Running", "None", "Some"]) | ANY,
    "ttlSecondsAfterFinished": NUMBERS,
    "activeDeadlineSeconds": NUMBERS,
    "backoffLimit": NUMBERS,
    "suspend": st.booleans() | ANY,
    "schedulingPolicy": SCHEDULING | ANY,
}
SPECS = st.fixed_dictionaries(
    {"mxReplicaSpecs": st.dictionaries(TYPE_KEYS, REPLICA_SPECS, min_size=1, max_size=4)},
    optional={
        "jobMode": st.sampled_from(["MXTrain", "MXTune", "mxtrain", "Train"]) | ANY,
        "runPolicy": st.fixed_dictionaries({}, optional=RUN_POLICY) | ANY,
        # the kubeflow/mxnet-operator v1 layout: run policy fields inline
        **{k: v for k, v in RUN_POLICY.items() if k in ("cleanPodPolicy", "backoffLimit")},
    },
)
NAMES = st.sampled_from(["mnist", "a", "x" * 50, "Bad_Name", "-a", "job-1"]) | st.text(max_size=64)


def parent(name: str, spec: object, status: object = None) -> dict[str, Any]:
    """An MXJob from the builders with any (possibly malformed) spec and status."""
    job = mxjob(name=name)
    job["spec"] = spec
    if status is not None:
        job["status"] = status
    return job


CONTROLLERS = st.sampled_from(
    [
        {},
        BASES[0]["controller"],
        {
            "spec": {
                "childResources": [
                    {"apiVersion": "scheduling.volcano.sh/v1beta1", "resource": "podgroups"}
                ]
            }
        },
        {
            "spec": {
                "childResources": [
                    {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "resource": "podgroups"}
                ]
            }
        },
    ]
) | ANY.filter(lambda v: isinstance(v, dict))


@FUZZ
@given(name=NAMES, spec=SPECS, controller=CONTROLLERS)
def test_random_specs(name: str, spec: dict[str, Any], controller: Any) -> None:
    body = {"controller": controller, "parent": parent(name, spec), "children": {}}
    status, _ = send("spec", encode(body), "/sync")
    assert status == 200


GANG_CONTROLLERS = st.sampled_from(
    [
        {"spec": {"childResources": [{"apiVersion": api, "resource": "podgroups"}]}}
        for api in ("scheduling.volcano.sh/v1beta1", "scheduling.x-k8s.io/v1alpha1")
    ]
)


@settings(FUZZ, max_examples=60)
@given(resources=st.lists(RESOURCES, min_size=1, max_size=3), controller=GANG_CONTROLLERS)
def test_any_quantity_under_a_gang_scheduler(
    resources: list[dict[str, Any]], controller: dict[str, Any]
) -> None:
    """A valid job whose containers request any quantity, where a PodGroup adds them up (once
    a 500 on every sync for `1e9999999`): answered, and Failed only naming a quantity."""
    replicas: dict[str, dict[str, Any]] = {"Scheduler": {"replicas": 1}, "Worker": {"replicas": 2}}
    for spec in replicas.values():
        containers = [
            {"name": f"c{i}", "image": "i", "resources": r} for i, r in enumerate(resources)
        ]
        containers[0]["name"] = "mxnet"
        spec["template"] = {"spec": {"containers": containers}}
    body = {"controller": controller, "parent": mxjob(replicas=replicas), "children": {}}
    status, answer = send("quantity", encode(body), "/sync")
    assert status == 200
    last = answer["status"]["conditions"][-1]
    if last["type"] == "Failed":
        assert ".resources." in last["message"], last


# --- 3b. stored jobs with stashes of any shape: every read at an old version converts ------


#: A value of a stash entry, or the mark where JSON nested `depth` levels deep goes.
STASH_VALUES = ANY | st.just(DEEP) | st.sampled_from([10000, -5, "kueue.x-k8s.io/multikueue"])
STASH_ENTRIES = (
    st.fixed_dictionaries(
        {
            "at": st.sampled_from([list(p) for p in fuzzing.STASH_PATHS])
            | st.lists(KEYS, max_size=3)
        },
        optional={"was": STASH_VALUES, "to": STASH_VALUES},
    )
    | ANY
)


@settings(FUZZ, max_examples=200)
@given(
    base=st.sampled_from(BASES),
    entries=st.lists(STASH_ENTRIES, min_size=1, max_size=3),
    depth=st.sampled_from([1, 65, 600, 990, 5000]),
    version=st.sampled_from(fuzzing.OLD_VERSIONS),
    reading=st.booleans(),
)
def test_random_stashes(
    base: dict[str, Any], entries: list[Any], depth: int, version: str, reading: bool
) -> None:
    """A stored job with a stash of any shape (once a KeyError or a RecursionError, failing
    every list at the old version) is read at the old version; written at it, it converts or
    is refused naming a field, never a 500."""
    job = copy.deepcopy(base["parent"])
    job.update(apiVersion=V1, kind="MXJob")
    obj = job if reading else convert(job, version)
    key = f"mxjob.kubeflow.org/{version.rpartition('/')[2]}-fields" if reading else V1_FIELDS
    text = json.dumps(entries).replace(json.dumps(DEEP), nested_json(depth))
    obj.setdefault("metadata", {}).setdefault("annotations", {})[key] = text
    review = conversion_review(version if reading else V1, obj)
    label = "conversion-read" if reading else "conversion-write"
    status, answer = send(label, encode(review), "/convert")
    assert status == 200
    if reading:
        assert answer["response"]["result"] == {"status": "Success"}


# --- 4. random observed children ------------------------------------------------------------

CONDITIONS = st.lists(
    st.fixed_dictionaries(
        {
            "type": st.sampled_from(
                ["Created", "Running", "Restarting", "Succeeded", "Failed", "Suspended", "X"]
            ),
            "status": st.sampled_from(["True", "False", "Unknown"]),
        },
        optional={
            "reason": st.sampled_from(["MXJobInvalidSpec", "MXJobFailed", "DeadlineExceeded"])
            | ANY,
            "message": ANY,
            "lastTransitionTime": TIMES,
            "lastUpdateTime": TIMES,
        },
    ),
    max_size=4,
)
PARENT_STATUS = st.fixed_dictionaries(
    {},
    optional={
        "conditions": CONDITIONS | ANY,
        "startTime": TIMES,
        "completionTime": TIMES,
        "replicaStatuses": ANY,
        "observedGeneration": ANY,
    },
)
# Children come from the API server, which holds every field in its Kubernetes type: the values
# vary (odd names, unknown phases and reasons, exit codes of any int32, timestamps of any zone
# and year), the types do not. A field of another type is refused (test below).
INT32 = st.integers(min_value=-(2**31), max_value=2**31 - 1)
KUBE_TIMES = st.sampled_from(
    [
        "2026-03-01T12:00:00Z",
        "2026-03-01T12:00:30.123456Z",
        "2026-03-01T12:00:00+02:00",
        "0001-01-01T00:00:00Z",
        "9999-12-31T23:59:59Z",
        None,
    ]
)
TEXT = st.text(max_size=12)
STATES: st.SearchStrategy[dict[str, Any]] = st.one_of(
    st.fixed_dictionaries(
        {"running": st.fixed_dictionaries({}, optional={"startedAt": KUBE_TIMES})}
    ),
    st.fixed_dictionaries(
        {
            "terminated": st.fixed_dictionaries(
                {},
                optional={
                    "exitCode": st.sampled_from([0, 1, 137, 138, 143, 255]) | INT32,
                    "reason": TEXT,
                    # Any text: with FallbackToLogsOnError the end of the container's log.
                    "message": st.text(max_size=300),
                    "startedAt": KUBE_TIMES,
                    "finishedAt": KUBE_TIMES,
                },
            )
        }
    ),
    st.fixed_dictionaries(
        {"waiting": st.fixed_dictionaries({}, optional={"reason": TEXT, "message": TEXT})}
    ),
    st.just({}),
)
CONTAINER_STATUSES = st.fixed_dictionaries(
    {"name": st.sampled_from(["mxnet", "sidecar"]) | TEXT},
    optional={"state": STATES, "restartCount": SMALL | INT32, "lastState": STATES},
)


@st.composite
def pods(draw: st.DrawFn, job: str) -> dict[str, Any]:
    rtype = draw(st.sampled_from(["scheduler", "server", "worker", "tuner", "tunerserver"]))
    index = draw(st.integers(0, 5) | st.sampled_from([10**6, 10**30]))
    attempt = draw(st.sampled_from(["", "-r1", "-r2", "-r10000", "-r0", "-r" + "9" * 4400]))
    name = draw(st.just(f"{job}-{rtype}-{index}{attempt}") | st.text(max_size=20))
    metadata: dict[str, Any] = {"name": name, "namespace": "default"}
    metadata.update(
        draw(
            st.fixed_dictionaries(
                {},
                optional={
                    "creationTimestamp": KUBE_TIMES,
                    "deletionTimestamp": KUBE_TIMES,
                    "labels": st.dictionaries(st.text(max_size=8), st.text(max_size=4)),
                    "annotations": st.fixed_dictionaries(
                        {},
                        optional={"mxjob.kubeflow.org/restarts-before": DIGITS},
                    ),
                },
            )
        )
    )
    status = draw(
        st.fixed_dictionaries(
            {},
            optional={
                "phase": st.sampled_from(
                    ["Pending", "Running", "Succeeded", "Failed", "Unknown", "Done"]
                )
                | TEXT,
                "containerStatuses": st.lists(CONTAINER_STATUSES, max_size=3),
                "startTime": KUBE_TIMES,
                "reason": st.sampled_from(["Evicted", "Preempting"]) | TEXT,
                "podIP": ANY,  # not read: any value at all
            },
        )
    )
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "status": status}


@st.composite
def others(draw: st.DrawFn, job: str) -> tuple[str, dict[str, Any]]:
    """A Service, ConfigMap (incl. the result record) or PodGroup with odd values."""
    group, kind = draw(
        st.sampled_from(
            [
                ("Service.v1", "Service"),
                ("ConfigMap.v1", "ConfigMap"),
                ("PodGroup.scheduling.volcano.sh/v1beta1", "PodGroup"),
                ("Pod.v1", "Pod"),
            ]
        )
    )
    name = draw(
        st.sampled_from([job, f"{job}-mxjob-result", f"{job}-mxjob-config", f"{job}-worker-0"])
        | st.text(max_size=10)
    )
    record = st.builds(json.dumps, PARENT_STATUS | ANY) | st.sampled_from(["{", "[]", "null"])
    child: dict[str, Any] = {"kind": kind, "metadata": {"name": name}}
    data = st.fixed_dictionaries({}, optional={"status": record}) if kind == "ConfigMap" else ANY
    child.update(
        draw(
            st.fixed_dictionaries(
                {},
                optional={
                    "data": data,
                    # A pod's spec is read (where it is bound); any other kind's only echoed.
                    "spec": st.dictionaries(KEYS, ANY, max_size=3) if kind == "Pod" else ANY,
                    "status": st.fixed_dictionaries({}, optional={"phase": TEXT})
                    if kind in ("PodGroup", "Pod")
                    else ANY,
                },
            )
        )
    )
    return group, child


@st.composite
def observed(draw: st.DrawFn) -> dict[str, Any]:
    base = draw(st.sampled_from(BASES))
    job = base["parent"]["metadata"]["name"]
    body: dict[str, Any] = copy.deepcopy(base)
    if draw(st.booleans()):
        body["parent"]["status"] = draw(PARENT_STATUS)
    if draw(st.booleans()):
        policy = body["parent"]["spec"].setdefault("runPolicy", {})
        policy[draw(st.sampled_from(["activeDeadlineSeconds", "backoffLimit"]))] = draw(NUMBERS)
    groups: dict[str, dict[str, Any]] = body["children"]
    for pod in draw(st.lists(pods(job), max_size=6)):
        groups.setdefault("Pod.v1", {})[pod["metadata"]["name"]] = pod
    for group, child in draw(st.lists(others(job), max_size=3)):
        groups.setdefault(group, {})[child["metadata"]["name"]] = child
    body["finalizing"] = False  # as Metacontroller sends it without a finalize hook
    return body


@FUZZ
@given(body=observed())
def test_random_observed_children(body: dict[str, Any]) -> None:
    status, _ = send("children", encode(body), "/sync")
    assert status == 200


#: Fields of observed children the hook reads, each with a value of a type Kubernetes never
#: gives it.
MISTYPED = [
    ("Pod", ("metadata", "labels", "training.kubeflow.org/replica-type"), ["worker"]),
    ("Pod", ("metadata", "annotations", "mxjob.kubeflow.org/run"), 0),
    ("Pod", ("metadata", "creationTimestamp"), "yesterday"),
    ("Pod", ("status", "phase"), {"Running": True}),
    ("Pod", ("status", "containerStatuses"), {"mxnet": {}}),
    ("Pod", ("status", "startTime"), 1772366400),
    ("Pod", ("spec", "nodeName"), ["node-1"]),
    ("Service", ("metadata", "labels"), ["a", "b"]),
    ("Service", ("metadata", "name"), None),
    ("ConfigMap", ("data", "cluster"), {"scheduler": []}),
]


@pytest.mark.parametrize(("kind", "path", "value"), MISTYPED, ids=lambda v: str(v)[:40])
def test_a_child_field_of_another_type_is_refused_naming_it(
    kind: str, path: tuple[str, ...], value: object
) -> None:
    """Not an object the API server holds: 422 naming the child and the field; Metacontroller
    then changes nothing."""
    # A pod's spec is read only where a gang scheduler or Kueue places the pods.
    placed = path[0] == "spec"
    body = copy.deepcopy(
        next(
            b
            for b in BASES
            if b["children"].get(f"{kind}.v1")
            and (not placed or any(k.startswith("PodGroup.") for k in b["children"]))
        )
    )
    members = body["children"][f"{kind}.v1"]
    member = sorted(members)[0]
    node = members[member]
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value
    status, answer = send("mistyped", encode(body), "/sync")
    assert (status, answer["error"]) == (422, "not_a_sync_request")
    assert f"children.{kind}.v1." in answer["message"]
    assert member.rsplit("/", 1)[-1] in answer["message"]  # v2 keys `namespace/name`
    assert (".".join(path[:2]) if kind != "ConfigMap" else "data") in answer["message"]


# --- 5. huge replica counts: bounded in time and memory, in a child process -------------

HUGE_REPLICAS_PROBE = """
import json, resource, sys, time
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
from hooks.app import create_app
from hooks.core.fields import MAX_DEPTH
body = {"parent": {"metadata": {"name": "big", "namespace": "default"}, "spec": {
    "mxReplicaSpecs": {"Worker": {"replicas": int(sys.argv[1]),
    "template": {"spec": {"containers": [{"name": "mxnet", "image": "i"}]}}}}}}}
client = create_app().test_client()
began = time.process_time()
answer = client.post("/sync", json=body)
print(answer.status_code, time.process_time() - began)
"""
#: The CPU a sync of a huge replica count may take: well under gunicorn's 9 s worker timeout.
#: CPU, not wall time: beside the real node's lanes a process may wait for a core for seconds
#: (cold run 9 saw the answer printed, its process not yet ended, at 8 s of wall time).
HUGE_REPLICAS_CPU = 1.0


@pytest.mark.parametrize("replicas", [10**6, 2**63 - 1])
def test_huge_replica_counts_are_answered_quickly(replicas: int) -> None:
    """A replica count no cluster runs must give a Failed job (200) in well under 9 s of CPU."""
    TRIED["huge-replicas"] += 1
    done = subprocess.run(
        [sys.executable, "-c", HUGE_REPLICAS_PROBE, str(replicas)],
        cwd=Path(__file__).parent.parent,
        capture_output=True,
        text=True,
        timeout=300,  # a hang, not a measure
        check=False,
    )
    status, _, cpu = done.stdout.strip().partition(" ")
    assert status == "200", done.stderr[-2000:]
    assert float(cpu) < HUGE_REPLICAS_CPU, f"replicas: {replicas}: {cpu} s of CPU"
