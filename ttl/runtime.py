"""What the project's API-calling components share at run time (`python -m ttl`,
`python -m certs`): the pass interval option and a stop on SIGTERM or SIGINT."""

import argparse
import os
import signal
import threading
from types import FrameType


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
