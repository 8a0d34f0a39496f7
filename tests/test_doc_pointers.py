"""The documentation's pointers into the code stay true: every file or folder of the product
(`hooks/…`, `mxjob/…`) or of its support (`tests/…`, `tools/…`, `testsupport/…`, `bench/…`) it
names exists, and each function docs/restarts.md names beside a path (`path`
(`name`, …)) is defined there, so a newcomer following a rule lands on the code that carries
it out (issue 32)."""

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PAGES = sorted([REPO / "README.md", *(REPO / "docs").glob("*.md")])
PATH = re.compile(r"`((?:hooks|mxjob|tests|tools|testsupport|bench)/(?:[\w/.-]+\.py|[\w/-]*))`")
#: A path followed by a parenthesis naming its functions: `hooks/x.py` (`a`: …, `B.c`).
POINTER = re.compile(r"`(hooks/[\w/]+\.py)`\s*\(([^()]*)\)")
NAME = re.compile(r"`([A-Za-z_][\w.]*)`")


def _defined(path: Path) -> set[str]:
    """Top-level functions, classes and constants of a module, and `Class.method`s."""
    names: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        if isinstance(node, ast.ClassDef):
            names |= {f"{node.name}.{f.name}" for f in node.body if isinstance(f, ast.FunctionDef)}
        targets = node.targets if isinstance(node, ast.Assign) else []
        names |= {t.id for t in targets if isinstance(t, ast.Name)}
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_named_path_exists(page: Path) -> None:
    missing = sorted({p for p in PATH.findall(page.read_text()) if not (REPO / p).exists()})
    assert not missing, f"{page.name} names files that do not exist: {missing}"


def test_every_function_the_restart_rules_name_is_defined_there() -> None:
    text = (REPO / "docs" / "restarts.md").read_text()
    pointers = POINTER.findall(text)
    assert len(pointers) >= 14  # one per rule at least
    wrong = [
        f"{path}: {name}"
        for path, inside in pointers
        for name in NAME.findall(inside)
        if name not in _defined(REPO / path)
    ]
    assert not wrong, f"docs/restarts.md names what these files do not define: {wrong}"
