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
import tarfile
import tempfile
import threading
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
# Metacontroller's go.mod says `module metacontroller` (no dot), so the module proxy cannot serve
# its v4 releases; it is built from a source archive or checkout of the tag instead (see
# metacontroller_source()).
METACONTROLLER_VERSION = "v4.17.2"
METACONTROLLER_SOURCE_SETTING = "MXJOB_METACONTROLLER_SRC"
COREDNS_VERSION = "v1.15.0"
# Gang schedulers and the queue controller (docs/scheduling.md): the newest releases the proxy
# served on 2026-11-24 (volcano v1.11+ and scheduler-plugins v0.33+ were refused; kueue v0.17.0
# was served although v0.16.0 was not).
VOLCANO_VERSION = "v1.10.0"
SCHEDULER_PLUGINS_VERSION = "v0.32.7"
KUEUE_VERSION = "v0.17.0"
# kube-state-metrics, for the MXJob metrics of manifests/components/kube-state-metrics: the
# newest release the proxy served on 2026-11-25 (v2.20.0; v2.21.0 to v2.25.0, v2.20.1, v2.19.0
# and v2.17.0 were refused).
KUBE_STATE_METRICS_VERSION = "v2.20.0"
# Kubeflow training-operator: v1.8.1 is the last release with MXJob (removed in v1.9.0), v1.7.0
# the last without webhooks; docs/comparison.md runs either, docs/migration.md hands over from
# v1.8.1.
TRAINING_OPERATOR_VERSIONS = ("v1.8.1", "v1.7.0")
# Helm, for the chart charts/mxjob (tests/test_helm.py): the newest release the proxy served on
# 2026-11-25 (v3.22.1, v3.22.2 and v3.23.0 were refused).
HELM_VERSION = "v3.22.0"
#: The Kubernetes release Helm's own build stamps in (its client-go v0.37 is Kubernetes 1.37):
#: what `helm lint` checks deprecations against and `helm template` reports as KubeVersion.
HELM_KUBERNETES = ("1", "37")
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
    # built inside this module's own tree (its go.mod replaces and go.sum), not a throw-away one
    module: str | None = None
    # CoreDNS only: the plugins compiled in (its own main, as CoreDNS documents for a build with
    # chosen plugins), rather than every plugin of its release
    plugins: tuple[str, ...] = ()

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
        return (
            stamp.get("ldflags") == self.ldflags
            and stamp.get("plugins", []) == list(self.plugins)
            and all(self.binary(cache, b).is_file() for b in self.mains.values())
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

# Built from its own source tree (go.mod and go.sum of the tag), not from a throw-away module.
METACONTROLLER = Component(
    name="metacontroller",
    version=METACONTROLLER_VERSION,
    mains={"./pkg/cmd/metacontroller": "metacontroller"},
    requires={},
    xvars=(f"main.version={METACONTROLLER_VERSION}",),
)

#: The plugins the real node's Corefile names (tools/cluster/real_node.py; tests/test_testrun.py
#: keeps the two equal). CoreDNS is built with these alone: compiling its other ~60 plugins (cloud
#: DNS providers' SDKs among them) cost most of its build.
COREDNS_PLUGINS = ("bind", "errors", "ready", "kubernetes", "cache")
COREDNS = Component(
    name="coredns",
    version=COREDNS_VERSION,
    mains={"mxjob-e2e/coredns": "coredns"},
    requires={"github.com/coredns/coredns": COREDNS_VERSION},
    plugins=COREDNS_PLUGINS,
)

# These three carry replace directives in their go.mod (Kubernetes staging pins), which only
# count in the main module: so each is built inside its own downloaded tree.
VOLCANO = Component(
    name="volcano",
    version=VOLCANO_VERSION,
    # The scheduler alone: the tests create PodGroups themselves (the hook lists them), and no
    # test needs Volcano's controllers (jobs, queues' status), so their binary is not built.
    mains={"./cmd/scheduler": "vc-scheduler"},
    requires={},
    module="volcano.sh/volcano",
)

SCHEDULER_PLUGINS = Component(
    name="scheduler-plugins",
    version=SCHEDULER_PLUGINS_VERSION,
    mains={"./cmd/scheduler": "sp-scheduler", "./cmd/controller": "sp-controller"},
    requires={},
    module="sigs.k8s.io/scheduler-plugins",
)

KUEUE = Component(
    name="kueue",
    version=KUEUE_VERSION,
    mains={"./cmd/kueue": "kueue"},
    requires={},
    module="sigs.k8s.io/kueue",
)

KUBE_STATE_METRICS = Component(
    name="kube-state-metrics",
    version=KUBE_STATE_METRICS_VERSION,
    mains={"k8s.io/kube-state-metrics/v2": "kube-state-metrics"},
    requires={"k8s.io/kube-state-metrics/v2": KUBE_STATE_METRICS_VERSION},
    # what its release build stamps, so `kube-state-metrics --version` names the release
    xvars=(f"github.com/prometheus/common/version.Version={KUBE_STATE_METRICS_VERSION}",),
)

TRAINING_OPERATORS = {
    version: Component(
        name="training-operator",
        version=version,
        mains={"./cmd/training-operator.v1": "training-operator"},
        requires={},
        module="github.com/kubeflow/training-operator",
    )
    for version in TRAINING_OPERATOR_VERSIONS
}
# Built inside its own tree (go.mod, go.sum of the tag), with the `-X` settings of its Makefile.
HELM = Component(
    name="helm",
    version=HELM_VERSION,
    mains={"./cmd/helm": "helm"},
    requires={},
    xvars=(
        f"helm.sh/helm/v3/internal/version.version={HELM_VERSION}",
        "helm.sh/helm/v3/internal/version.gitTreeState=clean",
        *(
            f"helm.sh/helm/v3/pkg/{pkg}.k8sVersion{part}={value}"
            for pkg in ("lint/rules", "chartutil")
            for part, value in zip(("Major", "Minor"), HELM_KUBERNETES, strict=True)
        ),
    ),
    module="helm.sh/helm/v3",
)

#: The release the migration test hands over from (built with the tiers' components).
TRAINING_OPERATOR = TRAINING_OPERATORS[TRAINING_OPERATOR_VERSIONS[0]]

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

#: The KWOK tier's components; the gang schedulers, Kueue, kube-state-metrics and
#: training-operator are started by the tests that need them (tools/cluster/schedulers.py,
#: tools/cluster/kube_state_metrics.py, tools/cluster/training_operator.py), Helm is run by
#: the chart's tests.
COMPONENTS = (
    ETCD,
    KUBERNETES,
    METACONTROLLER,
    KWOK,
    VOLCANO,
    SCHEDULER_PLUGINS,
    KUEUE,
    KUBE_STATE_METRICS,
    TRAINING_OPERATOR,
    HELM,
)
#: Only the real-node tier needs these (cluster DNS for pods).
NODE_COMPONENTS = (COREDNS,)
#: What a KWOK-tier stack itself runs (tools/cluster/kwok_node.py). The other components are built
#: (or waited for, while another process builds them) by whatever first needs them: `need`.
KWOK_STACK = (ETCD, KUBERNETES, METACONTROLLER, KWOK)
#: What a real-node stack itself runs (tools/cluster/real_node.py), its images aside.
NODE_STACK = (ETCD, KUBERNETES, METACONTROLLER, COREDNS)

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
    return run_go_timed(args, cwd, env, log_file)[0]


def run_go_timed(
    args: list[str], cwd: Path, env: dict[str, str], log_file: Path
) -> tuple[str, float]:
    """`run_go`, also returning the CPU seconds go and every process it waited for (compilers,
    the linker) spent: a figure a loaded machine does not change, unlike the wall time."""
    with log_file.open("a") as log:
        log.write(f"\n$ go {' '.join(args)}\n")
        log.flush()
        with tempfile.TemporaryFile() as out:
            proc = subprocess.Popen(["go", *args], cwd=cwd, env=env, stdout=out, stderr=log)
            _, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
            out.seek(0)
            stdout = out.read().decode()
        log.write(stdout)
    if proc.returncode != 0:
        raise BuildError(f"`go {' '.join(args)}` failed (exit {proc.returncode}); see {log_file}")
    return stdout, usage.ru_utime + usage.ru_stime


def module_dir(module: str, version: str, cwd: Path, env: dict[str, str], log: Path) -> Path:
    """Download module@version into the module cache and return its directory."""
    out = run_go(["mod", "download", "-json", f"{module}@{version}"], cwd, env, log)
    info = json.loads(out)
    if info.get("Error"):
        raise BuildError(f"cannot download {module}@{version}: {info['Error']}")
    return Path(info["Dir"])


def read_replaces(go_mod: Path, env: dict[str, str], log: Path) -> dict[str, str]:
    """The replace directives of a go.mod file, as `go mod edit -json` reads them."""
    edit = json.loads(run_go(["mod", "edit", "-json", str(go_mod)], go_mod.parent, env, log))
    replaces: dict[str, str] = {}
    for rep in edit.get("Replace") or []:
        new = rep["New"]
        replaces[rep["Old"]["Path"]] = " ".join(filter(None, (new["Path"], new.get("Version"))))
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


def write_plugin_main(component: Component, src: Path, env: dict[str, str], log: Path) -> None:
    """CoreDNS's own `main` with only `component.plugins`, in the order of its release's
    plugin.cfg (the order they see a query), as its docs describe a build of chosen plugins."""
    ((module, version),) = component.requires.items()
    cfg = module_dir(module, version, src, env, log) / "plugin.cfg"
    chosen = []
    for line in cfg.read_text().splitlines():
        name, _, path = line.partition(":")
        if name in component.plugins and not line.startswith("#"):
            chosen.append((name, path if "/" in path else f"{module}/plugin/{path}"))
    if {name for name, _ in chosen} != set(component.plugins):
        raise BuildError(f"{cfg} lacks a plugin of {component.plugins}")
    imports = "\n".join(f'\t_ "{path}"' for _, path in chosen)
    directives = ", ".join(f'"{name}"' for name, _ in chosen)
    (src / "tools.go").unlink(missing_ok=True)
    (src / "main.go").write_text(
        'package main\n\nimport (\n\t_ "github.com/coredns/caddy/onevent"\n'
        f'{imports}\n\n\t"{module}/core/dnsserver"\n\t"{module}/coremain"\n)\n\n'
        f"func init() {{ dnsserver.Directives = []string{{{directives}}} }}\n\n"
        "func main() { coremain.Run() }\n"
    )


def kubernetes_replaces(src: Path, env: dict[str, str], log: Path) -> dict[str, str]:
    """Every `k8s.io/x => ./staging/...` of the kubernetes tag, pointed at the v0.x release."""
    kdir = module_dir("k8s.io/kubernetes", KUBERNETES_VERSION, src, env, log)
    staging = {
        mod: f"{mod} {KUBERNETES_STAGING_VERSION}"
        for mod, target in read_replaces(kdir / "go.mod", env, log).items()
        if target.startswith("./staging/")
    }
    if not staging:
        raise BuildError(f"no ./staging replaces found in {kdir / 'go.mod'}")
    return staging


def metacontroller_source() -> Path:
    """Where Metacontroller's source is: ``$MXJOB_METACONTROLLER_SRC`` (a .tar.gz of the tag or
    a checkout of it), else the archive shipped beside this repository's checkout."""
    setting = os.environ.get(METACONTROLLER_SOURCE_SETTING)
    if setting:
        return Path(setting).expanduser()
    repo = Path(__file__).resolve().parents[2]
    return (
        repo.parent / "shared" / "third_party" / f"metacontroller-{METACONTROLLER_VERSION}.tar.gz"
    )


def unpack_metacontroller(src: Path) -> Path:
    """Copy or unpack Metacontroller's source into src and return the module directory."""
    source = metacontroller_source()
    shutil.rmtree(src, ignore_errors=True)
    if source.is_dir():
        shutil.copytree(source, src, ignore=shutil.ignore_patterns(".git"))
        return src
    if not source.is_file():
        raise BuildError(
            f"Metacontroller {METACONTROLLER_VERSION} source not found at {source}: set "
            f"{METACONTROLLER_SOURCE_SETTING} to a .tar.gz or a checkout of tag "
            f"{METACONTROLLER_VERSION}"
        )
    src.mkdir(parents=True)
    with tarfile.open(source) as archive:
        archive.extractall(src, filter="data")
    tops = [p for p in src.iterdir() if (p / "go.mod").is_file()]
    if len(tops) != 1:
        raise BuildError(f"{source} does not hold exactly one Go module at its top")
    return tops[0]


def unpack_module(component: Component, src: Path, env: dict[str, str], log: Path) -> Path:
    """Copy a released module's tree (go.mod, go.sum, sources, manifests) into src, writable."""
    assert component.module
    shutil.rmtree(src, ignore_errors=True)
    src.parent.mkdir(parents=True, exist_ok=True)
    scratch = src.parent / "download"
    scratch.mkdir(exist_ok=True)
    (scratch / "go.mod").write_text(f"module mxjob-e2e/download\n\ngo {GO_LANGUAGE_VERSION}\n")
    tree = module_dir(component.module, component.version, scratch, env, log)
    shutil.copytree(tree, src)
    for path in (src, *src.rglob("*")):
        path.chmod(path.stat().st_mode | 0o200)
    return src


def copy_assets(
    component: Component, src: Path, env: dict[str, str], log: Path, home: Path
) -> None:
    """Non-binary files the stack needs: Metacontroller CRDs, KWOK stock stages."""
    if component is METACONTROLLER:
        # Its own production manifests (CRDs, namespace, RBAC, StatefulSet), as users apply them.
        shutil.copytree(src / "manifests" / "production", home / "manifests", dirs_exist_ok=True)
        shutil.copyfile(
            src / "manifests/production/metacontroller-crds-v1.yaml",
            home / "metacontroller-crds.yaml",
        )
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
def heartbeat(log: Log, what: str, every: float = 30.0) -> Iterator[None]:
    """Log `still <what> (Ns)` every `every` seconds until the block ends: a cold build is
    minutes of silence otherwise, which looks like a hang."""
    done = threading.Event()
    start = time.monotonic()

    def beat() -> None:
        while not done.wait(every):
            log(f"  still {what} ({time.monotonic() - start:.0f}s)")

    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


@contextmanager
def locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


#: What `fetch` leaves in a component's source tree once everything it builds is downloaded.
FETCHED = ".fetched"


def _fetch(component: Component, src: Path, env: dict[str, str], log_file: Path) -> Path:
    """Lay out the component's module and download every module its build needs (network,
    next to no CPU); the module's directory."""
    if component is METACONTROLLER:
        src = unpack_metacontroller(src)
    elif component.module:
        src = unpack_module(component, src, env, log_file)
    else:
        write_module(component, src, {})
        if component is KUBERNETES:
            write_module(component, src, kubernetes_replaces(src, env, log_file))
        if component.plugins:
            write_plugin_main(component, src, env, log_file)
        run_go(["mod", "tidy"], src, env, log_file)
    # Loads the main packages' imports (no compiling): downloads exactly what the build reads.
    run_go(["list", "-mod=mod", "-deps", "-e", *component.mains], src, env, log_file)
    (src / FETCHED).write_text(_fetch_key(component))
    return src


def _fetch_key(component: Component) -> str:
    """What a fetched tree was laid out for: another version or plugin set fetches again."""
    return f"{component.name} {component.version} {' '.join(component.plugins)}\n"


def _module_dir(component: Component, src: Path) -> Path | None:
    """The module directory fetched for this component under src (Metacontroller's archive
    unpacks one level down), or None before a complete fetch of it."""
    for candidate in (src, *(p for p in src.iterdir() if p.is_dir())) if src.is_dir() else ():
        marker = candidate / FETCHED
        if marker.is_file() and marker.read_text() == _fetch_key(component):
            return candidate
    return None


def fetch_component(component: Component, cache: Path, log: Log) -> float:
    """Download what one component's build needs unless built or fetched already (the network
    half of `build_component`, which a prepare runs beside other builds); seconds spent."""
    home = component.home(cache)
    with locked(cache / f"{component.name}-{component.version}.lock"):
        if component.is_built(cache) or _module_dir(component, home / "src") is not None:
            return 0.0
        start = time.monotonic()
        (home / "bin").mkdir(parents=True, exist_ok=True)
        log_file = home / "build.log"
        log_file.write_text(f"fetching {component.name} {component.version}\n")
        with heartbeat(log, f"downloading {component.name} {component.version}"):
            _fetch(component, home / "src", go_env(component), log_file)
        seconds = time.monotonic() - start
        log(f"downloaded {component.name} {component.version} in {seconds:.0f}s")
        return seconds


def build_component(component: Component, cache: Path, log: Log) -> float:
    """Build one component unless it is already in the cache; return seconds spent. Its stamp
    keeps the wall and CPU seconds of the build (`python -m tools.testrun` reports them)."""
    home = component.home(cache)
    what = f"building {component.name} {component.version}"
    with locked(cache / f"{component.name}-{component.version}.lock"), heartbeat(log, what):
        if component.is_built(cache):
            return 0.0
        start = time.monotonic()
        src, bin_dir, log_file = home / "src", home / "bin", home / "build.log"
        bin_dir.mkdir(parents=True, exist_ok=True)
        env = go_env(component)
        module = _module_dir(component, src)
        if module is None:
            log_file.write_text(f"building {component.name} {component.version}\n")
            module = _fetch(component, src, env, log_file)
        log(f"building {component.name} {component.version} (log: {log_file}) ...")
        compiling = time.monotonic()
        _, cpu = run_go_timed(
            [
                "build",
                "-mod=mod",
                "-trimpath",
                # No DWARF from the compiler: `-w` drops it at link time anyway (the binaries
                # are the same), and not writing it saves ~8% of the compile's CPU.
                "-gcflags=all=-dwarf=false",
                f"-ldflags={component.ldflags}",
                "-o",
                str(bin_dir) + "/",
                *component.mains,
            ],
            module,
            env,
            log_file,
        )
        for pkg, name in component.mains.items():
            built = bin_dir / go_binary_name(pkg)
            if built != bin_dir / name:
                built.replace(bin_dir / name)
        copy_assets(component, module, env, log_file, home)
        seconds = time.monotonic() - start
        component.stamp(cache).write_text(
            json.dumps(
                {
                    "component": component.name,
                    "version": component.version,
                    "seconds": round(seconds),
                    "compile_seconds": round(time.monotonic() - compiling),
                    "cpu_seconds": round(cpu),
                    "ldflags": component.ldflags,
                    "plugins": list(component.plugins),
                    "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                },
                indent=2,
            )
            + "\n"
        )
        log(f"built {component.name} {component.version} in {seconds:.0f}s ({cpu:.0f} CPU s)")
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


def all_built(cache: Path | None = None, components: tuple[Component, ...] = COMPONENTS) -> bool:
    cache = cache or default_cache_dir()
    return all(c.is_built(cache) for c in components)


def unavailable_reason(
    cache: Path | None = None, components: tuple[Component, ...] = COMPONENTS
) -> str | None:
    """One line saying why the e2e stack cannot run here, or None if it can."""
    if not sys.platform.startswith("linux"):
        return f"the e2e control plane runs on Linux only (this is {sys.platform})"
    if all_built(cache, components):
        return None
    if METACONTROLLER in components and not METACONTROLLER.is_built(cache or default_cache_dir()):
        source = metacontroller_source()
        if not source.exists():
            return (
                f"Metacontroller's source is not at {source} (set {METACONTROLLER_SOURCE_SETTING})"
            )
    return go_problem()


def need(component: Component, cache: Path, log: Log = print) -> Path:
    """The component's home once it is built: built here if nobody has, waited for while
    another process (a prepare running beside the tests) builds it."""
    build_all(cache, log, (component,))
    return component.home(cache)


#: A directory where a prepare running beside the tests (`python -m tools.testrun`) keeps one
#: file per build it has still to finish: a test that needs one of them waits for it rather
#: than build it itself, at its own priority and outside the prepare's count of compiles.
PENDING_SETTING = "MXJOB_PENDING_BUILDS"


def pending(component: Component) -> Path | None:
    """The file saying a prepare is still to build `component`, where one runs."""
    where = os.environ.get(PENDING_SETTING)
    return Path(where) / f"{component.name}-{component.version}" if where else None


def _await_prepare(component: Component, log: Log) -> None:
    """Until the prepare running beside this process has built `component` (or failed to)."""
    marker = pending(component)
    if marker is None or not marker.exists():
        return
    with heartbeat(log, f"waiting for the prepare's build of {component.name}"):
        while marker.exists():
            time.sleep(1.0)


def build_all(
    cache: Path | None = None,
    log: Log = print,
    components: tuple[Component, ...] = COMPONENTS,
) -> dict[str, float]:
    """Build every missing component (sequentially: each build already uses every core), once
    the prepare running beside this process, if any, is done with it."""
    cache = cache or default_cache_dir()
    for component in components:
        _await_prepare(component, log)
    if not all_built(cache, components):
        problem = go_problem()
        if problem:
            raise BuildError(problem)
    return {c.name: build_component(c, cache, log) for c in components}
