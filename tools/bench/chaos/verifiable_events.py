"""Kafka's system-test clients' JSON event lines, as the chaos checker reads them.

``org.apache.kafka.tools.VerifiableProducer`` prints one JSON object a line
on its stdout: ``producer_send_success`` (``value``, ``partition``,
``offset``) from each send's callback with no exception,
``producer_send_error`` (``value``, ``exception``, ``message``) from one with
an exception, and at its shutdown hook (SIGTERM) ``shutdown_complete`` and
``tool_data`` (``sent``: how many ``send`` calls it made). Its values are the
integers 0, 1, 2... in the order it sends them (``getValue`` with no
``--value-prefix``). ``VerifiableConsumer --verbose`` prints a
``record_data`` event (``partition``, ``offset``, ``value``) per record it
consumed.

:func:`write_send_history` turns the producer's events into the history of
:mod:`.operations` (``f`` ``send``): an ``invoke`` for every value sent,
``ok`` with the partition and offset of each success. A send's error never
says the record is in no log (an expired batch may have been appended by a
broker whose answer was lost; ``Sender`` fails it all the same), so each is
``info``, as is a send with no callback at all (the producer was killed).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

__all__ = ["OPERATION", "Consumed", "consumed_records", "count_events", "read_events", "write_send_history"]

OPERATION = "send"
#: (partition, offset, value) of one record a consumer read.
Consumed = tuple[int, int, str]


def read_events(path: Path, name: str | None = None) -> Iterator[dict[str, Any]]:
    """The JSON events in a client's output (only those called ``name``, if given).
    A line the JVM is still writing, or a log line, is no event."""
    if not path.exists():
        return
    for line in path.read_text(errors="replace").splitlines():
        if not line.startswith("{"):
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and (name is None or event.get("name") == name):
            yield event


def count_events(data: bytes, name: str) -> int:
    """How many complete lines of ``data`` are ``name`` events (a cheap scan while the run goes on)."""
    needle = f'"name":"{name}"'.encode()
    return sum(1 for line in data.splitlines() if needle in line.replace(b" ", b""))


def _sent(events: list[dict[str, Any]]) -> int:
    """How many values were sent: ``tool_data``'s count, or one past the highest value a callback named."""
    told = [int(e["sent"]) for e in events if e.get("name") == "tool_data" and isinstance(e.get("sent"), int)]
    seen = [int(str(e["value"])) + 1 for e in events if str(e.get("value", "")).isdigit()]
    return max([*told, *seen], default=0)


def write_send_history(producer_out: Path, history: Path) -> None:
    """The producer's events as :mod:`.operations`' JSON lines, in ``history``."""
    events = list(read_events(producer_out))
    lines: list[dict[str, Any]] = [{"type": "invoke", "f": OPERATION, "value": str(v)} for v in range(_sent(events))]
    for event in events:
        if event.get("name") == "producer_send_success":
            lines.append({"type": "ok", "f": OPERATION, "value": str(event["value"]),
                          "partition": event.get("partition"), "offset": event.get("offset")})
        elif event.get("name") == "producer_send_error":
            lines.append({"type": "info", "f": OPERATION, "value": str(event.get("value")),
                          "error": f"{event.get('exception')}: {event.get('message')}"})
    with history.open("w") as f:
        f.writelines(json.dumps(line) + "\n" for line in lines)


def consumed_records(events: Iterable[dict[str, Any]]) -> list[Consumed]:
    """(partition, offset, value) of every ``record_data`` event, in the order read."""
    return [(int(e["partition"]), int(e["offset"]), str(e["value"])) for e in events
            if e.get("name") == "record_data" and isinstance(e.get("partition"), int)
            and isinstance(e.get("offset"), int)]
