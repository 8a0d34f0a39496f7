"""The side-by-side tables, in Markdown (docs/comparison.md holds one run's)."""

from __future__ import annotations

from collections.abc import Sequence

from bench.compare.large import Large
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


def large_table(names: tuple[str, str], results: tuple[Large, Large]) -> str:
    """The large job, side by side."""
    ours, theirs = results
    rows = [
        ("all pods Running (s after apply)", ours.all_running, theirs.all_running),
        ("Running condition (s after apply)", ours.job_running, theirs.job_running),
        (
            "controller's API requests",
            sum(ours.controller_requests.values()),
            sum(theirs.controller_requests.values()),
        ),
        (
            "API server requests, every client, watches aside",
            sum(ours.server_requests.values()),
            sum(theirs.server_requests.values()),
        ),
        ("controller CPU seconds", sum(ours.cpu.values()), sum(theirs.cpu.values())),
    ]
    lines = [
        f"| {ours.replicas} replicas | {names[0]} | {names[1]} | ratio |",
        "|---|---:|---:|---:|",
    ]
    for label, a, b in rows:
        lines.append(f"| {label} | {_number(a)} | {_number(b)} | {ratio(b, a)} |")
    details = [
        f"| by method: controller | {_counts(ours.controller_requests)} "
        f"| {_counts(theirs.controller_requests)} | |",
        f"| by verb: API server | {_counts(ours.server_requests)} "
        f"| {_counts(theirs.server_requests)} | |",
        f"| CPU by component | {_counts(ours.cpu)} | {_counts(theirs.cpu)} | |",
    ]
    return "\n".join(lines + details)


def _number(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.0f}" if isinstance(value, int) or value >= 100 else f"{value:.1f}"


def _counts(counts: dict[str, int] | dict[str, float]) -> str:
    return ", ".join(f"{k} {_number(v)}" for k, v in sorted(counts.items())) or "none"
