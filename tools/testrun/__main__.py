"""`make test`: lint, the prepare and both test lanes side by side, then one timing table.

`python -m tools.testrun [PYTEST_ARGS...]` runs lint (its failure stops the run), the prepare's
steps (tools/cluster/prepare.py) and the two lanes of tools/testrun/lanes.py, each lane as soon
as what it needs is built; every line of output is prefixed with the time since the start and
the step or lane it comes from. Extra arguments go to both pytest sessions (`-x`, `-k name`).
The run ends with each lane's summary and the timing table: each prepare step (built or
cached) with its wall time and CPU seconds, each lane and tier with its wall time and test
count, the whole run and how busy the machine was; last, each test that failed, with its lane
and its message's first line.
"""

from __future__ import annotations

import functools
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from tools import steps
from tools.cluster import build, hoststate, prepare, report
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


def lane_step(lane: Lane, out: Path, pytest_args: list[str], **kwargs: Any) -> steps.Step:
    """A lane as a step: one pytest session over its files, reporting to JUnit XML."""
    argv = steps.python(
        "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={out / f'{lane.name}.xml'}",
        "-o", "junit_duration_report=total", "-o", "junit_family=xunit1", *lane.args,
        *pytest_args, *(str(f.relative_to(REPO)) for f in lane.files),
    )  # fmt: skip
    # pytest's 5 (no test selected) is a lane's success only when the caller selected tests.
    ok = (0, 5) if pytest_args else (0,)
    return steps.Step(f"lane-{lane.name}", argv, kind=steps.UNLIMITED, nice=lane.nice,
                      ok_statuses=ok, **kwargs)  # fmt: skip


def lane_steps(graph: list[steps.Step], out: Path, pytest_args: list[str]) -> list[steps.Step]:
    """The lanes, and where the real node's tier is prepared the stacks they run on: each
    started once its parts are built, its lanes one after another on it, stopped once its last
    lane ended (however it ended)."""
    node_tier = set(prepare.NODE_NEEDS) <= {s.name for s in graph}
    found: list[steps.Step] = []
    last_on: dict[str, str] = {}
    for lane in lanes():
        kwargs: dict[str, Any] = {}
        if lane.stack and node_tier:
            run_dir = out / f"node-{lane.stack}" / "run"
            if lane.stack not in last_on:
                up = steps.python("-m", "tools.testrun.node", "up", str(run_dir))
                found.append(steps.Step(f"node-up-{lane.stack}", up, needs=prepare.NODE_NEEDS,
                                        kind=steps.UNLIMITED))  # fmt: skip
            kwargs = {"needs": (f"node-up-{lane.stack}",), "env": {"MXJOB_NODE_RUN": str(run_dir)}}
            if lane.stack in last_on:
                kwargs["after"] = (last_on[lane.stack],)
            last_on[lane.stack] = f"lane-{lane.name}"
        if lane.follows:
            kwargs["after"] = (f"lane-{lane.follows}",)
        found.append(lane_step(lane, out, pytest_args, **kwargs))
    for stack, last in last_on.items():
        down = steps.python("-m", "tools.testrun.node", "down", str(out / f"node-{stack}" / "run"))
        found.append(steps.Step(f"node-down-{stack}", down, after=(last,), kind=steps.UNLIMITED))
    return found


def lane_rows(done: dict[str, steps.Done], out: Path) -> tuple[list[list[str]], int, list[str]]:
    """Each lane's and tier's row, the count of tests executed, and the tests that failed."""
    rows, executed, failures = [], 0, []
    tiers: dict[str, results.Tally] = {}
    for lane in lanes():
        record = done.get(f"lane-{lane.name}")
        tally, lane_tiers = results.read(out / f"{lane.name}.xml")
        executed += tally.executed
        failures += [f"lane {lane.name}: {failure}" for failure in tally.failures]
        for name, t in lane_tiers.items():
            tiers.setdefault(name, results.Tally()).outcomes.update(t.outcomes)
            tiers[name].seconds += t.seconds
        wall = report.minutes(record.wall) if record and record.status is not None else "-"
        began = report.minutes(record.started) if record and record.status is not None else "-"
        rows.append([f"lane {lane.name}", tally.counts(), began, wall, ""])
    for name, t in sorted(tiers.items()):
        rows.append([f"  tier {name}", t.counts(), "", f"({report.minutes(t.seconds)})", ""])
    return rows, executed, failures


def main(argv: list[str]) -> int:
    console = Console()
    cache = build.default_cache_dir()
    began, start = time.time(), report.Machine.now()
    with tempfile.TemporaryDirectory(prefix="mxjob-testrun-") as tmp:
        out = Path(tmp)
        graph = prepare.plan(cache, console)
        pending = out / "pending"
        pending.mkdir()
        os.environ[build.PENDING_SETTING] = str(pending)  # every step and lane inherits it
        prepare.announce(graph, pending)
        lint = steps.Step("lint", ("make", "-s", "--no-print-directory", "lint"), fatal=True,
                          kind=steps.UNLIMITED)  # fmt: skip
        run = [lint, *graph, *lane_steps(graph, out, argv)]
        settle = functools.partial(prepare.settle, pending)
        runner = steps.Runner(run, log=console, cwd=REPO, on_done=settle)
        with hoststate.niceness_counts():
            done = runner.run()
        rows, executed, failures = lane_rows(done, out)
    lines = report.table(done, cache, began, start, report.Machine.now())
    at = lines.index(next(line for line in lines if line.startswith("whole run")))
    lines[at:at] = [*report.render(("lane / tier", "tests", "began", "wall", ""), rows),
                    f"tests executed: {executed}"]  # fmt: skip
    for line in [*lines, *failures]:
        console(line)
    return 0 if all(d.ok for d in done.values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
