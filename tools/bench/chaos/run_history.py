"""The run's history as JSON lines: client operations (each record
acknowledged as committed, with the time the tool saw it), faults (start
and end, kind, target nodes, detail), role changes and process exits. One
object per line, ``t`` in seconds since the nodes started (the
``faults`` event marks when the faults began)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import IO, Any

__all__ = ["History", "read_history"]


class History:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.started = time.monotonic()
        self._file: IO[str] = open(path, "a", buffering=1)
        self.events: list[dict[str, Any]] = []

    def now(self) -> float:
        return round(time.monotonic() - self.started, 3)

    def add(self, event_type: str, **fields: Any) -> dict[str, Any]:
        event = {"t": self.now(), "type": event_type, **fields}
        if not self._file.closed:
            self._file.write(json.dumps(event) + "\n")
        if event_type != "ack":  # acks are counted, not kept: a long run has many
            self.events.append(event)
        return event

    def close(self) -> None:
        self._file.close()


def read_history(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
