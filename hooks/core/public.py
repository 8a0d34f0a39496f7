"""What code outside the hook may use of the core: the API's names and labels, safe reads of
plain JSON, timestamps, pod names, the spec reader, the cleaner of text from the cluster and
the progress reports' reader and writer; and, for the `mxjob` command's offline work (convert,
validate, render), the hook's own entry points: the request reader, validation, the sync, the
conversion review and the answer budget. Everything in the `mxjob` package (the command, the
cluster commands and the components) imports this module and nothing else of `hooks.core` (a
lint-imports contract), so the core's rooms can move freely."""

from hooks.core import budget
from hooks.core.api import (
    ALL_TYPES,
    ANNOTATION_GO,
    ANNOTATION_NUDGE,
    ANNOTATION_PROGRESS,
    ANNOTATION_RESTART,
    ANNOTATION_RUN,
    BARRIER_CONTAINER,
    GROUP,
    KIND,
    LABEL_JOB_NAME,
    MODE_TYPES,
    MXNET_CONTAINER,
    TERMINAL,
    TYPE_BY_FOLDED_NAME,
    VERSION,
    JobMode,
    Reason,
    ReplicaType,
)
from hooks.core.checkpoint import DEFAULT_PATH as CHECKPOINT_PATH
from hooks.core.checkpoint import RETAIN_FINALIZER, RETAINED_FROM, claim_name, retains
from hooks.core.conversion.review import convert
from hooks.core.conversion.versions import V1, UnconvertibleError
from hooks.core.fields import dig, dig_dict, dig_list, named
from hooks.core.job import Job
from hooks.core.labels import LABEL_RUN
from hooks.core.naming import parse_pod_name
from hooks.core.progress import (
    Noted,
    Report,
    encode_noted,
    first_report,
    parse_lines,
    read_noted,
)
from hooks.core.quoting import clean, unsafe
from hooks.core.request import parse_request
from hooks.core.scheduling.pick import Gang
from hooks.core.spec import JobSpec, Problem, load
from hooks.core.sync import sync
from hooks.core.timestamps import earliest, format_time, latest, parse_time
from hooks.core.validation import validate

__all__ = [
    "ALL_TYPES",
    "ANNOTATION_GO",
    "ANNOTATION_NUDGE",
    "ANNOTATION_PROGRESS",
    "ANNOTATION_RESTART",
    "ANNOTATION_RUN",
    "BARRIER_CONTAINER",
    "CHECKPOINT_PATH",
    "GROUP",
    "KIND",
    "LABEL_JOB_NAME",
    "LABEL_RUN",
    "MODE_TYPES",
    "MXNET_CONTAINER",
    "RETAINED_FROM",
    "RETAIN_FINALIZER",
    "TERMINAL",
    "TYPE_BY_FOLDED_NAME",
    "V1",
    "VERSION",
    "Gang",
    "Job",
    "JobMode",
    "JobSpec",
    "Noted",
    "Problem",
    "Reason",
    "ReplicaType",
    "Report",
    "UnconvertibleError",
    "budget",
    "claim_name",
    "clean",
    "convert",
    "dig",
    "dig_dict",
    "dig_list",
    "earliest",
    "encode_noted",
    "first_report",
    "format_time",
    "latest",
    "load",
    "named",
    "parse_lines",
    "parse_pod_name",
    "parse_request",
    "parse_time",
    "read_noted",
    "retains",
    "sync",
    "unsafe",
    "validate",
]
