"""`python -m mxjob.ttl`: the TTL controller's command line.

    python -m mxjob.ttl [--interval SECONDS] [--namespace NS] [--kubeconfig PATH] [--once]

Each flag has an environment default: TTL_INTERVAL_SECONDS (30), TTL_NAMESPACE (empty: all
namespaces), KUBECONFIG (empty: in-cluster config, else ~/.kube/config); LOG_LEVEL (info)
sets the log level. `--once` runs a single pass and exits 1 if any API call failed.
SIGTERM and SIGINT end the loop after the current pass, with exit code 0.
"""

import argparse
import os
import sys
from collections.abc import Sequence
from datetime import UTC, datetime

from mxjob.component import jsonlog, runtime
from mxjob.ttl import controller


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The options, defaulted from the environment."""
    parser = argparse.ArgumentParser(
        prog="python -m mxjob.ttl",
        description="Delete finished MXJobs once spec.runPolicy.ttlSecondsAfterFinished passed.",
    )
    runtime.add_interval(parser, "TTL_INTERVAL_SECONDS", "30", "longest wait between two passes")
    parser.add_argument(
        "--namespace",
        default=os.environ.get("TTL_NAMESPACE") or None,
        help="only this namespace (env TTL_NAMESPACE; default: all namespaces)",
    )
    parser.add_argument(
        "--kubeconfig",
        default=os.environ.get("KUBECONFIG") or None,
        help="kubeconfig file (env KUBECONFIG; default: in-cluster, else ~/.kube/config)",
    )
    parser.add_argument("--once", action="store_true", help="run one pass and exit")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the controller; the exit code."""
    args = parse_args(argv)
    try:
        jsonlog.configure(os.environ.get("LOG_LEVEL") or "info")
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    api = controller.connect(args.kubeconfig)
    if args.once:
        try:
            sweep = controller.run_once(api, datetime.now(UTC), args.namespace)
        except Exception:
            controller.LOG.exception("pass failed", extra={"fields": {"action": "error"}})
            return 1
        return 1 if sweep.errors else 0
    controller.run(api, args.interval, runtime.stop_on_signals(), args.namespace)
    return 0


if __name__ == "__main__":
    sys.exit(main())
