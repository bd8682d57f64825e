"""Reading a saved JSON result (``calaudit report``, ``--baseline``, ``calaudit compare``):
one reader and one schema check, within the limits of docs/result-schema.md ("Reading a
saved result")."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from calaudit.exceptions import InputError
from calaudit.files import FileProblem, nesting_depth, read_limited
from calaudit.limits import RESULT_MAX_BYTES, RESULT_MAX_DEPTH, RESULT_MAX_INT_DIGITS
from calaudit.results import SCHEMA_VERSION

HINT = "give the file written by calaudit test --json"
#: Top-level keys every result has, with their JSON types.
REQUIRED = {"schema_version": int, "calaudit_version": str, "created_at": str,
            "inputs": dict, "data": dict, "config": dict, "metrics": list, "tests": list,
            "verdict": str}
#: Keys that later schema additions fill; absent means empty.
OPTIONAL = {"local": dict, "groups": list, "diagrams": dict, "environment": dict,
            "gate": dict, "baseline": dict}
TYPE_NAMES = {int: "an integer", str: "a string", dict: "an object", list: "a list"}
#: Fields of ``metrics[]`` / ``tests[]`` entries that must be a number or null.
NUMBERS = {"metrics": ("value",), "tests": ("statistic", "p_value", "p_value_adjusted")}


def read_json_result(path: str | Path) -> tuple[Any, bytes]:
    """The decoded JSON at ``path`` (not yet schema-checked) and its raw bytes."""
    source = str(path)
    try:
        raw = read_limited(path, RESULT_MAX_BYTES, "the result file")
    except FileProblem as exc:
        raise InputError(exc.message, source=source, rule="result_file",
                         hint=exc.hint) from None
    try:
        payload = json.loads(raw.decode("utf-8"), parse_int=_parse_int,
                             parse_constant=_refuse_constant)
    except UnicodeDecodeError as exc:
        raise _error(source, f"not valid JSON: not UTF-8 text ({exc.reason} at byte "
                     f"{exc.start})", "json") from None
    except json.JSONDecodeError as exc:
        raise _error(source, f"not valid JSON: {exc.msg} at line {exc.lineno}, column "
                     f"{exc.colno}", "json") from None
    except RecursionError:
        raise _error(source, f"JSON nested deeper than {RESULT_MAX_DEPTH} levels",
                     "json") from None
    except _Refused as exc:
        raise _error(source, str(exc), "json") from None
    if nesting_depth(payload, RESULT_MAX_DEPTH) > RESULT_MAX_DEPTH:
        raise _error(source, f"JSON nested deeper than {RESULT_MAX_DEPTH} levels", "json")
    return payload, raw


def read_result_file(path: str | Path) -> tuple[dict[str, Any], bytes]:
    """The schema-checked result at ``path`` and its raw bytes."""
    payload, raw = read_json_result(path)
    return check_result(payload, str(path)), raw


def check_result(result: Any, source: str = "result") -> dict[str, Any]:
    """The shape every reader of a saved result relies on (``docs/result-schema.md``)."""
    if not isinstance(result, dict):
        raise _error(source, f"not a calaudit JSON result: expected a JSON object, got "
                     f"{_json_type(result)}")
    if result.get("kind") == "comparison":
        raise _error(source, "is a comparison written by calaudit compare, not an audit "
                     "result")
    if "schema_version" not in result:
        raise _error(source, "not a calaudit JSON result (no schema_version)")
    version = result["schema_version"]
    if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:
        raise InputError(f"schema_version {version} is not supported: it is newer than this "
                         f"calaudit understands ({SCHEMA_VERSION})", source=source,
                         rule="result_schema", hint="upgrade calaudit")
    if version != SCHEMA_VERSION or isinstance(version, bool):
        raise _error(source, f"schema_version {_shown(version)} is not supported (this "
                     f"calaudit reads version {SCHEMA_VERSION})")
    missing = [key for key in REQUIRED if key not in result]
    if missing:
        raise _error(source, f"not a calaudit JSON result: missing {', '.join(missing)}")
    for key, kind in {**REQUIRED, **OPTIONAL}.items():
        if key in result and not isinstance(result[key], kind):
            raise _error(source, f"'{key}' must be {TYPE_NAMES[kind]}, not "
                         f"{_json_type(result[key])}")
    for key, numbers in NUMBERS.items():
        for i, item in enumerate(result[key]):
            _check_entry(item, f"{key}[{i}]", numbers, source)
    return result


def _check_entry(item: Any, where: str, numbers: tuple[str, ...], source: str) -> None:
    if not isinstance(item, dict) or not isinstance(item.get("id"), str) or not item["id"]:
        raise _error(source, f"'{where}' must be an object with a string 'id'")
    for name in numbers:
        value = item.get(name)
        if value is not None and (isinstance(value, bool)
                                  or not isinstance(value, (int, float))):
            raise _error(source, f"'{where}.{name}' must be a number or null, not "
                         f"{_json_type(value)}")
    if "params" in item and not isinstance(item["params"], dict):
        raise _error(source, f"'{where}.params' must be an object")
    if item.get("status") is not None and not isinstance(item["status"], str):
        raise _error(source, f"'{where}.status' must be a string")
    ci = item.get("ci")
    if ci is not None and not (isinstance(ci, list) and len(ci) == 2 and all(
            v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))
            for v in ci)):
        raise _error(source, f"'{where}.ci' must be null or a list of two numbers")


class _Refused(ValueError):
    pass


def _parse_int(text: str) -> int:
    if len(text.lstrip("-")) > RESULT_MAX_INT_DIGITS:
        raise _Refused(f"an integer of {len(text)} digits (the limit is "
                       f"{RESULT_MAX_INT_DIGITS})")
    return int(text)


def _refuse_constant(name: str) -> float:
    raise _Refused(f"non-standard JSON constant {name} (calaudit writes null)")


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number" if not isinstance(value, float) or math.isfinite(value) else "NaN"
    return {str: "a string", list: "a list", dict: "an object"}.get(type(value), "a value")


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _error(source: str, message: str, rule: str = "result_schema") -> InputError:
    return InputError(message, source=source, rule=rule, hint=HINT)
