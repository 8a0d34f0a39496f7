"""The product stays readable: no function of it reaches a cyclomatic complexity of 15 (radon's
measure, which counts every boolean operator and comprehension clause as a branch). A function
that grows past it is split into readers named after what they read.

The product is what the project ships: the packages pyproject.toml installs (`hooks`, the hook
with its HTTP adapter; `mxjob`, the command, the cluster commands and the components), which
the image copies too. `tests/`, `testsupport/`, `bench/` and `tools/` are not product: they
check, measure and drive it from the source tree, and are never installed or run by a user."""

import ast
import tomllib
from pathlib import Path

from radon.visitors import ComplexityVisitor, Function

ROOT = Path(__file__).resolve().parent.parent
#: Complexity 15 and over is where a function stops reading top-down (issue 32).
LIMIT = 15


def product() -> list[Path]:
    """The folders of the packages the distribution installs (pyproject.toml's
    `packages.find` include, without the patterns that add their subpackages)."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    include = pyproject["tool"]["setuptools"]["packages"]["find"]["include"]
    return [ROOT / name for name in include if "*" not in name]


def functions(source: str) -> list[Function]:
    """Every function of a module, each measured alone: methods, nested functions (radon
    counts none of their branches in the function around them) and those of nested classes."""
    return [
        ComplexityVisitor.from_ast(node).functions[0]
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    ]


def test_every_product_function_is_under_the_limit() -> None:
    over = sorted(
        f"{path.relative_to(ROOT)}:{block.lineno} {block.name} ({block.complexity})"
        for package in product()
        for path in package.rglob("*.py")
        for block in functions(path.read_text())
        if block.complexity >= LIMIT
    )
    assert not over, f"split these into smaller readers: {over}"


def test_the_product_is_the_hook_and_the_mxjob_package() -> None:
    assert [path.name for path in product()] == ["hooks", "mxjob"]
    assert all(path.is_dir() for path in product())


def test_the_measure_counts_what_it_should() -> None:
    """The limit means something: a function of 15 branches is caught, where it stands at the
    top of a module, inside another function or as a method of a class inside a class."""
    branches = "\n".join(f"    if x == {i}:\n        return {i}" for i in range(14))
    (block,) = functions(f"def f(x):\n{branches}\n    return -1\n")
    assert block.complexity == LIMIT
    inner = "\n".join("    " + line for line in f"def g(x):\n{branches}\n    return -1".split("\n"))
    nested = functions(f"def f(x):\n{inner}\n    return g(x)\n")
    assert [(b.name, b.complexity) for b in nested] == [("f", 1), ("g", LIMIT)]
    method = "\n".join("        " + line for line in f"def m(x):\n{branches}".split("\n"))
    (deep,) = functions(f"class A:\n    class B:\n{method}\n")
    assert (deep.name, deep.complexity) == ("m", LIMIT)
