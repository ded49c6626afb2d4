"""How kvsim opens a file it was pointed at: bounded, regular, never blocking.

See :mod:`sim.files.read` and docs/design.md §7.
"""
