"""Run a graph of commands side by side, each as soon as what it needs is done, and time them.

A `Step` is one command (a Go build, an image build, a lane of tests) with the steps it needs.
`run` starts every step whose needs have succeeded, at most `cpu_slots` CPU-bound and
`network_slots` network-bound at once, in the order given (the order is the priority; on two
cores three compiles at once fill the gaps a build leaves while it links, and niceness decides
who gets the CPU), and
never limits a step marked `unlimited` (a lane of tests). Each finished step is recorded with
its wall time and the CPU seconds of its process and everything it waited for (`os.wait4`), so
a figure taken on a busy machine can be told from one taken alone. Standard library only:
`python -m tools.cluster prepare` runs it before any virtual environment exists.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

Log = Callable[[str], None]

#: How a step uses the machine: the runner keeps a few of each kind running at once.
CPU, NETWORK, UNLIMITED = "cpu", "network", "unlimited"
#: A step's line saying what it did (`=> cached`), kept as its verdict rather than logged.
RESULT = "=> "


@dataclass(frozen=True)
class Step:
    """One command of the graph. `nice`: its niceness (0 for what the run waits on, more for
    what may yield the CPU to the tests running beside it)."""

    name: str
    argv: tuple[str, ...]
    needs: tuple[str, ...] = ()
    #: Steps it only follows: it runs once they ended, however they ended (a stack's stop).
    after: tuple[str, ...] = ()
    kind: str = CPU
    nice: int = 0
    env: dict[str, str] = field(default_factory=dict)
    #: Where its output goes; None: to the runner's log, line by line.
    output: Path | None = None
    #: Whether its failure ends the run at once (lint: nothing after it is worth waiting for).
    fatal: bool = False
    #: Exit statuses that mean success.
    ok_statuses: tuple[int, ...] = (0,)


@dataclass
class Done:
    """What became of a step: its exit status (None: never started), seconds and CPU seconds."""

    step: Step
    status: int | None = None
    started: float = 0.0
    wall: float = 0.0
    cpu: float = 0.0
    why_not: str = ""
    #: What the step said it did (its RESULT line), e.g. `built` or `cached`.
    verdict: str = ""

    @property
    def ok(self) -> bool:
        return self.status in self.step.ok_statuses


@dataclass
class Runner:
    """Runs `steps` (see the module's docstring); `run()` returns every step's `Done`."""

    steps: Sequence[Step]
    log: Log = print
    cpu_slots: int = 3
    network_slots: int = 3
    cwd: Path | None = None
    #: Called with each step's `Done` as it ends, or as it is given up (never run).
    on_done: Callable[[Done], None] = lambda done: None
    done: dict[str, Done] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _wake: threading.Event = field(default_factory=threading.Event)
    _procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    _aborted: str = ""
    start: float = 0.0

    def run(self) -> dict[str, Done]:
        names = {s.name for s in self.steps}
        for step in self.steps:
            unknown = {*step.needs, *step.after} - names
            if unknown:
                raise ValueError(f"step {step.name} needs unknown steps {sorted(unknown)}")
        waiting = list(self.steps)
        running: dict[str, Step] = {}
        threads: list[threading.Thread] = []
        self.start = time.monotonic()
        with _interruptible():
            try:
                self._loop(waiting, running, threads)
            except KeyboardInterrupt:
                self.abort("interrupted")
                for thread in threads:
                    thread.join()
                raise
            for thread in threads:
                thread.join()
        return self.done

    def _loop(
        self, waiting: list[Step], running: dict[str, Step], threads: list[threading.Thread]
    ) -> None:
        while waiting or running:
            self._wake.clear()
            with self._lock:
                for name in [n for n in running if n in self.done]:
                    del running[name]
                for step in list(waiting):
                    blocked = self._blocked(step)
                    if blocked:
                        waiting.remove(step)
                        self.done[step.name] = Done(step, why_not=blocked)
                        self.log(f"[{step.name}] not run: {blocked}")
                        self.on_done(self.done[step.name])
                    elif self._ready(step) and self._slot_free(step, running):
                        waiting.remove(step)
                        running[step.name] = step
                        thread = threading.Thread(target=self._run_one, args=(step,))
                        threads.append(thread)
                        thread.start()
            if waiting or running:
                self._wake.wait(1.0)

    def _blocked(self, step: Step) -> str:
        """Why a step cannot run any more (a need failed, or the run was aborted), or ''. A
        step that only follows others still runs once they ended: it cleans up after them."""
        if self._aborted and (step.needs or not step.after):
            return self._aborted
        failed = [n for n in step.needs if n in self.done and not self.done[n].ok]
        return f"{', '.join(failed)} failed" if failed else ""

    def _ready(self, step: Step) -> bool:
        return all(n in self.done for n in (*step.needs, *step.after))

    def _slot_free(self, step: Step, running: dict[str, Step]) -> bool:
        if step.kind == UNLIMITED:
            return True
        slots = self.cpu_slots if step.kind == CPU else self.network_slots
        return sum(1 for s in running.values() if s.kind == step.kind) < slots

    def _run_one(self, step: Step) -> None:
        record = Done(step, started=time.monotonic() - self.start)
        env = {**os.environ, **step.env}
        out = step.output.open("wb") if step.output else None
        argv = ["nice", "-n", str(step.nice), *step.argv] if step.nice else list(step.argv)
        try:
            # A session of its own: an abort reaches the step and every process it started.
            proc = subprocess.Popen(
                argv,
                cwd=self.cwd,
                env=env,
                stdout=out if out else subprocess.PIPE,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError as exc:
            record.status, record.why_not = 127, str(exc)
            self._finish(record)
            return
        with self._lock:
            self._procs[step.name] = proc
            if self._aborted and self._blocked(step):
                # Aborted while its process started: the abort's SIGINT went out before it.
                _interrupt(proc)
        if proc.stdout is not None:
            for raw in proc.stdout:
                line = raw.decode(errors="replace").rstrip()
                if line.startswith(RESULT):
                    record.verdict = line.removeprefix(RESULT)
                else:
                    self.log(f"[{step.name}] {line}")
            proc.stdout.close()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if out:
            out.close()
        record.status = proc.returncode
        record.wall = time.monotonic() - self.start - record.started
        record.cpu = usage.ru_utime + usage.ru_stime
        self._finish(record)

    def _finish(self, record: Done) -> None:
        step = record.step
        verdict = "done" if record.ok else f"FAILED (exit {record.status})"
        self.log(f"[{step.name}] {verdict} in {record.wall:.0f}s ({record.cpu:.0f} CPU s)")
        self.on_done(record)
        with self._lock:
            self.done[step.name] = record
            self._procs.pop(step.name, None)
        if step.fatal and not record.ok:
            self.abort(f"{step.name} failed")
        self._wake.set()

    def abort(self, why: str) -> None:
        """Start nothing more and interrupt what runs (SIGINT, as a terminal's Ctrl-C: pytest
        then tears its stacks down)."""
        with self._lock:
            if self._aborted:
                return
            self._aborted = why
            for proc in self._procs.values():
                _interrupt(proc)
        self._wake.set()


def _interrupt(proc: subprocess.Popen[bytes]) -> None:
    """SIGINT to a step's session, as a terminal's Ctrl-C (it may have ended meanwhile)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGINT)


@contextlib.contextmanager
def _interruptible() -> Iterator[None]:
    """SIGINT handled for the block where it came ignored (a shell without job control starts a
    background command so, and an ignored signal stays ignored through exec): the steps inherit
    the default, so the abort's SIGINT stops them (cold runs 4 and 5, started from such a shell,
    ran a step the abort should have stopped to its end)."""
    main = threading.current_thread() is threading.main_thread()
    if not main or signal.getsignal(signal.SIGINT) != signal.SIG_IGN:
        yield
        return
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def python(*args: str) -> tuple[str, ...]:
    """The argv of a module of this repository run by this interpreter."""
    return (sys.executable, *args)
