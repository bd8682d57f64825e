"""Hypothesis tests and their bookkeeping (p-values, multiple-testing adjustment)."""
