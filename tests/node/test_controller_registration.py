"""What a witness registers with Kafka's active controller
(kraft/node/controller_registration.py; on real Kafka:
tests/kafka/test_witness.py::test_the_witness_registers_so_that_kafka_upgrades_features)."""

from __future__ import annotations

import uuid
from pathlib import Path

import trio

from kraft.node.controller_registration import SECURITY_PROTOCOL_IDS, own_features, registration_features
from kraft.node.fault import RaisingFaultHandler
from kraft.node.node import KraftNode
from kraft.wire.security import SecurityProtocol
from tests.harness.configs import load, make_configs
from tests.harness.poll import until_async


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


async def test_every_kraft_controller_registers_the_standbys_with_the_active_one(tmp_path: Path) -> None:
    """Every Kafka controller registers (``ControllerRegistrationManager``):
    the active one writes its own record, each standby sends its
    registration -- its own incarnation and features -- to the active
    controller until its image holds it. Without the standbys' requests only
    the leader's registration is committed, and ``kafka-cluster
    list-endpoints --bootstrap-controller`` and Kafka's feature upgrades
    (``FeatureControlManager.reasonNotSupported``) would miss two voters."""
    paths = make_configs(tmp_path, [1, 2, 3])
    nodes = [KraftNode(load(paths[i]), fault_handler=RaisingFaultHandler(), controller=True) for i in (1, 2, 3)]
    with trio.fail_after(90):
        async with trio.open_nursery() as nursery:
            for node in nodes:
                await nursery.start(node.run)

            def registrations() -> dict[int, uuid.UUID] | None:
                for node in nodes:
                    server = node.controller
                    if server is None or server.is_stopped:
                        return None
                    got = {i: r.incarnation_id for i, r in server.controller.image.controllers.items()}
                    if len(got) < 3:
                        return None
                return got

            got = await until_async("every controller's image to hold all three registrations", registrations,
                                    interval_s=0.05)
            # Each one is the registering process's own incarnation, and every
            # controller's image (the leader's and the standbys') holds all three.
            assert got == {i: nodes[i - 1]._parts.incarnation_id for i in (1, 2, 3)}
            registered = nodes[0].controller.controller.image.controllers  # type: ignore[union-attr]
            assert {i: sorted(f.name for f in r.supported_features) for i, r in registered.items()} == {
                i: sorted(own_features()) for i in (1, 2, 3)}
            for node in nodes:
                await node.shutdown()
