"""The headless Services that give replicas stable DNS names across replacement attempts: one
per replica slot, named after it, or (`serviceMode: PerJob`) one for the job, in which each pod
is its hostname (docs/environment.md#services)."""

from dataclasses import dataclass
from typing import Any

from hooks.core.api import LABEL_JOB_NAME
from hooks.core.children import Child, ServiceSpec, spec_of
from hooks.core.job import Job
from hooks.core.labels import at_index, job_labels, run_selector, slot_labels, slot_selector
from hooks.core.naming import RunNames, Slot, slot_prefix
from hooks.core.spec import ReplicaSpec, mxnet_container


@dataclass(frozen=True)
class _TypeParts:
    """What the Services of one replica type share: all but the index."""

    prefix: str
    #: The labels and selector of the type's slot 0.
    labels: dict[str, str]
    selector: dict[str, str]
    ports: list[dict[str, Any]]


def _type_parts(job: str, replica: ReplicaSpec, run: int) -> _TypeParts:
    """Built from the type's slot 0; the other slots differ only in the index."""
    first = Slot(replica.rtype, 0)
    return _TypeParts(
        prefix=slot_prefix(job, replica.rtype),
        labels=slot_labels(job, first),
        selector={**slot_selector(job, first), **run_selector(run)},
        ports=service_ports(mxnet_container(replica.template)),
    )


def service_ports(container: dict[str, Any]) -> list[dict[str, Any]]:
    """One named port per port of the mxnet container, sorted by name."""
    ports: dict[str, dict[str, Any]] = {}
    for port in container.get("ports", []):
        number = port["containerPort"]
        name = port.get("name") or f"port-{number}"
        protocol = port.get("protocol", "TCP")
        ports.setdefault(
            name, {"name": name, "port": number, "protocol": protocol, "targetPort": number}
        )
    return [ports[name] for name in sorted(ports)]


class ServiceMaker:
    """The Services of one job's run on one sync, of the run's `names` (run 0's, as this version
    makes them, unless given): their ports, labels and selector are built once per replica type,
    each Service adds its slot's name and index. The ports are shared read-only by the Services
    of a type."""

    def __init__(self, job: Job, run: int = 0, names: RunNames | None = None) -> None:
        self._job = job
        self._run = run
        self._subdomain = (names or job.names(run)).subdomain
        self._types = {
            rtype: _type_parts(job.name, spec, run) for rtype, spec in job.spec.replicas.items()
        }

    def job_service(self) -> dict[str, Any] | None:
        """With one Service per job, that Service: the run's pods' subdomain, `<job>-mxjob`,
        selecting the run's pods by job name and (from run 1 on) run, without ports (DNS names
        are all it gives: each pod `<slot name>.<job>-mxjob`, as JobSet does); else None."""
        if self._subdomain is None:
            return None
        selector = {LABEL_JOB_NAME: self._job.name, **run_selector(self._run)}
        labels = job_labels(self._job.name)
        return _headless(self._subdomain, self._job.namespace, labels, selector, [])

    def service(self, slot: Slot) -> dict[str, Any] | None:
        """The slot's own Service (None with one Service per job): `clusterIP: None`, selecting
        the slot's pods of the run by job name, replica type, index and (from run 1 on) run."""
        if self._subdomain is not None:
            return None
        parts = self._types[slot.rtype]
        index = str(slot.index)
        return _headless(
            parts.prefix + index,
            self._job.namespace,
            at_index(parts.labels, index),
            at_index(parts.selector, index),
            parts.ports,
        )


def _headless(
    name: str,
    namespace: str,
    labels: dict[str, str],
    selector: dict[str, str],
    ports: list[dict[str, Any]],
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "clusterIP": "None",
            "selector": selector,
            "ports": ports,
            # Peers must resolve each other while they start, before any readiness probe
            # passes.
            "publishNotReadyAddresses": True,
        },
    }


def same_service(desired: dict[str, Any], observed: Child) -> bool:
    """Whether an observed Service selects and serves as the desired one does."""
    spec = spec_of(observed, ServiceSpec)
    if spec is None:
        return False
    ports = {(p["port"], p["targetPort"]) for p in desired["spec"]["ports"]}
    return spec.selector == desired["spec"]["selector"] and ports == {
        (p.port, p.target_port) for p in spec.ports
    }
