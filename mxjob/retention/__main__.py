"""`python -m mxjob.retention`: the retention component's command line.

    python -m mxjob.retention [--interval SECONDS] [--namespace NS] [--kubeconfig PATH] [--once]

Each flag has an environment default: RETENTION_INTERVAL_SECONDS (5), RETENTION_NAMESPACE (empty:
all namespaces), KUBECONFIG (empty: in-cluster config, else ~/.kube/config); LOG_LEVEL (info)
sets the log level. `--once` runs a single pass and exits 1 if it failed on any job.
SIGTERM and SIGINT end the loop after the current pass, with exit code 0.
"""

import argparse
import os
import sys
from collections.abc import Sequence

from mxjob.component import runtime
from mxjob.retention import controller


def main(argv: Sequence[str] | None = None) -> int:
    """Run the component; the exit code."""
    # `runtime.main` parses the shared flags and hands the loop only a client: the namespace is
    # read first, by a parser that knows it alone, and given on to the help as a parent's flag.
    scope = argparse.ArgumentParser(add_help=False)
    scope.add_argument(
        "--namespace",
        default=os.environ.get("RETENTION_NAMESPACE") or None,
        help="only this namespace (env RETENTION_NAMESPACE; default: all namespaces)",
    )
    namespace = scope.parse_known_args(argv)[0].namespace
    parser = argparse.ArgumentParser(
        prog="retention",
        description="Release the checkpoint claim of each deleted MXJob that retains it, then "
        "remove the job's retain finalizer.",
        parents=[scope],
    )
    return runtime.main(
        argv,
        parser,
        ("RETENTION_INTERVAL_SECONDS", "5"),
        lambda api: controller.check(controller.run_once(*controller.clients(api), namespace)),
        lambda api, interval, stop: controller.run(
            *controller.clients(api), interval, stop, namespace
        ),
    )


if __name__ == "__main__":
    sys.exit(main())
