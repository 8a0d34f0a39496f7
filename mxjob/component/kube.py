"""The Kubernetes API as the components call it: a client from a kubeconfig or the pod's service
account, and every MXJob (or any other list) read a page at a time."""

from collections.abc import Callable, Iterator
from typing import Protocol

from kubernetes import client, config

from hooks.core.public import GROUP, VERSION, dig

PLURAL = "mxjobs"
PAGE_SIZE = 500
REQUEST_TIMEOUT_SECONDS = 30


class MXJobLister(Protocol):
    """The list calls of `kubernetes.client.CustomObjectsApi`, and their options."""

    def list_cluster_custom_object(
        self,
        group: str,
        version: str,
        plural: str,
        *,
        limit: int | None = None,
        _continue: str | None = None,
        _request_timeout: int | None = None,
    ) -> object: ...

    def list_namespaced_custom_object(
        self,
        group: str,
        version: str,
        namespace: str,
        plural: str,
        *,
        limit: int | None = None,
        _continue: str | None = None,
        _request_timeout: int | None = None,
    ) -> object: ...


def api_client(kubeconfig: str | None = None) -> client.ApiClient:
    """A client from `kubeconfig` if given, else in-cluster config, else ~/.kube/config."""
    # `kubernetes.config` has no type annotations (`kubernetes.client` has).
    configuration = client.Configuration()
    if kubeconfig:
        config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=kubeconfig, client_configuration=configuration
        )
    else:
        try:
            config.load_incluster_config(  # type: ignore[no-untyped-call]
                client_configuration=configuration
            )
        except config.ConfigException:
            config.load_kube_config(  # type: ignore[no-untyped-call]
                client_configuration=configuration
            )
    return client.ApiClient(configuration)


def list_jobs(api: MXJobLister, namespace: str | None = None) -> Iterator[object]:
    """Every MXJob (of `namespace`, or of all namespaces), a page at a time."""

    def page(token: str | None) -> object:
        if namespace:
            return api.list_namespaced_custom_object(
                GROUP, VERSION, namespace, PLURAL,
                limit=PAGE_SIZE, _continue=token, _request_timeout=REQUEST_TIMEOUT_SECONDS,
            )  # fmt: skip
        return api.list_cluster_custom_object(
            GROUP, VERSION, PLURAL,
            limit=PAGE_SIZE, _continue=token, _request_timeout=REQUEST_TIMEOUT_SECONDS,
        )  # fmt: skip

    return paged(page)


def paged(page: Callable[[str | None], object]) -> Iterator[object]:
    """Every item of a list the API server sends in pages: `page(token)` fetches the page after
    the continue token `token` (None: the first) as JSON; the items come as each page does."""
    token: str | None = None
    while True:
        fetched = page(token)
        items = dig(fetched, "items")
        yield from items if isinstance(items, list) else []
        token = dig(fetched, "metadata", "continue")
        if not isinstance(token, str) or not token:
            return
