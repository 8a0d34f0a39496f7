"""Container images for the real-node tier, built on this machine without a registry.

A Debian base comes from ``mmdebstrap``; every other image is ``buildah bud`` of a Dockerfile
``FROM`` it — the hook's from the project's own ``Dockerfile`` (``--build-arg PYTHON_IMAGE``).
Each image is named ``localhost/<name>:<tag>``, where the tag is a digest of everything that
went into it, so an unchanged image is never rebuilt and a changed one always is; the result is
kept as a docker-archive in the cache for ``ctr images import``. A non-``latest`` tag means the
kubelet's default ``IfNotPresent`` never tries to pull.
"""

from __future__ import annotations

import hashlib
import re
import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from tools.cluster import build
from tools.cluster.build import BuildError, Log, heartbeat, locked

HERE = Path(__file__).resolve().parent / "images"
REPO = Path(__file__).resolve().parents[2]
DEBIAN_SUITE = "bookworm"
#: Python 3.11 (Debian's), the libraries the mxnet wheel links, and what the hook's Dockerfile
#: uses (`python`, venv, groupadd/useradd from the always-installed passwd package).
BASE_PACKAGES = (
    "python3",
    "python3-venv",
    "python-is-python3",
    "libquadmath0",
    "libgomp1",
    "ca-certificates",
)
#: This machine reaches PyPI through a TLS proxy whose CA only the host trusts: builds that run
#: pip inside an image need the host's bundle and pip configuration. Test images only.
HOST_TRUST = ("/etc/ssl/certs/ca-certificates.crt", "/etc/pip.conf")


@dataclass(frozen=True)
class Image:
    """One image: its name, the files whose content decides its tag, and how it is built."""

    name: str
    inputs: tuple[Path, ...]
    dockerfile: Path | None = None  # None: the Debian base itself
    context: Path | None = None
    base_arg: str = "BASE"
    #: What else decides the content (e.g. the version of a binary copied in).
    extra: str = ""

    def digest(self, base_tag: str) -> str:
        h = hashlib.sha256(f"{base_tag} {self.extra}".encode())
        for path in self.inputs:
            for f in sorted(_files(path)):
                h.update(str(f.relative_to(path.parent)).encode())
                h.update(f.read_bytes())
        return h.hexdigest()[:12]


def _files(path: Path) -> Iterable[Path]:
    if path.is_file():
        yield path
        return
    for f in path.rglob("*"):
        if f.is_file() and "__pycache__" not in f.parts:
            yield f


def _hook_inputs() -> tuple[Path, ...]:
    """The Dockerfile and every path `.dockerignore` lets into the build context: the image
    changes whenever one of them does, and a path added to the image cannot be forgotten here."""
    allowed = [
        line[1:].strip().rstrip("/")
        for line in (REPO / ".dockerignore").read_text().splitlines()
        if line.startswith("!")
    ]
    return (REPO / "Dockerfile", *(REPO / path for path in allowed))


BASE = Image("mxjob-base", (), extra=f"{DEBIAN_SUITE} {' '.join(BASE_PACKAGES)} {HOST_TRUST}")
HOOK = Image("mxjob", _hook_inputs(), REPO / "Dockerfile", REPO, base_arg="PYTHON_IMAGE")
MXNET = Image("mxjob-mxnet", (HERE / "mxnet.Dockerfile",), HERE / "mxnet.Dockerfile", HERE)
TVM = Image("mxjob-tvm", (HERE / "tvm.Dockerfile",), HERE / "tvm.Dockerfile", HERE)
METACONTROLLER = Image(
    "metacontroller",
    (HERE / "metacontroller.Dockerfile",),
    HERE / "metacontroller.Dockerfile",
    extra=f"{build.METACONTROLLER.version} {build.METACONTROLLER.ldflags}",
)
#: Built after the base, in this order.
DERIVED = (HOOK, METACONTROLLER, MXNET, TVM)


@dataclass
class Built:
    """Where a built image is: its reference and its docker-archive."""

    ref: str
    archive: Path


class Builder:
    """Builds the images into ``<cache>/images`` with buildah's own storage there."""

    def __init__(self, cache: Path | None = None, log: Log = print) -> None:
        self.cache = cache or build.default_cache_dir()
        self.home = self.cache / "images"
        self.log = log
        #: The images this builder built (not found in the cache).
        self.made: list[str] = []

    def _storage_args(self) -> list[str]:
        storage = self.home / "buildah"
        return [
            f"--root={storage / 'root'}",
            f"--runroot={storage / 'run'}",
            "--storage-driver=vfs",
        ]

    def _buildah(self, *args: str, log_file: Path) -> str:
        return _run(["buildah", *self._storage_args(), *args], log_file)

    def all(self, without: tuple[Image, ...] = ()) -> dict[str, Built]:
        """Every image but those `without`, building what is missing; keyed by image name. (A
        prepare builds all but Metacontroller's while Metacontroller compiles.)"""
        with locked(self.cache / "images.lock"), heartbeat(self.log, "building images"):
            self.home.mkdir(parents=True, exist_ok=True)
            images = {"pause": self._pause()}
            base = self._base()
            images[BASE.name] = base
            base_tag = base.ref.rsplit(":", 1)[1]
            for image in DERIVED:
                if image not in without:
                    images[image.name] = self._derived(image, base.ref, base_tag)
            return images

    def _pause(self) -> Built:
        source = HERE / "pause.c"
        tag = hashlib.sha256(source.read_bytes()).hexdigest()[:12]
        ref = f"localhost/pause:{tag}"
        archive = self.home / f"pause-{tag}.tar"
        if archive.is_file():
            return Built(ref, archive)
        log_file = self.home / "pause.log"
        log_file.write_text("")
        with tempfile.TemporaryDirectory(dir=self.home) as tmp:
            rootfs = Path(tmp)
            _run(["gcc", "-Os", "-static", "-o", str(rootfs / "pause"), str(source)], log_file)
            _run(["strip", str(rootfs / "pause")], log_file)
            self._commit_rootfs(rootfs, ref, archive, ["/pause"], log_file)
        self.made.append("pause")
        return Built(ref, archive)

    def _base(self) -> Built:
        tag = BASE.digest("")
        ref = f"localhost/{BASE.name}:{tag}"
        archive = self.home / f"{BASE.name}-{tag}.tar"
        if archive.is_file():
            return Built(ref, archive)
        started = time.monotonic()
        log_file = self.home / f"{BASE.name}.log"
        log_file.write_text("")
        self.log(
            f"building image {ref} with mmdebstrap, the Debian base of the real node's"
            f" images, once (log: {log_file}) ..."
        )
        with tempfile.TemporaryDirectory(dir=self.home) as tmp:
            rootfs = Path(tmp) / "rootfs"
            _run(
                [
                    "mmdebstrap",
                    "--variant=minbase",
                    "--mode=root",
                    "--skip=output/dev",
                    "--dpkgopt=path-exclude=/usr/share/doc/*",
                    "--dpkgopt=path-exclude=/usr/share/man/*",
                    "--dpkgopt=path-exclude=/usr/share/locale/*",
                    f"--include={','.join(BASE_PACKAGES)}",
                    DEBIAN_SUITE,
                    str(rootfs),
                ],
                log_file,
            )
            for path in HOST_TRUST:
                if Path(path).is_file():
                    dest = rootfs / path.lstrip("/")
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(path, dest)
            shutil.rmtree(rootfs / "var/lib/apt/lists", ignore_errors=True)
            self._commit_rootfs(rootfs, ref, archive, ["python3"], log_file)
        self.log(f"built {ref} in {time.monotonic() - started:.0f}s")
        self.made.append(BASE.name)
        return Built(ref, archive)

    def _commit_rootfs(
        self, rootfs: Path, ref: str, archive: Path, cmd: list[str], log_file: Path
    ) -> None:
        """Turn a root filesystem directory into an image in buildah's storage and an archive."""
        container = self._buildah("from", "scratch", log_file=log_file).strip()
        try:
            mount = Path(self._buildah("mount", container, log_file=log_file).strip())
            _run(["cp", "-a", f"{rootfs}/.", str(mount)], log_file)
            self._buildah("umount", container, log_file=log_file)
            self._buildah(
                "config", f"--cmd={cmd!r}".replace("'", '"'), container, log_file=log_file
            )
            self._buildah("commit", "--rm", container, ref, log_file=log_file)
        except BaseException:
            self._buildah("rm", container, log_file=log_file)
            raise
        self._push(ref, archive, log_file)

    def _derived(self, image: Image, base_ref: str, base_tag: str) -> Built:
        tag = image.digest(base_tag)
        ref = f"localhost/{image.name}:{tag}"
        archive = self.home / f"{image.name}-{tag}.tar"
        if archive.is_file():
            return Built(ref, archive)
        started = time.monotonic()
        log_file = self.home / f"{image.name}.log"
        log_file.write_text("")
        self.log(
            f"building image {ref} with buildah for the real node's pods, once per change of"
            f" its inputs (log: {log_file}) ..."
        )
        assert image.dockerfile is not None
        with tempfile.TemporaryDirectory(dir=self.home) as tmp:
            context = image.context
            if context is None:  # Metacontroller: its binary is the whole context
                context = Path(tmp)
                binary = build.METACONTROLLER.binary(self.cache, "metacontroller")
                shutil.copyfile(binary, context / "metacontroller")
                (context / "metacontroller").chmod(0o755)
            flags = [
                "--pull-never",
                "--network=host",
                "--isolation=chroot",
                # One layer: with the vfs driver each layer is a whole copy of the root
                # filesystem (cold run of 2026-11-27: the hook's image took 581 s with a layer
                # per step, 164 s without).
                "--layers=false",
                f"--build-arg={image.base_arg}={base_ref}",
            ]
            if image is HOOK:
                # As the README tells users: `make image`, its engine buildah, with the storage
                # and flags of this builder (IMAGE_ARGS) and the base built here.
                flags = [*self._storage_args(), *flags]
                make = [
                    "make", "-s", "-C", str(REPO), "image", "ENGINE=buildah", f"IMAGE={ref}",
                    f"IMAGE_ARGS={shlex.join(flags)}",
                ]  # fmt: skip
                _run(make, log_file)
            else:
                self._buildah(
                    "bud",
                    *flags,
                    f"--file={image.dockerfile}",
                    f"--tag={ref}",
                    str(context),
                    log_file=log_file,
                )
        self._push(ref, archive, log_file)
        self.log(f"built {ref} in {time.monotonic() - started:.0f}s")
        self.made.append(image.name)
        return Built(ref, archive)

    def _push(self, ref: str, archive: Path, log_file: Path) -> None:
        """Write the image's docker-archive, then drop older builds of the same image."""
        partial = archive.with_suffix(".partial")
        partial.unlink(missing_ok=True)
        self._buildah("push", ref, f"docker-archive:{partial}:{ref}", log_file=log_file)
        partial.replace(archive)
        name = ref.rsplit("/", 1)[1].split(":", 1)[0]
        for old in self.home.glob(f"{name}-*.tar"):
            if old != archive and re.fullmatch(rf"{re.escape(name)}-[0-9a-f]{{12}}\.tar", old.name):
                old.unlink()
                stale = f"localhost/{name}:{old.stem.rsplit('-', 1)[1]}"
                subprocess.run(
                    ["buildah", *self._storage_args(), "rmi", stale],
                    capture_output=True,
                    check=False,
                )


def _run(argv: list[str], log_file: Path) -> str:
    """Run a build step, its output appended to log_file; BuildError names the log on failure."""
    with log_file.open("a") as log:
        log.write(f"$ {' '.join(argv)}\n")
        log.flush()
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=log, text=True, check=False)
        log.write(proc.stdout)
    if proc.returncode != 0:
        raise BuildError(f"`{argv[0]} {argv[1]}` failed (exit {proc.returncode}); see {log_file}")
    return proc.stdout


def missing_tools() -> list[str]:
    """Host commands the image build and the node need that are not installed."""
    needed = ("mmdebstrap", "buildah", "gcc", "containerd", "runc", "ctr", "iptables", "ip")
    return [tool for tool in needed if shutil.which(tool) is None]
