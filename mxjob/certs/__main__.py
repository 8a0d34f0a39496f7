"""`python -m mxjob.certs`: the certificate keeper's command line.

    python -m mxjob.certs [--interval SECONDS] [--once] [--kubeconfig PATH]

Environment: CERTS_NAMESPACE (mxjob-system), CERTS_CA_SECRET (mxjob-convert-ca: the CA, the
keeper's alone), CERTS_SERVING_SECRET (mxjob-convert-serving: the serving pair the webhook's pods
mount), CERTS_LEGACY_SECRET (mxjob-convert-tls: the single Secret of an install before the
split, read while the CA Secret is empty), CERTS_SERVICE (mxjob-convert: the certificate is for
`<service>.<namespace>.svc` and its `.cluster.local` form), CERTS_DNS_NAMES (comma-separated
names instead of the service's, for a webhook the API server calls by URL), CERTS_CRD
(mxjobs.kubeflow.org), CERTS_INTERVAL_SECONDS (60), KUBECONFIG, LOG_LEVEL. Both Secrets must
exist: the install ships them, and the keeper creates none.
`--once` runs one pass and exits 1 if it failed. SIGTERM and SIGINT end the loop.
"""

import argparse
import os
import sys
from collections.abc import Sequence
from datetime import UTC, datetime

from kubernetes import client

from mxjob.certs import controller
from mxjob.component import runtime


def target_from_env() -> controller.Target:
    namespace = os.environ.get("CERTS_NAMESPACE") or "mxjob-system"
    service = os.environ.get("CERTS_SERVICE") or "mxjob-convert"
    names = [n.strip() for n in (os.environ.get("CERTS_DNS_NAMES") or "").split(",") if n.strip()]
    return controller.Target(
        namespace=namespace,
        ca_secret=os.environ.get("CERTS_CA_SECRET") or "mxjob-convert-ca",
        serving_secret=os.environ.get("CERTS_SERVING_SECRET") or "mxjob-convert-serving",
        legacy_secret=os.environ.get("CERTS_LEGACY_SECRET") or "mxjob-convert-tls",
        dns_names=tuple(names)
        or (f"{service}.{namespace}.svc", f"{service}.{namespace}.svc.cluster.local"),
        crd=os.environ.get("CERTS_CRD") or "mxjobs.kubeflow.org",
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="certs",
        description="Keep the conversion webhook's certificate and the CRD's caBundle.",
    )
    target = target_from_env()

    def once(api: client.ApiClient) -> None:
        for action in controller.run_once(api, target, datetime.now(UTC)):
            controller.LOG.info(action, extra={"fields": {"action": "write"}})

    return runtime.main(
        argv,
        parser,
        ("CERTS_INTERVAL_SECONDS", "60"),
        once,
        lambda api, interval, stop: controller.run(api, target, interval, stop),
    )


if __name__ == "__main__":
    sys.exit(main())
