"""The one-vs-rest views of a multi-class model's local tests (Vashistha & Farahi,
*I-trustworthy models*): each class's KLCE^2 on the kernel of ``p_c`` and the covariates,
and its local aggregate test."""

from __future__ import annotations

from typing import Any

import numpy as np

from calaudit.inference.feature_tests import feature_consistency_test, feature_statistic
from calaudit.local import aggregate_test as aggregate
from calaudit.local.features import product_features, rows_consistency_test
from calaudit.local.kernel import product_gram
from calaudit.local.klce import klce2
from calaudit.local.row_columns import class_column

#: The one-vs-rest view (one kernel pass per class) is skipped above this many classes.
MAX_PER_CLASS = 20


def per_class_views(setup: Any, view: Any = None) -> list[dict[str, Any]]:
    """Multi-class: each class one-vs-rest (kernel on ``p_c``, residual ``1{y = c} - p_c``)
    on the setup of :class:`calaudit.local.kernel_tests.LocalTests`: the KLCE^2 and, when
    tests run, the local aggregate test of that view (``p_value``) with its kernel
    member's own p-value (``klce_p_value``), by ``view`` (default :func:`class_view`;
    weighted rows: :meth:`calaudit.local.weighted_local.WeightedLocalTests.class_view`).
    On a dataset whose tasks read their own rows (the random-feature path, tests run) each
    view's columns are built in the tasks (:class:`calaudit.local.features.KernelRows`,
    ``ScoreRows`` of the class) and its bandwidth's subsample is gathered: no row is held
    here."""
    if (setup.data.is_binary or not setup.local.per_class
            or setup.data.n_classes > MAX_PER_CLASS):
        return []
    lc, rng = setup.local, setup.streams["per_class"]
    testing = setup.config.run_tests and not setup.too_small()
    # the feature path's tests on a dataset read by tasks: every per-row column is built
    # in the tasks (KernelRows, ScoreRows of the class); otherwise the rows are held here
    tasks = setup.gathers and testing and setup.features is not None
    rows = []
    for c, name in enumerate(setup.data.classes):
        if tasks:
            p_c, r_c = class_column(setup.data, c), None
        else:
            p_c = setup.data.y_proba[:, c].copy()
            r_c = (setup.data.y_true == c).astype(np.float64) - p_c
        bw = setup.bandwidth(p_c, lc.prob_bandwidth, rng)
        gram = product_gram(p_c, bw.gamma, setup.encoded.features, setup.cov_bw.gamma,
                            lazy=setup.features is not None and setup.design is None)
        features = None if setup.features is None else product_features(
            gram.features, setup.choice.n_features, setup.choice.frequency_seed)
        row = {"class": name, "prob_kernel": bw.to_dict(), "p_value": None}
        row.update((view or class_view)(setup, c, p_c, r_c, bw.gamma, gram, features, rng,
                                        testing))
        rows.append(row)
    return rows


def class_view(setup: Any, c: int, p_c: Any, r_c: Any, gamma: float, gram: Any,
               features: Any, rng: np.random.Generator, testing: bool) -> dict[str, Any]:
    """Class ``c``'s KLCE^2 on its ``gram`` (``features``: the feature path) and, when
    ``testing``, its local aggregate test (``r_c`` None: the columns built by the tasks,
    the prediction kernel's ``gamma``)."""
    lc = setup.local
    if not testing:
        return {"statistic": klce2(gram, r_c) if features is None else
                feature_statistic(features, gram.features, r_c)}
    if features is not None:
        seed, stream = aggregate.feature_seed(rng), f"per_class:{c}"
        res = (rows_consistency_test(features, setup.kernel_rows(c, gamma), rng,
                                     lc.n_resamples, stream) if r_c is None else
               feature_consistency_test(features, gram.features, r_c, p_c, rng,
                                        lc.n_resamples, stream=stream))
        found = aggregate.feature_aggregate(
            res.statistic, res.null_distribution, res.p_value,
            setup.score_rows(c, r_c, p_c), *setup.level_sizes(), 1, seed,
            lc.n_resamples, stream=stream)
        method = "local aggregate test, one-vs-rest, random features"
    else:
        found, res = aggregate.exact_aggregate(gram, r_c, p_c, setup.score_members(p_c), rng,
                                               lc.n_resamples, dtype=np.float64)
        method = "local aggregate test, one-vs-rest"
    return {"statistic": res.statistic, "p_value": found.p_value,
            "klce_p_value": res.p_value, "deciding_member": found.deciding, "method": method}
