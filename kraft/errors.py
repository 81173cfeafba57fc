"""The failures an operator acts on: one class per exit code, one line each.

A failure of ``kraft node start`` or of a tool is reported by the CLI's
top-level handler (:mod:`kraft.cli`) as ONE line -- the cause, the file, key
or port concerned, and the fix -- and the process exits with the code of its
class. ``kraft --debug ...`` (or ``--log-level DEBUG``) adds the traceback.

This module imports nothing of ours: the CLI classifies an exception by the
names of its classes (:data:`EXIT_CODE_BY_CLASS`), so ``kraft --help`` stays
light and the lower layers (records, wire) need not know this module.
"""

from __future__ import annotations

import errno

__all__ = [
    "EXIT_REFUSED",
    "EXIT_USAGE",
    "EXIT_CONFIG",
    "EXIT_STORAGE",
    "EXIT_NETWORK",
    "EXIT_DATA",
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "EXIT_TOOL_FIRST",
    "OperatorError",
    "ConfigurationError",
    "StorageError",
    "NetworkError",
    "DataError",
    "describe_failure",
]

#: Refused: by the server (its Kafka error code named: DUPLICATE_VOTER,
#: INVALID_UPDATE_VERSION, ...) or by the tool itself, as Kafka's tools exit 1.
EXIT_REFUSED = 1
#: Bad command line (click's usage errors).
EXIT_USAGE = 2
#: A configuration file or key is missing, unreadable or has a bad value.
EXIT_CONFIG = 3
#: A log directory is unformatted, locked by another process, corrupt, or
#: formatted for another cluster/node; or the disk refused a read or write.
EXIT_STORAGE = 4
#: A port cannot be bound, or no peer/bootstrap server answers (refused,
#: unreachable or silent: the addresses are named).
EXIT_NETWORK = 5
#: The input is not what it claims: a frame, record or file given to a tool
#: that cannot be decoded (the offset and field named).
EXIT_DATA = 6
#: A bug: an exception nobody expected (``--debug`` shows its traceback).
EXIT_INTERNAL = 70
#: Interrupted (Ctrl-C, SIGINT): 128 + 2, as a shell reports it; no traceback.
EXIT_INTERRUPTED = 130
#: A tool's own outcomes start here, clear of the classes above: ``kraft node
#: status`` "answered, not ready", ``kraft doctor`` "warnings only".
EXIT_TOOL_FIRST = 10


class OperatorError(Exception):
    """A failure with a cause and a fix an operator can act on."""

    exit_code = EXIT_REFUSED


class ConfigurationError(OperatorError):
    exit_code = EXIT_CONFIG


class StorageError(OperatorError):
    exit_code = EXIT_STORAGE


class NetworkError(OperatorError):
    exit_code = EXIT_NETWORK


class DataError(OperatorError):
    exit_code = EXIT_DATA


#: Exceptions of the lower layers, by ``module.QualName`` of a class in their
#: MRO (matched without importing them).
EXIT_CODE_BY_CLASS: dict[str, int] = {
    "kraft.records.errors.StateFileError": EXIT_STORAGE,
    "kraft.records.errors.CorruptRecordError": EXIT_STORAGE,
    "kraft.records.errors.RecordsError": EXIT_STORAGE,
    "kraft.records.bootstrap.FormatError": EXIT_REFUSED,
    "kraft.wire.security.SecurityConfigError": EXIT_CONFIG,
    "kraft.wire.network_client.ConnectionFailed": EXIT_NETWORK,
    "kraft.wire.network_client.RequestTimedOut": EXIT_NETWORK,
}

_NETWORK_ERRNOS = {errno.EADDRINUSE, errno.EADDRNOTAVAIL, errno.ECONNREFUSED, errno.ECONNRESET,
                   errno.EHOSTUNREACH, errno.ENETUNREACH, errno.ETIMEDOUT}


def leaf_exceptions(exc: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups, in order; trio's
    nurseries wrap what a task raised in one."""
    if isinstance(exc, BaseExceptionGroup):
        out: list[BaseException] = []
        for inner in exc.exceptions:
            out.extend(leaf_exceptions(inner))
        return out
    return [exc]


def exit_code_of(exc: BaseException) -> int:
    """The exit code of one (leaf) exception."""
    if isinstance(exc, OperatorError):
        return exc.exit_code
    for cls in type(exc).__mro__:
        code = EXIT_CODE_BY_CLASS.get(f"{cls.__module__}.{cls.__qualname__}")
        if code is not None:
            return code
    if isinstance(exc, OSError):
        return EXIT_NETWORK if exc.errno in _NETWORK_ERRNOS else EXIT_STORAGE
    return EXIT_INTERNAL


def primary_failure(exc: BaseException) -> BaseException:
    """The one exception to report out of a (possibly grouped) failure: the
    first one an operator can act on, else the first."""
    leaves = leaf_exceptions(exc)
    for leaf in leaves:
        if exit_code_of(leaf) != EXIT_INTERNAL:
            return leaf
    return leaves[0] if leaves else exc


def describe_failure(exc: BaseException) -> tuple[int, str]:
    """(exit code, the one line to print) for a failure."""
    leaf = primary_failure(exc)
    code = exit_code_of(leaf)
    text = " ".join(str(leaf).split())  # one line, whatever the message held
    if code == EXIT_INTERNAL:
        return code, (f"unexpected {type(leaf).__name__}: {text or '(no message)'} -- this is a bug in kraft; "
                      "rerun with `kraft --debug ...` and report the traceback")
    if isinstance(leaf, OSError) and not isinstance(leaf, OperatorError):
        where = f" {leaf.filename}" if leaf.filename else ""
        fix = ("free the port or change the listener" if code == EXIT_NETWORK
               else "check the path, its permissions and free disk space")
        return code, f"{leaf.strerror or text}:{where} ({fix})" if where else f"{leaf.strerror or text} ({fix})"
    return code, text or type(leaf).__name__
