"""The retention component: releases the checkpoint claim of a deleted MXJob whose
`spec.checkpoint.retentionPolicy.whenDeleted` is Retain, then lets the job go.

A MutatingAdmissionPolicy keeps the finalizer `RETAIN_FINALIZER` on such a job, so that the
garbage collector cannot take the claim with it (docs/restarts.md#checkpoints). A Metacontroller
hook cannot touch its parent's finalizers nor a child it no longer lists, so this small component
(with list on `mxjobs`, patch on `mxjobs` and get and patch on `persistentvolumeclaims`) does it.
`mxjob.retention.release` is the pure decision; `mxjob.retention.controller` is the loop that talks
to the API server.
"""
