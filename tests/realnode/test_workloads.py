"""Real MXNet and TVM jobs run to their outcome on a real node, through the installed project."""

from typing import Any

from tests.e2e.conftest import NAMESPACE, wait_for
from tests.realnode.conftest import Node, mxjob, replica

FINISHED = "finished 30 rounds"


#: A bound on liveness, not a goal: warm run 19 (a machine about 1.7 times slower than the one
#: these tests were written on, load average ~20) saw no dist_sync job Succeeded within 180 s.
SUCCEEDED_WITHIN = 420


def dist_job(cluster: Node, name: str, **spec: Any) -> dict[str, Any]:
    image = cluster.image("mxjob-mxnet")
    return mxjob(
        name,
        {
            "Scheduler": replica(image),
            "Server": replica(image),
            "Worker": replica(image, replicas=2),
        },
        **spec,
    )


def test_dist_sync_training_succeeds(cluster: Node) -> None:
    cluster.apply(dist_job(cluster, "train"))
    _, reason, _ = cluster.wait_condition("train", "Succeeded", timeout=SUCCEEDED_WITHIN)
    assert reason == "MXJobSucceeded"
    status = cluster.status("train")
    assert status["completionTime"] >= status["startTime"]
    assert status["replicaStatuses"]["Worker"]["succeeded"] == 2
    for pod in ("train-worker-0", "train-worker-1"):
        log = cluster.logs(pod)
        assert FINISHED in log, log
        assert "pulled the sum of 2 pushes" in log
    # cleanPodPolicy Running (the default) keeps finished pods, so their logs stay readable.
    assert set(cluster.pods("train")) == {
        "train-scheduler-0",
        "train-server-0",
        "train-worker-0",
        "train-worker-1",
    }
    cluster.delete("mxjob", "train")


def test_single_worker_job_trains_with_the_local_kvstore(cluster: Node) -> None:
    image = cluster.image("mxjob-mxnet")
    cluster.apply(mxjob("solo", {"Worker": replica(image, env={"KVSTORE": "local"})}))
    cluster.wait_condition("solo", "Succeeded", timeout=120)
    assert FINISHED in cluster.logs("solo-worker-0")
    cluster.delete("mxjob", "solo")


def test_workers_without_scheduler_succeed_once_every_worker_has(cluster: Node) -> None:
    image = cluster.image("mxjob-mxnet")
    slow = {"KVSTORE": "local", "ROUND_SECONDS": "0.3"}
    cluster.apply(mxjob("pair", {"Worker": replica(image, replicas=2, env=slow)}))
    cluster.wait_log("pair-worker-0", FINISHED, timeout=120)
    cluster.wait_condition("pair", "Succeeded", timeout=60)
    assert cluster.status("pair")["replicaStatuses"]["Worker"]["succeeded"] == 2
    cluster.delete("mxjob", "pair")


def test_all_workers_policy_succeeds_while_the_scheduler_runs(cluster: Node) -> None:
    """BytePS's scheduler keeps running after the workers: successPolicy AllWorkers."""
    image = cluster.image("mxjob-mxnet")
    keeps_running = ["sh", "-c", "python /workloads/train.py; exec sleep 3600"]
    job = dist_job(cluster, "byteps-like", successPolicy="AllWorkers")
    job["spec"]["mxReplicaSpecs"]["Scheduler"] = replica(image, command=keeps_running)
    cluster.apply(job)
    cluster.wait_condition("byteps-like", "Succeeded", timeout=SUCCEEDED_WITHIN)
    # cleanPodPolicy Running: the still-running Scheduler goes once the job has succeeded.
    wait_for(
        "the running scheduler removed",
        lambda: "byteps-like-scheduler-0" not in cluster.pods("byteps-like"),
        60,
    )
    cluster.delete("mxjob", "byteps-like")


def test_tune_job_finds_its_servers_through_mx_config(cluster: Node) -> None:
    image = cluster.image("mxjob-tvm")
    tune = ["python", "/workloads/tune.py"]
    server = replica(image, replicas=2, command=tune)
    server["template"]["metadata"] = {"annotations": {"tuner-server-key": "cpu-rn"}}
    cluster.apply(
        mxjob(
            "tune",
            {
                "TunerTracker": replica(image, command=tune),
                "TunerServer": server,
                "Tuner": replica(image, command=tune),
            },
            jobMode="MXTune",
        )
    )
    cluster.wait_condition("tune", "Succeeded", timeout=SUCCEEDED_WITHIN)
    assert "2 servers under key 'cpu-rn'" in cluster.logs("tune-tuner-0")
    # The tracker and servers were still running: cleanPodPolicy Running removed them.
    wait_for("tracker and servers removed", lambda: set(cluster.pods("tune")) == {"tune-tuner-0"})
    cluster.delete("mxjob", "tune")


def test_permanent_failure_fails_the_job_naming_replica_and_code(cluster: Node) -> None:
    image = cluster.image("mxjob-mxnet")
    exit_1 = ["python", "-c", "import sys; sys.exit(1)"]
    cluster.apply(mxjob("broken", {"Worker": replica(image, policy="ExitCode", command=exit_1)}))
    _, reason, message = cluster.wait_condition("broken", "Failed", timeout=120)
    assert reason == "MXJobFailed"
    assert "Worker replica 0" in message
    assert "exited with code 1" in message
    cluster.delete("mxjob", "broken")


def test_ttl_controller_deletes_a_finished_job(cluster: Node) -> None:
    image = cluster.image("mxjob-mxnet")
    job = mxjob(
        "short-lived",
        {"Worker": replica(image, env={"KVSTORE": "local"})},
        runPolicy={"ttlSecondsAfterFinished": 10},
    )
    cluster.apply(job)
    cluster.wait_condition("short-lived", "Succeeded", timeout=SUCCEEDED_WITHIN)
    # The TTL component runs as its own Deployment with its own ServiceAccount (RBAC enforced).
    wait_for(
        "the TTL controller to delete the job", lambda: not cluster.get("mxjob", "short-lived"), 90
    )


def test_deleting_a_job_removes_every_child(cluster: Node) -> None:
    image = cluster.image("mxjob-mxnet")
    forever = ["sleep", "3600"]
    cluster.apply(mxjob("doomed", {"Worker": replica(image, replicas=2, command=forever)}))
    cluster.wait_condition("doomed", "Running", timeout=120)
    assert len(cluster.services("doomed")) == 2
    cluster.kubectl("delete", "mxjob", "doomed", "-n", NAMESPACE, "--wait=true", "--timeout=90s")
    wait_for("pods gone", lambda: not cluster.pods("doomed"), 90)
    assert cluster.services("doomed") == {}
    assert cluster.get("configmap", "doomed-mxjob-config") is None
