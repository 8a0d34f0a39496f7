"""Every pod an answer makes reads, in MX_CONFIG, the cluster its DMLC_* variables count
(docs/restarts.md#resizing), judged by the check every real-node process runs first
(`tests/realnode/workloads/cluster_check.py`): its run's config is listed in the same answer, and
the kubelet's expansion of its environment (testsupport/kubelet_env.py) agrees with itself.
Pods an answer keeps are not judged: their desired selves are never applied (children are not
updated in place), and while an edit waits they are built from the edited spec."""

from typing import Any

import pytest
from hypothesis import given

from tests import golden
from tests.realnode.workloads.cluster_check import disagreements
from tests.test_properties import PROFILE, states
from testsupport.jobs import as_sent, run
from testsupport.kubelet_env import resolve

Json = dict[str, Any]


def _made_pods(request: Json, response: Json) -> list[Json]:
    observed = {c["metadata"]["name"] for g in request["children"].values() for c in g.values()}
    return [
        c
        for c in response["children"]
        if c["kind"] == "Pod" and c["metadata"]["name"] not in observed
    ]


def _configs(response: Json) -> dict[str, Json]:
    return {c["metadata"]["name"]: c for c in response["children"] if c["kind"] == "ConfigMap"}


def _judged(request: Json, response: Json) -> list[str]:
    """What the check says of each pod the answer makes, the ConfigMaps the answer lists."""
    configs = _configs(response)
    found: list[str] = []
    for pod in _made_pods(request, response):
        for container in pod["spec"]["containers"]:
            env = resolve(pod, container, configs)
            found.extend(f"{pod['metadata']['name']}: {d}" for d in disagreements(env))
    return found


@pytest.mark.parametrize("case", golden.folders(), ids=lambda f: f.name)
def test_every_pod_a_golden_answer_makes_reads_its_own_cluster(case: Any) -> None:
    recorded = golden.load(case)
    assert _judged(recorded.request, recorded.response) == []


@PROFILE
@given(states())
def test_every_pod_a_generated_answer_makes_reads_its_own_cluster(body: Json) -> None:
    assert _judged(body, as_sent(run(body))) == []


def test_the_check_tells_a_run_read_with_the_config_of_the_run_before() -> None:
    """A control: run 1's pods of the job resized to 3 Workers, given run 0's config under its
    name, as a kubelet serving its cached copy gave it to them."""
    recorded = golden.load(golden.FIXTURES / "resize-next-run-reads-a-config-of-its-own")
    old = recorded.request["children"]["ConfigMap.v1"]["default/mnist-mxjob-config"]
    stale = {"mnist-mxjob-cfg-1": old}
    pod = next(p for p in _made_pods(recorded.request, recorded.response))
    env = resolve(pod, pod["spec"]["containers"][0], stale)
    assert disagreements(env) == ["DMLC_NUM_WORKER=3 but MX_CONFIG lists 2 workers"]
