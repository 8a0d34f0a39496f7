"""mxjob's own package: the `mxjob` command (`cli`, `jobs`), the components that call the API server
(`ttl`, `certs`, `events`, `progress`, `retention`, `restarter`) and the client they share
(`component`). The hook itself is `hooks`; everything here uses its decisions through
`hooks.core.public` only."""
