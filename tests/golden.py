"""Which records of real Kafka's tool outputs each test replays.

``fixtures/real-tool-outputs/kafka-<version>-<kind>.jsonl.gz`` hold
what Kafka's own tools printed: Kafka 4.0.0 and 4.1.0, each ``cli``,
``dump-log`` and ``metadata-shell``. A golden set is named ``<kind>@<version>``
(``dump-log@4.1.0``). A test that replays some records selects them with a
predicate registered here (:func:`replays`) for one set, or for a kind (all
its versions), and iterates over exactly the records it selects;
tests/tools/test_golden_coverage.py then checks that every record of every
set is selected by some replaying test or listed, with the reason, in its
one exclusion table.

Kafka 4.1.0's records are replayed with ``--kafka-version 4.1``, 4.0.0's
with ``--kafka-version 4.0`` (:data:`KAFKA_VERSION`); kraft's default is the
newest release, 4.4, checked live (tests/kafka/test_tools_live.py).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from tests.conftest import FIXTURES

#: Where the recordings are: fixtures/README.md says how they were made.
RECORDED = FIXTURES / "real-tool-outputs"

Record = dict[str, Any]
Selector = Callable[[Record], bool]

KINDS = ("cli", "dump-log", "metadata-shell")
#: recorded Kafka release -> the ``--kafka-version`` that reproduces it (None: kraft's default)
KAFKA_VERSION: dict[str, str | None] = {"4.0.0": "4.0", "4.1.0": "4.1"}
VERSIONS = tuple(KAFKA_VERSION)

#: ``<kind>@<version>`` -> the recording's name (stored gzipped: :func:`recorded_path`)
GOLDEN_FILES = {f"{kind}@{version}": f"kafka-{version}-{kind}.jsonl" for version in VERSIONS for kind in KINDS}


def name(kind: str, version: str) -> str:
    return f"{kind}@{version}"


def kind_of(golden: str) -> str:
    return golden.partition("@")[0]


def version_of(golden: str) -> str:
    return golden.partition("@")[2]


def release_args(version: str) -> list[str]:
    """The command-line options that make kraft print as Kafka ``version``."""
    wanted = KAFKA_VERSION[version]
    return [] if wanted is None else ["--kafka-version", wanted]


def release(version: str) -> Any:
    """The :class:`kraft.kafka_release.KafkaRelease` reproducing Kafka ``version``."""
    from kraft.kafka_release import LATEST, kafka_release

    wanted = KAFKA_VERSION[version]
    return LATEST if wanted is None else kafka_release(wanted)


def applies(registered: str, golden: str) -> bool:
    """A registration for ``cli`` applies to every version's cli set; one for
    ``cli@4.0.0`` to that set only."""
    return registered == golden or registered == kind_of(golden)


@dataclass(frozen=True)
class Replayer:
    golden: str
    test: str
    selects: Selector


REPLAYERS: list[Replayer] = []


def replays(golden: str, test: str) -> Callable[[Selector], Selector]:
    """Register ``selects`` as the records of ``golden`` (a set, or a kind:
    every version's set) that ``test`` replays."""
    if golden not in GOLDEN_FILES and golden not in KINDS:
        raise ValueError(f"unknown golden set {golden!r}; one of {sorted(GOLDEN_FILES)} or {KINDS}")

    def register(selects: Selector) -> Selector:
        REPLAYERS.append(Replayer(golden, test, selects))
        return selects

    return register


def recorded_path(filename: str) -> Path:
    """The stored (gzipped) file of the recording ``kafka-<version>-<kind>.jsonl``."""
    return RECORDED / f"{filename}.gz"


def read_recorded(filename: str) -> list[Record]:
    """Every record of the recording ``kafka-<version>-<kind>.jsonl``, in file order."""
    with gzip.open(recorded_path(filename), "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


@lru_cache(maxsize=None)
def _load(golden: str) -> tuple[Record, ...]:
    return tuple(read_recorded(GOLDEN_FILES[golden]))


def records(golden: str) -> list[Record]:
    """Every record of ``golden`` in file order."""
    return list(_load(golden))


def selected(golden: str, selects: Selector) -> list[Record]:
    return [r for r in _load(golden) if selects(r)]
