"""`python -m mxjob.progress`: the progress component's command line.

    python -m mxjob.progress [--interval SECONDS] [--once] [--kubeconfig PATH]

A pass every `--interval` seconds (PROGRESS_INTERVAL_SECONDS, 10); KUBECONFIG, LOG_LEVEL
(info). `--once` runs a single pass and exits 1 if it raised. SIGTERM and SIGINT end the loop
after the current pass.
"""

import argparse
import sys
import threading
from collections.abc import Sequence

from mxjob.component import runtime
from mxjob.progress import collector


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="progress",
        description="Note each running MXJob Worker's training progress, read from its log.",
    )
    return runtime.main(
        argv,
        parser,
        ("PROGRESS_INTERVAL_SECONDS", "10"),
        lambda api: collector.log_pass(
            collector.run_once(api, collector.Pace(collector.READS_PER_SECOND, threading.Event()))
        ),
        collector.run,
    )


if __name__ == "__main__":
    sys.exit(main())
