"""The Grafana dashboard (manifests/components/kube-state-metrics/dashboard.json) asks only for
metrics that exist: those of the shipped kube-state-metrics configuration, those the hook's
`/metrics` really serves, and Metacontroller's per-hook metrics as its source names them."""

import copy
import json
from typing import Any

import pytest
from flask.testing import FlaskClient

from tests.builders import mxjob, request
from testsupport import metric_names
from testsupport.metric_names import dashboard_queries, panels, promql_names, unknown_names

DASHBOARD: dict[str, Any] = json.loads(metric_names.DASHBOARD.read_text())

PROMQL_CASES = [
    ("bare", "up", {"up"}),
    ("matchers", 'mxjob_hook_syncs_total{hook="sync", outcome=~"a|b"}', {"mxjob_hook_syncs_total"}),
    (
        "rate and grouping",
        "sum by (le, hook) (rate(x_bucket{a='b'}[$__rate_interval]))",
        {"x_bucket"},
    ),
    ("grouping after", "sum(rate(a_total[5m])) without (pod)", {"a_total"}),
    ("quantile", "histogram_quantile(0.99, sum by (le) (rate(d_bucket[1m])))", {"d_bucket"}),
    (
        "binary with matching",
        "time() - start_time unless on (namespace, name) completion_time",
        {"start_time", "completion_time"},
    ),
    ("keywords", "a > bool 0 and b or c unless d offset 5m", {"a", "b", "c", "d"}),
    ("label value that looks like a name", 'count(m{reason="MXJobFailed"})', {"m"}),
    ("grafana variable", 'm{namespace=~"$namespace"} * $factor', {"m"}),
    ("recording rule", "job:errors:rate5m > 1e3", {"job:errors:rate5m"}),
]


@pytest.mark.parametrize(
    ("expr", "want"), [c[1:] for c in PROMQL_CASES], ids=[c[0] for c in PROMQL_CASES]
)
def test_promql_names(expr: str, want: set[str]) -> None:
    assert promql_names(expr) == want


def hook_names(client: FlaskClient) -> set[str]:
    """The hook's own sample names in its `/metrics` after a sync (labelled metrics show no
    sample before their first observation). Only `mxjob_` ones: under gunicorn (multiprocess
    mode) the process and Python collectors of this test process are not served."""
    answer = client.post(
        "/sync", data=json.dumps(request(mxjob())), content_type="application/json"
    )
    assert answer.status_code == 200
    scrape = client.get("/metrics")
    assert scrape.status_code == 200
    names = metric_names.exposed_names(scrape.get_data(as_text=True))
    return {name for name in names if name.startswith("mxjob_")}


@pytest.fixture
def sources(client: FlaskClient) -> dict[str, set[str]]:
    """The names each source of the dashboard serves, by source."""
    return {
        "kube-state-metrics": metric_names.shipped_ksm_names(),
        "hook": hook_names(client),
        "Metacontroller": set(metric_names.METACONTROLLER),
    }


def test_every_dashboard_query_names_metrics_that_exist(sources: dict[str, set[str]]) -> None:
    known = set().union(*sources.values())
    assert unknown_names(DASHBOARD, known) == {}
    queries = dashboard_queries(DASHBOARD)
    assert all(promql_names(q) for q in queries), "a query that selects no metric"
    used = set().union(*(promql_names(q) for q in queries))
    assert [source for source, names in sources.items() if not names & used] == []


def test_a_misspelt_metric_is_caught(sources: dict[str, set[str]]) -> None:
    """The check above can fail: a query naming a metric no source serves is reported."""
    misspelt = copy.deepcopy(DASHBOARD)
    target = next(
        t
        for p in panels(misspelt)
        for t in p.get("targets", [])
        if "mxjob_hook_syncs_total" in t["expr"]
    )
    target["expr"] = target["expr"].replace("mxjob_hook_syncs_total", "mxjob_hook_sync_total")
    known = set().union(*sources.values())
    assert unknown_names(misspelt, known) == {target["expr"]: ["mxjob_hook_sync_total"]}


#: The dashboard's rows, in order, by the first word of their title, and the source each shows.
ROWS = {"Jobs:": "kube-state-metrics", "Hook:": "hook", "Metacontroller": "Metacontroller"}


def test_each_row_shows_one_source(sources: dict[str, set[str]]) -> None:
    """Jobs from kube-state-metrics, then the hook, then Metacontroller's calls of it: each
    panel sits in the row of the source its queries read."""
    rows: list[str] = []
    for panel in DASHBOARD["panels"]:
        if panel["type"] == "row":
            rows.append(ROWS[panel["title"].split()[0]])
            continue
        names = set().union(*(promql_names(t["expr"]) for t in panel["targets"]))
        assert rows and names <= sources[rows[-1]], panel["title"]
    assert rows == list(ROWS.values())


def test_every_panel_queries_the_chosen_data_source() -> None:
    """Importing asks for one Prometheus data source; no panel is tied to another."""
    (variable,) = [v for v in DASHBOARD["templating"]["list"] if v["type"] == "datasource"]
    wanted = {"type": "prometheus", "uid": f"${{{variable['name']}}}"}
    for panel in panels(DASHBOARD):
        if panel["type"] == "row":
            continue
        assert panel["datasource"] == wanted, panel["title"]
        assert [t["datasource"] for t in panel["targets"]] == [wanted] * len(panel["targets"])
