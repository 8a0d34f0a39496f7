"""The test lanes `make test` runs side by side, and which tests each one runs in what order.

The machine's two cores are shared by (docs/testing.md, "Lanes and budgets"):

- **the real-node tier** (`tests/realnode`), on one stack started for it
  (tools/testrun/node.py): first `node-shared`, its tests two at a time (pytest-xdist, each
  worker's jobs in a namespace of its own), then `node-alone`, the tests marked `alone`
  (they change the whole cluster: the install replaced, the hook scaled to 0, Metacontroller
  restarted), one after another. It starts once its stack's binaries and images are built.
- **host**: everything else in one pytest session, at a lower priority so the real node,
  the longest, comes first: the tests that need no cluster (seconds each), the rejoin harness
  (real MXNet processes, no cluster), then the KWOK tier (its own stack).

Every test belongs to one lane by construction: the real node's two lanes run the same files
with complementary markers (`-m "not alone"`, `-m alone`), the host lane every other file.
Within a lane, the files whose components a prepare builds last (Helm, training-operator, the
gang schedulers, Kueue, kube-state-metrics) run last, so a cold run's first tests need not wait.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"
NODE_DIR = TESTS / "realnode"
KWOK_DIR = TESTS / "e2e"
REJOIN = TESTS / "test_rejoin.py"

#: Files that need a component a cold prepare builds late, in the order they can start.
LATE = (
    "test_helm.py",
    "test_uninstall.py",
    "test_kube_state_metrics.py",
    "test_migration.py",
    "test_gang.py",
    "test_scheduling.py",
    "test_kueue.py",
)


@dataclass(frozen=True)
class Lane:
    """One pytest session: its name, its files in order, its niceness, its selection."""

    name: str
    files: tuple[Path, ...]
    nice: int
    args: tuple[str, ...] = ()
    #: Whether it runs on the real-node stack started for the run (MXJOB_NODE_RUN).
    on_node: bool = False


#: How many tests of the real node run at once in `node-shared`.
NODE_WORKERS = 2


def late_last(files: list[Path]) -> list[Path]:
    """Files in name order, those of LATE moved to the end in LATE's order."""
    early = sorted(f for f in files if f.name not in LATE)
    late = sorted((f for f in files if f.name in LATE), key=lambda f: LATE.index(f.name))
    return early + late


def lanes() -> tuple[Lane, ...]:
    """The real node's two lanes and the host lane, over every test file of the repository."""
    every = sorted(TESTS.rglob("test_*.py"))
    node = [f for f in every if NODE_DIR in f.parents]
    kwok = [f for f in every if KWOK_DIR in f.parents]
    plain = [f for f in every if f not in node and f not in kwok and f != REJOIN]
    rejoin = [REJOIN] if REJOIN in every else []
    host = [*late_last(plain), *rejoin, *late_last(kwok)]
    shared = ("-n", str(NODE_WORKERS), "--dist", "load", "-m", "not alone")
    return (
        Lane("node-shared", tuple(late_last(node)), nice=0, args=shared, on_node=True),
        Lane("node-alone", tuple(late_last(node)), nice=0, args=("-m", "alone"), on_node=True),
        Lane("host", tuple(host), nice=5),
    )


def tier(test_file: str) -> str:
    """The tier a test file (as junit names its class, `tests.e2e.test_x`) belongs to."""
    if test_file.startswith("tests.realnode."):
        return "real node"
    if test_file.startswith("tests.e2e."):
        return "KWOK"
    if test_file.startswith("tests.test_rejoin"):
        return "rejoin harness"
    return "no cluster"
