"""Resizing a running job (docs/restarts.md#resizing): the cluster a run's processes were started
with, read back from the job's config ConfigMap, against the one the spec asks for now.

ps-lite fixes a job's membership when its processes start (`DMLC_NUM_WORKER`,
`DMLC_NUM_SERVER`, every process's MX_CONFIG), so a run whose spec changed its replica counts,
ports or addresses (`serviceMode`) can only go on by restarting every process at the new size.
The config ConfigMap is immutable and never updated (`updateStrategy: OnDelete`), so while the
run lives it says what the run started with; it is replaced between runs (hooks/core/sync.py).

TVM's RPC tracker takes servers as they come and go, so in an MXTune job a TunerServer count edit
is carried out in place: servers are added or removed, the tracker and the Tuner keep running.
"""

from hooks.core.api import CLUSTER_KEY, LABELS_KEY, JobMode, ReplicaType
from hooks.core.children import ConfigMap
from hooks.core.fields import parsed_json
from hooks.core.job import Job

#: Replica types whose count an MXTune job changes in place.
_IN_PLACE = {JobMode.TUNE: frozenset({ReplicaType.TUNER_SERVER.short})}


def _cluster(text: str | None) -> dict[str, list[object]] | None:
    """The `cluster` JSON of a config ConfigMap: entries by replica type's short name."""
    value = parsed_json(text)
    if not isinstance(value, dict) or not all(isinstance(v, list) for v in value.values()):
        return None
    return value


def _ports(entries: list[object]) -> set[object]:
    return {e.get("port") for e in entries if isinstance(e, dict)}


def _addresses(entries: list[object]) -> set[object]:
    return {e.get("url") for e in entries if isinstance(e, dict)}


def change(job: Job, observed: ConfigMap | None, wanted: dict[str, str]) -> str | None:
    """Why the run must restart to match the spec, whose config ConfigMap holds `wanted`
    (`resized from 2 to 4 Workers`), or None: the same cluster, no config observed, or one the
    hook cannot read (a running job is never restarted on a doubt)."""
    if observed is None or not isinstance(observed.data, dict) or observed.data == wanted:
        return None
    data = observed.data
    was = _cluster(data.get(CLUSTER_KEY))
    now = _cluster(wanted[CLUSTER_KEY])
    if was is None or now is None:
        return None
    in_place = _IN_PLACE.get(job.spec.mode, frozenset())
    resized = _resized(was, now, in_place)
    if resized:
        return "resized " + " and ".join(resized)
    moved = _moved(job, was, now, in_place)
    if moved:
        return moved
    if parsed_json(data.get(LABELS_KEY)) not in (None, parsed_json(wanted[LABELS_KEY])):
        return "its tuner-server keys changed"
    return None


def _moved(
    job: Job, was: dict[str, list[object]], now: dict[str, list[object]], in_place: frozenset[str]
) -> str | None:
    """A replica type's port changed, or the replicas' addresses (a `serviceMode` edit): every
    process reaches the others by the ports and addresses it was started with."""
    moved = [
        f"the {rtype.value}'s port changed"
        for rtype in ReplicaType
        if rtype.short in was
        and rtype.short in now
        and _ports(was[rtype.short]) != _ports(now[rtype.short])
    ]
    if moved:
        return " and ".join(moved)
    if any(_addresses(was[t]) != _addresses(now[t]) for t in was.keys() & now.keys() - in_place):
        return f"its replicas' addresses changed (serviceMode {job.spec.service_mode.value})"
    return None


def _resized(
    was: dict[str, list[object]], now: dict[str, list[object]], in_place: frozenset[str]
) -> list[str]:
    """`from 2 to 4 Workers` for each replica type whose count changed, but those an MXTune
    job changes in place."""
    counts = {
        rtype: (len(was.get(rtype.short, [])), len(now.get(rtype.short, [])))
        for rtype in ReplicaType
        if rtype.short not in in_place
    }
    return [_words(rtype, a, b) for rtype, (a, b) in counts.items() if a != b]


def _words(rtype: ReplicaType, was: int, now: int) -> str:
    return f"from {was} to {now} {rtype.value}{'' if now == 1 else 's'}"
