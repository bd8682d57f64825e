"""Audit reports (HTML and Markdown) rendered from a JSON result.

``context`` builds the view model (formatted strings, no statistics), ``plots`` and
``figures`` draw the figures with matplotlib's object-oriented API, ``render`` fills the
jinja2 templates and writes the files, ``load`` reads and validates a saved result for
``calaudit report``.
"""
