"""Structure-aware fuzzing of the hook: generated requests and the checks every answer must pass.

Shared by the campaign (`make fuzz`, bench/fuzz.py, through gunicorn) and the per-run tier
(tests/test_fuzz.py, through the Flask test client); both talk to the hook through a `Post`
function, so a check means the same thing in both.

Generation is mutation of realistic requests. `bases()` holds valid requests: the golden
fixtures, the benchmark's full-size objects in every state, and jobs walked through random
lifecycles with the test builders (children in every phase, terminating and evicted pods,
fresh, stale or missing parent status, gang scheduling, hook v1 and v2 keying, a job being
deleted).
`Generator.case(i)` picks a base and applies 1-3 mutations at paths chosen in one region of the
request (spec, status, metadata, children, controller, top level): type confusion, numbers out
of range (resource quantities too), deep nesting, lists and maps of the wrong shape, missing
keys, keys and values taken from elsewhere in the corpus, renamed keys, unicode and huge
strings. A few cases per hundred are malformed bodies: bad JSON, wrong content types,
non-object bodies, too deep, too large. Five per hundred are ConversionReviews for the webhook
(`POST /convert`) of a base's job: read at an old version, which must always succeed (a stored
job that cannot be read fails every list), or written at one; each with a stash of its own
(entries without `was` or `to`, outside the spec, bringing in `managedBy` or 10000 replicas,
nesting past any limit) and sometimes a spec nesting as deep.
Case `i` of a seed is always the same request, so a failure is reproduced by its number.
"""

import contextlib
import copy
import dataclasses
import functools
import json
import math
import random
import re
import sys
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import orjson
from flask.testing import FlaskClient

from hooks.app import create_app
from hooks.core.conversion.review import MESSAGE_CHARS, convert
from hooks.core.conversion.versions import V1, V1_FIELDS
from testsupport import requests as realistic
from testsupport.jobs import CONTROLLER, mxjob, replica, request, run
from testsupport.observed import created, running, terminated, terminating

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures"
JSON = "application/json"
Json = dict[str, Any]
#: (status, content type, body) of one answer.
Answer = tuple[int, str, bytes]
#: Sends one request: (path, body, content type) → answer.
Post = Callable[[str, bytes, str | None], Answer]
Path_ = tuple[str | int, ...]

DNS_1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
SYNC_KEYS = {"status", "children"}
OPTIONAL_KEYS = {"resyncAfterSeconds"}
TERMINAL = ("Succeeded", "Failed")
#: The body limit the campaign's server runs with, so that "too large" costs little to send.
CAMPAIGN_MAX_BODY = 1024 * 1024
DEEP_MARK = "__mxjob_fuzz_deep__"
#: The status a client reports when the server closed the connection while the body was still
#: being sent and the reset lost its answer: how an oversized body may end (gunicorn answers
#: 413 without reading it).
CLOSED_UNREAD = 0

# --- values mutations draw from ------------------------------------------------------------

TYPE_SWAPS: tuple[Any, ...] = (
    None,
    True,
    False,
    0,
    -1,
    1.5,
    "",
    "x",
    "mxnet",
    "Running",
    [],
    {},
    [None],
    [1, "a"],
    {"": None},
    {"name": 5},
    [{}],
    [[]],
)
NUMBERS: tuple[Any, ...] = (
    -1,
    0,
    1,
    65535,
    65536,
    2**31 - 1,
    2**31,
    2**32,
    2**53 + 1,
    2**63 - 1,
    2**63,
    2**64 - 1,
    -(2**63),
    10**30,
    -(10**30),
    1e308,
    -1e308,
    0.5,
    -0.0,
    5e-324,
)
STRINGS: tuple[str, ...] = (
    "",
    " ",
    "ä",
    "名字",
    "\u202e",
    "😀",
    "\x00",
    "\t",
    "-",
    "0",
    "007",
    "1e3",
    "True",
    "null",
    "Mxnet",
    "mxnet",
    "mxjob-port",
    "Worker",
    "worker",
    "a" * 64,
    "x" * 100_000,
    # Quantities Kubernetes reads and no scheduler counts, a reserved container name.
    "1e9999999",
    "1e5000",
    "8Ei",
    "mxjob-rejoin-wait",
)
DEPTHS = (20, 65, 100, 129, 200, 254, 255, 500, 900, 998, 1000, 1019)
#: Quantities Kubernetes reads and no scheduler counts, or reads rounded, or refuses.
QUANTITIES: tuple[Any, ...] = (
    "1e9999999",
    "1e5000",
    "8Ei",
    "-1",
    "1e-9999999",
    "1e2147483648",
    "0.5n",
    1e308,
    2**70,
)
#: The old API versions a conversion case reads or writes at.
OLD_VERSIONS = ("kubeflow.org/v1alpha1", "kubeflow.org/v1alpha2")
#: Where a stash entry points, what its values are: the shapes a user can write.
STASH_PATHS: tuple[list[str], ...] = (
    ["spec", "x"],
    ["spec", "jobMode"],
    ["spec", "runPolicy", "managedBy"],
    ["spec", "managedBy"],
    ["spec", "runPolicy", "backoffLimit"],
    ["spec", "mxReplicaSpecs", "Worker", "replicas"],
    ["spec"],
    ["status"],
    ["metadata", "name"],
)
STASH_VALUES: tuple[Any, ...] = (*TYPE_SWAPS, DEEP_MARK, 10000, -5, "x" * 10_000, "other/ctl")
REGIONS: tuple[tuple[str, Path_, int], ...] = (
    ("spec", ("parent", "spec"), 40),
    ("status", ("parent", "status"), 14),
    ("metadata", ("parent", "metadata"), 5),
    ("children", ("children",), 30),
    ("controller", ("controller",), 4),
    ("anywhere", (), 7),
)


# --- the corpus of valid requests ------------------------------------------------------------


def _random_job(rng: random.Random) -> Json:
    """A valid MXJob of either mode: ports, env, sidecars, labels and run policy at random."""
    mode = rng.choice(["MXTrain", "MXTrain", "MXTune"])
    policy = rng.choice(["Always", "OnFailure", "Never", "ExitCode", None])
    extra: Json = {}
    if rng.random() < 0.5:
        extra["ports"] = [{"name": "mxjob-port", "containerPort": rng.choice([9091, 2222])}]
        if rng.random() < 0.5:
            extra["ports"].append({"name": "metrics", "containerPort": 9100, "protocol": "TCP"})
    if rng.random() < 0.3:
        extra["env"] = [{"name": "PS_VERBOSE", "value": "1"}, {"name": "DMLC_ROLE", "value": "x"}]
    if rng.random() < 0.3:
        extra["resources"] = {
            "requests": {"cpu": rng.choice(["1", "500m", "0.25"]), "memory": "1Gi"},
            "limits": {"memory": rng.choice(["2Gi", "1e9", "2048Mi"])},
        }
    if mode == "MXTrain":
        replicas: Json = {"Worker": replica(rng.randint(1, 3), policy, **extra)}
        servers = rng.randint(0, 2)
        if servers or rng.random() < 0.5:
            replicas["Scheduler"] = replica(1, policy, **extra)
        if servers:
            replicas["Server"] = replica(servers, policy, **extra)
    else:
        replicas = {
            "TunerTracker": replica(1, policy, **extra),
            "TunerServer": replica(rng.randint(1, 2), policy, **extra),
            "Tuner": replica(1, policy, **extra),
        }
    for spec in replicas.values():
        if rng.random() < 0.3:
            spec["template"]["metadata"] = {
                "labels": {"team": "vision"},
                "annotations": {"tuner-server-key": "k"},
            }
        if rng.random() < 0.2:
            spec["template"]["spec"]["containers"].append({"name": "sidecar", "image": "busybox"})
        if rng.random() < 0.1:
            setup = {"name": "setup", "image": "busybox", "resources": {"limits": {"cpu": "2"}}}
            spec["template"]["spec"]["initContainers"] = [setup]
    run_policy: Json = {"cleanPodPolicy": rng.choice(["All", "Running", "None"])}
    if rng.random() < 0.4:
        run_policy["backoffLimit"] = rng.randint(0, 3)
    if rng.random() < 0.3:
        run_policy["activeDeadlineSeconds"] = rng.choice([60, 1800, 3600, 7200, 10**6])
    if rng.random() < 0.1:
        run_policy["suspend"] = True
    if rng.random() < 0.1:
        run_policy["schedulingPolicy"] = {"minAvailable": 2, "queue": "q"}
    name = rng.choice(["mnist", "j", "resnet-50-dist"])
    return mxjob(name=name, replicas=replicas, run_policy=run_policy, mode=mode)


def _lifecycle(rng: random.Random) -> Json:
    """A valid job walked to a random state by the builders; any phase, any parent status."""
    job = _random_job(rng)
    controller = rng.choice([CONTROLLER, CONTROLLER, _gang_controller(rng)])
    first = run(request(job, controller=controller))
    children = []
    for child in first.children:
        observed: Json | None = created(child)
        if child["kind"] == "Pod":
            observed = _pod_state(rng, created(child))
        elif rng.random() < 0.1:
            observed = None  # deleted by someone else
        if observed is not None:
            children.append(observed)
    roll = rng.random()
    if roll < 0.45:  # fresh: the status the hook wrote for exactly these children
        job["status"] = run(request(job, children, controller)).status
    elif roll < 0.7:  # stale: the status of the first sync
        job["status"] = first.status
    body = request(job, children, controller, v2=rng.random() < 0.3)
    if rng.random() < 0.1:
        body["parent"] = realistic.deleted(body["parent"])
    return body


def _gang_controller(rng: random.Random) -> Json:
    controller = copy.deepcopy(CONTROLLER)
    api = rng.choice(["scheduling.volcano.sh/v1beta1", "scheduling.x-k8s.io/v1alpha1"])
    controller["spec"]["childResources"].append({"apiVersion": api, "resource": "podgroups"})
    return controller


def _pod_state(rng: random.Random, pod: Json) -> Json | None:
    state = rng.choice(["gone", "pending", "running", "running", "finished", "terminating"])
    if state == "gone":
        return None
    if state == "pending":
        return pod
    if state == "running":
        return running(pod, minutes=rng.randint(1, 30), restarts=rng.randint(0, 2))
    if state == "finished":
        code = rng.choice([0, 0, 1, 137, 138, 143, 139, None])
        reason = "Evicted" if code is None else None
        return terminated(pod, code, minutes=rng.randint(2, 50), reason=reason)
    return terminating(running(pod))


@cache
def bases() -> tuple[Json, ...]:
    """Valid requests to mutate: fixtures, full-size objects in every state, lifecycles."""
    found: list[Json] = [
        json.loads((case / "request.json").read_text()) for case in sorted(FIXTURES.iterdir())
    ]
    found += [
        realistic.sync_request(size, state, v2=size == 5)
        for size in (2, 5)
        for state in realistic.STATES
    ]
    rng = random.Random(2026)
    found += [_lifecycle(rng) for _ in range(160)]
    return tuple(found)


@cache
def corpus() -> dict[str, tuple[Any, ...]]:
    """Every key of the bases with a few of the values it holds: splices stay realistic."""
    values: dict[str, list[Any]] = {}
    for base in bases():
        for _, key, value in walk(base):
            if isinstance(key, str) and len(values.setdefault(key, [])) < 8:
                values[key].append(value)
    return {k: tuple(v) for k, v in values.items()}


def walk(value: Any, path: Path_ = ()) -> Iterator[tuple[Path_, str | int, Any]]:
    """(path, key, value) of every node under `value`, parents first, without recursion."""
    stack: list[tuple[Path_, Any]] = [(path, value)]
    while stack:
        where, node = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, child in items:
            yield (*where, key), key, child
            if isinstance(child, dict | list) and child:
                stack.append(((*where, key), child))


# --- mutation ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One generated request and what its answer may be."""

    number: int
    label: str
    path: str
    body: bytes
    content_type: str | None = JSON
    #: The request as sent, when it is JSON (kept for the checks that read it).
    request: Json | None = None
    #: Statuses this input may get; empty means "200 or a 4xx with the error shape".
    expect: tuple[int, ...] = ()
    mutations: tuple[str, ...] = ()
    #: `body` holds nesting that `request` only marks.
    deep: bool = False


def deep(depth: int, leaf: Any = "x") -> Any:
    """`depth` levels of alternating lists and objects around `leaf`, built without recursion."""
    value = leaf
    for i in range(depth):
        value = [value] if i % 2 else {"a": value}
    return value


def nested_json(depth: int) -> bytes:
    """The JSON text of `deep(depth)`, written directly (encoders stop near 255 levels)."""
    opening = "".join("[" if i % 2 else '{"a":' for i in reversed(range(depth)))
    closing = "".join("]" if i % 2 else "}" for i in range(depth))
    return f'{opening}"x"{closing}'.encode()


def generic(path: Path_) -> str:
    """A path with indices and child names folded: one mutation site, whatever the base."""
    parts: list[str] = []
    for i, key in enumerate(path):
        if isinstance(key, int):
            parts.append("[*]")
        elif i == 2 and path[0] == "children":
            parts.append(".*")
        elif key == "mxReplicaSpecs" or (i > 0 and path[i - 1] == "mxReplicaSpecs"):
            parts.append(f".{key}" if key == "mxReplicaSpecs" else ".<type>")
        else:
            parts.append(f".{key}")
    return "".join(parts).lstrip(".") or "<body>"


def replace_at(root: Any, path: Path_, change: Callable[[Any, Any], Any]) -> Any:
    """A copy of `root` where the container holding `path` is replaced by `change(container,
    key)`; only the containers along the path are copied (the rest is shared)."""
    if not path:
        return change(None, None)
    top = copy.copy(root)
    node = top
    for key in path[:-1]:
        child = copy.copy(node[key])
        node[key] = child
        node = child
    change(node, path[-1])
    return top


class Generator:
    """Case `number` of `seed`: always the same request."""

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed

    def case(self, number: int) -> Case:
        rng = random.Random(f"{self.seed}/{number}")
        roll = rng.random()
        if roll < 0.05:
            return self._malformed(rng, number)
        if roll < 0.1:
            return self._conversion(rng, number)
        base = rng.choice(bases())
        if roll < 0.2:
            return self._encoded(number, "valid", base, ())
        region, prefix, _ = rng.choices(REGIONS, weights=[w for *_, w in REGIONS])[0]
        body: Any = base
        done = []
        deep_at: int | None = None
        for _ in range(rng.choice((1, 1, 1, 2, 3))):
            operator = rng.choice(OPERATORS)
            if operator is _op_quantity:
                path = _quantity_path(rng, body, prefix)
            else:
                path = _pick_path(rng, body, prefix)
            if path is None:
                continue
            if operator is _op_deep:
                if deep_at is not None:
                    continue
                deep_at = rng.choice(DEPTHS)
            body = replace_at(body, path, functools.partial(operator, rng))
            done.append(f"{operator.__name__[4:]}@{generic(path)}")
        return self._encoded(number, f"mutated-{region}", body, tuple(done), deep_at)

    def _encoded(
        self,
        number: int,
        label: str,
        body: Any,
        mutations: tuple[str, ...],
        depth: int | None = None,
    ) -> Case:
        data = encode(body)
        if depth is not None:
            data = data.replace(json.dumps(DEEP_MARK).encode(), nested_json(depth), 1)
            label = f"{label}-deep"
        path = "/sync"
        # A deep case keeps the request with the mark where the nesting goes: enough for the
        # checks of its answer, not to be sent again (no fixpoint).
        request_ = body if isinstance(body, dict) else None
        return Case(number, label, path, data, JSON, request_, (), mutations, depth is not None)

    def _conversion(self, rng: random.Random, number: int) -> Case:
        """A review of a base's job: read at an old version (as the API server stores it, at
        v1, with a stash of the old version's own writing) or written at one (with a stash of
        v1's); sometimes its template nests a depth of DEPTHS."""
        job = copy.deepcopy(rng.choice(bases())["parent"])
        job.update(apiVersion=V1, kind="MXJob")
        depth = rng.choice(DEPTHS) if rng.random() < 0.2 else None
        if depth is not None:
            template = next(iter(job["spec"]["mxReplicaSpecs"].values()))["template"]
            template["spec"]["deep"] = DEEP_MARK
        old = rng.choice(OLD_VERSIONS)
        reading = rng.random() < 0.5
        obj = job if reading else convert(job, old)
        key = f"mxjob.kubeflow.org/{old.rpartition('/')[2]}-fields" if reading else V1_FIELDS
        entries = [_stash_entry(rng) for _ in range(rng.randint(1, 3))]
        text = json.dumps(entries).replace(
            json.dumps(DEEP_MARK), nested_json(rng.choice(DEPTHS)).decode()
        )
        obj.setdefault("metadata", {}).setdefault("annotations", {})[key] = text
        request_: Json = {"uid": f"fuzz-{number}", "desiredAPIVersion": old if reading else V1}
        request_["objects"] = [obj]
        review: Json = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview"}
        review["request"] = request_
        label = f"conversion-{'read' if reading else 'write'}"
        case = self._encoded(number, label, review, (f"stash@{key}",), depth)
        return dataclasses.replace(case, path="/convert", expect=(200, 400) if depth else (200,))

    def _malformed(self, rng: random.Random, number: int) -> Case:
        """Bodies that are not a sync request, each with the status it must get."""
        data = encode(rng.choice(bases()))
        kind = rng.choice(
            [
                "truncated",
                "bytes",
                "not-utf8",
                "non-object",
                "content-type",
                "too-deep",
                "too-large",
                "bad-number",
                "method",
            ]
        )
        path = "/sync"
        expect: tuple[int, ...]
        if kind == "truncated":
            body, expect = data[: rng.randrange(len(data))], (400,)
        elif kind == "bytes":
            body, expect = rng.randbytes(rng.randint(0, 64)), (400, 422)
        elif kind == "not-utf8":
            body, expect = data.replace(b'"name"', b'"n\xff\xfeame"', 1), (400,)
        elif kind == "non-object":
            value = rng.choice([[], [data.decode()[:50]], "x", 1, 1.5, None, True, 10**30])
            body, expect = encode(value), (422,)
        elif kind == "content-type":
            ctype = rng.choice(
                ["text/plain", "application/yaml", "application/json-patch+json", None, ""]
            )
            return Case(number, "malformed-content-type", path, data, ctype, None, (415,))
        elif kind == "too-deep":
            body, expect = nested_json(rng.choice([1025, 1100, 5000])), (400,)
        elif kind == "too-large":
            body = b'{"parent":"' + b"x" * (CAMPAIGN_MAX_BODY + 1) + b'"}'
            expect = (413,)
        elif kind == "bad-number":
            # In the parent, which the hook decodes in full: refused as the whole body would be.
            # (Out of range where the hook never looks, the fast decoder skips it: JSON's
            # grammar allows it, and the answer does not depend on it.)
            body = data.replace(b'"parent":{', b'"parent":{"n":1e400,', 1)
            expect = (400,)
        else:
            return Case(number, "malformed-method", "/healthz/x", data, JSON, None, (404,))
        return Case(number, f"malformed-{kind}", path, body, JSON, None, expect)


def _stash_entry(rng: random.Random) -> Any:
    """A stash entry as a user may write one: a path, and `was`, `to`, both or neither (the
    converter always writes one of them), or no entry at all."""
    if rng.random() < 0.1:
        return copy.deepcopy(rng.choice(TYPE_SWAPS))
    entry: Json = {"at": list(rng.choice(STASH_PATHS))}
    for key in rng.choice([("was",), ("to",), ("was", "to"), ()]):
        entry[key] = copy.deepcopy(rng.choice(STASH_VALUES))
    return entry


@contextlib.contextmanager
def _deep_recursion() -> Iterator[None]:
    """Room for the standard library's JSON to read and write deep reproducers in this process
    (the hook runs here too when a case is replayed, so the limit is restored at once)."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))
    try:
        yield
    finally:
        sys.setrecursionlimit(limit)


def encode(value: object) -> bytes:
    """JSON bytes of a request; the standard library for what orjson refuses (deep, huge)."""
    try:
        return orjson.dumps(value)
    except (orjson.JSONEncodeError, TypeError):
        with _deep_recursion():
            return json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")


def with_body(case: Case, body: Any) -> Case:
    """The case with another (shrunk) JSON body."""
    request_ = body if isinstance(body, dict) else None
    return dataclasses.replace(case, body=encode(body), request=request_, deep=False)


def _pick_path(rng: random.Random, body: Any, prefix: Path_) -> Path_ | None:
    """A path inside the region: half the time uniform over its nodes, else a random descent
    (which favours shallow paths); None when the region is absent."""
    node: Any = body
    for key in prefix:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    if not isinstance(node, dict | list) or not node:
        return prefix or None
    if rng.random() < 0.5:
        paths = [p for p, _, _ in walk(node, prefix)]
        return rng.choice(paths)
    path = prefix
    while isinstance(node, dict | list) and node:
        key = rng.choice(list(node) if isinstance(node, dict) else range(len(node)))
        path, node = (*path, key), node[key]
        if rng.random() < 0.3:
            break
    return path


def _quantity_path(rng: random.Random, body: Any, prefix: Path_) -> Path_ | None:
    """A resource request or limit in the region (a gang's PodGroup adds them up); None when
    the region has none."""
    node: Any = body
    for key in prefix:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    if not isinstance(node, dict | list):
        return None
    found = [p for p, _, _ in walk(node, prefix) if len(p) > 1 and p[-2] in ("requests", "limits")]
    return rng.choice(found) if found else None


# Operators: `op(rng, container, key)` changes `container[key]` in place (the container is
# already a private copy).


def _op_type(rng: random.Random, node: Any, key: Any) -> None:
    node[key] = copy.deepcopy(rng.choice(TYPE_SWAPS))


def _op_number(rng: random.Random, node: Any, key: Any) -> None:
    node[key] = rng.choice(NUMBERS)


def _op_string(rng: random.Random, node: Any, key: Any) -> None:
    value = node[key]
    if isinstance(value, str) and value and rng.random() < 0.4:
        node[key] = rng.choice([value.upper(), value + "-", value + "ä", value * 50, value[:-1]])
    else:
        node[key] = rng.choice(STRINGS)


def _op_deep(rng: random.Random, node: Any, key: Any) -> None:
    node[key] = DEEP_MARK


def _op_quantity(rng: random.Random, node: Any, key: Any) -> None:
    """A quantity at Kubernetes' edges, at a request or limit (`_quantity_path`)."""
    node[key] = rng.choice(QUANTITIES)


def _op_shape(rng: random.Random, node: Any, key: Any) -> None:
    value = node[key]
    if isinstance(value, list):
        choice = rng.randrange(4)
        if choice == 0:
            node[key] = {str(i): v for i, v in enumerate(value)}
        elif choice == 1 and value:
            node[key] = [*value, copy.deepcopy(rng.choice(value))]
        elif choice == 2:
            at = rng.randint(0, len(value))
            node[key] = [*value[:at], copy.deepcopy(rng.choice(TYPE_SWAPS)), *value[at:]]
        else:
            node[key] = value[::-1] if len(value) > 1 else []
    elif isinstance(value, dict):
        node[key] = rng.choice([list(value.values()), list(value), [value], {}])
    else:
        node[key] = rng.choice([[value], {"value": value}])


def _op_delete(rng: random.Random, node: Any, key: Any) -> None:
    del node[key]


def _op_insert(rng: random.Random, node: Any, key: Any) -> None:
    """Add a key of the corpus, with a value it holds elsewhere, to the object at the path (or
    into a list, a corpus value)."""
    target = node[key]
    known = corpus()
    name = rng.choice(list(known))
    value = copy.deepcopy(rng.choice(known[name]))
    if isinstance(target, dict):
        node[key] = {**target, name: value}
    elif isinstance(target, list):
        node[key] = [*target, value]
    else:
        node[key] = value


def _op_splice(rng: random.Random, node: Any, key: Any) -> None:
    """A value the same key holds elsewhere in the corpus (another state, another kind)."""
    options = corpus().get(key) if isinstance(key, str) else None
    node[key] = copy.deepcopy(rng.choice(options or TYPE_SWAPS))


def _op_rename(rng: random.Random, node: Any, key: Any) -> None:
    if not isinstance(node, dict):
        _op_delete(rng, node, key)
        return
    new = rng.choice([str(key).upper(), str(key).lower(), "", "ä", f"{key} ", f"{key}ä"])
    value = node.pop(key)
    node[new] = value


OPERATORS = (
    _op_type,
    _op_type,
    _op_number,
    _op_string,
    _op_deep,
    _op_quantity,
    _op_shape,
    _op_shape,
    _op_delete,
    _op_insert,
    _op_splice,
    _op_rename,
)


# --- checks -----------------------------------------------------------------------------------


@dataclass
class Failure:
    """One broken rule: `check` names it, `detail` says what was seen."""

    check: str
    detail: str
    #: What tells root causes apart beyond the check (no names or numbers of one case).
    cause: str = ""


@dataclass
class Verdict:
    """The checks of one case and the requests they cost."""

    failures: list[Failure] = field(default_factory=list)
    requests: int = 0


def decode(data: bytes) -> Any:
    """JSON of an answer (the standard library for what orjson refuses)."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        with _deep_recursion():
            return json.loads(data)


def check_answer(case: Case, answer: Answer) -> list[Failure]:
    """The rules every single answer obeys (docs/http.md, docs/metacontroller.md)."""
    status, content_type, data = answer
    if status == CLOSED_UNREAD and 413 in case.expect:
        return []  # the 413 of an oversized body, lost to the connection reset that follows it
    if status >= 500:
        return [Failure("http-5xx", f"HTTP {status}: {data[:300]!r}")]
    if case.expect and status not in case.expect:
        return [
            Failure(
                "wrong-status", f"HTTP {status}, expected {case.expect}", f"{case.label}: {status}"
            )
        ]
    if not content_type.startswith(JSON):
        return [
            Failure("not-json", f"HTTP {status} with content type {content_type!r}", str(status))
        ]
    try:
        body = decode(data)
    except ValueError as exc:
        return [Failure("not-json", f"HTTP {status}: {exc}", str(status))]
    if status != 200:
        shape = isinstance(body, dict) and set(body) == {"error", "message"}
        if not shape or not all(isinstance(v, str) for v in body.values()):
            return [Failure("error-shape", f"HTTP {status}: {data[:200]!r}", str(status))]
        return []
    if case.path == "/convert":
        return _check_review(case, body)
    return _check_response(case, body)


def _check_review(case: Case, body: Any) -> list[Failure]:
    """A ConversionReview answered to its uid; a stored job read at an old version converted
    (docs/api.md#when-a-conversion-fails); a Failure's message bounded."""
    response = body.get("response") if isinstance(body, dict) else None
    result = response.get("result") if isinstance(response, dict) else None
    sent = _dig(case.request, "request", "uid")
    if not isinstance(response, dict) or not isinstance(result, dict):
        return [Failure("review-shape", f"answered {str(body)[:200]}")]
    if response.get("uid") != sent:
        return [Failure("review-shape", f"answered {str(body)[:200]}")]
    message = result.get("message")
    if case.label.startswith("conversion-read") and result.get("status") != "Success":
        return [Failure("read-failed", f"a stored job read as {str(message)[:200]}", "read")]
    if isinstance(message, str) and len(message) > MESSAGE_CHARS:
        return [Failure("failure-message", f"{len(message)} characters", "message")]
    return []


def _check_response(case: Case, body: Any) -> list[Failure]:
    keys = set(body) if isinstance(body, dict) else set()
    if not SYNC_KEYS <= keys <= SYNC_KEYS | OPTIONAL_KEYS:
        return [Failure("response-keys", f"sync answered keys {sorted(keys)}")]
    children = body["children"]
    if not isinstance(body["status"], dict) or not isinstance(children, list):
        return [Failure("response-keys", "status must be an object, children a list")]
    failures: list[Failure] = []
    observed = _observed(case.request)
    seen: set[tuple[str, str]] = set()
    identities: set[tuple[str, str, str]] = set()
    for child in children:
        kind = child.get("kind") if isinstance(child, dict) else None
        name = child.get("metadata", {}).get("name") if isinstance(kind, str) else None
        if not isinstance(kind, str) or not isinstance(name, str):
            failures.append(
                Failure(
                    "child-shape",
                    f"a child without kind or name: {child!r:.200}",
                    "a kind or name that is not a string",
                )
            )
            continue
        # Metacontroller tells children apart by apiVersion, kind and name: two PodGroups of
        # one name from Volcano and scheduler-plugins are two objects.
        identity = (str(child.get("apiVersion")), kind, name)
        if identity in identities:
            failures.append(Failure("child-duplicate", f"{kind} {name} listed twice", kind))
        identities.add(identity)
        seen.add((kind, name))
        if (kind, name) not in observed and not (len(name) <= 63 and DNS_1123_LABEL.match(name)):
            failures.append(Failure("child-name", f"created {kind} {name!r:.80}", kind))
    invalid = _is_invalid(body["status"]) and not _was_terminal(case.request)
    if invalid and case.path == "/sync":
        for key, (_, _, pod) in observed.items():
            running_ = _dig(pod, "status", "phase") == "Running"
            if key[0] == "Pod" and running_ and key not in seen:
                failures.append(Failure("invalid-drops-running-pod", f"pod {key[1]} dropped"))
    return failures


def _dig(value: Any, *keys: str) -> Any:
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _observed(body: Json | None) -> dict[tuple[str, str], tuple[str, str, Json]]:
    """Observed children by (kind, name) as the hook reads them: the kind of their group
    `Kind.apiVersion`; with the group and member keys they came under."""
    found: dict[tuple[str, str], tuple[str, str, Json]] = {}
    groups = body.get("children") if isinstance(body, dict) else None
    for group_key, members in groups.items() if isinstance(groups, dict) else ():
        for member, child in members.items() if isinstance(members, dict) else ():
            name = _dig(child, "metadata", "name")
            kind, _, api_version = group_key.partition(".")
            if not (kind and api_version):
                kind = _dig(child, "kind")
            # A kind mutated into anything but a string names no kind (a list is no key).
            if isinstance(name, str) and isinstance(kind, str):
                found[(kind, name)] = (group_key, member, child)
    return found


def _conditions(status: Any) -> list[Json]:
    found = _dig(status, "conditions")
    return [c for c in found if isinstance(c, dict)] if isinstance(found, list) else []


def _is_invalid(status: Any) -> bool:
    """Failed with MXJobInvalidSpec and true: a false one carried from a fuzzed status says
    nothing about this spec, whose job may drop a pod it does not want."""
    return any(
        c.get("type") == "Failed"
        and c.get("status") == "True"
        and c.get("reason") == "MXJobInvalidSpec"
        for c in _conditions(status)
    )


def _is_terminal(status: Any) -> bool:
    return any(c.get("type") in TERMINAL and c.get("status") == "True" for c in _conditions(status))


def _was_terminal(body: Json | None) -> bool:
    return _is_terminal(_dig(body, "parent", "status"))


def comparable(data: bytes) -> Any:
    """An answer without `resyncAfterSeconds`, which counts down with the server's clock."""
    body = decode(data)
    if isinstance(body, dict):
        body.pop("resyncAfterSeconds", None)
    return body


def check_determinism(case: Case, first: Answer, post: Post) -> Verdict:
    """The same request again: the same status code and the same bytes (bar the resync)."""
    again = post(case.path, case.body, case.content_type)
    verdict = Verdict(requests=1)
    if again[0] != first[0]:
        verdict.failures.append(Failure("determinism", f"HTTP {first[0]} then {again[0]}"))
    elif first[0] == 200 and again[2] != first[2] and comparable(again[2]) != comparable(first[2]):
        verdict.failures.append(Failure("determinism", "the same request, different answers"))
    return verdict


def _keys(body: Json) -> set[tuple[Any, Any]]:
    return {(_dig(c, "kind"), _dig(c, "metadata", "name")) for c in body["children"]}


def fed_back(body: Json, answer: Json) -> Json:
    """The next request after Metacontroller applied `answer`: kept children as observed (in
    the group they came in), new ones as the API server creates them, each keyed by name (v1)
    or namespace/name (v2) as Metacontroller keys them; the returned status as the parent's."""
    observed = _observed(body)
    v2 = any("/" in member for _, member, _ in observed.values())
    groups: dict[str, dict[str, Any]] = {
        key: {} for key in (body.get("children") or {}) if isinstance(key, str)
    }
    for child in answer["children"]:
        kept = observed.get((child["kind"], child["metadata"]["name"]))
        if kept is not None:
            group, _, obj = kept
        else:
            obj = created(child, minutes=59.5)
            group = f"{child['kind']}.{child['apiVersion']}"
        name, namespace = child["metadata"]["name"], _dig(obj, "metadata", "namespace")
        member = f"{namespace if isinstance(namespace, str) else 'default'}/{name}" if v2 else name
        groups.setdefault(group, {})[member] = obj
    parent = {**body["parent"], "status": answer["status"]}
    return {**body, "parent": parent, "children": groups}


#: Syncs after the first before the answers must have settled: a whole-job restart takes three
#: steps, each waiting for the parent status to show the previous one (docs/restarts.md).
FIXPOINT_ROUNDS = 6
RUN_ANNOTATION = "mxjob.kubeflow.org/run"
_RUN_RECORD = re.compile(r"-mxjob-run-([0-9]+)$")
#: A run's config: `-mxjob-config` (run 0, and every run an earlier version began) or
#: `-mxjob-cfg-<N>`.
_RUN_CONFIG = re.compile(r"-mxjob-(config|cfg-[0-9]+)$")


def _newest_run(body: Json) -> int:
    """The newest run record observed (`<job>-mxjob-run-<N>`), 0 without one."""
    runs = [
        int(m.group(1))
        for kind, name in _observed(body)
        if kind == "ConfigMap" and isinstance(name, str) and (m := _RUN_RECORD.search(name))
    ]
    return max(runs, default=0)


def _run_of(child: Json) -> float:
    """The run a pod belongs to (its annotation), 0 when it has none; an annotation that is no
    run number belongs to no older run."""
    run = _dig(child, "metadata", "annotations", RUN_ANNOTATION)
    if run is None:
        return 0
    return int(run) if isinstance(run, str) and run.isdigit() else math.inf


def _replaced_with_the_run(body: Json, keys: set[tuple[Any, Any]]) -> bool:
    """Whether every key is something a new run replaces (docs/restarts.md): a Pod of a run
    older than the newest run record, which a whole-job restart deletes once the parent status
    shows it; or, while no pod of the newest run is observed, a run's config ConfigMap (an older
    run's goes with its pods), the job's PodGroup or one of its Services, which are made again
    for the run when they differ from what it needs."""
    observed, newest = _observed(body), _newest_run(body)
    pods = [child for (kind, _), (_, _, child) in observed.items() if kind == "Pod"]
    between = not any(_run_of(pod) >= newest for pod in pods)
    for key in keys:
        if key not in observed:
            return False
        if key[0] == "Pod":
            if _run_of(observed[key][2]) >= newest:
                return False
        elif not between or not (
            key[0] in ("Service", "PodGroup") or _RUN_CONFIG.search(str(key[1]))
        ):
            return False
    return True


def check_fixpoint(case: Case, first: Answer, post: Post) -> Verdict:
    """Apply each answer and sync again until one changes nothing: it creates and deletes no
    child and its status is the parent's already; the next answer must then be the same.

    On the way the job may move on (the hook acts only once the parent status shows its
    previous decision, docs/run-policy.md), so children may appear in later answers, though
    never once the parent status shows the job finished; and a child an answer listed is never
    dropped by the next one, except the cleanup of a job that just finished and the pods of an
    older run during a whole-job restart (docs/restarts.md)."""
    verdict = Verdict()
    if case.request is None or case.deep or first[0] != 200 or case.path != "/sync":
        return verdict
    body, answer = case.request, decode(first[2])
    for _ in range(FIXPOINT_ROUNDS):
        settled = _keys(answer) == set(_observed(body)) and answer["status"] == _dig(
            body, "parent", "status"
        )
        finishes = _is_terminal(answer["status"]) and not _was_terminal(body)
        body = fed_back(body, answer)
        sent = encode(body)
        if len(sent) > CAMPAIGN_MAX_BODY:  # a job of thousands of replicas: beyond the limit
            return verdict
        status, _, data = post("/sync", sent, JSON)
        verdict.requests += 1
        if status != 200:
            verdict.failures.append(
                Failure("fixpoint", f"re-sync answered HTTP {status}", str(status))
            )
            return verdict
        after = decode(data)
        added = _keys(after) - _keys(answer)
        removed = _keys(answer) - _keys(after)
        if removed and not finishes and not _replaced_with_the_run(body, removed):
            verdict.failures.append(
                Failure("fixpoint-deletes", f"then: {_few(removed)}", _kinds(removed))
            )
        if added and (settled or _was_terminal(body)):  # nothing moved, or a finished job
            verdict.failures.append(
                Failure("fixpoint-creates", f"again: {_few(added)}", _kinds(added))
            )
        if settled and after["status"] != answer["status"]:
            verdict.failures.append(Failure("fixpoint-status", *[_status_diff(answer, after)] * 2))
        if settled or verdict.failures:
            return verdict
        answer = after
    verdict.failures.append(Failure("fixpoint-unsettled", f"{FIXPOINT_ROUNDS} syncs"))
    return verdict


def _kinds(keys: set[tuple[Any, Any]]) -> str:
    """`ConfigMap *-mxjob-config, Pod`: kinds, and the job's own ConfigMaps by suffix."""
    return ", ".join(
        sorted(
            {
                f"{kind} *-{name.rsplit('-', 2)[-2]}-{name.rsplit('-', 1)[-1]}"
                if kind == "ConfigMap" and isinstance(name, str) and "-mxjob-" in name
                else str(kind)
                for kind, name in keys
            }
        )
    )


def _few(keys: set[tuple[Any, Any]]) -> str:
    return ", ".join(f"{kind} {name}" for kind, name in sorted(keys, key=str)[:3])


def _status_diff(before: Json, after: Json) -> str:
    """The status fields that differ (the failure's cause, too)."""
    changed = sorted(
        k
        for k in set(before["status"]) | set(after["status"])
        if before["status"].get(k) != after["status"].get(k)
    )
    return f"status fields changed on re-sync: {', '.join(changed)}"


def check_case(case: Case, post: Post, *, determinism: bool, fixpoint: bool) -> Verdict:
    """Send one case and run every check it gets; `determinism` and `fixpoint` are sampled."""
    answer = post(case.path, case.body, case.content_type)
    verdict = Verdict(check_answer(case, answer), 1)
    if verdict.failures or answer[0] != 200:
        return verdict
    for wanted, check in ((determinism, check_determinism), (fixpoint, check_fixpoint)):
        if wanted:
            more = check(case, answer, post)
            verdict.failures += more.failures
            verdict.requests += more.requests
    return verdict


# --- reproducing in-process ---------------------------------------------------------------------


@cache
def _client() -> FlaskClient:
    """The hook in this process, TESTING on (a bug raises), with the campaign's body limit."""
    return create_app({"TESTING": True, "MAX_CONTENT_LENGTH": CAMPAIGN_MAX_BODY}).test_client()


def post_in_process(path: str, body: bytes, content_type: str | None) -> Answer:
    """A `Post` through the Flask test client: the per-run tier, and reproducing failures."""
    answer = _client().post(path, data=body, content_type=content_type)
    return answer.status_code, answer.content_type or "", answer.data


def crash_site(case: Case) -> str:
    """Where the hook raises on this case: the exception and the innermost frame of `hooks/`."""
    try:
        post_in_process(case.path, case.body, case.content_type)
    except Exception as exc:  # the bug under study, whatever it is
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if "/hooks/" in f.filename]
        where = f" in {Path(frames[-1].filename).name}:{frames[-1].name}" if frames else ""
        return f"{type(exc).__name__}{where}"
    return "not raised in-process"
