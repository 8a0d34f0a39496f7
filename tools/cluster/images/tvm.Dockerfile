# Apache TVM for the real-node tier's MXTune pods: its RPC tracker and server (tornado, psutil
# and cloudpickle are what they import beyond TVM itself).
ARG BASE
FROM ${BASE}
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/venv && /opt/venv/bin/pip install apache-tvm==0.27.0.post1 tornado psutil cloudpickle
ENV PATH=/opt/venv/bin:$PATH PYTHONUNBUFFERED=1
