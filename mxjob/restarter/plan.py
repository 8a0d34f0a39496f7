"""What the restarter decides, with no call made: the order the hook wrote in an MXJob's
`status.inPlaceRestart`, which pods it is for, and the one JSON patch that puts a pod in step.

A pod is in step with the order `{"run": N, "go": G}` when its annotations `ANNOTATION_RESTART`
and `ANNOTATION_RUN` (the pod's MXJOB_RUN, read again when its containers start in place) and its
label `LABEL_RUN` say N, and, once G is true, its annotation `ANNOTATION_GO` says N too.
A key whose value is a larger number than N is left as it is: a late or stale order never takes
a pod back to an earlier run. The patch opens with a `test` of the pod's uid, so that it never
lands on another pod that took the name since the list.

The nudge: `restart` and `go` are written with `ANNOTATION_NUDGE`, the moment (Unix seconds). A
pod that has not acted on them NUDGE_SECONDS after that (after go, its barrier still holds it;
before, its process still runs unheld) gets the nudge alone again: the kubelet can leave a pod's
downward API files stale until its next periodic sync (a minute or more) when an edit lands
while it is writing them again for an earlier change, which a pod restarting all its containers
does over and over (seen on the real node: one barrier of three let go 87 s after the others,
the three `go` patches 50 ms apart); any edit of the pod makes it write them again.
"""

from dataclasses import dataclass
from typing import Any

from hooks.core.public import (
    ANNOTATION_GO,
    ANNOTATION_NUDGE,
    ANNOTATION_RESTART,
    ANNOTATION_RUN,
    BARRIER_CONTAINER,
    KIND,
    LABEL_JOB_NAME,
    LABEL_RUN,
    MXNET_CONTAINER,
    dig,
    dig_dict,
    dig_list,
    named,
    parse_time,
)

#: The largest run the restarter writes: nine digits, what the pods' policy admits.
MAX_RUN = 999_999_999
#: Seconds a pod may go without acting on its `restart` or `go` before it is nudged: the
#: kubelet writes a changed annotation into the files within a second or two when it does.
NUDGE_SECONDS = 5

#: A JSON patch (RFC 6902): the list of operations the API server applies in order, or none.
Patch = list[dict[str, Any]]


class OrderError(ValueError):
    """A `status.inPlaceRestart` that is not `{"run": 1..MAX_RUN, "go": true|false}`, or a job
    without namespace, name or uid: the job is skipped."""


@dataclass(frozen=True)
class Order:
    """An MXJob's word to its pods: restart into run `run`, and (`go`) start it."""

    namespace: str
    name: str
    uid: str
    run: int
    go: bool


@dataclass(frozen=True)
class Plan:
    """What a pod needs: `patch` (empty when it is in step), the keys left because the pod
    holds a larger number than the order's run, and whether the patch is a nudge alone."""

    patch: Patch
    ahead: tuple[str, ...] = ()
    nudge: bool = False


def order(job: object) -> Order | None:
    """The job's order; None when its status has none. Raises `OrderError` for one that is
    there but malformed."""
    found = dig(job, "status", "inPlaceRestart")
    if found is None:
        return None
    run, go = dig(found, "run"), dig(found, "go")
    if not (isinstance(run, int) and not isinstance(run, bool) and 1 <= run <= MAX_RUN):
        raise OrderError(f"status.inPlaceRestart.run must be an integer 1..{MAX_RUN}: {run!r}")
    if not isinstance(go, bool):
        raise OrderError(f"status.inPlaceRestart.go must be true or false: {go!r}")
    namespace, name, uid = (dig(job, "metadata", key) for key in ("namespace", "name", "uid"))
    if not all(isinstance(value, str) and value for value in (namespace, name, uid)):
        raise OrderError("the job has no namespace, name or uid")
    return Order(namespace, name, uid, run, go)


def selector(job: Order) -> str:
    """The label selector of the job's pods (those of another job of the same name too)."""
    return f"{LABEL_JOB_NAME}={job.name}"


def controlled(pod: object, job: Order) -> bool:
    """Whether the order is for this pod: labelled with the job's name, controlled by this very
    MXJob (its uid: not a job of the same name before it), not being deleted, and named."""
    meta = dig(pod, "metadata")
    if dig(meta, "labels", LABEL_JOB_NAME) != job.name or dig(meta, "deletionTimestamp"):
        return False
    if not (isinstance(dig(meta, "name"), str) and isinstance(dig(meta, "uid"), str)):
        return False
    return any(
        dig(ref, "controller") is True and dig(ref, "kind") == KIND and dig(ref, "uid") == job.uid
        for ref in dig_list(meta, "ownerReferences")
    )


def plan(pod: object, job: Order, now: float) -> Plan:
    """The patch that puts the pod in step with the order at `now` (Unix seconds): a `test` of
    its uid, then an `add` or `replace` of each key that differs (the pod's annotations or
    labels added whole when it has none), the nudge with `go` or, for a pod held too long
    since, alone; no patch when nothing differs and no nudge is due."""
    value = str(job.run)
    operations: Patch = []
    ahead: list[str] = []
    nudge = False
    for field, keys in wanted_keys(job).items():
        present = dig(pod, "metadata", field)
        have = present if isinstance(present, dict) else {}
        ahead += [key for key in keys if _number(have.get(key)) > job.run]
        # `ahead` so far, the annotations' too: the run label's key is the run annotation's
        # (LABEL_RUN is ANNOTATION_RUN), so a run annotation ahead leaves the label as it is.
        values = {key: value for key in keys if have.get(key) != value and key not in ahead}
        if field == "annotations":
            values, nudge = _with_nudge(pod, job, now, values)
        operations += writes(field, present, values)
    if not operations:
        return Plan([], tuple(ahead))
    test = {"op": "test", "path": pointer("metadata", "uid"), "value": dig(pod, "metadata", "uid")}
    return Plan([test, *operations], tuple(ahead), nudge and len(operations) == 1)


def _with_nudge(
    pod: object, job: Order, now: float, values: dict[str, str]
) -> tuple[dict[str, str], bool]:
    """The annotations to write, with the nudge's moment beside `restart` or `go`, or alone
    when a nudge is due; and whether it is a nudge alone."""
    alone = not values and _nudge_due(pod, job, now)
    if alone or ANNOTATION_RESTART in values or ANNOTATION_GO in values:
        return {**values, ANNOTATION_NUDGE: str(int(now))}, alone
    return values, False


def _nudge_due(pod: object, job: Order, now: float) -> bool:
    """Whether the pod has not acted on the order NUDGE_SECONDS after it was written or last
    nudged (without that moment, after the pod was made: the hook makes a pod of a new run with
    its annotations): after go, its barrier still holds it, its `go` written; before, its
    `restart` written, its process still runs and no barrier holds it."""
    if waiting_since(pod) > now - NUDGE_SECONDS:
        return False
    notes = dig(pod, "metadata", "annotations")
    barrier = _state(pod, "initContainerStatuses", BARRIER_CONTAINER)
    if job.go:
        return dig(notes, ANNOTATION_GO) == str(job.run) and barrier == "running"
    mxnet = _state(pod, "containerStatuses", MXNET_CONTAINER)
    return (
        dig(notes, ANNOTATION_RESTART) == str(job.run)
        and barrier != "running"
        and mxnet == "running"
    )


def waiting_since(pod: object) -> float:
    """When the pod's order was last written or nudged (Unix seconds), or, without that moment,
    when the pod was made; -1 when neither is known."""
    made = parse_time(dig(pod, "metadata", "creationTimestamp"))
    written = _number(dig(pod, "metadata", "annotations", ANNOTATION_NUDGE))
    return max(written, made.timestamp() if made else -1)


def _state(pod: object, statuses: str, name: str) -> str | None:
    """Whether the pod's container `name` (of its `statuses`) is running, waiting or
    terminated, as the kubelet last reported; None when it reported none."""
    state = dig_dict(named(dig_list(pod, "status", statuses), name), "state")
    return str(next(iter(state))) if len(state) == 1 else None


def wanted_keys(job: Order) -> dict[str, list[str]]:
    """The keys the order sets, by the field of the pod's metadata that holds them: the go
    annotation only once the order says go."""
    return {
        "annotations": [ANNOTATION_RESTART, ANNOTATION_RUN, *([ANNOTATION_GO] if job.go else [])],
        "labels": [LABEL_RUN],
    }


def writes(field: str, present: object, values: dict[str, str]) -> Patch:
    """The operations that set the pod's `field` (what it holds: `present`) to `values` by
    key: the field added whole when the pod has none, else an `add` or `replace` of each key;
    none without values."""
    if not values:
        return []
    if not isinstance(present, dict):
        return [{"op": "add", "path": pointer("metadata", field), "value": values}]
    return [
        {
            "op": "replace" if key in present else "add",
            "path": pointer("metadata", field, key),
            "value": written,
        }
        for key, written in values.items()
    ]


def _number(value: object) -> int:
    """The run a value says, if it is a string of ASCII digits; else -1 (below any run)."""
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    return -1


def pointer(*keys: str) -> str:
    """The JSON pointer (RFC 6901) to `keys`: '~' and '/' inside a key escaped as ~0 and ~1."""
    return "".join("/" + key.replace("~", "~0").replace("/", "~1") for key in keys)
