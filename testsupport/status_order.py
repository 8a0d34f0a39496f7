"""The order statuses must keep while a job runs, restarts and ends: what the real-node
tier's status recorder checks against every status it sees, and what the pure core's status
sequences are checked against without a cluster (tests/test_status_order.py)."""

from typing import Any


def backwards(before: dict[str, Any], after: dict[str, Any]) -> str | None:
    """How `after` undoes `before`, or None: startTime and completionTime kept once set, no
    condition type disappears (Running and Restarting replace each other), a terminal condition
    stays True, restart counts never fall, nor do succeeded and failed counts unless a restart
    is counted at the same time or `before` was Restarting: the status that counts a restart
    still counts the failed attempt, the next one counts its replacement (docs/status.md)."""
    for key in ("startTime", "completionTime"):
        if key in before and after.get(key) != before[key]:
            return f"{key} changed from {before[key]} to {after.get(key)}"
    old = {c["type"]: c["status"] for c in before.get("conditions", [])}
    new = {c["type"]: c["status"] for c in after.get("conditions", [])}
    missing = set(old) - set(new)
    for one, other in (("Running", "Restarting"), ("Restarting", "Running")):
        if other in new:
            missing.discard(one)  # these two replace each other (docs/status.md)
    if missing:
        return f"conditions {sorted(missing)} disappeared"
    for terminal in ("Succeeded", "Failed"):
        if old.get(terminal) == "True" and new[terminal] != "True":
            return f"{terminal} went back to {new[terminal]}"
    old_counts, new_counts = before.get("replicaStatuses", {}), after.get("replicaStatuses", {})
    replaced = old.get("Restarting") == "True" or sum(
        c.get("restarts", 0) for c in new_counts.values()
    ) > sum(c.get("restarts", 0) for c in old_counts.values())
    for rtype, counts in old_counts.items():
        later = new_counts.get(rtype, {})
        for key in ("restarts",) if replaced else ("succeeded", "failed", "restarts"):
            if later.get(key, 0) < counts.get(key, 0):
                return f"{rtype} {key} fell from {counts.get(key, 0)} to {later.get(key, 0)}"
    return None
