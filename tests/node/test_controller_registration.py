"""What a witness registers with Kafka's active controller
(kraft/node/controller_registration.py; on real Kafka:
tests/kafka/test_witness.py::test_the_witness_registers_so_that_kafka_upgrades_features)."""

from __future__ import annotations

from kraft.node.controller_registration import SECURITY_PROTOCOL_IDS, registration_features
from kraft.wire.security import SecurityProtocol


def test_the_witness_supports_what_the_kafka_controller_does_but_kraft_version_only_as_far_as_kraft_runs_it() -> None:
    kafka_44 = {"metadata.version": (7, 33), "kraft.version": (0, 1), "group.version": (0, 1)}
    assert registration_features(kafka_44, (0, 1)) == kafka_44
    # A Kafka controller that knew a kraft.version 2 would not make the witness claim it.
    assert registration_features({**kafka_44, "kraft.version": (0, 2)}, (0, 1))["kraft.version"] == (0, 1)
    # A controller that names no kraft.version: kraft's own range.
    assert registration_features({"metadata.version": (7, 27)}, (0, 1)) == {
        "kraft.version": (0, 1), "metadata.version": (7, 27)}


def test_security_protocol_ids_are_kafkas() -> None:
    """Kafka's ``SecurityProtocol``: PLAINTEXT(0), SSL(1), SASL_PLAINTEXT(2), SASL_SSL(3)."""
    assert SECURITY_PROTOCOL_IDS == {SecurityProtocol.PLAINTEXT: 0, SecurityProtocol.SSL: 1,
                                     SecurityProtocol.SASL_PLAINTEXT: 2, SecurityProtocol.SASL_SSL: 3}
