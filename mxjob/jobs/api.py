"""The API server as `mxjob`'s cluster commands reach it: the user's kubeconfig (like kubectl:
`--kubeconfig`, `$KUBECONFIG`, `~/.kube/config`, `--context`; in a pod its service account),
every call with a timeout, answers as plain JSON objects."""

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import urllib3
from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError, InsecureRequestWarning

from hooks.core.public import GROUP, LABEL_JOB_NAME, MXNET_CONTAINER, VERSION, dig
from mxjob.component.kube import PLURAL, list_jobs

#: Seconds a call may take.
TIMEOUT = 30
#: Seconds a followed log may stay quiet before its stream is read again (mxjob/jobs/follow.py
#: then skips what it has written).
QUIET_SECONDS = 300
#: How long one watch of a job lasts before `watch_job` starts the next.
WATCH_SECONDS = 60
HTTP_GONE = 410
_SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


class ClusterError(Exception):
    """The cluster could not be reached or refused a call: the API server's own words."""


def _words(exc: Exception) -> str:
    if isinstance(exc, ApiException):
        body = exc.body.decode(errors="replace") if isinstance(exc.body, bytes) else exc.body
        try:
            message = json.loads(body or "").get("message")
        except (ValueError, AttributeError):
            message = None
        return f"{exc.status} {exc.reason}: {message or body or ''}".strip()
    return str(exc)


def _load(kubeconfig: str | None, context: str | None) -> tuple[client.Configuration, str]:
    """A client configuration and the context's namespace (`default` without one)."""
    configuration = client.Configuration()
    # `kubernetes.config` has no type annotations (`kubernetes.client` has).
    try:
        config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=kubeconfig, context=context, client_configuration=configuration
        )
        contexts, active = config.list_kube_config_contexts(  # type: ignore[no-untyped-call]
            config_file=kubeconfig
        )
    except config.ConfigException as exc:
        if kubeconfig or context or "KUBERNETES_SERVICE_HOST" not in os.environ:
            raise ClusterError(f"no cluster to talk to: {exc}") from exc
        config.load_incluster_config(  # type: ignore[no-untyped-call]
            client_configuration=configuration
        )
        return configuration, _SERVICE_ACCOUNT_NAMESPACE.read_text().strip() or "default"
    chosen = next((c for c in contexts if c.get("name") == context), active) if context else active
    return configuration, str(dig(chosen, "context", "namespace") or "default")


class Cluster:
    """The calls the cluster commands make, in one namespace unless told otherwise."""

    def __init__(self, kubeconfig: str | None, context: str | None, namespace: str | None) -> None:
        configuration, default = _load(kubeconfig, context)
        if not configuration.verify_ssl:
            # The kubeconfig asks for it (insecure-skip-tls-verify): kubectl says nothing either.
            urllib3.disable_warnings(InsecureRequestWarning)
        self.api = client.ApiClient(configuration)
        self.core = client.CoreV1Api(self.api)
        self.custom = client.CustomObjectsApi(self.api)
        self.namespace = namespace or default

    def _json(self, call: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            response = call(*args, _preload_content=False, _request_timeout=TIMEOUT, **kwargs)
            return json.loads(response.data)
        except (ApiException, HTTPError, OSError, ValueError) as exc:
            raise ClusterError(_words(exc)) from exc

    def job(self, name: str) -> dict[str, Any] | None:
        """The MXJob, or None if there is none of that name."""
        try:
            found: dict[str, Any] = self._json(
                self.custom.get_namespaced_custom_object,
                GROUP, VERSION, self.namespace, PLURAL, name,
            )  # fmt: skip
        except ClusterError as exc:
            if isinstance(exc.__cause__, ApiException) and exc.__cause__.status == 404:
                return None
            raise
        return found

    def jobs(self, *, every_namespace: bool) -> list[dict[str, Any]]:
        """Every MXJob of the namespace (or of all of them), a page at a time."""
        try:
            namespace = None if every_namespace else self.namespace
            return [j for j in list_jobs(self.custom, namespace) if isinstance(j, dict)]
        except (ApiException, HTTPError, OSError) as exc:
            raise ClusterError(_words(exc)) from exc

    def pods(self, job: str) -> list[dict[str, Any]]:
        """The job's pods, every attempt (by the job-name label every pod of it carries)."""
        found = self._json(
            self.core.list_namespaced_pod, self.namespace, label_selector=f"{LABEL_JOB_NAME}={job}"
        )
        return [p for p in found.get("items", []) if isinstance(p, dict)]

    def count(self, job: str) -> dict[str, int]:
        """How many pods, Services and ConfigMaps the job has."""
        selector = f"{LABEL_JOB_NAME}={job}"
        calls = {
            "pods": self.core.list_namespaced_pod,
            "services": self.core.list_namespaced_service,
            "configmaps": self.core.list_namespaced_config_map,
        }
        return {
            kind: len(self._json(call, self.namespace, label_selector=selector).get("items", []))
            for kind, call in calls.items()
        }

    def events(self, job: str) -> list[dict[str, Any]]:
        """The Events about the MXJob (the Events component's, Metacontroller's)."""
        found = self._json(
            self.core.list_namespaced_event,
            self.namespace,
            field_selector=f"involvedObject.kind=MXJob,involvedObject.name={job}",
        )
        return [e for e in found.get("items", []) if isinstance(e, dict)]

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Create an MXJob at the version it names, in its namespace or the command's."""
        group, _, version = str(obj.get("apiVersion", "")).rpartition("/")
        namespace = dig(obj, "metadata", "namespace") or self.namespace
        created: dict[str, Any] = self._json(
            self.custom.create_namespaced_custom_object,
            group or GROUP, version or VERSION, namespace, PLURAL, obj,
        )  # fmt: skip
        return created

    def delete(self, name: str) -> None:
        """Delete the MXJob in the foreground: the API server removes it once its pods,
        Services and ConfigMaps are gone (Metacontroller's children block it until then)."""
        self._json(
            self.custom.delete_namespaced_custom_object,
            GROUP, VERSION, self.namespace, PLURAL, name,
            body={"propagationPolicy": "Foreground"},
        )  # fmt: skip

    def watch_job(self, name: str, since: str, seconds: float) -> Iterator[dict[str, Any] | None]:
        """Each new version of the job after resourceVersion `since`, for up to `seconds`
        (None once it is deleted); ends early when the watch is too old to resume."""
        stream = watch.Watch().stream(  # type: ignore[no-untyped-call]
            self.custom.list_namespaced_custom_object,
            GROUP, VERSION, self.namespace, PLURAL,
            field_selector=f"metadata.name={name}", resource_version=since,
            timeout_seconds=max(int(seconds), 1), _request_timeout=seconds + TIMEOUT,
        )  # fmt: skip
        try:
            for change in stream:
                kind, obj = change.get("type"), change.get("object")
                if kind == "ERROR":
                    return
                yield None if kind == "DELETED" else obj
        except ApiException as exc:
            if exc.status == HTTP_GONE:  # too old to resume: the caller reads the job again
                return
            raise ClusterError(_words(exc)) from exc
        except (HTTPError, OSError, ValueError) as exc:
            raise ClusterError(_words(exc)) from exc

    def log(self, pod: str, *, follow: bool) -> Any:
        """The mxnet container's log as a stream of bytes (urllib3's response: `.stream()`,
        `.release_conn()`); followed, it ends when the container does (or stays quiet for
        QUIET_SECONDS)."""
        timeout = (TIMEOUT, QUIET_SECONDS) if follow else TIMEOUT
        try:
            return self.core.read_namespaced_pod_log(
                pod, self.namespace, container=MXNET_CONTAINER, follow=follow,
                _preload_content=False, _request_timeout=timeout,
            )  # fmt: skip
        except (ApiException, HTTPError, OSError) as exc:
            raise ClusterError(_words(exc)) from exc
