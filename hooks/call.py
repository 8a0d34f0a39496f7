"""One hook call, counted and logged once however it ends (docs/http.md#logs and #metrics).

The door of a hook (hooks/app.py) fills in its `Call` as the request is handled: the body's
size, what the body names (the job, or the review and its first jobs) and how the call ended:
answered (200, or 304 for a body already answered), refused (4xx: why, never the body) or
broken (a bug: 500, with its traceback; the state a call starts in). `end` then observes the
metrics and writes the one log line, with the same outcome, sizes and duration.
"""

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from werkzeug.exceptions import HTTPException

from hooks import body, logs, metrics
from hooks.core.conversion.review import Review
from hooks.core.request import SyncRequest

#: The first few of a list are logged: an invalid spec's problems, the jobs of a review.
LISTED = 5
_LOG = logging.getLogger(logs.LOGGER_NAME)


@dataclass
class Call:
    """One call of `hook`: what it named, how it ended, what it cost."""

    hook: str
    #: The job (`namespace`, `name`, `uid`) or review the call names; None where not yet known.
    reference: dict[str, Any]
    request_bytes: int
    started: float = field(default_factory=time.perf_counter)
    #: What the log message names: `namespace/name`, or `3 objects to <apiVersion>`.
    subject: str = ""
    outcome: str = metrics.ERROR
    status: int = 500
    response_bytes: int | None = None
    level: int = logging.ERROR
    message: str = field(init=False)
    #: Fields of this outcome alone: `children`, `problems`, `reason`, `error`, `content_type`.
    details: dict[str, Any] = field(default_factory=dict)
    failure: BaseException | None = None

    def __post_init__(self) -> None:
        self.message = f"{self.hook} failed: a bug in the hook"

    def about_job(self, parsed: SyncRequest) -> None:
        """The MXJob a sync request names."""
        uid = logs.job_reference(parsed.parent)["uid"]
        self.reference = {"namespace": parsed.namespace, "name": parsed.name, "uid": uid}
        self.subject = f"{parsed.namespace}/{parsed.name}"

    def about_review(self, review: Review) -> None:
        """A ConversionReview: its uid, target version, number of objects and first jobs."""
        jobs = [logs.job_reference(obj) for obj in review.objects[:LISTED]]
        count = len(review.objects)
        self.reference = {
            "uid": review.uid,
            "desired_api_version": review.desired,
            "objects": count,
            "jobs": [f"{job['namespace']}/{job['name']}" for job in jobs],
        }
        self.subject = f"{count} object{'' if count == 1 else 's'} to {review.desired}"

    def answered(
        self,
        outcome: str,
        status: int = 200,
        response_bytes: int | None = None,
        level: int = logging.INFO,
        **details: Any,
    ) -> None:
        """The hook answered: `outcome` read from the answer; details that are None are left out."""
        self.outcome, self.status, self.level = outcome, status, level
        self.response_bytes = response_bytes
        self.details = {key: value for key, value in details.items() if value is not None}
        about = f" {self.subject}" if self.subject else ""
        self.message = f"{self.hook}{about}: {outcome}"

    def refused(self, exc: HTTPException, content_type: str | None) -> None:
        """The hook could not read the request (4xx): logged at warning with why."""
        error, reason = body.error_of(exc)
        self.reference = {**self.reference, **getattr(exc, "reference", {})}
        self.outcome, self.status, self.level = metrics.REJECTED, exc.code or 400, logging.WARNING
        self.details = {"error": error, "reason": reason, "content_type": content_type}
        self.message = f"{self.hook} refused: {reason}"

    def end(self) -> None:
        """Count the call and write its log line: once, whatever the outcome."""
        seconds = time.perf_counter() - self.started
        metrics.observe(self.hook, self.outcome, seconds, self.request_bytes, self.response_bytes)
        if not _LOG.isEnabledFor(self.level):
            return
        fields = {
            "hook": self.hook,
            **self.reference,
            "outcome": self.outcome,
            "status": self.status,
            "duration_ms": round(seconds * 1000, 3),
            "request_bytes": self.request_bytes,
        }
        if self.response_bytes is not None:
            fields["response_bytes"] = self.response_bytes
        fields.update(self.details)
        extra = {logs.FIELDS: fields}
        _LOG.log(self.level, "%s", self.message, exc_info=self.failure, extra=extra)
