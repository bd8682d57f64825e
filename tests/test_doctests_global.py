"""Run the examples in the docstrings of the global-battery modules."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "calaudit.metrics.skce", "calaudit.metrics.ece_variants", "calaudit.metrics.log_loss",
    "calaudit.metrics.clinical", "calaudit.inference.classical",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name))
    assert result.failed == 0
