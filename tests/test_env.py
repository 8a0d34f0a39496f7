"""docs/environment.md: the environment each process sees, resolved as the kubelet resolves it."""

import json
from typing import Any

from hooks.core.build.env import HEARTBEAT_INTERVAL, HEARTBEAT_TIMEOUT
from tests.builders import mxjob, replica, request, run
from testsupport.kubelet_env import expand, resolve

SEED_CLUSTER = (
    '{"scheduler":[{"url":"mxnet-job-scheduler-0","port":9091}],'
    '"server":[{"url":"mxnet-job-server-0","port":9091}],'
    '"worker":[{"url":"mxnet-job-worker-0","port":9091}]}'
)
SEED_LABELS = '{"scheduler":"","server":"","worker":""}'


def seed_job() -> dict[str, Any]:
    """The three-replica MXTrain job of the mxnet-operator v1 README, inline layout
    (examples/mx_job_dist_gpu.yaml)."""
    gpu = replica(
        1,
        "Never",
        image="mxjob/mxnet:gpu",
        command=["python"],
        args=["/incubator-mxnet/example/image-classification/train_mnist.py"],
        ports=[{"containerPort": 9091, "name": "mxjob-port"}],
    )
    return mxjob(
        name="mxnet-job",
        replicas={"Scheduler": gpu, "Server": gpu, "Worker": gpu},
        mode="MXTrain",
        cleanPodPolicy="All",
    )


def environments(job: dict[str, Any]) -> dict[str, dict[str, str]]:
    children = run(request(job)).children
    config_maps = {c["metadata"]["name"]: c for c in children if c["kind"] == "ConfigMap"}
    return {
        c["metadata"]["name"]: resolve(c, c["spec"]["containers"][0], config_maps)
        for c in children
        if c["kind"] == "Pod"
    }


def test_seed_job_environment_matches_spec_exactly() -> None:
    def expected(role: str, extra: dict[str, str]) -> dict[str, str]:
        return {
            "DMLC_PS_ROOT_URI": "mxnet-job-scheduler-0",
            "DMLC_PS_ROOT_PORT": "9091",
            "DMLC_NUM_SERVER": "1",
            "DMLC_NUM_WORKER": "1",
            "DMLC_ROLE": role,
            "DMLC_USE_KUBERNETES": "1",
            **extra,
            "PS_HEARTBEAT_INTERVAL": HEARTBEAT_INTERVAL,
            "PS_HEARTBEAT_TIMEOUT": HEARTBEAT_TIMEOUT,
            "MXJOB_CLUSTER": SEED_CLUSTER,
            "MXJOB_LABELS": SEED_LABELS,
            "MX_CONFIG": f'{{"cluster":{SEED_CLUSTER},"labels":{SEED_LABELS},'
            f'"task":{{"type":"{role}","index":0}}}}',
            "MXJOB_RUN": "0",
            "MXJOB_ATTEMPT": "0",
        }

    assert environments(seed_job()) == {
        "mxnet-job-scheduler-0": expected("scheduler", {}),
        "mxnet-job-server-0": expected("server", {}),
        "mxnet-job-worker-0": expected("worker", {"DMLC_WORKER_ID": "0"}),
    }


def test_seed_job_has_three_pods_and_three_headless_services() -> None:
    children = run(request(seed_job())).children
    services = [c for c in children if c["kind"] == "Service"]
    assert sorted(c["metadata"]["name"] for c in children if c["kind"] == "Pod") == [
        "mxnet-job-scheduler-0",
        "mxnet-job-server-0",
        "mxnet-job-worker-0",
    ]
    assert sorted(s["metadata"]["name"] for s in services) == [
        "mxnet-job-scheduler-0",
        "mxnet-job-server-0",
        "mxnet-job-worker-0",
    ]
    assert all(s["spec"]["clusterIP"] == "None" for s in services)
    assert all(
        s["spec"]["ports"]
        == [{"name": "mxjob-port", "port": 9091, "protocol": "TCP", "targetPort": 9091}]
        for s in services
    )


def test_mx_config_is_valid_json_with_every_replica() -> None:
    job = mxjob(replicas={"Scheduler": replica(1), "Server": replica(2), "Worker": replica(3)})
    for name, env in environments(job).items():
        config = json.loads(env["MX_CONFIG"])
        assert [len(config["cluster"][t]) for t in ("scheduler", "server", "worker")] == [1, 2, 3]
        role, index = name.removeprefix("mnist-").rsplit("-", 1)
        assert config["task"] == {"type": role, "index": int(index)}


def test_user_variables_of_our_names_are_replaced_and_others_kept() -> None:
    env = [{"name": "DMLC_ROLE", "value": "bogus"}, {"name": "ROLE", "value": "is-$(DMLC_ROLE)"}]
    job = mxjob(replicas={"Worker": replica(2, env=env)})
    resolved = environments(job)["mnist-worker-1"]
    assert resolved["DMLC_ROLE"] == "worker"
    assert resolved["ROLE"] == "is-worker"
    assert resolved["DMLC_PS_ROOT_URI"] == ""
    assert resolved["DMLC_PS_ROOT_PORT"] == "0"
    assert resolved["DMLC_WORKER_ID"] == "1"


def test_user_heartbeat_values_win_without_duplicates() -> None:
    env = [{"name": "PS_HEARTBEAT_TIMEOUT", "value": "60"}]
    job = mxjob(replicas={"Scheduler": replica(1), "Worker": replica(1, env=env)})
    pods = {c["metadata"]["name"]: c for c in run(request(job)).children if c["kind"] == "Pod"}
    worker = pods["mnist-worker-0"]["spec"]["containers"][0]["env"]
    names = [var["name"] for var in worker]
    assert names.count("PS_HEARTBEAT_TIMEOUT") == 1
    assert {v["name"]: v.get("value") for v in worker}["PS_HEARTBEAT_TIMEOUT"] == "60"
    assert environments(job)["mnist-worker-0"]["PS_HEARTBEAT_INTERVAL"] == HEARTBEAT_INTERVAL
    assert environments(job)["mnist-scheduler-0"]["PS_HEARTBEAT_TIMEOUT"] == HEARTBEAT_TIMEOUT


def test_mxtune_pods_get_no_ps_lite_heartbeats() -> None:
    replicas = {"TunerTracker": replica(1), "TunerServer": replica(1), "Tuner": replica(1)}
    for env in environments(mxjob(replicas=replicas, mode="MXTune")).values():
        assert "PS_HEARTBEAT_INTERVAL" not in env and "PS_HEARTBEAT_TIMEOUT" not in env


def test_custom_mxjob_port_number_is_kept() -> None:
    custom = replica(1, ports=[{"containerPort": 9000, "name": "mxjob-port"}])
    job = mxjob(replicas={"Scheduler": custom, "Worker": replica(1)})
    env = environments(job)["mnist-worker-0"]
    assert env["DMLC_PS_ROOT_PORT"] == "9000"
    assert '{"url":"mnist-scheduler-0","port":9000}' in env["MX_CONFIG"]
    assert '{"url":"mnist-worker-0","port":9091}' in env["MX_CONFIG"]


def test_env_bytes_per_pod_do_not_grow_with_the_job() -> None:
    def pod_bytes(workers: int) -> int:
        job = mxjob(replicas={"Worker": replica(workers)})
        pod = next(c for c in run(request(job)).children if c["kind"] == "Pod")
        return len(json.dumps(pod["spec"]["containers"][0]["env"]))

    assert pod_bytes(1000) - pod_bytes(1) <= len("999") * 2


def test_expansion_follows_kubernetes_rules() -> None:
    assert expand("$(A)-$(B)-$$(A)", {"A": "a"}) == "a-$(B)-$(A)"
