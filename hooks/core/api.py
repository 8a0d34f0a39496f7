"""The MXJob API vocabulary: group, replica types, policies, labels and condition names.

Enums are `str` enums so that they serialise as the plain strings the API uses.
"""

from enum import StrEnum

GROUP = "kubeflow.org"
VERSION = "v1"
KIND = "MXJob"
OPERATOR_NAME = "mxjob-controller"
MXNET_CONTAINER = "mxnet"
#: The init container that holds a replacement Worker back until ps-lite can take it
#: (hooks/core/restart/rejoin.py).
WAIT_CONTAINER = "mxjob-rejoin-wait"
#: The containers of a pod that restarts in place (hooks/core/build/inplace.py): a sidecar that
#: restarts every container when the pod's restart annotation changes, and an init container
#: that holds a restarted pod until the hook releases its run.
RESTARTER_CONTAINER = "mxjob-restarter"
BARRIER_CONTAINER = "mxjob-barrier"
#: Keys of the job's config ConfigMap: the cluster and tuner-server keys a run started with.
CLUSTER_KEY = "cluster"
LABELS_KEY = "labels"
DEFAULT_PORT_NAME = "mxjob-port"
DEFAULT_PORT = 9091
TUNER_SERVER_KEY = "tuner-server-key"


class JobMode(StrEnum):
    """What the job runs: MXNet parameter-server training, or AutoTVM tuning."""

    TRAIN = "MXTrain"
    TUNE = "MXTune"


class ReplicaType(StrEnum):
    """A role in the job; the value is the canonical key of `spec.mxReplicaSpecs`."""

    SCHEDULER = "Scheduler"
    SERVER = "Server"
    WORKER = "Worker"
    TUNER_TRACKER = "TunerTracker"
    TUNER_SERVER = "TunerServer"
    TUNER = "Tuner"

    #: Lower-case form used in child names, labels and DMLC_ROLE.
    short: str

    def __init__(self, value: str) -> None:
        # Set once per member: it is read for every child name and label.
        self.short = value.lower()


#: Replica types allowed in each mode, in the order children and statuses are listed.
MODE_TYPES: dict[JobMode, tuple[ReplicaType, ...]] = {
    JobMode.TRAIN: (ReplicaType.SCHEDULER, ReplicaType.SERVER, ReplicaType.WORKER),
    JobMode.TUNE: (ReplicaType.TUNER_TRACKER, ReplicaType.TUNER_SERVER, ReplicaType.TUNER),
}
ALL_TYPES: tuple[ReplicaType, ...] = tuple(ReplicaType)
TYPE_BY_FOLDED_NAME: dict[str, ReplicaType] = {t.short: t for t in ReplicaType}


class RestartPolicy(StrEnum):
    """How a replica's failures are handled (docs/restarts.md)."""

    ALWAYS = "Always"
    ON_FAILURE = "OnFailure"
    NEVER = "Never"
    EXIT_CODE = "ExitCode"

    @property
    def pod_policy(self) -> str:
        """The Pod `restartPolicy`: the kubelet cannot judge exit codes, so ExitCode is Never."""
        return RestartPolicy.NEVER.value if self is RestartPolicy.EXIT_CODE else self.value


class SuccessPolicy(StrEnum):
    """When an MXTrain job with a Scheduler has succeeded (docs/status.md,
    kubeflow/mxnet-operator)."""

    DEFAULT = ""  # the Scheduler and every Worker succeeded
    ALL_WORKERS = "AllWorkers"  # every Worker succeeded (BytePS: its Scheduler may keep running)


class ServiceMode(StrEnum):
    """How a job's replicas get stable DNS names (docs/environment.md#services)."""

    PER_REPLICA = "PerReplica"  # a headless Service per replica, named after it
    PER_JOB = "PerJob"  # one headless Service for the job; each pod its hostname in it


class TopologyMode(StrEnum):
    """Whether a topology placement must hold or is preferred (docs/scheduling.md#topology)."""

    REQUIRED = "Required"
    PREFERRED = "Preferred"


class RestartStrategy(StrEnum):
    """How a whole-job restart restarts the pods (docs/restarts.md#in-place): deleted and made
    again, or every container of every pod restarted where it is."""

    RECREATE = "Recreate"
    IN_PLACE = "InPlace"


class CleanPodPolicy(StrEnum):
    """Which pods are removed once the job has finished (docs/run-policy.md)."""

    ALL = "All"
    RUNNING = "Running"
    NONE = "None"


class ConditionType(StrEnum):
    """Kubeflow job condition types."""

    CREATED = "Created"
    RUNNING = "Running"
    RESTARTING = "Restarting"
    SUSPENDED = "Suspended"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"


class ConditionStatus(StrEnum):
    """The status of a condition, Kubernetes style: a string, not a boolean."""

    TRUE = "True"
    FALSE = "False"


class Reason(StrEnum):
    """Kubeflow job condition reasons."""

    CREATED = "MXJobCreated"
    RUNNING = "MXJobRunning"
    RESTARTING = "MXJobRestarting"
    SUSPENDED = "MXJobSuspended"
    RESUMED = "MXJobResumed"
    SUCCEEDED = "MXJobSucceeded"
    FAILED = "MXJobFailed"
    INVALID_SPEC = "MXJobInvalidSpec"
    BACKOFF_LIMIT = "BackoffLimitExceeded"
    DEADLINE = "DeadlineExceeded"
    STALLED = "ProgressDeadlineExceeded"


TERMINAL = (ConditionType.SUCCEEDED, ConditionType.FAILED)
#: Pod condition set when the cluster takes a pod away: preemption, drain, taint, node shutdown.
DISRUPTION = "DisruptionTarget"
#: The pod condition Kueue sets on the pods of a Pod group it stops (evicts) before deleting them.
KUEUE_TERMINATION = "TerminationTarget"

LABEL_PREFIX = "training.kubeflow.org/"
LABEL_JOB_NAME = LABEL_PREFIX + "job-name"
LABEL_REPLICA_TYPE = LABEL_PREFIX + "replica-type"
LABEL_REPLICA_INDEX = LABEL_PREFIX + "replica-index"
LABEL_OPERATOR = LABEL_PREFIX + "operator-name"
LABEL_JOB_ROLE = LABEL_PREFIX + "job-role"
#: Restarts this replica slot had before the attempt carrying the annotation (docs/restarts.md).
ANNOTATION_RESTARTS = "mxjob.kubeflow.org/restarts-before"
#: The run a pod belongs to: 0 at first, one more after each whole-job restart (docs/restarts.md).
ANNOTATION_RUN = "mxjob.kubeflow.org/run"
#: The attempt of its replica a pod is: 0 at first, N for `-rN` (docs/restarts.md).
ANNOTATION_ATTEMPT = "mxjob.kubeflow.org/attempt"

#: The run an in-place pod is asked to restart for, and the run it is released into: written
#: by the restarter component, read by the pod's restarter and barrier (docs/restarts.md).
ANNOTATION_RESTART = "mxjob.kubeflow.org/restart"
ANNOTATION_GO = "mxjob.kubeflow.org/go"
#: When the restarter last wrote `restart` or `go` to a pod, or nudged it (Unix seconds): a
#: rewrite makes the kubelet write the pod's downward API files again (docs/restarts.md#in-place).
ANNOTATION_NUDGE = "mxjob.kubeflow.org/nudge"

#: A Worker's newest progress report, written by the progress component (hooks/core/progress.py).
ANNOTATION_PROGRESS = "mxjob.kubeflow.org/progress"
#: The env var of a Worker's mxnet container that says how many epochs the job trains: the
#: status then shows a percentage and an estimated completion (docs/status.md#progress).
EPOCHS_ENV = "MXJOB_EPOCHS"

#: `runPolicy.managedBy` values that mean this controller (training-operator's reserved name, so
#: MXJob files written for it keep working); any other value hands the job to that controller.
OWN_MANAGERS = ("kubeflow.org/training-operator",)
