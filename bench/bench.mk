# Benchmark and load run of the hook, included by the Makefile (`include bench/bench.mk`).
# Uses $(BIN) (the virtualenv's bin) and $(STAMP) (requirements installed) from the Makefile.
# Both start gunicorn on 127.0.0.1 on a port the kernel picks, and stop it when done.

.PHONY: bench bench-system bench-restart bench-progress bench-first-round load fuzz compare compare-node

BENCH_ARGS ?=
LOAD_ARGS ?=

## bench: time a sync of 1 to 5000 replicas in-process and through gunicorn; a markdown table
bench: $(STAMP)
	$(BIN)/python -m bench.run $(BENCH_ARGS)

## load: 100,000 requests from concurrent clients against gunicorn; throughput, p99, worker RSS
load: $(STAMP)
	$(BIN)/python -m bench.load $(LOAD_ARGS)

FUZZ_ARGS ?=

## fuzz: 100,000 generated requests against gunicorn on 127.0.0.1, every answer checked;
## failures grouped by root cause, one shrunk reproducer each under .fuzz/ (not part of `make test`)
fuzz: $(STAMP)
	$(BIN)/python -m bench.fuzz $(FUZZ_ARGS)

BENCH_SYSTEM_ARGS ?=

## bench-system: a 1000-replica MXJob on the KWOK tier: wall time to Running, syncs, CPU of the
## hook against Metacontroller and kube-apiserver, and the 304s of a quiet job (~5 min warm)
bench-system: $(STAMP)
	$(BIN)/python -m bench.system $(BENCH_SYSTEM_ARGS)

BENCH_RESTART_ARGS ?=

## bench-restart: a 1000-replica MXJob's whole-job restart on the KWOK tier, Recreate then InPlace
## (the Server's pod deleted to every pod of the next run Running; ~12 min warm)
bench-restart: $(STAMP)
	$(BIN)/python -m bench.restart $(BENCH_RESTART_ARGS)

BENCH_PROGRESS_ARGS ?=

## bench-progress: the progress component with 200 running jobs on the KWOK tier (its fake kubelet
## serving Workers' logs): its CPU, memory and API calls, and the API server's added CPU (~8 min)
bench-progress: $(STAMP)
	$(BIN)/python -m bench.progress $(BENCH_PROGRESS_ARGS)

TRAINING_OPERATOR ?= v1.8.1
COMPARE_ARGS ?=

## compare: the same MXJob files through mxjob and Kubeflow training-operator $$TRAINING_OPERATOR
## (v1.8.1, or v1.7.0) on two KWOK stacks in turn: a scenario matrix and a 1000-replica job,
## side by side (docs/comparison.md; builds the operator once; not part of `make test`)
compare: $(STAMP)
	$(BIN)/python -m bench.compare --training-operator $(TRAINING_OPERATOR) $(COMPARE_ARGS)

## compare-node: real MXNet on the real node under mxjob, then training-operator $$TRAINING_OPERATOR:
## a Worker and a Server SIGKILLed mid-training (docs/comparison.md; root, Linux; ~10 min warm)
compare-node: $(STAMP)
	$(BIN)/python -m bench.compare.realnode --training-operator $(TRAINING_OPERATOR)

## bench-first-round: real MXNet on the real node, `kubectl apply` to the first training round
## of both Workers, as they start now and with the 5 s wait every Worker had before (root, Linux;
## ~6 min warm; docs/restarts.md#which-pods-wait)
bench-first-round: $(STAMP)
	$(BIN)/python -m bench.first_round
