"""What each cluster command of `mxjob` does (docs/cli.md); their options are in
mxjob/jobs/options.py. Imported only to run one: the Kubernetes client takes a second to load,
which the offline commands do not pay."""

import argparse
import json
import os
import shutil
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TextIO

import yaml

from hooks.core.public import dig, unsafe
from mxjob.jobs import view
from mxjob.jobs.api import WATCH_SECONDS, Cluster, ClusterError
from mxjob.jobs.follow import Following, print_logs
from mxjob.jobs.options import namespace_refused
from mxjob.jobs.replicas import Replica
from mxjob.jobs.waiting import CANNOT_READ, REACHED, TIMED_OUT, Goal, Verdict, verdict

OK, FAILED, USAGE = 0, 1, 2
#: Ctrl-C, as a shell reports a command it interrupted.
INTERRUPTED = 130
#: What `submit` is given to read a file: every MXJob of it at v1, or None when one is invalid
#: (each problem told on the stream given). mxjob/cli.py's reader, the same as `validate`'s.
Reader = Callable[[str, TextIO], list[dict[str, Any]] | None]


class Terminal:
    """Where a command writes, and how: colours and the terminal's width only on a terminal."""

    def __init__(self, out: TextIO, err: TextIO) -> None:
        self.out, self.err = out, err
        tty = out.isatty()
        colours = tty and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"
        self.paint = view.Paint(on=colours)
        self.width = shutil.get_terminal_size().columns if tty else None

    def lines(self, lines: list[str]) -> None:
        self.out.write("".join(f"{line}\n" for line in lines))

    def data(self, value: Any, output: str) -> None:
        """`-o json` or `-o yaml`: the values as they are, any character a terminal would act
        on written escaped (`\\u001b` in JSON; YAML then escapes every non-ASCII one)."""
        self.out.write(data_text(value, output))


def data_text(value: Any, output: str) -> str:
    """`value` as JSON or YAML text holding no character a terminal acts on: those in JSON
    strings written as `\\uXXXX`, and YAML written with every non-ASCII character escaped
    when the values hold one (both read back as the same values)."""
    if output == "json":
        text = json.dumps(value, indent=2, ensure_ascii=False)
        if not _printable(text):
            text = "".join(_escaped(c) if c != "\n" and unsafe(c) else c for c in text)
        return text + "\n"
    text = yaml.safe_dump(value, sort_keys=False, allow_unicode=True, width=100)
    if not _printable(text) and any(unsafe(c) for c in text if c != "\n"):
        text = yaml.safe_dump(value, sort_keys=False, allow_unicode=False, width=100)
    return text


def _printable(text: str) -> bool:
    """Whether the lines of `text` are plain printable text (checked in C): the usual output,
    which needs no character looked at one by one."""
    return text.replace("\n", "").isprintable()


def _escaped(char: str) -> str:
    """A character as a JSON string escape (a UTF-16 surrogate pair beyond the first plane)."""
    code = ord(char)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def run(arguments: argparse.Namespace, reader: Reader) -> int:
    """Run one cluster command; its exit status."""
    term = Terminal(sys.stdout, sys.stderr)
    command = arguments.command
    try:
        cluster = Cluster(arguments.kubeconfig, arguments.context, arguments.namespace)
        runner = {
            "get": run_get,
            "describe": run_describe,
            "wait": run_wait,
            "logs": run_logs,
            "delete": run_delete,
        }.get(command)
        if runner is not None:
            return runner(cluster, arguments, term)
        return run_submit(cluster, arguments, term, reader)
    except ClusterError as exc:
        print(f"mxjob {command}: {view.safe(exc)}", file=term.err)
        return CANNOT_READ if command == "wait" else FAILED
    except KeyboardInterrupt:
        return INTERRUPTED


def _now() -> datetime:
    return datetime.now(UTC)


def run_get(cluster: Cluster, arguments: argparse.Namespace, term: Terminal) -> int:
    """A table of jobs (or their summaries as JSON or YAML)."""
    found = asked_jobs(cluster, arguments.names, term, every_namespace=arguments.all_namespaces)
    summaries = sorted(map(view.summarize, found), key=lambda s: (s.namespace, s.name))
    now = _now()
    if arguments.output:
        term.data({"items": [s.as_json(now) for s in summaries]}, arguments.output)
    elif summaries:
        term.lines(
            view.job_table(
                summaries, now, term.paint, term.width, namespaces=arguments.all_namespaces
            )
        )
    elif not arguments.names:
        where = "any namespace" if arguments.all_namespaces else f"namespace {cluster.namespace}"
        print(f"No MXJobs in {where}.", file=term.err)
    return OK if len(found) >= len(arguments.names) else FAILED


def asked_jobs(
    cluster: Cluster, names: list[str], term: Terminal, *, every_namespace: bool
) -> list[dict[str, Any]]:
    """The jobs `get` is asked for: each one named, from the namespace (those missing told);
    else every job of the namespace (of all, with `every_namespace`), those named only."""
    if names and not every_namespace:
        jobs = [cluster.job(name) for name in names]
        for name, job in zip(names, jobs, strict=True):
            if job is None:
                _missing(cluster, name, "get", term)
        return [j for j in jobs if j is not None]
    found = cluster.jobs(every_namespace=every_namespace)
    return [j for j in found if dig(j, "metadata", "name") in names] if names else found


def _job(cluster: Cluster, name: str, command: str, term: Terminal) -> dict[str, Any] | None:
    job = cluster.job(name)
    if job is None:
        _missing(cluster, name, command, term)
    return job


def _missing(cluster: Cluster, name: str, command: str, term: Terminal) -> None:
    """Tell that the command found no job `name`."""
    print(f"mxjob {command}: no MXJob {name} in namespace {cluster.namespace}", file=term.err)


def run_describe(cluster: Cluster, arguments: argparse.Namespace, term: Terminal) -> int:
    """The job's story."""
    job = _job(cluster, arguments.name, "describe", term)
    if job is None:
        return FAILED
    pods, events, now = cluster.pods(arguments.name), cluster.events(arguments.name), _now()
    if arguments.output:
        term.data(view.description_json(job, pods, events, now), arguments.output)
    else:
        term.lines(view.describe(job, pods, events, now, term.paint, term.width))
    return OK


def run_wait(cluster: Cluster, arguments: argparse.Namespace, term: Terminal) -> int:
    """Until the state asked for, or an end that rules it out, or the timeout."""
    return wait_for(cluster, arguments.name, arguments.goal, arguments.timeout, term)


def wait_for(cluster: Cluster, name: str, goal: Goal, timeout: float | None, term: Terminal) -> int:
    """Watch the job until `verdict` decides or `timeout` seconds pass; say why, exit status
    of docs/cli.md#wait."""
    job = _job(cluster, name, "wait", term)
    if job is None:
        return CANNOT_READ
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        found = verdict(name, job, goal)
        if found is not None:
            return _told(found, term)
        left = WATCH_SECONDS if deadline is None else deadline - time.monotonic()
        if left <= 0:
            state = view.safe(view.summarize(job).state)
            print(f"mxjob/{name}: still {state} after {timeout:g}s, not {goal}", file=term.err)
            return TIMED_OUT
        since = str(dig(job, "metadata", "resourceVersion") or "")
        for job in cluster.watch_job(name, since, min(left, WATCH_SECONDS)):
            if job is None or verdict(name, job, goal) is not None:
                break
        else:
            job = cluster.job(name)


def _told(found: Verdict, term: Terminal) -> int:
    """Print the verdict's lines (on stdout when the goal is reached, else on stderr); its exit
    status."""
    stream = term.out if found.status == REACHED else term.err
    stream.write("".join(f"{line}\n" for line in found.lines))
    return found.status


def run_logs(cluster: Cluster, arguments: argparse.Namespace, term: Terminal) -> int:
    """Every chosen replica's log; followed with -f."""
    picked: Callable[[Replica], bool] = arguments.replica or (lambda replica: True)
    if _job(cluster, arguments.name, "logs", term) is None:
        return FAILED
    if arguments.follow:
        _followed(cluster, arguments.name, picked, term)
        return OK
    if not print_logs(cluster, arguments.name, picked, term.out, term.paint):
        print(f"mxjob logs: no started pod of {arguments.name} to read", file=term.err)
    return OK


def run_submit(
    cluster: Cluster, arguments: argparse.Namespace, term: Terminal, reader: Reader
) -> int:
    """Check the file's jobs; create them; then wait for one, or follow its logs to its end."""
    jobs = submittable(arguments.filename, arguments.namespace, term, reader)
    if jobs is None:
        return FAILED
    if (arguments.wait or arguments.logs) and len(jobs) != 1:
        print("mxjob submit: --wait and --logs take a file of one job", file=term.err)
        return USAGE
    names = [created(cluster, job, term) for job in jobs]
    term.out.flush()
    if arguments.logs:
        last = _followed(cluster, names[0], lambda replica: True, term)
        found = verdict(names[0], last, arguments.goal)
        if found is not None:
            return _told(found, term)
        return wait_for(cluster, names[0], arguments.goal, arguments.timeout, term)
    if arguments.wait:
        return wait_for(cluster, names[0], arguments.goal, arguments.timeout, term)
    return OK


def submittable(
    filename: str, namespace: str | None, term: Terminal, reader: Reader
) -> list[dict[str, Any]] | None:
    """The file's jobs at v1, or None (each problem told, and that nothing was created) when one
    is invalid or names another namespace than the one given (`-n`)."""
    jobs = reader(filename, term.err)
    refused = None if jobs is None else namespace_refused(jobs, namespace)
    if refused is not None:
        print(f"mxjob submit: {view.safe(refused)}", file=term.err)
    if jobs is None or refused is not None:
        print("mxjob submit: nothing was created", file=term.err)
        return None
    return jobs


def created(cluster: Cluster, job: dict[str, Any], term: Terminal) -> str:
    """Create the job and say where; its name. The command's namespace becomes the job's: where
    `--wait` and `--logs` look for it (and where a later job of the file naming none goes)."""
    made = cluster.create(job)
    name = str(dig(made, "metadata", "name"))
    namespace = dig(made, "metadata", "namespace")
    print(f"mxjob/{view.safe(name)} created in namespace {view.safe(namespace)}", file=term.out)
    cluster.namespace = str(namespace or cluster.namespace)
    return name


def _followed(
    cluster: Cluster, name: str, picked: Callable[[Replica], bool], term: Terminal
) -> dict[str, Any] | None:
    """Follow the picked replicas' logs until the job has finished and they are drained; the
    job's last version (None if it is gone)."""
    following = Following(cluster, name, picked, term.out, term.paint)
    try:
        return following.run()
    finally:
        following.close()


def run_delete(cluster: Cluster, arguments: argparse.Namespace, term: Terminal) -> int:
    """Delete each job in the foreground, saying what goes with it; wait until all are gone."""
    status, deleting = OK, []
    for name in arguments.names:
        if _job(cluster, name, "delete", term) is None:
            status = FAILED
            continue
        counts = cluster.count(name)
        cluster.delete(name)
        children = ", ".join(f"{n} {kind}" for kind, n in counts.items())
        print(f"mxjob/{name} deleted, with {children}", file=term.out)
        deleting.append(name)
    term.out.flush()
    deadline = time.monotonic() + arguments.timeout
    while deleting and not arguments.no_wait:
        deleting = [name for name in deleting if cluster.job(name) is not None]
        if deleting and time.monotonic() > deadline:
            still = ", ".join(deleting)
            print(f"mxjob delete: still there after {arguments.timeout:g}s: {still}", file=term.err)
            return FAILED
        time.sleep(0.5 if deleting else 0)
    return status
