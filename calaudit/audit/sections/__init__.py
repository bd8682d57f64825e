"""Sections of the audit configuration, one module per family of checks."""
