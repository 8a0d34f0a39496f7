"""The progress component (`python -m mxjob.progress`, docs/status.md#progress): reads what running
MXJob Workers log of their training (MXNet's Speedometer lines and epoch ends) and keeps each
Worker's newest report on its pod, as the annotation the hook reads for `status.progress` and
the stall watchdog. `notes` decides what to write (pure); `collector` lists, reads and patches.
"""
