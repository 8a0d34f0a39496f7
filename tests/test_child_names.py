"""No two jobs of a namespace name a child of one kind alike (docs/api.md#children), proved by
construction.

Every child the hook makes is named `<job><suffix>`, its suffix from a small language per kind
(`SUFFIXES`). Two jobs `j` and `k = j + t` (t not empty) give one name only if a suffix `s` of
`j`'s is `t` followed by a suffix of `k`'s; `k` being a job name, `t` ends in a letter or digit.
So it is enough that no suffix of a kind ends with another suffix of that kind that a letter or
digit precedes (`test_no_suffix_ends_in_another_after_a_name`), and that every child of every
answer is its job's name and a suffix of the language (`test_every_child_is_named_by_the_language`
over the golden answers and generated syncs). `test_a_job_named_like_a_slot_shares_no_name`
is the clash that was: job `a-scheduler-0`'s one Service was job `a`'s Scheduler Service.
"""

import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hooks.core.api import ReplicaType
from hooks.core.naming import DNS_1035
from tests import golden
from tests.builders import mxjob, replica, run
from tests.fixture_cases import request
from tests.test_properties import PROFILE, states

_TYPES = "|".join(t.short for t in ReplicaType)
_INDEX = "(0|[1-9][0-9]*)"
_RUN = "[1-9][0-9]{0,3}"
#: What follows the job's name in the name of each kind of child it has.
SUFFIXES = {
    "Pod": rf"-({_TYPES})-{_INDEX}(-r[1-9][0-9]{{0,3}})?",
    "Service": rf"-({_TYPES})-{_INDEX}|-mxjob",
    "ConfigMap": rf"-mxjob-(config|result|run-{_RUN}|cfg-{_RUN})",
    "PodGroup": "",
    "PersistentVolumeClaim": "-checkpoint",
}
#: Cases of runs an earlier version began, whose one Service is named after the job until the
#: run ends (docs/restarts.md#upgrading): the one name outside the language.
BEGUN_BEFORE = ("upgrade-keeps-the-per-job-service-named-after-the-job",)


def _in_language(kind: str, suffix: str) -> bool:
    return re.fullmatch(SUFFIXES[kind], suffix) is not None


@pytest.mark.parametrize("kind", sorted(SUFFIXES))
@given(data=st.data())
def test_no_suffix_ends_in_another_after_a_name(kind: str, data: st.DataObject) -> None:
    suffix = data.draw(st.from_regex(rf"\A({SUFFIXES[kind]})\Z"))
    for cut in range(1, len(suffix) + 1):
        if suffix[cut - 1].isalnum():
            assert not _in_language(kind, suffix[cut:]), (suffix, cut)


@pytest.mark.parametrize(
    ("kind", "longer", "shorter"),
    [
        ("Service", "-scheduler-0", ""),  # the per-job Service named after the job, as it was
        ("ConfigMap", "-mxjob-cfg-1", "-1"),
        ("Pod", "-worker-1-r2", "-r2"),
    ],
)
def test_the_check_finds_a_suffix_ending_in_another(kind: str, longer: str, shorter: str) -> None:
    """The property above would fail for a language with such a pair (a control)."""
    language = rf"{SUFFIXES[kind]}|{re.escape(shorter)}"
    cuts = [c for c in range(1, len(longer) + 1) if longer[c - 1].isalnum()]
    assert any(re.fullmatch(language, longer[cut:]) for cut in cuts)


def _children(answer: dict[str, Any]) -> list[tuple[str, str]]:
    return [(c["kind"], c["metadata"]["name"]) for c in answer["children"]]


def _named_by_the_language(job: str, kind: str, name: str) -> bool:
    return name.startswith(job) and _in_language(kind, name[len(job) :])


@pytest.mark.parametrize(
    "case",
    [f for f in golden.folders() if f.name not in BEGUN_BEFORE],
    ids=lambda f: f.name,
)
def test_every_child_is_named_by_the_language(case: Any) -> None:
    recorded = golden.load(case)
    job = recorded.request["parent"]["metadata"]["name"]
    for kind, name in _children(recorded.response):
        assert _named_by_the_language(job, kind, name), (kind, name)


@PROFILE
@given(states())
def test_every_child_of_a_generated_sync_is_named_by_the_language(body: dict[str, Any]) -> None:
    job = body["parent"]["metadata"]["name"]
    for child in run(body).children:
        kind, name = child["kind"], child["metadata"]["name"]
        assert _named_by_the_language(job, kind, name), (kind, name)


def _names(name: str, **spec: Any) -> set[tuple[str, str]]:
    replicas = {"Scheduler": replica(1), "Server": replica(1), "Worker": replica(2)}
    job = mxjob(name=name, replicas=replicas, **spec)
    return {(c["kind"], c["metadata"]["name"]) for c in run(request(job)).children}


def test_a_job_named_like_a_slot_shares_no_name() -> None:
    """Job `a` (a Service per replica) and job `a-scheduler-0` (one Service per job), one
    namespace: each gets its own Services (the second's was `a-scheduler-0`, the first's
    Scheduler Service, and whichever came first had it)."""
    assert DNS_1035.match("a-scheduler-0")
    first = _names("a")
    second = _names("a-scheduler-0", serviceMode="PerJob")
    assert not first & second
    assert ("Service", "a-scheduler-0") in first
    assert ("Service", "a-scheduler-0-mxjob") in second
