"""The side-by-side tables, in Markdown (docs/comparison.md holds one run's)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

from bench.compare.large import Large
from bench.compare.many import Many
from bench.compare.play import Outcome
from bench.compare.scenarios import Scenario


def cell(outcome: Outcome) -> str:
    """What one controller did with a scenario, in a table cell: the latest condition (with its
    message when it is not a success or a plain state), the conditions it went through, the
    pods left and made again, and what the test noted on the way."""
    refused = outcome.final == "refused by kubectl apply"
    parts = [f"**{outcome.final}**"]
    if outcome.message and not refused and outcome.final.split("/")[0] in ("Failed", "Restarting"):
        parts[0] += f": {_short(outcome.message)}"
    if refused:
        parts.append(_short(outcome.message, 220))
    if outcome.path:
        parts.append(" → ".join(outcome.path))
    left = ", ".join(f"{n} {phase}" for phase, n in sorted(outcome.left.items())) or "none"
    extra = [f"pods left: {left}"]
    if outcome.replaced:
        extra.append(f"{outcome.replaced} made again")
    if outcome.restarts:
        extra.append(f"{outcome.restarts} in-place restarts")
    parts.append("; ".join(extra))
    parts += [_short(note, 220) for note in outcome.notes]
    return "<br>".join(p.replace("|", "\\|") for p in parts)


def _short(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _seconds(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def ratio(theirs: float | None, ours: float | None) -> str:
    """`theirs / ours` as `1.5x` ('—' when either is missing)."""
    if theirs is None or ours is None or ours <= 0:
        return "—"
    return f"{theirs / ours:.1f}x"


def scenario_table(
    scenarios: Sequence[Scenario], names: tuple[str, str], results: Sequence[dict[str, Outcome]]
) -> str:
    """One row per scenario: what each controller did, the time from the test's last action
    to the outcome, and the median time from an exit to the job's next status write."""
    ours, theirs = results
    lines = [
        f"| scenario | what the test does | {names[0]} | {names[1]} | outcome s | ratio "
        "| exit → status ms | ratio |",
        "|---|---|---|---|---:|---:|---:|---:|",
    ]
    for scenario in scenarios:
        a, b = ours.get(scenario.name), theirs.get(scenario.name)
        if a is None or b is None:
            continue
        lines.append(
            f"| `{scenario.name}` | {scenario.checks} | {cell(a)} | {cell(b)} "
            f"| {_seconds(a.seconds)} / {_seconds(b.seconds)} | {ratio(b.seconds, a.seconds)} "
            f"| {_ms(a.answer)} / {_ms(b.answer)} | {ratio(b.answer, a.answer)} |"
        )
    return "\n".join(lines)


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value * 1000:.0f}"


def large_table(columns: Sequence[tuple[str, Large]]) -> str:
    """The large job side by side: each of mxjob's Service modes, then the peer, and the peer's
    time over each of mxjob's."""
    return _side_by_side(
        f"{columns[0][1].replicas} replicas",
        _labelled(columns),
        [
            ("all pods Running (s after apply)", lambda r: r.all_running),
            ("Running condition (s after apply)", lambda r: r.job_running),
        ],
    )


def many_table(columns: Sequence[tuple[str, Many]]) -> str:
    """Many jobs at once, side by side as the large job."""
    first = columns[0][1]
    return _side_by_side(
        f"{first.jobs} jobs of {first.replicas} replicas",
        _labelled(columns),
        [
            ("every pod Running (s after apply)", lambda r: r.all_running),
            ("every job's Running condition (s after apply)", lambda r: r.jobs_running),
        ],
    )


class _Measured(Protocol):
    services: str
    controller_requests: dict[str, int]
    server_requests: dict[str, int]
    cpu: dict[str, float]


_R = TypeVar("_R", bound=_Measured)


def _labelled(columns: Sequence[tuple[str, _R]]) -> list[tuple[str, _R]]:
    """mxjob's columns named by Service mode; the peer (last) by its name alone."""
    return [(f"{name} {r.services}", r) for name, r in columns[:-1]] + [columns[-1]]


def _side_by_side(
    title: str,
    columns: Sequence[tuple[str, _R]],
    times: Sequence[tuple[str, Callable[[_R], float | None]]],
) -> str:
    """One column per measurement, the last the peer's; a ratio column per other one (the
    peer's figure over it: above 1, mxjob faster or leaner)."""
    names = [name for name, _ in columns]
    peer = columns[-1][1]
    rows: list[tuple[str, Callable[[_R], float | None]]] = [
        *times,
        ("objects written (the controller's POSTs)", lambda r: r.controller_requests.get("POST")),
        ("controller's API requests", lambda r: sum(r.controller_requests.values())),
        (
            "API server requests, every client, watches aside",
            lambda r: sum(r.server_requests.values()),
        ),
        ("controller CPU seconds", lambda r: sum(r.cpu.values())),
    ]
    ratios = [f"ratio to {n.rsplit(' ', 1)[-1]}" for n in names[:-1]]
    lines = [
        f"| {title} | {' | '.join(names)} | {' | '.join(ratios)} |",
        "|---|" + "---:|" * (len(names) + len(ratios)),
    ]
    for label, value in rows:
        cells = [_number(value(r)) for _, r in columns]
        quotients = [ratio(value(peer), value(r)) for _, r in columns[:-1]]
        lines.append(f"| {label} | {' | '.join(cells)} | {' | '.join(quotients)} |")
    blank = " |" * len(ratios)
    details: list[tuple[str, Callable[[_R], dict[str, int] | dict[str, float]]]] = [
        ("by method: controller", lambda r: r.controller_requests),
        ("by verb: API server", lambda r: r.server_requests),
        ("CPU by component", lambda r: r.cpu),
    ]
    for label, counts in details:
        cells = [_counts(counts(r)) for _, r in columns]
        lines.append(f"| {label} | {' | '.join(cells)} |{blank}")
    return "\n".join(lines)


def _number(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.0f}" if isinstance(value, int) or value >= 100 else f"{value:.1f}"


def _counts(counts: dict[str, int] | dict[str, float]) -> str:
    return ", ".join(f"{k} {_number(v)}" for k, v in sorted(counts.items())) or "none"
