"""serve_listener with TLS, SASL and connection limits, over real sockets
on 127.0.0.1, with PeerClient (TLS + SASL client) and raw sockets. Each
bad client closes only its own connection; a good one is served."""

from __future__ import annotations

import logging
import struct
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from kraft.messages.generated.describe_quorum_request import DescribeQuorumRequest
from kraft.messages.generated.sasl_handshake_request import SaslHandshakeRequest
from kraft.wire.api_versions import supported_versions
from kraft.wire.apis import ApiKey
from kraft.wire.network_client import AuthenticationFailed, ConnectionFailed, PeerClient
from kraft.wire.codec import decode_response
from kraft.wire.errors import ErrorCode
from kraft.wire.connection_limits import ConnectionLimits, ConnectionTracker
from kraft.wire.scram import ScramMechanism, make_credential
from kraft.wire.security import (
    ListenerSecurity,
    ScramCredentialStore,
    SecurityProtocol,
    client_security_from_properties,
    listener_security,
)
from tests.harness.poll import until_async
from tests.wire.certs import Certs, make_certs, require_openssl
from tests.wire.netutil import TEST_TIMEOUT_S, CannedHandler, RawConnection, running_server

SCRAM = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="{}" password="{}";'
PLAIN_SERVER = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
                'user_bob="bob-secret";')


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    require_openssl()
    return make_certs(tmp_path_factory.mktemp("certs"))


def handler() -> CannedHandler:
    return CannedHandler(dict(supported_versions([ApiKey.API_VERSIONS, ApiKey.DESCRIBE_QUORUM,
                                                   ApiKey.SASL_AUTHENTICATE])) | {ApiKey.SASL_HANDSHAKE: (0, 1)})


def sasl_ssl(certs: Certs, client_auth: str = "none") -> ListenerSecurity:
    store = ScramCredentialStore()
    store.set("alice", make_credential(ScramMechanism.SCRAM_SHA_512, "alice-secret"))
    props = {**certs.server_props(client_auth), "sasl.enabled.mechanisms": "SCRAM-SHA-512,PLAIN",
             "listener.name.controller.plain.sasl.jaas.config": PLAIN_SERVER}
    return listener_security(props, "CONTROLLER", SecurityProtocol.SASL_SSL, store)


async def describe(port: int, props: dict[str, str]) -> Any:
    client = PeerClient("127.0.0.1", port, client_id="t", security=client_security_from_properties(props))
    try:
        return (await client.request(ApiKey.DESCRIBE_QUORUM, lambda v: DescribeQuorumRequest(topics=[])))[1]
    finally:
        await client.aclose()


def scram_client(certs: Certs, user: str, password: str) -> dict[str, str]:
    return {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": SCRAM.format(user, password), **certs.client_props()}


async def test_sasl_ssl_scram_and_plain_clients_are_served_with_their_principal(certs: Certs) -> None:
    h = handler()
    with trio.fail_after(TEST_TIMEOUT_S):
        async with running_server(h, security=sasl_ssl(certs)) as port:
            assert (await describe(port, scram_client(certs, "alice", "alice-secret"))).error_code == 0
            plain = {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", **certs.client_props(),
                     "sasl.jaas.config": 'x.PlainLoginModule required username="bob" password="bob-secret";'}
            assert (await describe(port, plain)).error_code == 0
    assert (ApiKey.DESCRIBE_QUORUM, 0) in h.requests or any(k == ApiKey.DESCRIBE_QUORUM for k, _ in h.requests)


async def test_wrong_password_unknown_user_and_unknown_mechanism_are_refused(
        certs: Certs, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "kraft.wire")
    with trio.fail_after(TEST_TIMEOUT_S):
        async with running_server(handler(), security=sasl_ssl(certs)) as port:
            for user, password in [("alice", "wrong"), ("mallory", "x")]:
                with pytest.raises(AuthenticationFailed, match="SASL_AUTHENTICATION_FAILED"):
                    await describe(port, scram_client(certs, user, password))
            with pytest.raises(AuthenticationFailed, match="UNSUPPORTED_SASL_MECHANISM"):
                await describe(port, {**scram_client(certs, "alice", "alice-secret"),
                                      "sasl.mechanism": "SCRAM-SHA-256"})
            # The listener still serves a good client afterwards.
            assert (await describe(port, scram_client(certs, "alice", "alice-secret"))).error_code == 0
    text = caplog.text
    assert "invalid credentials for user 'alice'" in text and "unknown user 'mallory'" in text


async def test_a_request_before_sasl_closes_and_the_size_is_bounded_before_auth(certs: Certs) -> None:
    with trio.fail_after(TEST_TIMEOUT_S):
        async with running_server(handler(), security=sasl_ssl(certs)) as port:
            context = client_security_from_properties({"security.protocol": "SSL", **certs.client_props()})
            assert context.ssl_context is not None
            for payload in [b"describe", struct.pack(">i", 600_000) + b"x" * 100]:
                stream = trio.SSLStream(await trio.open_tcp_stream("127.0.0.1", port), context.ssl_context,
                                        server_hostname="127.0.0.1")
                conn = RawConnection(stream)  # type: ignore[arg-type]
                if payload == b"describe":
                    await conn.send_request(DescribeQuorumRequest(topics=[]), 0)
                else:
                    await conn.send(payload)  # over sasl.server.max.receive.size
                await conn.assert_closed_by_peer()


async def test_plaintext_and_garbage_on_a_tls_port_close_only_that_connection(
        certs: Certs, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "kraft.wire")
    with trio.fail_after(TEST_TIMEOUT_S):
        async with running_server(handler(), security=sasl_ssl(certs)) as port:
            for junk in [b"\x00\x00\x00\x10garbage-garbage!", b"\x16\x03\x01\xff\xff" + b"\x00" * 64]:
                conn = await RawConnection.open(port)
                await conn.send(junk)
                await conn.assert_closed_by_peer()
            assert (await describe(port, scram_client(certs, "alice", "alice-secret"))).error_code == 0
    assert "TLS handshake failed" in caplog.text


async def test_ssl_client_auth_required_names_the_certificate_subject(certs: Certs) -> None:
    security = listener_security(certs.server_props("required"), "CONTROLLER", SecurityProtocol.SSL,
                                 ScramCredentialStore())
    seen: list[str] = []

    class Recording(CannedHandler):
        async def handle(self, request: Any, conn: Any) -> Any:
            seen.append(conn.principal)
            return await super().handle(request, conn)

    with trio.fail_after(TEST_TIMEOUT_S):
        async with running_server(Recording(), security=security) as port:
            assert (await describe(port, {"security.protocol": "SSL", **certs.client_props("admin")})).error_code == 0
            for name in (None, "rogue"):
                # TLS 1.3: the server's refusal may arrive after the client's
                # side of the handshake completed, as a broken connection.
                with pytest.raises(ConnectionFailed):
                    await describe(port, {"security.protocol": "SSL", **certs.client_props(name)})
    assert "User:CN=admin,OU=ops,O=kraft tests" in seen


async def test_a_client_checks_the_server_name(certs: Certs) -> None:
    security = listener_security(certs.server_props(), "CONTROLLER", SecurityProtocol.SSL, ScramCredentialStore())
    with trio.fail_after(TEST_TIMEOUT_S):
        async with running_server(handler(), security=security) as port:
            client = PeerClient("localhost", port, client_id="t", security=client_security_from_properties(
                {"security.protocol": "SSL", **certs.client_props()}))
            try:
                await client.request(ApiKey.DESCRIBE_QUORUM, lambda v: DescribeQuorumRequest(topics=[]))
            finally:
                await client.aclose()
    # The server certificate names localhost and 127.0.0.1 only: a name it
    # does not carry is refused unless endpoint identification is off.
    props = {"security.protocol": "SSL", **certs.client_props()}
    bad = client_security_from_properties(props)
    assert bad.ssl_context is not None and bad.ssl_context.check_hostname
    off = client_security_from_properties({**props, "ssl.endpoint.identification.algorithm": ""})
    assert off.ssl_context is not None and not off.ssl_context.check_hostname


async def test_sasl_requests_on_a_plaintext_listener_get_illegal_sasl_state() -> None:
    with trio.fail_after(TEST_TIMEOUT_S):
        async with running_server(handler()) as port:
            conn = await RawConnection.open(port)
            await conn.send_request(SaslHandshakeRequest(mechanism="PLAIN"), 1)
            body = decode_response(await conn.read_frame(), ApiKey.SASL_HANDSHAKE, 1).body
            assert body.error_code == ErrorCode.ILLEGAL_SASL_STATE
            await conn.send_request(DescribeQuorumRequest(topics=[]), 0)  # still served
            assert decode_response(await conn.read_frame(), ApiKey.DESCRIBE_QUORUM, 0).body.error_code == 0


# ---------------------------------------------------------------- limits


@asynccontextmanager
async def limited(limits: ConnectionLimits) -> AsyncIterator[tuple[int, ConnectionTracker]]:
    tracker = ConnectionTracker(limits)
    async with running_server(handler(), tracker=tracker) as port:
        yield port, tracker


async def test_connections_over_the_per_ip_limit_are_refused_and_the_rest_served(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "kraft.wire")
    with trio.fail_after(TEST_TIMEOUT_S):
        async with limited(ConnectionLimits(max_connections_per_ip=3)) as (port, tracker):
            kept = [await RawConnection.open(port) for _ in range(3)]
            for conn in kept:  # each is served (and so counted) before the next opens
                await conn.send_request(DescribeQuorumRequest(topics=[]), 0)
                await conn.read_frame()
            extra = await RawConnection.open(port)
            await extra.assert_closed_by_peer()
            assert tracker.peak_per_ip["127.0.0.1"] == 3 and tracker.refused == 1
            await kept[0].aclose()
            await until_async("tracker.total == 2", lambda: tracker.total == 2, interval_s=0.01)
            again = await RawConnection.open(port)
            await again.send_request(DescribeQuorumRequest(topics=[]), 0)
            await again.read_frame()
    assert "Rejected connection from 127.0.0.1, address already has the configured maximum of 3" in caplog.text


async def test_an_idle_connection_and_a_slow_request_are_closed(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "kraft.wire")
    with trio.fail_after(TEST_TIMEOUT_S):
        async with limited(ConnectionLimits(idle_timeout_ms=200, request_receive_timeout_ms=200)) as (port, _):
            idle = await RawConnection.open(port)
            await idle.assert_closed_by_peer()
            slow = await RawConnection.open(port)
            await slow.send(b"\x00\x00\x00\x20\x00")  # a request started, never finished
            await slow.assert_closed_by_peer()
    assert "idle for 200 ms" in caplog.text
    assert "request not received within 200 ms (5 bytes of it arrived)" in caplog.text


def test_limits_are_read_from_kafka_keys(tmp_path: Path) -> None:
    from kraft.config import ConfigError, NodeConfig

    base = {"process.roles": "controller", "node.id": "1", "listeners": "CONTROLLER://127.0.0.1:9093",
            "controller.listener.names": "CONTROLLER", "controller.quorum.voters": "1@127.0.0.1:9093",
            "metadata.log.dir": str(tmp_path)}
    config = NodeConfig.from_properties({**base, "max.connections": "10", "max.connections.per.ip": "2",
                                         "max.connections.per.ip.overrides": "10.0.0.1:5",
                                         "connections.max.idle.ms": "1000"})
    limits = config.connection_limits
    assert (limits.max_connections, limits.per_ip_limit("10.0.0.2"), limits.per_ip_limit("10.0.0.1"),
            limits.idle_timeout_ms, limits.sasl_max_receive_size) == (10, 2, 5, 1000, 524288)
    assert not config.secured and config.client_security is None
    with pytest.raises(ConfigError, match="GSSAPI"):
        NodeConfig.from_properties({**base, "listener.security.protocol.map": "CONTROLLER:SASL_PLAINTEXT"})
