"""Command line: ``python3 -m tools.cluster build|up|down|env|status`` (run from the repo root)."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from pathlib import Path

from tools import steps
from tools.cluster import build, prepare, report
from tools.cluster.kwok_node import KwokNode
from tools.cluster.node import Node, StackError
from tools.cluster.real_node import RealNode
from tools.cluster.stack import Stack, default_run_dir

REPO = Path(__file__).resolve().parents[2]


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _exports(stack: Stack) -> str:
    kubectl_dir = stack.bin("kubectl").parent
    return (
        f"export KUBECONFIG={shlex.quote(str(stack.kubeconfig))}\n"
        f"export PATH={shlex.quote(str(kubectl_dir))}:$PATH"
    )


def cmd_build(args: argparse.Namespace) -> int:
    start = time.monotonic()
    spent = build.build_all(args.cache, _log)
    for name, seconds in spent.items():
        _log(f"  {name:15s} {'cached' if seconds == 0 else f'built in {seconds:.0f}s'}")
    _log(f"build done in {time.monotonic() - start:.1f}s; cache: {args.cache}")
    return 0


def cmd_prepare(args: argparse.Namespace) -> int:
    """Build what each end-to-end tier needs, side by side, with progress on the terminal; a
    tier this machine cannot run is skipped with its reason, and its tests skip with the same
    one. Ends with the table of what each step took."""
    began, start = time.time(), report.Machine.now()
    done = prepare.run(args.cache, _log)
    for line in report.table(done, args.cache, began, start, report.Machine.now()):
        _log(line)
    return 0 if all(d.ok for d in done.values()) else 1


def cmd_step(args: argparse.Namespace) -> int:
    """One step of the prepare (a fetch, a build, the images), as `prepare` runs it."""
    print(f"{steps.RESULT}{prepare.run_step(args.name, args.cache, _log)}", flush=True)
    return 0


def _run_dir(args: argparse.Namespace) -> Path:
    """The given run dir, else the tier's own default (so both playgrounds can be up)."""
    if args.run_dir is not None:
        return Path(args.run_dir)
    default = default_run_dir()
    return default.with_name(default.name + "-node") if args.tier == "node" else default


def _node(args: argparse.Namespace) -> Node:
    """The node of the tier asked for."""
    if args.tier == "node":
        return RealNode()
    return KwokNode(count=args.nodes, pod_stages=args.pod_stages)


def cmd_up(args: argparse.Namespace) -> int:
    args.run_dir = _run_dir(args)
    existing = Stack.load(args.run_dir, cache_dir=args.cache, log=_log)
    if existing and existing.is_running():
        _log(f"already up (run dir {args.run_dir}); `down` first to restart")
        print(_exports(existing))
        return 0
    base = args.port_base or int(os.environ.get("MXJOB_PORT_BASE", "0")) or None
    stack = Stack(
        run_dir=args.run_dir,
        cache_dir=args.cache,
        port_base=base,
        log=_log,
        node=_node(args),
    )
    try:
        stack.start()
        if args.install_project:
            stack.install_project(REPO, args.hook_cmd, args.hook_port)
    except (StackError, build.BuildError) as exc:
        _log(f"error: {exc}")
        _log(f"logs kept in {stack.logs_dir}")
        return 1
    for name, port in stack.ports.items():
        _log(f"  {name:24s} port {port}")
    _log(f"  logs: {stack.logs_dir}")
    print(_exports(stack))
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    args.run_dir = _run_dir(args)
    stack = Stack.load(args.run_dir, cache_dir=args.cache, log=_log)
    if stack is None:
        _log(f"nothing to stop in {args.run_dir}")
        return 0
    stack.stop(remove=True)
    _log(f"stopped; removed {args.run_dir}")
    return 0


def cmd_env(args: argparse.Namespace) -> int:
    args.run_dir = _run_dir(args)
    stack = Stack.load(args.run_dir, cache_dir=args.cache, log=_log)
    if stack is None:
        _log(f"no stack in {args.run_dir}; run `up` first")
        return 1
    print(_exports(stack))
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    args.run_dir = _run_dir(args)
    stack = Stack.load(args.run_dir, cache_dir=args.cache, log=_log)
    if stack is None:
        print(f"down (no state in {args.run_dir})")
        return 1
    for name, pid in stack.pids.items():
        print(f"{name:24s} pid {pid:<8d} {'running' if stack.owns(name, pid) else 'DEAD'}")
    ok = stack.is_running()
    print("up" if ok else "degraded")
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m tools.cluster", description=__doc__)
    parser.add_argument(
        "--cache",
        type=Path,
        default=build.default_cache_dir(),
        help="build cache (default $MXJOB_CACHE or ~/.cache/mxjob-e2e)",
    )
    parser.add_argument(
        "--run-dir",
        type=Path,
        default=None,
        help="state of the running stack (default $MXJOB_RUN or <cache>/run; <cache>/run-node "
        "for the node tier)",
    )
    parser.add_argument(
        "--tier",
        choices=("kwok", "node"),
        default=os.environ.get("TIER", "kwok"),
        help="kwok: control plane + KWOK fake nodes, hook on the host (fast, scale); node: "
        "a real kubelet running real pods, the hook and Metacontroller in the cluster "
        "(default $TIER or kwok)",
    )
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("build", help="build missing components into the cache").set_defaults(
        fn=cmd_build
    )
    sub.add_parser(
        "prepare", help="build binaries and images of every tier this machine can run"
    ).set_defaults(fn=cmd_prepare)
    step = sub.add_parser("step", help="one step of `prepare` (tools/cluster/prepare.py)")
    prepare.add_arguments(step)
    step.set_defaults(fn=cmd_step)
    up = sub.add_parser("up", help="start the stack (idempotent) and print export lines")
    up.add_argument(
        "--port-base",
        type=int,
        default=0,
        help="fixed ports base..base+5 (default $MXJOB_PORT_BASE or free ports)",
    )
    up.add_argument("--nodes", type=int, default=1, help="number of KWOK nodes")
    up.add_argument("--pod-stages", choices=("fast", "general"), default="fast")
    up.add_argument(
        "--install-project",
        action="store_true",
        help="kwok: apply the CRD file of manifests/crd, start the hook, apply "
        "metacontroller/overlays/local; node: install Metacontroller, manifests/crd and "
        "manifests/overlays/standard in the cluster",
    )
    up.add_argument("--hook-cmd", default="make run", help="hook command (gets $PORT)")
    up.add_argument("--hook-port", type=int, default=8080)
    up.set_defaults(fn=cmd_up)
    sub.add_parser("down", help="stop the stack and remove its run dir").set_defaults(fn=cmd_down)
    sub.add_parser("env", help="print export lines for a running stack").set_defaults(fn=cmd_env)
    sub.add_parser("status", help="show the stack's processes").set_defaults(fn=cmd_status)
    args = parser.parse_args(argv)
    try:
        return int(args.fn(args))
    except build.BuildError as exc:
        _log(f"error: {exc}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
