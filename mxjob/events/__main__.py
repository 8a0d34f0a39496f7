"""`python -m mxjob.events`: the Events component's command line.

    python -m mxjob.events [--interval SECONDS] [--once] [--kubeconfig PATH]

The loop watches MXJobs; `--interval` (EVENTS_INTERVAL_SECONDS, 5) is the wait before a failed
watch is started again. KUBECONFIG, LOG_LEVEL (info). `--once` lists the jobs once and exits 1
if that failed. SIGTERM and SIGINT end the loop within a watch's 30 s.
"""

import argparse
import sys
from collections.abc import Sequence
from datetime import UTC, datetime

from mxjob.component import runtime
from mxjob.events import controller


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="events",
        description="Tell each MXJob status transition as one Event on the job.",
    )
    return runtime.main(
        argv,
        parser,
        ("EVENTS_INTERVAL_SECONDS", "5"),
        lambda api: controller.log_created(controller.run_once(api, {}, datetime.now(UTC))),
        controller.run,
    )


if __name__ == "__main__":
    sys.exit(main())
