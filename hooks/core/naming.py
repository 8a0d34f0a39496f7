"""Names of every child of an MXJob (docs/environment.md, docs/restarts.md).

A replica slot `(type, index)` is named `job-type-index`; its first pod keeps exactly that name
and each replacement gets an attempt suffix (`-r1`, `-r2`, …), so the attempt count can be read
back from observed children alone. Services keep the slot name, so DNS names stay stable.
"""

import re
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


def job_service_name(job: str) -> str:
    """The one headless Service of a job whose replicas share it (`serviceMode: PerJob`): the
    job's name, which every pod has as its subdomain."""
    return job


def address(job: str, slot_name: str, *, per_job: bool) -> str:
    """The DNS name, relative to the namespace, a replica is reached by: its own Service's name,
    or with one Service per job its pod's hostname in the job's subdomain."""
    return f"{slot_name}.{job_service_name(job)}" if per_job else slot_name


def config_map_name(job: str) -> str:
    """The per-job ConfigMap carrying the `cluster` and `labels` JSON of MX_CONFIG."""
    return f"{job}-mxjob-config"


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


#: Longest suffix of the job's ConfigMap names (`-mxjob-config`, `-mxjob-result`).
CONFIG_SUFFIX_MAX = len("-mxjob-result")
#: Longest suffix of a run record's name.
RUN_RECORD_SUFFIX_MAX = len(f"-mxjob-run-{MAX_ATTEMPT}")


def longest_suffix(counts: dict[ReplicaType, int], *, replaceable: bool) -> int:
    """Length of the longest suffix a child name of this job can get: `-type-index`, plus
    `-rNNNN` and the run records when some pod can ever be replaced, and the ConfigMaps."""
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
