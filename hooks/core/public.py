"""What code outside the hook may use of the core: the API's names and labels, safe reads of
plain JSON, timestamps, pod names, the spec reader, the cleaner of text from the cluster and
the progress reports' reader and writer. The components (`ttl`, `events`, `certs`, `progress`,
`retention`, `restarter`, `component`) and the `mxjob` cluster commands (`hooks/jobs`) import
this module and nothing else of `hooks.core` (a lint-imports contract), so the core's rooms can
move freely."""

from hooks.core.api import (
    ALL_TYPES,
    ANNOTATION_GO,
    ANNOTATION_PROGRESS,
    ANNOTATION_RESTART,
    ANNOTATION_RUN,
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
from hooks.core.fields import dig, dig_dict, dig_list
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
from hooks.core.spec import JobSpec, load
from hooks.core.timestamps import earliest, format_time, latest, parse_time

__all__ = [
    "ALL_TYPES",
    "ANNOTATION_GO",
    "ANNOTATION_PROGRESS",
    "ANNOTATION_RESTART",
    "ANNOTATION_RUN",
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
    "VERSION",
    "JobMode",
    "JobSpec",
    "Noted",
    "Reason",
    "ReplicaType",
    "Report",
    "claim_name",
    "clean",
    "dig",
    "dig_dict",
    "dig_list",
    "earliest",
    "encode_noted",
    "first_report",
    "format_time",
    "latest",
    "load",
    "parse_lines",
    "parse_pod_name",
    "parse_time",
    "read_noted",
    "retains",
    "unsafe",
]
