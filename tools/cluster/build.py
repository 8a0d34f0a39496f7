"""Build the control-plane binaries from the Go module proxy, once, into a cache outside the repo.

Every component is built from a throw-away Go module written into
``<cache>/<component>-<version>/src`` and installed into ``<cache>/<component>-<version>/bin``.
A component whose binaries (and stamp file) exist is never rebuilt, so a warm ``build`` takes
well under a second. Builds of one component are serialised with a lock file, so a pytest session
and ``make up`` started at the same time do not build twice.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

# Pinned versions: the newest patch releases the module proxy served when this was written.
ETCD_VERSION = "v3.6.16"
KUBERNETES_VERSION = "v1.36.3"
KUBERNETES_STAGING_VERSION = "v0.36.3"
KWOK_VERSION = "v0.8.0"
# Metacontroller's go.mod says `module metacontroller` (no dot), so its v2+ git tags are not valid
# Go module versions; the proxy only has v1.x tags and pseudo-versions of later commits. The proxy
# reachable from this workplace refuses every pseudo-version (v4.17.x included) and serves only
# the v1.5.20 tag. Pin a v4.17.x pseudo-version here (and set METACONTROLLER_MAIN to
# "metacontroller/pkg/cmd/metacontroller") once the proxy serves it.
METACONTROLLER_VERSION = "v1.5.20"
METACONTROLLER_MAIN = "metacontroller"
# Go version the throw-away modules declare (Kubernetes 1.36 needs go >= 1.26).
GO_LANGUAGE_VERSION = "1.26.0"

LDFLAGS = "-s -w"

Log = Callable[[str], None]


def default_cache_dir() -> Path:
    """``$MXJOB_CACHE`` or ``~/.cache/mxjob-e2e``."""
    env = os.environ.get("MXJOB_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "mxjob-e2e"


@dataclass(frozen=True)
class Component:
    """One throw-away module and the main packages built from it."""

    name: str
    version: str
    # main package import path -> binary name
    mains: dict[str, str]
    requires: dict[str, str]
    replaces: dict[str, str] = field(default_factory=dict)
    # modules whose checksums the public checksum database does not vouch for here
    nosumdb: tuple[str, ...] = ()
    # `-X pkg.var=value` settings (version strings a release build would stamp in)
    xvars: tuple[str, ...] = ()

    @property
    def ldflags(self) -> str:
        return " ".join([LDFLAGS, *(f"-X {x}" for x in self.xvars)])

    def home(self, cache: Path) -> Path:
        return cache / f"{self.name}-{self.version}"

    def binary(self, cache: Path, name: str) -> Path:
        return self.home(cache) / "bin" / name

    def stamp(self, cache: Path) -> Path:
        return self.home(cache) / "built.json"

    def is_built(self, cache: Path) -> bool:
        try:
            stamp = json.loads(self.stamp(cache).read_text())
        except (OSError, ValueError):
            return False
        return stamp.get("ldflags") == self.ldflags and all(
            self.binary(cache, b).is_file() for b in self.mains.values()
        )


ETCD = Component(
    name="etcd",
    version=ETCD_VERSION,
    # server/v3 has the `main` package of the etcd binary (a wrapper around etcdmain).
    mains={"go.etcd.io/etcd/server/v3": "etcd"},
    requires={"go.etcd.io/etcd/server/v3": ETCD_VERSION},
)

KWOK = Component(
    name="kwok",
    version=KWOK_VERSION,
    mains={"sigs.k8s.io/kwok/cmd/kwok": "kwok"},
    requires={"sigs.k8s.io/kwok": KWOK_VERSION},
)

METACONTROLLER = Component(
    name="metacontroller",
    version=METACONTROLLER_VERSION,
    mains={METACONTROLLER_MAIN: "metacontroller"},
    requires={
        "metacontroller": "v0.0.0",
        # v1.0.1 (pinned by client-go 0.21) crashes at run time on Go >= 1.18.
        "github.com/modern-go/reflect2": "v1.0.2",
    },
    replaces={
        "metacontroller": f"github.com/metacontroller/metacontroller {METACONTROLLER_VERSION}"
    },
    nosumdb=("github.com/metacontroller/metacontroller",),
    xvars=(f"main.version={METACONTROLLER_VERSION}",),
)

KUBERNETES_MAINS = (
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kubectl",
    "kubelet",
    "kube-proxy",
)
KUBERNETES = Component(
    name="kubernetes",
    version=KUBERNETES_VERSION,
    mains={f"k8s.io/kubernetes/cmd/{m}": m for m in KUBERNETES_MAINS},
    requires={"k8s.io/kubernetes": KUBERNETES_VERSION},
    xvars=tuple(
        f"{pkg}.{var}={value}"
        for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")
        for var, value in (
            ("gitVersion", KUBERNETES_VERSION),
            ("gitMajor", KUBERNETES_VERSION[1:].split(".", 1)[0]),
            ("gitMinor", KUBERNETES_VERSION[1:].split(".")[1]),
            ("gitTreeState", "clean"),
        )
    ),
    # the `=> ./staging/...` replaces are read from the tag's go.mod at build time
)

COMPONENTS = (ETCD, KUBERNETES, METACONTROLLER, KWOK)

# Stock KWOK stages copied out of its module (directory under kustomize/stage -> cache subdir).
KWOK_STAGE_DIRS = ("pod/fast", "pod/general", "node/fast", "node/heartbeat")


class BuildError(RuntimeError):
    pass


def go_env(component: Component) -> dict[str, str]:
    env = dict(os.environ)
    env["GOTOOLCHAIN"] = "local"  # never download a toolchain
    env["GOWORK"] = "off"
    env["GOFLAGS"] = (env.get("GOFLAGS", "") + " -buildvcs=false").strip()
    if component.nosumdb:
        extra = ",".join(component.nosumdb)
        env["GONOSUMDB"] = f"{env['GONOSUMDB']},{extra}" if env.get("GONOSUMDB") else extra
    return env


def run_go(args: list[str], cwd: Path, env: dict[str, str], log_file: Path) -> str:
    """Run ``go args`` in cwd, appending its output to log_file; return stdout."""
    with log_file.open("a") as log:
        log.write(f"\n$ go {' '.join(args)}\n")
        log.flush()
        proc = subprocess.run(
            ["go", *args],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            check=False,
        )
        log.write(proc.stdout)
    if proc.returncode != 0:
        raise BuildError(f"`go {' '.join(args)}` failed (exit {proc.returncode}); see {log_file}")
    return proc.stdout


def module_dir(module: str, version: str, cwd: Path, env: dict[str, str], log: Path) -> Path:
    """Download module@version into the module cache and return its directory."""
    out = run_go(["mod", "download", "-json", f"{module}@{version}"], cwd, env, log)
    info = json.loads(out)
    if info.get("Error"):
        raise BuildError(f"cannot download {module}@{version}: {info['Error']}")
    return Path(info["Dir"])


def read_replaces(go_mod: Path) -> dict[str, str]:
    """The replace directives of a go.mod file (single-line and block form)."""
    replaces: dict[str, str] = {}
    in_block = False
    for raw in go_mod.read_text().splitlines():
        line = raw.split("//", 1)[0].strip()
        if line.startswith("replace ("):
            in_block = True
            continue
        if in_block and line == ")":
            in_block = False
            continue
        if line.startswith("replace "):
            line = line[len("replace ") :]
        elif not in_block:
            continue
        m = re.match(r"^(\S+)(?:\s+\S+)?\s+=>\s+(.+)$", line)
        if m:
            replaces[m.group(1)] = m.group(2).strip()
    return replaces


def write_module(component: Component, src: Path, replaces: dict[str, str]) -> None:
    src.mkdir(parents=True, exist_ok=True)
    lines = [f"module mxjob-e2e/{component.name}", "", f"go {GO_LANGUAGE_VERSION}", "", "require ("]
    lines += [f"\t{mod} {ver}" for mod, ver in component.requires.items()]
    lines += [")", ""]
    if replaces:
        lines.append("replace (")
        lines += [f"\t{mod} => {target}" for mod, target in sorted(replaces.items())]
        lines += [")", ""]
    (src / "go.mod").write_text("\n".join(lines))
    (src / "go.sum").unlink(missing_ok=True)
    # A build-tagged file importing the main packages lets `go mod tidy` resolve their deps.
    imports = "\n".join(f'\t_ "{pkg}"' for pkg in component.mains)
    (src / "tools.go").write_text(f"//go:build tools\n\npackage tools\n\nimport (\n{imports}\n)\n")


def kubernetes_replaces(src: Path, env: dict[str, str], log: Path) -> dict[str, str]:
    """Every `k8s.io/x => ./staging/...` of the kubernetes tag, pointed at the v0.x release."""
    kdir = module_dir("k8s.io/kubernetes", KUBERNETES_VERSION, src, env, log)
    staging = {
        mod: f"{mod} {KUBERNETES_STAGING_VERSION}"
        for mod, target in read_replaces(kdir / "go.mod").items()
        if target.startswith("./staging/")
    }
    if not staging:
        raise BuildError(f"no ./staging replaces found in {kdir / 'go.mod'}")
    return staging


def metacontroller_replaces(src: Path, env: dict[str, str], log: Path) -> dict[str, str]:
    """Metacontroller's own replaces (pins of k8s libs) plus the path replace of the module."""
    mdir = module_dir(
        "github.com/metacontroller/metacontroller", METACONTROLLER_VERSION, src, env, log
    )
    replaces = read_replaces(mdir / "go.mod")
    replaces.update(METACONTROLLER.replaces)
    return replaces


def copy_assets(
    component: Component, src: Path, env: dict[str, str], log: Path, home: Path
) -> None:
    """Non-binary files the stack needs: Metacontroller CRDs, KWOK stock stages."""
    if component is METACONTROLLER:
        mdir = module_dir(
            "github.com/metacontroller/metacontroller", METACONTROLLER_VERSION, src, env, log
        )
        candidates = [
            mdir / "manifests/production/metacontroller-crds-v1.yaml",
            mdir / "deploy/helm/metacontroller/crds/metacontroller-crds-v1.yaml",
        ]
        for crds in candidates:
            if crds.is_file():
                shutil.copyfile(crds, home / "metacontroller-crds.yaml")
                return
        raise BuildError(f"no Metacontroller CRD manifest found in {mdir}")
    if component is KWOK:
        kdir = module_dir("sigs.k8s.io/kwok", KWOK_VERSION, src, env, log)
        for sub in KWOK_STAGE_DIRS:
            dest = home / "stages" / sub.replace("/", "-")
            dest.mkdir(parents=True, exist_ok=True)
            for f in sorted((kdir / "kustomize/stage" / sub).glob("*.yaml")):
                if f.name != "kustomization.yaml":
                    shutil.copyfile(f, dest / f.name)


def go_binary_name(pkg: str) -> str:
    """The file name `go build -o dir/` gives a main package (major-version suffixes skipped)."""
    parts = pkg.split("/")
    if len(parts) > 1 and re.fullmatch(r"v[2-9]\d*", parts[-1]):
        return parts[-2]
    return parts[-1]


@contextmanager
def locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def build_component(component: Component, cache: Path, log: Log) -> float:
    """Build one component unless it is already in the cache; return seconds spent."""
    home = component.home(cache)
    with locked(cache / f"{component.name}-{component.version}.lock"):
        if component.is_built(cache):
            return 0.0
        start = time.monotonic()
        src, bin_dir, log_file = home / "src", home / "bin", home / "build.log"
        src.mkdir(parents=True, exist_ok=True)
        bin_dir.mkdir(parents=True, exist_ok=True)
        log_file.write_text(f"building {component.name} {component.version}\n")
        log(f"building {component.name} {component.version} (log: {log_file}) ...")
        env = go_env(component)
        write_module(component, src, {})
        if component is KUBERNETES:
            write_module(component, src, kubernetes_replaces(src, env, log_file))
        elif component is METACONTROLLER:
            write_module(component, src, metacontroller_replaces(src, env, log_file))
        run_go(["mod", "tidy"], src, env, log_file)
        run_go(
            [
                "build",
                "-mod=mod",
                "-trimpath",
                f"-ldflags={component.ldflags}",
                "-o",
                str(bin_dir) + "/",
                *component.mains,
            ],
            src,
            env,
            log_file,
        )
        for pkg, name in component.mains.items():
            built = bin_dir / go_binary_name(pkg)
            if built != bin_dir / name:
                built.replace(bin_dir / name)
        copy_assets(component, src, env, log_file, home)
        seconds = time.monotonic() - start
        component.stamp(cache).write_text(
            json.dumps(
                {
                    "component": component.name,
                    "version": component.version,
                    "seconds": round(seconds),
                    "ldflags": component.ldflags,
                    "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                },
                indent=2,
            )
            + "\n"
        )
        log(f"built {component.name} {component.version} in {seconds:.0f}s")
        return seconds


def go_problem() -> str | None:
    """Why Go cannot build the components here, or None."""
    go = shutil.which("go")
    if go is None:
        return "the `go` toolchain is not on PATH (needed once to build the e2e control plane)"
    try:
        out = subprocess.run(
            [go, "env", "GOVERSION"], capture_output=True, text=True, timeout=60, check=True
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        return f"`go env GOVERSION` failed: {exc}"
    m = re.match(r"go(\d+)\.(\d+)", out)
    if not m or (int(m.group(1)), int(m.group(2))) < (1, 26):
        return f"Go {out or '?'} is too old: Kubernetes {KUBERNETES_VERSION} needs go >= 1.26"
    return None


def all_built(cache: Path | None = None) -> bool:
    cache = cache or default_cache_dir()
    return all(c.is_built(cache) for c in COMPONENTS)


def unavailable_reason(cache: Path | None = None) -> str | None:
    """One line saying why the e2e stack cannot run here, or None if it can."""
    if not sys.platform.startswith("linux"):
        return f"the e2e control plane runs on Linux only (this is {sys.platform})"
    if all_built(cache):
        return None
    return go_problem()


def build_all(cache: Path | None = None, log: Log = print) -> dict[str, float]:
    """Build every missing component (sequentially: each build already uses every core)."""
    cache = cache or default_cache_dir()
    if not all_built(cache):
        problem = go_problem()
        if problem:
            raise BuildError(problem)
    return {c.name: build_component(c, cache, log) for c in COMPONENTS}
