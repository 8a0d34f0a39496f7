"""mxjob: the Metacontroller hook that runs kubeflow.org/v1 MXJobs.

`hooks.core` holds every decision as pure functions; `hooks.app` is the thin HTTP edge
(`hooks.body` reads a request's body, `hooks.call` counts and logs each call).
"""
