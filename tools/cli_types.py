"""Click parameter types the commands share."""

from __future__ import annotations

import math
from typing import Any

import click

__all__ = ["MAX_TIMEOUT_S", "TIMEOUT_S"]

#: Kafka's timeouts are int milliseconds (Integer.MAX_VALUE ms is 24.8 days):
#: a --timeout beyond that is a mistake, and far larger ones overflow the
#: clocks they are added to ("timestamp out of range for platform time_t").
MAX_TIMEOUT_S = (2**31 - 1) / 1000


class _Timeout(click.FloatRange):
    """Seconds, from 0 to :data:`MAX_TIMEOUT_S`; nan refused (it passes any range check)."""

    name = "seconds"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        seconds = super().convert(value, param, ctx)
        if not math.isfinite(seconds):
            self.fail(f"{value!r} is not a number of seconds.", param, ctx)
        return seconds


TIMEOUT_S = _Timeout(min=0, max=MAX_TIMEOUT_S)
