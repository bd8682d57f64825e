"""The battery per window (opt-in: ``[monitoring] window_battery``, ``--window-battery``).

Each window's rows are audited by the audit's own stages (:func:`battery_stages`), each
drawing from ``stream(window_seed(seed, w), stage.name)``, so a window's results depend
only on its own rows and ``calaudit monitor`` batch by batch gives the values of one run.
The per-window p-values are diagnostics, neither adjusted over the windows nor gated: the
test over time is the e-process. Settings are fixed when the run starts
(:func:`battery_settings`, kept in the state); the groups are the run's categorical
covariates, with each window's levels those present in it."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from calaudit import scale
from calaudit.audit.battery import stages as all_stages
from calaudit.audit.config import AuditConfig
from calaudit.audit.gate.decision import primary_indices
from calaudit.audit.sections.gate import BaselineConfig
from calaudit.audit.sections.monitoring import MonitoringConfig
from calaudit.audit.stages import Stage
from calaudit.data.dataset import CalibrationData
from calaudit.data.parts import Covariate
from calaudit.exceptions import ConfigError
from calaudit.numerics.random import stream
from calaudit.results import jsonable

#: Settings that do not change the battery's numbers (the gate, the baseline, the
#: windows themselves) are not stored.
NOT_STORED = ("thresholds", "gate", "baseline", "monitoring", "fail_on", "exit_zero",
              "run_tests")
#: Said wherever per-window p-values are shown.
NOTE = ("per-window tests are diagnostics: fixed-sample tests repeated in every window "
        "are not adjusted over the windows and do not gate; the sequential test is the "
        "e-process (calibration_eprocess)")
GROUP_KEYS = ("group", "kind", "n", "events", "observed_rate", "mean_prediction", "bias",
              "bias_ci", "p_value", "p_value_adjusted", "status", "message")


def battery_stages() -> tuple[Stage, ...]:
    """The audit's stages without ``diagrams`` (the reports' reliability data: the windows
    carry their own bins)."""
    return tuple(s for s in all_stages() if s.name != "diagrams")


def window_seed(seed: int, number: int) -> int:
    """The seed of window ``number`` of a run seeded ``seed``: a 32-bit word of
    ``SeedSequence([seed, number])``."""
    words = np.random.SeedSequence([int(seed), int(number)]).generate_state(1, np.uint32)
    return int(words[0])


def battery_settings(config: AuditConfig) -> dict[str, Any]:
    """The settings that fix the battery's numbers, as JSON values (stored in the state)."""
    values = {k: v for k, v in config.to_dict().items() if k not in NOT_STORED}
    return json.loads(json.dumps(jsonable(values)))


def battery_config(settings: Mapping[str, Any], executor: Any = None) -> AuditConfig:
    """The :class:`AuditConfig` of stored :func:`battery_settings` (a section is rebuilt
    from its keys, JSON lists become tuples); a value this version refuses is a
    :class:`ConfigError`."""
    base = AuditConfig()
    kwargs: dict[str, Any] = {}
    for item in dataclasses.fields(AuditConfig):
        if item.name not in settings or item.name in NOT_STORED:
            continue
        default, value = getattr(base, item.name), settings[item.name]
        if dataclasses.is_dataclass(default):
            known = {f.name for f in dataclasses.fields(default)}
            _known(item.name + ".", set(value) - known)
            kwargs[item.name] = type(default)(**{k: _tuples(v) for k, v in value.items()})
        else:
            kwargs[item.name] = _tuples(value)
    _known("", set(settings) - {f.name for f in dataclasses.fields(AuditConfig)})
    return dataclasses.replace(AuditConfig(**kwargs), executor=executor)


def _known(prefix: str, unknown: set[str]) -> None:
    if unknown:
        raise ConfigError(f"unknown setting {prefix}{sorted(unknown)[0]} of the window "
                          "battery", hint="continue the state with the calaudit version "
                                          "that started it")


def _tuples(value: Any) -> Any:
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def window_config(config: AuditConfig, number: int) -> AuditConfig:
    """The configuration auditing window ``number``: ``config`` with the window's seed,
    the tests on, no windows, thresholds or baseline."""
    return dataclasses.replace(config, seed=window_seed(config.seed, number), run_tests=True,
                               monitoring=MonitoringConfig(), thresholds=(),
                               baseline=BaselineConfig())


def window_data(data: CalibrationData, rows: Sequence[int] | np.ndarray,
                covariates: Sequence[str]) -> CalibrationData:
    """The rows ``rows`` of ``data`` (in that order) with the categorical ``covariates``,
    each re-coded to the levels present in these rows (so the window reads as its rows
    alone would)."""
    rows = np.asarray(rows, dtype=np.intp)
    kept = []
    for name in covariates:
        column = data.covariate(name).take(rows)
        present, codes = np.unique(column.values, return_inverse=True)
        kept.append(Covariate(name, "categorical", codes.reshape(-1).astype(np.int64),
                              tuple(column.categories[k] for k in present)))
    return CalibrationData(np.asarray(data.y_proba)[rows], np.asarray(data.y_true)[rows],
                           data.classes, tuple(kept), data.provenance)


def run_window_battery(data: CalibrationData, config: AuditConfig,
                       number: int) -> dict[str, Any]:
    """The battery of window ``number`` on its rows ``data`` (module docstring): ``seed``,
    ``n``, ``alpha``, ``metrics``, ``tests`` and ``groups``; a window whose rows lack a
    class is ``skipped`` with the reason."""
    cfg = window_config(config, number)
    out: dict[str, Any] = {"seed": cfg.seed, "n": data.n, "alpha": cfg.alpha}
    present = np.unique(np.asarray(data.y_true)).size
    if data.n < 2 or present < 2:
        return {**out, "skipped": "the window's rows hold one class only",
                "metrics": [], "tests": [], "groups": []}
    with scale.using(cfg.executor):
        outputs = [stage.run(data, cfg, stream(cfg.seed, stage.name))
                   for stage in battery_stages()]
    tests = [t for o in outputs for t in o.tests]
    primary = set(primary_indices(tests))
    return {**out, "skipped": None,
            "metrics": [_metric(m) for o in outputs for m in o.metrics],
            "tests": [_test(t, cfg.alpha, i in primary) for i, t in enumerate(tests)],
            "groups": [{k: jsonable(g.get(k)) for k in GROUP_KEYS}
                       for o in outputs for g in o.groups]}


def _metric(m: Any) -> dict[str, Any]:
    return {"id": m.id, "value": jsonable(m.value),
            "ci": None if m.ci is None else jsonable(list(m.ci))}


def _test(t: Any, alpha: float, primary: bool) -> dict[str, Any]:
    """A test's values; ``role``: ``primary`` for a test the audit's gate would take as primary;
    ``status``: the test's own, else ``below_alpha``/``not_below_alpha`` (raw p against alpha)."""
    p = t.p_value
    own = t.status.value if t.status is not None else None
    if own is None and p is not None and np.isfinite(p):
        own = "below_alpha" if p < alpha else "not_below_alpha"
    return {"id": t.id, "family": t.family, "role": "primary" if primary else "diagnostic",
            "statistic": jsonable(t.statistic), "p_value": jsonable(p),
            "status": own, "message": t.message}


FRAME_COLUMNS = ("window", "label", "kind", "id", "value", "low", "high", "p_value",
                 "p_value_adjusted", "status")


def battery_frame(state: Any) -> Any:
    """The per-window battery of a monitoring ``state`` as a DataFrame: one row per window and
    metric (``value``, ``low``, ``high``), test (``value`` = statistic, ``p_value``, ``status``)
    and group (``value`` = bias, interval, ``p_value``, ``p_value_adjusted``, ``status``)."""
    import pandas as pd

    rows = []
    for record in state.history:
        b, s = record.battery, record.summary
        if not b:
            continue
        head = {"window": s.number, "label": s.label}
        for m in b["metrics"]:
            low, high = m["ci"] or (None, None)
            rows.append({**head, "kind": "metric", "id": m["id"], "value": m["value"],
                         "low": low, "high": high})
        for t in b["tests"]:
            rows.append({**head, "kind": "test", "id": t["id"], "value": t["statistic"],
                         "p_value": t["p_value"], "status": t["status"]})
        for g in b["groups"]:
            low, high = g["bias_ci"] or (None, None)
            rows.append({**head, "kind": "group", "id": g["group"], "value": g["bias"],
                         "low": low, "high": high, "p_value": g["p_value"],
                         "p_value_adjusted": g["p_value_adjusted"], "status": g["status"]})
    return pd.DataFrame(rows, columns=list(FRAME_COLUMNS))
