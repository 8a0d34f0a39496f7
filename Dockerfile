# The hook image, and that of the components that run from it with another command (`python -m
# mxjob.ttl`, `mxjob.certs`, `mxjob.events`, `mxjob.progress`, `mxjob.retention`, `mxjob.restarter`).
# Build: make image (docker, podman or buildah).
#
# Pinned base: a Python 3.11 patch release on Debian 13 slim. For reproducible releases pin the
# digest too (FROM python:3.11.14-slim-trixie@sha256:…), e.g. with Renovate.
ARG PYTHON_IMAGE=python:3.11.14-slim-trixie

# Dependencies go into a virtualenv in a build stage, so the final image has no pip cache and no
# build tooling; every wheel used is a prebuilt manylinux wheel.
FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/venv
COPY requirements.txt /tmp/requirements.txt
RUN /opt/venv/bin/pip install --no-compile -r /tmp/requirements.txt

FROM ${PYTHON_IMAGE}
# 65532: the conventional "nonroot" id; numeric so the kubelet can verify runAsNonRoot.
RUN groupadd --system --gid 65532 mxjob \
 && useradd --system --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin mxjob
COPY --from=build /opt/venv /opt/venv
WORKDIR /app
COPY hooks/ hooks/
COPY mxjob/ mxjob/
# The conversion webhook checks what a stash brings in against the CRD's v1 schema.
COPY manifests/crd/mxjobs.kubeflow.org.yaml manifests/crd/mxjobs.kubeflow.org.yaml
# Bytecode is compiled now: at run time the root filesystem is read-only.
RUN python -m compileall -q /opt/venv/lib hooks mxjob
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PORT=8080
USER 65532:65532
EXPOSE 8080
# hooks/gunicorn_config.py reads PORT, WEB_CONCURRENCY, GUNICORN_TMP_DIR and LOG_LEVEL.
CMD ["gunicorn", "--config", "hooks/gunicorn_config.py", "hooks.app:create_app()"]
