# Benchmark and load run of the hook, included by the Makefile (`include bench/bench.mk`).
# Uses $(BIN) (the virtualenv's bin) and $(STAMP) (requirements installed) from the Makefile.
# Both start gunicorn on 127.0.0.1 on a port the kernel picks, and stop it when done.

.PHONY: bench load

BENCH_ARGS ?=
LOAD_ARGS ?=

## bench: time a sync of 1 to 5000 replicas in-process and through gunicorn; a markdown table
bench: $(STAMP)
	$(BIN)/python -m bench.run $(BENCH_ARGS)

## load: 100,000 requests from concurrent clients against gunicorn; throughput, p99, worker RSS
load: $(STAMP)
	$(BIN)/python -m bench.load $(LOAD_ARGS)
