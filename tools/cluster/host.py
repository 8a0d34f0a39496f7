"""The machine a stack runs on, as the stack reads it: the Debian packages the real node needs
(installed by the prepare alone, never by a test run), whether this host can run a real node at
all, its processes in /proc and its cgroup hierarchies.

A test run that finds a package missing says which and names the prepare command
(`missing_message`); only `python3 -m tools.cluster prepare` (which `make test` runs before its
lanes, tools/testrun) calls apt-get (`install_packages`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from tools.cluster.build import BuildError, Log

#: Debian packages the real node needs, by the command or file that shows each is installed.
PACKAGES = {
    "containerd": "containerd",
    "runc": "runc",
    "iptables": "iptables",
    "conntrack": "conntrack",
    "mmdebstrap": "mmdebstrap",
    "buildah": "buildah",
    "nsenter": "util-linux",
    "gcc": "gcc",
    "/usr/lib/cni/bridge": "containernetworking-plugins",
}
#: What installs them: the prepare, or its one step that installs the packages alone.
PREPARE = "python3 -m tools.cluster prepare"
PACKAGES_STEP = "python3 -m tools.cluster step packages"


def missing_packages() -> list[str]:
    """Debian packages of PACKAGES whose command or file is missing."""
    missing = []
    for what, package in PACKAGES.items():
        found = Path(what).exists() if what.startswith("/") else shutil.which(what)
        if not found and package not in missing:
            missing.append(package)
    return missing


def missing_message(missing: list[str]) -> str:
    """Which packages a real node lacks and the command that installs them (as root)."""
    return (
        f"missing Debian packages: {' '.join(missing)}; `{PREPARE}` installs them with what"
        f" else the tiers need (`{PACKAGES_STEP}`: the packages alone)"
    )


def install_packages(log: Log) -> list[str]:
    """Install the missing packages with apt-get (root); those installed. The prepare's
    `packages` step alone calls this: a stack only checks (`missing_packages`)."""
    missing = missing_packages()
    if not missing:
        return missing
    log(
        f"installing Debian packages with apt-get: {' '.join(missing)}: the real node runs"
        " containerd, runc and CNI, and its images are built with mmdebstrap and buildah ..."
    )
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for argv in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", *missing]):
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise BuildError(f"{' '.join(argv[:2])} failed: {proc.stderr.strip()[-500:]}")
    return missing


def host_reason() -> str | None:
    """One line saying why this host cannot run a real node even once prepared, or None."""
    if os.uname().sysname != "Linux":
        return "the real-node tier runs on Linux only"
    if os.geteuid() != 0:
        return "the real-node tier needs root (containerd, the kubelet, network namespaces)"
    if not Path("/sys/fs/cgroup").is_dir():
        return "no cgroup filesystem at /sys/fs/cgroup"
    if missing_packages() and shutil.which("apt-get") is None:
        return f"missing Debian packages and no apt-get: {' '.join(missing_packages())}"
    return None


def pid_alive(pid: int) -> bool:
    """The process exists and is no zombie."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"  # zombies count as dead
    except (OSError, IndexError):
        return False


def pid_cmdline(pid: int) -> str:
    """The process's command line, its arguments joined by spaces ("" once it is gone)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def cgroup_hierarchies() -> list[Path]:
    """Mount points of the cgroup hierarchies (v1 controllers and the v2 unified one)."""
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        fstype = fields[fields.index("-") + 1]
        if fstype in ("cgroup", "cgroup2"):
            found.append(Path(fields[4]))
    return found
