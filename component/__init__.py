"""What the project's API-calling components share (`python -m ttl`, `python -m certs`,
`python -m events`, `python -m retention`): the Kubernetes client and the MXJob list (`kube`),
which job a component acts on and how its logs name it (`ref`), JSON logs in the hook's shape
(`jsonlog`), and the command line of a loop of passes (`runtime`). The hook itself calls no API
and imports none of it."""
