"""A tenant campaign on the real node (docs/security.md#the-tenant-campaign): from one namespace's
`edit` identity only, the attacks of issue 29 against the installed project, while a bystander
job in another namespace keeps syncing.

The tenant is a ServiceAccount bound to the built-in `edit` role in its own namespace (which
`mxjob-edit` joins), calling the API server with its own token and kubeconfig: every call is
authorized by RBAC as such a user's would be. It sends a job whose answer would be 3 GB, writes at
v1alpha1 with a stash forging a finished status with timestamps no clock holds and one bringing
in a negative backoffLimit, and runs a pod of its own holding idle and slow connections open to
the hook and the conversion webhook (the bridge CNI enforces no NetworkPolicy, as on a cluster
whose plugin ignores it). Meanwhile the bystander's spec is changed every few seconds and the
time until its status shows the new generation (Metacontroller synced it through the hook) is
measured, before and during the attack.

After: no hook or webhook container restarted, no 5xx in their logs, the hook's memory peak
under its limit, the bystander synced every time, each attack answered as designed.

The name clash (issue 37), as a user of a namespace meets it: a job `twin` (a Service per
replica) and another named like its Scheduler's Service, `twin-scheduler-0`, with one Service
for the whole job. Each job's Services are its own, selecting its own pods: `twin`'s Scheduler
is reached at `twin-scheduler-0`, the other job's pods at `<pod>.twin-scheduler-0-mxjob`.

The webhook-stall case (issue 37): pods of the tenant send the conversion webhook reviews of
8 MiB, its body limit, and never read the answers, each holding its connection past the
webhook's send timeout before sending again. Meanwhile a bystander's job is read at v1alpha1
(a conversion the API server asks the webhook for) every second: each read must succeed, the
webhook must answer each of the API server's calls within 5 s (as its own metrics time them:
kubectl's wall time, printed, also holds the machine's load), no webhook pod may restart or turn
unready. Before, three such clients held a
webhook worker for the answers' send timeout one after the other: a conversion behind them
waited 35.5 s (the API server gives up at 30 s) and `/readyz` timed out.
"""

import json
import statistics
import subprocess
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from hooks.core.conversion.versions import V1_FIELDS
from tests.e2e.conftest import NAMESPACE, REPO, wait_for
from tests.realnode.conftest import HOOK_NAMESPACE, WAITING, Node, waiting_job

pytestmark = pytest.mark.alone(
    "holds the hook's and the webhook's connections and times a bystander's syncs: other"
    " tests' load would be its noise"
)

TENANT = "mxjob-tenant"
USER = "tenant"
#: How long the attacker's pod holds connections, seconds.
ATTACK_SECONDS = 40
#: Idle and slow connections it keeps open to each of the hook and the webhook.
CONNECTIONS = 40
#: A status that nothing but the hook may write, with moments Python has no year for.
FORGED = {
    "conditions": [
        {
            "type": "Succeeded",
            "status": "True",
            "reason": "MXJobSucceeded",
            "lastTransitionTime": "0001-01-01T00:00:00+01:00",
        }
    ],
    "startTime": "0001-01-01T00:00:00+01:00",
    "completionTime": "9999-12-31T23:59:59-01:00",
}
#: The attacker's pod: per target, CONNECTIONS threads each holding a connection (idle, or the
#: hook's a byte every half second) until the server closes it, then another; how long each was
#: held, printed as JSON.
ATTACKER = r"""
import json, socket, sys, threading, time
end = time.time() + float(sys.argv[1])
count = int(sys.argv[2])
targets = {
    "hook": ("mxjob-hook.mxjob-system.svc", 80),
    "webhook": ("mxjob-convert.mxjob-system.svc", 443),
}
held = {name: [] for name in targets}
def hold(name, slow):
    host, port = targets[name]
    while time.time() < end:
        try:
            conn = socket.create_connection((host, port), timeout=5)
        except OSError:
            time.sleep(0.5)
            continue
        opened = time.time()
        conn.settimeout(0.5)
        try:
            while time.time() < end:
                if slow:
                    conn.send(b"P")
                try:
                    if conn.recv(1) == b"":
                        held[name].append(time.time() - opened)
                        break
                except socket.timeout:
                    pass
        except OSError:
            held[name].append(time.time() - opened)
        finally:
            conn.close()
threads = [threading.Thread(target=hold, args=(name, name == "hook" and i % 2 == 0))
           for name in targets for i in range(count)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(json.dumps(held))
"""


@pytest.fixture(scope="module")
def tenant(cluster: Node, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., Any]]:
    """`kubectl` as the tenant: a ServiceAccount bound to `edit` in its namespace, with a
    kubeconfig of its own token (no client certificate the API server could prefer)."""
    admin = cluster.kubectl
    admin("create", "namespace", TENANT)
    try:
        admin("create", "serviceaccount", USER, "-n", TENANT)
        admin("create", "rolebinding", USER, "-n", TENANT, "--clusterrole=edit",
              f"--serviceaccount={TENANT}:{USER}")  # fmt: skip
        token = admin("create", "token", USER, "-n", TENANT, "--duration=30m").stdout.strip()
        config = tmp_path_factory.mktemp("tenant") / "kubeconfig"
        config.write_text(json.dumps(kubeconfig(cluster.stack.server, token)))
        kubectl = [str(cluster.stack.bin("kubectl")), f"--kubeconfig={config}", "-n", TENANT]

        def as_tenant(*args: str, stdin: str | None = None, check: bool = True) -> Any:
            done = subprocess.run(
                [*kubectl, *args], input=stdin, capture_output=True, text=True, check=False
            )
            assert not check or done.returncode == 0, (args, done.stderr)
            return done

        yield as_tenant
    finally:
        admin("delete", "namespace", TENANT, "--wait=false", check=False)


def kubeconfig(server: str, token: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "c", "cluster": {"server": server, "insecure-skip-tls-verify": True}}
        ],
        "users": [{"name": "u", "user": {"token": token}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "c",
    }


def pods(cluster: Node, name: str) -> list[dict[str, Any]]:
    out = cluster.kubectl(
        "get", "pods", "-n", HOOK_NAMESPACE, "-l", f"app.kubernetes.io/name={name}", "-o", "json"
    ).stdout
    return list(json.loads(out)["items"])


def restarts(cluster: Node) -> dict[str, int]:
    """Container restarts of every hook and webhook pod, by pod name."""
    return {
        p["metadata"]["name"]: sum(s["restartCount"] for s in p["status"]["containerStatuses"])
        for name in ("mxjob-hook", "mxjob-convert")
        for p in pods(cluster, name)
    }


def server_errors(cluster: Node, since: float) -> list[str]:
    """Log lines of the hook's and the webhook's pods with a 5xx status since `since`."""
    seconds = int(time.monotonic() - since) + 5
    found = []
    for name in ("mxjob-hook", "mxjob-convert"):
        for pod in pods(cluster, name):
            log = cluster.kubectl(
                "logs", "-n", HOOK_NAMESPACE, pod["metadata"]["name"], f"--since={seconds}s"
            ).stdout
            for line in log.splitlines():
                entry = json.loads(line) if line.startswith("{") else {}
                if isinstance(entry.get("status"), int) and entry["status"] >= 500:
                    found.append(line[:300])
    return found


#: The hook container's peak memory and its limit, read in the container (cgroup v1 or v2).
MEMORY = r"""
import os

for peak, limit in (("memory.peak", "memory.max"),
                    ("memory/memory.max_usage_in_bytes", "memory/memory.limit_in_bytes")):
    if os.path.exists("/sys/fs/cgroup/" + peak):
        read = [open("/sys/fs/cgroup/" + f).read().strip() for f in (peak, limit)]
        print(*read)
        break
"""


def memory(cluster: Node) -> list[tuple[int, int]]:
    """(peak, limit) bytes of each hook pod's container."""
    found = []
    for pod in pods(cluster, "mxjob-hook"):
        out = cluster.kubectl(
            "exec", "-n", HOOK_NAMESPACE, pod["metadata"]["name"], "--", "python", "-c", MEMORY
        ).stdout.split()
        assert len(out) == 2, f"no memory accounting found in {pod['metadata']['name']}"
        found.append((int(out[0]), int(out[1])))
    return found


def sync_latency(cluster: Node, job: str, ttl: int) -> float:
    """Seconds from a change of the job's spec (a new generation) until its status was written
    from it: Metacontroller called the hook and wrote its answer."""
    patch = json.dumps({"spec": {"runPolicy": {"ttlSecondsAfterFinished": ttl}}})
    started = time.monotonic()
    changed = cluster.kubectl(
        "patch", "mxjob", job, "-n", NAMESPACE, "--type=merge", f"-p={patch}", "-o", "json"
    )
    generation = json.loads(changed.stdout)["metadata"]["generation"]

    def synced() -> bool:
        status = cluster.status(job)
        return bool(status.get("observedGeneration", 0) >= generation)

    wait_for(f"{job} synced at generation {generation}", synced, 60)
    return time.monotonic() - started


def latencies(cluster: Node, job: str, until: float, first_ttl: int) -> list[float]:
    """Sync latencies of the job, one every ~2 s until `until` (monotonic)."""
    found: list[float] = []
    ttl = first_ttl
    while time.monotonic() < until or not found:
        found.append(sync_latency(cluster, job, ttl))
        ttl += 1
        time.sleep(max(0.0, 2 - found[-1]))
    return found


def oversized() -> dict[str, Any]:
    """The issue's job: 10000 Servers and 10000 Workers of a 150 KB template (~3 GB answer)."""
    template = {
        "spec": {"containers": [{"name": "mxnet", "image": "m", "command": ["x" * 150_000]}]}
    }
    replicas = {
        rtype: {"replicas": count, "template": template}
        for rtype, count in (("Scheduler", 1), ("Server", 10_000), ("Worker", 10_000))
    }
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "MXJob",
        "metadata": {"name": "oversized"},
        "spec": {"mxReplicaSpecs": replicas},
    }


def stashed(name: str, *entries: dict[str, Any]) -> dict[str, Any]:
    """The historical v1alpha1 job, its stash holding `entries`."""
    import yaml  # noqa: PLC0415

    job: dict[str, Any] = yaml.safe_load(
        (REPO / "examples" / "legacy" / "v1alpha1_mx_job_dist.yaml").read_text()
    )
    job["metadata"] = {"name": name, "annotations": {V1_FIELDS: json.dumps(list(entries))}}
    return job


def attacker_pod(image: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "connections"},
        "spec": {
            "restartPolicy": "Never",
            "securityContext": {"runAsNonRoot": True, "runAsUser": 65532},
            "containers": [
                {
                    "name": "attacker",
                    "image": image,
                    "command": ["python", "-c", ATTACKER, str(ATTACK_SECONDS), str(CONNECTIONS)],
                    "securityContext": {"allowPrivilegeEscalation": False},
                }
            ],
        },
    }


def test_a_tenant_takes_nothing_down_and_stalls_no_other_job(
    cluster: Node, tenant: Callable[..., Any]
) -> None:
    cluster.apply(waiting_job(cluster, "bystander", workers=1))
    cluster.running_pids("bystander", 1)
    cluster.wait_condition("bystander", "Running")
    before_restarts = restarts(cluster)
    started = time.monotonic()
    calm = latencies(cluster, "bystander", time.monotonic() + 10, first_ttl=1000)

    # The attacks, as the tenant (created: `apply` would copy the 450 KB job into an annotation).
    tenant("create", "-f", "-", stdin=json.dumps(oversized()))
    tenant(
        "apply", "-f", "-", stdin=json.dumps(stashed("forged", {"at": ["status"], "to": FORGED}))
    )
    smuggled = stashed("smuggled", {"at": ["spec", "runPolicy", "backoffLimit"], "to": -5})
    refused = tenant("apply", "-f", "-", stdin=json.dumps(smuggled), check=False)
    tenant("apply", "-f", "-", stdin=json.dumps(attacker_pod(cluster.image("mxjob-base"))))
    wait_for(
        "the attacker's pod running",
        lambda: (
            "Running"
            in tenant("get", "pod", "connections", "-o", "jsonpath={.status.phase}").stdout
        ),
        120,
    )
    attacked = time.monotonic()
    during = latencies(cluster, "bystander", attacked + ATTACK_SECONDS - 5, first_ttl=2000)
    wait_for(
        "the attacker's pod done",
        lambda: (
            "Succeeded"
            in tenant("get", "pod", "connections", "-o", "jsonpath={.status.phase}").stdout
        ),
        ATTACK_SECONDS + 60,
    )
    held = json.loads(tenant("logs", "connections").stdout.strip().splitlines()[-1])

    # What each attack got.
    assert refused.returncode != 0 and "brings in what kubeflow.org/v1 refuses" in refused.stderr
    assert tenant("get", "mxjob", "smuggled", check=False).returncode != 0
    _, reason, message = wait_for_condition(tenant, "oversized", "Failed")
    assert reason == "MXJobInvalidSpec" and "over this installation's limit" in message, message
    forged = json.loads(tenant("get", "mxjobs.v1.kubeflow.org", "forged", "-o", "json").stdout)
    status = forged.get("status") or {}
    assert "Succeeded" not in [c["type"] for c in status.get("conditions", [])], status
    assert FORGED["startTime"] != status.get("startTime") and "completionTime" not in status
    peaks = memory(cluster)
    errors = server_errors(cluster, started)
    after_restarts = restarts(cluster)

    report = {
        "bystander sync latency before (s)": summary(calm),
        "bystander sync latency during (s)": summary(during),
        "connections held until the server closed them (s)": {
            target: summary(times) for target, times in held.items()
        },
        "hook memory peak / limit (MiB)": [(p >> 20, limit >> 20) for p, limit in peaks],
        "oversized job": message.split(": ", 1)[1][:160],
        "server errors": len(errors),
    }
    print("\ntenant campaign: " + json.dumps(report))
    assert after_restarts == before_restarts, (before_restarts, after_restarts)
    assert errors == [], errors[:5]
    assert all(peak < limit for peak, limit in peaks), peaks
    assert max(during) < 20, during  # within Metacontroller's hook timeout, every time
    for target, times in held.items():
        assert times and max(times) < 5 + 3, (target, summary(times))


def wait_for_condition(tenant: Callable[..., Any], job: str, ctype: str) -> tuple[str, str, str]:
    def probe() -> tuple[str, str, str] | None:
        out = tenant("get", "mxjob", job, "-o", "json", check=False)
        if out.returncode != 0:
            return None
        conditions = (json.loads(out.stdout).get("status") or {}).get("conditions") or []
        last = conditions[-1] if conditions else {}
        found = (last.get("type", ""), last.get("reason", ""), last.get("message", ""))
        return found if found[0] == ctype else None

    return wait_for(f"{job} {ctype}", probe, 60)


def summary(values: list[float]) -> dict[str, float]:
    return {
        "n": len(values),
        "median": round(statistics.median(values), 2),
        "max": round(max(values), 2),
    }


# --- the webhook stall (issue 37) -------------------------------------------------------------

#: Pods of the tenant holding the webhook, and for how long, seconds.
STALLERS = 3
STALL_SECONDS = 40
#: The webhook's body limit (manifests/components/conversion/convert.yaml).
REVIEW_BYTES = 8 * 2**20
#: How long the webhook may take to answer a bystander's conversion, seconds, as the API server
#: times its call (the API server waits 30): a bucket bound of WEBHOOK_CALLS.
CONVERSION_BOUND = 5.0
#: The API server's histogram of its calls to conversion webhooks, by result (Kubernetes'
#: apiextensions-apiserver, pkg/apiserver/conversion/metrics.go; buckets 0.005 s to 60 s, 5 among
#: them). The stallers call the webhook directly, so in this test it counts the bystander's reads.
WEBHOOK_CALLS = "apiserver_conversion_webhook_duration_seconds"
#: A staller: a review of stored v1 jobs read at v1alpha1 just under the body limit, sent over
#: TLS with a 4 KiB receive buffer and never read, the connection held 12 s (past the webhook's
#: 10 s send timeout), then again until the end; how many it sent, printed as JSON.
STALLER = r"""
import json, socket, ssl, sys, time
end, size = time.time() + float(sys.argv[1]), int(sys.argv[2])
host = "mxjob-convert.mxjob-system.svc"
job = {"apiVersion": "kubeflow.org/v1", "kind": "MXJob",
       "metadata": {"name": "j-000000", "namespace": "t", "uid": "u"},
       "spec": {"mxReplicaSpecs": {"Worker": {"replicas": 1, "template": {"spec": {
           "containers": [{"name": "mxnet", "image": "m", "command": ["python", "t.py"]}]}}}}}}
objects = [dict(job, metadata=dict(job["metadata"], name=f"j-{i:06}"))
           for i in range(size // (len(json.dumps(job)) + 2))]
review = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
          "request": {"uid": "stall", "desiredAPIVersion": "kubeflow.org/v1alpha1",
                      "objects": objects}}
body = json.dumps(review).encode()
while len(body) > size:
    objects.pop()
    body = json.dumps(review).encode()
request = (b"POST /convert HTTP/1.1\r\nHost: " + host.encode() +
           b"\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
context = ssl.create_default_context()
context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
sent = 0
while time.time() < end:
    raw = socket.socket()
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    raw.settimeout(30)
    try:
        raw.connect((host, 443))
        conn = context.wrap_socket(raw, server_hostname=host)
        conn.sendall(request)
        sent += 1
        time.sleep(min(12, max(0, end - time.time())))
        conn.close()
    except OSError:
        time.sleep(0.5)
    finally:
        raw.close()
print(json.dumps({"sent": sent}))
"""


def staller_pod(image: str, index: int) -> dict[str, Any]:
    pod = attacker_pod(image)
    pod["metadata"] = {"name": f"stall-{index}"}
    (container,) = pod["spec"]["containers"]
    container["command"] = ["python", "-c", STALLER, str(STALL_SECONDS), str(REVIEW_BYTES - 1)]
    return pod


def conversion_latency(cluster: Node, job: str) -> float:
    """Seconds a read of the job at v1alpha1 takes: the API server asks the webhook."""
    started = time.monotonic()
    read = cluster.kubectl(
        "get", "mxjobs.v1alpha1.kubeflow.org", job, "-n", NAMESPACE, "-o", "json", check=False
    )
    took = time.monotonic() - started
    assert read.returncode == 0, read.stderr
    assert json.loads(read.stdout)["apiVersion"] == "kubeflow.org/v1alpha1"
    return took


def webhook_calls(cluster: Node) -> dict[str, float]:
    """The API server's conversion webhook calls so far: all of them, those that failed, and
    those answered within CONVERSION_BOUND (its `/metrics`, WEBHOOK_CALLS)."""
    text = cluster.kubectl("get", "--raw", "/metrics").stdout
    lines = "\n".join(line for line in text.splitlines() if WEBHOOK_CALLS in line)
    calls = {"all": 0.0, "failed": 0.0, "within bound": 0.0}
    for family in text_string_to_metric_families(lines + "\n"):
        for sample in family.samples:
            succeeded = sample.labels.get("result") == "success"
            if sample.name == f"{WEBHOOK_CALLS}_count":
                calls["all"] += sample.value
                calls["failed"] += 0 if succeeded else sample.value
            elif sample.name == f"{WEBHOOK_CALLS}_bucket" and succeeded:
                bound = float(sample.labels["le"]) == CONVERSION_BOUND
                calls["within bound"] += sample.value if bound else 0
    return calls


def conversions(cluster: Node, job: str, until: float) -> list[float]:
    """Conversion latencies of the job, one every ~1 s until `until` (monotonic)."""
    found: list[float] = []
    while time.monotonic() < until or not found:
        found.append(conversion_latency(cluster, job))
        time.sleep(max(0.0, 1 - found[-1]))
    return found


def readiness(cluster: Node) -> dict[str, str]:
    """When each webhook pod last turned Ready, by pod name: a probe that failed moves it."""
    return {
        p["metadata"]["name"]: next(
            c["lastTransitionTime"] for c in p["status"]["conditions"] if c["type"] == "Ready"
        )
        for p in pods(cluster, "mxjob-convert")
    }


def test_a_tenant_holding_the_webhook_stalls_no_conversion(
    cluster: Node, tenant: Callable[..., Any]
) -> None:
    cluster.apply(waiting_job(cluster, "reader", workers=1))
    cluster.wait_condition("reader", "Running")
    before_restarts, before_ready = restarts(cluster), readiness(cluster)
    started = time.monotonic()
    before_calls = webhook_calls(cluster)
    calm = conversions(cluster, "reader", time.monotonic() + 5)
    image = cluster.image("mxjob-base")
    for index in range(STALLERS):
        tenant("apply", "-f", "-", stdin=json.dumps(staller_pod(image, index)))
    wait_for("the stallers running", lambda: stallers_in(tenant, "Running"), 120)
    stalled = time.monotonic()
    during = conversions(cluster, "reader", stalled + STALL_SECONDS - 5)
    wait_for("the stallers done", lambda: stallers_in(tenant, "Succeeded"), STALL_SECONDS + 60)
    sent = [
        json.loads(tenant("logs", f"stall-{i}").stdout.strip().splitlines()[-1])["sent"]
        for i in range(STALLERS)
    ]
    errors = server_errors(cluster, started)
    after_calls = webhook_calls(cluster)
    calls = {key: after_calls[key] - before_calls[key] for key in after_calls}
    report = {
        "bystander read at v1alpha1, kubectl's wall time before (s)": summary(calm),
        "bystander read at v1alpha1, kubectl's wall time during (s)": summary(during),
        f"the API server's webhook calls (within {CONVERSION_BOUND} s)": calls,
        "8 MiB reviews sent and never read": sent,
        "server errors": len(errors),
    }
    print("\ntenant webhook stall: " + json.dumps(report))
    assert sum(sent) >= STALLERS, sent
    assert restarts(cluster) == before_restarts
    assert readiness(cluster) == before_ready
    assert errors == [], errors[:5]
    assert calls["all"] >= len(calm + during), report
    assert calls["failed"] == 0, report
    assert calls["within bound"] == calls["all"], report
    cluster.delete("mxjob", "reader")


def stallers_in(tenant: Callable[..., Any], wanted: str) -> bool:
    """Whether every staller pod is in the phase `wanted`."""
    phases = [
        tenant("get", "pod", f"stall-{i}", "-o", "jsonpath={.status.phase}").stdout
        for i in range(STALLERS)
    ]
    return all(found == wanted for found in phases)


# --- the name clash (issue 37) ----------------------------------------------------------------


def tenant_job(name: str, image: str, **spec: Any) -> dict[str, Any]:
    """A job of the tenant's namespace: a Scheduler and a Worker that wait (its pods mount
    nothing of the session's namespace)."""
    replica = {
        "replicas": 1,
        "restartPolicy": "Never",
        "template": {
            "spec": {
                "terminationGracePeriodSeconds": 1,
                "containers": [{"name": "mxnet", "image": image, "command": WAITING}],
            }
        },
    }
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "MXJob",
        "metadata": {"name": name, "namespace": TENANT},
        "spec": {"mxReplicaSpecs": {"Scheduler": replica, "Worker": replica}, **spec},
    }


def test_a_job_named_like_another_jobs_service_takes_none_of_its_services(
    cluster: Node, tenant: Callable[..., Any]
) -> None:
    image = cluster.image("mxjob-base")
    tenant("apply", "-f", "-", stdin=json.dumps(tenant_job("twin", image)))
    clash = tenant_job("twin-scheduler-0", image, serviceMode="PerJob")
    tenant("apply", "-f", "-", stdin=json.dumps(clash))
    for job in ("twin", "twin-scheduler-0"):
        wait_for_condition(tenant, job, "Running")

    def services(job: str) -> dict[str, dict[str, Any]]:
        out = tenant("get", "services", "-l", f"training.kubeflow.org/job-name={job}", "-o",
                     "json").stdout  # fmt: skip
        return {s["metadata"]["name"]: s for s in json.loads(out)["items"]}

    own = services("twin")
    other = services("twin-scheduler-0")
    assert set(own) == {"twin-scheduler-0", "twin-worker-0"}, sorted(own)
    assert set(other) == {"twin-scheduler-0-mxjob"}, sorted(other)
    for job, found in (("twin", own), ("twin-scheduler-0", other)):
        for service in found.values():
            (owner,) = service["metadata"]["ownerReferences"]
            assert owner["name"] == job, (service["metadata"]["name"], owner)
            selector = service["spec"]["selector"]
            assert selector["training.kubeflow.org/job-name"] == job, selector
    print(
        "\nname clash: twin keeps "
        + ", ".join(sorted(own))
        + "; twin-scheduler-0 (PerJob) has "
        + ", ".join(sorted(other))
    )
