"""Benchmarks against the real local stack (not tests): run `python -m bench.pipeline_bench`."""
