"""The Kafka-played node's table (tests/node/kafka_played.py) is what a
real Apache Kafka 4.0.0 controller answers in ApiVersions."""

from __future__ import annotations

import json
from pathlib import Path

from kraft.node.controller_apis import replayed_api_versions
from tests.conftest import FIXTURES
from tests.node.kafka_played import KAFKA_4_0_CONTROLLER_APIS

FRAMES = FIXTURES / "wire" / \
    "kafka-4.0-controller-frames.jsonl"


def test_the_table_is_a_real_kafka_4_0_controllers_api_versions_answer() -> None:
    answers = [json.loads(line) for line in FRAMES.read_text().splitlines()]
    frame = next(f for f in answers if f["api"] == "ApiVersions" and f["direction"] == "response")
    assert KAFKA_4_0_CONTROLLER_APIS == replayed_api_versions(frame["frameHex"])
