"""Reading finished runs: comparisons with intervals over repeats, reports, plots."""
