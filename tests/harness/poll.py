"""The tests' one poller: ask ``check`` until it answers, bounded.

The bound ends a hung test; it is not a speed requirement (no timing
assertions in tests). ``until`` sleeps the thread between answers
(``settle`` too, handing back the last answer at the bound instead of failing);
``until_async`` sleeps the trio task (and, under an autojump clock, lets
virtual time run on).
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import trio

T = TypeVar("T")

__all__ = ["settle", "until", "until_async"]


def until(what: str, check: Callable[[], T], timeout_s: float = 120.0, *, interval_s: float = 0.2,
          retry: tuple[type[BaseException], ...] = (), detail: Callable[[], str] | None = None) -> T:
    """``check()``'s first truthy answer, asked every ``interval_s``.

    An exception of a type in ``retry`` counts as a no (a tool failing
    while the cluster settles); any other ends the wait (a process that
    died). After ``timeout_s`` an AssertionError names ``what``, the last
    answer and ``detail()`` (the logs that say why)."""
    deadline = time.monotonic() + timeout_s
    last: object = None
    while True:
        try:
            answer = check()
        except retry as e:
            last = e
        else:
            if answer:
                return answer
            last = answer
        if time.monotonic() >= deadline:
            raise AssertionError(_failure(what, timeout_s, last, detail))
        time.sleep(interval_s)


def settle(sample: Callable[[], T], done: Callable[[T], bool], timeout_s: float, *, interval_s: float = 0.2) -> T:
    """``sample()`` until ``done`` holds for it, else the last sample once
    ``timeout_s`` passed: a wait whose caller judges the outcome (and
    names it in its own assertion), where :func:`until` would fail."""
    deadline = time.monotonic() + timeout_s
    while True:
        answer = sample()
        if done(answer) or time.monotonic() > deadline:
            return answer
        time.sleep(interval_s)


async def until_async(what: str, check: Callable[[], T | Awaitable[T]], *, timeout_s: float | None = None,
                      interval_s: float = 0.05, detail: Callable[[], str] | None = None) -> T:
    """The trio form of :func:`until`; ``check`` may be a coroutine
    function. With no ``timeout_s`` the caller's ``trio.fail_after`` bounds it."""
    last: object = None
    with trio.move_on_after(float("inf") if timeout_s is None else timeout_s):
        while True:
            answer = check()
            if inspect.isawaitable(answer):
                answer = await answer
            if answer:
                return answer  # type: ignore[return-value]  # awaited above
            last = answer
            await trio.sleep(interval_s)
    raise AssertionError(_failure(what, timeout_s or 0.0, last, detail))


def _failure(what: str, timeout_s: float, last: object, detail: Callable[[], str] | None) -> str:
    text = f"{what}: not within {timeout_s:.0f} s (last answer: {last!r})"
    return f"{text}\n{detail()}" if detail is not None else text
