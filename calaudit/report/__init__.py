"""Audit reports (HTML, Markdown, PDF) rendered from a JSON result: ``context`` builds the
view model, ``plots`` and ``figures`` draw, ``render`` fills the templates."""
