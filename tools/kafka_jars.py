"""Where Kafka's released jars are on this machine, for the tools that run
real Kafka beside kraft (the quickstart's brokers, the chaos bench's
DumpLogSegments cross-check).

:data:`LOCATORS` are asked in turn for a directory of Kafka's jars
(``libs/``); the first answer wins. By default the environment variable
``KRAFT_KAFKA_LIBS`` names one, else the newest complete download under
``~/.cache/kraft/kafka/VERSION/lib`` (what ``bash .ci/deps`` fetches from
Maven Central). A harness that finds Kafka otherwise puts its own locator
first.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

__all__ = ["ENV_VAR", "LOCATORS", "locate_kafka_libs"]

ENV_VAR = "KRAFT_KAFKA_LIBS"


def _from_env() -> Path | None:
    value = os.environ.get(ENV_VAR)
    return Path(value) if value else None


def _from_cache() -> Path | None:
    root = Path.home() / ".cache" / "kraft" / "kafka"
    found = [d / "lib" for d in root.glob("*") if (d / "complete").exists() and (d / "lib").is_dir()]
    return max(found, key=lambda p: [int(x) if x.isdigit() else 0 for x in p.parent.name.split(".")], default=None)


#: Asked in order for Kafka's jar directory.
LOCATORS: list[Callable[[], Path | None]] = [_from_env, _from_cache]


def locate_kafka_libs() -> Path | None:
    """The first locator's directory that holds Kafka's jars; None: none does."""
    for locate in LOCATORS:
        found = locate()
        if found is not None and any(found.glob("kafka_*.jar")):
            return found
    return None
