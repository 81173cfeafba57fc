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

import logging
import os
import sys
from typing import NoReturn, Protocol

log = logging.getLogger("kraft.node")

__all__ = ["FatalFaultError", "FaultHandler", "ProcessTerminatingFaultHandler", "RaisingFaultHandler"]

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
