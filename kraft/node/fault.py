"""What the node does with a fault it must not survive (Kafka's ``FaultHandler``).

A log write, fsync, truncate or rename whose outcome is unknown leaves the
node unable to say what is on its disk: after a failed fsync Linux may have
dropped the dirty pages already, so retrying can report success for data
that is gone. Kafka stops the process (``ProcessTerminatingFaultHandler``,
``Exit.halt(1)``); so does :class:`ProcessTerminatingFaultHandler` here, after
ONE log line naming the file, the operation and the errno. Tests that run a
node inside the test process pass :class:`RaisingFaultHandler` instead
(Kafka's ``MockFaultHandler``): the node's task ends with
:class:`FatalFaultError`, nothing else of the process stops.
"""

from __future__ import annotations

import errno
import logging
import os
import sys
from pathlib import Path
from typing import NoReturn, Protocol

from kraft.errors import leaf_exceptions

log = logging.getLogger("kraft.node")

__all__ = ["FatalFaultError", "FaultHandler", "ProcessTerminatingFaultHandler", "RaisingFaultHandler",
           "disk_failure", "fail_stop_on_disk_failure"]

#: Kafka's status code for a fatal fault (``ProcessTerminatingFaultHandler``).
FATAL_EXIT_CODE = 1


class FatalFaultError(Exception):
    """Raised by :class:`RaisingFaultHandler`: the node stopped on a fatal fault."""


class FaultHandler(Protocol):
    def handle_fault(self, message: str, cause: BaseException | None = None) -> NoReturn:
        """Report the fault and never return."""
        ...


class ProcessTerminatingFaultHandler:
    """Log ``Encountered fatal fault: <message>`` and halt the process with
    status 1 at once: no shutdown, no cleanup that could write more."""

    def handle_fault(self, message: str, cause: BaseException | None = None) -> NoReturn:
        # One line, no traceback: the message names the file, the operation
        # and the errno, which is all an operator can act on.
        log.error("Encountered fatal fault: %s", message)
        for handler in logging.getLogger().handlers + log.handlers:
            try:
                handler.flush()
            except Exception:  # noqa: BLE001 -- halting regardless
                pass
        try:
            sys.stderr.flush()
        finally:
            os._exit(FATAL_EXIT_CODE)


class RaisingFaultHandler:
    """For a node run inside a test process: log as the terminating handler
    does, remember the fault, raise :class:`FatalFaultError`."""

    def __init__(self) -> None:
        self.faults: list[str] = []

    def handle_fault(self, message: str, cause: BaseException | None = None) -> NoReturn:
        log.error("Encountered fatal fault: %s", message)
        self.faults.append(message)
        raise FatalFaultError(message) from cause


#: A full disk: the one write failure a node survives (the write is undone).
_SURVIVED = (errno.ENOSPC, errno.EDQUOT)


def disk_failure(exc: BaseException, log_dir: Path, eio_only: bool = False) -> OSError | None:
    """The first disk error in ``exc`` (a leaf OSError naming a file under
    ``log_dir``, or EIO) whose outcome is unknown -- not a full disk; None
    when there is none."""
    for leaf in leaf_exceptions(exc):
        if not isinstance(leaf, OSError) or leaf.errno in _SURVIVED:
            continue
        name = str(leaf.filename or "")
        if leaf.errno == errno.EIO or (not eio_only and name and Path(name).resolve().is_relative_to(log_dir.resolve())):
            return leaf
    return None


def fail_stop_on_disk_failure(exc: BaseException, log_dir: Path, handler: FaultHandler | None,
                              eio_only: bool = False) -> None:
    """Kafka's fatal fault (exit 1) for a disk error that escaped a running
    node's task (retention, a snapshot, a listener reading the log): its
    outcome is unknown as much as one in the raft driver's own writes, and
    it is never a storage error's exit 4. Returns when ``exc`` holds none."""
    failure = disk_failure(exc, log_dir, eio_only)
    if failure is not None:
        (handler or ProcessTerminatingFaultHandler()).handle_fault(
            f"metadata log I/O error, outcome unknown: {failure}; stopping so that nothing written after the "
            "last successful flush counts (restart once the disk is healthy)", failure)
