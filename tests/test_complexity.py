"""The decision core stays readable: no function of `hooks/core` reaches a cyclomatic complexity
of 15 (radon's measure, which counts every boolean operator and comprehension clause as a
branch). A function that grows past it is split into readers named after what they read."""

from pathlib import Path

from radon.complexity import cc_visit
from radon.visitors import Function

CORE = Path(__file__).resolve().parent.parent / "hooks" / "core"
#: Complexity 15 and over is where a function stops reading top-down (issue 32).
LIMIT = 15


def _functions(path: Path) -> list[Function]:
    found: list[Function] = []
    for block in cc_visit(path.read_text()):
        if isinstance(block, Function):
            found.append(block)
        else:  # a class: its methods
            found.extend(block.methods)
    return found


def test_every_core_function_is_under_the_limit() -> None:
    over = sorted(
        f"{path.relative_to(CORE)}:{block.lineno} {block.name} ({block.complexity})"
        for path in CORE.rglob("*.py")
        for block in _functions(path)
        if block.complexity >= LIMIT
    )
    assert not over, f"split these into smaller readers: {over}"


def test_the_measure_counts_what_it_should() -> None:
    """The limit means something: a function of 15 branches is caught."""
    branches = "\n".join(f"    if x == {i}:\n        return {i}" for i in range(14))
    (block,) = cc_visit(f"def f(x):\n{branches}\n    return -1\n")
    assert block.complexity == LIMIT
