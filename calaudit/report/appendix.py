"""The methods and configuration appendix: estimators and their settings, kernels and
bandwidths, seeds, versions and BLAS threads, and the full resolved configuration."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from calaudit.output.formatting import fmt_count, fmt_percent, fmt_value
from calaudit.report.notes import adjustment_summary
from calaudit.report.views import AppendixView, ConfigGroup, KeyValue, SettingsRow, SettingsTable

#: Settings that get their own column in the estimator/test tables (when any row has
#: them); the others are listed in one "settings" cell. Kept short: many narrow columns
#: squeeze the text cell in print.
COLUMNS = ("notion", "n_bins")


def build_appendix(result: Mapping[str, Any]) -> AppendixView:
    config = result.get("config") or {}
    pairs = list(flatten(config))
    return AppendixView(methods=tuple(_methods(result)), seeds=tuple(_seeds(result)),
                        environment=tuple(_environment(result)),
                        metric_settings=settings_table(
                            [(m["id"], "", m.get("params") or {})
                             for m in result.get("metrics") or ()]),
                        test_settings=settings_table(
                            [(t["id"], _test_method(t), t.get("params") or {})
                             for t in result.get("tests") or ()]),
                        config_groups=config_groups(pairs))


def _test_method(test: Mapping[str, Any]) -> str:
    method = str(test.get("method") or "-")
    if test.get("n_resamples"):
        method += f"; {fmt_count(test['n_resamples'])} resamples"
    return method


def settings_table(items: list[tuple[str, str, Mapping[str, Any]]]) -> SettingsTable:
    """One row per estimator or test; the common settings as columns, the rest as text."""
    header = tuple(c for c in COLUMNS if any(c in params for _, _, params in items))
    rows = tuple(SettingsRow(name=str(name), method=method or "-",
                             columns=tuple(fmt_value(params.get(c)) if c in params else ""
                                           for c in header),
                             other="; ".join(f"{k} {fmt_value(v)}" for k, v in params.items()
                                             if k not in header) or "-")
                 for name, method, params in items)
    return SettingsTable(header=header, rows=rows)


def config_groups(pairs: list[tuple[str, str]]) -> tuple[ConfigGroup, ...]:
    """The flattened configuration grouped by its first key."""
    groups: dict[str, list[KeyValue]] = {}
    for key, value in pairs:
        section, _, rest = key.partition(".")
        if not rest:
            section, rest = "", key
        groups.setdefault(section, []).append(KeyValue(rest, value))
    return tuple(ConfigGroup(section, tuple(items)) for section, items in groups.items())


def flatten(value: Any, prefix: str = "") -> Iterator[tuple[str, str]]:
    """``("binning.n_bins", "15")`` pairs of a nested mapping, in its key order."""
    if isinstance(value, Mapping) and value:
        for key, item in value.items():
            yield from flatten(item, f"{prefix}.{key}" if prefix else str(key))
    else:
        yield prefix, fmt_value(value)


def _methods(result: Mapping[str, Any]) -> Iterator[KeyValue]:
    reliability = (result.get("diagrams") or {}).get("reliability") or {}
    if reliability:
        yield KeyValue("reliability bins",
                       f"{reliability.get('n_bins', '-')} {reliability.get('binning', '')} "
                       f"bins, right-closed (0 in the first), notion "
                       f"{reliability.get('notion', '-')}, 95% Wilson intervals")
        band = reliability.get("consistency_band")
        if band:
            yield KeyValue("consistency band",
                           f"{fmt_percent(band.get('level'), 0)} pointwise quantiles of each "
                           f"bin's "
                           f"observed rate over {fmt_count(band.get('n_resamples'))} label "
                           f"redraws y* ~ Cat(p) (Broecker & Smith 2007)")
    klce = (result.get("local") or {}).get("klce") or {}
    for key, label in (("prob_kernel", "KLCE kernel on predictions"),
                       ("cov_kernel", "KLCE kernel on covariates")):
        if klce.get(key):
            yield KeyValue(label, fmt_value(klce[key]))
    config = result.get("config") or {}
    yield KeyValue("multiple testing",
                   f"p-values {adjustment_summary(config)}; alpha {config.get('alpha', '-')}")


def _seeds(result: Mapping[str, Any]) -> Iterator[KeyValue]:
    config = result.get("config") or {}
    yield KeyValue("seed", fmt_value(config.get("seed")))
    yield KeyValue("random streams",
                   "one generator per stage, PCG64 seeded by (seed, crc32(stage name)); the "
                   "same seed and data give the same numbers")
    if "n_resamples" in config:
        yield KeyValue("resamples (global tests)", fmt_count(config["n_resamples"]))


def _environment(result: Mapping[str, Any]) -> Iterator[KeyValue]:
    yield KeyValue("calaudit", str(result.get("calaudit_version", "-")))
    environment = result.get("environment") or {}
    for key, value in environment.items():
        if key == "blas":
            yield KeyValue("BLAS", blas_text(value))
        else:
            yield KeyValue(str(key), fmt_value(value))
    yield KeyValue("report rendered with", renderer_versions())


def blas_text(libraries: Any) -> str:
    """``openblas 0.3.27 (pthreads), 2 threads`` for each library threadpoolctl found."""
    if not libraries:
        return "not recorded"
    parts = []
    for lib in libraries:
        layer = lib.get("threading_layer")
        parts.append(f"{lib.get('internal_api', lib.get('user_api', '?'))} "
                     f"{lib.get('version') or ''}".strip()
                     + (f" ({layer})" if layer and layer != "unknown" else "")
                     + f", {lib.get('num_threads', '?')} thread(s)")
    return "; ".join(parts)


def renderer_versions() -> str:
    import jinja2
    import matplotlib

    return f"matplotlib {matplotlib.__version__}, jinja2 {jinja2.__version__}"
