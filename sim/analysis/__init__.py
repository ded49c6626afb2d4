"""Reading finished runs: comparisons with bootstrap intervals, reports, plots."""
