"""The restarter component: carries an MXJob's in-place restart order to its pods.

A job that restarts in place (runPolicy.restartStrategy InPlace, docs/restarts.md#in-place)
keeps its pods: each one's sidecar restarts every container when the pod's annotation
`mxjob.kubeflow.org/restart` changes, and its barrier holds the restarted pod until
`mxjob.kubeflow.org/go` changes. The hook decides when, and writes its word in the job's
`status.inPlaceRestart` (`{"run": N, "go": true|false}`); Metacontroller cannot write a pod's
annotations (pods are OnDelete children), so this small component (with list and watch on
`mxjobs`, list and patch on `pods`) writes them, with the pod's `mxjob.kubeflow.org/run` label.
`mxjob.restarter.plan` is the pure decision; `mxjob.restarter.controller` is the loop that talks to
the API server.
"""
