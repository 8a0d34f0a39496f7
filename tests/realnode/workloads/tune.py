"""MXTune for the real-node tier: TVM's RPC tracker, servers and a tuner, wired by MX_CONFIG only.

TunerTracker: runs TVM's RPC tracker on its mxjob-port. TunerServer: runs TVM's RPC server and
registers with the tracker under the key MX_CONFIG gives its type (`labels.tunerserver`, from the
template's `tuner-server-key` annotation). Tuner: waits until every TunerServer has registered,
asks the tracker for a session by that key, round-trips an array through the remote device and
a file through the remote file system, and exits 0 only if both come back intact.
"""

import json
import os
import sys
import time

import numpy as np
import tvm
from tvm import rpc


def main() -> int:
    config = json.loads(os.environ["MX_CONFIG"])
    role = config["task"]["type"]
    tracker = config["cluster"]["tunertracker"][0]
    key = config["labels"]["tunerserver"]
    if role == "tunertracker":
        argv = ["--host=0.0.0.0", f"--port={tracker['port']}", f"--port-end={tracker['port'] + 1}"]
        os.execvp(sys.executable, [sys.executable, "-m", "tvm.exec.rpc_tracker", *argv])
    if role == "tunerserver":
        argv = [f"--tracker={tracker['url']}:{tracker['port']}", f"--key={key}", "--host=0.0.0.0"]
        os.execvp(sys.executable, [sys.executable, "-m", "tvm.exec.rpc_server", *argv])
    servers = len(config["cluster"]["tunerserver"])
    session = connect(tracker["url"], int(tracker["port"]), key, servers)
    data = np.arange(12, dtype="float32").reshape(3, 4)
    remote = tvm.runtime.tensor(data, device=session.cpu(0)).numpy()
    session.upload(bytearray(b"mxjob"), "probe.txt")
    echoed = bytes(session.download("probe.txt"))
    print(f"tuner: {servers} servers under key {key!r}; array back: {remote.tolist()}", flush=True)
    return 0 if np.array_equal(remote, data) and echoed == b"mxjob" else 1


def connect(host: str, port: int, key: str, servers: int) -> rpc.RPCSession:
    """A session from the tracker once `servers` servers have registered under `key`."""
    deadline = time.monotonic() + 120
    while True:
        try:
            tracker = rpc.connect_tracker(host, port)
            free = tracker.summary()["queue_info"].get(key, {}).get("free", 0)
            if free >= servers:
                return tracker.request(key, priority=1, session_timeout=60)
            print(f"tuner: {free}/{servers} servers registered under {key!r}", flush=True)
        except (OSError, RuntimeError, tvm.TVMError) as exc:
            print(f"tuner: tracker not ready: {exc}", flush=True)
        if time.monotonic() > deadline:
            raise SystemExit("tuner: servers did not register within 120 s")
        time.sleep(1)


if __name__ == "__main__":
    sys.exit(main())
