"""Adopting training-operator's running MXJobs (docs/migration.md): every pod, Service and
PodGroup training-operator made for an MXJob gets the label `controller-uid=<the job's uid>`.

Metacontroller selects a job's children by that label (`generateSelector`) and compares only
the uid of their controller ownerReference, which training-operator already set to the same
job: a child with the label is claimed as it is, with no write at all; one without it is
released (its ownerReference removed: never seen by the hook, never collected with the job).
Run before the CompositeController is installed. Reads and labels through `kubectl`.
"""

import json
import subprocess
from collections.abc import Callable, Sequence
from typing import Any

#: The label Metacontroller v4 selects children by with `generateSelector: true`.
CLAIM_LABEL = "controller-uid"
#: training-operator's labels on an MXJob's pods and Services (its GenLabels).
_OPERATOR = "training.kubeflow.org/operator-name=mxjob-controller"
_JOB = "training.kubeflow.org/job-name"
#: Kinds training-operator makes for an MXJob; PodGroups only with a gang scheduler.
KINDS = ("pods", "services", "podgroups.scheduling.volcano.sh", "podgroups.scheduling.x-k8s.io")

Kubectl = Callable[[list[str]], str]


def kubectl_runner(command: Sequence[str]) -> Kubectl:
    """Run `command` + args (e.g. `["kubectl", "--context", "prod"]`); its output, or
    RuntimeError with kubectl's own words."""

    def run(args: list[str]) -> str:
        proc = subprocess.run([*command, *args], capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)}: {proc.stderr.strip()}")
        return proc.stdout

    return run


def adopt(kubectl: Kubectl, namespace: str | None, *, dry_run: bool) -> list[str]:
    """Label every MXJob's training-operator children in `namespace` (every namespace when
    None); one line per job saying what was (or, dry run, would be) labelled."""
    scope = ["-n", namespace] if namespace else ["--all-namespaces"]
    jobs = json.loads(kubectl(["get", "mxjobs", *scope, "-o", "json"]))["items"]
    return [_adopt_job(kubectl, job, dry_run=dry_run) for job in jobs]


def _adopt_job(kubectl: Kubectl, job: dict[str, Any], *, dry_run: bool) -> str:
    meta = job["metadata"]
    namespace, name, uid = meta["namespace"], meta["name"], meta["uid"]
    done: list[str] = []
    for kind in KINDS:
        names = _children(kubectl, kind, namespace, name, uid)
        if names and not dry_run:
            kubectl(["label", kind, "-n", namespace, *names, f"{CLAIM_LABEL}={uid}"])
        if names:
            done.append(f"{len(names)} {kind.split('.', 1)[0]}")
    verb = "would label" if dry_run else "labelled"
    what = ", ".join(done) or "nothing"
    return f"{namespace}/{name}: {verb} {what} {CLAIM_LABEL}={uid}"


def _children(kubectl: Kubectl, kind: str, namespace: str, job: str, uid: str) -> list[str]:
    """Names of the objects of `kind` whose controller is the job `uid` and that lack the label
    (PodGroups carry none of the job labels: found by owner alone). A kind the cluster does
    not serve has none."""
    selector = [] if kind.startswith("podgroups") else ["-l", f"{_JOB}={job},{_OPERATOR}"]
    try:
        listed = json.loads(kubectl(["get", kind, "-n", namespace, *selector, "-o", "json"]))
    except RuntimeError as exc:
        if "the server doesn't have a resource type" in str(exc):
            return []
        raise
    return [
        item["metadata"]["name"]
        for item in listed["items"]
        if _controlled_by(item, uid) and item["metadata"].get("labels", {}).get(CLAIM_LABEL) != uid
    ]


def _controlled_by(item: dict[str, Any], uid: str) -> bool:
    return any(
        ref.get("controller") and ref.get("uid") == uid
        for ref in item["metadata"].get("ownerReferences", [])
    )
