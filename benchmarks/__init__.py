"""Benchmarks of the placement service over HTTP (see benchmarks/README.md).

Run from the repository root, as modules: ``python -m benchmarks.run_foundation``.
"""
