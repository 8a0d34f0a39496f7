"""Table test of the exit-code classes (docs/restarts.md#exit-codes): which exit codes of the
`mxnet` container a failed pod may be retried for under restartPolicy ExitCode."""

import pytest

from hooks.core.restarts import exit_is_retryable


@pytest.mark.parametrize(
    ("exit_code", "retryable"),
    [
        (None, True),  # no exit code: evicted, node lost, preempted
        (0, True),  # mxnet exited 0 on a failed pod: another container failed it
        (1, False),
        (2, False),
        (126, False),
        (127, False),
        (128, False),
        (130, True),  # SIGINT
        (137, True),  # SIGKILL, often the OOM killer
        (138, True),  # reserved: the user asks for a retry
        (139, False),  # SIGSEGV
        (143, True),  # SIGTERM
        (255, False),  # every other code is permanent
        (-1, False),
    ],
)
def test_exit_is_retryable(exit_code: int | None, retryable: bool) -> None:
    assert exit_is_retryable(exit_code) is retryable
