"""Which columns hold the labels, the probabilities (or logits), the ids and the
covariates: explicit options win; otherwise well-known names are autodetected, and an
ambiguous or failed detection names the candidates it saw."""

from __future__ import annotations

import difflib
import fnmatch
import os
import re
from dataclasses import dataclass

from calaudit.exceptions import InputError, clip

LABEL_NAMES = ("label", "labels", "y", "y_true", "target", "outcome", "truth", "ground_truth",
               "class")
PROB_NAMES = ("p", "prob", "proba", "probs", "probability", "y_proba", "y_prob", "y_score",
              "score", "pred", "prediction", "p_hat", "phat")
PROB_PREFIXES = ("p_", "prob_", "proba_", "probs_", "probability_", "y_proba_")
LOGIT_NAMES = ("logit", "logits", "log_odds")
LOGIT_PREFIXES = ("logit_", "logits_")


@dataclass(frozen=True)
class ScoreColumns:
    """The prediction ``columns`` in class order, ``class_names`` from their suffixes
    (empty for one binary column) and ``kind`` (``probability`` or ``logit``)."""

    columns: tuple[str, ...]
    class_names: tuple[str, ...]
    kind: str


def split_list(text: str | None) -> list[str]:
    """``"a, b,c"`` -> ``["a", "b", "c"]``; ``None`` or ``""`` -> ``[]``."""
    return [part.strip() for part in (text or "").split(",") if part.strip()]


def _hint_for(name: str, available: list[str], option: str) -> str:
    close = difflib.get_close_matches(name, available, n=1)
    shown = ", ".join(clip(c, 40) for c in available[:20]) + (", ..." if len(available) > 20
                                                               else "")
    guess = f"did you mean '{close[0]}'? " if close else ""
    return f"{guess}available columns: {shown}; set {option}"


def require_column(name: str, available: list[str], source: str, option: str) -> str:
    """``name`` if the file has it, otherwise an error listing the columns that exist."""
    if name in available:
        return name
    raise InputError("column not found", source=source, column=name, rule="missing_column",
                     hint=_hint_for(name, available, option))


def _find_named(available: list[str], names: tuple[str, ...]) -> list[str]:
    lowered = {c.lower(): c for c in available}
    return [lowered[n] for n in names if n in lowered]


def detect_label(available: list[str], source: str, given: str | None = None) -> str:
    """``given`` (``--label-col``) if the file has it, else the one column whose name is a
    usual label name (``label``, ``y``, ``target``...)."""
    if given:
        return require_column(given, available, source, "--label-col")
    found = _find_named(available, LABEL_NAMES)
    if len(found) == 1:
        return found[0]
    if not found:
        raise InputError("no label column found (looked for " + ", ".join(LABEL_NAMES[:6])
                         + ", ...)", source=source, rule="missing_column",
                         hint=f"available columns: {', '.join(available[:20])}; set --label-col")
    raise InputError(f"several columns could be the label: {', '.join(found)}", source=source,
                     rule="ambiguous_column", hint="choose one with --label-col")


def class_suffixes(columns: list[str]) -> list[str]:
    """Class names from column names: strip the longest common prefix that ends in a
    separator (``p_cat, p_dog`` -> ``cat, dog``; ``p_10, p_11`` -> ``10, 11``)."""
    if len(columns) < 2:
        return list(columns)
    prefix = os.path.commonprefix(columns)
    cut = max((i + 1 for i, ch in enumerate(prefix) if not ch.isalnum()), default=0)
    names = [c[cut:] for c in columns]
    if all(names) and len(set(names)) == len(names):
        return names
    return list(columns)


def select_columns(spec: str, available: list[str], source: str, option: str) -> list[str]:
    """Columns named by a glob pattern (``'p_*'``, file order) or a comma list."""
    if re.search(r"[*?\[]", spec):
        matched = [c for c in available if fnmatch.fnmatchcase(c, spec)]
        if not matched:
            raise InputError(f"pattern '{spec}' matches no column", source=source,
                             rule="missing_column", hint=_hint_for(spec, available, option))
        return matched
    names = split_list(spec)
    if not names:
        raise InputError(f"{option} {spec!r} names no column", source=source,
                         rule="missing_column", hint=_hint_for(spec, available, option))
    if len(set(names)) < len(names):
        twice = next(name for name in names if names.count(name) > 1)
        raise InputError(f"{option} names column '{twice}' twice", source=source,
                         column=twice, rule="conflicting_options",
                         hint="list each column once")
    return [require_column(name, available, source, option) for name in names]


def _score_columns(columns: list[str], kind: str) -> ScoreColumns:
    names = class_suffixes(columns) if len(columns) > 1 else []
    return ScoreColumns(tuple(columns), tuple(names), kind)


def detect_scores(available: list[str], source: str, exclude: set[str]) -> ScoreColumns:
    """Autodetect one probability column, a ``p_*``-style family, or else logits."""
    pool = [c for c in available if c not in exclude]
    for names, prefixes, kind in ((PROB_NAMES, PROB_PREFIXES, "probability"),
                                  (LOGIT_NAMES, LOGIT_PREFIXES, "logit")):
        families = ([c for c in pool if c.lower().startswith(prefix) and len(c) > len(prefix)]
                    for prefix in prefixes)
        candidates = [[c] for c in _find_named(pool, names)] + [f for f in families
                                                                 if len(f) >= 2]
        if len(candidates) == 1:
            return _score_columns(candidates[0], kind)
        if len(candidates) > 1:
            shown = "; ".join(", ".join(group) for group in candidates)
            raise InputError(f"several {kind} columns could be the predictions: {shown}",
                             source=source, rule="ambiguous_column",
                             hint="choose with --prob-cols (or --logit-cols)")
    raise InputError("no probability column found (looked for p, prob, score, ... and p_*, "
                     "prob_*)", source=source, rule="missing_column",
                     hint=f"available columns: {', '.join(clip(c, 40) for c in pool[:20])}; "
                          "set --prob-cols or --logit-cols")


def resolve_scores(prob_cols: str | None, logit_cols: str | None, available: list[str],
                   source: str, exclude: set[str]) -> ScoreColumns:
    """Explicit ``--prob-cols`` / ``--logit-cols`` when given, otherwise autodetection."""
    if prob_cols and logit_cols:
        raise InputError("give either --prob-cols or --logit-cols, not both", source=source,
                         rule="conflicting_options")
    for spec, option, kind in ((prob_cols, "--prob-cols", "probability"),
                               (logit_cols, "--logit-cols", "logit")):
        if spec:
            return _score_columns(select_columns(spec, available, source, option), kind)
    return detect_scores(available, source, exclude)
