"""`make compare`: the same MXJob files through mxjob and through Kubeflow training-operator.

    python -m bench.compare [--training-operator v1.8.1] [--only NAME,...] [--replicas 1000]

Builds the operator release once (tools/cluster/build.py, into the test cache), then for each
controller in turn starts a KWOK stack of its own (one MXJob CRD per cluster), installs the
controller, plays every scenario (bench/compare/scenarios.py) and the large job, and stops the
stack. Prints the tables (Markdown) and writes them with the raw results to `--out`.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

from bench.compare import controllers, report
from bench.compare.controllers import Controller
from bench.compare.large import Large, measure
from bench.compare.play import Outcome, play
from bench.compare.scenarios import Scenario, scenarios
from tools.cluster import build
from tools.cluster.stack import Stack

Install = Callable[[Stack], AbstractContextManager[Controller]]


def log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.compare", description=__doc__)
    parser.add_argument(
        "--training-operator",
        default=build.TRAINING_OPERATOR_VERSIONS[0],
        choices=build.TRAINING_OPERATOR_VERSIONS,
        help="the release to compare with (default %(default)s)",
    )
    parser.add_argument(
        "--only", default="*", help="scenarios to play, comma-separated shell patterns"
    )
    parser.add_argument(
        "--replicas", type=int, default=1000, help="size of the large job (0: leave it out)"
    )
    parser.add_argument("--out", type=Path, default=Path(".compare"), help="where to write")
    return parser.parse_args()


def selected(patterns: str) -> list[Scenario]:
    wanted = [p.strip() for p in patterns.split(",") if p.strip()]
    return [s for s in scenarios() if any(fnmatch.fnmatch(s.name, p) for p in wanted)]


@contextmanager
def stack_with(install: Install, name: str) -> Iterator[tuple[Stack, Controller]]:
    """A fresh KWOK stack (two nodes: 2000 pods) with one controller, stopped afterwards."""
    with tempfile.TemporaryDirectory(prefix="mxjob-compare-") as tmp:
        stack = Stack(run_dir=Path(tmp) / "run", nodes=2, log=log)
        stack.start(build_missing=False)  # main() built what it needs
        try:
            with install(stack) as controller:
                log(f"{name}: installed")
                yield stack, controller
        finally:
            stack.stop(remove=True)


def run_controller(
    install: Install, name: str, matrix: list[Scenario], replicas: int
) -> tuple[dict[str, Outcome], Large | None]:
    outcomes: dict[str, Outcome] = {}
    large = None
    with stack_with(install, name) as (stack, controller):
        for scenario in matrix:
            started = time.monotonic()
            outcomes[scenario.name] = outcome = play(stack, scenario)
            took = f"{outcome.seconds:.1f} s" if outcome.seconds is not None else "-"
            log(
                f"{name}: {scenario.name}: {outcome.final} ({took}; played in "
                f"{time.monotonic() - started:.0f} s)"
            )
        if replicas:
            large = measure(stack, controller, replicas)
            log(f"{name}: {replicas} replicas: {json.dumps(large.to_json())}")
    return outcomes, large


def main() -> None:
    args = parse_args()
    version = args.training_operator
    began = time.monotonic()
    operator = build.TRAINING_OPERATORS[version]
    needed = (build.ETCD, build.KUBERNETES, build.METACONTROLLER, build.KWOK, operator)
    spent = build.build_all(build.default_cache_dir(), log, needed)
    if spent[operator.name]:
        log(f"training-operator {version} built in {spent[operator.name]:.0f} s")
    matrix = selected(args.only)
    names = ("mxjob", f"training-operator {version}")
    installs: tuple[Install, Install] = (
        controllers.mxjob,
        partial(controllers.training_operator, version=version),
    )
    results = [
        run_controller(i, n, matrix, args.replicas) for i, n in zip(installs, names, strict=True)
    ]
    date = datetime.now(UTC).date()
    text = [
        f"## mxjob and training-operator {version}, {date}, KWOK tier "
        f"({time.monotonic() - began:.0f} s)",
        "",
        f"Ratios: {names[1]}'s time over mxjob's (above 1: mxjob faster). Outcome: from the "
        "test's last action to the job's final condition. Exit → status: from each exit the "
        "test made to the job's next status write, median.",
        "",
        report.scenario_table(matrix, names, [outcomes for outcomes, _ in results]),
    ]
    ours, theirs = results[0][1], results[1][1]
    if ours is not None and theirs is not None:
        text += ["", report.large_table(names, (ours, theirs))]
    print("\n".join(text))
    args.out.mkdir(parents=True, exist_ok=True)
    stem = f"compare-{version}-{date}"  # with_suffix would cut at the version's dots
    (args.out / f"{stem}.md").write_text("\n".join(text) + "\n")
    raw = {
        name: {
            "scenarios": {k: v.to_json() for k, v in outcomes.items()},
            "large": large.to_json() if large else None,
        }
        for name, (outcomes, large) in zip(names, results, strict=True)
    }
    (args.out / f"{stem}.json").write_text(json.dumps(raw, indent=1) + "\n")
    log(f"written: {args.out / stem}.md and .json")


if __name__ == "__main__":
    main()
