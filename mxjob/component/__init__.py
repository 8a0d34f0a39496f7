"""What the project's API-calling components share (`python -m mxjob.ttl`, `python -m mxjob.certs`,
`python -m mxjob.events`, `python -m mxjob.retention`): the Kubernetes client and the MXJob list
(`kube`), which job a component acts on and how its logs name it (`ref`), JSON logs in the hook's
shape (`jsonlog`), and the command line of a loop of passes (`runtime`). The hook itself calls no
API and imports none of it."""
