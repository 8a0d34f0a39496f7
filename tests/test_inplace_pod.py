"""What a pod of an InPlace job carries (hooks/core/build/inplace.py, docs/restarts.md#in-place):
the restarter sidecar asks only for resources the mxnet container names, so a Kueue
ClusterQueue or a ResourceQuota that covers the job covers it too."""

from typing import Any

import pytest

from hooks.core.build.inplace import restarting_in_place


def sidecar(resources: dict[str, Any] | None) -> dict[str, Any]:
    mxnet: dict[str, Any] = {"name": "mxnet", "image": "mxnet:1.9.1"}
    if resources is not None:
        mxnet["resources"] = resources
    spec = restarting_in_place({"containers": [mxnet]})
    first: dict[str, Any] = spec["initContainers"][0]
    assert first["name"] == "mxjob-restarter"
    return first


@pytest.mark.parametrize(
    ("mxnet", "wanted"),
    [
        (None, None),
        ({}, None),
        ({"requests": {"cpu": "2"}}, {"requests": {"cpu": "10m"}, "limits": {"cpu": "100m"}}),
        ({"limits": {"memory": "4Gi"}},
         {"requests": {"memory": "16Mi"}, "limits": {"memory": "32Mi"}}),
        ({"requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"}},
         {"requests": {"cpu": "10m", "memory": "16Mi"},
          "limits": {"cpu": "100m", "memory": "32Mi"}}),
        ({"requests": {"nvidia.com/gpu": "1"}}, None),
        ({"requests": "junk"}, None),
    ],
    ids=["none", "empty", "cpu", "memory by its limit", "cpu, memory and a GPU", "a GPU only",
         "not a map"],
)  # fmt: skip
def test_the_sidecar_asks_only_for_what_the_mxnet_container_names(
    mxnet: dict[str, Any] | None, wanted: dict[str, Any] | None
) -> None:
    assert sidecar(mxnet).get("resources") == wanted
