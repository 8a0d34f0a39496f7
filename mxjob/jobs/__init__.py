"""The user's loop over a cluster: `mxjob get`, `describe`, `wait`, `logs`, `submit` and
`delete` (docs/cli.md), over the user's kubeconfig like kubectl. What is shown is decided by
pure functions of the objects read (`view`, `waiting`, `replicas`); `api` and `follow` talk to
the API server."""
