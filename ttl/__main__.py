"""`python -m ttl`: the TTL controller's command line.

    python -m ttl [--interval SECONDS] [--namespace NS] [--kubeconfig PATH] [--once]

Each flag has an environment default: TTL_INTERVAL_SECONDS (30), TTL_NAMESPACE (empty: all
namespaces), KUBECONFIG (empty: in-cluster config, else ~/.kube/config); LOG_LEVEL (info)
sets the log level. `--once` runs a single pass and exits 1 if any API call failed.
SIGTERM and SIGINT end the loop after the current pass, with exit code 0.
"""

import argparse
import os
import signal
import sys
import threading
from collections.abc import Sequence
from datetime import UTC, datetime
from types import FrameType

from ttl import controller, jsonlog


def _positive(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, not {text}")
    return value


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The options, defaulted from the environment."""
    parser = argparse.ArgumentParser(
        prog="python -m ttl",
        description="Delete finished MXJobs once spec.runPolicy.ttlSecondsAfterFinished passed.",
    )
    parser.add_argument(
        "--interval",
        type=_positive,
        default=_positive(os.environ.get("TTL_INTERVAL_SECONDS") or "30"),
        help="longest wait between two passes, in seconds (env TTL_INTERVAL_SECONDS, 30)",
    )
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
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    controller.run(api, args.interval, stop, args.namespace)
    return 0


if __name__ == "__main__":
    sys.exit(main())
