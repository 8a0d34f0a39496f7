"""Scheduler integrations (docs/scheduling.md), one module each: Volcano (volcano.py),
scheduler-plugins' coscheduling (scheduler_plugins.py), Kueue (kueue.py) and the default
scheduler (default.py). Each says, behind one protocol (protocol.py), its group child, what it
puts on a pod, its problems with a spec and why a job waits for it; pick.py picks a job's once
and asks them for the core; shared.py holds what more than one of them reads."""
