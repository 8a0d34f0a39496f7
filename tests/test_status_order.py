"""The order statuses keep (`testsupport.status_order.backwards`, which the real-node tier checks
on every status it sees during a fault): first its rule, case by case; then the pure core's own
status sequences through a job's life, a replaced Worker and a whole-job restart, each status
the one Metacontroller would write after applying the previous answer to the cluster."""

import itertools
from typing import Any

import pytest

from testsupport.jobs import mxjob, replica, request, run
from testsupport.observed import created, running, terminated
from testsupport.status_order import backwards

Status = dict[str, Any]


def status(conditions: dict[str, str], **counts: dict[str, int]) -> Status:
    return {
        "conditions": [{"type": t, "status": s} for t, s in conditions.items()],
        "replicaStatuses": counts,
    }


RUNNING = {"Created": "True", "Running": "True"}
RESTARTING = {"Created": "True", "Restarting": "True"}


@pytest.mark.parametrize(
    ("before", "after", "problem"),
    [
        (status(RUNNING), status(RUNNING), None),
        (status(RUNNING), status({"Created": "True"}), "conditions ['Running'] disappeared"),
        (status(RUNNING), status(RESTARTING), None),  # Restarting replaces Running
        (
            status({**RUNNING, "Succeeded": "True"}),
            status({**RUNNING, "Succeeded": "False"}),
            "Succeeded went back to False",
        ),
        (
            status(RUNNING, Worker={"failed": 1}),
            status(RUNNING, Worker={"failed": 0}),
            "Worker failed fell from 1 to 0",
        ),
        (  # the restart is counted in the status that drops the failed attempt
            status(RUNNING, Worker={"failed": 1}),
            status(RESTARTING, Worker={"failed": 0, "restarts": 1}),
            None,
        ),
        (  # counted with the failed attempt; the next status counts its replacement
            status(RESTARTING, Worker={"failed": 1, "restarts": 1}),
            status(RUNNING, Worker={"failed": 0, "restarts": 1}),
            None,
        ),
        (
            status(RESTARTING, Worker={"failed": 1, "restarts": 1}),
            status(RUNNING, Worker={"failed": 0, "restarts": 0}),
            "Worker restarts fell from 1 to 0",
        ),
        (
            status(RUNNING, Worker={"succeeded": 2, "restarts": 1}),
            status(RUNNING, Worker={"succeeded": 1, "restarts": 1}),
            "Worker succeeded fell from 2 to 1",
        ),
    ],
)
def test_the_rule(before: Status, after: Status, problem: str | None) -> None:
    assert backwards(before, after) == problem


def life(killed: str) -> list[Status]:
    """Every status of a three-replica ExitCode job whose `killed` pod exits 137 once it runs:
    each sync's children are created (and run) or deleted as Metacontroller and the kubelet
    would, until nothing changes; then every pod exits 0."""
    job = mxjob(
        "relay", {r: replica(1, policy="ExitCode") for r in ("Scheduler", "Server", "Worker")}
    )
    children: dict[tuple[str, str], dict[str, Any]] = {}
    statuses: list[Status] = []
    minute = 1.0

    def sync() -> bool:
        nonlocal minute, job
        answer = run(request(job, list(children.values())))
        now: Status = dict(answer.status)
        job = {**job, "status": now}
        changed = not statuses or statuses[-1] != now
        if changed:
            statuses.append(now)
        wanted = {(c["kind"], c["metadata"]["name"]): c for c in answer.children}
        kept = {key: children[key] for key in wanted if key in children}
        for key, child in wanted.items():
            if key not in kept:
                made = created(child, minute)
                kept[key] = running(made, minute) if key[0] == "Pod" else made
        changed |= kept.keys() != children.keys()
        children.clear()
        children.update(kept)
        minute += 1
        return changed

    def settle() -> None:
        for _ in range(10):
            if not sync():
                return
        raise AssertionError(f"no fixpoint: {statuses[-1]}")

    settle()
    children["Pod", killed] = terminated(children["Pod", killed], 137, minutes=minute)
    settle()
    for key, child in children.items():
        if key[0] == "Pod":
            children[key] = terminated(child, 0, minutes=minute)
    settle()
    return statuses


@pytest.mark.parametrize(
    ("killed", "restarting"),
    [("relay-worker-0", "Worker replica 0"), ("relay-server-0", "restarting the whole job")],
)
def test_the_core_never_goes_backwards(killed: str, restarting: str) -> None:
    statuses = life(killed)
    for before, after in itertools.pairwise(statuses):
        assert backwards(before, after) is None, (before, after)
    messages = [c.get("message", "") for s in statuses for c in s["conditions"]]
    assert any(restarting in m for m in messages), messages  # the fault did restart it
    assert any(
        c["type"] == "Succeeded" and c["status"] == "True" for c in statuses[-1]["conditions"]
    ), statuses[-1]
    assert sum(s["restarts"] for s in statuses[-1]["replicaStatuses"].values()) == 1
