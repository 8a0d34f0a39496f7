"""The timing table a prepare and a test run end with: each step's wall time and CPU seconds, and
how busy the machine was, so a figure taken on a loaded machine can be told from one taken
alone (docs/testing.md, "Budgets")."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from tools.steps import Done

#: Clock ticks per second of /proc/stat.
TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Machine:
    """The machine's CPU counters at one moment (/proc/stat), and its load average."""

    at: float
    busy: float
    niced: float
    total: float
    load: float

    @classmethod
    def now(cls) -> Machine:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        user, nice, system, idle, iowait, irq, softirq, steal = (fields + [0] * 8)[:8]
        load = float(Path("/proc/loadavg").read_text().split()[0])
        return cls(
            at=time.monotonic(),
            busy=(user + system + irq + softirq + steal) / TICKS,
            niced=nice / TICKS,
            total=(user + nice + system + idle + iowait + irq + softirq + steal) / TICKS,
            load=load,
        )


def machine_line(start: Machine, end: Machine) -> str:
    """How busy the whole machine was between two samples, in cores (every process, ours and
    others'): a run alone shows about what its own steps spent, a shared machine more."""
    cores = os.cpu_count() or 1
    seconds = max(end.at - start.at, 1e-9)
    busy = (end.busy - start.busy) / seconds
    niced = (end.niced - start.niced) / seconds
    return (
        f"machine: {cores} cores; busy {busy:.2f} cores at normal priority and {niced:.2f} niced"
        f" on average ({(busy + niced) / cores:.0%}); load average {start.load:.2f} at the start,"
        f" {end.load:.2f} at the end"
    )


def minutes(seconds: float) -> str:
    """`12m05s`, or `41.2s` under a minute."""
    if seconds < 60:
        return f"{seconds:.1f}s"
    return f"{int(seconds // 60)}m{int(seconds % 60):02d}s"


def minutes_clock(seconds: float) -> str:
    """`12:05`: minutes and seconds, for the start of a log line."""
    return f"{int(seconds // 60):02d}:{int(seconds % 60):02d}"


def render(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    """Rows under a header, columns padded (text left, figures right)."""
    table = [list(header), *(list(r) for r in rows)]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    lines = []
    for row in table:
        cells = [
            cell.ljust(w) if i == 0 or not cell[:1].isdigit() else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  ".join(cells).rstrip())
    return lines


def built_in_run(cache: Path, since: float) -> dict[str, dict[str, float]]:
    """The components built since `since` (a wall-clock time) by whoever built them (a prepare
    step, or a test that needed one first): their stamps' wall and CPU seconds."""
    found = {}
    for stamp in cache.glob("*/built.json"):
        try:
            data = json.loads(stamp.read_text())
            at = datetime.strptime(data["built_at"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        except (OSError, ValueError, KeyError):
            continue
        if at.timestamp() >= since - 1:
            found[str(data["component"])] = {
                "seconds": float(data.get("seconds", 0)),
                "cpu": float(data.get("cpu_seconds", 0)),
            }
    return found


def step_rows(done: dict[str, Done], built: dict[str, dict[str, float]]) -> list[list[str]]:
    """One row per step, in the order they began: what it did, when it began, its wall time
    and CPU seconds (steps that never ran last)."""
    rows = []
    order = sorted(done.items(), key=lambda item: (item[1].status is None, item[1].started))
    for name, record in order:
        if record.status is None:
            rows.append([name, f"not run: {record.why_not}", "", "", ""])
            continue
        did = record.verdict or ("done" if record.ok else f"FAILED ({record.status})")
        component = name.removeprefix("build-")
        if name.startswith("build-") and did == "cached" and component in built:
            figures = built[component]
            did = f"built by a test ({minutes(figures['seconds'])}, {figures['cpu']:.0f} CPU s)"
        rows.append([name, did, minutes(record.started), minutes(record.wall), f"{record.cpu:.0f}"])
    return rows


STEP_HEADER = ("step", "did", "began", "wall", "CPU s")


def table(
    done: dict[str, Done], cache: Path, began: float, start: Machine, end: Machine
) -> list[str]:
    """The table of a run that began at wall-clock time `began`: its steps, then the whole
    run's wall time and how busy the machine was."""
    lines = ["", "== timing " + "=" * 70]
    lines += render(STEP_HEADER, step_rows(done, built_in_run(cache, began)))
    lines.append(f"whole run: {minutes(end.at - start.at)}")
    lines.append(machine_line(start, end))
    return lines
