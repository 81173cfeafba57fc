"""Issue 41: a kraft node serving Kafka's controller, over real TCP, as a
broker speaks to it: BrokerRegistration, BrokerHeartbeat and Envelope
frames on the controller listener of a one-voter quorum (a real
``kraft storage format`` directory), the answers and the records the
committed log then holds.

The refusals are Kafka's: ``ClusterControlManager.registerBroker``
(INCONSISTENT_CLUSTER_ID, DUPLICATE_BROKER_REGISTRATION),
``EnvelopeUtils.handleEnvelopeRequest`` (PRINCIPAL_DESERIALIZATION_FAILURE,
INVALID_REQUEST for a client address or an api Kafka does not forward,
UNSUPPORTED_VERSION for an inner request that does not parse).
"""

from __future__ import annotations

import struct
import uuid
from pathlib import Path
from typing import Any

import trio

from kraft.messages.generated import broker_heartbeat_request as bhq
from kraft.messages.generated import broker_registration_request as brq
from kraft.messages.generated.create_topics_request import CreatableTopic, CreateTopicsRequest
from kraft.messages.generated.default_principal_data import DefaultPrincipalData
from kraft.messages.generated.envelope_request import EnvelopeRequest
from kraft.messages.generated.fetch_request import FetchRequest
from kraft.node.fault import RaisingFaultHandler
from kraft.node.node import CommittedBatch, KraftNode
from kraft.records.metadata import decode_metadata_record
from kraft.wire.codec import decode_response, encode_request
from tests.harness.configs import load, make_configs
from tests.harness.poll import until_async
from tests.node.broker_channel import BrokerChannel, registration

def _principal(name: str = "ANONYMOUS") -> bytes:
    return struct.pack(">h", 0) + b"".join(
        bytes(p) for p in DefaultPrincipalData(type="User", name=name, token_authenticated=False).encode_parts(0))


def _inner(body: Any, version: int) -> bytes:
    return b"".join(bytes(p) for p in encode_request(body, version, 7, client_id="adminclient-1", framed=False))


async def _with_controller(tmp_path: Path, test: Any) -> None:
    config = load(make_configs(tmp_path, [1])[1])
    node = KraftNode(config, fault_handler=RaisingFaultHandler(), controller=True)
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            await nursery.start(node.run)
            await until_async("node.controller is not None and node.controller.is_active",
                              lambda: node.controller is not None and node.controller.is_active, interval_s=0.02)
            stream = await trio.open_tcp_stream("127.0.0.1", next(iter(node.ports.values())))
            await test(node, BrokerChannel(stream))
            await stream.aclose()
            await node.shutdown()


async def _records(node: KraftNode) -> list[Any]:
    hwm = node.high_watermark
    out = []
    async for item in node.committed_batches(until=hwm - 1):
        if isinstance(item, CommittedBatch) and not item.is_control:
            out += [decode_metadata_record(v).message for v in item.records]
    return out


def test_a_broker_registers_heartbeats_and_is_unfenced(tmp_path: Path) -> None:
    """ClusterControlManager.registerBroker: the broker epoch is the offset
    of its RegisterBrokerRecord; BrokerHeartbeatManager.calculateNextBrokerState
    unfences it once it has caught up with that offset."""
    async def test(node: KraftNode, broker: BrokerChannel) -> None:
        answer = await broker.ask(registration(10, 1), 4)
        assert answer.error_code == 0 and answer.broker_epoch > 0, answer
        heartbeat = bhq.BrokerHeartbeatRequest(broker_id=10, broker_epoch=answer.broker_epoch,
                                               current_metadata_offset=node.high_watermark + 100, want_fence=False,
                                               want_shut_down=False)
        async def unfenced() -> Any:
            beat = await broker.ask(heartbeat, 1)
            return None if beat.is_fenced else beat

        beat = await until_async("broker 10 unfenced", unfenced, interval_s=0.05)
        assert beat.error_code == 0 and not beat.should_shut_down
        records = await _records(node)
        register = next(m for m in records if type(m).__name__ == "RegisterBrokerRecord")
        assert register.broker_id == 10 and register.incarnation_id == uuid.UUID(int=1) and register.fenced
        # ReplicationControlManager.handleBrokerUnfenced: since 3.3-IV2 a
        # BrokerRegistrationChangeRecord with fenced = -1 (UNFENCE).
        change = next(m for m in records if type(m).__name__ == "BrokerRegistrationChangeRecord")
        assert (change.broker_id, change.broker_epoch, change.fenced) == (10, answer.broker_epoch, -1)

    trio.run(_with_controller, tmp_path, test)


def test_another_cluster_and_a_live_duplicate_are_refused(tmp_path: Path) -> None:
    """registerBroker: INCONSISTENT_CLUSTER_ID (104) for another cluster's
    broker; DUPLICATE_BROKER_REGISTRATION (101) for a second incarnation of a
    broker whose session is live. Nothing is written for either."""
    async def test(node: KraftNode, broker: BrokerChannel) -> None:
        wrong = await broker.ask(registration(10, 1, cluster_id="AAAAAAAAAAAAAAAAAAAAAA"), 4)
        assert wrong.error_code == 104 and wrong.broker_epoch == -1, wrong
        first = await broker.ask(registration(10, 1), 4)
        assert first.error_code == 0
        before = node.high_watermark
        second = await broker.ask(registration(10, 2), 4)
        assert second.error_code == 101, second
        names = [type(m).__name__ for m in await _records(node)]
        assert names.count("RegisterBrokerRecord") == 1, names
        assert node.high_watermark >= before

    trio.run(_with_controller, tmp_path, test)


def test_a_broker_that_lacks_a_finalized_level_is_refused(tmp_path: Path) -> None:
    """ClusterControlManager.registerBroker via QuorumFeatures: a broker whose
    metadata.version range stops below the finalized level (a Kafka 4.0
    broker, 7-27, on a 4.4 cluster at 33) gets UNSUPPORTED_VERSION (35)."""
    async def test(node: KraftNode, broker: BrokerChannel) -> None:
        old = registration(10, 1)
        old.features = [f if f.name != "metadata.version" else
                        brq.Feature(name="metadata.version", min_supported_version=7, max_supported_version=27)
                        for f in old.features]
        answer = await broker.ask(old, 4)
        assert (answer.error_code, answer.broker_epoch) == (35, -1), answer
        assert "RegisterBrokerRecord" not in [type(m).__name__ for m in await _records(node)]

    trio.run(_with_controller, tmp_path, test)


def test_an_envelope_is_unwrapped_or_refused_as_kafka_does(tmp_path: Path) -> None:
    """EnvelopeUtils.handleEnvelopeRequest: a forwarded CreateTopics is
    answered inside the EnvelopeResponse (its own response header, the
    inner correlation id); a forged principal, a bad client address, an
    inner request that does not parse and a Fetch (not forwardable) are
    refused on the envelope, and nothing is written for them."""
    async def test(node: KraftNode, broker: BrokerChannel) -> None:
        registered = await broker.ask(registration(10, 1), 4)
        heartbeat = bhq.BrokerHeartbeatRequest(broker_id=10, broker_epoch=registered.broker_epoch,
                                               current_metadata_offset=1 << 40, want_fence=False, want_shut_down=False)
        async def unfenced() -> bool:
            return not (await broker.ask(heartbeat, 1)).is_fenced

        await until_async("broker 10 unfenced", unfenced, interval_s=0.05)
        create = CreateTopicsRequest(topics=[CreatableTopic(name="forwarded", num_partitions=2, replication_factor=1,
                                                            assignments=[], configs=[])], timeout_ms=30000,
                                     validate_only=False)
        good = EnvelopeRequest(request_data=_inner(create, 7), request_principal=_principal(),
                               client_host_address=bytes([127, 0, 0, 1]))
        answer = await broker.ask(good, 0)
        assert answer.error_code == 0, answer
        inner = decode_response(answer.response_data, 19, 7)
        assert inner.header.correlation_id == 7
        assert [(t.name, t.error_code, t.num_partitions) for t in inner.body.topics] == [("forwarded", 0, 2)]
        written = len(await _records(node))
        cases = {
            "forged principal": (good.request_data, b"\x00\x00garbage", bytes([127, 0, 0, 1]), 97),
            "client address": (good.request_data, _principal(), b"\x01\x02\x03", 42),
            "inner request": (b"\x00\x13\x00\x07\xff", _principal(), bytes([127, 0, 0, 1]), 35),
            "not forwardable": (_inner(FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, topics=[]), 4),
                                _principal(), bytes([127, 0, 0, 1]), 42),
        }
        for case, (data, principal, address, error) in cases.items():
            refused = await broker.ask(EnvelopeRequest(request_data=data, request_principal=principal,
                                                       client_host_address=address), 0)
            assert (refused.error_code, refused.response_data) == (error, None), case
        assert len(await _records(node)) == written

    trio.run(_with_controller, tmp_path, test)


def test_a_record_the_controller_cannot_replay_stops_the_controller_not_the_node(tmp_path: Path) -> None:
    """Where Kafka's controller halts on a record it cannot replay, kraft
    stops only its controller, in one ERROR line: the raft quorum member
    keeps serving and committing, and controller requests get NOT_CONTROLLER
    (41). Stricter for the raft: a witness or an observer's copy is never
    taken down by the metadata it replicates."""
    async def test(node: KraftNode, broker: BrokerChannel) -> None:
        offset = await node.append([b"\x00not a metadata record"])
        await until_async("node.controller is None or node.controller.is_stopped",
                          lambda: node.controller is None or node.controller.is_stopped, interval_s=0.02)
        assert node.running and node.high_watermark > offset
        answer = await broker.ask(registration(10, 1), 4)
        assert answer.error_code == 41, answer
        assert await node.append([b"still a replicated log"]) > offset

    trio.run(_with_controller, tmp_path, test)
