"""How a job goes on after a failure or an edit (docs/restarts.md): a replica slot replaced alone
(`slots`), the whole job restarted as a new run (`runs`), a replacement Worker held back until
ps-lite can take it (`rejoin`), and a running job resized by a restart (`resize`)."""
