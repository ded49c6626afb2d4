"""``kvsim search``: the highest rate (or the best worker count) that meets an SLO.

``slo`` parses and checks the objectives, ``strategy`` decides the next value to
try from the results so far (bisection, or a scan for worker counts), ``driver``
turns each try into an ordinary point of a run directory and runs it, and
``figure`` draws the search.
"""
