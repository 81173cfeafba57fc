"""Repeated log lines, once a minute: the first line of a kind is logged at
once; its repeats within the next minute are only counted, and the first
one after that minute is logged with ``(N more like this in the last
minute)``. What an operator reads stays about state changes, not about a
client reconnecting in a loop or a peer of another cluster knocking.

    limited = RateLimitedLog(log)
    limited.log(logging.INFO, ("rejected", host), "Rejected connection from %s, %s.", host, reason)
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Hashable

__all__ = ["RateLimitedLog"]


class RateLimitedLog:
    """A logger wrapper that lets one line per key through per window."""

    def __init__(self, logger: logging.Logger, window_s: float = 60.0,
                 clock: Callable[[], float] = time.monotonic, max_keys: int = 10_000) -> None:
        self.logger = logger
        self.window_s = window_s
        self._clock = clock
        self._max_keys = max_keys
        #: key -> (start of its window, repeats suppressed in it)
        self._windows: dict[Hashable, tuple[float, int]] = {}

    def log(self, level: int, key: Hashable, msg: str, *args: object) -> bool:
        """Log ``msg % args`` unless a line of ``key`` was logged within the
        window; True when it was logged."""
        if not self.logger.isEnabledFor(level):
            return False
        now = self._clock()
        window = self._windows.get(key)
        if window is not None and now - window[0] < self.window_s:
            self._windows[key] = (window[0], window[1] + 1)
            return False
        suppressed = window[1] if window is not None else 0
        if window is None and len(self._windows) >= self._max_keys:
            self._forget_expired(now)
        self._windows[key] = (now, 0)
        if suppressed:
            self.logger.log(level, msg + " (%d more like this in the last minute)", *args, suppressed)
        else:
            self.logger.log(level, msg, *args)
        return True

    def _forget_expired(self, now: float) -> None:
        """Bound the memory: drop keys whose window has passed (their
        pending counts are lost), else the oldest half."""
        expired = [k for k, (start, _) in self._windows.items() if now - start >= self.window_s]
        for k in expired or list(self._windows)[: len(self._windows) // 2]:
            del self._windows[k]
