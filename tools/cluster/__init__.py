"""A local Kubernetes 1.36 + Metacontroller + KWOK control plane for end-to-end tests.

Built from the Go module proxy into ``~/.cache/mxjob-e2e`` (see README.md). Entry points:
``python3 -m tools.cluster build|up|down|env|status`` and, from Python, :class:`Stack`.
"""

from tools.cluster.build import BuildError, build_all, unavailable_reason
from tools.cluster.node import StackError
from tools.cluster.stack import Stack, default_run_dir

__all__ = [
    "BuildError",
    "Stack",
    "StackError",
    "build_all",
    "default_run_dir",
    "unavailable_reason",
]
