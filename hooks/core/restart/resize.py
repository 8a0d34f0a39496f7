"""Resizing a running job (docs/restarts.md#resizing): the cluster a run's processes were started
with, read back from the job's config ConfigMap, against the one the spec asks for now.

ps-lite fixes a job's membership when its processes start (`DMLC_NUM_WORKER`,
`DMLC_NUM_SERVER`, every process's MX_CONFIG), so a run whose spec changed its replica counts,
ports or addresses (`serviceMode`) can only go on by restarting every process at the new size.
Each run has its own config ConfigMap (naming.config_map_name), immutable and never updated
(`updateStrategy: OnDelete`), so while the run lives it says what the run started with; a run's
config made for another spec is replaced before the run has pods (hooks/core/desired.py).

Such restarts are not counted toward backoffLimit, so edits in a row are spaced instead
(`edit_waits`, docs/restarts.md#edits-in-a-row): two writers flipping a replica count restart
the job at most once per wait, and each wait in a row is twice the one before.

TVM's RPC tracker takes servers as they come and go, so in an MXTune job a TunerServer count edit
is carried out in place: servers are added or removed, the tracker and the Tuner keep running.
"""

from dataclasses import dataclass
from datetime import datetime, timedelta

from hooks.core.api import CLUSTER_KEY, LABELS_KEY, JobMode, ReplicaType
from hooks.core.children import ConfigMap
from hooks.core.fields import parsed_json
from hooks.core.job import Job
from hooks.core.naming import DNS_LABEL_MAX, RunNames, config_map_name, longest_suffix
from hooks.core.timestamps import format_time

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


def run_names(
    job: Job, run: int, *, shared_config: bool, config_maps: dict[str, ConfigMap]
) -> RunNames:
    """The names the pods of `run` reach: this version's (`Job.names`), but for a run an earlier
    version of the hook began, which reaches what its processes were started with until it
    ends (docs/restarts.md#upgrading): the one config `<job>-mxjob-config` every run read then
    (`shared_config`: its record names no config of its own), and the one Service named after
    the job, when the run's config addresses the replicas in it."""
    names = job.names(run)
    config = config_map_name(job.name) if shared_config else names.config
    subdomain = names.subdomain
    if subdomain is not None and job.name in _subdomains(config_maps.get(config)):
        subdomain = job.name
    return RunNames(config, subdomain)


def _subdomains(observed: ConfigMap | None) -> set[str]:
    """The subdomains the addresses of a config's cluster are in (`""` for none)."""
    data = observed.data if observed is not None and isinstance(observed.data, dict) else {}
    cluster = _cluster(data.get(CLUSTER_KEY)) or {}
    urls = set().union(*map(_addresses, cluster.values()))
    return {url.partition(".")[2] for url in urls if isinstance(url, str)}


#: The wait before an edit restarts a run that an edit started; each further restart for an edit
#: in a row waits twice as long as the one before, up to LONGEST_WAIT.
FIRST_WAIT = timedelta(seconds=30)
LONGEST_WAIT = timedelta(minutes=5)
#: An edit this long after its run started ends the row: that run had settled.
SETTLED = timedelta(minutes=10)


@dataclass(frozen=True)
class EditWait:
    """An edit that restarts the whole job only later, or not at all: the words the job's
    condition says it with, and the moment it may restart the job (None: never, as it is)."""

    words: str
    until: datetime | None


def edit_waits(edits: int) -> timedelta:
    """How long a run that `edits` restarts for edits in a row started runs before an edit
    restarts it: none after a run that no edit started."""
    if edits <= 0:
        return timedelta(0)
    doubled: timedelta = FIRST_WAIT * 2 ** min(edits - 1, 16)
    return min(doubled, LONGEST_WAIT)


def edits_in_a_row(edits: int, started: datetime | None, now: datetime) -> int:
    """The restarts for edits in a row once an edit restarts a run that `edits` of them started
    at `started`: one more, or 1 when that run had settled (`SETTLED`)."""
    settled = started is None or now - started >= SETTLED
    return 1 if settled else edits + 1


def held(
    job: Job, words: str, edits: int, started: datetime | None, now: datetime
) -> EditWait | None:
    """Why an edit (`words`: how it changed the cluster) does not restart the run now, or None:
    the run, which `edits` restarts for edits in a row started at `started`, has not run its wait
    yet; or the job's name leaves no room for the pod names of a restarted run (`-r<attempt>`),
    which restartPolicy Never spared it (hooks/core/validation.py)."""
    room = DNS_LABEL_MAX - longest_suffix(
        {t: r.replicas for t, r in job.spec.replicas.items()}, replaceable=True
    )
    if len(job.name) > room:
        why = (
            f"{words} cannot restart the whole job: its pods of a new run would be named"
            f" '<name>-<type>-<index>-r<attempt>', for which a name of at most {room}"
            f" characters leaves room; edit the spec back, or submit the job again under a"
            f" shorter name"
        )
        return EditWait(why, None)
    wait = edit_waits(edits)
    if started is None or now >= started + wait:
        return None
    until = started + wait
    why = (
        f"{words} restarts the whole job at {format_time(until)}: its run was started by"
        f" {_ordinal(edits)} whole-job restart for an edit in a row, and runs"
        f" {wait.total_seconds():.0f}s before an edit restarts it"
    )
    return EditWait(why, until)


def _ordinal(count: int) -> str:
    """`the 1st`, `the 2nd`, … `the 11th`, … `the 23rd`."""
    suffix = "th" if 10 <= count % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(count % 10, "th")
    return f"the {count}{suffix}"
