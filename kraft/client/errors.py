"""The admin client's one error type, apart so that a command can catch it
without importing the client (and trio) before it runs."""

from __future__ import annotations

__all__ = ["AdminError"]


class AdminError(Exception):
    """A failure the tools report as one message on stderr, exit status 1:
    said as Kafka's tools say it, no traceback."""
