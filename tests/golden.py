"""The golden fixture cases on disk, and the digest that says in a few lines what each proves.

`tests/fixtures/<case>/` holds `request.json` (what Metacontroller sends), `response.json` (the
hook's recorded answer), `digest.txt` (generated from both and the case's reason: the last
condition, the replica counts, the children created, kept and deleted) and, only for a case
synced at another moment than the builders' NOW, `now.txt`. Written by
`python -m tests.fixture_cases`; read by the fixture, HTTP and wire tests. The conversion cases
(tests/conversion_cases.py) are recorded the same way, with a digest of their own.
"""

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from testsupport.jobs import NOW

FIXTURES = Path(__file__).parent / "fixtures"
REGENERATE = ".venv/bin/python -m tests.fixture_cases"
_TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
_VERBS = ("created", "kept", "deleted")


@dataclass(frozen=True)
class Recorded:
    """One case as committed: its request, the moment of its sync, its answer and digest."""

    folder: Path
    request: Any
    now: datetime
    response: dict[str, Any]
    digest: str

    @property
    def name(self) -> str:
        return self.folder.name


def folders(root: Path = FIXTURES) -> list[Path]:
    """Every recorded case's folder under `root`, by name."""
    return sorted(p for p in root.iterdir() if p.is_dir())


def load(folder: Path) -> Recorded:
    """Read one recorded case; without `now.txt` the sync happened at NOW."""
    moment = folder / "now.txt"
    now = (
        datetime.fromisoformat(moment.read_text().strip().replace("Z", "+00:00"))
        if moment.exists()
        else NOW
    )
    digest = folder / "digest.txt"
    return Recorded(
        folder,
        json.loads((folder / "request.json").read_text()),
        now,
        json.loads((folder / "response.json").read_text()),
        digest.read_text() if digest.exists() else "",
    )


Summary = Callable[[str, Any, Mapping[str, Any]], str]


def write(
    folder: Path,
    reason: str,
    request: Any,
    now: datetime,
    response: Mapping[str, Any],
    summary: Summary | None = None,
) -> None:
    """Record one case: request, response, digest (`summary`, by default a sync's), and
    `now.txt` only when `now` is not NOW."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "request.json").write_text(_pretty(request))
    (folder / "response.json").write_text(_pretty(response))
    (folder / "digest.txt").write_text((summary or digest)(reason, request, response))
    moment = folder / "now.txt"
    if now == NOW:
        moment.unlink(missing_ok=True)
    else:
        moment.write_text(now.strftime(_TIME_FORMAT) + "\n")


def _pretty(value: object) -> str:
    return json.dumps(value, indent=2, sort_keys=True) + "\n"


def _condition_lines(status: Mapping[str, Any]) -> list[str]:
    """The latest condition and its message; a status without conditions says so."""
    conditions = status.get("conditions")
    if not conditions:
        return ["condition: - (the status has none)", "message:   -"]
    last = conditions[-1]
    return [
        f"condition: {last.get('type')}={last.get('status')} {last.get('reason')}"
        f" at {last.get('lastTransitionTime')}",
        f"message:   {last.get('message')}",
    ]


def digest(reason: str, request: Mapping[str, Any], response: Mapping[str, Any]) -> str:
    """What a case proves, in a few lines: a change of behaviour shows as a change here."""
    status = response.get("status", {})
    lines = [f"reason:    {reason}", *_condition_lines(status)]
    for rtype, counts in sorted(status.get("replicaStatuses", {}).items()):
        numbers = ", ".join(
            f"{key} {counts.get(key)}" for key in ("active", "succeeded", "failed", "restarts")
        )
        lines.append(f"replicas:  {rtype}: {numbers}")
    last = status.get("lastFailure")
    if last:
        said = str(last.get("message", "")).rsplit("\n", 1)[-1]
        words = f"{last.get('pod')} exit {last.get('exitCode')} at {last.get('time')}"
        lines.append(f"failure:   {words}: {said}" if said else f"failure:   {words}")
    if "resyncAfterSeconds" in response:
        lines.append(f"resync:    after {response['resyncAfterSeconds']} s")
    lines += _children_lines(request, response)
    return "\n".join(lines) + "\n"


def _children_lines(request: Mapping[str, Any], response: Mapping[str, Any]) -> list[str]:
    """`created|kept|deleted  Kind  name name…`, one line per verb and kind, sorted."""
    observed = {
        (str(child["kind"]), str(child["metadata"]["name"]))
        for group in request.get("children", {}).values()
        for child in group.values()
    }
    listed = {(str(c["kind"]), str(c["metadata"]["name"])) for c in response.get("children", [])}
    sets = {"created": listed - observed, "kept": listed & observed, "deleted": observed - listed}
    lines = []
    for verb in _VERBS:
        kinds = sorted({kind for kind, _ in sets[verb]})
        if not kinds:
            lines.append(f"{verb + ':':<10} -")
        for kind in kinds:
            names = " ".join(sorted(name for k, name in sets[verb] if k == kind))
            lines.append(f"{verb + ':':<10} {kind} {names}")
    return lines
