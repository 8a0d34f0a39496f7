"""The headless Service of a replica slot: a stable DNS name across replacement attempts."""

from typing import Any

from hooks.core.job import Job
from hooks.core.labels import slot_labels, slot_selector
from hooks.core.naming import Slot
from hooks.core.spec import mxnet_container


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


def desired_service(job: Job, slot: Slot) -> dict[str, Any]:
    """`clusterIP: None`, selecting the slot's pods by job name, replica type and index."""
    container = mxnet_container(job.spec.replicas[slot.rtype].template)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": slot.name(job.name),
            "namespace": job.namespace,
            "labels": slot_labels(job.name, slot),
        },
        "spec": {
            "clusterIP": "None",
            "selector": slot_selector(job.name, slot),
            "ports": service_ports(container),
            # Peers must resolve each other while they start, before any readiness probe passes.
            "publishNotReadyAddresses": True,
        },
    }
