"""Conformance: codecs generated from our own definitions (messages/specs)
encode exactly like codecs generated from Apache Kafka's specs, for every
message and version both define. Field pairing is by wire position, so a
field Kafka renamed in a later release still has to match in type, order,
tag, nullability and default."""

from __future__ import annotations

import random

import pytest

from kraft.messages import generated
from kraft.messages.registry import message_class
from tests.conftest import fixture_path
from tests.messages import kafka_codecs
from tests.messages.randgen import random_instance

SEEDS = 12


@pytest.fixture(scope="session")
def kafka_package(tmp_path_factory: pytest.TempPathFactory):
    spec_dir = fixture_path("kafka-spec")
    return kafka_codecs.build(spec_dir, tmp_path_factory.mktemp("kafka-codecs"))


def _shared_names() -> list[str]:
    return sorted(generated.MODULES)


def test_the_snapshot_holds_most_of_our_messages(kafka_package) -> None:
    ours = set(generated.MODULES)
    theirs = set(kafka_package.MODULES)
    # Everything we define but what Kafka added after the 4.0 snapshot:
    # UnregisterController (KIP-1312) came with 4.4. A new message of ours
    # needs its spec in fixtures/kafka-spec, or a place on this list.
    assert ours - theirs == {"UnregisterControllerRecord", "UnregisterControllerRequest",
                             "UnregisterControllerResponse"}


@pytest.mark.parametrize("name", _shared_names())
def test_same_bytes_as_kafka_specs(kafka_package, name: str) -> None:
    ours = message_class(name)
    theirs = kafka_codecs.message_class(kafka_package, name)
    if theirs is None:
        pytest.skip(f"{name} is newer than the Kafka 4.0 spec snapshot in fixtures/kafka-spec: no reference spec to compare with")
    assert ours.API_KEY == theirs.API_KEY
    assert ours.MESSAGE_TYPE == theirs.MESSAGE_TYPE
    lo = max(ours.LOWEST_VERSION, theirs.LOWEST_VERSION)
    hi = min(ours.HIGHEST_VERSION, theirs.HIGHEST_VERSION)
    assert lo <= hi, f"{name}: no common version"
    # We define at least the snapshot's newest version (the oldest ones may
    # be gone: Kafka 4.x removed Fetch v0-3 and RequestHeader v0).
    assert ours.HIGHEST_VERSION >= theirs.HIGHEST_VERSION
    assert ours.LOWEST_VERSION <= max(theirs.LOWEST_VERSION, 4)
    if theirs.FLEXIBLE_FROM is None:
        assert ours.FLEXIBLE_FROM is None
    else:
        assert ours.FLEXIBLE_FROM == theirs.FLEXIBLE_FROM
    for version in range(lo, hi + 1):
        for seed in range(SEEDS):
            rng = random.Random(f"{name}/{version}/{seed}")
            obj = random_instance(ours, version, rng)
            mine = obj.encode(version)
            kafka_obj = kafka_codecs.convert(obj, ours.SCHEMA, theirs.SCHEMA, version)
            assert kafka_obj.encode(version) == mine, f"{name} v{version} seed {seed}"
            # And each side decodes the other's bytes to the same message.
            back = theirs.decode(mine, version)
            assert kafka_codecs.convert(back, theirs.SCHEMA, ours.SCHEMA, version) == ours.decode(mine, version)
