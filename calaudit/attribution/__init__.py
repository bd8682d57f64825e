"""Attribution: which covariates explain the miscalibration, and by how much.

Statistics layer (imports :mod:`calaudit.inference` and :mod:`calaudit.local`), on arrays.

* :mod:`.design` -- covariate terms of the recalibration model (categorical levels,
  quantile bands of numeric covariates, treatment coding);
* :mod:`.model` -- the recalibration GLM ``logit P(y = 1) = logit(p) + b0 + terms``
  (IRLS on per-cell sums, :mod:`.irls`; the same fit as statsmodels' GLM, checked in the
  tests), likelihood-ratio tests and standardised level biases with delta-method
  intervals;
* :mod:`.explain` -- the attribution section, the spill-over check of failing groups
  (``groups[*].explained_by``) and the one-sentence summary every output prints;
* :mod:`.disparity` -- largest minus smallest group bias per covariate with a bootstrap
  interval.
"""
