"""Attribution: which covariates explain the miscalibration, and by how much.

Statistics layer (imports :mod:`calaudit.inference` and :mod:`calaudit.local`), on arrays:
the recalibration GLM ``logit P(y = 1) = logit(p) + b0 + terms`` (:mod:`.design`,
:mod:`.model`, :mod:`.irls`), the attribution section and spill-over check
(:mod:`.explain`) and the between-group disparity (:mod:`.disparity`).
"""
