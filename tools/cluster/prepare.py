"""What the end-to-end tiers need that takes long, as steps that run side by side.

Downloads (Go modules, Debian packages, the MXNet wheel) wait on the network, compiles on the
CPU: so every component's modules are fetched while others compile, at most two Go builds run at
once (a build leaves a core idle while it links or waits on one big package), and the images and
the MXNet environment are made beside them. `python -m tools.cluster prepare` runs the graph
alone; `python -m tools.testrun` (`make test`) runs the test lanes in it too, each as soon as
what it needs is built, with the builds only later tests need niced so the tests come first.

Each step is `python -m tools.cluster step NAME`, a process of its own, so its CPU seconds are
measured (tools/steps.py); a step finds its work done (a cached component) in well under a
second.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from tools import steps
from tools.cluster import build, host, images, mxnet_env
from tools.cluster.build import Component, Log

#: Compiled in this order: the components a stack runs first (the real node's lane waits on
#: them), then KWOK (the KWOK tier), then what single tests need, smallest first.
BUILD_ORDER: tuple[Component, ...] = (
    build.KUBERNETES,
    build.ETCD,
    build.METACONTROLLER,
    build.COREDNS,
    build.KWOK,
    build.HELM,
    build.KUBE_STATE_METRICS,
    build.TRAINING_OPERATOR,
    build.VOLCANO,
    build.SCHEDULER_PLUGINS,
    build.KUEUE,
)
#: Niceness of the builds: those the real-node stacks run at 0 (the longest lanes wait for
#: them), those only the KWOK stack runs at 5 (its lane yields to the real node's too), those of
#: single tests at 10 (they yield the CPU to tests already running).
KWOK_NICE, LATE_NICE = 5, 10
#: The steps a real-node stack waits for.
NODE_NEEDS = (
    "packages",
    *(f"build-{c.name}" for c in build.NODE_STACK),
    "images",
    "image-metacontroller",
)


def _component(name: str) -> Component:
    return next(c for c in BUILD_ORDER if c.name == name)


def graph(*, go: bool = True, node_tier: bool = True) -> list[steps.Step]:
    """The prepare's steps, in priority order: what a stack runs first (its downloads, then the
    images, whose build waits on downloads too, then its compiles), then what single tests
    need. The Go builds where Go can build them, the packages and images where a real node can
    run."""
    wanted = BUILD_ORDER if go else ()
    stack_parts = (*build.KWOK_STACK, *build.NODE_STACK)

    def nice(component: Component) -> int:
        if component in build.NODE_STACK:
            return 0
        return KWOK_NICE if component in build.KWOK_STACK else LATE_NICE

    fetches = [_step(f"fetch-{c.name}", kind=steps.NETWORK) for c in wanted]
    first = sum(1 for c in wanted if c in stack_parts)
    graph_: list[steps.Step] = []
    if node_tier:
        graph_.append(_step("packages", kind=steps.NETWORK))
    graph_ += fetches[:first]
    if node_tier:
        # Mostly downloads (Debian packages, wheels inside the builds): beside two compiles.
        graph_.append(_step("images", needs=("packages",), kind=steps.NETWORK))
    graph_.append(_step("mxnet", kind=steps.NETWORK))
    graph_ += fetches[first:]
    graph_ += [_step(f"build-{c.name}", needs=(f"fetch-{c.name}",), nice=nice(c)) for c in wanted]
    if node_tier:
        graph_.append(
            _step(
                "image-metacontroller",
                needs=("images", f"build-{build.METACONTROLLER.name}"),
                kind=steps.NETWORK,
            )
        )
    return graph_


def _step(
    name: str, needs: tuple[str, ...] = (), kind: str = steps.CPU, nice: int = 0
) -> steps.Step:
    argv = steps.python("-m", "tools.cluster", "step", name)
    return steps.Step(name, argv, needs=needs, kind=kind, nice=nice)


def run_step(name: str, cache: Path, log: Log) -> str:
    """Carry out one step of the graph in this process; what it did: `cached` when it found
    its work done (the timing table's word), else what it made."""
    kind, _, what = name.partition("-")
    builder = images.Builder(cache, log)
    actions: dict[str, Callable[[], bool]] = {
        "packages": lambda: bool(host.install_packages(log)),
        "mxnet": lambda: mxnet_env.python(cache) is None and bool(mxnet_env.prepare(cache, log)),
        "images": lambda: bool(builder.all(without=(images.METACONTROLLER,)) and builder.made),
        "image-metacontroller": lambda: bool(builder.all() and builder.made),
    }
    if name in actions:
        return "made" if actions[name]() else "cached"
    if kind == "fetch":
        return "downloaded" if build.fetch_component(_component(what), cache, log) else "cached"
    if kind == "build":
        return "built" if build.build_component(_component(what), cache, log) else "cached"
    raise SystemExit(f"unknown step {name!r}")


def _built_by(step: steps.Step) -> Component | None:
    kind, _, name = step.name.partition("-")
    return _component(name) if kind == "build" else None


def announce(graph: list[steps.Step], pending: Path) -> None:
    """A file in `pending` for each build of `graph`: while it is there, a test that needs the
    component waits for that build rather than compile it itself (`build.need`, with
    `build.PENDING_SETTING` naming `pending`)."""
    for component in filter(None, map(_built_by, graph)):
        (pending / f"{component.name}-{component.version}").touch()


def settle(pending: Path, done: steps.Done) -> None:
    """A step ended (or was given up): a build's file in `pending` goes, whatever became of
    the build (a test that still lacks the component then builds it, or says why not)."""
    component = _built_by(done.step)
    if component is not None:
        (pending / f"{component.name}-{component.version}").unlink(missing_ok=True)


def plan(cache: Path, log: Log) -> list[steps.Step]:
    """The prepare's steps for the tiers this machine can run; each tier it cannot run is
    named with its reason instead (its tests then skip, or fail under E2E=required)."""
    kwok_reason = build.unavailable_reason(cache)
    if kwok_reason:
        log(f"KWOK tier not prepared: {kwok_reason}")
    node_reason = host.host_reason() or kwok_reason
    if node_reason:
        log(f"real-node tier not prepared: {node_reason}")
    return graph(go=not kwok_reason, node_tier=not node_reason)


def run(cache: Path, log: Log) -> dict[str, steps.Done]:
    """The prepare alone (`python -m tools.cluster prepare`)."""
    return steps.Runner(plan(cache, log), log=log).run()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", help="a step of the prepare graph (tools/cluster/prepare.py)")
