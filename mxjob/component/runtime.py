"""What the project's API-calling components share at run time (`python -m mxjob.ttl`,
`python -m mxjob.certs`, `python -m mxjob.events`, `python -m mxjob.restarter`): the pass interval
option, a stop on SIGTERM or SIGINT, and the command line of a loop of passes, in all namespaces or
in one."""

import argparse
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from types import FrameType

from kubernetes import client

from mxjob.component import jsonlog
from mxjob.component.kube import api_client


def _positive(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, not {text}")
    return value


def add_interval(parser: argparse.ArgumentParser, variable: str, default: str, what: str) -> None:
    """`--interval SECONDS`, defaulted from the environment variable `variable`."""
    parser.add_argument(
        "--interval",
        type=_positive,
        default=_positive(os.environ.get(variable) or default),
        help=f"{what}, in seconds (env {variable}, {default})",
    )


def stop_on_signals() -> threading.Event:
    """An event set by SIGTERM or SIGINT: the loop ends after its current pass."""
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    return stop


def main(
    argv: Sequence[str] | None,
    parser: argparse.ArgumentParser,
    interval: tuple[str, str],
    once: Callable[[client.ApiClient], None],
    loop: Callable[[client.ApiClient, float, threading.Event], None],
) -> int:
    """A component's command line: `--interval` (from the environment variable and default in
    `interval`), `--kubeconfig`, `--once` (one pass, exit 1 if it raised); the loop otherwise,
    until SIGTERM or SIGINT. JSON logs at LOG_LEVEL."""
    add_interval(parser, *interval, "time between two passes")
    parser.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG") or None)
    parser.add_argument("--once", action="store_true", help="run one pass and exit")
    args = parser.parse_args(argv)
    try:
        jsonlog.configure(os.environ.get("LOG_LEVEL") or "info")
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    api = api_client(args.kubeconfig)
    if args.once:
        try:
            once(api)
        except Exception:
            logging.getLogger(parser.prog).exception(
                "pass failed", extra={"fields": {"action": "error"}}
            )
            return 1
        return 0
    loop(api, args.interval, stop_on_signals())
    return 0


def main_in_namespace(
    argv: Sequence[str] | None,
    parser: argparse.ArgumentParser,
    interval: tuple[str, str],
    variable: str,
    once: Callable[[client.ApiClient, str | None], None],
    loop: Callable[[client.ApiClient, float, threading.Event, str | None], None],
) -> int:
    """`main` for a component that may keep to one namespace: `--namespace NS` as well (from
    the environment variable `variable`; none: all namespaces), handed to `once` and `loop`."""

    def add_namespace(to: argparse.ArgumentParser) -> None:
        to.add_argument(
            "--namespace",
            default=os.environ.get(variable) or None,
            help=f"only this namespace (env {variable}; default: all namespaces)",
        )

    # `main` parses the flags it knows itself: this one is read first, by a parser that knows
    # it alone (and no --help), and the component's parser shows it in its help.
    alone = argparse.ArgumentParser(add_help=False)
    add_namespace(alone)
    namespace = alone.parse_known_args(argv)[0].namespace
    add_namespace(parser)
    return main(
        argv,
        parser,
        interval,
        lambda api: once(api, namespace),
        lambda api, seconds, stop: loop(api, seconds, stop, namespace),
    )
