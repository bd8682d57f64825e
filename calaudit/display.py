"""The notebook view of a result (``result._repr_html_()``): installed by the package as
:func:`calaudit.output.notebook.result_html`, so the result objects import nothing of the
output layer."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_result_html: Callable[[Any], str] | None = None


def install_result_html(view: Callable[[Any], str]) -> None:
    """Make ``view`` (``result -> HTML``) the notebook view of every audit result."""
    global _result_html
    _result_html = view


def result_html(result: Any) -> str:
    """The notebook HTML of ``result``, written by the installed view."""
    if _result_html is None:
        raise RuntimeError("no notebook view of audit results is installed")
    return _result_html(result)
