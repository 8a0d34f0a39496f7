"""gunicorn settings for a CPU-bound JSON hook (read by `gunicorn --config`).

Workers of one process each, one per CPU by default: each request is pure computation, so more
threads would only contend for the GIL. They are `hooks.worker.BufferingWorker`s: the app gets a
request only once it has been read whole, within MXJOB_READ_TIMEOUT_SECONDS (5 s) of its accept,
and its answer is sent without blocking, so idle, slow and unread connections hold no worker; a
small request runs beside a large one, and the probes are answered at once. Every connection is
closed after its response (gunicorn's `keepalive` setting does not apply), so each Metacontroller
call opens a new connection: a TCP handshake, small next to the JSON of a sync. The worker
timeout stays below Metacontroller's hook timeout (10 s default) so a stuck worker is replaced
before Metacontroller gives up and retries.

Metrics: every worker writes its values to files under `PROMETHEUS_MULTIPROC_DIR` and
`GET /metrics` sums them (hooks/metrics.py). When the variable is not set, a private directory
on tmpfs is made for this server and removed when it stops; a directory given by the variable
is emptied at start (values of an earlier run would otherwise be added in). The variable must be
set before the app imports prometheus-client: it is set in `on_starting`, before workers are
forked, which is why `preload_app` stays off. The directory of a master that was killed
(SIGKILL, no `on_exit`) is removed by the next server that starts on the same machine.

TLS: with `MXJOB_TLS_DIR` set, every listener serves HTTPS with `tls.crt` and `tls.key` from
that directory (the conversion webhook's pods: the API server calls webhooks over HTTPS only).
The workers load the files for each connection, so a renewed certificate in a mounted Secret
is served without a restart.

Logs: gunicorn's own lines use the hook's JSON formatter, one object per line on stderr.
"""

import contextlib
import gc
import multiprocessing
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

bind = f"{os.environ.get('HOST', '0.0.0.0')}:{os.environ.get('PORT', '8080')}"
workers = int(os.environ.get("WEB_CONCURRENCY", multiprocessing.cpu_count()))
worker_class = "hooks.worker.BufferingWorker"
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "9"))
# On SIGTERM a worker finishes its request within this, or is killed and Metacontroller sees
# EOF (a SyncError): longer than the worker timeout, so no request that would be answered at all
# is cut by a stop.
graceful_timeout = timeout + 1
# The heartbeat file lives on tmpfs so a read-only root filesystem is fine and I/O never stalls.
_TMPFS = "/dev/shm"
_TMP = _TMPFS if os.path.isdir(_TMPFS) else None
worker_tmp_dir = os.environ.get("GUNICORN_TMP_DIR") or _TMP
max_requests = int(os.environ.get("GUNICORN_MAX_REQUESTS", "0"))
preload_app = False
_TLS_DIR = os.environ.get("MXJOB_TLS_DIR")
certfile = f"{_TLS_DIR}/tls.crt" if _TLS_DIR else None
keyfile = f"{_TLS_DIR}/tls.key" if _TLS_DIR else None
# No runtime control socket: its default path is per user, so two servers would share it.
control_socket_disable = True
accesslog = None
errorlog = "-"
loglevel = os.environ.get("LOG_LEVEL", "info").lower()

_LEVELS = ("debug", "info", "warning", "error", "critical")
_LEVEL = loglevel.upper() if loglevel in _LEVELS else "INFO"
logconfig_dict: dict[str, Any] = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"json": {"()": "hooks.logs.JsonFormatter"}},
    "handlers": {
        "json": {
            "class": "logging.StreamHandler",
            "formatter": "json",
            "stream": "ext://sys.stderr",
        }
    },
    "root": {"level": _LEVEL, "handlers": ["json"]},
    "loggers": {
        "gunicorn.error": {"level": _LEVEL, "handlers": ["json"], "propagate": False},
        # Off (level WARNING): every sync already logs one line with the job reference.
        "gunicorn.access": {"level": "WARNING", "handlers": ["json"], "propagate": False},
    },
}

_MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
#: Set when this config made the metrics directory, so that `on_exit` removes only its own.
_OWNED_ENV = "MXJOB_OWNED_PROMETHEUS_DIR"
_OWN_PREFIX = "mxjob-prometheus-"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _own_directory() -> Path:
    """`mxjob-prometheus-<master pid>` on tmpfs; those of masters that died are removed."""
    base = Path(_TMP or tempfile.gettempdir())
    for other in base.glob(f"{_OWN_PREFIX}*"):
        pid = other.name.removeprefix(_OWN_PREFIX)
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            shutil.rmtree(other, ignore_errors=True)
    return base / f"{_OWN_PREFIX}{os.getpid()}"


def on_starting(server: Any) -> None:
    """Set up the metrics directory before any worker (which imports the app) is forked.

    Its files are emptied: values of an earlier run would be summed in.
    """
    if not os.environ.get(_MULTIPROC_ENV):
        os.environ[_MULTIPROC_ENV] = os.environ[_OWNED_ENV] = str(_own_directory())
    directory = Path(os.environ[_MULTIPROC_ENV])
    directory.mkdir(parents=True, exist_ok=True)
    for stale in directory.glob("*.db"):
        stale.unlink(missing_ok=True)
    server.log.info("metrics of every worker are kept in %s", directory)


def post_worker_init(worker: Any) -> None:
    """The app is loaded: freeze what lives now, so collections scan only newer objects."""
    gc.freeze()


def child_exit(server: Any, worker: Any) -> None:
    """A worker has exited: its live gauges no longer count (its counters still do)."""
    from prometheus_client import multiprocess  # noqa: PLC0415  (after the env var is set)

    multiprocess.mark_process_dead(worker.pid)  # type: ignore[no-untyped-call]


def on_exit(server: Any) -> None:
    """Remove the metrics directory if this config made it."""
    owned = os.environ.get(_OWNED_ENV)
    if owned and owned == os.environ.get(_MULTIPROC_ENV):
        with contextlib.suppress(OSError):
            shutil.rmtree(owned)
