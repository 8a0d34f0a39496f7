"""The cluster commands of `mxjob` and their options (docs/cli.md); mxjob/jobs/commands.py
runs them.

    mxjob get      [NAME...] [-A] [-o json|yaml]       jobs: state, replicas, restarts, age
    mxjob describe NAME [-o json|yaml]                 the job's story and its last failure
    mxjob wait     NAME [--for STATE] [--timeout T]    until Succeeded, Failed or Running
    mxjob logs     NAME [--replica R] [-f]             every replica's log, prefixed
    mxjob submit   -f FILE [--wait] [--logs]           check, create, and wait or follow
    mxjob delete   NAME... [--no-wait]                 delete with every child, and wait

Each takes `-n NAMESPACE`, `--context` and `--kubeconfig` as kubectl does.
"""

import argparse
import re
from typing import Any

from mxjob.jobs.replicas import ReplicaFilter
from mxjob.jobs.waiting import Goal

_DURATION = re.compile(r"^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+(?:\.\d+)?)s?)?$")

COMMANDS = {
    "get": "list jobs: state, replicas active/succeeded/failed, restarts, age, message",
    "describe": "tell a job's story: conditions, replicas and their pods, the last failure, Events",
    "wait": "wait until a job is Succeeded (or Failed, or Running); exit 1 with the reason if "
    "it ends otherwise",
    "logs": "print every replica's log, each line prefixed with its replica; -f follows them "
    "through restarts",
    "submit": "check a job file as validate does, create its jobs, and optionally wait or follow",
    "delete": "delete jobs with their pods, Services and ConfigMaps, and wait until they are gone",
}


def namespace_refused(jobs: list[dict[str, Any]], given: str | None) -> str | None:
    """Why `submit -n NS` refuses a file, as kubectl does (`RequireNamespace`, its words): a job
    whose own namespace is another than the one `-n` named. Without `-n`, each job goes to its
    own namespace, or else to the context's."""
    if given is None:
        return None
    for job in jobs:
        metadata = job.get("metadata")
        own = metadata.get("namespace") if isinstance(metadata, dict) else None
        if own and own != given:
            return (
                f'the namespace from the provided object "{own}" does not match the namespace '
                f"\"{given}\". You must pass '--namespace={own}' to perform this operation."
            )
    return None


def _duration(text: str) -> float:
    """Seconds of `90`, `90s`, `10m`, `1h30m`."""
    found = _DURATION.match(text.strip())
    if not text.strip() or found is None:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (e.g. 90s, 10m, 1h30m)")
    hours, minutes, seconds = (float(g) if g else 0.0 for g in found.groups())
    return hours * 3600 + minutes * 60 + seconds


def add_parsers(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """The cluster commands and their options."""
    connection = argparse.ArgumentParser(add_help=False)
    connection.add_argument("-n", "--namespace", help="the namespace (default: the context's)")
    connection.add_argument("--context", help="the kubeconfig context to use")
    connection.add_argument(
        "--kubeconfig", help="the kubeconfig file (default: $KUBECONFIG, ~/.kube/config)"
    )
    parsers = {
        name: commands.add_parser(
            name, help=text, description=text[0].upper() + text[1:] + ".", parents=[connection]
        )
        for name, text in COMMANDS.items()
    }
    get = parsers["get"]
    get.add_argument("names", nargs="*", metavar="NAME", help="these jobs only")
    get.add_argument("-A", "--all-namespaces", action="store_true", help="jobs of every namespace")
    get.add_argument("-o", "--output", choices=["json", "yaml"], help="for scripts")
    describe = parsers["describe"]
    describe.add_argument("name", metavar="NAME")
    describe.add_argument("-o", "--output", choices=["json", "yaml"], help="for scripts")
    wait = parsers["wait"]
    wait.add_argument("name", metavar="NAME")
    _wait_options(wait)
    logs = parsers["logs"]
    logs.add_argument("name", metavar="NAME")
    logs.add_argument(
        "--replica", type=ReplicaFilter, help="one replica (worker-1) or one type (worker)"
    )
    logs.add_argument(
        "-f", "--follow", action="store_true", help="follow, through restarts, until it ends"
    )
    submit = parsers["submit"]
    submit.add_argument(
        "-f", "--filename", required=True, metavar="FILE", help="YAML of MXJobs; - for stdin"
    )
    submit.add_argument("--wait", action="store_true", help="then wait (as `wait` does)")
    submit.add_argument("--logs", action="store_true", help="then follow its logs to its end")
    _wait_options(submit)
    delete = parsers["delete"]
    delete.add_argument("names", nargs="+", metavar="NAME")
    delete.add_argument("--no-wait", action="store_true", help="return once deletion began")
    delete.add_argument(
        "--timeout", type=_duration, default=300.0, help="how long to wait (default 5m)"
    )


def _wait_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--for",
        dest="goal",
        type=Goal,
        default=Goal.SUCCEEDED,
        choices=list(Goal),
        help="the state to wait for (default Succeeded)",
    )
    parser.add_argument(
        "--timeout", type=_duration, help="give up after this long (90s, 10m, 2h; default never)"
    )
