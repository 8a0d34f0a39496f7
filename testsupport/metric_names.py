"""Metric names: those the three sources of the MXJob dashboard expose (kube-state-metrics with
the project's configuration, the hook, Metacontroller) and those a PromQL query names, so a
test can prove the dashboard asks only for metrics that exist (docs/http.md#metrics).
"""

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml
from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parent.parent
COMPONENT = ROOT / "manifests" / "components" / "kube-state-metrics"
#: kube-state-metrics' custom-resource-state configuration for MXJobs, as shipped.
KSM_CONFIG = COMPONENT / "mxjob-metrics.yaml"
DASHBOARD = COMPONENT / "dashboard.json"

#: kube-state-metrics' default prefix of custom-resource metrics (`kube_` + "customresource",
#: pkg/customresourcestate/config.go, Resource.GetMetricNamePrefix, v2.20.0).
KSM_DEFAULT_PREFIX = "kube_customresource"

#: Metacontroller's per-hook metrics, from its v4.17.2 source: pkg/metrics/http.go
#: (createNewMetrics: namespace "metacontroller", subsystem the hook type, these names) and the
#: hook types of pkg/controller/common/common.go. Histograms are exposed as _bucket, _sum and
#: _count samples. tests/e2e/test_kube_state_metrics.py finds the ones the dashboard uses in
#: a running Metacontroller's /metrics.
METACONTROLLER_HOOK_TYPES = ("sync", "customize", "finalize")
_METACONTROLLER_COUNTERS = ("requests_total",)
_METACONTROLLER_GAUGES = ("in_flight_requests",)
_METACONTROLLER_HISTOGRAMS = (
    "request_duration_histogram_seconds",
    "dns_duration_histogram_seconds",
    "tls_duration_histogram_seconds",
)
METACONTROLLER = frozenset(
    f"metacontroller_{hook}_{name}{suffix}"
    for hook in METACONTROLLER_HOOK_TYPES
    for name, suffixes in (
        *((n, ("",)) for n in (*_METACONTROLLER_COUNTERS, *_METACONTROLLER_GAUGES)),
        *((n, ("_bucket", "_sum", "_count")) for n in _METACONTROLLER_HISTOGRAMS),
    )
    for suffix in suffixes
)

#: PromQL words that are neither metric names nor functions.
_KEYWORDS = frozenset(
    {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset"}
    | {"and", "or", "unless", "inf", "nan"}
)
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_MATCHERS = re.compile(r"\{[^}]*\}")
_RANGE = re.compile(r"\[[^\]]*\]")
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_WORD = re.compile(r"(?<![\w:.$])([A-Za-z_:][\w:]*)(\s*\()?")
_LABEL_VALUES = re.compile(r"^\s*label_values\((.*),\s*\w+\s*\)\s*$", re.S)


def ksm_names(config: Mapping[str, Any]) -> set[str]:
    """The metric names a custom-resource-state configuration makes kube-state-metrics expose:
    each resource's prefix (`metricNamePrefix`, else the default) and metric name, joined by `_`."""
    names = set()
    for resource in config["spec"]["resources"]:
        prefix = resource.get("metricNamePrefix", KSM_DEFAULT_PREFIX)
        for metric in resource["metrics"]:
            names.add("_".join(p for p in (prefix, metric["name"]) if p))
    return names


def shipped_ksm_names() -> set[str]:
    """The names the shipped configuration (KSM_CONFIG) yields."""
    return ksm_names(yaml.safe_load(KSM_CONFIG.read_text()))


def exposed_names(text: str) -> set[str]:
    """Every sample name in a Prometheus text exposition (counters with `_total`, histograms
    as `_bucket`, `_sum`, `_count`)."""
    return {
        sample.name for family in text_string_to_metric_families(text) for sample in family.samples
    }


def promql_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects: every bare identifier that is not a
    function, an aggregation, a keyword, a label (in `{}` or a grouping) or a Grafana variable."""
    text = _STRING.sub('""', expr)
    text = _MATCHERS.sub(" ", text)
    text = _RANGE.sub(" ", text)
    text = _GROUPING.sub(" ", text)
    return {
        word for word, call in _WORD.findall(text) if not call and word.lower() not in _KEYWORDS
    }


def dashboard_queries(dashboard: Mapping[str, Any]) -> list[str]:
    """Every PromQL query of a Grafana dashboard: each target's `expr`, and the query of each
    templating variable (the expression inside `label_values(...)`)."""
    queries = [target["expr"] for panel in panels(dashboard) for target in panel.get("targets", [])]
    for variable in dashboard.get("templating", {}).get("list", []):
        if variable.get("type") != "query":
            continue
        query = variable["query"]
        text = query["query"] if isinstance(query, dict) else query
        inner = _LABEL_VALUES.match(text)
        queries.append(inner.group(1) if inner else text)
    return queries


def unknown_names(dashboard: Mapping[str, Any], known: set[str]) -> dict[str, list[str]]:
    """Each query of a dashboard that names metrics outside `known`, with those names."""
    return {
        query: sorted(promql_names(query) - known)
        for query in dashboard_queries(dashboard)
        if promql_names(query) - known
    }


def panels(node: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """Every panel of a dashboard, rows and the panels inside collapsed rows too."""
    for panel in node.get("panels", []):
        yield panel
        yield from panels(panel)
