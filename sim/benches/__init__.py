"""Benchmarks behind ``kvsim bench TARGET``: one module per target with
``HELP``, ``add_arguments(parser)`` and ``main(args) -> int``. Each measures its
candidates side by side in one process and prints ratios, never absolute targets.
"""
