"""The pure decision core: no HTTP, no Kubernetes client, no clock (`now` is a parameter)."""
