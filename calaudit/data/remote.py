"""URLs: the protocols calaudit reads (docs/inputs.md, "Remote filesystems"), the options
that bound every wait of their filesystems to ``REMOTE_TIMEOUT`` seconds, and one error line
for every failure of a remote filesystem. Other protocols and chained URLs are refused
before anything is imported or opened."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from calaudit import limits
from calaudit.deadlines import DeadlineExceeded
from calaudit.exceptions import InputError, clip

#: Supported URL protocols -> ``(fsspec package, calaudit extra)``; ``None``: built into
#: fsspec (``file://`` URLs are local paths).
PROTOCOLS: dict[str, tuple[str, str] | None] = {
    "memory": None,
    "s3": ("s3fs", "s3"), "s3a": ("s3fs", "s3"),
    "gs": ("gcsfs", "gcs"), "gcs": ("gcsfs", "gcs"),
    "abfs": ("adlfs", "azure"), "abfss": ("adlfs", "azure"), "az": ("adlfs", "azure"),
}
#: Top-level modules whose exceptions are a remote filesystem's failures, not calaudit's.
REMOTE_MODULES = frozenset({
    "fsspec", "s3fs", "aiobotocore", "botocore", "boto3", "gcsfs", "google", "adlfs",
    "azure", "aiohttp", "aiohappyeyeballs", "requests", "urllib3", "yarl", "multidict",
    "ssl", "socket", "asyncio", "concurrent",
})
#: Loggers of those libraries: held back while a URL is read (an error is one line).
REMOTE_LOGGERS = ("fsspec", "s3fs", "aiobotocore", "botocore", "gcsfs", "google", "adlfs",
                  "azure", "aiohttp", "urllib3", "asyncio")
SUPPORTED_TEXT = "file://, " + ", ".join(f"{p}://" for p in PROTOCOLS)


def protocol_of(url: str) -> str:
    return url.split("://", 1)[0].lower()


def check_supported(url: str) -> None:
    """One ``[unsupported_url]`` line unless calaudit reads ``url``."""
    protocol = protocol_of(url)
    if "::" in url:
        raise InputError("chained URLs ('::', e.g. zip://, simplecache::) are not supported",
                         source=url, rule="unsupported_url",
                         hint=f"extract or copy the files first; calaudit reads local paths "
                              f"and {SUPPORTED_TEXT} URLs")
    if protocol not in PROTOCOLS:
        raise InputError(f"the {clip(protocol, 20)}:// protocol is not supported", source=url,
                         rule="unsupported_url",
                         hint="copy the data to a local path, or use a supported URL: "
                              f"{SUPPORTED_TEXT}")


def bounded_options(protocol: str) -> dict[str, Any]:
    """The filesystem options that bound each request's waits, under the user's own
    ``fsspec.config.conf`` (which wins)."""
    import fsspec.config

    seconds = limits.REMOTE_TIMEOUT
    family = (PROTOCOLS.get(protocol) or ("", ""))[0]
    ours: dict[str, Any] = {}
    if family == "s3fs":
        ours = {"config_kwargs": {
            "connect_timeout": seconds, "read_timeout": seconds,
            "retries": {"max_attempts": 3, "mode": "standard"}}}
    elif family == "gcsfs":
        import aiohttp

        ours = {"requests_timeout": aiohttp.ClientTimeout(sock_connect=seconds,
                                                          sock_read=seconds)}
    elif family == "adlfs":
        ours = {"connection_timeout": int(seconds), "read_timeout": int(seconds)}
    user = fsspec.config.conf.get(protocol, {})
    merged = dict(ours)
    for key, value in ours.items():
        if isinstance(value, dict) and isinstance(user.get(key), dict):
            merged[key] = {**value, **user[key]}
        elif key in user:
            merged.pop(key)
    return merged


def failure(url: str, exc: BaseException, action: str = "read") -> InputError:
    """One line for the failure ``exc`` of the remote filesystem of ``url``."""
    protocol = protocol_of(url)
    if any("timeout" in cls.__name__.lower() for cls in type(exc).__mro__):
        message = (f"the {protocol}:// store gave {exc}" if isinstance(exc, DeadlineExceeded)
                   else f"no answer from the {protocol}:// store ({_reason(exc)})")
        return InputError(message, source=url, rule="remote_timeout",
                          hint="check the endpoint and the network; each request waits "
                               f"{limits.REMOTE_TIMEOUT:g} s (see 'Ranges and limits' in "
                               "docs/configuration.md)")
    if isinstance(exc, FileNotFoundError):
        return InputError("file not found", source=url, rule="file_not_found",
                          hint="check the URL")
    return InputError(f"cannot {action} ({_reason(exc)})", source=url, rule="unreadable_file",
                      hint="check the URL, the endpoint and the credentials (see 'Remote "
                           "filesystems' in docs/inputs.md)")


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    name = type(exc).__name__
    return clip(f"{name}: {text}" if text else name, 200)


@contextlib.contextmanager
def remote_errors(url: str, action: str = "read") -> Iterator[None]:
    """Inside the block, a remote filesystem's failure (an ``OSError`` or an exception of
    :data:`REMOTE_MODULES`) is one :class:`InputError` naming ``url``, the remote libraries'
    loggers silenced (retries log tracebacks); anything else is a bug."""
    import logging

    loggers = [logging.getLogger(name) for name in REMOTE_LOGGERS]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL + 1)
    try:
        yield
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - a remote failure, or a bug
        modules = {cls.__module__.split(".")[0] for cls in type(exc).__mro__}
        if not isinstance(exc, (OSError, DeadlineExceeded)) and not modules & REMOTE_MODULES:
            raise
        raise failure(url, exc, action) from None
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)
