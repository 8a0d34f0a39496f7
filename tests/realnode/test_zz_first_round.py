"""Ad-hoc (not committed): apply -> first training round, default Services, 3 runs."""

import time
from datetime import datetime

from tests.e2e.conftest import NAMESPACE, wait_for
from tests.realnode.conftest import Node, mxjob, replica

ENV = {"ROUNDS": "30", "ROUND_SECONDS": "0.1"}


def _first_round(cluster: Node, pod: str) -> float:
    out = cluster.kubectl("logs", "--timestamps", "-n", NAMESPACE, pod, check=False).stdout
    for line in out.splitlines():
        stamp, _, text = line.partition(" ")
        if "round 0 ok" in text:
            return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    raise AssertionError(out)


def test_first_round(cluster: Node) -> None:
    image = cluster.image("mxjob-mxnet")
    for i in range(3):
        name = f"first-{i}"
        job = mxjob(
            name,
            {
                "Scheduler": replica(image, policy="ExitCode", env=ENV),
                "Server": replica(image, policy="ExitCode", env=ENV),
                "Worker": replica(image, replicas=2, policy="ExitCode", env=ENV),
            },
        )
        applied = time.time()
        cluster.apply(job)
        cluster.wait_condition(name, "Succeeded", timeout=180)
        firsts = [_first_round(cluster, f"{name}-worker-{w}") for w in range(2)]
        print(f"\nFIRST-ROUND {name}: {max(firsts) - applied:.2f}s after apply")
        for pod, obj in sorted(cluster.pods(name).items()):
            st = obj["status"]
            started = [
                (c["name"], c["state"].get("terminated", {}).get("startedAt"))
                for c in st.get("initContainerStatuses", []) + st.get("containerStatuses", [])
            ]
            made = obj["metadata"]["creationTimestamp"]
            print(f"  {pod}: created {made} started {started}")
        print(f"  applied {datetime.fromtimestamp(applied).isoformat()} firsts {[datetime.fromtimestamp(f).isoformat() for f in firsts]}")
        cluster.delete("mxjob", name)
        wait_for("gone", lambda n=name: not cluster.pods(n), 60)
