"""The `mxjob` command (docs/cli.md): table tests of each command's output and exit status, the
input it refuses, and the console script `make venv` installs."""

import io
import json
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest
import yaml

from hooks.adopt import adopt
from hooks.core.conversion.review import convert
from mxjob import cli
from tests.conversion_cases import OLD_EXAMPLES, stored
from tests.manifest_support import BAD_EXAMPLES, EXAMPLES, expectations

PROPOSAL = OLD_EXAMPLES / "v1alpha1_proposal.yaml"
TUNE = OLD_EXAMPLES / "v1alpha2_mx_job_tune_gpu.yaml"
GOOD = sorted(EXAMPLES.glob("*.yaml")) + sorted(OLD_EXAMPLES.glob("*.yaml"))
REFUSED_BY_HOOK = [p for p in sorted(BAD_EXAMPLES.glob("*.yaml")) if expectations(p, "hook")]


def mxjob(
    args: list[str], stdin: str = "", monkeypatch: pytest.MonkeyPatch | None = None
) -> tuple[int, str, str]:
    """Run the command as its console script does: exit status, standard output and error."""
    out, err = io.StringIO(), io.StringIO()
    patch = monkeypatch or pytest.MonkeyPatch()
    with patch.context() as scoped:
        scoped.setattr(sys, "stdin", io.StringIO(stdin))
        scoped.setattr(sys, "stdout", out)
        scoped.setattr(sys, "stderr", err)
        status = cli.main(args)
    return status, out.getvalue(), err.getvalue()


def documents(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d is not None]


def old_job(**spec: Any) -> str:
    """The design proposal's v1alpha1 job with spec fields replaced, as YAML."""
    job = yaml.safe_load(PROPOSAL.read_text())
    job["spec"].update(spec)
    return yaml.safe_dump(job)


# --- convert -------------------------------------------------------------------------------


def test_convert_prints_the_job_as_the_api_server_stores_it() -> None:
    status, out, err = mxjob(["convert", str(PROPOSAL)])
    assert (status, err) == (0, "")
    (converted,) = documents(out)
    assert converted == convert(yaml.safe_load(PROPOSAL.read_text()), "kubeflow.org/v1")
    assert converted["spec"]["mxReplicaSpecs"]["Scheduler"]["restartPolicy"] == "OnFailure"


def test_convert_reads_every_document_of_standard_input_in_order() -> None:
    v1 = (EXAMPLES / "mx_job_dist_cpu.yaml").read_text()
    text = "\n---\n".join([PROPOSAL.read_text(), v1, TUNE.read_text(), ""])
    status, out, _ = mxjob(["convert"], stdin=text)
    assert status == 0
    converted = documents(out)
    assert [d["metadata"]["name"] for d in converted] == [
        "example-dist-job",
        "example-dist-job",
        "auto-tuning-job",
    ]
    assert {d["apiVersion"] for d in converted} == {"kubeflow.org/v1"}
    assert converted[1] == yaml.safe_load(v1)  # already v1: as it is


def test_convert_keeps_timestamps_as_they_are_written() -> None:
    """YAML would read `2018-08-10T07:13:39Z` as a date; the API server keeps the string."""
    text = yaml.safe_dump(stored(yaml.safe_load(PROPOSAL.read_text())))
    status, out, _ = mxjob(["convert", "-"], stdin=text)
    assert status == 0
    assert "creationTimestamp: '2018-08-10T07:13:39Z'" in out


def test_convert_writes_nothing_when_a_job_cannot_be_converted() -> None:
    twice = [{"mxReplicaType": "WORKER"}, {"mxReplicaType": "WORKER"}]
    text = PROPOSAL.read_text() + "---\n" + old_job(replicaSpecs=twice)
    status, out, err = mxjob(["convert"], stdin=text)
    assert (status, out) == (1, "")
    assert err == (
        "document 2 (MXJob example-dist-job, kubeflow.org/v1alpha1): cannot be converted to "
        "kubeflow.org/v1: spec.replicaSpecs[1].mxReplicaType: WORKER appears twice; v1 holds one "
        "spec per type\n"
    )


# --- validate ------------------------------------------------------------------------------


@pytest.mark.parametrize("path", GOOD, ids=[p.name for p in GOOD])
def test_every_example_is_valid(path: Path) -> None:
    status, out, _ = mxjob(["validate", str(path)])
    assert status == 0
    assert out.endswith(": valid\n")


@pytest.mark.parametrize("path", REFUSED_BY_HOOK, ids=[p.name for p in REFUSED_BY_HOOK])
def test_every_job_the_hook_refuses_is_invalid(path: Path) -> None:
    status, out, _ = mxjob(["validate", str(path)])
    assert status == 1
    for line in out.splitlines():
        problem = line.split("kubeflow.org/v1): ", 1)[1]
        assert problem.startswith(("spec.", "metadata.name: ")), line


VALIDATE = [
    (
        "a problem of an old job, at its v1 path",
        old_job(
            replicaSpecs=[{"mxReplicaType": "SERVER", "template": {"spec": {"containers": []}}}]
        ),
        [
            "document 1 (MXJob example-dist-job, kubeflow.org/v1alpha1) read as kubeflow.org/v1: "
            "spec.mxReplicaSpecs.Server.template.spec.containers: must list at least one container",
        ],
    ),
    (
        "whole-job rules",
        old_job(
            replicaSpecs=[
                {
                    "mxReplicaType": "SERVER",
                    "template": {"spec": {"containers": [{"name": "mxnet", "image": "mx"}]}},
                }
            ]
        ),
        [
            "document 1 (MXJob example-dist-job, kubeflow.org/v1alpha1) read as kubeflow.org/v1: "
            "spec.mxReplicaSpecs.Scheduler: is required when Servers are present",
            "document 1 (MXJob example-dist-job, kubeflow.org/v1alpha1) read as kubeflow.org/v1: "
            "spec.mxReplicaSpecs.Worker: at least 1 replica is required: MXTrain needs Workers",
        ],
    ),
    (
        "a job v1 cannot hold",
        old_job(replicaSpecs=[{"mxReplicaType": "PS"}]),
        [
            "document 1 (MXJob example-dist-job, kubeflow.org/v1alpha1) read as kubeflow.org/v1: "
            "spec.replicaSpecs[0].mxReplicaType: 'PS' is not a v1alpha1 replica type: SCHEDULER, "
            "SERVER or WORKER",
        ],
    ),
    (
        "no name",
        "apiVersion: kubeflow.org/v1\nkind: MXJob\nspec: {mxReplicaSpecs: {}}\n",
        [
            "document 1 (MXJob <no name>, kubeflow.org/v1): metadata.name: is required",
            "document 1 (MXJob <no name>, kubeflow.org/v1): spec.mxReplicaSpecs: must list at "
            "least one replica type",
        ],
    ),
]


@pytest.mark.parametrize(("text", "want"), [c[1:] for c in VALIDATE], ids=[c[0] for c in VALIDATE])
def test_validate_names_each_problem_and_its_path(text: str, want: list[str]) -> None:
    status, out, _ = mxjob(["validate"], stdin=text)
    assert (status, out.splitlines()) == (1, want)


def test_validate_goes_on_after_an_invalid_job() -> None:
    text = old_job(replicaSpecs=[{"mxReplicaType": "PS"}]) + "---\n" + PROPOSAL.read_text()
    status, out, _ = mxjob(["validate"], stdin=text)
    assert status == 1
    assert (
        out.splitlines()[-1] == "document 2 (MXJob example-dist-job, kubeflow.org/v1alpha1): valid"
    )


# --- render --------------------------------------------------------------------------------


def rendered(args: list[str]) -> list[dict[str, Any]]:
    status, out, err = mxjob(["render", *args])
    assert (status, err) == (0, "")
    return documents(out)


def env(pod: dict[str, Any]) -> dict[str, str]:
    (container,) = pod["spec"]["containers"]
    return {var["name"]: var.get("value", "") for var in container["env"]}


def test_render_lists_what_the_hook_creates_for_an_old_job() -> None:
    children = rendered([str(PROPOSAL)])
    names = [(c["kind"], c["metadata"]["name"]) for c in children]
    assert names == [
        ("ConfigMap", "example-dist-job-mxjob-config"),
        ("Pod", "example-dist-job-scheduler-0"),
        ("Service", "example-dist-job-scheduler-0"),
        ("Pod", "example-dist-job-server-0"),
        ("Service", "example-dist-job-server-0"),
        ("Pod", "example-dist-job-worker-0"),
        ("Service", "example-dist-job-worker-0"),
    ]
    pods = [c for c in children if c["kind"] == "Pod"]
    # PsRootPort 9000 of the SCHEDULER is DMLC_PS_ROOT_PORT, as it was under v1alpha1.
    assert {env(pod)["DMLC_PS_ROOT_PORT"] for pod in pods} == {"9000"}
    assert {c["metadata"]["namespace"] for c in children} == {"default"}


def test_render_puts_the_old_label_into_mx_config() -> None:
    (config,) = [c for c in rendered([str(TUNE)]) if c["kind"] == "ConfigMap"]
    assert json.loads(config["data"]["labels"])["tunerserver"] == "2080ti"


@pytest.mark.parametrize(
    ("gang", "api_version", "scheduler"),
    [
        ("volcano", "scheduling.volcano.sh/v1beta1", "volcano"),
        ("scheduler-plugins", "scheduling.x-k8s.io/v1alpha1", "scheduler-plugins-scheduler"),
    ],
)
def test_render_with_a_gang_adds_its_pod_group(gang: str, api_version: str, scheduler: str) -> None:
    """Under Volcano the pods come once the group is admitted; they are shown as they will be."""
    children = rendered(["--gang", gang, str(PROPOSAL)])
    (group,) = [c for c in children if c["kind"] == "PodGroup"]
    assert (group["apiVersion"], group["spec"]["minMember"]) == (api_version, 3)
    pods = [c for c in children if c["kind"] == "Pod"]
    assert len(pods) == 3
    assert {pod["spec"]["schedulerName"] for pod in pods} == {scheduler}


def test_render_of_an_invalid_job_prints_its_problems_and_no_children() -> None:
    server = {
        "mxReplicaType": "SERVER",
        "template": {"spec": {"containers": [{"name": "mxnet", "image": "mx"}]}},
    }
    status, out, err = mxjob(["render"], stdin=old_job(replicaSpecs=[server]))
    assert (status, out) == (1, "")
    assert "spec.mxReplicaSpecs.Scheduler: is required when Servers are present" in err


# --- input that is no MXJob YAML, and usage ------------------------------------------------

REFUSED_INPUT = [
    ("not YAML", "a: [", "-: not YAML: "),
    (
        "a Service",
        "apiVersion: v1\nkind: Service\n",
        "-: document 1 is a Service (v1), not an MXJob",
    ),
    (
        "the second document",
        PROPOSAL.read_text() + "---\nkind: ConfigMap\napiVersion: v1\n",
        "-: document 2 is a ConfigMap (v1), not an MXJob",
    ),
    (
        "an object without kind",
        "metadata: {name: x}\n",
        "-: document 1 is an object without a kind",
    ),
    ("a list", "- kind: MXJob\n", "-: document 1 is a list, not an MXJob"),
    ("a word", "MXJob\n", "-: document 1 is a str ('MXJob'), not an MXJob"),
    ("nothing", "---\n", "-: holds no MXJob"),
]


@pytest.mark.parametrize("command", ["convert", "validate", "render"])
@pytest.mark.parametrize(
    ("text", "message"), [c[1:] for c in REFUSED_INPUT], ids=[c[0] for c in REFUSED_INPUT]
)
def test_input_that_is_no_mxjob_yaml_is_a_usage_error(
    command: str, text: str, message: str
) -> None:
    status, out, err = mxjob([command], stdin=text)
    assert (status, out) == (2, "")
    assert err.startswith(f"mxjob: {message}")


def test_a_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    status, _, err = mxjob(["validate", str(tmp_path / "job.yaml")])
    assert status == 2
    assert err == f"mxjob: {tmp_path / 'job.yaml'}: No such file or directory\n"


@pytest.mark.parametrize(
    "args", [[], ["apply"], ["render", "--gang", "kueue"], ["convert", "a", "b"]], ids=str
)
def test_usage_errors_exit_2(args: list[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        mxjob(args)
    assert stopped.value.code == 2


def test_the_console_script_runs_main() -> None:
    """`make venv` installs the project, so `.venv/bin/mxjob` is this command."""
    (script,) = entry_points(group="console_scripts", name="mxjob")
    assert script.load() is cli.main


def test_the_command_runs_as_a_process() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mxjob.cli", "validate", str(PROPOSAL)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == "document 1 (MXJob example-dist-job, kubeflow.org/v1alpha1): valid\n"


def test_a_reader_that_stops_early_gets_no_traceback() -> None:
    """`mxjob convert jobs.yaml | head`: the command stops quietly when the pipe closes."""
    jobs = "---\n".join([PROPOSAL.read_text()] * 300)  # far more than a pipe holds
    command = [sys.executable, "-m", "mxjob.cli", "convert"]
    with subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as process:
        assert process.stdin and process.stdout and process.stderr
        process.stdin.write(jobs.encode())
        process.stdin.close()
        assert process.stdout.read(100).startswith(b"apiVersion: kubeflow.org/v1")
        process.stdout.close()
        assert process.wait(timeout=60) == 1
        assert process.stderr.read() == b""


# --- adopt (docs/migration.md; proven against a real cluster in tests/realnode/test_migration.py)


def _owned(name: str, uid: str, **labels: str) -> dict[str, Any]:
    refs = [{"kind": "MXJob", "name": "mnist", "uid": uid, "controller": True}]
    return {"metadata": {"name": name, "labels": labels, "ownerReferences": refs}}


class FakeCluster:
    """What kubectl answers about one MXJob's children, and the labels it was asked to add."""

    def __init__(self, served: tuple[str, ...] = ("pods", "services")) -> None:
        self.served = served
        self.labelled: list[list[str]] = []
        self.items = {
            "pods": [
                _owned("mnist-worker-0", "u1"),
                _owned("mnist-worker-1", "u1", **{"controller-uid": "u1"}),  # done already
                _owned("other-worker-0", "u2"),  # another job's
            ],
            "services": [_owned("mnist-worker-0", "u1")],
        }

    def __call__(self, args: list[str]) -> str:
        if args[:2] == ["get", "mxjobs"]:
            job = {"metadata": {"namespace": "ns", "name": "mnist", "uid": "u1"}}
            return json.dumps({"items": [job]})
        if args[0] == "get":
            if args[1] not in self.served:
                raise RuntimeError(f'error: the server doesn\'t have a resource type "{args[1]}"')
            return json.dumps({"items": self.items.get(args[1], [])})
        self.labelled.append(args)
        return ""


def test_adopt_labels_only_the_jobs_own_unlabelled_children() -> None:
    fake = FakeCluster()
    (line,) = adopt(fake, "ns", dry_run=False)
    assert line == "ns/mnist: labelled 1 pods, 1 services controller-uid=u1"
    assert fake.labelled == [
        ["label", "pods", "-n", "ns", "mnist-worker-0", "controller-uid=u1"],
        ["label", "services", "-n", "ns", "mnist-worker-0", "controller-uid=u1"],
    ]


def test_adopt_dry_run_labels_nothing() -> None:
    fake = FakeCluster()
    (line,) = adopt(fake, "ns", dry_run=True)
    assert line.startswith("ns/mnist: would label 1 pods, 1 services")
    assert fake.labelled == []


def test_adopt_needs_a_namespace_or_all() -> None:
    with pytest.raises(SystemExit) as usage:
        mxjob(["adopt"])
    assert usage.value.code == cli.USAGE


@pytest.mark.parametrize("kubectl", ["false", "/nonexistent/kubectl"])
def test_adopt_says_what_kubectl_could_not_do(kubectl: str) -> None:
    status, out, err = mxjob(["adopt", "-A", "--kubectl", kubectl])
    assert (status, out) == (cli.PROBLEMS, "")
    assert err.startswith("mxjob adopt: "), err


def test_adopt_prints_kubectls_words_clean() -> None:
    """kubectl's error quotes what the cluster said: printed on one line, nothing a terminal
    acts on."""
    script = "sh -c 'printf \"\\033]0;owned\\007no\\033[2J\\nway\" >&2; exit 1' --"
    status, out, err = mxjob(["adopt", "-A", "--kubectl", script])
    assert (status, out) == (cli.PROBLEMS, "")
    assert "\x1b" not in err and "\x07" not in err
    assert err.rstrip("\n").endswith("no way"), repr(err)
