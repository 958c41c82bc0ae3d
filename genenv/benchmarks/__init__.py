"""Benchmark adapters and their registry (see :mod:`genenv.benchmarks.base`)."""
