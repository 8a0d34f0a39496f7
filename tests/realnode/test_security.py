"""Security seen from inside the cluster: the running hook pod, and RBAC with real tokens.

The real-node API server enforces RBAC (`--authorization-mode=Node,RBAC`), so every call below
is decided by the roles the manifests install; tokens come from `kubectl create token`, as a
pod of that ServiceAccount would get them.
"""

import json
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.conftest import NAMESPACE, REPO, wait_for
from tests.realnode.conftest import HOOK_NAMESPACE, Node, waiting_job

#: Runs inside the hook container (as its user): what a compromised request handler could do.
INSIDE = r"""
import errno, json, os
procs = [p for p in os.listdir("/proc") if p.isdigit()]
def field(pid, name):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(name + ":"):
            return line.split()[1:]
try:
    open("/probe", "w")
    root = "writable"
except OSError as e:
    root = errno.errorcode[e.errno]
listening = set()
for table in ("/proc/net/tcp", "/proc/net/tcp6", "/proc/net/udp", "/proc/net/udp6"):
    for line in open(table).readlines()[1:]:
        cols = line.split()
        if table.startswith("/proc/net/udp") or cols[3] == "0A":
            listening.add(f"{table[10:]}:{int(cols[1].rsplit(':', 1)[1], 16)}")
print(json.dumps({
    "uids": sorted({u for p in procs for u in field(p, "Uid")}),
    "capabilities": sorted({field(p, "CapEff")[0] for p in procs}),
    "no_new_privs": sorted({field(p, "NoNewPrivs")[0] for p in procs}),
    "seccomp": sorted({field(p, "Seccomp")[0] for p in procs}),
    "commands": sorted({open(f"/proc/{p}/cmdline").read().split("\0")[0] for p in procs}),
    "root": root,
    "token": os.path.exists("/var/run/secrets/kubernetes.io/serviceaccount"),
    "listening": sorted(listening),
}))
"""


def test_hook_pod_runs_unprivileged_read_only_without_token(cluster: Node) -> None:
    """What the Deployment promises, checked in the running pod rather than in its YAML."""
    pod = cluster.hook_pods()[0]
    out = cluster.kubectl("exec", "-n", HOOK_NAMESPACE, pod, "--", "python", "-c", INSIDE)
    seen = json.loads(out.stdout)
    assert seen["uids"] == ["65532"], seen  # real, effective, saved and fs uid of every process
    assert seen["capabilities"] == ["0000000000000000"], seen
    assert seen["no_new_privs"] == ["1"], seen
    assert seen["seccomp"] == ["2"], seen  # filter mode: the RuntimeDefault profile
    assert seen["root"] == "EROFS", seen
    assert seen["token"] is False, seen
    assert seen["listening"] == ["tcp:8080"], seen  # gunicorn only; no UDP socket either
    print(f"\nhook pod {pod}: {seen}")


def selected(cluster: Node, kind: str, namespace: str | None, labels: dict[str, str]) -> list[str]:
    """Names of the objects a label selector (matchLabels) picks, asked of the API server."""
    selector = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
    scope = ["-n", namespace] if namespace else []
    out = cluster.kubectl("get", kind, *scope, "-l", selector, "-o", "name")
    return sorted(out.stdout.split())


def test_network_policy_admits_exactly_the_installed_metacontroller(cluster: Node) -> None:
    """The bridge CNI does not enforce NetworkPolicy; what can be proven here is that the
    installed policy's selectors pick the running hook pods and, as the only allowed peer,
    Metacontroller's pod in its namespace, on the port the hook listens on."""
    policy = cluster.get_in(HOOK_NAMESPACE, "networkpolicy", "mxjob-hook")
    assert policy is not None
    spec = policy["spec"]
    hooks = selected(cluster, "pods", HOOK_NAMESPACE, spec["podSelector"]["matchLabels"])
    assert hooks == sorted(f"pod/{p}" for p in cluster.hook_pods()), hooks
    ((rule,),) = [r["from"] for r in spec["ingress"]]
    namespaces = selected(cluster, "namespaces", None, rule["namespaceSelector"]["matchLabels"])
    assert namespaces == ["namespace/metacontroller"], namespaces
    peers = selected(cluster, "pods", "metacontroller", rule["podSelector"]["matchLabels"])
    assert peers == ["pod/metacontroller-0"], peers
    (port,) = [p["port"] for r in spec["ingress"] for p in r["ports"]]
    hook = cluster.get_in(HOOK_NAMESPACE, "pod", cluster.hook_pods()[0])
    assert hook is not None
    named = {
        p.get("name"): p["containerPort"]
        for c in hook["spec"]["containers"]
        for p in c.get("ports", [])
    }
    assert named.get(port) == 8080, named  # the named port resolves to what gunicorn listens on
    assert not spec.get("egress") and "Egress" in spec["policyTypes"]  # no peer at all


def test_no_pod_of_the_install_runs_best_effort(cluster: Node) -> None:
    """Every pod the install runs, Metacontroller's included (metacontroller/install), has a
    CPU request: on a busy node CPU goes by requests, and a BestEffort pod shares one slice
    with every MXNet pod that requests nothing and is evicted first under memory pressure."""
    found = {}
    for namespace in (HOOK_NAMESPACE, "metacontroller"):
        pods = json.loads(cluster.kubectl("get", "pods", "-n", namespace, "-o", "json").stdout)
        found.update({p["metadata"]["name"]: p["status"].get("qosClass") for p in pods["items"]})
    assert "metacontroller-0" in found and len(found) > 1, found
    assert {name for name, qos in found.items() if qos == "BestEffort"} == set(), found


def api(
    cluster: Node, token: str, method: str, path: str, body: dict[str, Any] | None = None
) -> tuple[int, dict[str, Any]]:
    """One call to the API server as the token's owner: (HTTP status, decoded body)."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(f"{cluster.stack.server}{path}", data=data, method=method)
    request.add_header("Authorization", f"Bearer {token}")
    if data is not None:
        content = "merge-patch+json" if method == "PATCH" else "json"
        request.add_header("Content-Type", f"application/{content}")
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        with urllib.request.urlopen(request, timeout=30, context=context) as response:
            return int(response.status), json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def token(cluster: Node, account: str, namespace: str) -> str:
    """A short-lived token of a ServiceAccount, as its pods get them."""
    out = cluster.kubectl("create", "token", account, "-n", namespace, "--duration=10m")
    return str(out.stdout.strip())


def test_ttl_controller_token_deletes_mxjobs_and_nothing_else(cluster: Node) -> None:
    """The TTL controller's token reads MXJobs and deletes them, nothing else; and (issue 37)
    the ValidatingAdmissionPolicy `mxjob-ttl-controller` refuses its delete of a job that runs,
    or finished without a TTL: once it could delete every job of every namespace."""
    ttl = token(cluster, "mxjob-ttl-controller", HOOK_NAMESPACE)
    jobs = f"/apis/kubeflow.org/v1/namespaces/{NAMESPACE}/mxjobs"
    expired = waiting_job(cluster, "expired", workers=1)
    expired["spec"]["runPolicy"] = {"ttlSecondsAfterFinished": 3600}
    cluster.apply(expired)
    assert api(cluster, ttl, "GET", "/apis/kubeflow.org/v1/mxjobs")[0] == 200
    assert api(cluster, ttl, "GET", f"{jobs}/expired")[0] == 200
    # Forbidden: the status, any other resource; a 403 decides before the object is looked at.
    assert api(cluster, ttl, "PATCH", f"{jobs}/expired/status", {"status": {}})[0] == 403
    code, body = api(
        cluster, ttl, "DELETE", "/api/v1/namespaces/metacontroller/pods/metacontroller-0"
    )
    assert code == 403, body
    assert cluster.stack.kubectl("get", "pod", "-n", "metacontroller", "metacontroller-0")
    assert api(cluster, ttl, "GET", f"/api/v1/namespaces/{HOOK_NAMESPACE}/secrets")[0] == 403
    assert api(cluster, ttl, "GET", f"/api/v1/namespaces/{NAMESPACE}/configmaps")[0] == 403
    assert api(cluster, ttl, "POST", f"{jobs}", waiting_job(cluster, "smuggled"))[0] == 403
    (pid,) = cluster.running_pids("expired", 1).values()
    code, refused = api(cluster, ttl, "DELETE", f"{jobs}/expired")
    assert (code, TTL_REFUSAL in refused.get("message", "")) == (403, True), refused
    cluster.finish(pid)
    cluster.wait_condition("expired", "Succeeded")
    assert api(cluster, ttl, "DELETE", f"{jobs}/expired")[0] == 200
    cluster.wait_gone("mxjob", "expired")


TTL_REFUSAL = (
    "the TTL controller may delete only a finished MXJob that sets ttlSecondsAfterFinished"
)


def test_retention_token_patches_mxjobs_and_claims_and_nothing_else(cluster: Node) -> None:
    """The retention component's token lists MXJobs and reads claims; its patches of a running
    job are refused by its ValidatingAdmissionPolicy, and everything else by RBAC: no get of a
    job, no delete, no create, no Secret, no pod."""
    retention = token(cluster, "mxjob-retention", HOOK_NAMESPACE)
    jobs = f"/apis/kubeflow.org/v1/namespaces/{NAMESPACE}/mxjobs"
    claims = f"/api/v1/namespaces/{NAMESPACE}/persistentvolumeclaims"
    cluster.apply(waiting_job(cluster, "guarded", workers=1))
    assert api(cluster, retention, "GET", "/apis/kubeflow.org/v1/mxjobs")[0] == 200
    assert api(cluster, retention, "GET", f"{claims}/none-checkpoint")[0] == 404
    code, refused = api(
        cluster, retention, "PATCH", f"{jobs}/guarded", {"spec": {"runPolicy": {"suspend": True}}}
    )
    assert (code, "the retention component may only" in refused.get("message", "")) == (
        403,
        True,
    ), refused
    for method, path in (
        ("GET", f"{jobs}/guarded"),
        ("DELETE", f"{jobs}/guarded"),
        ("DELETE", f"{claims}/none-checkpoint"),
        ("GET", f"/api/v1/namespaces/{HOOK_NAMESPACE}/secrets"),
        ("GET", f"/api/v1/namespaces/{NAMESPACE}/pods"),
    ):
        assert api(cluster, retention, method, path)[0] == 403, (method, path)
    assert api(cluster, retention, "POST", jobs, waiting_job(cluster, "smuggled"))[0] == 403


def test_metacontroller_stock_account_can_run_mxjobs(cluster: Node) -> None:
    """Metacontroller's own production RBAC is installed unchanged: it can do what the
    CompositeController needs, and (a finding for the docs) everything else too."""
    meta = token(cluster, "metacontroller", "metacontroller")
    assert api(cluster, meta, "GET", "/apis/kubeflow.org/v1/mxjobs")[0] == 200
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectRulesReview",
        "spec": {"namespace": NAMESPACE},
    }
    code, rules = api(
        cluster, meta, "POST", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", review
    )
    assert code == 201, rules
    broad = [
        r
        for r in rules["status"]["resourceRules"]
        if r["verbs"] == ["*"] and r["apiGroups"] == ["*"] and r["resources"] == ["*"]
    ]
    print(f"\nmetacontroller ServiceAccount: every verb on every resource: {bool(broad)}")


#: A Metacontroller ClusterRole built as its Helm chart's `clusterRole.aggregationRule` builds it.
LEAST = "mxjob-test-least-metacontroller"
AGGREGATE = {"rbac.metacontroller.k8s.io/aggregate-to-metacontroller": "true"}


@pytest.fixture
def least_privileged(cluster: Node) -> Iterator[str]:
    """A ServiceAccount bound to a ClusterRole that aggregates the mxjob rules, with the gang
    variants' PodGroup roles installed too (manifests/rbac/volcano, scheduler-plugins); its
    token. Everything is removed afterwards."""
    objects = [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": LEAST},
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": AGGREGATE}]},
        },
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": LEAST}},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": LEAST},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": LEAST,
            },
            "subjects": [{"kind": "ServiceAccount", "name": LEAST, "namespace": NAMESPACE}],
        },
    ]
    listed = json.dumps({"apiVersion": "v1", "kind": "List", "items": objects})
    gang = [str(REPO / "manifests" / "rbac" / v) for v in ("volcano", "scheduler-plugins")]
    try:
        cluster.apply(listed)
        for directory in gang:
            cluster.kubectl("apply", "-k", directory)
        yield token(cluster, LEAST, NAMESPACE)
    finally:
        cluster.kubectl("delete", "-n", NAMESPACE, "-f", "-", "--ignore-not-found", stdin=listed)
        for directory in gang:
            cluster.kubectl("delete", "-k", directory, "--ignore-not-found")


CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
MXJOBS_CRD = f"{CRDS}/mxjobs.kubeflow.org"
KEPT_TO = "the certificate keeper may change only the conversion webhook's caBundle"


def test_certificate_keeper_token_sets_the_ca_bundle_and_nothing_else(cluster: Node) -> None:
    """The keeper's token (issues 29 and 37): RBAC lets it read and patch the one CRD and its
    two Secrets, and create none: a service-account token Secret it created would be filled
    with the TTL controller's token. The ValidatingAdmissionPolicy `mxjob-certs` lets a patch
    change the caBundle alone, so the token cannot repoint the conversion webhook, store
    another version or mark the CRD."""
    keeper = token(cluster, "mxjob-certs", HOOK_NAMESPACE)
    secrets = f"/api/v1/namespaces/{HOOK_NAMESPACE}/secrets"
    for name in ("mxjob-convert-ca", "mxjob-convert-serving"):
        assert api(cluster, keeper, "GET", f"{secrets}/{name}")[0] == 200, name
    assert api(cluster, keeper, "GET", secrets)[0] == 403
    minted = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": "minted",
            "annotations": {"kubernetes.io/service-account.name": "mxjob-ttl-controller"},
        },
        "type": "kubernetes.io/service-account-token",
    }
    assert api(cluster, keeper, "POST", secrets, minted)[0] == 403
    assert (
        cluster.stack.kubectl(
            "get", "secret", "minted", "-n", HOOK_NAMESPACE, check=False
        ).returncode
        != 0
    )
    assert (
        api(cluster, keeper, "GET", f"{CRDS}/compositecontrollers.metacontroller.k8s.io")[0] == 403
    )
    assert api(cluster, keeper, "DELETE", MXJOBS_CRD)[0] == 403
    code, crd = api(cluster, keeper, "GET", MXJOBS_CRD)
    assert code == 200
    webhook = crd["spec"]["conversion"]["webhook"]
    versions = crd["spec"]["versions"]
    swapped = [{**v, "storage": v["name"] == "v1alpha1"} for v in versions]
    for patch in (
        {"spec": {"conversion": {"webhook": {"clientConfig": {"service": {"name": "evil"}}}}}},
        {"spec": {"versions": swapped}},
        {"metadata": {"labels": {"mxjob.test/owned": "yes"}}},
    ):
        code, refused = api(cluster, keeper, "PATCH", MXJOBS_CRD, patch)
        assert (code, KEPT_TO in refused.get("message", "")) == (403, True), (patch, refused)
    same = {
        "spec": {
            "conversion": {
                "webhook": {"clientConfig": {"caBundle": webhook["clientConfig"]["caBundle"]}}
            }
        }
    }
    assert api(cluster, keeper, "PATCH", MXJOBS_CRD, same)[0] == 200
    after = cluster.get("crd", "mxjobs.kubeflow.org")
    assert after is not None and after["spec"] == crd["spec"]


def allowed(cluster: Node, bearer: str, verb: str, group: str, resource: str) -> bool:
    """The authorizer's answer for the token's owner (SelfSubjectAccessReview)."""
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {
            "resourceAttributes": {
                "namespace": NAMESPACE,
                "verb": verb,
                "group": group,
                "resource": resource.partition("/")[0],
                "subresource": resource.partition("/")[2],
            }
        },
    }
    path = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
    code, body = api(cluster, bearer, "POST", path, review)
    assert code == 201, body
    return bool(body["status"]["allowed"])


def test_aggregated_role_grants_the_children_and_nothing_more(
    cluster: Node, least_privileged: str
) -> None:
    """manifests/rbac/metacontroller.yaml (and the gang PodGroup roles) through a real
    aggregation: every verb the CompositeController needs, and a 403 outside it."""
    bearer = least_privileged

    def aggregated() -> bool:
        role = cluster.get("clusterrole", LEAST) or {}
        groups = {g for rule in role.get("rules") or [] for g in rule["apiGroups"]}
        return {"kubeflow.org", "scheduling.volcano.sh", "scheduling.x-k8s.io"} <= groups

    wait_for("the aggregation controller to fill the role", aggregated, 60)
    assert api(cluster, bearer, "GET", "/apis/kubeflow.org/v1/mxjobs")[0] == 200
    dry = "?dryRun=All"
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "least-probe"},
        "spec": {"containers": [{"name": "c", "image": cluster.image("mxjob-base")}]},
    }
    for kind, obj in (
        ("pods", pod),
        (
            "services",
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": "least-probe"},
                "spec": {"ports": [{"port": 80}]},
            },
        ),
        (
            "configmaps",
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "least-probe"}},
        ),
        (
            "persistentvolumeclaims",
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": "least-probe"},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "1Mi"}},
                },
            },
        ),
    ):
        here = f"/api/v1/namespaces/{NAMESPACE}/{kind}"
        code, body = api(cluster, bearer, "POST", f"{here}{dry}", obj)
        assert code == 201, (kind, body)
        # Authorized, then not found: the delete was allowed to look.
        code, body = api(cluster, bearer, "DELETE", f"{here}/none{dry}")
        assert code == 404, (kind, body)
    for verb in ("get", "list", "watch", "update"):
        assert allowed(cluster, bearer, verb, "kubeflow.org", "mxjobs"), verb
    assert allowed(cluster, bearer, "update", "kubeflow.org", "mxjobs/status")
    # What Metacontroller v4.17.2 never calls (issue 29): patches of the job or its status, a
    # read of the status subresource, Events updated or of events.k8s.io.
    for verb, group, resource in (
        ("delete", "kubeflow.org", "mxjobs"),
        ("create", "kubeflow.org", "mxjobs"),
        ("patch", "kubeflow.org", "mxjobs"),
        ("patch", "kubeflow.org", "mxjobs/status"),
        ("get", "kubeflow.org", "mxjobs/status"),
        ("update", "", "events"),
        ("create", "events.k8s.io", "events"),
    ):
        assert not allowed(cluster, bearer, verb, group, resource), (verb, group, resource)
    assert allowed(cluster, bearer, "patch", "", "events")
    for group in ("scheduling.volcano.sh", "scheduling.x-k8s.io"):
        for verb in ("create", "delete", "watch"):
            assert allowed(cluster, bearer, verb, group, "podgroups"), (group, verb)
    # Outside the role: 403 from real calls.
    assert api(cluster, bearer, "GET", f"/api/v1/namespaces/{NAMESPACE}/secrets")[0] == 403
    deployments = f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments"
    assert api(cluster, bearer, "GET", deployments)[0] == 403
    assert api(cluster, bearer, "GET", "/api/v1/nodes")[0] == 403
    assert (
        api(cluster, bearer, "POST", f"/api/v1/namespaces/{NAMESPACE}/pods/x/eviction{dry}", {})[0]
        == 403
    )


#: What Metacontroller v4.17.2 needs for itself, aggregated beside the mxjob rules: it watches
#: its own controller kinds, CRDs and namespaces (the customize manager's informer, made even
#: without a customize hook), and keeps ControllerRevisions per parent.
OWN = "mxjob-test-metacontroller-own"
OWN_RULES = [
    {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "list", "watch"]},
    {
        "apiGroups": ["apiextensions.k8s.io"],
        "resources": ["customresourcedefinitions"],
        "verbs": ["get", "list", "watch"],
    },
    {
        "apiGroups": ["metacontroller.k8s.io"],
        "resources": ["compositecontrollers", "decoratorcontrollers"],
        "verbs": ["get", "list", "watch"],
    },
    {
        "apiGroups": ["metacontroller.k8s.io"],
        "resources": ["controllerrevisions"],
        "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"],
    },
]


@pytest.fixture
def metacontroller_least_privileged(cluster: Node, least_privileged: str) -> Iterator[str]:
    """Metacontroller itself bound to the aggregated role (plus OWN_RULES) instead of its stock
    allow-everything role, and restarted; its token. The stock binding is put back and
    Metacontroller restarted afterwards, pass or fail."""
    stock = cluster.get("clusterrolebinding", "metacontroller")
    assert stock is not None
    own = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": OWN, "labels": AGGREGATE},
        "rules": OWN_RULES,
    }
    least = {
        **stock,
        "metadata": {"name": "metacontroller"},
        "roleRef": {**stock["roleRef"], "name": LEAST},
    }
    try:
        cluster.apply(own)
        cluster.kubectl("delete", "clusterrolebinding", "metacontroller")
        cluster.apply(least)
        cluster.wait_metacontroller(cluster.stop_metacontroller())
        yield token(cluster, "metacontroller", "metacontroller")
    finally:
        cluster.kubectl("delete", "clusterrolebinding", "metacontroller", "--ignore-not-found")
        cluster.apply({**stock, "metadata": {"name": "metacontroller"}})
        cluster.kubectl("delete", "clusterrole", OWN, "--ignore-not-found")
        cluster.wait_metacontroller(cluster.stop_metacontroller())


@pytest.mark.alone("restarts Metacontroller with other rights: every job's syncs stop meanwhile")
def test_metacontroller_runs_a_job_with_only_the_aggregated_role(
    cluster: Node, metacontroller_least_privileged: str
) -> None:
    """The aggregated rules are enough: a job runs to Succeeded with Metacontroller refused
    everything else (a Secret read with its token is a 403), and nothing it tried was."""
    assert api(cluster, metacontroller_least_privileged, "GET", "/api/v1/secrets")[0] == 403
    cluster.apply(waiting_job(cluster, "frugal", workers=1))
    pids = cluster.running_pids("frugal", 1)
    cluster.wait_condition("frugal", "Running")
    cluster.finish(pids["frugal-worker-0"])
    cluster.wait_condition("frugal", "Succeeded")
    assert set(cluster.children("frugal")["services"]) == {"frugal-worker-0"}
    log = cluster.kubectl("logs", "-n", "metacontroller", "metacontroller-0").stdout
    refused = [line for line in log.splitlines() if "forbidden" in line.lower()]
    assert refused == [], [json.loads(line).get("error", line)[:300] for line in refused[:5]]
