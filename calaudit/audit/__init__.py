"""The audit: configuration in, :class:`~calaudit.results.AuditResult` out.

``config`` holds the settings, ``battery`` the list of stages, ``runner`` the only
orchestrator, ``gate`` the statuses, the verdict and the exit code.
"""
