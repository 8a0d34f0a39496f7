"""`make compare`: the same MXJob files through mxjob and through Kubeflow training-operator.

    python -m bench.compare [--training-operator v1.8.1] [--only NAME,...] [--replicas 1000]
                            [--jobs 200]

Builds the operator release once (tools/cluster/build.py, into the test cache), then for each
controller in turn starts a KWOK stack of its own (one MXJob CRD per cluster), installs the
controller, plays every scenario (bench/compare/scenarios.py), the large job and the many jobs
(for mxjob with each serviceMode), and stops the stack. Prints the tables (Markdown) and writes
them with the raw results to `--out`.
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
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

from bench.compare import controllers, large, many, report
from bench.compare.controllers import Controller
from bench.compare.large import Large
from bench.compare.many import Many
from bench.compare.play import Outcome, play
from bench.compare.scenarios import Scenario, scenarios
from tools.cluster import build
from tools.cluster.kwok_node import KwokNode
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
    parser.add_argument(
        "--jobs", type=int, default=200, help="jobs of 4 replicas applied at once (0: none)"
    )
    parser.add_argument(
        "--metacontroller-qps",
        type=int,
        default=100,
        help="Metacontroller's client QPS, burst twice it (default %(default)s, as advised)",
    )
    parser.add_argument("--out", type=Path, default=Path(".compare"), help="where to write")
    return parser.parse_args()


def selected(patterns: str) -> list[Scenario]:
    wanted = [p.strip() for p in patterns.split(",") if p.strip()]
    return [s for s in scenarios() if any(fnmatch.fnmatch(s.name, p) for p in wanted)]


@contextmanager
def stack_with(
    install: Install, name: str, metacontroller_qps: int
) -> Iterator[tuple[Stack, Controller]]:
    """A fresh KWOK stack (two nodes: 2000 pods) with one controller, stopped afterwards."""
    with tempfile.TemporaryDirectory(prefix="mxjob-compare-") as tmp:
        stack = Stack(
            run_dir=Path(tmp) / "run",
            node=KwokNode(count=2, metacontroller_qps=metacontroller_qps),
            log=log,
        )
        stack.start(build_missing=False)  # main() built what it needs
        try:
            with install(stack) as controller:
                log(f"{name}: installed")
                yield stack, controller
        finally:
            stack.stop(remove=True)


@dataclass
class Results:
    """One controller's run: the scenarios, and the large and many jobs by serviceMode."""

    outcomes: dict[str, Outcome] = field(default_factory=dict)
    large: list[Large] = field(default_factory=list)
    many: list[Many] = field(default_factory=list)


def run_controller(
    install: Install,
    name: str,
    matrix: list[Scenario],
    sizes: tuple[int, int],
    modes: tuple[str, ...],
    metacontroller_qps: int,
) -> Results:
    """Play the scenarios, then the large job and the many jobs in each Service mode."""
    replicas, jobs = sizes
    results = Results()
    with stack_with(install, name, metacontroller_qps) as (stack, controller):
        for scenario in matrix:
            started = time.monotonic()
            results.outcomes[scenario.name] = outcome = play(stack, scenario)
            took = f"{outcome.seconds:.1f} s" if outcome.seconds is not None else "-"
            log(
                f"{name}: {scenario.name}: {outcome.final} ({took}; played in "
                f"{time.monotonic() - started:.0f} s)"
            )
        for mode in modes if replicas else ():
            results.large.append(big := large.measure(stack, controller, replicas, mode))
            log(f"{name}: {replicas} replicas ({mode}): {json.dumps(big.to_json())}")
        for mode in modes if jobs else ():
            results.many.append(fleet := many.measure(stack, controller, jobs, services=mode))
            log(f"{name}: {jobs} jobs ({mode}): {json.dumps(fleet.to_json())}")
    return results


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
    modes = (("PerReplica", "PerJob"), ("PerReplica",))
    results = [
        run_controller(i, n, matrix, (args.replicas, args.jobs), m, args.metacontroller_qps)
        for i, n, m in zip(installs, names, modes, strict=True)
    ]
    date = datetime.now(UTC).date()
    text = [
        f"## mxjob and training-operator {version}, {date}, KWOK tier "
        f"({time.monotonic() - began:.0f} s)",
        "",
        f"Ratios: {names[1]}'s time over mxjob's (above 1: mxjob faster). Outcome: from the "
        "test's last action to the job's final condition. Exit → status: from each exit the "
        "test made to the job's next status write, median. Metacontroller's client: "
        f"--client-go-qps={args.metacontroller_qps}, burst twice it.",
        "",
        report.scenario_table(matrix, names, [r.outcomes for r in results]),
    ]
    ours, theirs = results
    if ours.large and theirs.large:
        columns = [(names[0], big) for big in ours.large] + [(names[1], theirs.large[0])]
        text += ["", report.large_table(columns)]
    if ours.many and theirs.many:
        fleets = [(names[0], fleet) for fleet in ours.many] + [(names[1], theirs.many[0])]
        text += ["", report.many_table(fleets)]
    print("\n".join(text))
    args.out.mkdir(parents=True, exist_ok=True)
    stem = f"compare-{version}-{date}"  # with_suffix would cut at the version's dots
    (args.out / f"{stem}.md").write_text("\n".join(text) + "\n")
    raw = {
        name: {
            "scenarios": {k: v.to_json() for k, v in r.outcomes.items()},
            "large": [big.to_json() for big in r.large],
            "many": [fleet.to_json() for fleet in r.many],
        }
        for name, r in zip(names, results, strict=True)
    }
    (args.out / f"{stem}.json").write_text(json.dumps(raw, indent=1) + "\n")
    log(f"written: {args.out / stem}.md and .json")


if __name__ == "__main__":
    main()
