"""gunicorn settings for a CPU-bound JSON hook (read by `gunicorn --config`).

Sync workers, one per CPU by default: each request is pure computation, so threads would only
contend for the GIL. The worker timeout stays below Metacontroller's hook timeout (10 s default)
so a stuck worker is replaced before Metacontroller gives up and retries.
"""

import multiprocessing
import os

bind = f"{os.environ.get('HOST', '0.0.0.0')}:{os.environ.get('PORT', '8080')}"
workers = int(os.environ.get("WEB_CONCURRENCY", multiprocessing.cpu_count()))
worker_class = "sync"
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "9"))
graceful_timeout = 5
keepalive = 30
# The heartbeat file lives on tmpfs so a read-only root filesystem is fine and I/O never stalls.
_TMPFS = "/dev/shm"
worker_tmp_dir = os.environ.get("GUNICORN_TMP_DIR") or (_TMPFS if os.path.isdir(_TMPFS) else None)
max_requests = int(os.environ.get("GUNICORN_MAX_REQUESTS", "0"))
accesslog = None
errorlog = "-"
loglevel = os.environ.get("LOG_LEVEL", "info").lower()
