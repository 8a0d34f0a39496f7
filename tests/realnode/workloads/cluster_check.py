"""Every process of the real-node tier first checks that its MX_CONFIG lists the cluster its
DMLC_* variables say (docs/restarts.md#resizing): a process that reads MX_CONFIG, as
docs/environment.md invites, must never see another cluster than ps-lite's.

Run before the test's own command (`tests/realnode/conftest.py`, `checked`: `python
/workloads/cluster_check.py && exec <command>`), or at the head of a script given to `python
-c`. When they agree it prints one line and the process goes on; when they disagree it prints
each difference on stderr (the end of the log is the pod's termination message, so the job's
condition quotes it) and exits 3. Standard library only: it runs in every image of the tier.
"""

import json
import os
import sys

#: The exit code of a process whose MX_CONFIG and DMLC_* disagree.
DISAGREE = 3


def disagreements(env: dict[str, str]) -> list[str]:
    """What MX_CONFIG says otherwise than DMLC_*: the counts of Workers and Servers, the role,
    the Scheduler's address and port, and a Worker's index (DMLC_WORKER_ID, where set)."""
    config = json.loads(env["MX_CONFIG"])
    cluster, task = config["cluster"], config["task"]
    found: list[str] = []
    for variable, role in (("DMLC_NUM_WORKER", "worker"), ("DMLC_NUM_SERVER", "server")):
        listed = len(cluster.get(role, []))
        if env.get(variable) != str(listed):
            found.append(f"{variable}={env.get(variable)} but MX_CONFIG lists {listed} {role}s")
    if env.get("DMLC_ROLE") != task["type"]:
        found.append(f"DMLC_ROLE={env.get('DMLC_ROLE')} but MX_CONFIG's task is {task['type']}")
    schedulers = cluster.get("scheduler", [])
    root = (schedulers[0]["url"], str(schedulers[0]["port"])) if schedulers else ("", "0")
    given = (env.get("DMLC_PS_ROOT_URI", ""), env.get("DMLC_PS_ROOT_PORT"))
    if given != root:
        found.append(
            f"DMLC_PS_ROOT_URI:PORT={given[0]}:{given[1]} but MX_CONFIG's Scheduler is"
            f" {root[0]}:{root[1]}"
        )
    worker_id = env.get("DMLC_WORKER_ID")
    if task["type"] == "worker" and worker_id is not None and worker_id != str(task["index"]):
        found.append(f"DMLC_WORKER_ID={worker_id} but MX_CONFIG's task index is {task['index']}")
    return found


def check() -> None:
    """Print the cluster both agree on, or what differs, and exit DISAGREE."""
    env = dict(os.environ)
    found = disagreements(env)
    if found:
        for line in found:
            print(f"cluster check FAILED: {line}", file=sys.stderr, flush=True)
        sys.exit(DISAGREE)
    config = json.loads(env["MX_CONFIG"])
    counts = ", ".join(f"{len(v)} {k}" for k, v in sorted(config["cluster"].items()))
    task = config["task"]
    print(
        f"cluster check: MX_CONFIG agrees with DMLC_*: {counts} ({task['type']} {task['index']})",
        flush=True,
    )


if __name__ == "__main__":
    check()
