"""Names of every child of an MXJob (docs/environment.md, docs/restarts.md, docs/api.md#children).

A replica slot `(type, index)` is named `job-type-index`; its first pod keeps exactly that name
and each replacement gets an attempt suffix (`-r1`, `-r2`, …), so the attempt count can be read
back from observed children alone. Services keep the slot name, so DNS names stay stable.

Every name is the job's name and a suffix, and no suffix of a kind ends with another suffix of
that kind that a job name could precede: two jobs of a namespace never name a child of one kind
alike (tests/test_child_names.py proves it over every suffix the hook writes).
"""

import re
from dataclasses import dataclass
from functools import lru_cache

import msgspec

from hooks.core.api import ALL_TYPES, TYPE_BY_FOLDED_NAME, ReplicaType

DNS_LABEL_MAX = 63
#: Replacements a slot may have; `-r9999` is reserved whenever a pod of the job can be replaced.
MAX_ATTEMPT = 9999
ATTEMPT_SUFFIX_MAX = len(f"-r{MAX_ATTEMPT}")
DNS_1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


class Slot(msgspec.Struct, frozen=True, order=True, gc=False):
    """One replica of the job: a type and an index. A Struct: slots key the maps of every sync,
    and a Struct hashes and compares in C."""

    rtype: ReplicaType
    index: int

    def name(self, job: str) -> str:
        """The slot name, shared by its first pod and its Service."""
        return slot_prefix(job, self.rtype) + str(self.index)

    def pod_name(self, job: str, attempt: int) -> str:
        """The pod of the given attempt: the slot name, then `-rN` for replacements."""
        return attempt_name(self.name(job), attempt)


def slot_prefix(job: str, rtype: ReplicaType) -> str:
    """What the name of every slot of a replica type starts with; its index follows."""
    return f"{job}-{rtype.short}-"


def attempt_name(slot_name: str, attempt: int) -> str:
    """The name of a slot's pod of the given attempt: `-rN` after the slot name for
    replacements."""
    return slot_name if attempt == 0 else f"{slot_name}-r{attempt}"


#: What the one Service of a job (`serviceMode: PerJob`) adds to the job's name. A slot's
#: Service ends in its index, so no job's slot Service is ever another job's one Service.
JOB_SERVICE_SUFFIX = "-mxjob"


def job_service_name(job: str) -> str:
    """The one headless Service of a job whose replicas share it (`serviceMode: PerJob`), every
    pod's subdomain: `<job>-mxjob`."""
    return job + JOB_SERVICE_SUFFIX


def address(slot_name: str, subdomain: str | None) -> str:
    """The DNS name, relative to the namespace, a replica is reached by: its own Service's name,
    or with one Service per job its pod's hostname in that Service's subdomain."""
    return f"{slot_name}.{subdomain}" if subdomain is not None else slot_name


def config_map_name(job: str, run: int = 0) -> str:
    """The ConfigMap carrying the `cluster` and `labels` JSON of MX_CONFIG that the pods of one
    run read: `<job>-mxjob-config` for run 0, `<job>-mxjob-cfg-<run>` from run 1 on. It is
    immutable, and a kubelet may keep serving an immutable ConfigMap it has read after it was
    deleted and made again under its name, so each run has its own (docs/restarts.md#resizing).
    As long as the run records' names (`-mxjob-run-<run>`): no job name grows shorter."""
    return f"{job}-mxjob-config" if run == 0 else f"{job}-mxjob-cfg-{run}"


_CONFIG_SUFFIX = re.compile(r"-mxjob-(config|cfg-[1-9][0-9]{0,3})")


def is_config_map_name(job: str, name: str) -> bool:
    """Whether a ConfigMap name is the MX_CONFIG ConfigMap of one of the job's runs."""
    return name.startswith(job) and _CONFIG_SUFFIX.fullmatch(name, len(job)) is not None


@dataclass(frozen=True)
class RunNames:
    """The names the pods of one run reach: the ConfigMap their MX_CONFIG is built from and, with
    one Service per job (`serviceMode: PerJob`), that Service, their subdomain (None with a Service
    per replica)."""

    config: str
    subdomain: str | None
    #: The run whose Kueue pod group the pods join (None: their own run's); a run restarted
    #: in place keeps its predecessor's group, whose Workload stays admitted.
    group: int | None = None


def run_names(job: str, run: int, *, per_job: bool) -> RunNames:
    """The names of a run this version of the hook starts: the run's own config, and the job's
    one Service `<job>-mxjob` when it has one (a run begun before: resize.run_names)."""
    return RunNames(config_map_name(job, run), job_service_name(job) if per_job else None)


def result_name(job: str) -> str:
    """The per-job ConfigMap recording the terminal status once the job has finished."""
    return f"{job}-mxjob-result"


def run_record_name(job: str, run: int) -> str:
    """The ConfigMap recording the whole-job restart that starts `run` (docs/restarts.md)."""
    return f"{job}-mxjob-run-{run}"


def run_from_record_name(job: str, name: str) -> int | None:
    """The run a record ConfigMap name encodes, or None for any other name."""
    match = re.fullmatch(rf"{re.escape(job)}-mxjob-run-(?P<run>[1-9][0-9]{{0,3}})", name)
    return int(match["run"]) if match else None


#: Longest suffix of the job's ConfigMap names of run 0 (`-mxjob-config`, `-mxjob-result`).
CONFIG_SUFFIX_MAX = len("-mxjob-result")
#: Longest suffix of a later run's ConfigMaps: its record and its config (`-mxjob-cfg-9999`).
RUN_RECORD_SUFFIX_MAX = max(
    len(run_record_name("", MAX_ATTEMPT)), len(config_map_name("", MAX_ATTEMPT))
)


def longest_suffix(counts: dict[ReplicaType, int], *, replaceable: bool) -> int:
    """Length of the longest suffix a child name of this job can get: `-type-index`, plus
    `-rNNNN` and the later runs' ConfigMaps when some pod can ever be replaced, and the
    ConfigMaps of run 0."""
    attempt = ATTEMPT_SUFFIX_MAX if replaceable else 0
    pods = (len(f"-{t.short}-{max(n - 1, 0)}") + attempt for t, n in counts.items())
    return max(CONFIG_SUFFIX_MAX, RUN_RECORD_SUFFIX_MAX if replaceable else 0, *pods)


@lru_cache(maxsize=256)
def _pod_pattern(job: str) -> re.Pattern[str]:
    types = "|".join(t.short for t in ALL_TYPES)
    return re.compile(
        rf"^{re.escape(job)}-(?P<type>{types})-(?P<index>0|[1-9][0-9]{{0,8}})"
        rf"(?:-r(?P<attempt>[1-9][0-9]{{0,3}}))?$"
    )


def parse_pod_name(job: str, name: str) -> tuple[Slot, int] | None:
    """The slot and attempt a pod name encodes, or None for a name this job never gives."""
    match = _pod_pattern(job).match(name)
    if match is None:
        return None
    return Slot(TYPE_BY_FOLDED_NAME[match["type"]], int(match["index"])), int(match["attempt"] or 0)
