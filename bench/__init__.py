"""Benchmark and load run of the hook (`make bench`, `make load`); see bench/bench.mk."""
