"""serve_listener over real TCP sockets on 127.0.0.1: Kafka's SocketServer
semantics (responses in request order, one connection closed per fault and
the rest served, the ApiVersions fallback of KIP-511), and Kafka's own
ApiVersions request frame answered byte for byte as Kafka answers it."""

from __future__ import annotations

import json
import logging
import socket
import struct
from typing import Any

import pytest
import trio
import trio.testing

from kraft.messages.generated.api_versions_request import ApiVersionsRequest
from kraft.messages.generated.api_versions_response import ApiVersionsResponse
from kraft.messages.generated.describe_quorum_request import DescribeQuorumRequest
from kraft.messages.generated.vote_request import VoteRequest
from kraft.messages.generated.vote_response import VoteResponse
from kraft.wire.api_versions import api_versions_response
from kraft.wire.apis import ApiKey
from kraft.wire.codec import DecodedRequest, decode_response, encode_request
from kraft.wire.errors import ErrorCode
from kraft.wire.headers import RequestHeader
from kraft.wire.server import CloseConnection, ConnectionInfo, Response
from tests.conftest import fixture_path
from tests.wire.netutil import (
    CANNED_QUORUM,
    TEST_TIMEOUT_S,
    CannedHandler,
    RawConnection,
    correlation_id_of,
    echoed,
    frame_of,
    running_server,
    vote_request,
)

WIRE_LOGGER = "kraft.wire"


def connection_problems(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """kraft.wire lines at INFO or above about a closed connection."""
    return [r for r in caplog.records
            if r.name == WIRE_LOGGER and r.levelno >= logging.INFO and "closing connection" in r.getMessage()]


async def assert_serves(conn: RawConnection, voter_id: int = 7) -> None:
    """``conn`` still gets answers."""
    correlation_id = await conn.send_request(vote_request(voter_id), 1)
    frame = await conn.read_frame()
    assert correlation_id_of(frame) == correlation_id
    assert echoed(decode_response(frame, ApiKey.VOTE, 1).body) == (voter_id, 1)


async def api_versions_via(conn: RawConnection, version: int) -> tuple[int, ApiVersionsResponse]:
    correlation_id = await conn.send_request(
        ApiVersionsRequest(client_software_name="raw-test", client_software_version="1.0"), version)
    frame = await conn.read_frame()
    decoded = decode_response(frame, ApiKey.API_VERSIONS, version)
    assert decoded.header.correlation_id == correlation_id
    return decoded.header_version, decoded.body


# -- answering ----------------------------------------------------------------


async def test_answers_api_versions_and_a_raft_request_on_one_connection() -> None:
    with trio.fail_after(TEST_TIMEOUT_S):
        handler = CannedHandler()
        async with running_server(handler) as port:
            conn = await RawConnection.open(port)
            header_version, body = await api_versions_via(conn, 4)
            assert header_version == 0  # ApiVersions responses always carry a v0 header
            assert body.error_code == ErrorCode.NONE
            assert {v.api_key: (v.min_version, v.max_version) for v in body.api_keys} == {
                18: (0, 4), 52: (0, 2), 55: (0, 2)}
            correlation_id = await conn.send_request(DescribeQuorumRequest(), 2)
            frame = await conn.read_frame()
            decoded = decode_response(frame, ApiKey.DESCRIBE_QUORUM, 2)
            assert decoded.header.correlation_id == correlation_id
            assert decoded.body == CANNED_QUORUM
            await conn.aclose()
        assert len(handler.connections) == 1


async def test_answers_kafkas_own_api_versions_request_byte_for_byte_as_kafka() -> None:
    """Kafka's raft client's ApiVersions v4 request, sent raw; the handler
    advertises what Kafka's controller advertised, and the answer must be
    the bytes Kafka's controller sent."""
    path = fixture_path("wire", "kafka-java-frames.jsonl")
    frames = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    request = next(f for f in frames if f["api"] == "API_VERSIONS" and f["direction"] == "request")
    request_header = request["kafkaDecoded"]["header"]
    answer = next(f for f in frames if f["api"] == "API_VERSIONS" and f["direction"] == "response"
                  and f["kafkaDecoded"]["header"]["correlationId"] == request_header["correlationId"])
    kafka_body = answer["kafkaDecoded"]["body"]
    advertised = {k["apiKey"]: (k["minVersion"], k["maxVersion"]) for k in kafka_body["apiKeys"]}
    features = {f["name"]: (f["minVersion"], f["maxVersion"]) for f in kafka_body["supportedFeatures"]}
    seen: list[DecodedRequest] = []

    class KafkaLikeHandler:
        async def handle(self, req: DecodedRequest, conn: ConnectionInfo) -> Response | None:
            seen.append(req)
            return Response(api_versions_response(req.api_version, advertised, request=req.body,
                                                  supported_features=features), req.api_version)

    with trio.fail_after(TEST_TIMEOUT_S):
        async with running_server(KafkaLikeHandler()) as port:
            conn = await RawConnection.open(port)
            await conn.send(bytes.fromhex(request["frameHex"]))
            frame = await conn.read_frame()
            await conn.aclose()
    assert seen[0].header.client_id == request_header["clientId"]
    assert seen[0].body.client_software_name == "apache-kafka-java"
    assert frame_of(frame) == bytes.fromhex(answer["frameHex"])


async def test_api_versions_at_an_unsupported_version_gets_v0_unsupported_version_and_stays_open() -> None:
    """KIP-511: an ApiVersions request newer than the server is answered in
    v0 with UNSUPPORTED_VERSION and ApiVersions' own range, so the client
    can retry; the connection stays usable."""
    with trio.fail_after(TEST_TIMEOUT_S):
        handler = CannedHandler()
        async with running_server(handler) as port:
            conn = await RawConnection.open(port)
            # v5 does not exist yet: a v2 (flexible) header, any body.
            header = RequestHeader(request_api_key=18, request_api_version=5, correlation_id=99,
                                   client_id="future-client")
            await conn.send(frame_of(header.encode(2) + b"\x00\x00\x00"))
            frame = await conn.read_frame()
            decoded = decode_response(frame, ApiKey.API_VERSIONS, 0)
            assert decoded.header.correlation_id == 99
            assert decoded.body.error_code == ErrorCode.UNSUPPORTED_VERSION
            assert [(v.api_key, v.min_version, v.max_version) for v in decoded.body.api_keys] == [(18, 0, 4)]
            # The retry, on the same connection, at a version we speak.
            _, body = await api_versions_via(conn, 3)
            assert body.error_code == ErrorCode.NONE
            await assert_serves(conn)
            await conn.aclose()
        assert (ApiKey.API_VERSIONS, 5) not in handler.requests  # answered by the server itself


async def test_api_versions_with_an_invalid_software_name_gets_invalid_request() -> None:
    with trio.fail_after(TEST_TIMEOUT_S):
        async with running_server(CannedHandler()) as port:
            conn = await RawConnection.open(port)
            await conn.send_request(ApiVersionsRequest(client_software_name="-bad name-",
                                                       client_software_version="1"), 3)
            body = decode_response(await conn.read_frame(), ApiKey.API_VERSIONS, 3).body
            assert body.error_code == ErrorCode.INVALID_REQUEST
            assert body.api_keys == []
            await conn.aclose()


async def test_responses_are_written_in_request_order_when_handlers_finish_in_reverse() -> None:
    count = 8
    gates = {i: trio.Event() for i in range(count)}
    all_started = trio.Event()
    started: list[int] = []

    async def hold(request: VoteRequest) -> None:
        started.append(request.voter_id)
        if len(started) == count:
            all_started.set()
        await gates[request.voter_id].wait()

    with trio.fail_after(TEST_TIMEOUT_S):
        async with running_server(CannedHandler(before_vote=hold)) as port:
            conn = await RawConnection.open(port)
            ids = [await conn.send_request(vote_request(i), 1) for i in range(count)]
            await all_started.wait()
            assert started == list(range(count))  # handler calls begin in request order
            for i in reversed(range(count)):
                gates[i].set()
                await trio.testing.wait_all_tasks_blocked()
            replies = [await conn.read_frame() for _ in range(count)]
            await conn.aclose()
    assert [correlation_id_of(f) for f in replies] == ids
    assert [echoed(decode_response(f, ApiKey.VOTE, 1).body)[0] for f in replies] == list(range(count))


async def test_one_request_at_a_time_with_max_in_flight_1() -> None:
    active = 0
    most_active = 0

    async def track(request: VoteRequest) -> None:
        nonlocal active, most_active
        active += 1
        most_active = max(most_active, active)
        await trio.testing.wait_all_tasks_blocked()
        active -= 1

    with trio.fail_after(TEST_TIMEOUT_S):
        async with running_server(CannedHandler(before_vote=track), max_in_flight_per_connection=1) as port:
            conn = await RawConnection.open(port)
            ids = [await conn.send_request(vote_request(i), 1) for i in range(5)]
            replies = [await conn.read_frame() for _ in range(5)]
            await conn.aclose()
    assert [correlation_id_of(f) for f in replies] == ids
    assert most_active == 1


async def test_a_handler_returning_none_sends_nothing_and_keeps_order() -> None:
    class SilentOnOddVoters(CannedHandler):
        async def handle(self, request: DecodedRequest, conn: ConnectionInfo) -> Response | None:
            if request.api_key == ApiKey.VOTE and request.body.voter_id % 2:
                return None
            return await super().handle(request, conn)

    with trio.fail_after(TEST_TIMEOUT_S):
        async with running_server(SilentOnOddVoters()) as port:
            conn = await RawConnection.open(port)
            ids = [await conn.send_request(vote_request(i), 1) for i in range(4)]
            replies = [await conn.read_frame() for _ in range(2)]
            await conn.aclose()
    assert [correlation_id_of(f) for f in replies] == [ids[0], ids[2]]


async def test_a_half_closed_client_still_gets_its_answers() -> None:
    """The peer's end of stream stops reading, not answering: requests
    already read are answered, then the connection is closed."""
    gate = trio.Event()
    all_started = trio.Event()
    started: list[int] = []

    async def hold(request: VoteRequest) -> None:
        started.append(request.voter_id)
        if len(started) == 3:
            all_started.set()
        await gate.wait()

    with trio.fail_after(TEST_TIMEOUT_S):
        async with running_server(CannedHandler(before_vote=hold)) as port:
            conn = await RawConnection.open(port)
            ids = [await conn.send_request(vote_request(i), 1) for i in range(3)]
            await conn.stream.send_eof()
            await all_started.wait()
            await trio.testing.wait_all_tasks_blocked()  # the server has seen the end of stream
            gate.set()
            replies = [await conn.read_frame() for _ in range(3)]
            await conn.assert_closed_by_peer()
            await conn.aclose()
    assert [correlation_id_of(f) for f in replies] == ids


# -- faults close only the faulty connection ----------------------------------------


async def check_closes_only_that_connection(bad_bytes: bytes, caplog: pytest.LogCaptureFixture,
                                            handler: Any = None, **options: Any) -> list[logging.LogRecord]:
    """Send ``bad_bytes`` on one connection: it is closed, one line is
    logged, and another connection (opened before and after) is served."""
    caplog.set_level(logging.DEBUG, logger=WIRE_LOGGER)
    with trio.fail_after(TEST_TIMEOUT_S):
        async with running_server(handler or CannedHandler(), **options) as port:
            good = await RawConnection.open(port)
            await assert_serves(good, 1)
            bad = await RawConnection.open(port)
            await bad.send(bad_bytes)
            await bad.assert_closed_by_peer()
            await bad.aclose()
            await assert_serves(good, 2)
            late = await RawConnection.open(port)
            await assert_serves(late, 3)
            await good.aclose()
            await late.aclose()
    return connection_problems(caplog)


async def test_garbage_bytes_close_the_connection(caplog: pytest.LogCaptureFixture) -> None:
    # Read as a size prefix, "GET " is about 1.2 GB.
    problems = await check_closes_only_that_connection(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", caplog)
    assert len(problems) == 1
    assert "1195725856" in problems[0].getMessage()


async def test_a_2_gib_size_prefix_closes_the_connection_without_waiting_for_the_frame(
        caplog: pytest.LogCaptureFixture) -> None:
    problems = await check_closes_only_that_connection(struct.pack(">i", 2**31 - 1), caplog)
    assert len(problems) == 1
    message = problems[0].getMessage()
    assert "2147483647" in message and "104857600" in message
    assert problems[0].levelno == logging.WARNING


async def test_a_frame_over_a_configured_max_closes_the_connection(caplog: pytest.LogCaptureFixture) -> None:
    problems = await check_closes_only_that_connection(struct.pack(">i", 4097) + b"\x00" * 16, caplog,
                                                       max_frame_size=4096)
    assert len(problems) == 1 and "4097" in problems[0].getMessage()


async def test_a_negative_size_prefix_closes_the_connection(caplog: pytest.LogCaptureFixture) -> None:
    problems = await check_closes_only_that_connection(struct.pack(">i", -1), caplog)
    assert len(problems) == 1


async def test_an_unknown_api_key_closes_the_connection(caplog: pytest.LogCaptureFixture) -> None:
    payload = struct.pack(">hhi", 9999, 0, 5) + b"\x00\x00" + b"\x00" * 8
    problems = await check_closes_only_that_connection(frame_of(payload), caplog)
    assert len(problems) == 1
    assert "9999" in problems[0].getMessage()


async def test_an_unsupported_version_of_a_known_api_closes_the_connection(
        caplog: pytest.LogCaptureFixture) -> None:
    """Kafka's SocketServer refuses a request whose version is not enabled
    (InvalidRequestException) by closing; only ApiVersions is answered."""
    header = RequestHeader(request_api_key=ApiKey.VOTE, request_api_version=99, correlation_id=1,
                           client_id="x")
    problems = await check_closes_only_that_connection(frame_of(header.encode(2) + b"\x00"), caplog)
    assert len(problems) == 1
    assert "99" in problems[0].getMessage()


async def test_a_body_that_fails_to_decode_closes_the_connection(caplog: pytest.LogCaptureFixture) -> None:
    encoded = b"".join(
        encode_request(vote_request(1), 1, 3, "x",
                                                                                  framed=False))
    truncated = encoded[:-5]
    problems = await check_closes_only_that_connection(frame_of(truncated), caplog)
    assert len(problems) == 1
    message = problems[0].getMessage()
    assert "Vote v1" in message and "127.0.0.1" in message


async def test_an_empty_frame_closes_the_connection(caplog: pytest.LogCaptureFixture) -> None:
    problems = await check_closes_only_that_connection(frame_of(b""), caplog)
    assert len(problems) == 1


async def test_a_handler_that_raises_closes_the_connection_with_one_traceback(
        caplog: pytest.LogCaptureFixture) -> None:
    async def explode(request: VoteRequest) -> None:
        if request.voter_id == 666:
            raise RuntimeError("handler bug")

    handler = CannedHandler(before_vote=explode)
    bad_request = b"".join(
        encode_request(vote_request(666), 1, 0, "x"))
    problems = await check_closes_only_that_connection(bad_request, caplog, handler=handler)
    assert len(problems) == 1
    assert problems[0].levelno == logging.ERROR
    assert problems[0].exc_info is not None and "handler bug" in str(problems[0].exc_info[1])
    tracebacks = [r for r in caplog.records if r.exc_info]
    assert len(tracebacks) == 1


async def test_close_connection_from_a_handler_logs_one_line_without_a_traceback(
        caplog: pytest.LogCaptureFixture) -> None:
    async def refuse(request: VoteRequest) -> None:
        if request.voter_id == 13:
            raise CloseConnection("not served on this listener")

    bad_request = b"".join(
        encode_request(vote_request(13), 1, 0, "x"))
    problems = await check_closes_only_that_connection(bad_request, caplog,
                                                       handler=CannedHandler(before_vote=refuse))
    assert len(problems) == 1
    assert "not served on this listener" in problems[0].getMessage()
    assert not problems[0].exc_info


async def test_a_response_in_the_wrong_version_is_a_handler_fault(caplog: pytest.LogCaptureFixture) -> None:
    class WrongVersion(CannedHandler):
        async def handle(self, request: DecodedRequest, conn: ConnectionInfo) -> Response | None:
            if request.api_key == ApiKey.VOTE and request.body.voter_id == 5:
                return Response(VoteResponse(), 0)
            return await super().handle(request, conn)

    bad_request = b"".join(
        encode_request(vote_request(5), 1, 0, "x"))
    problems = await check_closes_only_that_connection(bad_request, caplog, handler=WrongVersion())
    assert len(problems) == 1 and problems[0].levelno == logging.ERROR


async def test_a_client_that_disconnects_mid_frame_is_dropped_quietly(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger=WIRE_LOGGER)
    whole = b"".join(
        encode_request(vote_request(1), 1, 0, "x"))
    with trio.fail_after(TEST_TIMEOUT_S):
        async with running_server(CannedHandler()) as port:
            good = await RawConnection.open(port)
            for cut in (2, 10, len(whole) - 1):
                quitter = await RawConnection.open(port)
                await quitter.send(whole[:cut])
                await quitter.aclose()
            # An abortive close (RST) too.
            resetter = await RawConnection.open(port)
            await resetter.send(whole[:10])
            resetter.stream.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            await resetter.aclose()
            await assert_serves(good)
            late = await RawConnection.open(port)
            await assert_serves(late)
            await good.aclose()
            await late.aclose()
    assert [r for r in caplog.records if r.name == WIRE_LOGGER and r.levelno > logging.INFO] == []


async def test_the_listener_keeps_accepting_after_many_faulty_connections() -> None:
    with trio.fail_after(TEST_TIMEOUT_S):
        async with running_server(CannedHandler()) as port:
            for i in range(20):
                bad = await RawConnection.open(port)
                await bad.send(b"\xff" * (i + 1))
                await bad.aclose()
            conn = await RawConnection.open(port)
            await assert_serves(conn)
            await conn.aclose()


async def test_serve_listener_rejects_a_bad_in_flight_limit() -> None:
    from kraft.wire.server import serve_listener

    with pytest.raises(ValueError):
        await serve_listener(CannedHandler(), "127.0.0.1", 0, max_in_flight_per_connection=0)
