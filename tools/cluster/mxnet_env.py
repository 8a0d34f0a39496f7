"""A Python environment with MXNet 1.9.1 on the host, for the rejoin harness
(`testsupport/process_cluster.py`): real ps-lite processes without a cluster.

The same pins as the real-node tier's MXNet image (`images/mxnet.Dockerfile`): mxnet 1.9.1 and
numpy below 1.24 (mxnet 1.9.1 still uses `np.bool`); the wheel links libgomp and libquadmath,
which the host has or the node tier's host packages bring.
"""

import subprocess
import sys
from pathlib import Path

from tools.cluster.build import Log, heartbeat, locked

PACKAGES = ("mxnet==1.9.1", "numpy<1.24")


def home(cache: Path) -> Path:
    return cache / "mxnet-venv"


def python(cache: Path) -> Path | None:
    """The environment's interpreter once it is ready, else None."""
    stamp = home(cache) / "ready"
    exe = home(cache) / "bin" / "python"
    return exe if stamp.is_file() and stamp.read_text() == " ".join(PACKAGES) else None


def prepare(cache: Path, log: Log) -> Path:
    """Create the environment once (about a minute: a 50 MB wheel); its interpreter."""
    with locked(cache / "mxnet-venv.lock"):
        ready = python(cache)
        if ready is not None:
            return ready
        venv = home(cache)
        log(f"installing {' '.join(PACKAGES)} into {venv} for the rejoin harness ...")
        with heartbeat(log, "installing mxnet"):
            subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
            subprocess.run(
                [str(venv / "bin" / "pip"), "install", "--quiet", *PACKAGES],
                check=True,
            )
            subprocess.run(
                [str(venv / "bin" / "python"), "-c", "import mxnet"], check=True, timeout=120
            )
        (venv / "ready").write_text(" ".join(PACKAGES))
        return venv / "bin" / "python"
