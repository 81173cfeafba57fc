"""The load's complete history, as Jepsen keeps one: every append's
invocation, written before the append is sent, and its completion after.

Each voter's demo load (``kraft node start --demo-history PATH``) writes one
JSON object a line, line-buffered (in the kernel before the next step, so
a kill -9 of the node loses none)::

    {"type": "invoke", "f": "append", "value": "quickstart node=1 epoch=3 seq=7"}
    {"type": "ok", "f": "append", "value": "...", "offset": 41}
    {"type": "fail", "f": "append", "value": "...", "error": "..."}
    {"type": "info", "f": "append", "value": "...", "error": "..."}

``ok``: acknowledged as committed at ``offset``. ``fail``: refused before
it was appended (not the leader), so it is in no log. ``info``: the outcome
is unknown (the leader's epoch ended, the wait timed out): the record may
be committed or not. An invocation with no completion (the process died
in between) is ``info`` too.

The independent chaos client (:mod:`kraft.tools.bench.chaos_client`) writes the same lines,
``f`` ``alter-client-quotas`` and ``value`` the client id it sets, with no
offset (the controller's answer names none): :func:`read_named_operations`.

``--load kafka`` (:mod:`.kafka_load`) turns Kafka's VerifiableProducer's
events into the same lines, ``f`` ``send`` and ``value`` the integer it
sent, an ``ok`` naming the partition and offset the broker acknowledged
at: :func:`read_sent_operations`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["appended_lines", "NamedOperations", "Operations", "SentOperations", "read_named_operations", "read_operations",
           "read_sent_operations"]


def appended_lines(path: Path, offset: int) -> tuple[bytes, int]:
    """The whole lines a running process appended to ``path`` since
    ``offset``, and the offset after them: a line still being written waits
    for the next call. Nothing while the file does not exist yet."""
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read()
    except FileNotFoundError:
        return b"", offset
    cut = data.rfind(b"\n") + 1
    return data[:cut], offset + cut


@dataclass
class Operations:
    """Every append of a run by outcome: ``ok`` as (offset, value), the others as values."""

    ok: list[tuple[int, bytes]] = field(default_factory=list)
    fail: list[bytes] = field(default_factory=list)
    info: list[bytes] = field(default_factory=list)
    invoked: int = 0

    @classmethod
    def acknowledged(cls, acks: Iterable[tuple[int, bytes]]) -> Operations:
        """A history of acknowledgements alone (each one invoked and ok)."""
        ok = list(acks)
        return cls(ok=ok, invoked=len(ok))

    def counts(self) -> dict[str, int]:
        return {"invoked": self.invoked, "ok": len(self.ok), "fail": len(self.fail), "info": len(self.info)}


def _outcomes(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """("invoke", event) of each invocation and (type, event) of each
    operation's completion; one left pending at the end is ``info``."""
    pending: dict[str, int] = {}
    for line in path.read_text(errors="replace").splitlines():
        try:
            event = json.loads(line)
            kind, value = event["type"], str(event["value"])
        except (ValueError, KeyError, TypeError):
            continue  # a line cut by a kill: its operation stays pending
        if kind == "invoke":
            pending[value] = pending.get(value, 0) + 1
            yield kind, event
            continue
        if pending.get(value, 0) <= 0:
            continue  # a completion without its invocation is no operation of this history
        pending[value] -= 1
        yield kind, event
    for value, n in pending.items():
        for _ in range(n):
            yield "info", {"type": "info", "value": value}


def _add_file(ops: Operations, path: Path) -> None:
    for kind, event in _outcomes(path):
        value = str(event["value"])
        if kind == "invoke":
            ops.invoked += 1
        elif kind == "ok" and isinstance(event.get("offset"), int):
            ops.ok.append((event["offset"], value.encode()))
        elif kind == "fail":
            ops.fail.append(value.encode())
        else:
            ops.info.append(value.encode())


@dataclass
class NamedOperations:
    """The chaos client's operations by outcome, each named by its value (the client id it sets)."""

    ok: list[str] = field(default_factory=list)
    fail: list[str] = field(default_factory=list)
    info: list[str] = field(default_factory=list)
    invoked: int = 0

    def counts(self) -> dict[str, int]:
        return {"invoked": self.invoked, "ok": len(self.ok), "fail": len(self.fail), "info": len(self.info)}


def read_named_operations(path: Path) -> NamedOperations:
    """The operations of the chaos client's history (:mod:`kraft.tools.bench.chaos_client`); a missing file holds none."""
    ops = NamedOperations()
    if not path.exists():
        return ops
    for kind, event in _outcomes(path):
        if kind == "invoke":
            ops.invoked += 1
        else:
            {"ok": ops.ok, "fail": ops.fail}.get(kind, ops.info).append(str(event["value"]))
    return ops


def read_operations(paths: Iterable[Path]) -> Operations:
    """The operations of every history file (a missing one holds none)."""
    ops = Operations()
    for path in paths:
        if path.exists():
            _add_file(ops, path)
    return ops


@dataclass
class SentOperations:
    """A producer's sends by outcome: ``ok`` value -> (partition, offset) the broker acknowledged at."""

    ok: dict[str, tuple[int, int]] = field(default_factory=dict)
    fail: list[str] = field(default_factory=list)
    info: list[str] = field(default_factory=list)
    invoked: int = 0
    values: set[str] = field(default_factory=set)

    def counts(self) -> dict[str, int]:
        return {"invoked": self.invoked, "ok": len(self.ok), "fail": len(self.fail), "info": len(self.info)}


def read_sent_operations(path: Path) -> SentOperations:
    """The sends of a ``--load kafka`` history; a missing file holds none."""
    ops = SentOperations()
    if not path.exists():
        return ops
    for kind, event in _outcomes(path):
        value = str(event["value"])
        if kind == "invoke":
            ops.invoked += 1
            ops.values.add(value)
        elif kind == "ok" and isinstance(event.get("partition"), int) and isinstance(event.get("offset"), int):
            ops.ok[value] = (event["partition"], event["offset"])
        elif kind == "fail":
            ops.fail.append(value)
        else:
            ops.info.append(value)
    return ops
