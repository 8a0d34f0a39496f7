"""Gang scheduling by the real schedulers (docs/scheduling.md): Volcano's scheduler and
scheduler-plugins' coscheduling, each a second scheduler against the tier's API server, placing
an MXJob's pods on a pool of two KWOK nodes of 2 CPUs each (4 CPUs in all; the pool is tainted,
so only these tests' pods land there). Every pod asks for 1 or 2 CPUs.

Proven for each scheduler: a gang that cannot fit binds no pod and the MXJob says what it waits
for; a gang that fits is bound at once; of two gangs that do not fit together one runs and the
other starts when it ends, neither partly bound; a Worker replaced under ExitCode and a whole-job
restart go through the gang scheduler again and the job succeeds.
"""

import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import pytest
import yaml

from tests.builders import replica
from tests.e2e.conftest import Cluster, wait_for
from tests.e2e.test_lifecycle import job
from testsupport.server import local_controller
from tools.cluster import schedulers
from tools.cluster.stack import Stack

NODES = 2
NODE_CPU = "2"


@dataclass(frozen=True)
class Scheduler:
    """One gang scheduler under test: how to start it and what the hook makes for it."""

    name: str
    api_version: str
    scheduler_name: str
    start: Callable[[Stack, str], AbstractContextManager[None]]

    @property
    def pool(self) -> str:
        return self.name

    @property
    def podgroups(self) -> str:
        return f"podgroups.{self.api_version.split('/')[0]}"


SCHEDULERS = [
    Scheduler(
        "volcano",
        "scheduling.volcano.sh/v1beta1",
        "volcano",
        lambda stack, pool: schedulers.volcano(stack, f"{schedulers.POOL_LABEL}:{pool}"),
    ),
    Scheduler(
        "scheduler-plugins",
        "scheduling.x-k8s.io/v1alpha1",
        schedulers.PLUGINS_SCHEDULER,
        lambda stack, pool: schedulers.scheduler_plugins(stack),
    ),
]


@pytest.fixture(scope="module", params=SCHEDULERS, ids=lambda s: s.name)
def gang(request: pytest.FixtureRequest, cluster: Cluster, hook_port: int) -> Iterator[Scheduler]:
    """The scheduler running, its pool of nodes, and the CompositeController managing its
    PodGroups (the plain controller and no pool again afterwards)."""
    scheduler: Scheduler = request.param
    names = [f"{scheduler.pool}-{i}" for i in range(NODES)]
    cluster.kubectl("apply", "-f", "-", stdin=schedulers.nodes(names, scheduler.pool, NODE_CPU))
    plain = local_controller(hook_port)
    controller = yaml.safe_load(plain)
    controller["spec"]["childResources"].append(
        {
            "apiVersion": scheduler.api_version,
            "resource": "podgroups",
            "updateStrategy": {"method": "OnDelete"},
        }
    )
    try:
        with scheduler.start(cluster.stack, scheduler.pool):
            cluster.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(controller))
            yield scheduler
    finally:
        cluster.kubectl("apply", "-f", "-", stdin=plain)
        cluster.kubectl("delete", "node", *names, "--wait=false", check=False)


def pooled(gang: Scheduler, count: int, cpu: str = "1", **extra: Any) -> dict[str, Any]:
    """A replica spec whose pods ask for `cpu` and may only run on the gang's pool."""
    spec = replica(count, resources={"requests": {"cpu": cpu}}, **extra)
    spec["template"]["spec"].update(
        nodeSelector={schedulers.POOL_LABEL: gang.pool},
        tolerations=[{"key": schedulers.POOL_LABEL, "operator": "Exists"}],
    )
    return spec


def bound(cluster: Cluster, name: str) -> dict[str, str]:
    """The job's live pods and the node each is bound to ('' while unbound)."""
    return {
        pod: obj["spec"].get("nodeName", "")
        for pod, obj in cluster.pods(name).items()
        if obj["status"].get("phase") not in ("Succeeded", "Failed")
        and not obj["metadata"].get("deletionTimestamp")
    }


def all_bound(cluster: Cluster, name: str, count: int) -> dict[str, str] | None:
    pods = bound(cluster, name)
    return pods if len(pods) == count and all(pods.values()) else None


def next_run(cluster: Cluster, name: str) -> dict[str, str] | None:
    """The job's four pods once a run after the first has all of them bound."""
    pods = all_bound(cluster, name, 4)
    return pods if pods and f"{name}-scheduler-0" not in pods else None


def never_partly_bound(cluster: Cluster, names: list[str], seconds: float) -> None:
    """For `seconds`, every job has either all or none of its live pods bound."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for name in names:
            nodes = list(bound(cluster, name).values())
            assert all(nodes) or not any(nodes), f"{name} partly bound: {bound(cluster, name)}"
        time.sleep(0.5)


def message(cluster: Cluster, name: str) -> str:
    found = cluster.condition(name)
    return found[2] if found else ""


def waiting(cluster: Cluster, name: str) -> str | None:
    """The job's message once it says what it waits for."""
    words = message(cluster, name)
    return words if "waiting for" in words else None


def finish(cluster: Cluster, pods: list[str], code: int = 0) -> None:
    for pod in pods:
        cluster.stack.terminate_pod("default", pod, code)


def test_a_gang_that_cannot_fit_binds_no_pod_and_says_so(cluster: Cluster, gang: Scheduler) -> None:
    name = f"{gang.pool}-toobig"
    cluster.apply(job(name, {"Worker": pooled(gang, 3, cpu="2")}))  # 6 CPUs, the pool has 4
    words = wait_for("the waiting message", lambda: waiting(cluster, name), 60)
    never_partly_bound(cluster, [name], 10)
    assert not any(bound(cluster, name).values())
    group = cluster.get(gang.podgroups, name)
    assert group is not None and group["spec"]["minMember"] == 3
    assert group["spec"]["minResources"] == {"cpu": "6"}
    print(f"{gang.name}, a gang that cannot fit: {cluster.condition(name)}")
    assert gang.scheduler_name in words or "Volcano" in words
    cluster.delete("mxjob", name)
    cluster.wait_gone("mxjob", name)


def test_a_gang_that_fits_is_bound_at_once_and_succeeds(cluster: Cluster, gang: Scheduler) -> None:
    name = f"{gang.pool}-fits"
    replicas = {"Scheduler": pooled(gang, 1), "Server": pooled(gang, 1), "Worker": pooled(gang, 2)}
    applied = time.monotonic()
    cluster.apply(job(name, replicas))
    pods = wait_for("all four pods bound", lambda: all_bound(cluster, name, 4), 60)
    print(f"{gang.name}: apply to all 4 pods bound in {time.monotonic() - applied:.1f}s")
    assert set(pods) == {f"{name}-scheduler-0", f"{name}-server-0"} | {
        f"{name}-worker-{i}" for i in range(2)
    }
    for pod in cluster.pods(name).values():
        assert pod["spec"]["schedulerName"] == gang.scheduler_name
    cluster.wait_condition(name, "Running")
    finish(cluster, [f"{name}-scheduler-0", f"{name}-worker-0", f"{name}-worker-1"])
    cluster.wait_condition(name, "Succeeded")
    cluster.delete("mxjob", name)
    cluster.wait_gone("mxjob", name)


def test_of_two_gangs_that_do_not_fit_together_one_waits_for_the_other(
    cluster: Cluster, gang: Scheduler
) -> None:
    first, second = f"{gang.pool}-first", f"{gang.pool}-second"
    cluster.apply(job(first, {"Worker": pooled(gang, 3)}))
    wait_for(f"{first} bound", lambda: all_bound(cluster, first, 3), 60)
    cluster.apply(job(second, {"Worker": pooled(gang, 3)}))  # 3 + 3 CPUs, the pool has 4
    wait_for(f"{second} waiting", lambda: waiting(cluster, second), 60)
    never_partly_bound(cluster, [first, second], 10)
    assert not any(bound(cluster, second).values())
    print(f"{gang.name}, the second gang while the first runs: {cluster.condition(second)}")
    ended = time.monotonic()
    finish(cluster, [f"{first}-worker-{i}" for i in range(3)])
    wait_for(f"{second} bound", lambda: all_bound(cluster, second, 3), 90)
    print(f"{gang.name}: first gang ended to second gang bound in {time.monotonic() - ended:.1f}s")
    cluster.wait_condition(first, "Succeeded")
    finish(cluster, [f"{second}-worker-{i}" for i in range(3)])
    cluster.wait_condition(second, "Succeeded")
    for name in (first, second):
        cluster.delete("mxjob", name)
        cluster.wait_gone("mxjob", name)


def test_replacements_go_through_the_gang_scheduler_again(
    cluster: Cluster, gang: Scheduler
) -> None:
    name = f"{gang.pool}-restarts"
    replicas = {
        "Scheduler": pooled(gang, 1, policy="ExitCode"),
        "Server": pooled(gang, 1, policy="ExitCode"),
        "Worker": pooled(gang, 2, policy="ExitCode"),
    }
    cluster.apply(job(name, replicas))
    wait_for("all four pods bound", lambda: all_bound(cluster, name, 4), 60)
    # A Worker killed (137): replaced alone, through the gang scheduler.
    finish(cluster, [f"{name}-worker-1"], 137)
    replaced = wait_for(
        "the replacement bound", lambda: bound(cluster, name).get(f"{name}-worker-1-r1"), 60
    )
    assert replaced.startswith(gang.pool)
    replacement = cluster.pods(name)[f"{name}-worker-1-r1"]
    assert replacement["spec"]["schedulerName"] == gang.scheduler_name
    # The Scheduler killed: the whole job restarts, and the new run is a gang again.
    finish(cluster, [f"{name}-scheduler-0"], 137)
    run = wait_for("the next run bound", lambda: next_run(cluster, name), 90)
    print(f"{gang.name}: after the whole-job restart {sorted(run)} bound")
    scheduler = next(p for p in run if "-scheduler-" in p)
    workers = [p for p in run if "-worker-" in p]
    finish(cluster, [scheduler, *workers])
    cluster.wait_condition(name, "Succeeded")
    status = cluster.status(name)
    assert status["replicaStatuses"]["Worker"]["succeeded"] == 2
    cluster.delete("mxjob", name)
    cluster.wait_gone("mxjob", name)


def test_a_resized_job_is_a_gang_again_at_its_new_size(cluster: Cluster, gang: Scheduler) -> None:
    """Worker replicas edited from 1 to 2 on a running gang: the whole job restarts, its
    PodGroup is made again with minMember 4, and the new run is bound as a whole."""
    name = f"{gang.pool}-resized"
    replicas = {
        "Scheduler": pooled(gang, 1, policy="ExitCode"),
        "Server": pooled(gang, 1, policy="ExitCode"),
        "Worker": pooled(gang, 1, policy="ExitCode"),
    }
    cluster.apply(job(name, replicas))
    wait_for("all three pods bound", lambda: all_bound(cluster, name, 3), 60)
    before = cluster.get(gang.podgroups, name) or {}
    patch = '{"spec": {"mxReplicaSpecs": {"Worker": {"replicas": 2}}}}'
    cluster.kubectl("patch", "mxjob", name, "-n", "default", "--type=merge", "-p", patch)

    def remade() -> dict[str, Any] | None:
        group = cluster.get(gang.podgroups, name) or {}
        uid = group.get("metadata", {}).get("uid")
        return group if uid not in (None, before["metadata"]["uid"]) else None

    group = wait_for(f"the PodGroup made again ({message(cluster, name)})", remade, 90)
    assert group["spec"]["minMember"] == 4, group["spec"]
    run = wait_for(
        f"the next run bound at the new size ({message(cluster, name)})",
        lambda: next_run(cluster, name),
        90,
    )
    print(f"{gang.name}: resized 1 -> 2 Workers, the next run {sorted(run)} bound")
    finish(cluster, [p for p in run if "-server-" not in p])
    cluster.wait_condition(name, "Succeeded")
    cluster.delete("mxjob", name)
    cluster.wait_gone("mxjob", name)
