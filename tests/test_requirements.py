"""The locks (`make lock`) agree with their sources: every direct pin of requirements*.in is in
requirements*.txt at the same version, and every locked package carries hashes, so that pip
installs in hash-checking mode (docs/testing.md#dependencies)."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)", re.MULTILINE)
LOCKS = {
    "requirements.in": "requirements.txt",
    "requirements-dev.in": "requirements-dev.txt",
    "requirements-sdk.in": "requirements-sdk.txt",
}


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(path: Path) -> dict[str, str]:
    """`name: version` of every `name==version` line (names normalised as pip does)."""
    return {_normal(name): version for name, version in PIN.findall(path.read_text())}


def sources(path: Path) -> dict[str, str]:
    """The pins of a .in file and of the .in files it includes with `-r`."""
    found = pins(path)
    for included in re.findall(r"^-r\s+(\S+)", path.read_text(), re.MULTILINE):
        found |= sources(path.parent / included)
    return found


@pytest.mark.parametrize(("source", "lock"), LOCKS.items())
def test_every_direct_pin_is_locked_at_its_version(source: str, lock: str) -> None:
    locked = pins(ROOT / lock)
    stale = {n: v for n, v in sources(ROOT / source).items() if locked.get(n) != v}
    assert not stale, f"{source} and {lock} disagree on {stale}: run `make lock`"


@pytest.mark.parametrize("lock", LOCKS.values())
def test_every_locked_package_has_hashes(lock: str) -> None:
    entries = re.split(r"\n(?=\S)", (ROOT / lock).read_text())
    packages = [e for e in entries if PIN.match(e)]
    assert packages
    assert all("--hash=sha256:" in e for e in packages)


def test_the_dev_lock_keeps_the_runtime_pins() -> None:
    runtime, dev = pins(ROOT / "requirements.txt"), pins(ROOT / "requirements-dev.txt")
    assert {n: dev.get(n) for n in runtime} == runtime
