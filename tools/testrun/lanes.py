"""The test lanes `make test` runs side by side, and which tests each one runs in what order.

The machine's two cores are shared by four kinds of work (docs/testing.md, "Lanes and
budgets"), each lane a pytest session:

- **the real-node tier** (`tests/realnode`) on two stacks started for it (tools/testrun/node.py):
  on stack `a`, the tests marked `alone` (they change the whole cluster: the install replaced,
  the hook scaled to 0, Metacontroller restarted; each says why), one after another; on stack
  `b`, first every other test two at a time (pytest-xdist, each worker's jobs in a namespace of
  its own), then the `alone` tests of SECOND_STACK, so that both stacks end about together.
  The real node starts once its stacks' binaries and images are built: the longest work first.
- **kwok**: the KWOK tier (`tests/e2e`, its own stack), at a lower priority.
- **host**: the tests that need no cluster (seconds each), at a lower priority.
- **rejoin**: once the real node's shared lane is done (its busiest: real MXNet jobs two at a
  time), the rejoin harness (real MXNet processes, no cluster) at a higher priority than
  anything else: ps-lite's heartbeats and the harness's own hang timeout are real seconds, and
  a harness starved by a compile hung in a cold run (three failures under a load of 30) where a
  real cluster would not have. It followed the host lane until warm run 7 (2026-11-28) ended
  with it alone for 2 min 27 s at 0.8 cores, past the 20-minute warm budget; the shared lane
  ends about with the host lane in a cold run and 1.5 minutes before it in a warm one.

Every test belongs to one lane by construction: the real node's lanes run its files with
complementary markers (`-m "not alone"` on every file; `-m alone` on SECOND_STACK on `b` and on
the others on `a`), the KWOK lane its directory, the rejoin lane its file, the host lane every
other file. Within a lane,
the files whose components a prepare builds last (Helm, training-operator, the gang schedulers,
Kueue, kube-state-metrics) run last, so a cold run's first tests need not wait for them.
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
#: Real-node files whose `alone` tests run on stack `b`, after its shared tests (cold run of
#: 2026-11-27: `a`'s alone tests took 7 min 48 s, `b`'s shared ones 8 min 13 s, the gang
#: schedulers' and Kueue's 3 min 45 s, training-operator's about 1 min).
SECOND_STACK = ("test_migration.py",)
#: How many real-node tests run at once on stack `b`.
NODE_WORKERS = 2
#: The niceness of the lanes that yield to the real node's.
YIELDING = 5
#: The rejoin harness's: ahead of every other step (root may lower it; others get 0).
PROMPT = -5


@dataclass(frozen=True)
class Lane:
    """One pytest session: its name, its files in order, its niceness, its selection, the
    real-node stack it runs on (None: its own stack, or none), after the lanes before it there,
    and the lane it follows (None: it starts at once, or once its stack is up)."""

    name: str
    files: tuple[Path, ...]
    nice: int = 0
    args: tuple[str, ...] = ()
    stack: str | None = None
    follows: str | None = None


def late_last(files: list[Path]) -> list[Path]:
    """Files in name order, those of LATE moved to the end in LATE's order."""
    early = sorted(f for f in files if f.name not in LATE)
    late = sorted((f for f in files if f.name in LATE), key=lambda f: LATE.index(f.name))
    return early + late


def lanes() -> tuple[Lane, ...]:
    """Every lane, over every test file of the repository."""
    every = sorted(TESTS.rglob("test_*.py"))
    node = late_last([f for f in every if NODE_DIR in f.parents])
    kwok = late_last([f for f in every if KWOK_DIR in f.parents])
    plain = [f for f in every if f not in node and f not in kwok and f != REJOIN]
    rejoin = [REJOIN] if REJOIN in every else []
    shared = ("-n", str(NODE_WORKERS), "--dist", "load", "-m", "not alone")
    alone = ("-m", "alone")
    return (
        Lane("node-alone", tuple(f for f in node if f.name not in SECOND_STACK), 0, alone, "a"),
        Lane("node-shared", tuple(node), 0, shared, "b"),
        Lane("node-late", tuple(f for f in node if f.name in SECOND_STACK), 0, alone, "b"),
        Lane("kwok", tuple(kwok), YIELDING),
        Lane("host", tuple(late_last(plain)), YIELDING),
        Lane("rejoin", tuple(rejoin), PROMPT, follows="node-shared"),
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
