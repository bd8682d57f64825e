"""Raw columns -> the validated fields of a :class:`~calaudit.data.dataset.CalibrationData`
(for files and ``from_arrays`` alike): convert logits, apply the row rules, map the labels,
encode the covariates, and drop or refuse bad rows."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from scipy import special

from calaudit.data import rows as rules
from calaudit.data import spill
from calaudit.data.covariates import check_shape, encode_covariate
from calaudit.data.labels import UNKNOWN, _is_numeric, binary_classes, map_multiclass
from calaudit.data.parts import Covariate, Provenance
from calaudit.data.readers import SourceFile
from calaudit.data.spill import ColumnStore
from calaudit.data.weights import SampleWeights, read_columns
from calaudit.data.weights import finish as finish_weights
from calaudit.exceptions import InputError

KEPT_BYTES_PER_ROW = 8  # one kept column (float64 / int64), for the spill estimate


@dataclass(frozen=True)
class LoadOptions:
    """How to interpret and police the raw columns."""

    categorical: tuple[str, ...] = ()
    positive_label: str | None = None
    renormalize: bool = False
    drop_invalid: bool = False
    require_two_classes: bool = True
    weight_kind: str = "frequency"
    negative_rate: float | None = None


@dataclass
class RawInputs:
    """Columns picked from the input files, before any validation."""

    scores: np.ndarray
    score_columns: tuple[str, ...]
    class_names: tuple[str, ...]
    kind: str
    score_source: str
    labels: pd.Series
    label_column: str
    label_source: str
    covariates: list[tuple[str, pd.Series, str]] = field(default_factory=list)
    unmatched: np.ndarray | None = None
    id_column: str | None = None
    files: tuple[SourceFile, ...] = ()
    ids: np.ndarray | None = None  # prediction-row ids when files were joined on an id
    layouts: dict[str, Any] = field(default_factory=dict)  # datasets' row layouts, by name
    dataset: dict[str, Any] | None = None  # :attr:`Provenance.dataset`
    weights: pd.Series | None = None
    weight_column: str | None = None
    rates: pd.Series | None = None
    rate_column: str | None = None


class Validated(NamedTuple):
    """The fields of a :class:`~calaudit.data.dataset.CalibrationData`, in its order."""

    y_proba: np.ndarray
    y_true: np.ndarray
    classes: tuple[str, ...]
    covariates: tuple[Covariate, ...]
    provenance: Provenance
    spill: ColumnStore | None
    weights: SampleWeights | None = None


def to_probabilities(raw: RawInputs, options: LoadOptions,
                     store: ColumnStore | None = None) -> tuple[np.ndarray, int]:
    """(n, m) probabilities: softmax of logits, ``[1 - p, p]`` for one binary column,
    optionally renormalised rows. Returns the matrix and the count of renormalised rows."""
    if raw.kind == "probability" and raw.scores.shape[1] == 1:
        # the common binary case written straight into its (n, 2) result: [1 - p, p]
        out = (store or ColumnStore()).empty((raw.scores.shape[0], 2), np.float64)
        for start in range(0, out.shape[0], spill.BLOCK):
            stop = min(start + spill.BLOCK, out.shape[0])
            positive = out[start:stop, 1]
            positive[:] = raw.scores[start:stop, 0]
            positive[~np.isfinite(positive)] = 0.0
            np.subtract(1.0, positive, out=out[start:stop, 0])
        return out, 0
    n, m = raw.scores.shape
    out = (store or ColumnStore()).empty((n, 2 if m == 1 else m), np.float64)
    renormalized = 0
    for start in range(0, n, spill.BLOCK):
        block = raw.scores[start:start + spill.BLOCK]
        scores = np.where(np.isfinite(block), block, 0.0)
        if raw.kind == "logit":
            scores = (special.expit(scores) if scores.shape[1] == 1
                      else special.softmax(scores, axis=1))
        if scores.shape[1] > 1 and options.renormalize and raw.kind == "probability":
            sums = scores.sum(axis=1, keepdims=True)
            fix = (np.abs(sums[:, 0] - 1.0) > 0) & (sums[:, 0] > 0)
            scores = np.where(fix[:, None], scores / np.where(sums > 0, sums, 1.0), scores)
            renormalized += int(fix.sum())
        if scores.shape[1] == 1:
            scores = np.hstack([1.0 - scores, scores])
        out[start:start + spill.BLOCK] = scores
    return out, renormalized


def score_problems(raw: RawInputs, probs: np.ndarray, options: LoadOptions,
                   store: ColumnStore | None = None) -> list:
    """Rules on the prediction columns."""
    scores, columns, source = raw.scores, raw.score_columns, raw.score_source
    found = [rules.cell_problem("nonfinite_probability", lambda v: ~np.isfinite(v), scores,
                                columns, source, f"{raw.kind} is missing, NaN or infinite",
                                "check the model output", store)]
    if raw.kind != "probability":
        return found
    found.append(rules.cell_problem(
        "probability_out_of_range", lambda v: (v < 0.0) | (v > 1.0), scores, columns, source,
        "probabilities must lie in [0, 1]", "pass probabilities, or logits with --logit-cols",
        store))
    if scores.shape[1] == 1:
        return found
    span = f"{columns[0]}..{columns[-1]}"
    with np.errstate(invalid="ignore"):
        if not options.renormalize:
            bad = rules.row_mask(len(probs), lambda a, b: np.abs(
                probs[a:b].sum(axis=1) - 1.0) > rules.SUM_TOLERANCE, store)
            found.append(rules.problem(
                "probabilities_not_summing_to_one", source, span, bad,
                f"class probabilities must sum to 1 (tolerance {rules.SUM_TOLERANCE:g})",
                "pass --renormalize to rescale each row"))
        else:
            zero = rules.row_mask(len(scores), lambda a, b: ~(np.where(
                np.isfinite(scores[a:b]), scores[a:b], 0.0).sum(axis=1) > 0), store)
            found.append(rules.problem(
                "zero_probability_row", source, span, zero,
                "every class probability is 0, so the row cannot be renormalised",
                "fix the model output"))
    return found


def label_problems(raw: RawInputs, missing: np.ndarray, codes: np.ndarray,
                   classes: tuple[str, ...], joined: tuple[str, np.ndarray] | None = None,
                   store: ColumnStore | None = None) -> tuple[Any, Any]:
    """Rules on the labels: missing, and not one of the classes (each a
    :class:`~calaudit.data.rows.RowProblem` or None)."""
    unknown = rules.row_mask(len(codes), lambda a, b: (codes[a:b] == UNKNOWN)
                             & ~missing[a:b], store)
    return (rules.problem("missing_label", raw.label_source, raw.label_column, missing,
                          "label is missing", "fill or drop these rows", joined),
            rules.problem("unknown_label", raw.label_source, raw.label_column, unknown,
                          f"label is not one of the classes ({', '.join(classes[:10])})",
                          "check --prob-cols order and names, or --positive-label", joined))


def label_codes(raw: RawInputs, missing: np.ndarray, options: LoadOptions,
                store: ColumnStore | None = None) -> tuple[tuple[str, ...], np.ndarray]:
    """Class names and the class index of every row (``UNKNOWN`` where unmatched): numeric
    labels a block of rows at a time into a ``store`` column, text labels whole."""
    n = len(raw.labels)
    if store is not None and _is_numeric(raw.labels) and not (
            raw.scores.shape[1] == 1 and options.positive_label is not None):
        classes: tuple[str, ...] = ()
        out = store.empty(n, np.int64)
        for start in range(0, n, spill.BLOCK):
            part = dataclasses.replace(raw, labels=raw.labels.iloc[start:start + spill.BLOCK])
            classes, out[start:start + spill.BLOCK] = label_codes(
                part, missing[start:start + spill.BLOCK], options)
        return classes, out
    classes, codes = _whole_label_codes(raw, missing, options)
    if store is None or not store.spilling:
        return classes, codes
    kept = store.empty(codes.shape, np.int64)  # text labels: mapped whole, kept on disk
    kept[:] = codes
    return classes, kept


def _whole_label_codes(raw: RawInputs, missing: np.ndarray, options: LoadOptions
                       ) -> tuple[tuple[str, ...], np.ndarray]:
    some_missing = bool(missing.any())
    present = raw.labels[~missing] if some_missing else raw.labels
    if raw.scores.shape[1] == 1:
        classes, present_codes = binary_classes(
            present, options.positive_label, raw.label_source, raw.label_column
        )
    else:
        classes = raw.class_names
        present_codes = map_multiclass(present, classes)
    if not some_missing:
        return tuple(classes), np.asarray(present_codes, dtype=np.int64)
    codes = np.full(missing.shape, UNKNOWN, dtype=np.int64)
    codes[~missing] = present_codes
    return tuple(classes), codes


def covariate_problems(raw: RawInputs, joined: tuple[str, np.ndarray] | None = None,
                       store: ColumnStore | None = None) -> list:
    """Missing or infinite covariate values; complex, nested or timestamp columns."""
    found = []
    for name, values, source in raw.covariates:
        kind = getattr(values.dtype, "kind", "O")
        if kind in rules.KIND_WORDS:
            raise InputError(f"holds {rules.KIND_WORDS[kind]}; a covariate is a number or a "
                             "category", source=source, column=name, rule="unsupported_type",
                             hint="convert it to numbers or strings first")
        missing = rules.row_mask(len(values), lambda a, b, v=values: v.iloc[a:b].isna()
                                 .to_numpy(), store)
        found.append(rules.problem("missing_covariate", source, name, missing,
                                   "covariate value is missing", "fill or drop these rows",
                                   joined))
        if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
            inf = rules.row_mask(len(values), lambda a, b, v=values: np.isinf(
                v.iloc[a:b].to_numpy(dtype=np.float64, na_value=0.0)), store)
            found.append(rules.problem("nonfinite_covariate", source, name, inf,
                                       "covariate value is infinite", "fix the covariate",
                                       joined))
    return found


def is_categorical(values: pd.Series, name: str, options: LoadOptions) -> bool:
    return name in options.categorical or not pd.api.types.is_numeric_dtype(values) \
        or pd.api.types.is_bool_dtype(values)


def first_reason_counts(problems: list[rules.RowProblem], n: int) -> dict[str, int]:
    """Rows dropped per rule, each row counted under the first rule it breaks."""
    new = [0] * len(problems)
    for start in range(0, n, spill.BLOCK):
        taken = np.zeros(min(spill.BLOCK, n - start), dtype=bool)
        for index, prob in enumerate(problems):
            new[index] += int((prob.rows[start:start + spill.BLOCK] & ~taken).sum())
            taken |= prob.rows[start:start + spill.BLOCK]
    counts: dict[str, int] = {}
    for prob, count in zip(problems, new):
        if count:
            counts[prob.rule] = counts.get(prob.rule, 0) + count
    return counts


def build(raw: RawInputs, options: LoadOptions, store: ColumnStore | None = None
          ) -> Validated:
    """Validate ``raw``; the kept columns are allocated in ``store``."""
    n = int(raw.scores.shape[0])
    if store is None:
        store = ColumnStore()
    if not store.decided:
        store.decide(n * KEPT_BYTES_PER_ROW * (2 + raw.scores.shape[1] + len(raw.covariates)))
    if n < 2:
        check_enough(n, np.zeros(0, dtype=np.int64), ("",), raw.score_source,
                     (raw.label_source, raw.label_column), options.require_two_classes)
    probs, renormalized = to_probabilities(raw, options, store)
    missing = rules.row_mask(n, lambda a, b: raw.labels.iloc[a:b].isna().to_numpy(), store)
    classes, codes = label_codes(raw, missing, options, store)
    found: list = []
    joined = (raw.score_source, raw.ids) if raw.ids is not None else None
    if raw.unmatched is not None:
        others = sorted({f.path for f in raw.files} - {raw.score_source}) or [raw.label_source]
        found.append(rules.problem("unmatched_id", raw.score_source, raw.id_column,
                                   raw.unmatched, f"id has no match in {', '.join(others)}",
                                   "check that the files hold the same ids"))
    missing_label, unknown_label = label_problems(raw, missing, codes, classes, joined, store)
    found += [missing_label, *score_problems(raw, probs, options, store), unknown_label]
    found += covariate_problems(raw, joined, store)
    design, rates, weight_found = read_columns(raw, options.negative_rate, n,
                                               options.weight_kind)
    found += weight_found
    problems = [p for p in found if p is not None]
    fatal = [p for p in problems if p.rule in rules.NOT_DROPPABLE]
    if problems and (fatal or not options.drop_invalid):
        raise _first_error((fatal or problems)[0], raw)
    # every row kept: views, not copies (at 10^7 rows a copy of y_proba is 160 MB)
    keep: slice | np.ndarray = slice(None)
    if problems:
        bad = rules.row_mask(n, lambda a, b: np.logical_or.reduce(
            [p.rows[a:b] for p in problems]), store)
        keep = np.flatnonzero(~bad)
    used = n if isinstance(keep, slice) else len(keep)
    if not isinstance(keep, slice):
        probs, codes = take(store, probs, keep), take(store, codes, keep)
        design, rates = (None if a is None else a[keep] for a in (design, rates))
    check_enough(used, codes, classes, raw.score_source, (raw.label_source, raw.label_column),
                 options.require_two_classes)
    covariates = tuple(
        encode_covariate(name, values if isinstance(keep, slice) else values.iloc[keep],
                         is_categorical(values, name, options), store)
        for name, values, _ in raw.covariates
    )
    check_shape(covariates, [source for _, _, source in raw.covariates])
    provenance = Provenance(
        files=raw.files, rows_read=n, rows_used=used,
        rows_excluded=first_reason_counts(problems, n), label_column=raw.label_column,
        score_columns=raw.score_columns, score_kind=raw.kind, id_column=raw.id_column,
        renormalized_rows=renormalized, dataset=raw.dataset,
    )
    weights = finish_weights(design, rates, kind=options.weight_kind,
                             column=raw.weight_column,
                             rate_from=raw.rate_column or (None if rates is None else
                                                           f"rate {options.negative_rate:g}"),
                             source=raw.score_source, n_classes=len(classes), codes=codes)
    return Validated(probs, codes, classes, covariates, provenance,
                     spill=store if store.spilling else None, weights=weights)


def _first_error(prob: rules.RowProblem, raw: RawInputs) -> InputError:
    values = None
    if prob.rule == "unmatched_id":
        values = raw.ids
    elif prob.column == raw.label_column:
        values = raw.labels.to_numpy()
    elif prob.column in (raw.weight_column, raw.rate_column):
        values = (raw.weights if prob.column == raw.weight_column else raw.rates).to_numpy()
    elif prob.column in raw.score_columns:
        values = raw.scores[:, raw.score_columns.index(prob.column)]
    elif (series := {name: s for name, s, _ in raw.covariates}.get(prob.column)) is not None:
        values = series.to_numpy()
    return prob.error(values, raw.layouts)


def check_enough(n_used: int, codes: np.ndarray, classes: tuple[str, ...], source: str,
                 label: tuple[str, str | None], require_two_classes: bool) -> None:
    """At least two rows, and two classes present when a test needs them (``label``: the
    labels' source and column)."""
    if n_used < 2:
        raise InputError(f"{n_used} usable row(s); at least 2 are needed",
                         source=source, rule="too_few_rows",
                         hint="check the file, or the rows --drop-invalid removed")
    present = present_classes(codes)
    if require_two_classes and present.size < 2:
        raise InputError(f"only class '{classes[int(present[0])]}' occurs in the labels; "
                         "calibration tests need two", source=label[0],
                         column=label[1], rule="single_class",
                         hint="audit a sample that contains both outcomes")


def present_classes(codes: np.ndarray) -> np.ndarray:
    """``np.unique(codes)`` of class codes (>= -1) from block bincounts (no sorted copy)."""
    counts = np.zeros(1, dtype=np.int64)
    for start in range(0, codes.size, spill.BLOCK):
        block = np.bincount(codes[start:start + spill.BLOCK] + 1)
        size = max(counts.size, block.size)
        counts = np.pad(counts, (0, size - counts.size)) + np.pad(block, (0, size - block.size))
    return np.flatnonzero(counts) - 1


def take(store: ColumnStore, values: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``values[rows]`` written a block of rows at a time into a ``store`` column."""
    return spill.in_blocks(store, (rows.size, *values.shape[1:]), values.dtype,
                           lambda a, b: values[rows[a:b]])


def build_from_arrays(y_true, y_proba, covariates: dict, classes: tuple[str, ...] | None,
                      sample_weight, options: LoadOptions) -> Validated:
    """The fields of ``CalibrationData.from_arrays``."""
    scores = np.asarray(y_proba, dtype=np.float64)
    scores = scores[:, None] if scores.ndim == 1 else scores
    labels = pd.Series(np.asarray(y_true))
    if len(labels) != scores.shape[0]:
        raise InputError(f"y_true has {len(labels)} rows but y_proba has {scores.shape[0]}",
                         source=rules.ARRAYS, rule="length_mismatch")
    if classes is None:
        classes = tuple(str(k) for k in range(scores.shape[1])) if scores.shape[1] > 1 else ()
    names = (("y_proba",) if scores.shape[1] == 1
             else tuple(f"y_proba[:, {k}]" for k in range(scores.shape[1])))
    covs = []
    for name, values in covariates.items():
        series = pd.Series(np.asarray(values))
        if len(series) != len(labels):
            raise InputError(f"covariate has {len(series)} rows, expected {len(labels)}",
                             source=rules.ARRAYS, column=name, rule="length_mismatch")
        covs.append((name, series, rules.ARRAYS))
    raw = RawInputs(scores, names, tuple(classes), "probability", rules.ARRAYS, labels,
                    "y_true", rules.ARRAYS, covs)
    if sample_weight is not None:
        raw.weights, raw.weight_column = pd.Series(np.asarray(sample_weight)), "sample_weight"
        if len(raw.weights) != len(labels):
            raise InputError(f"sample_weight has {len(raw.weights)} rows, expected "
                             f"{len(labels)}", source=rules.ARRAYS, rule="length_mismatch")
    return build(raw, options)
