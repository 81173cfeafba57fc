"""Which records of real Kafka 4.0.0's tool outputs each test replays.

``../shared/fixtures/real-tool-outputs/kafka-4.0.0-*.jsonl`` hold what Kafka's
own tools printed. A test that replays some of them selects its records with a
predicate registered here (:func:`replays`), and iterates over exactly the
records that predicate selects; tests/tools/test_golden_coverage.py then checks
that every record is selected by some replaying test or listed, with the
reason, in its one exclusion table.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from tests.conftest import SHARED

Record = dict[str, Any]
Selector = Callable[[Record], bool]

#: short name -> file under ../shared/fixtures/real-tool-outputs
GOLDEN_FILES = {
    "cli": "kafka-4.0.0-cli.jsonl",
    "dump-log": "kafka-4.0.0-dump-log.jsonl",
    "metadata-shell": "kafka-4.0.0-metadata-shell.jsonl",
}


@dataclass(frozen=True)
class Replayer:
    golden: str
    test: str
    selects: Selector


REPLAYERS: list[Replayer] = []


def replays(golden: str, test: str) -> Callable[[Selector], Selector]:
    """Register ``selects`` as the records of ``golden`` that ``test`` replays."""
    if golden not in GOLDEN_FILES:
        raise ValueError(f"unknown golden file {golden!r}; one of {sorted(GOLDEN_FILES)}")

    def register(selects: Selector) -> Selector:
        REPLAYERS.append(Replayer(golden, test, selects))
        return selects

    return register


@lru_cache(maxsize=None)
def _load(golden: str) -> tuple[Record, ...]:
    path = SHARED / "fixtures" / "real-tool-outputs" / GOLDEN_FILES[golden]
    if not path.exists():
        return ()
    return tuple(json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip())


def records(golden: str) -> list[Record]:
    """Every record of ``golden`` in file order (empty when ../shared is absent)."""
    return list(_load(golden))


def selected(golden: str, selects: Selector) -> list[Record]:
    return [r for r in _load(golden) if selects(r)]
