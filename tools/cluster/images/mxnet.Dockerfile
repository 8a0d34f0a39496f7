# MXNet 1.9.1 for the real-node tier's training pods (the wheel needs libquadmath0 and libgomp1,
# which the base image has). numpy<1.24: mxnet 1.9.1 still uses np.bool.
ARG BASE
FROM ${BASE}
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/venv && /opt/venv/bin/pip install mxnet==1.9.1 'numpy<1.24'
ENV PATH=/opt/venv/bin:$PATH PYTHONUNBUFFERED=1
