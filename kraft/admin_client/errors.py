"""The admin client's error types, apart so that a command can catch them
without importing the client (and trio) before it runs."""

from __future__ import annotations

from kraft.errors import EXIT_NETWORK, EXIT_REFUSED, OperatorError

__all__ = ["AdminError", "UnreachableError", "RefusedError"]


class AdminError(OperatorError):
    """A failure the tools report as one message on stderr, said as Kafka's
    tools say it, no traceback: refused by the server (its Kafka error
    named) or by the tool, exit status 1 as Kafka's tools."""

    exit_code = EXIT_REFUSED


class UnreachableError(AdminError):
    """No bootstrap server answered (connection refused, unreachable, timed
    out): exit status 5, so a script can tell "down" from "said no"."""

    exit_code = EXIT_NETWORK


class RefusedError(AdminError):
    """The server answered with an error: its code and its message (Kafka's
    exception message, which a tool quotes). ``str()`` names the error as
    kraft's tools print it: ``NAME: message``."""

    def __init__(self, text: str, code: int, message: str) -> None:
        super().__init__(text)
        self.code = code
        self.message = message
