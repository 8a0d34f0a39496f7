"""Whole-job restarts in place (docs/restarts.md#in-place): which jobs restart their pods where
they are instead of deleting and making them again."""

from hooks.core.api import RestartStrategy
from hooks.core.restart.runs import WHOLE_JOB_TYPES
from hooks.core.spec import JobSpec


def restarts_in_place(spec: JobSpec) -> bool:
    """`restartStrategy: InPlace` on a job that can restart whole (one with a replica type ps-lite
    or AutoTVM cannot replace alone); any other job's pods stay as they are."""
    return spec.run_policy.restart_strategy is RestartStrategy.IN_PLACE and any(
        rtype in WHOLE_JOB_TYPES for rtype in spec.replicas
    )
