"""Kubeflow's training SDK driving one MXJob as a user's notebook does, run by
tests/realnode/test_sdk.py in a virtual environment of its own (requirements-sdk.txt:
kubeflow-training 1.8.1, kubernetes 29.0.0), never in the project's.

    python sdk_driver.py KUBECONFIG NAMESPACE IMAGE NAME WORKLOADS_CONFIGMAP

It creates the job from the SDK's models, waits for Succeeded, reads its pods and logs, asks
whether it succeeded or failed, deletes it, and prints what each call returned as one JSON
object."""

import json
import sys
import time

from kubeflow.training import TrainingClient, models
from kubernetes import client

#: As tests/realnode/conftest.py's `checked` makes every process of the tier: the cluster check
#: (workloads/cluster_check.py), then the training script in the same process.
CHECKED_TRAINING = [
    "sh", "-c", 'python /workloads/cluster_check.py && exec "$@"', "checked",
    "python", "/workloads/train.py",
]  # fmt: skip


def replica(image: str, workloads: str, replicas: int = 1) -> models.KubeflowOrgV1ReplicaSpec:
    """A replica of the real-node workload train.py, from the workloads ConfigMap."""
    container = client.V1Container(
        name="mxnet",
        image=image,
        command=CHECKED_TRAINING,
        env=[client.V1EnvVar(name="ROUNDS", value="20")],
        volume_mounts=[client.V1VolumeMount(name="workloads", mount_path="/workloads")],
    )
    volume = client.V1Volume(
        name="workloads", config_map=client.V1ConfigMapVolumeSource(name=workloads)
    )
    spec = client.V1PodSpec(
        containers=[container], volumes=[volume], termination_grace_period_seconds=5
    )
    return models.KubeflowOrgV1ReplicaSpec(
        replicas=replicas, restart_policy="Never", template=client.V1PodTemplateSpec(spec=spec)
    )


def main(kubeconfig: str, namespace: str, image: str, name: str, workloads: str) -> None:
    training = TrainingClient(config_file=kubeconfig, namespace=namespace, job_kind="MXJob")
    job = models.KubeflowOrgV1MXJob(
        api_version="kubeflow.org/v1",
        kind="MXJob",
        metadata=client.V1ObjectMeta(name=name),
        spec=models.KubeflowOrgV1MXJobSpec(
            job_mode="MXTrain",
            # Keep every pod, the Server's too, for get_job_logs after the job succeeded.
            run_policy=models.KubeflowOrgV1RunPolicy(clean_pod_policy="None"),
            mx_replica_specs={
                "Scheduler": replica(image, workloads),
                "Server": replica(image, workloads),
                "Worker": replica(image, workloads, replicas=2),
            },
        ),
    )
    started = time.monotonic()
    training.create_job(job)
    conditions = training.wait_for_job_conditions(
        name, expected_conditions={"Succeeded"}, timeout=300, polling_interval=2
    )
    succeeded_after = time.monotonic() - started
    master_logs, _ = training.get_job_logs(name)
    worker_logs, _ = training.get_job_logs(name, is_master=False, replica_type="worker")
    result = {
        "conditions": [c.type for c in conditions.status.conditions if c.status == "True"],
        "pods": sorted(training.get_job_pod_names(name)),
        "masters": sorted(training.get_job_pod_names(name, is_master=True)),
        "worker_pods": sorted(
            p.metadata.name for p in training.get_job_pods(name, replica_type="worker")
        ),
        "master_logs": sorted(master_logs),
        "worker_logs": {pod: log[-200:] for pod, log in sorted(worker_logs.items())},
        "succeeded": training.is_job_succeeded(name),
        "failed": training.is_job_failed(name),
        "succeeded_after": round(succeeded_after, 1),
    }
    training.delete_job(name)
    result["deleted"] = True
    print(json.dumps(result))


if __name__ == "__main__":
    main(*sys.argv[1:6])
