"""What installing mxjob puts into an environment: only names that are ours at the top level.

Four names the project once installed (`events`, `certs`, `ttl`, `component`) belong to other
PyPI projects, and two distributions that install one name break each other. The wheel is built
from this tree and installed into a fresh virtual environment (offline, without dependencies);
what appears in its site-packages is read from the disk, not from our own packaging config."""

import shutil
import subprocess
import sys
import venv
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
#: The top-level import names the distribution may create (pyproject.toml's packages.find).
OURS = {"hooks", "mxjob"}
SHOW_FILES = "import hooks, mxjob; print(hooks.__file__, mxjob.__file__)"


def _site_packages(env: Path) -> Path:
    (found,) = (env / "lib").glob("python3*/site-packages")
    return found


def _top_level(site: Path) -> set[str]:
    """Importable top-level names of a site-packages: packages, modules and extension modules."""
    names = set()
    for entry in site.iterdir():
        if entry.suffix in {".dist-info", ".pth"} or entry.name == "__pycache__":
            continue
        names.add(entry.name.split(".", 1)[0] if entry.is_file() else entry.name)
    return names


def _source(into: Path) -> Path:
    """A copy of what the build reads, so that building leaves no egg-info in the checkout."""
    skip = shutil.ignore_patterns("__pycache__", "*.egg-info")
    for folder in ("hooks", "mxjob"):
        shutil.copytree(REPO / folder, into / folder, ignore=skip)
    shutil.copy(REPO / "pyproject.toml", into / "pyproject.toml")
    return into


def test_installing_the_project_adds_only_hooks_and_mxjob(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
         "--wheel-dir", str(tmp_path / "dist"), str(_source(tmp_path / "src"))],
        check=True,
    )  # fmt: skip
    (wheel,) = (tmp_path / "dist").glob("mxjob-*.whl")
    env = tmp_path / "env"
    venv.EnvBuilder(with_pip=True).create(env)
    before = _top_level(_site_packages(env))
    subprocess.run(
        [env / "bin" / "python", "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
         "--disable-pip-version-check", str(wheel)],
        check=True,
    )  # fmt: skip
    added = _top_level(_site_packages(env)) - before
    assert added == OURS
    assert (env / "bin" / "mxjob").is_file()
    # What is imported is the installed copy, not this tree (its dependencies are not installed
    # here: the packages' own modules load them).
    shown = subprocess.run(
        [env / "bin" / "python", "-c", SHOW_FILES],
        cwd=tmp_path, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert all(path.startswith(str(env)) for path in shown.stdout.split())
