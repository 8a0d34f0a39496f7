"""What one namespace's user can send the hook, and what it must still do: one test per attack
of docs/security.md that the hook answers itself (the cluster-wide ones are in tests/e2e and
tests/realnode). Every request goes through the Flask app in testing mode, so a bug raises.
"""

from typing import Any

import pytest
from flask.testing import FlaskClient

from tests.builders import cluster_after, mxjob, replica, request, run, running

Json = dict[str, Any]
#: Readable RFC 3339, but outside the years Python holds once in UTC.
OUT_OF_RANGE = ("0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00")


def worker_job() -> Json:
    return mxjob(replicas={"Worker": replica(1)})


def running_children(job: Json) -> list[Json]:
    return [running(c) if c["kind"] == "Pod" else c for c in cluster_after(run(request(job)))]


def sync(client: FlaskClient, body: Json) -> Json:
    answer = client.post("/sync", json=body)
    assert answer.status_code == 200, answer.data
    result: Json = answer.get_json()
    return result


@pytest.mark.parametrize("moment", OUT_OF_RANGE)
def test_a_start_time_outside_the_utc_years_is_unknown_not_a_500(
    client: FlaskClient, moment: str
) -> None:
    """Once an OverflowError in parse_time: a 500 for that job on every sync, for ever. The
    start is then taken from the pods, as for a status the hook cannot read."""
    job = worker_job()
    children = running_children(job)
    before = run(request(job, children)).status
    job["status"] = {**before, "startTime": moment}
    answer = sync(client, request(job, children))
    assert answer["status"]["conditions"][-1]["type"] == "Running"
    assert answer["status"]["startTime"] == before["startTime"]
