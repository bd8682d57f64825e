"""Presenting an :class:`~calaudit.results.AuditResult`: JSON, the terminal summary and
rendered documents. Nothing here computes statistics or reads input data."""
