"""The TTL controller: deletes finished MXJobs once `ttlSecondsAfterFinished` has passed.

A Metacontroller hook cannot delete its own parent, so this small separate component (with
get/list/watch/delete on `mxjobs` and nothing else) does it
(docs/run-policy.md#ttlsecondsafterfinished).
`mxjob.ttl.expiry` is the pure decision; `mxjob.ttl.controller` is the loop that talks to the API
server.
"""
