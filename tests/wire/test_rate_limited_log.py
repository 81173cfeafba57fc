"""The one rate-limiting helper: the first line of a kind at once, its
repeats within the minute counted into the next line after it."""

from __future__ import annotations

import logging

import pytest

from kraft.wire.rate_limited_log import RateLimitedLog


def test_repeats_within_a_minute_are_counted_into_the_next_line(caplog: pytest.LogCaptureFixture) -> None:
    now = [1000.0]
    limited = RateLimitedLog(logging.getLogger("test.limit"), clock=lambda: now[0])
    with caplog.at_level(logging.INFO, logger="test.limit"):
        assert limited.log(logging.INFO, "peer-1", "knock from %s", "a")
        for _ in range(41):
            now[0] += 1
            assert not limited.log(logging.INFO, "peer-1", "knock from %s", "a")
        assert limited.log(logging.INFO, "peer-2", "knock from %s", "b")  # another key: its own window
        now[0] = 1061.0
        assert limited.log(logging.INFO, "peer-1", "knock from %s", "a")
        now[0] = 1200.0
        assert limited.log(logging.INFO, "peer-1", "knock from %s", "a")
    assert [r.getMessage() for r in caplog.records] == [
        "knock from a", "knock from b", "knock from a (41 more like this in the last minute)", "knock from a"]


def test_a_disabled_level_costs_nothing_and_memory_is_bounded() -> None:
    logger = logging.getLogger("test.limit.quiet")
    logger.setLevel(logging.WARNING)
    limited = RateLimitedLog(logger, max_keys=4, clock=lambda: 0.0)
    assert not limited.log(logging.INFO, "k", "x")
    for key in range(10):
        limited.log(logging.WARNING, key, "w")
    assert len(limited._windows) <= 4
