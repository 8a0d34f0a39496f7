"""Which MXJob object a component acts on, and how its log lines name it: read from the job as
listed, with no call made (so the pure decision modules may use it too)."""

from dataclasses import dataclass
from typing import Protocol

from hooks.core.public import dig


@dataclass(frozen=True)
class JobRef:
    """One MXJob object: a name can come back with a new uid, an object cannot."""

    namespace: str
    name: str
    uid: str


class Named(Protocol):
    """What a log line names of a job: a `JobRef`, or anything carrying the same three."""

    @property
    def namespace(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def uid(self) -> str: ...


def job_ref(job: object) -> JobRef | None:
    """The job's namespace, name and uid, each a non-empty string; None if any is not."""
    namespace, name, uid = (dig(job, "metadata", key) for key in ("namespace", "name", "uid"))
    if all(isinstance(v, str) and v for v in (namespace, name, uid)):
        return JobRef(namespace, name, uid)
    return None


def log_fields(job: Named | None, action: str, reason: str = "") -> dict[str, str]:
    """A component's log fields: what it did (`action`), the job it did it to, and why."""
    fields = {"action": action}
    if job is not None:
        fields.update(namespace=job.namespace, name=job.name, uid=job.uid)
    if reason:
        fields["reason"] = reason
    return fields
