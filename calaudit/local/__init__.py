"""Local calibration (Vashistha & Farahi, *I-trustworthy models*).

Statistics layer: imports :mod:`calaudit.numerics` and :mod:`calaudit.inference` only and
works on arrays (the audit stage :mod:`calaudit.audit.local_calibration` turns a
``CalibrationData`` into arrays).

Modules, in the order of the data flow:

* :mod:`.encoding` -- covariates to a numeric matrix (z-scores, scaled one-hot codes);
* :mod:`.bandwidth` -- the median heuristic for Gaussian kernel bandwidths;
* :mod:`.kernel` -- the product kernel ``k(p, p') l(x, x')`` as a lazy Gram matrix;
* :mod:`.klce` -- the KLCE^2 statistic (paper eq. 4), KiTE's normalisation, the
  Hoeffding acceptance region (Corollary 3.7);
* :mod:`.resampling` -- the three local tests (consistency, bootstrap = Algorithm 1,
  KiTE permutation), all resamples batched through the pairwise engine;
* :mod:`.lcb` -- the local calibration bias at every observation (eq. 7), its summary,
  smoothed per-group curves with bands, the plotting subsample;
* :mod:`.poisson_binomial` and :mod:`.groups` -- the group table: quantile bands,
  intersections, bias with bootstrap intervals, exact group calibration tests, ranking.
"""
