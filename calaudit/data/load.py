"""Files -> :class:`~calaudit.data.dataset.CalibrationData`: the one entry point that
reads input files (``calaudit.load``)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from calaudit.data.build import LoadOptions, RawInputs, build
from calaudit.data.columns import detect_label, require_column, resolve_scores, split_list
from calaudit.data.covariates import check_count
from calaudit.data.dataset import CalibrationData
from calaudit.data.locations import DataFile, Location, locate
from calaudit.data.npz import NpzArchive
from calaudit.data.partitioned import Dataset, RowLayout
from calaudit.data.readers import SourceFile, check_readable, file_format, read_columns, sha256_of
from calaudit.data.rows import KIND_WORDS, numbers
from calaudit.data.spill import ColumnStore
from calaudit.exceptions import InputError
from calaudit.scale import release_free_memory


@dataclass(frozen=True)
class ColumnOptions:
    """Where things are: the command-line options of docs/inputs.md."""

    label_col: str | None = None
    prob_cols: str | None = None
    logit_cols: str | None = None
    id_col: str | None = None
    labels_file: str | None = None
    covariates_file: str | None = None
    covariates: tuple[str, ...] = ()
    weight_col: str | None = None
    sampling_rate_col: str | None = None


def load(path: str | os.PathLike[str], *, label_col: str | None = None,
         prob_cols: str | None = None, logit_cols: str | None = None, id_col: str | None = None,
         labels: str | Path | None = None, covariates_file: str | Path | None = None,
         covariates: str | list[str] | tuple[str, ...] = (),
         categorical: str | list[str] | tuple[str, ...] = (), positive_label: str | None = None,
         renormalize: bool = False, drop_invalid: bool = False,
         require_two_classes: bool = True, spill: str = "auto",
         spill_dir: str | os.PathLike[str] | None = None, weight_col: str | None = None,
         weight_kind: str = "frequency", negative_rate: float | None = None,
         sampling_rate_col: str | None = None) -> CalibrationData:
    """Read, join and validate predictions, labels and covariates.

    ``path`` (and ``labels``, ``covariates_file``) is one file, a dataset directory, a glob
    (``"preds/*.parquet"``) or an fsspec URL (docs/inputs.md). Parameters mirror the
    command-line options (``--label-col`` ...): ``prob_cols`` and ``logit_cols`` take a glob
    pattern (``"p_*"``) or a comma list; ``covariates`` and ``categorical`` a comma list or
    a sequence; ``spill`` (``auto``, ``always``, ``never``) and ``spill_dir`` whether the
    kept columns are memory-mapped files (docs/scale.md); ``weight_col``, ``weight_kind``,
    ``negative_rate`` and ``sampling_rate_col`` weight the rows (docs/weights.md). Raises
    :class:`~calaudit.exceptions.InputError` for any bad input.

    >>> data = load("sample_data/credit_default.csv", covariates="age,race")  # doctest: +SKIP
    """
    columns = ColumnOptions(label_col, prob_cols, logit_cols, id_col,
                            None if labels is None else str(labels),
                            None if covariates_file is None else str(covariates_file),
                            tuple(_names(covariates)), weight_col, sampling_rate_col)
    options = LoadOptions(tuple(_names(categorical)), positive_label, renormalize,
                          drop_invalid, require_two_classes, weight_kind, negative_rate)
    check_count(columns.covariates, os.fspath(path), options.categorical)
    store = ColumnStore(spill, spill_dir)
    data = CalibrationData(*build(gather(os.fspath(path), columns, store), options, store))
    release_free_memory()  # the readers' freed chunks and masks leave the RSS
    return data


def _names(value: str | list[str] | tuple[str, ...]) -> list[str]:
    return split_list(value) if isinstance(value, str) else list(value)


class SingleFile:
    """One local file, with the reader interface of
    :class:`~calaudit.data.partitioned.Dataset`: Parquet, CSV and TSV are read as a one-file
    dataset, NPZ archives by :mod:`calaudit.data.npz`."""

    def __init__(self, path: Path, store: ColumnStore | None = None) -> None:
        self.path = path
        self.rows = 0
        self.archive = NpzArchive(path, store) if path.name.lower().endswith(".npz") else None

    def columns(self) -> list[str]:
        return read_columns(self.path) if self.archive is None else list(self.archive.columns())

    def read(self, columns: list[str], store: ColumnStore | None = None) -> pd.DataFrame:
        fmt = file_format(self.path)
        if fmt != "npz":
            check_readable(self.path)
            one = DataFile(str(self.path), str(self.path), os.stat(self.path).st_size)
            frame = Dataset(Location(str(self.path), "file", fmt, (one,))).read(columns, store)
        else:
            frame = self.archive.frame(columns)
        self.rows = len(frame)
        return frame

    def layout(self) -> RowLayout | None:
        return None

    def provenance(self, role: str) -> list[SourceFile]:
        digest = sha256_of(self.path)
        return [SourceFile(role, str(self.path), file_format(self.path), digest, self.rows,
                           os.stat(self.path).st_size, "sha256", digest)]


def open_input(spec: str, store: ColumnStore | None = None) -> SingleFile | Dataset:
    """The reader of one file or of a dataset (directory, glob, URL)."""
    location = locate(spec)
    return Dataset(location) if location.is_dataset else SingleFile(Path(location.spec), store)


@dataclass
class _Part:
    """One input (a file or a dataset) and the columns wanted from it."""

    role: str
    name: str
    source: SingleFile | Dataset
    available: list[str] = field(default_factory=list)
    wanted: list[str] = field(default_factory=list)
    frame: pd.DataFrame | None = None

    @classmethod
    def open(cls, role: str, spec: str, store: ColumnStore | None = None) -> _Part:
        source = open_input(spec, store)
        name = str(source.path) if isinstance(source, SingleFile) else spec
        return cls(role, name, source, source.columns())


def gather(main_path: str, opts: ColumnOptions, store: ColumnStore | None = None
           ) -> RawInputs:
    """Resolve every column, read the files and align their rows."""
    store = store if store is not None else ColumnStore()
    main = _Part.open("predictions", main_path, store)
    label_part = main if opts.labels_file is None else _Part.open("labels", opts.labels_file,
                                                                  store)
    cov_part = main if opts.covariates_file is None else _Part.open(
        "covariates", opts.covariates_file, store)
    label_col = detect_label(label_part.available, label_part.name, opts.label_col)
    for name in opts.covariates:
        require_column(name, cov_part.available, cov_part.name, "--covariates")
    weighting = [c for c in (opts.weight_col, opts.sampling_rate_col) if c]
    for name, flag in ((opts.weight_col, "--weight-col"),
                       (opts.sampling_rate_col, "--sampling-rate-col")):
        if name:
            require_column(name, main.available, main.name, flag)
    reserved = ({label_col, *opts.covariates, *weighting}
                | ({opts.id_col} if opts.id_col else set()))
    scores = resolve_scores(opts.prob_cols, opts.logit_cols, main.available, main.name,
                            exclude=reserved)
    _check_roles(scores.columns, label_col, opts)
    main.wanted += list(scores.columns) + [c for c in weighting if c not in main.wanted]
    label_part.wanted.append(label_col)
    cov_part.wanted += list(opts.covariates)
    parts = list({id(part): part for part in (main, label_part, cov_part)}.values())
    unmatched, ids = _read_and_align(parts, opts.id_col, store)
    merged = {col: part.frame[col] for part in parts for col in part.wanted}
    layouts = {part.name: layout for part in parts
               if (layout := part.source.layout()) is not None}
    return RawInputs(
        scores=_score_matrix([merged[c] for c in scores.columns], scores.columns, main.name,
                             layouts.get(main.name), store),
        score_columns=scores.columns, class_names=scores.class_names, kind=scores.kind,
        score_source=main.name, labels=merged[label_col], label_column=label_col,
        label_source=label_part.name,
        covariates=[(c, merged[c], cov_part.name) for c in opts.covariates],
        unmatched=unmatched, id_column=opts.id_col,
        files=tuple(f for part in parts for f in part.source.provenance(part.role)), ids=ids,
        layouts=layouts,
        dataset=main.source.describe() if isinstance(main.source, Dataset) else None,
        weights=merged.get(opts.weight_col), weight_column=opts.weight_col,
        rates=merged.get(opts.sampling_rate_col), rate_column=opts.sampling_rate_col,
    )


def _check_roles(score_cols: tuple[str, ...], label_col: str, opts: ColumnOptions) -> None:
    weighting = {c for c in (opts.weight_col, opts.sampling_rate_col) if c}
    clash = set(score_cols) & ({label_col, *opts.covariates} | weighting)
    clash |= weighting & {label_col, *opts.covariates}
    if label_col in opts.covariates:
        clash.add(label_col)
    if clash:
        name = sorted(clash)[0]
        raise InputError("the same column is used for two roles", column=name,
                         rule="conflicting_options",
                         hint="a column is either the label, a prediction, a covariate or "
                              "a weight")


def _score_matrix(columns: list[pd.Series], names: tuple[str, ...], path: str,
                  layout: RowLayout | None, store: ColumnStore) -> np.ndarray:
    """The (n, m) float64 prediction matrix (one float64 column as read, no copy)."""
    if len(columns) == 1:
        return _numeric(columns[0], names[0], path, layout)[:, None]
    out = store.empty((len(columns[0]), len(columns)), np.float64)
    for k, (values, name) in enumerate(zip(columns, names)):
        out[:, k] = _numeric(values, name, path, layout)
    return out


def _numeric(values: pd.Series, column: str, path: str,
             layout: RowLayout | None = None) -> np.ndarray:
    if values.dtype == np.float64:  # every value is a number (or NaN): nothing to convert
        return values.to_numpy()
    if isinstance(values.dtype, pd.CategoricalDtype):  # text read from a dataset
        values = values.astype(object)
    kind = getattr(values.dtype, "kind", "O")
    if kind in KIND_WORDS:
        raise InputError(f"holds {KIND_WORDS[kind]}, not probabilities", source=str(path),
                         column=column, rule="non_numeric_probability",
                         hint="prediction columns must hold real numbers")
    return numbers(values, path, column, "non_numeric_probability",
                   "prediction columns must hold numbers", layout)


def _read_and_align(parts: list[_Part], id_col: str | None, store: ColumnStore
                    ) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Read each file and align the others to the first by id or by row order; returns
    the prediction rows whose id another file lacks, and their ids (None without ids)."""
    for part in parts:
        wanted = list(dict.fromkeys(part.wanted + ([id_col] if id_col and len(parts) > 1 else [])))
        if id_col and len(parts) > 1:
            require_column(id_col, part.available, part.name, "--id-col")
        part.frame = part.source.read(wanted, store)
    main = parts[0]
    if len(parts) == 1:
        return None, None
    if not id_col:
        for part in parts[1:]:
            if len(part.frame) != len(main.frame):
                raise InputError(f"has {len(part.frame)} rows but {main.name} has "
                                 f"{len(main.frame)}", source=part.name, rule="length_mismatch",
                                 hint="give --id-col to join the files on an id column")
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
        raise InputError(f"id '{first}' occurs more than once", source=part.name,
                         column=id_col, rule="duplicate_id", hint="ids must be unique")
    return ids

