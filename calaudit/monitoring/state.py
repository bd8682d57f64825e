"""The monitoring state file: versioned JSON, checksummed, written atomically.

The layout (``schema_version`` 2; version 1 files, without ``battery``, are read as runs
without it) is in ``docs/monitoring.md``. The checksum is the SHA-256 of the canonical JSON
(sorted keys, no spaces, ASCII) of everything else: an edited or truncated file, another
kind or version, other bets or another configuration than the run asks for is refused with
one :class:`InputError` naming the file, which a failed run never rewrites. Floats are
written by ``repr`` (exact round trip); NaN is ``null``."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from dataclasses import asdict, fields
from typing import Any

import numpy as np

from calaudit._version import __version__
from calaudit.exceptions import CalauditError, InputError
from calaudit.files import FileProblem, describe_os_error, read_limited
from calaudit.monitoring.eprocess import LAMBDAS, EProcess
from calaudit.monitoring.fits import Estimate
from calaudit.monitoring.monitor import MonitorConfig, MonitorState, WindowRecord
from calaudit.monitoring.summaries import GroupSummary, WindowSummary

KIND = "calaudit-monitor-state"
SCHEMA_VERSION = 2
#: Versions read: 1 has no ``battery`` keys.
READABLE_VERSIONS = (1, 2)
START_WEIGHTS = "1/(j(j+1))"
#: Largest state file read (about 100 KB per 1,000 windows without groups).
STATE_MAX_BYTES = 256 * 1024 * 1024
RULE = "monitor_state"


def state_to_json(state: MonitorState) -> str:
    """The state file's text (module docstring)."""
    payload = {"kind": KIND, "schema_version": SCHEMA_VERSION,
               "calaudit_version": __version__, "config": _config_json(state.config),
               "bets": {"lambdas": [float(x) for x in LAMBDAS],
                        "start_weights": START_WEIGHTS},
               "eprocess": _eprocess_json(state.eprocess),
               "windows": [_record_json(r) for r in state.history]}
    payload["checksum"] = checksum(payload)
    return json.dumps(payload, indent=1, allow_nan=False) + "\n"


def save_state(path: str | os.PathLike[str], state: MonitorState) -> None:
    """Write the state file atomically (a temporary file in its folder, then a rename)."""
    text = state_to_json(state)
    folder = os.path.dirname(os.path.abspath(path))
    temporary = None
    try:
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=".calaudit-state-")
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temporary, path)
    except OSError as exc:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
        problem = describe_os_error(exc)
        raise InputError(f"cannot write the monitoring state: {problem.message}",
                         source=str(path), rule=RULE, hint=problem.hint) from None


def checksum(payload: dict[str, Any]) -> str:
    """``sha256:`` and the digest of the canonical JSON of ``payload`` less ``checksum``."""
    body = {k: v for k, v in payload.items() if k != "checksum"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False)
    return "sha256:" + hashlib.sha256(text.encode("ascii")).hexdigest()


def load_state(path: str | os.PathLike[str],
               expected: MonitorConfig | None = None) -> MonitorState:
    """The state saved at ``path``, checked (module docstring); with ``expected``, its
    configuration must equal it."""
    source = str(path)
    try:
        raw = read_limited(path, STATE_MAX_BYTES, "the monitoring state")
    except FileProblem as exc:
        raise InputError(exc.message, source=source, rule=RULE, hint=exc.hint) from None
    state = state_from_text(raw, source)
    if expected is not None:
        check_same_config(state.config, expected, source)
    return state


def state_from_text(raw: bytes | str, source: str = "state") -> MonitorState:
    """Parse and check a state file's content."""
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        payload = json.loads(text, parse_constant=_no_constant)
    except (UnicodeDecodeError, json.JSONDecodeError, ValueError, RecursionError) as exc:
        raise _error(source, f"not a readable monitoring state (truncated or not JSON: "
                     f"{str(exc).splitlines()[0][:80]})") from None
    if not isinstance(payload, dict) or payload.get("kind") != KIND:
        raise _error(source, "not a calaudit monitoring state")
    if payload.get("schema_version") not in READABLE_VERSIONS:
        raise _error(source, f"monitoring state schema_version "
                     f"{payload.get('schema_version')!r}; this calaudit reads "
                     f"{' and '.join(map(str, READABLE_VERSIONS))}")
    if payload.get("checksum") != checksum(payload):
        raise _error(source, "the monitoring state's checksum does not match its "
                     "content (edited or corrupted)")
    try:
        return _build(payload, source)
    except InputError:
        raise
    except CalauditError as exc:
        raise _error(source, f"malformed monitoring state ({exc.message})") from None
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise _error(source, f"malformed monitoring state ({type(exc).__name__}: "
                     f"{str(exc)[:80]})") from None


def check_same_config(saved: MonitorConfig, expected: MonitorConfig, source: str) -> None:
    """Refuse a run whose configuration differs from the one the state was started
    with, naming the first differing setting."""
    for item in fields(MonitorConfig):
        old, new = getattr(saved, item.name), getattr(expected, item.name)
        if old != new:
            raise _error(source, f"the monitoring state was started with "
                         f"{item.name}={_show(old)}, this run asks for {_show(new)}",
                         hint="use the state's settings, or start a new state file")


def _show(value: Any) -> str:
    return json.dumps(value if not isinstance(value, tuple) else list(value))[:80]


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not allowed")


def _error(source: str, message: str, hint: str | None = None) -> InputError:
    return InputError(message, source=source, rule=RULE,
                      hint=hint or "give the state file written by calaudit monitor")


def _config_json(config: MonitorConfig) -> dict[str, Any]:
    out = asdict(config)
    out["prob_cols"] = list(config.prob_cols)
    out["groups"] = [[name, list(levels)] for name, levels in config.groups]
    out["battery"] = None if config.battery is None else dict(config.battery)
    return out


def _eprocess_json(e: EProcess) -> dict[str, Any]:
    return {"n_groups": e.n_groups, "windows": e.windows,
            "log_a": None if e.log_a is None else e.log_a.tolist(),
            "logit_sum": e.logit_sum, "rows": e.rows, "max_log_value": e.max_log_value,
            "alarm_window": e.alarm_window}


def _record_json(r: WindowRecord) -> dict[str, Any]:
    s = r.summary
    return {"number": s.number, "key": s.key, "label": s.label, "start": s.start,
            "end": s.end, "n": s.n, "events": s.events,
            "mean_prediction": s.mean_prediction, "citl": s.citl.as_list(),
            "slope": s.slope.as_list(), "ece": s.ece.as_list(),
            "groups": [{"covariate": g.covariate, "level": g.level, "n": g.n,
                        "events": g.events,
                        "mean_prediction": _finite_or_none(g.mean_prediction),
                        "bias": g.bias.as_list()} for g in s.groups],
            "bins": [list(b) for b in s.bins], "log_e": r.log_e, "families": r.families,
            "directions": list(r.directions),
            "s": list(r.s), "v": list(r.v), "alarm": r.alarm,
            "battery": None if r.battery is None else dict(r.battery)}


def _finite_or_none(x: float) -> float | None:
    return float(x) if np.isfinite(x) else None


def _build(payload: dict[str, Any], source: str) -> MonitorState:
    bets = payload["bets"]
    if bets["lambdas"] != [float(x) for x in LAMBDAS] or \
            bets["start_weights"] != START_WEIGHTS:
        raise _error(source, "the monitoring state was written with other bets than "
                     "this calaudit uses", hint="continue it with the calaudit version "
                                                f"{payload.get('calaudit_version')}")
    c = payload["config"]
    config = MonitorConfig(**{**c, "battery": _mapping(c.get("battery")),
                              "prob_cols": tuple(c["prob_cols"]),
                              "groups": tuple((str(n), tuple(str(x) for x in levels))
                                              for n, levels in c["groups"])})
    e = payload["eprocess"]
    log_a = None if e["log_a"] is None else np.asarray(e["log_a"], dtype=np.float64)
    eprocess = EProcess(int(e["n_groups"]), int(e["windows"]), log_a,
                        float(e["logit_sum"]), int(e["rows"]), float(e["max_log_value"]),
                        int(e["alarm_window"]))
    history = tuple(_record(r) for r in payload["windows"])
    _check_consistent(config, eprocess, history, source)
    return MonitorState(config, eprocess, history)


def _record(r: dict[str, Any]) -> WindowRecord:
    groups = tuple(GroupSummary(str(g["covariate"]), str(g["level"]), int(g["n"]),
                                float(g["events"]),
                                float("nan") if g["mean_prediction"] is None
                                else float(g["mean_prediction"]),
                                Estimate.from_list(g["bias"])) for g in r["groups"])
    summary = WindowSummary(int(r["number"]), r["key"], str(r["label"]), r["start"],
                            r["end"], int(r["n"]), float(r["events"]),
                            float(r["mean_prediction"]), Estimate.from_list(r["citl"]),
                            Estimate.from_list(r["slope"]), Estimate.from_list(r["ece"]),
                            groups, tuple(tuple(float(x) for x in b) for b in r["bins"]))
    return WindowRecord(summary, float(r["log_e"]),
                        {str(k): float(v) for k, v in r["families"].items()},
                        tuple(float(x) for x in r["directions"]),
                        tuple(float(x) for x in r["s"]), tuple(float(x) for x in r["v"]),
                        bool(r["alarm"]), _mapping(r.get("battery")))


def _mapping(value: Any) -> dict[str, Any] | None:
    if value is not None and not isinstance(value, dict):
        raise TypeError("a battery must be a JSON object or null")
    return value


def _check_consistent(config: MonitorConfig, e: EProcess,
                      history: tuple[WindowRecord, ...], source: str) -> None:
    directions = 2 + config.n_groups
    shape_ok = (e.log_a is None and e.windows == 0) or \
        (e.log_a is not None and e.log_a.shape == (directions, LAMBDAS.size)
         and bool(np.all(np.isfinite(e.log_a))))
    if not shape_ok or e.n_groups != config.n_groups or e.windows != len(history) or \
            any(r.summary.number != k + 1 or len(r.s) != directions
                for k, r in enumerate(history)):
        raise _error(source, "malformed monitoring state (the e-process does not match "
                     "its windows)")

