"""Log formats for long-running commands (``kraft node start --log-format``):
``text`` for people, ``json`` (one object per line) for log pipelines."""

from __future__ import annotations

import json
import logging
import sys
from datetime import datetime, timezone

__all__ = ["LOG_FORMATS", "JsonFormatter", "setup_logging"]

LOG_FORMATS = ("text", "json")
TEXT_FORMAT = "[%(asctime)s] %(levelname)s %(message)s (%(name)s)"


class JsonFormatter(logging.Formatter):
    """One JSON object per record: ``time`` (UTC, ISO 8601 with ms),
    ``level``, ``logger``, ``message``, and ``exception`` with the traceback
    when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        out = {
            "time": datetime.fromtimestamp(record.created, timezone.utc).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False)


def setup_logging(level: str, fmt: str = "text") -> None:
    """Log to stderr at ``level`` (DEBUG, INFO, WARNING, ERROR) in ``fmt``."""
    if fmt not in LOG_FORMATS:
        raise ValueError(f"unknown log format {fmt!r}: expected one of {', '.join(LOG_FORMATS)}")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(getattr(logging, level.upper(), logging.INFO))
