"""`make test`'s runner (tools/steps.py, tools/testrun/, tools/cluster/report.py): steps start as
soon as their needs are done and within their slots, a failed need stops what depends on it, a
fatal step stops the run, every test file runs in exactly one lane, and the timing table says
what each step did. The commands are real processes (`sh -c`)."""

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tools import steps
from tools.cluster import build, hoststate, prepare, real_node, report
from tools.testrun import lanes, results


def sh(name: str, script: str, **kwargs: object) -> steps.Step:
    return steps.Step(name, ("sh", "-c", script), **kwargs)  # type: ignore[arg-type]


def run(*graph: steps.Step, **kwargs: object) -> tuple[dict[str, steps.Done], list[str]]:
    lines: list[str] = []
    done = steps.Runner(list(graph), log=lines.append, **kwargs).run()  # type: ignore[arg-type]
    return done, lines


def test_a_step_starts_once_its_needs_are_done(tmp_path: Path) -> None:
    mark = tmp_path / "a-done"
    done, _ = run(
        sh("a", f"sleep 0.3; touch {mark}"),
        sh("b", f"test -e {mark}", needs=("a",)),
        sh("c", "true"),
    )
    assert all(d.ok for d in done.values())
    assert done["b"].started >= done["a"].started + done["a"].wall - 0.05
    assert done["c"].started < done["a"].started + done["a"].wall


def test_a_failed_need_stops_what_depends_on_it_and_nothing_else() -> None:
    done, lines = run(
        sh("broken", "exit 3"),
        sh("after", "true", needs=("broken",)),
        sh("after-after", "true", needs=("after",)),
        sh("apart", "true"),
    )
    assert done["broken"].status == 3
    assert done["after"].status is None
    assert done["after"].why_not == "broken failed"
    assert done["after-after"].why_not == "after failed"
    assert done["apart"].ok
    assert "[after] not run: broken failed" in lines


def test_a_fatal_failure_interrupts_what_runs_and_starts_nothing_more() -> None:
    began = time.monotonic()
    done, _ = run(
        # sleep itself, not `sh -c`: dash holds a SIGINT that reaches it before it has forked
        # its command until that command ends.
        steps.Step("long", ("sleep", "30"), kind=steps.UNLIMITED),
        sh("lint", "sleep 0.2; exit 1", fatal=True),
        sh("later", "true", needs=("long",)),
    )
    assert time.monotonic() - began < 10
    assert done["lint"].status == 1
    assert done["long"].status not in (0, None)  # interrupted
    assert done["later"].why_not == "lint failed"


def test_a_step_that_starts_as_the_run_is_aborted_is_interrupted_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Once a step whose process started while the abort went through the running ones (a
    loaded machine: cold run 4) ran its full 30 s; here its start waits for the abort."""
    runner = steps.Runner(
        [
            steps.Step("long", ("sleep", "30"), kind=steps.UNLIMITED, needs=("slow",)),
            sh("slow", "sleep 0.2"),
            sh("lint", "sleep 0.5; exit 1", fatal=True),
        ],
        log=lambda _: None,
    )
    popen = subprocess.Popen

    def late(argv: list[str], **kwargs: object) -> object:
        if tuple(argv) == ("sleep", "30"):
            while not runner._aborted:
                time.sleep(0.01)
        return popen(argv, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(subprocess, "Popen", late)
    began = time.monotonic()
    done = runner.run()
    assert time.monotonic() - began < 10
    assert done["long"].status not in (0, None)


def test_a_run_started_with_sigint_ignored_still_interrupts_its_steps() -> None:
    """A shell without job control starts a background command with SIGINT ignored, and its
    children inherit that: the abort's SIGINT then stopped nothing (cold runs 4 and 5)."""
    script = (
        "import time; from tools import steps; began = time.monotonic(); done = steps.Runner(["
        "steps.Step('long', ('sleep', '30'), kind=steps.UNLIMITED),"
        "steps.Step('lint', ('sh', '-c', 'sleep 0.5; exit 1'), fatal=True)],"
        " log=lambda _: None).run(); print(round(time.monotonic() - began), done['long'].status)"
    )
    ran = subprocess.run(
        [sys.executable, "-c", script],
        check=False,
        cwd=lanes.REPO,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    seconds, status = ran.stdout.split()
    assert int(seconds) < 10, ran.stdout
    assert status not in ("0", "None"), ran.stdout


def test_cpu_steps_never_exceed_their_slots(tmp_path: Path) -> None:
    log = tmp_path / "log"
    script = f"echo start >> {log}; sleep 0.2; echo end >> {log}"
    done, _ = run(*(sh(f"s{i}", script) for i in range(3)), cpu_slots=1)
    assert all(d.ok for d in done.values())
    assert log.read_text().split() == ["start", "end"] * 3


def test_the_verdict_line_is_kept_and_cpu_seconds_are_measured() -> None:
    busy = f"{sys.executable} -c 'sum(range(10**7))'; echo '{steps.RESULT}built'"
    done, lines = run(sh("work", busy))
    assert done["work"].verdict == "built"
    assert done["work"].cpu > 0.05
    assert not any(steps.RESULT in line for line in lines)


def test_a_need_that_is_no_step_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown steps"):
        run(sh("a", "true", needs=("nowhere",)))


def test_a_step_runs_at_its_niceness() -> None:
    done, lines = run(sh("niced", "ps -o ni= -p $$", nice=7))
    assert done["niced"].ok
    assert lines[0].split() == ["[niced]", str(min(os.nice(0) + 7, 19))]


def test_every_test_runs_in_exactly_one_lane() -> None:
    every = sorted(lanes.TESTS.rglob("test_*.py"))
    by_name = {lane.name: lane for lane in lanes.lanes()}
    alone, shared, late = by_name["node-alone"], by_name["node-shared"], by_name["node-late"]
    node = sorted(f for f in every if lanes.NODE_DIR in f.parents)

    def marker(lane: lanes.Lane) -> str:
        return lane.args[lane.args.index("-m") + 1]

    # The real node: its shared tests on every file, its `alone` tests on two disjoint halves.
    assert sorted(shared.files) == node
    assert (marker(shared), marker(alone), marker(late)) == ("not alone", "alone", "alone")
    assert sorted([*alone.files, *late.files]) == node
    assert not set(alone.files) & set(late.files)
    assert (alone.stack, shared.stack, late.stack) == ("a", "b", "b")
    # The KWOK tier and every other file, once each, on no real-node stack.
    rest = [*by_name["kwok"].files, *by_name["host"].files, *by_name["rejoin"].files]
    assert sorted(rest) == sorted(set(every) - set(node))
    assert len(rest) == len(set(rest))
    assert by_name["rejoin"].files == (lanes.REJOIN,)
    assert not any(by_name[name].stack for name in ("kwok", "host", "rejoin"))


def test_files_that_need_late_builds_go_last_in_late_order() -> None:
    files = [Path(n) for n in ("test_kueue.py", "test_b.py", "test_helm.py", "test_a.py")]
    ordered = [f.name for f in lanes.late_last(files)]
    assert ordered == ["test_a.py", "test_b.py", "test_helm.py", "test_kueue.py"]


def test_the_rejoin_harness_runs_after_the_real_nodes_shared_lane_ahead_of_everything_else() -> (
    None
):
    rejoin = next(lane for lane in lanes.lanes() if lane.name == "rejoin")
    assert rejoin.follows == "node-shared"
    assert rejoin.nice < min(lane.nice for lane in lanes.lanes() if lane.name != "rejoin")


@pytest.mark.parametrize(
    ("classname", "tier"),
    [
        ("tests.realnode.test_faults", "real node"),
        ("tests.e2e.test_kueue", "KWOK"),
        ("tests.test_rejoin", "rejoin harness"),
        ("tests.test_http", "no cluster"),
    ],
)
def test_a_test_file_belongs_to_its_tier(classname: str, tier: str) -> None:
    assert lanes.tier(classname) == tier


def test_a_lane_report_counts_outcomes_per_tier(tmp_path: Path) -> None:
    junit = tmp_path / "lane.xml"
    junit.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="tests.test_http" name="a" time="1.5"/>'
        '<testcase classname="tests.test_http" name="b" time="0.5"><skipped/></testcase>'
        '<testcase classname="tests.e2e.test_cli" name="c" time="10">'
        '<failure message="AssertionError: lag 31 s&#10;assert 31 &lt; 30"/></testcase>'
        '<testcase classname="tests.e2e.test_cli" name="d" time="2"><error>hung</error></testcase>'
        "</testsuite></testsuites>"
    )
    lane, tiers = results.read(junit)
    assert lane.counts() == "1 passed, 1 failed, 1 error, 1 skipped"
    assert lane.failures == [
        "FAILED tests/e2e/test_cli.py::c: AssertionError: lag 31 s",
        "ERROR tests/e2e/test_cli.py::d: hung",
    ]
    assert lane.executed == 3
    assert tiers["KWOK"].seconds == 12
    assert tiers["no cluster"].counts() == "1 passed, 1 skipped"
    assert results.read(tmp_path / "missing.xml")[0].counts() == "no tests"


def test_the_table_says_what_each_step_did(tmp_path: Path) -> None:
    done, _ = run(sh("build-kwok", f"echo '{steps.RESULT}cached'"), sh("x", "exit 2"))
    done["y"] = steps.Done(sh("y", "true"), why_not="x failed")
    rows = report.step_rows(done, {"kwok": {"seconds": 130.0, "cpu": 240.0}})
    did = {row[0]: row[1] for row in rows}
    assert did == {
        "build-kwok": "built by a test (2m10s, 240 CPU s)",
        "x": "FAILED (2)",
        "y": "not run: x failed",
    }
    assert rows[-1][0] == "y"
    lines = report.render(report.STEP_HEADER, rows)
    assert len({line.index("did") if "did" in line else 0 for line in lines[:1]}) == 1
    assert re.match(r"^step\s+did\s+began\s+wall\s+CPU s$", lines[0])


@pytest.mark.parametrize(
    ("seconds", "shown"), [(0.04, "0.0s"), (59.9, "59.9s"), (60, "1m00s"), (3725, "62m05s")]
)
def test_minutes(seconds: float, shown: str) -> None:
    assert report.minutes(seconds) == shown


def test_the_machine_line_tells_busy_from_niced() -> None:
    start = report.Machine(at=0, busy=0, niced=0, total=0, load=0.5)
    end = report.Machine(at=100, busy=150, niced=30, total=200, load=2.25)
    line = report.machine_line(start, end)
    assert "busy 1.50 cores at normal priority and 0.30 niced" in line
    assert "load average 0.50 at the start, 2.25 at the end" in line


def test_corefile_names_exactly_the_plugins_coredns_is_built_with() -> None:
    directives = set(re.findall(r"^    (\w+)", real_node.COREFILE, re.MULTILINE))
    assert directives == set(build.COREDNS_PLUGINS)


def test_the_prepare_builds_every_component_once_stacks_first() -> None:
    graph = prepare.graph()
    builds = [s.name.removeprefix("build-") for s in graph if s.name.startswith("build-")]
    every = {c.name for c in (*build.COMPONENTS, *build.NODE_COMPONENTS)}
    assert sorted(builds) == sorted(every)
    stack = {c.name for c in (*build.KWOK_STACK, *build.NODE_STACK)}
    assert set(builds[: len(stack)]) == stack
    nice = {s.name.removeprefix("build-"): s.nice for s in graph if s.name.startswith("build-")}
    assert {c.name for c in build.NODE_STACK} == {c for c, n in nice.items() if n == 0}
    assert nice["kwok"] == prepare.KWOK_NICE
    assert all(n == prepare.LATE_NICE for c, n in nice.items() if c not in stack)
    assert set(prepare.NODE_NEEDS) <= {s.name for s in graph}


def test_a_step_that_follows_runs_whatever_became_of_what_it_follows(tmp_path: Path) -> None:
    done, _ = run(
        sh("up", "true"),
        sh("tests", "exit 1", needs=("up",)),
        sh("more-tests", "true", needs=("tests",)),
        sh("down", "true", after=("more-tests",)),
    )
    assert done["more-tests"].why_not == "tests failed"
    assert done["down"].ok


def test_each_real_node_stack_is_started_before_its_lanes_and_stopped_after(
    tmp_path: Path,
) -> None:
    from tools.testrun.__main__ import lane_steps  # noqa: PLC0415 (the runner's module)

    made = {s.name: s for s in lane_steps(prepare.graph(), tmp_path, [])}
    assert made["node-up-a"].needs == prepare.NODE_NEEDS
    assert made["lane-node-alone"].needs == ("node-up-a",)
    assert made["lane-node-late"].after == ("lane-node-shared",)
    assert made["node-down-a"].after == ("lane-node-alone",)
    assert made["node-down-b"].after == ("lane-node-late",)
    assert made["lane-node-shared"].env["MXJOB_NODE_RUN"].startswith(str(tmp_path / "node-b"))
    assert made["lane-kwok"].needs == () and "MXJOB_NODE_RUN" not in made["lane-kwok"].env
    assert made["lane-rejoin"].after == ("lane-node-shared",)
    # Without a prepared real node its lanes start the tier's own fixture (which skips or
    # fails with the reason), and no stack is started for them.
    alone = lane_steps([s for s in prepare.graph() if s.name != "images"], tmp_path, [])
    assert not any(s.name.startswith("node-") for s in alone)


def test_niceness_counts_across_sessions_during_the_run_and_the_setting_comes_back() -> None:
    before = hoststate.read_sysctls((hoststate.AUTOGROUP,))
    with hoststate.niceness_counts():
        inside = hoststate.read_sysctls((hoststate.AUTOGROUP,))
    assert hoststate.read_sysctls((hoststate.AUTOGROUP,)) == before
    if before and os.access(f"/proc/sys/{hoststate.AUTOGROUP.replace('.', '/')}", os.W_OK):
        assert inside == {hoststate.AUTOGROUP: "0"}


def test_a_test_waits_for_the_build_a_prepare_has_announced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    component = build.Component("tool", "v1", mains={"example.com/tool": "tool"}, requires={})
    pending = tmp_path / "pending"
    pending.mkdir()
    monkeypatch.setenv(build.PENDING_SETTING, str(pending))
    monkeypatch.setattr(prepare, "BUILD_ORDER", (component,))
    graph = [steps.Step("build-tool", ("true",))]
    prepare.announce(graph, pending)
    built_while: list[list[Path]] = []

    def build_component(c: build.Component, cache: Path, log: build.Log) -> float:
        built_while.append(list(pending.iterdir()))  # what was still pending when it built
        return 0.0

    monkeypatch.setattr(build, "build_component", build_component)
    waiter = threading.Thread(target=build.need, args=(component, tmp_path, lambda _: None))
    waiter.start()
    time.sleep(1.5)
    assert built_while == []  # announced: the test waits, it does not build
    prepare.settle(pending, steps.Done(graph[0], status=1))  # the prepare's build ended
    waiter.join(timeout=10)
    assert built_while == [[]]  # then it goes on (and builds it, were it still missing)
