"""Labels the Kubeflow training operators put on children; users and tools select by them."""

from hooks.core.api import (
    ANNOTATION_RUN,
    LABEL_JOB_NAME,
    LABEL_JOB_ROLE,
    LABEL_OPERATOR,
    LABEL_REPLICA_INDEX,
    LABEL_REPLICA_TYPE,
    OPERATOR_NAME,
    ReplicaType,
)
from hooks.core.naming import Slot

#: The replicas labelled `job-role: master`: the Servers, as training-operator's `IsMasterRole`
#: for MXJob names them (v1.8.1), so clients that select by it (Kubeflow's SDK `get_job_logs`)
#: find the pods they found there; in MXTune, which has no Servers and no master there, the
#: Tuner, whose success is the job's (docs/migration.md#the-python-sdk).
MASTER_TYPES = (ReplicaType.SERVER, ReplicaType.TUNER)


def job_labels(job: str) -> dict[str, str]:
    """Labels of every child of the job."""
    return {LABEL_JOB_NAME: job, LABEL_OPERATOR: OPERATOR_NAME}


def slot_selector(job: str, slot: Slot) -> dict[str, str]:
    """What a slot's Service selects: stable across replacement attempts."""
    return {
        LABEL_JOB_NAME: job,
        LABEL_REPLICA_TYPE: slot.rtype.short,
        LABEL_REPLICA_INDEX: str(slot.index),
    }


#: The run a pod belongs to, from run 1 on (the first run's pods have no such label): a Service
#: of run N selects only run N's pods, never a pod left over from an earlier run
#: (docs/restarts.md#whole-job-restarts).
LABEL_RUN = ANNOTATION_RUN


def run_selector(run: int) -> dict[str, str]:
    """What a Service of this run adds to its slot's selector, and a pod of it to its labels."""
    return {LABEL_RUN: str(run)} if run > 0 else {}


def slot_labels(job: str, slot: Slot) -> dict[str, str]:
    """Labels of a slot's pods and Service."""
    labels = {**job_labels(job), **slot_selector(job, slot)}
    if slot.rtype in MASTER_TYPES:
        labels[LABEL_JOB_ROLE] = "master"
    return labels


def at_index(labels: dict[str, str], index: str) -> dict[str, str]:
    """Labels (or a selector) of one slot, moved to the slot of another index (its decimal
    string) of the same type: the index is all that differs, and it keeps its place."""
    return {**labels, LABEL_REPLICA_INDEX: index}


def type_selector(job: str, rtype: ReplicaType) -> str:
    """The `replicaStatuses.<Type>.selector` string of a replica type."""
    return f"{LABEL_JOB_NAME}={job},{LABEL_REPLICA_TYPE}={rtype.short}"
