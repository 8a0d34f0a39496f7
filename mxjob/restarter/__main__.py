"""`python -m mxjob.restarter`: the restarter component's command line.

    python -m mxjob.restarter [--interval SECONDS] [--namespace NS] [--kubeconfig PATH] [--once]

The loop watches MXJobs and acts on each job's in-place restart order as it changes; while a job
has one, it acts on it again every `--interval` seconds (RESTARTER_INTERVAL_SECONDS, 2), and a
failed watch is started again after as long. `--namespace` (RESTARTER_NAMESPACE; empty: all
namespaces) watches one namespace only. KUBECONFIG (empty: in-cluster config, else
~/.kube/config), LOG_LEVEL (info). `--once` lists the jobs once, acts on each, and exits 1 if
it failed on any job or pod. SIGTERM and SIGINT end the loop within a watch's 30 s.
"""

import argparse
import sys
from collections.abc import Sequence

from mxjob.component import runtime
from mxjob.restarter import controller


def main(argv: Sequence[str] | None = None) -> int:
    """Run the component; the exit code."""
    parser = argparse.ArgumentParser(
        prog="restarter",
        description="Carry each MXJob's in-place restart order (status.inPlaceRestart) to its "
        "pods' restart and go annotations and run label.",
    )
    return runtime.main_in_namespace(
        argv,
        parser,
        ("RESTARTER_INTERVAL_SECONDS", "2"),
        "RESTARTER_NAMESPACE",
        lambda api, namespace: controller.check(
            controller.run_once(*controller.clients(api), namespace)
        ),
        lambda api, interval, stop, namespace: controller.run(
            *controller.clients(api), interval, stop, namespace
        ),
    )


if __name__ == "__main__":
    sys.exit(main())
