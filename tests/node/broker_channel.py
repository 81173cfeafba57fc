"""A broker's side of the controller listener, for the controller's node
tests: a raw Kafka-protocol connection and the BrokerRegistration a Kafka
4.4 broker sends."""

from __future__ import annotations

import itertools
import uuid
from typing import Any

import trio

from kraft.messages.generated import broker_registration_request as brq
from kraft.wire.codec import decode_response, encode_request
from kraft.wire.framing import FrameReader
from tests.harness.configs import CLUSTER_ID

_correlation = itertools.count(1)


class BrokerChannel:
    """A raw Kafka-protocol connection, as a broker's channel to the controller."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.reader = FrameReader()

    async def ask(self, body: Any, version: int) -> Any:
        correlation = next(_correlation)
        await self.stream.send_all(b"".join(bytes(p) for p in encode_request(body, version, correlation,
                                                                            client_id="broker-10")))
        while True:
            frame = self.reader.next_frame()
            if frame is not None:
                return decode_response(frame, type(body).API_KEY, version).body
            data = await self.stream.receive_some(65536)
            assert data, "the controller closed the connection"
            self.reader.feed(data)


def registration(broker_id: int, incarnation: int, cluster_id: str = CLUSTER_ID) -> brq.BrokerRegistrationRequest:
    return brq.BrokerRegistrationRequest(
        broker_id=broker_id, cluster_id=cluster_id, incarnation_id=uuid.UUID(int=incarnation),
        listeners=[brq.Listener(name="PLAINTEXT", host="127.0.0.1", port=9092, security_protocol=0)],
        features=[brq.Feature(name="metadata.version", min_supported_version=7, max_supported_version=33),
                  brq.Feature(name="kraft.version", min_supported_version=0, max_supported_version=1),
                  brq.Feature(name="eligible.leader.replicas.version", min_supported_version=0,
                              max_supported_version=1),
                  brq.Feature(name="group.version", min_supported_version=0, max_supported_version=1),
                  brq.Feature(name="transaction.version", min_supported_version=0, max_supported_version=2),
                  brq.Feature(name="share.version", min_supported_version=0, max_supported_version=2),
                  brq.Feature(name="streams.version", min_supported_version=0, max_supported_version=1)],
        rack=None, log_dirs=[uuid.UUID(int=1000 + broker_id)], previous_broker_epoch=-1)


