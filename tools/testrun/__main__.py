"""`make test`: lint, the prepare and both test lanes side by side, then one timing table.

`python -m tools.testrun [PYTEST_ARGS...]` runs lint (its failure stops the run), the prepare's
steps (tools/cluster/prepare.py) and the two lanes of tools/testrun/lanes.py, each lane as soon
as what it needs is built; every line of output is prefixed with the time since the start and
the step or lane it comes from. Extra arguments go to both pytest sessions (`-x`, `-k name`).
The run ends with each lane's summary and the timing table: each prepare step (built or
cached) with its wall time and CPU seconds, each lane and tier with its wall time and test
count, the whole run and how busy the machine was.
"""

from __future__ import annotations

import sys
import tempfile
import threading
import time
from pathlib import Path

from tools import steps
from tools.cluster import build, prepare, report
from tools.testrun import results
from tools.testrun.lanes import REPO, Lane, lanes


class Console:
    """Lines to stderr, each with the run's elapsed time, one at a time."""

    def __init__(self) -> None:
        self.start = time.monotonic()
        self._lock = threading.Lock()

    def __call__(self, line: str) -> None:
        with self._lock:
            print(f"{report.minutes_clock(time.monotonic() - self.start)} {line}", file=sys.stderr,
                  flush=True)  # fmt: skip


def lane_step(lane: Lane, needs: tuple[str, ...], out: Path, pytest_args: list[str]) -> steps.Step:
    """A lane as a step: one pytest session over its files, reporting to JUnit XML."""
    argv = steps.python(
        "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={out / f'{lane.name}.xml'}",
        "-o", "junit_duration_report=total", "-o", "junit_family=xunit1",
        *pytest_args, *(str(f.relative_to(REPO)) for f in lane.files),
    )  # fmt: skip
    return steps.Step(f"lane-{lane.name}", argv, needs=needs, kind=steps.UNLIMITED, nice=lane.nice)


def lane_rows(done: dict[str, steps.Done], out: Path) -> tuple[list[list[str]], int]:
    """Each lane's and tier's row, and the count of tests executed."""
    rows, executed = [], 0
    tiers: dict[str, results.Tally] = {}
    for lane in lanes():
        record = done.get(f"lane-{lane.name}")
        tally, lane_tiers = results.read(out / f"{lane.name}.xml")
        executed += tally.executed
        for name, t in lane_tiers.items():
            tiers.setdefault(name, results.Tally()).outcomes.update(t.outcomes)
            tiers[name].seconds += t.seconds
        wall = report.minutes(record.wall) if record and record.status is not None else "-"
        began = report.minutes(record.started) if record and record.status is not None else "-"
        rows.append([f"lane {lane.name}", tally.counts(), began, wall, ""])
    for name, t in sorted(tiers.items()):
        rows.append([f"  tier {name}", t.counts(), "", report.minutes(t.seconds), ""])
    return rows, executed


def main(argv: list[str]) -> int:
    console = Console()
    cache = build.default_cache_dir()
    began, start = time.time(), report.Machine.now()
    with tempfile.TemporaryDirectory(prefix="mxjob-testrun-") as tmp:
        out = Path(tmp)
        graph = prepare.plan(cache, console)
        node_needs = tuple(s.name for s in graph if s.name in prepare.NODE_NEEDS)
        node_lane, host_lane = lanes()
        run = [
            steps.Step("lint", ("make", "-s", "--no-print-directory", "lint"), fatal=True),
            *graph,
            lane_step(node_lane, node_needs, out, argv),
            lane_step(host_lane, (), out, argv),
        ]
        done = steps.Runner(run, log=console, cwd=REPO).run()
        rows, executed = lane_rows(done, out)
    lines = report.table(done, cache, began, start, report.Machine.now())
    at = lines.index(next(line for line in lines if line.startswith("whole run")))
    lines[at:at] = [*report.render(("lane / tier", "tests", "began", "wall", ""), rows),
                    f"tests executed: {executed}"]  # fmt: skip
    for line in lines:
        console(line)
    return 0 if all(d.ok for d in done.values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
