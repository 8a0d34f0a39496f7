"""The `mxjob` command: what the API server and the hook would make of MXJob files, offline
(docs/cli.md), the one step of a migration that needs the cluster (docs/migration.md), and the
user's loop over a cluster: submit, get, describe, wait, logs, delete (mxjob/jobs).

    mxjob convert [FILE]                 every MXJob as kubeflow.org/v1, as the API server stores it
    mxjob validate [FILE]                every problem the hook would find, each with its field path
    mxjob render [--gang GANG] [FILE]    the children the hook asks for when the job is created
    mxjob adopt [-n NS | -A] [--dry-run] label training-operator's children for Metacontroller
    mxjob get|describe|wait|logs|submit|delete ...   over the kubeconfig (mxjob/jobs/options.py)

FILE holds one or more YAML documents; `-` or none reads standard input. Exit status: 0 done,
1 a job that cannot be converted or is invalid, 2 a usage error or input that is no MXJob YAML
(`wait` has its own: docs/cli.md#wait). Every offline answer comes from the hook's pure core
(hooks/core), the same code that serves `POST /convert` and `POST /sync`.
"""

import argparse
import os
import shlex
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

import yaml

from hooks.adopt import adopt, kubectl_runner
from hooks.core.public import (
    KIND,
    V1,
    Gang,
    Job,
    Problem,
    UnconvertibleError,
    budget,
    clean,
    convert,
    dig,
    load,
    parse_request,
    sync,
    validate,
)
from mxjob.jobs import options as cluster_options

OK, PROBLEMS, USAGE = 0, 1, 2
GANGS = {"volcano": Gang.VOLCANO, "scheduler-plugins": Gang.SCHEDULER_PLUGINS}
#: What the hook is asked for a job Metacontroller has not created anything for yet.
CHILD_RESOURCES = [
    {"apiVersion": "v1", "resource": resource}
    for resource in ("pods", "services", "configmaps", "persistentvolumeclaims")
]
DEFAULT_NAMESPACE = "default"
#: The phase Volcano gives a PodGroup it admits; only then does the hook create the pods.
ADMITTED = "Inqueue"


class InputError(Exception):
    """Input that is no MXJob YAML: the command stops with exit status 2."""


class _Loader(yaml.SafeLoader):
    """YAML as the API server reads it: a timestamp stays the string it is in the file."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


@dataclass(frozen=True)
class Document:
    """One MXJob of the input: its place (1 for the first document) and the object."""

    number: int
    job: dict[str, Any]

    @property
    def title(self) -> str:
        """`document N (MXJob name, version)`, how every line about it begins."""
        name = _name(self.job) or "<no name>"
        return f"document {self.number} (MXJob {name}, {self.job.get('apiVersion')})"


def read(source: str) -> list[Document]:
    """Every MXJob of a file or of standard input (`-`); raises InputError for anything else."""
    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text()
        documents = list(yaml.load_all(text, Loader=_Loader))
    except OSError as exc:
        raise InputError(f"{source}: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        raise InputError(f"{source}: not YAML: {exc}") from exc
    found = []
    for number, document in enumerate(documents, 1):
        if document is None:  # an empty document, such as after a final `---`
            continue
        if not isinstance(document, dict) or document.get("kind") != KIND:
            raise InputError(f"{source}: document {number} is {_what(document)}, not an MXJob")
        found.append(Document(number, document))
    if not found:
        raise InputError(f"{source}: holds no MXJob")
    return found


def _what(document: object) -> str:
    if isinstance(document, dict):
        kind, version = document.get("kind"), document.get("apiVersion")
        return f"a {kind} ({version})" if kind else "an object without a kind"
    if isinstance(document, list):
        return "a list"
    return f"a {type(document).__name__} ({str(document)[:40]!r})"


def _as_v1(document: Document) -> dict[str, Any]:
    """The job as the API server stores it; raises UnconvertibleError."""
    return convert(document.job, V1)


def _name(job: dict[str, Any]) -> str | None:
    name = dig(job, "metadata", "name")
    return name if isinstance(name, str) and name else None


def _problems(job: dict[str, Any]) -> list[Problem]:
    """Every problem the hook finds in a v1 job: reading its spec, then the whole-job rules,
    then its answer against the default budget (a hook may be given another)."""
    name = _name(job)
    spec, problems = load(job.get("spec"))
    if name is None:
        return [Problem("metadata.name", "is required"), *problems]
    if spec is not None:
        problems = validate(name, spec)
    if spec is not None and not problems:
        read = Job(name, "default", spec, gang=None, created=None, spec_changed=None)
        problems = budget.problems(read, budget.DEFAULT)
    return problems


def _dump(objects: list[dict[str, Any]], out: TextIO) -> None:
    yaml.safe_dump_all(objects, out, sort_keys=False, allow_unicode=True, width=100)


def run_convert(documents: list[Document], out: TextIO, err: TextIO) -> int:
    """Every document at v1; none is written when one cannot be converted."""
    converted, status = [], OK
    for document in documents:
        try:
            converted.append(_as_v1(document))
        except UnconvertibleError as exc:
            print(f"{document.title}: cannot be converted to {V1}: {exc}", file=err)
            status = PROBLEMS
    if status == OK:
        _dump(converted, out)
    return status


def run_validate(documents: list[Document], out: TextIO) -> int:
    """A line per problem (`document: path: rule`), or that the job is valid."""
    status = OK
    for document in documents:
        try:
            problems = _problems(_as_v1(document))
        except UnconvertibleError as exc:
            problems = [Problem(exc.path, str(exc).removeprefix(f"{exc.path}: "))]
        read_as = "" if document.job.get("apiVersion") == V1 else f" read as {V1}"
        for problem in problems:
            print(f"{document.title}{read_as}: {problem}", file=out)
        if not problems:
            print(f"{document.title}: valid", file=out)
        status = max(status, PROBLEMS if problems else OK)
    return status


def checked(documents: list[Document], err: TextIO) -> list[dict[str, Any]] | None:
    """Every job at v1, or None when one cannot be converted or is invalid; each problem is
    told on `err`, naming its document."""
    jobs, status = [], OK
    for document in documents:
        try:
            job = _as_v1(document)
        except UnconvertibleError as exc:
            print(f"{document.title}: cannot be converted to {V1}: {exc}", file=err)
            status = PROBLEMS
            continue
        problems = _problems(job)
        for problem in problems:
            print(f"{document.title}: {problem}", file=err)
        if problems:
            status = PROBLEMS
        jobs.append(job)
    return jobs if status == OK else None


def submittable(source: str, err: TextIO) -> list[dict[str, Any]] | None:
    """`mxjob submit`'s reader: the file's jobs at v1, checked as `render` checks them."""
    return checked(read(source), err)


def run_render(documents: list[Document], out: TextIO, err: TextIO, gang: Gang | None) -> int:
    """The children the hook asks for at each job's first sync (under Volcano: once the gang
    is admitted, when it creates the pods), as YAML; an invalid job gets its problems."""
    jobs = checked(documents, err)
    if jobs is None:
        return PROBLEMS
    _dump([child for job in jobs for child in _first_children(job, gang)], out)
    return OK


def _first_children(job: dict[str, Any], gang: Gang | None) -> list[dict[str, Any]]:
    metadata = {"namespace": DEFAULT_NAMESPACE, **job["metadata"]}
    parent = {**job, "metadata": metadata}
    resources = list(CHILD_RESOURCES)
    if gang is not None:
        resources.append({"apiVersion": gang.api_version, "resource": "podgroups"})
    controller = {"spec": {"childResources": resources}}
    now = datetime.now(UTC)
    first = sync(parse_request({"parent": parent, "controller": controller}), now)
    groups = [c for c in first.children if c["kind"] == "PodGroup"]
    if gang is not Gang.VOLCANO or not groups:
        return first.children
    admitted = {**groups[0], "status": {"phase": ADMITTED}}
    observed = {gang.value: {admitted["metadata"]["name"]: admitted}}
    parent = {**parent, "status": first.status}
    body = {"parent": parent, "children": observed, "controller": controller}
    return sync(parse_request(body), now).children


def parser() -> argparse.ArgumentParser:
    """The command line: a command, its FILE, and --gang for render."""
    top = argparse.ArgumentParser(
        prog="mxjob",
        description="What the API server and the mxjob hook make of MXJob files, offline; "
        "and MXJobs in a cluster: submit, get, describe, wait, logs, delete.",
        epilog="Exit status: 0 done, 1 a job that cannot be converted or is invalid (or a "
        "cluster command that failed), 2 a usage error or input that is no MXJob YAML; wait: "
        "0 reached, 1 ended otherwise, 2 cannot read the job, 3 timed out (docs/cli.md).",
    )
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    helps = {
        "convert": f"print every MXJob as {V1}, as the API server stores it",
        "validate": "print every problem the hook finds, with its field path",
        "render": "print the Pods, Services and ConfigMaps the hook asks for at creation",
    }
    for name, text in helps.items():
        command = commands.add_parser(name, help=text, description=text[0].upper() + text[1:] + ".")
        command.add_argument(
            "file",
            nargs="?",
            default="-",
            metavar="FILE",
            help="YAML of one or more MXJobs of any served version; - or none: standard input",
        )
        if name == "render":
            command.add_argument(
                "--gang",
                choices=sorted(GANGS),
                help="the install variant's gang scheduler: add its PodGroup",
            )
    _adopt_parser(commands)
    cluster_options.add_parsers(commands)
    return top


def _adopt_parser(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    text = (
        "label the pods, Services and PodGroups training-operator made for each MXJob with "
        "controller-uid=<job uid>, so Metacontroller takes them over as they are "
        "(docs/migration.md); the one command that talks to a cluster, through kubectl"
    )
    short = "label training-operator's children so Metacontroller takes them over"
    command = commands.add_parser("adopt", help=short, description=text + ".")
    scope = command.add_mutually_exclusive_group(required=True)
    scope.add_argument("-n", "--namespace", help="the MXJobs of this namespace")
    scope.add_argument("-A", "--all-namespaces", action="store_true", help="every MXJob")
    command.add_argument("--dry-run", action="store_true", help="say what would be labelled")
    command.add_argument(
        "--kubectl",
        default="kubectl",
        help="the kubectl command to run, with its options (default: kubectl)",
    )


def run_adopt(arguments: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Label every job's children; a line per job, or kubectl's words and status 1, each
    cleaned of what a terminal would interpret (the cluster's names and words)."""
    kubectl = kubectl_runner(shlex.split(arguments.kubectl))
    try:
        lines = adopt(kubectl, arguments.namespace, dry_run=arguments.dry_run)
    except (RuntimeError, OSError) as exc:
        print(f"mxjob adopt: {clean(str(exc))}", file=err)
        return PROBLEMS
    print(*map(clean, lines), sep="\n", file=out)
    return OK


def main(argv: list[str] | None = None) -> int:
    """Run one command; the exit status."""
    arguments = parser().parse_args(argv)
    if arguments.command == "adopt":
        return run_adopt(arguments, sys.stdout, sys.stderr)
    if arguments.command in cluster_options.COMMANDS:
        # Imported to run one: the Kubernetes client takes a second the offline ones never pay.
        from mxjob.jobs import commands  # noqa: PLC0415

        try:
            return commands.run(arguments, submittable)
        except InputError as exc:
            print(f"mxjob: {exc}", file=sys.stderr)
            return USAGE
    try:
        documents = read(arguments.file)
    except InputError as exc:
        print(f"mxjob: {exc}", file=sys.stderr)
        return USAGE
    out, err = sys.stdout, sys.stderr
    try:
        if arguments.command == "convert":
            return run_convert(documents, out, err)
        if arguments.command == "validate":
            return run_validate(documents, out)
        return run_render(documents, out, err, GANGS.get(arguments.gang))
    except BrokenPipeError:
        # The reader went away (`mxjob render job.yaml | head`): stop without a traceback, and
        # without another one when Python flushes standard output on its way out.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return PROBLEMS


if __name__ == "__main__":
    sys.exit(main())
