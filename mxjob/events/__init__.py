"""Events for `kubectl describe mxjob`: each status transition the hook decided, told once as
an Event on the MXJob (docs/status.md#events). The hook cannot write Events and keeps no
credentials; this small component holds the one right it needs."""
