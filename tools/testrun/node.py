"""The real-node stack the node lanes share: started before them, stopped after them.

`python -m tools.testrun.node up DIR` starts a real-node stack in DIR and installs the project
as the README says (what the tier's session fixture does when no stack is given to it), and
`down DIR` stops it and checks that the host is as it was: the kubelet's sysctls back to what
they were before the stack started (unless another stack, a playground, holds them) and its
network namespace gone. The lanes find the stack through `MXJOB_NODE_RUN=DIR`
(tests/realnode/conftest.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tools.cluster import hoststate
from tools.cluster.real_node import NETNS_DIR, RealNode
from tools.cluster.stack import Stack
from tools.testrun.lanes import REPO

#: What the host's sysctls were before the stack (beside, not in, its run directory).
BEFORE = "host-before.json"
#: Seconds each process gets after SIGTERM: nothing is left to finish once the lanes ended.
GRACE = 3.0


def log(line: str) -> None:
    print(line, flush=True)


def up(run_dir: Path) -> int:
    before = None if hoststate.holders() else hoststate.read_sysctls()
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    (run_dir.parent / BEFORE).write_text(json.dumps(before))
    real = RealNode()
    stack = Stack(run_dir=run_dir, log=log, node=real)
    try:
        stack.start()
        real.install_in_cluster(REPO)
    except BaseException:
        stack.stop(remove=True)
        raise
    return 0


def down(run_dir: Path) -> int:
    stack = Stack.load(run_dir, log=log)
    if stack is None:
        log(f"no stack in {run_dir}")
        return 0
    netns = stack.node.netns if isinstance(stack.node, RealNode) else None
    stack.stop(remove=True, grace=GRACE)
    problems = []
    if netns and (NETNS_DIR / netns).exists():
        problems.append(f"network namespace {netns} is still there")
    before = json.loads((run_dir.parent / BEFORE).read_text() or "null")
    if before is not None and not hoststate.holders() and hoststate.read_sysctls() != before:
        problems.append(f"sysctls {hoststate.read_sysctls()} are not as before: {before}")
    for problem in problems:
        log(f"the host is not as it was: {problem}")
    return 1 if problems else 0


def main(argv: list[str]) -> int:
    command, run_dir = argv
    return {"up": up, "down": down}[command](Path(run_dir))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
