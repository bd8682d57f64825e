"""Files -> :class:`~calaudit.data.dataset.CalibrationData`: the one entry point that
reads input files (``calaudit.load``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from calaudit.data.build import LoadOptions, RawInputs, build
from calaudit.data.columns import (
    detect_label,
    require_column,
    resolve_scores,
    split_list,
)
from calaudit.data.dataset import CalibrationData
from calaudit.data.rows import shown_value
from calaudit.data.readers import SourceFile, file_format, read_columns, read_table, sha256_of
from calaudit.exceptions import InputError


@dataclass(frozen=True)
class ColumnOptions:
    """Where things are: the command-line options of design notes 2.1."""

    label_col: str | None = None
    prob_cols: str | None = None
    logit_cols: str | None = None
    id_col: str | None = None
    labels_file: str | None = None
    covariates_file: str | None = None
    covariates: tuple[str, ...] = ()


def load(
    path: str | Path,
    *,
    label_col: str | None = None,
    prob_cols: str | None = None,
    logit_cols: str | None = None,
    id_col: str | None = None,
    labels: str | Path | None = None,
    covariates_file: str | Path | None = None,
    covariates: str | list[str] | tuple[str, ...] = (),
    categorical: str | list[str] | tuple[str, ...] = (),
    positive_label: str | None = None,
    renormalize: bool = False,
    drop_invalid: bool = False,
    require_two_classes: bool = True,
) -> CalibrationData:
    """Read, join and validate predictions, labels and covariates.

    Parameters mirror the command-line options (``--label-col`` ...). ``prob_cols`` and
    ``logit_cols`` take a glob pattern (``"p_*"``) or a comma list; ``covariates`` and
    ``categorical`` a comma list or a sequence. Raises
    :class:`~calaudit.exceptions.InputError` for any bad input.

    >>> data = load("sample_data/credit_default.csv", covariates="age,race")  # doctest: +SKIP
    """
    columns = ColumnOptions(
        label_col, prob_cols, logit_cols, id_col,
        None if labels is None else str(labels),
        None if covariates_file is None else str(covariates_file),
        tuple(_names(covariates)),
    )
    options = LoadOptions(tuple(_names(categorical)), positive_label, renormalize,
                          drop_invalid, require_two_classes)
    for name in options.categorical:
        if name not in columns.covariates:
            raise InputError(f"--categorical names '{name}', which is not a covariate",
                             column=name, rule="conflicting_options",
                             hint="list it in --covariates too")
    return build(gather(Path(path), columns), options)


def _names(value: str | list[str] | tuple[str, ...]) -> list[str]:
    return split_list(value) if isinstance(value, str) else list(value)


@dataclass
class _Part:
    """One input file and the columns wanted from it."""

    role: str
    path: Path
    available: list[str]
    wanted: list[str]
    frame: pd.DataFrame | None = None
    rows: int = 0


def gather(main_path: Path, opts: ColumnOptions) -> RawInputs:
    """Resolve every column, read the files and align their rows."""
    main = _Part("predictions", main_path, read_columns(main_path), [])
    label_part = _extra("labels", opts.labels_file, main)
    cov_part = _extra("covariates", opts.covariates_file, main)
    label_col = (require_column(opts.label_col, label_part.available, str(label_part.path),
                                "--label-col")
                 if opts.label_col else detect_label(label_part.available, str(label_part.path)))
    for name in opts.covariates:
        require_column(name, cov_part.available, str(cov_part.path), "--covariates")
    reserved = {label_col, *opts.covariates} | ({opts.id_col} if opts.id_col else set())
    scores = resolve_scores(opts.prob_cols, opts.logit_cols, main.available, str(main.path),
                            exclude=reserved)
    _check_roles(scores.columns, label_col, opts)
    main.wanted += list(scores.columns)
    label_part.wanted.append(label_col)
    cov_part.wanted += list(opts.covariates)
    parts = _distinct([main, label_part, cov_part])
    unmatched, ids = _read_and_align(parts, opts.id_col)
    merged = {col: part.frame[col] for part in parts for col in part.wanted}
    return RawInputs(
        scores=np.column_stack([_numeric(merged[c], c, main.path) for c in scores.columns]),
        score_columns=scores.columns, class_names=scores.class_names, kind=scores.kind,
        score_source=str(main.path), labels=merged[label_col], label_column=label_col,
        label_source=str(label_part.path),
        covariates=[(c, merged[c], str(cov_part.path)) for c in opts.covariates],
        unmatched=unmatched, id_column=opts.id_col,
        files=tuple(_provenance(part) for part in parts), ids=ids,
    )


def _extra(role: str, path: str | None, main: _Part) -> _Part:
    if path is None:
        return main
    return _Part(role, Path(path), read_columns(Path(path)), [])


def _distinct(parts: list[_Part]) -> list[_Part]:
    out: list[_Part] = []
    for part in parts:
        if all(part is not seen for seen in out):
            out.append(part)
    return out


def _check_roles(score_cols: tuple[str, ...], label_col: str, opts: ColumnOptions) -> None:
    clash = set(score_cols) & ({label_col, *opts.covariates})
    if label_col in opts.covariates:
        clash.add(label_col)
    if clash:
        name = sorted(clash)[0]
        raise InputError("the same column is used for two roles", column=name,
                         rule="conflicting_options",
                         hint="a column is either the label, a prediction or a covariate")


def _numeric(values: pd.Series, column: str, path: Path) -> np.ndarray:
    kind = getattr(values.dtype, "kind", "O")
    if kind in "Mmc":
        what = {"M": "timestamps", "m": "time spans", "c": "complex numbers"}[kind]
        raise InputError(f"holds {what}, not probabilities", source=str(path), column=column,
                         rule="non_numeric_probability",
                         hint="prediction columns must hold real numbers")
    converted = pd.to_numeric(values, errors="coerce")
    bad = converted.isna() & values.notna()
    if bad.any():
        first = int(np.flatnonzero(bad.to_numpy())[0])
        raise InputError(
            f"value {shown_value(values.iloc[first])} at data row {first + 1} is not a number",
            source=str(path), column=column, rule="non_numeric_probability",
            hint="prediction columns must hold numbers",
        )
    if getattr(converted.dtype, "kind", "O") == "c":
        raise InputError("holds complex numbers, not probabilities", source=str(path),
                         column=column, rule="non_numeric_probability",
                         hint="prediction columns must hold real numbers")
    return converted.to_numpy(dtype=np.float64, na_value=np.nan)


def _read_and_align(parts: list[_Part], id_col: str | None
                    ) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Read each file; align the extra files to the first by id or by row order.

    Returns a mask of prediction rows whose id is missing from another file and the
    prediction rows' ids (both None unless files are joined on an id).
    """
    for part in parts:
        wanted = list(dict.fromkeys(part.wanted + ([id_col] if id_col and len(parts) > 1 else [])))
        if id_col and len(parts) > 1:
            require_column(id_col, part.available, str(part.path), "--id-col")
        part.frame = read_table(part.path, wanted)
        part.rows = len(part.frame)
    main = parts[0]
    if len(parts) == 1:
        return None, None
    if not id_col:
        for part in parts[1:]:
            if len(part.frame) != len(main.frame):
                raise InputError(
                    f"has {len(part.frame)} rows but {main.path} has {len(main.frame)}",
                    source=str(part.path), rule="length_mismatch",
                    hint="give --id-col to join the files on an id column",
                )
        return None, None
    main_ids = _ids(main, id_col)
    unmatched = np.zeros(len(main_ids), dtype=bool)
    for part in parts[1:]:
        ids = _ids(part, id_col)
        part.frame = part.frame.set_axis(ids).reindex(main_ids).reset_index(drop=True)
        unmatched |= ~np.asarray(main_ids.isin(ids))
    return unmatched, np.asarray(main_ids, dtype=object)


def _ids(part: _Part, id_col: str) -> pd.Index:
    ids = pd.Index(part.frame[id_col].astype(str))
    if ids.has_duplicates:
        first = ids[ids.duplicated()][0]
        raise InputError(f"id '{first}' occurs more than once", source=str(part.path),
                         column=id_col, rule="duplicate_id", hint="ids must be unique")
    return ids


def _provenance(part: _Part) -> SourceFile:
    return SourceFile(part.role, str(part.path), file_format(part.path), sha256_of(part.path),
                      part.rows)
