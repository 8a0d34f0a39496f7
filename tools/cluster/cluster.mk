# Local e2e control plane (etcd, kube-apiserver, controller-manager, scheduler, Metacontroller,
# KWOK) built from the Go module proxy. Include from the top-level Makefile:
#     include tools/cluster/cluster.mk
# See tools/cluster/README.md.

CLUSTER_PYTHON ?= python3
CLUSTER := $(CLUSTER_PYTHON) -m tools.cluster
# Extra flags for `up`, e.g. CLUSTER_UP_FLAGS=--install-project
CLUSTER_UP_FLAGS ?=

.PHONY: cluster-build up down cluster-env cluster-status

## cluster-build: build etcd, Kubernetes, Metacontroller and KWOK into $$MXJOB_CACHE (once);
## with TIER=node, first the node's Debian packages (apt-get, only where one is missing)
cluster-build:
	if [ "$(TIER)" = node ]; then $(CLUSTER) step packages; fi
	$(CLUSTER) build

# TIER=kwok (default): control plane + KWOK, hook from the repository on 127.0.0.1:8080.
# TIER=node: a real node; Metacontroller and the hook run in the cluster from local images.
TIER ?= kwok
export TIER

## up: start the local cluster (TIER=kwok|node; idempotent); prints `export KUBECONFIG=...`
up: cluster-build
	$(CLUSTER) up $(CLUSTER_UP_FLAGS)

## down: stop the local cluster of TIER and undo what it changed on the host
down:
	$(CLUSTER) down

## cluster-env: print the export lines for the running control plane (eval "$$(make -s cluster-env)")
cluster-env:
	@$(CLUSTER) env

## cluster-status: show the control plane's processes
cluster-status:
	$(CLUSTER) status
