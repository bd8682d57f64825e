"""From files to one validated, immutable :class:`CalibrationData`.

``readers`` turns a file into a table, ``columns`` decides which columns hold what,
``labels`` maps labels to classes, ``rows`` applies the per-row rules, ``covariates``
encodes the covariates, ``build`` validates all of it, ``dataset`` holds the result (made of
``parts``) and ``load`` runs the whole path. ``partitioned`` reads datasets of files into
``column_sink`` columns, allocated by ``spill``'s store (anonymous, or memory-mapped files).
"""
