"""Sweeps: every grid point × repeat in its own child process and directory, resumable.

``layout`` (sim.rundir.layout) says where a point run lives and when it counts as
finished, ``identity`` what makes a resume safe, ``child`` what runs in the child
process, ``runner`` how the parent starts, watches and records one, and ``combine``
(sim.rundir.combine) how finished runs become the run's top-level tables.

A point child imports ``sim.sweep.child``, which imports this package first: it
imports nothing, so the child loads neither the parent's runner nor the combined
tables (kvsim bench startup).
"""
