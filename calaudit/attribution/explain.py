"""The attribution section, the spill-over check of failing groups and the summary sentence.

* :func:`attribute` -- per covariate the likelihood-ratio tests of :mod:`.model` (given the
  other covariates, and alone), Holm-adjusted across covariates, a status (``FAIL``:
  adjusted p <= alpha given the others; ``PASS``; ``INCONCLUSIVE`` when the model cannot be
  fitted) and the standardised bias of every level with its interval. A diagnostic: it
  never decides the verdict.
* :func:`mark_explained` -- a failing group is *explained* when its events are not
  rejected at ``alpha`` (unadjusted; Poisson-binomial, as the group table) against the
  fitted probabilities of ``logit(p) + b0 +`` the terms of the explaining covariates that
  do not define the group; ``explained_by`` lists them, else ``[]``. Weighted rows:
  :mod:`.weighted`.
* :func:`summary_sentence` -- the words every output prints.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit.attribution.design import Cells, Term, build_terms, level_size
from calaudit.attribution.group_check import group_checks
from calaudit.attribution.irls import fitted
from calaudit.attribution.model import (
    ModelRows,
    covariate_tests,
    fit_glm,
    logit_offset,
    placed,
    standardised_biases,
)
from calaudit.attribution.rows import can_reduce, task_model
from calaudit.attribution.weighted import TEST_ROBUST, ModelWeights, explained_check
from calaudit.inference.multitest import adjust_pvalues
from calaudit.local.groups import GroupSpec, Levels, format_bias, format_interval, index_dtype
from calaudit.numerics.distributions import norm_ppf
from calaudit.scale import ArrayRows

#: What a failed GLM fit raises (no convergence, a singular information matrix).
FIT_ERRORS = (ValueError, FloatingPointError, np.linalg.LinAlgError)
MODEL = "logit P(y = 1) = logit(p) + b0 + covariate terms (binomial GLM, IRLS)"


@dataclass(frozen=True)
class AttributionSettings:
    alpha: float = 0.05
    level: float = 0.95
    adjust: str = "holm"
    min_rows: int = 30
    min_events: int = 5


@dataclass(frozen=True)
class Attribution:
    """The JSON section and what the group check needs (terms, rows, offset, the model's
    rows)."""

    section: dict[str, Any]
    terms: tuple[Term, ...]
    rows: NDArray[np.intp]
    offset: NDArray[np.float64]
    model: ModelRows
    weights: ModelWeights | None = None
    #: the level rows read by their tasks (:mod:`.rows`; None: ``offset`` held here)
    source: Any = None

    @property
    def explaining(self) -> list[str]:
        return list(self.section.get("explaining", []))


def _level_rows(term: Term, biases: dict[tuple[str, int], tuple[float, float, float]],
                outcome: NDArray[np.float64], weights: ModelWeights | None,
                counts: NDArray[np.int64] | None = None) -> list[dict[str, Any]]:
    """Every level of ``term``: its row count (``counts`` when known; weighted: its sample
    size) and standardised bias with interval (from ``biases``,
    :func:`calaudit.attribution.model.standardised_biases` of every used level)."""
    out = []
    for code, label in enumerate(term.labels):
        n = (int(counts[code]) if counts is not None else
             int(np.count_nonzero(term.codes == code))) if weights is None else weights.size(
            level_size(term.codes == code, outcome, weights.a, weights.frequency)[0])
        if code in term.used:
            bias, low, high = biases[term.name, code]
            out.append({"level": label, "n": n, "bias": bias, "ci": [low, high]})
        else:
            out.append({"level": label, "n": n, "bias": None, "ci": None,
                        "message": "too small to estimate"})
    return out


def attribute(levels: Sequence[Levels], kinds: Sequence[str],
              outcome: NDArray[np.float64] | None, prediction: NDArray[np.float64] | None,
              settings: AttributionSettings, view: str = "binary",
              weights: ModelWeights | None = None, source: Any = None) -> Attribution:
    """Fit the recalibration model and test every covariate (see the module docstring);
    ``weights``: the rows' weights (:mod:`.weighted`); ``source``: the level rows read by
    their tasks (:class:`.rows.LevelRows`, unweighted; ``outcome`` and ``prediction`` are
    then not read)."""
    counts: list[Any] = [None] * len(levels)
    if source is not None and weights is None and can_reduce(levels):
        found = task_model(source, levels, kinds, settings.min_rows, settings.min_events)
        terms, model, counts = found.terms, found.model, found.counts
        offset = rows = None
    else:
        source = None
        offset = logit_offset(prediction)
        a = None if weights is None else weights.a
        terms, rows = build_terms(levels, kinds, outcome, settings.min_rows,
                                  settings.min_events, a, weights is None or weights.frequency)
        model = ModelRows.build(outcome, offset, prediction, terms, rows, a,
                                None if weights is None else weights.m)
    robust = weights is not None and not weights.frequency
    section: dict[str, Any] = {
        "role": "diagnostic", "model": MODEL, "view": view,
        "rows_used": (model.used if rows is None else int(rows.size))
        if weights is None or robust else weights.size(
            float(a[rows].sum())),
        "test": TEST_ROBUST if robust else
        "likelihood ratio (chi^2), given the other covariates; Holm across covariates",
        "bias": "standardised: mean_i expit(logit p_i + x_i(c = level)' beta) - mean_i p_i",
        "confidence_level": settings.level, "alpha": settings.alpha, "covariates": []}
    if weights is not None:
        section["weights"] = weights.describe()
    try:
        if not any(t.columns for t in terms):
            raise ValueError("no covariate has two levels large enough to compare")
        with placed(model) as rows:  # the model's rows placed once for every fit
            full, pvalues = covariate_tests(rows, terms)
            z = float(norm_ppf(0.5 + settings.level / 2.0))
            wanted = [(t.name, code) for t in terms for code in t.used]
            biases = dict(zip(wanted, standardised_biases(full, terms, rows, wanted, z),
                              strict=True))
    except FIT_ERRORS as exc:
        section["covariates"] = [{"covariate": t.name, "kind": t.kind, "p_value": None,
                                  "p_value_adjusted": None, "status": "INCONCLUSIVE",
                                  "levels": [], "message": str(exc)} for t in terms]
        section["explaining"] = []
        section["summary"] = summary_sentence(section)
        return Attribution(section, tuple(terms), rows, offset, model, weights, source)
    given = adjust_pvalues([pvalues[t.name][0] for t in terms], settings.adjust)
    alone = adjust_pvalues([pvalues[t.name][1] for t in terms], settings.adjust)
    for term, p_given, p_alone, count in zip(terms, given, alone, counts, strict=True):
        testable = bool(term.columns)
        section["covariates"].append({
            "covariate": term.name, "kind": term.kind, "df": len(term.columns),
            "p_value": pvalues[term.name][0] if testable else None,
            "wald_statistic" if robust else "lr_statistic":
                pvalues[term.name][2] if testable else None,
            "p_value_adjusted": float(p_given) if testable else None,
            "p_value_alone": pvalues[term.name][1] if testable else None,
            "p_value_alone_adjusted": float(p_alone) if testable else None,
            "adjustment": settings.adjust,
            "status": ("INCONCLUSIVE" if not testable
                       else "FAIL" if p_given <= settings.alpha else "PASS"),
            "levels": _level_rows(term, biases, outcome, weights, count),
            **({} if testable else {"message": "fewer than two levels large enough"})})
    section["explaining"] = [c["covariate"] for c in section["covariates"]
                             if c["status"] == "FAIL"]
    section["summary"] = summary_sentence(section)
    return Attribution(section, tuple(terms), rows, offset, model, weights, source)


def mark_explained(table: list[dict[str, Any]], specs: Sequence[GroupSpec],
                   attribution: Attribution, outcome: NDArray[np.float64] | None,
                   alpha: float) -> None:
    """Set ``explained_by`` (and the bias left after adjusting) on every failing group;
    other groups get ``explained_by = None``. Unweighted rows: the checks of each adjusted
    model reduced over the attribution's level rows (:mod:`.group_check`; ``outcome`` is
    then not read)."""
    explaining = set(attribution.explaining)
    spec_of = {spec.name: spec for spec in specs}
    wanted: dict[frozenset, list[GroupSpec]] = {}
    for row in table:
        spec = spec_of[row["group"]]
        if row["status"] == "FAIL" and explaining - set(spec.covariates):
            wanted.setdefault(frozenset(explaining - set(spec.covariates)), []).append(spec)
    checks: dict[frozenset, dict[str, tuple[float, float]] | None] = {}
    if wanted:
        with placed(attribution.model) as model:  # the model's rows placed once
            for adjust, group_specs in wanted.items():
                checks[adjust] = _checks(attribution, model, outcome, adjust, group_specs)
    for row in table:
        _explain_row(row, spec_of[row["group"]], attribution, alpha, explaining, checks)


def _checks(attribution: Attribution, model: ModelRows, outcome: NDArray[np.float64] | None,
            adjust: frozenset, specs: Sequence[GroupSpec]
            ) -> dict[str, tuple[float, float]] | None:
    """``{group: (bias after adjusting, p-value)}`` of ``specs`` against the model adjusted
    for ``adjust`` (None: it cannot be fitted)."""
    terms = [t for t in attribution.terms if t.name in adjust]
    try:
        fit = fit_glm(model, terms)
    except FIT_ERRORS:
        return None
    if attribution.weights is None:
        rows = attribution.source if attribution.source is not None else ArrayRows(
            {"outcome": outcome, "offset": attribution.offset,
             **{f"code:{k}": t.codes for k, t in enumerate(attribution.terms)}})
        return group_checks(rows, attribution.terms, terms, fit.params, specs)
    every = Cells.build(terms, np.arange(outcome.size, dtype=index_dtype(outcome.size)))
    q = fitted(attribution.offset, every.cell, every.design(terms) @ fit.params)
    return {spec.name: explained_check(attribution.weights, outcome, q, spec.rows)
            for spec in specs}


def _explain_row(row: dict[str, Any], spec: GroupSpec, attribution: Attribution,
                 alpha: float, explaining: set[str],
                 checks: dict[frozenset, dict[str, tuple[float, float]] | None]) -> None:
    """:func:`mark_explained` of one group's row (``checks``: each adjusted model's)."""
    row["explained_by"] = None
    if row["status"] != "FAIL":
        return
    adjust = frozenset(explaining - set(spec.covariates))
    row["explained_by"] = []
    if not adjust:
        return
    if checks[adjust] is None:
        row["adjusted_for"] = sorted(adjust)
        row["message"] = (row.get("message") or "") + "adjusted model could not be fitted"
        return
    bias_after, p_after = checks[adjust][spec.name]
    row["adjusted_for"] = sorted(adjust)
    row["bias_after_adjustment"] = bias_after
    row["p_value_after_adjustment"] = p_after
    if p_after > alpha:
        row["explained_by"] = [t.name for t in attribution.terms if t.name in adjust]


def _level_text(covariate: str, level: dict[str, Any],
                groups: Mapping[str, Mapping[str, Any]]) -> str:
    """``South +0.112 [+0.090, +0.130]``: the group table's bias and interval of
    ``covariate=level`` when both intervals agree on excluding 0, else the standardised
    bias labelled ``adjusted``."""
    row = groups.get(f"{covariate}={level['level']}")
    if row is not None and row.get("bias") is not None and row.get("bias_ci") \
            and _clear({"ci": row["bias_ci"]}) == _clear(level):
        bias, (low, high), label = row["bias"], row["bias_ci"], ""
    else:
        bias, (low, high), label = level["bias"], level["ci"], " adjusted"
    return f"{level['level']}{label} {format_bias(bias)} {format_interval([low, high])}"


def _join(names: Sequence[str], word: str = "and") -> str:
    names = list(names)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + f" {word} " + names[-1]


def _estimable(entry: dict[str, Any]) -> list[dict[str, Any]]:
    return [lv for lv in entry["levels"] if lv.get("bias") is not None]


def _clear(level: dict[str, Any]) -> bool:
    return level["ci"][0] > 0 or level["ci"][1] < 0


def _biased_levels(entry: dict[str, Any], k: int = 2) -> list[dict[str, Any]]:
    """The covariate's most biased levels for the sentence: those whose interval excludes
    0 and whose ``|bias|`` is at least half the largest such, at most ``k`` (largest
    first); if no interval excludes 0, the single largest."""
    levels = _estimable(entry)
    clear = sorted((lv for lv in levels if _clear(lv)), key=lambda lv: -abs(lv["bias"]))
    if clear:
        return [lv for lv in clear if abs(lv["bias"]) >= 0.5 * abs(clear[0]["bias"])][:k]
    return sorted(levels, key=lambda lv: -abs(lv["bias"]))[:1]


def is_overall_shift(entry: dict[str, Any]) -> bool:
    """Every level of the covariate is biased the same way (each interval on the same side
    of 0): the model is off everywhere, and the covariate changes only by how much."""
    levels = _estimable(entry)
    return len(levels) >= 2 and all(_clear(lv) for lv in levels) and \
        len({lv["bias"] > 0 for lv in levels}) == 1


def _shared_signal(entry: dict[str, Any], alpha: float) -> bool:
    """A bias alone (adjusted p <= alpha) that the other covariates account for."""
    alone = entry.get("p_value_alone_adjusted")
    return entry["status"] == "PASS" and alone is not None and alone <= alpha


def _shift_text(entry: dict[str, Any]) -> str:
    biases = sorted(lv["bias"] for lv in _estimable(entry))
    return (f"the model is biased the same way in every level of {entry['covariate']} "
            f"({format_bias(biases[0])} to {format_bias(biases[-1])}): an overall "
            f"shift that no covariate explains; {entry['covariate']} changes only its size")


def _explained_text(failing: list[dict[str, Any]],
                    groups: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """What the explaining covariates explain, and the overall shifts among them."""
    parts = [_shift_text(e) for e in failing if is_overall_shift(e)]
    explaining = [e for e in failing if not is_overall_shift(e)]
    if explaining:
        verb = "explains" if len(explaining) == 1 else "explain"
        levels = [_level_text(e["covariate"], lv, groups)
                  for e in explaining for lv in _biased_levels(e)]
        parts.insert(0, f"{_join([e['covariate'] for e in explaining])} {verb} it: "
                     + ", ".join(levels))
    return parts


def _adjusted_text(failing: list[dict[str, Any]], passing: list[dict[str, Any]],
                   alpha: float) -> str:
    """``after adjusting for region, gender shows no bias`` (with the covariates that show
    one alone: they carry the explaining covariates' signal)."""
    names = [e["covariate"] for e in passing]
    shared = [e["covariate"] for e in passing if _shared_signal(e, alpha)]
    text = (f"after adjusting for {_join([e['covariate'] for e in failing])}, "
            f"{_join(names)} show{'s' if len(names) == 1 else ''} no bias")
    if shared:
        text += (f" ({_join(shared)} alone do{'es' if len(shared) == 1 else ''}: the "
                 f"same signal as {_join([e['covariate'] for e in failing])})")
    return text


def _unexplained_text(passing: list[dict[str, Any]], alpha: float,
                      groups: Mapping[str, Mapping[str, Any]]) -> str:
    """No covariate explains a bias given the others: say when some carry the same signal
    (each shows a bias alone) instead of nothing."""
    shared = [e for e in passing if _shared_signal(e, alpha)]
    names = [e["covariate"] for e in shared]
    if len(shared) >= 2:
        levels = [_level_text(e["covariate"], lv, groups)
                  for e in shared for lv in _biased_levels(e, 1)]
        return (f"{_join(names, 'or')}: they carry the same signal (each shows a bias "
                f"alone, none once the others are known): {', '.join(levels)}")
    others = [e["covariate"] for e in passing if e not in shared]
    if shared and others:
        return (f"{names[0]} shows a bias alone but none once {_join(others)} "
                f"{'is' if len(others) == 1 else 'are'} known: they carry the same signal")
    everything = [e["covariate"] for e in passing]
    return (f"no covariate explains a bias: {_join(everything)} "
            f"show{'s' if len(everything) == 1 else ''} no bias given the others")


def summary_sentence(section: dict[str, Any],
                     groups: Sequence[Mapping[str, Any]] = (),
                     local_rejected: bool | None = None) -> str:
    """One sentence naming the explaining covariates, their most biased levels (with the
    group table's numbers, ``groups``) and the covariates that show no bias after
    adjusting. ``local_rejected=False`` (the local primary test did not reject): the
    covariates the model points at are a lead, not a finding."""
    entries = section.get("covariates", [])
    if not entries:
        return "attribution: no covariates"
    alpha = float(section.get("alpha", 0.05))
    by_group = {str(g.get("group")): g for g in groups}
    failing = [e for e in entries if e["status"] == "FAIL"]
    passing = [e for e in entries if e["status"] == "PASS"]
    undecided = [e["covariate"] for e in entries if e["status"] == "INCONCLUSIVE"]
    parts = []
    if failing and local_rejected is False:
        p_values = ", ".join(f"{e['covariate']} {e['p_value_adjusted']:.2g}" for e in failing)
        parts.append(f"the local test does not reject; the recalibration model points at "
                     f"{_join([e['covariate'] for e in failing])} (adjusted p {p_values}): "
                     f"a lead to check, not a finding")
    elif failing:
        parts += _explained_text(failing, by_group)
        if passing:
            parts.append(_adjusted_text(failing, passing, alpha))
    elif passing:
        parts.append(_unexplained_text(passing, alpha, by_group))
    if undecided:
        parts.append(f"{_join(undecided)}: too few rows or events to attribute")
    return "; ".join(parts)


def finish_summary(section: dict[str, Any], groups: Sequence[Mapping[str, Any]],
                   local_rejected: bool | None) -> dict[str, Any]:
    """The attribution section with its sentence in the gate's terms: the group table's
    numbers and whether the local primary test rejected (known after grading)."""
    if not section or not section.get("covariates"):
        return section
    return {**section, "summary": summary_sentence(section, groups, local_rejected)}
