"""Local calibration (Vashistha & Farahi, *I-trustworthy models*).

Statistics layer on arrays: imports :mod:`calaudit.numerics` and :mod:`calaudit.inference`
only (the audit stage :mod:`calaudit.audit.local_calibration` builds the arrays).
:mod:`.encoding` and :mod:`.bandwidth` prepare the product kernel of :mod:`.kernel`;
:mod:`.klce` (eq. 4) and :mod:`.resampling` give the KLCE tests, :mod:`.aggregate_test` the
aggregate test, :mod:`.lcb` the local calibration bias (eq. 7), and :mod:`.groups` with
:mod:`.poisson_binomial` the group table.
"""
