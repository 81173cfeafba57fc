"""SCRAM accounts follow the committed metadata log at run time, as on a
Kafka controller: a UserScramCredentialRecord appended through the leader
lets the user in once committed, a RemoveUserScramCredentialRecord locks
them out again; the account from ``kraft storage format --add-scram`` keeps
working throughout. A real node on 127.0.0.1, a real SASL_PLAINTEXT
listener, the real SCRAM client."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio

from kraft.config import NodeConfig
from kraft.messages.generated.describe_quorum_request import DescribeQuorumRequest
from kraft.messages.generated.remove_user_scram_credential_record import RemoveUserScramCredentialRecord
from kraft.messages.generated.user_scram_credential_record import UserScramCredentialRecord
from kraft.node.node import KraftNode
from kraft.records.metadata import encode_metadata_record
from kraft.wire.apis import ApiKey
from kraft.wire.network_client import AuthenticationFailed, PeerClient
from kraft.wire.scram import ScramMechanism, make_credential
from kraft.wire.security import client_security_from_properties
from tests.harness.configs import make_configs
from tests.harness.poll import until_async

SCRAM_JAAS = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="{}" password="{}";'
MECHANISM = ScramMechanism.SCRAM_SHA_256


async def can_describe(port: int, user: str, password: str) -> bool:
    security = client_security_from_properties({
        "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.jaas.config": SCRAM_JAAS.format(user, password)})
    client = PeerClient("127.0.0.1", port, client_id="scram-test", security=security)
    try:
        _, body = await client.request(ApiKey.DESCRIBE_QUORUM, lambda v: DescribeQuorumRequest(topics=[]))
        return body.error_code == 0
    except AuthenticationFailed:
        return False
    finally:
        await client.aclose()


async def cannot_describe(port: int, user: str, password: str) -> bool:
    return not await can_describe(port, user, password)


def add_record(user: str, password: str) -> bytes:
    c = make_credential(MECHANISM, password)
    return encode_metadata_record(UserScramCredentialRecord(
        name=user, mechanism=MECHANISM.type_id, salt=c.salt, stored_key=c.stored_key, server_key=c.server_key,
        iterations=c.iterations))


async def test_credentials_appended_and_removed_at_run_time_take_effect(tmp_path: Path) -> None:
    extra = {
        "listener.security.protocol.map": "CONTROLLER:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "SCRAM-SHA-256",
        "sasl.mechanism.controller.protocol": "SCRAM-SHA-256",
        "listener.name.controller.scram-sha-256.sasl.jaas.config": SCRAM_JAAS.format("alice", "alice-secret"),
        "super.users": "User:alice",
    }
    [path] = make_configs(tmp_path, [1], extra=extra,
                          format_args=["--add-scram", "SCRAM-SHA-256=[name=alice,password=alice-secret]"]).values()
    config = NodeConfig.load(path)
    port = config.listeners[0].port
    node = KraftNode(config)
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            await nursery.start(node.run)
            await node.wait_for_leader()
            assert await can_describe(port, "alice", "alice-secret")
            assert not await can_describe(port, "bob", "bob-secret")

            await node.append([add_record("bob", "bob-secret")])
            await until_async("bob admitted", lambda: can_describe(port, "bob", "bob-secret"))
            assert not await can_describe(port, "bob", "wrong")

            remove: Any = RemoveUserScramCredentialRecord(name="bob", mechanism=MECHANISM.type_id)
            await node.append([encode_metadata_record(remove)])
            await until_async("bob refused", lambda: cannot_describe(port, "bob", "bob-secret"))
            assert await can_describe(port, "alice", "alice-secret")
            await node.shutdown()
            nursery.cancel_scope.cancel()
