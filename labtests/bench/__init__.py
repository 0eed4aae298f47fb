"""Bench: `make bench` on the default preset, run as a user runs it and checked against its own files,
and a bench interrupted (test_bench, `make bench-check`).
"""
