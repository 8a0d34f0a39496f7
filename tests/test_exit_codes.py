"""Table test of the exit-code classes (docs/restarts.md#exit-codes): which exit codes of the
`mxnet` container a failed pod may be retried for under restartPolicy ExitCode, as its built-in
failure rules decide them."""

import pytest

from hooks.core.api import ReplicaType, RestartPolicy
from hooks.core.failure_policy import Action, judge
from tests.builders import mxjob, request, run, terminated
from testsupport.observed import observe


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
    pods = [c for c in run(request(mxjob())).children if c["kind"] == "Pod"]
    pod = observe("mnist", terminated(pods[0], exit_code))
    assert pod is not None
    verdict = judge((), RestartPolicy.EXIT_CODE, ReplicaType.WORKER, pod)
    assert (verdict.action is not Action.FAIL_JOB) is retryable
