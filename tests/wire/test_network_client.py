"""PeerClient and ClientPool over real TCP sockets on 127.0.0.1, against
our own server and against scripted servers that answer with exactly the
bytes a test wants (an older Kafka, a broken peer, Kafka's own frames)."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
import trio
import trio.testing

from kraft.messages.generated.api_versions_response import ApiVersion, ApiVersionsResponse
from kraft.messages.generated.describe_quorum_request import DescribeQuorumRequest
from kraft.messages.generated.vote_request import VoteRequest
from kraft.messages.generated.vote_response import VoteResponse
from kraft.wire.api_versions import supported_versions
from kraft.wire.apis import ApiKey
from kraft.wire.network_client import (
    CLIENT_SOFTWARE_NAME,
    ClientPool,
    ConnectionFailed,
    NoCommonVersion,
    PeerClient,
    RequestTimedOut,
    reconnect_backoff_ms,
)
from kraft.wire.codec import decode_request, encode_response
from kraft.wire.errors import ErrorCode
from kraft.wire.server import CloseConnection, serve_listener
from tests.conftest import fixture_path
from tests.ports import free_port
from tests.wire.netutil import (
    CANNED_QUORUM,
    HOST,
    TEST_TIMEOUT_S,
    CannedHandler,
    echoed,
    reader_tasks,
    running_server,
    scripted_server,
    vote_echo,
    vote_request,
)


def describe_quorum(version: int) -> DescribeQuorumRequest:
    return DescribeQuorumRequest()


def unframed_response(body: Any, version: int, correlation_id: int) -> bytes:
    return b"".join(encode_response(body, version, correlation_id, framed=False))


# -- requests and versions ------------------------------------------------------


async def test_round_trip_after_an_api_versions_exchange() -> None:
    with trio.fail_after(TEST_TIMEOUT_S):
        handler = CannedHandler()
        async with running_server(handler) as port:
            client = PeerClient(HOST, port, client_id="test-client")
            assert client.api_versions is None
            version, body = await client.request(ApiKey.DESCRIBE_QUORUM, describe_quorum)
            assert (version, body) == (2, CANNED_QUORUM)
            assert client.api_versions == {18: (0, 4), 52: (0, 2), 55: (0, 2)}
            version, body = await client.request(ApiKey.VOTE, lambda v: vote_request(3, epoch=9))
            assert version == 2 and echoed(body) == (3, 9)
            await client.aclose()
        # One connection, opened with ApiVersions at our highest version.
        assert len(handler.connections) == 1
        assert handler.requests[0] == (ApiKey.API_VERSIONS, ApiKey.API_VERSIONS.max_version)


async def test_the_version_is_the_highest_both_sides_speak() -> None:
    ours = ApiKey.VOTE.max_version
    with trio.fail_after(TEST_TIMEOUT_S):
        handler = CannedHandler({ApiKey.API_VERSIONS: (0, 4), ApiKey.VOTE: (0, ours - 1),
                                 ApiKey.DESCRIBE_QUORUM: (0, 99)})
        async with running_server(handler) as port:
            client = PeerClient(HOST, port, client_id="test-client")
            built: list[int] = []

            def build(version: int) -> VoteRequest:
                built.append(version)
                return vote_request(1)

            assert (await client.request(ApiKey.VOTE, build))[0] == ours - 1  # theirs is lower
            assert (await client.request(ApiKey.DESCRIBE_QUORUM, describe_quorum))[0] == \
                ApiKey.DESCRIBE_QUORUM.max_version  # ours is lower
            assert (await client.request(ApiKey.VOTE, build, max_version=0))[0] == 0  # capped
            assert built == [ours - 1, 0]
            await client.aclose()
        assert (ApiKey.VOTE, ours - 1) in handler.requests and (ApiKey.VOTE, 0) in handler.requests


async def test_no_common_version_names_both_ranges_and_keeps_the_connection() -> None:
    with trio.fail_after(TEST_TIMEOUT_S):
        handler = CannedHandler({ApiKey.API_VERSIONS: (0, 4), ApiKey.VOTE: (50, 60),
                                 ApiKey.DESCRIBE_QUORUM: (0, 2)})
        async with running_server(handler) as port:
            client = PeerClient(HOST, port, client_id="test-client")
            with pytest.raises(NoCommonVersion) as caught:
                await client.request(ApiKey.VOTE, lambda v: vote_request(1))
            assert caught.value.ours == (0, ApiKey.VOTE.max_version)
            assert caught.value.theirs == (50, 60)
            with pytest.raises(NoCommonVersion) as caught:
                await client.request(ApiKey.FETCH_SNAPSHOT, lambda v: pytest.fail("must not build"))
            assert caught.value.theirs is None and "does not support" in str(caught.value)
            with pytest.raises(NoCommonVersion):
                await client.request(ApiKey.DESCRIBE_QUORUM, describe_quorum, max_version=-1)
            assert (await client.request(ApiKey.DESCRIBE_QUORUM, describe_quorum))[1] == CANNED_QUORUM
            await client.aclose()
        assert len(handler.connections) == 1


def older_kafka(highest_api_versions: int, *, lists_its_range: bool, seen: list[int]) -> Any:
    """A scripted server that speaks ApiVersions only up to
    ``highest_api_versions`` (as an older Kafka does) and Vote v0-v1.
    Pre-KIP-511 servers (``lists_its_range=False``) send no api keys with
    UNSUPPORTED_VERSION."""
    advertised = supported_versions([ApiKey.API_VERSIONS, ApiKey.VOTE])
    advertised[ApiKey.API_VERSIONS] = (0, highest_api_versions)
    advertised[ApiKey.VOTE] = (0, 1)

    def respond(api_key: int, version: int, correlation_id: int, payload: bytes) -> bytes | None:
        if api_key == ApiKey.API_VERSIONS:
            seen.append(version)
            if version > highest_api_versions:
                keys = [ApiVersion(api_key=18, min_version=0, max_version=highest_api_versions)] \
                    if lists_its_range else []
                body = ApiVersionsResponse(error_code=ErrorCode.UNSUPPORTED_VERSION, api_keys=keys)
                return unframed_response(body, 0, correlation_id)
            body = ApiVersionsResponse(api_keys=[ApiVersion(api_key=int(k), min_version=lo, max_version=hi)
                                                 for k, (lo, hi) in advertised.items()])
            return unframed_response(body, version, correlation_id)
        if api_key == ApiKey.VOTE:
            return unframed_response(vote_echo(decode_request(payload).body), version, correlation_id)
        return None

    return respond


@pytest.mark.parametrize(("lists_its_range", "retried_at"), [(True, 2), (False, 0)])
async def test_api_versions_falls_back_when_the_server_is_older(lists_its_range: bool, retried_at: int) -> None:
    """KIP-511: v4 first; on UNSUPPORTED_VERSION (a v0 body) again at the
    highest version the server listed for ApiVersions, or v0."""
    seen: list[int] = []
    with trio.fail_after(TEST_TIMEOUT_S):
        async with scripted_server(older_kafka(2, lists_its_range=lists_its_range, seen=seen)) as port:
            client = PeerClient(HOST, port, client_id="test-client")
            version, body = await client.request(ApiKey.VOTE, lambda v: vote_request(4))
            assert version == 1 and echoed(body) == (4, 1)
            assert client.api_versions is not None and client.api_versions[18] == (0, 2)
            await client.aclose()
    assert seen == [ApiKey.API_VERSIONS.max_version, retried_at]


async def test_api_versions_error_other_than_unsupported_version_fails_the_connection() -> None:
    def respond(api_key: int, version: int, correlation_id: int, payload: bytes) -> bytes | None:
        return unframed_response(ApiVersionsResponse(error_code=ErrorCode.INVALID_REQUEST), 0, correlation_id)

    with trio.fail_after(TEST_TIMEOUT_S):
        async with scripted_server(respond) as port:
            client = PeerClient(HOST, port, client_id="test-client")
            with pytest.raises(ConnectionFailed, match="INVALID_REQUEST"):
                await client.request(ApiKey.VOTE, lambda v: vote_request(1))
            assert not client.connected
            await client.aclose()


async def test_talks_to_kafkas_own_frames() -> None:
    """A scripted peer that replays what Kafka's controller sent (its
    ApiVersions v4 and Vote v1 responses, correlation ids patched): the
    client negotiates Vote v1 from Kafka's advertised ranges and decodes
    Kafka's answer."""
    path = fixture_path("wire", "kafka-java-frames.jsonl")
    frames = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def kafka_response(api: str) -> bytes:
        frame = next(f for f in frames if f["api"] == api and f["direction"] == "response")
        return bytes.fromhex(frame["frameHex"])[4:]

    sent: list[tuple[int, int, bytes]] = []

    def respond(api_key: int, version: int, correlation_id: int, payload: bytes) -> bytes | None:
        sent.append((api_key, version, payload))
        answer = kafka_response("API_VERSIONS" if api_key == ApiKey.API_VERSIONS else "VOTE")
        return correlation_id.to_bytes(4, "big", signed=True) + answer[4:]

    with trio.fail_after(TEST_TIMEOUT_S):
        async with scripted_server(respond) as port:
            client = PeerClient(HOST, port, client_id="raft-client-9")
            version, body = await client.request(ApiKey.VOTE, lambda v: vote_request(1))
            await client.aclose()
    kafka_vote = next(f for f in frames if f["api"] == "VOTE" and f["direction"] == "response")
    assert version == kafka_vote["apiVersion"] == 1
    assert isinstance(body, VoteResponse)
    assert body.topics[0].partitions[0].vote_granted == \
        kafka_vote["kafkaDecoded"]["body"]["topics"][0]["partitions"][0]["voteGranted"]
    assert client.api_versions is not None and client.api_versions[ApiKey.FETCH.value] == (0, 17)
    api_versions_request = decode_request(sent[0][2])
    assert api_versions_request.header.client_id == "raft-client-9"
    assert api_versions_request.body.client_software_name == CLIENT_SOFTWARE_NAME


# -- concurrency ----------------------------------------------------------------


async def test_many_concurrent_requests_share_one_connection_and_get_their_own_answers() -> None:
    count = 100
    results: dict[int, tuple[int, int]] = {}
    with trio.fail_after(TEST_TIMEOUT_S):
        handler = CannedHandler()
        async with running_server(handler) as port:
            client = PeerClient(HOST, port, client_id="test-client")

            async def ask(i: int) -> None:
                _, body = await client.request(ApiKey.VOTE, lambda v: vote_request(i, epoch=1000 + i))
                results[i] = echoed(body)

            async with trio.open_nursery() as nursery:
                for i in range(count):
                    nursery.start_soon(ask, i)
            await client.aclose()
    assert results == {i: (i, 1000 + i) for i in range(count)}
    assert len(handler.connections) == 1


async def test_concurrent_first_requests_open_a_single_connection() -> None:
    with trio.fail_after(TEST_TIMEOUT_S):
        handler = CannedHandler()
        async with running_server(handler) as port:
            client = PeerClient(HOST, port, client_id="test-client")
            async with trio.open_nursery() as nursery:
                for _ in range(10):
                    nursery.start_soon(client.request, ApiKey.DESCRIBE_QUORUM, describe_quorum)
            await client.aclose()
    assert len(handler.connections) == 1
    assert [r for r in handler.requests if r[0] == ApiKey.API_VERSIONS] == [(ApiKey.API_VERSIONS, 4)]


# -- failures ---------------------------------------------------------------------


async def test_request_timeout_closes_the_connection_and_fails_what_else_is_in_flight() -> None:
    held = trio.Event()

    async def hold_voter_1(request: VoteRequest) -> None:
        if request.voter_id == 1:
            held.set()
            await trio.sleep_forever()

    with trio.fail_after(TEST_TIMEOUT_S):
        handler = CannedHandler(before_vote=hold_voter_1)
        async with running_server(handler) as port:
            client = PeerClient(HOST, port, client_id="test-client", request_timeout_ms=5000)
            other_failure: list[BaseException] = []

            async def other_request() -> None:
                try:
                    await client.request(ApiKey.VOTE, lambda v: vote_request(1))
                except ConnectionFailed as e:
                    other_failure.append(e)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(other_request)
                await held.wait()
                with pytest.raises(RequestTimedOut) as caught:
                    await client.request(ApiKey.VOTE, lambda v: vote_request(1), timeout_ms=50)
            assert caught.value.api_key == ApiKey.VOTE and f"{HOST}:{port}" in str(caught.value)
            assert len(other_failure) == 1 and "timed out" in str(other_failure[0])
            # The next request reconnects.
            _, body = await client.request(ApiKey.VOTE, lambda v: vote_request(2))
            assert echoed(body)[0] == 2
            await client.aclose()
        assert len(handler.connections) == 2


async def test_connection_refused_is_connection_failed_with_the_address() -> None:
    port = free_port()
    with trio.fail_after(TEST_TIMEOUT_S):
        client = PeerClient(HOST, port, client_id="test-client", reconnect_backoff_ms=10,
                            reconnect_backoff_max_ms=20)
        for _ in range(3):  # each attempt after the backoff; none hangs
            with pytest.raises(ConnectionFailed) as caught:
                await client.request(ApiKey.VOTE, lambda v: vote_request(1))
            assert f"{HOST}:{port}" in str(caught.value)
        await client.aclose()


async def test_a_connection_to_itself_fails_as_a_refused_one() -> None:
    """Dialing a port nothing listens on from that same port connects the
    socket to itself (the kernel may pick it for a port in its ephemeral
    range); the client used to read its own ApiVersions request back and
    fail with "correlation id ... does not match". It is a refused
    connection, worded as one."""
    port = free_port()
    with trio.fail_after(TEST_TIMEOUT_S):
        for source_port in (port, 0):  # to itself, then plainly refused: the same words
            client = PeerClient(HOST, port, client_id="test-client", source_port=source_port)
            with pytest.raises(ConnectionFailed) as caught:
                await client.request(ApiKey.VOTE, lambda v: vote_request(1))
            assert caught.value.reason == f"connect failed: connection refused (nothing listens on {HOST}:{port})"
            await client.aclose()


async def test_a_request_inside_the_backoff_fails_fast_when_the_backoff_outlasts_its_timeout() -> None:
    port = free_port()
    with trio.fail_after(TEST_TIMEOUT_S):
        client = PeerClient(HOST, port, client_id="test-client", reconnect_backoff_ms=60_000,
                            reconnect_backoff_max_ms=60_000)
        with pytest.raises(ConnectionFailed, match="connect failed"):
            await client.request(ApiKey.VOTE, lambda v: vote_request(1))
        with pytest.raises(ConnectionFailed, match="reconnect backoff"):
            await client.request(ApiKey.VOTE, lambda v: vote_request(1), timeout_ms=1000)
        await client.aclose()


async def test_the_peer_closing_fails_the_requests_in_flight() -> None:
    async def refuse(request: VoteRequest) -> None:
        if request.voter_id == 13:
            raise CloseConnection("go away")
        await trio.sleep_forever()

    with trio.fail_after(TEST_TIMEOUT_S):
        async with running_server(CannedHandler(before_vote=refuse)) as port:
            client = PeerClient(HOST, port, client_id="test-client")
            failures: list[str] = []

            async def ask(voter_id: int) -> None:
                with pytest.raises(ConnectionFailed) as caught:
                    await client.request(ApiKey.VOTE, lambda v: vote_request(voter_id))
                failures.append(caught.value.reason)

            await client.request(ApiKey.DESCRIBE_QUORUM, describe_quorum)  # connected
            async with trio.open_nursery() as nursery:
                nursery.start_soon(ask, 1)
                await trio.testing.wait_all_tasks_blocked()
                nursery.start_soon(ask, 13)
            assert len(failures) == 2 and all("closed by the peer" in f for f in failures)
            await client.aclose()


def answer_votes_with(payload_for: Any) -> Any:
    advertised = ApiVersionsResponse(api_keys=[ApiVersion(api_key=18, min_version=0, max_version=4),
                                               ApiVersion(api_key=52, min_version=0, max_version=2)])

    def respond(api_key: int, version: int, correlation_id: int, payload: bytes) -> bytes | None:
        if api_key == ApiKey.API_VERSIONS:
            return unframed_response(advertised, version, correlation_id)
        return payload_for(decode_request(payload).body.voter_id, version, correlation_id)

    return respond


async def test_a_response_that_fails_to_decode_fails_every_request_in_flight() -> None:
    held: list[int] = []

    def payload_for(voter_id: int, version: int, correlation_id: int) -> bytes | None:
        # Hold voter 1's request until voter 2's is in flight too, then
        # answer voter 1's with garbage.
        if voter_id == 1:
            held.append(correlation_id)
            return None
        return held[0].to_bytes(4, "big") + b"\x00\xff\xff\xff"

    with trio.fail_after(TEST_TIMEOUT_S):
        async with scripted_server(answer_votes_with(payload_for)) as port:
            client = PeerClient(HOST, port, client_id="test-client")
            reasons: list[str] = []

            async def ask(voter_id: int) -> None:
                with pytest.raises(ConnectionFailed) as caught:
                    await client.request(ApiKey.VOTE, lambda v: vote_request(voter_id))
                reasons.append(caught.value.reason)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(ask, 1)
                await trio.testing.wait_all_tasks_blocked()
                nursery.start_soon(ask, 2)
            await client.aclose()
    assert len(reasons) == 2
    assert all("cannot decode Vote v2 response" in r for r in reasons)


async def test_a_response_out_of_order_breaks_the_connection() -> None:
    def payload_for(voter_id: int, version: int, correlation_id: int) -> bytes | None:
        return unframed_response(VoteResponse(), version, correlation_id + 1000)

    with trio.fail_after(TEST_TIMEOUT_S):
        async with scripted_server(answer_votes_with(payload_for)) as port:
            client = PeerClient(HOST, port, client_id="test-client")
            with pytest.raises(ConnectionFailed, match="correlation id"):
                await client.request(ApiKey.VOTE, lambda v: vote_request(1))
            assert not client.connected
            await client.aclose()


async def test_reconnects_after_the_server_restarts_on_the_same_port() -> None:
    with trio.fail_after(TEST_TIMEOUT_S):
        first = CannedHandler()
        async with running_server(first) as port:
            client = PeerClient(HOST, port, client_id="test-client", reconnect_backoff_ms=5,
                                reconnect_backoff_max_ms=20)
            await client.request(ApiKey.DESCRIBE_QUORUM, describe_quorum)
        second = CannedHandler()
        async with trio.open_nursery() as nursery:
            await nursery.start(serve_listener, second, HOST, port)
            # The old connection's end may or may not have been seen yet: a
            # bounded retry, as the raft layer retries.
            body = None
            for _ in range(50):
                try:
                    _, body = await client.request(ApiKey.DESCRIBE_QUORUM, describe_quorum)
                    break
                except ConnectionFailed:
                    continue
            assert body == CANNED_QUORUM
            nursery.cancel_scope.cancel()
        await client.aclose()
    assert len(second.connections) == 1


# -- lifecycle --------------------------------------------------------------------


async def test_aclose_fails_requests_in_flight_and_leaves_no_task_behind() -> None:
    held = trio.Event()

    async def hold(request: VoteRequest) -> None:
        held.set()
        await trio.sleep_forever()

    with trio.fail_after(TEST_TIMEOUT_S):
        async with running_server(CannedHandler(before_vote=hold)) as port:
            client = PeerClient(HOST, port, client_id="test-client")
            await client.request(ApiKey.DESCRIBE_QUORUM, describe_quorum)
            assert len(reader_tasks()) == 1
            failed: list[ConnectionFailed] = []

            async def ask() -> None:
                with pytest.raises(ConnectionFailed) as caught:
                    await client.request(ApiKey.VOTE, lambda v: vote_request(1))
                failed.append(caught.value)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(ask)
                await held.wait()
                await client.aclose()
            assert len(failed) == 1
            assert reader_tasks() == []
            with pytest.raises(ConnectionFailed, match="client closed"):
                await client.request(ApiKey.DESCRIBE_QUORUM, describe_quorum)


async def test_a_cancelled_caller_does_not_disturb_the_connection() -> None:
    gate = trio.Event()
    arrived = trio.Event()

    async def wait_for_gate(request: VoteRequest) -> None:
        if request.voter_id == 1:
            arrived.set()
            await gate.wait()

    with trio.fail_after(TEST_TIMEOUT_S):
        handler = CannedHandler(before_vote=wait_for_gate)
        async with running_server(handler) as port:
            client = PeerClient(HOST, port, client_id="test-client")
            await client.request(ApiKey.DESCRIBE_QUORUM, describe_quorum)
            async with trio.open_nursery() as nursery:
                # Cancelled from outside (not a request timeout) while in flight.
                caller = trio.CancelScope()

                async def ask() -> None:
                    with caller:
                        await client.request(ApiKey.VOTE, lambda v: vote_request(1), timeout_ms=60_000)

                nursery.start_soon(ask)
                await arrived.wait()
                caller.cancel()
            assert caller.cancelled_caught
            gate.set()
            # The abandoned answer arrives first and is dropped; ours follows.
            _, body = await client.request(ApiKey.VOTE, lambda v: vote_request(2))
            assert echoed(body)[0] == 2
            assert client.connected
            await client.aclose()
        assert len(handler.connections) == 1


async def test_client_pool_reuses_and_replaces_clients() -> None:
    with trio.fail_after(TEST_TIMEOUT_S):
        async with running_server(CannedHandler()) as port_a, running_server(CannedHandler()) as port_b:
            pool = ClientPool(client_id="pool-test", request_timeout_ms=3000)
            a = pool.get(1, HOST, port_a)
            assert pool.get(1, HOST, port_a) is a
            assert a.request_timeout_ms == 3000 and a.client_id == "pool-test"
            await a.request(ApiKey.DESCRIBE_QUORUM, describe_quorum)
            moved = pool.get(1, HOST, port_b)  # node 1 moved to another address
            assert moved is not a and a.closed
            assert (await moved.request(ApiKey.DESCRIBE_QUORUM, describe_quorum))[1] == CANNED_QUORUM
            other = pool.get(2, HOST, port_a)
            await other.request(ApiKey.DESCRIBE_QUORUM, describe_quorum)
            await pool.aclose()
            assert moved.closed and other.closed
            assert reader_tasks() == []


# -- backoff ------------------------------------------------------------------------


def test_reconnect_backoff_doubles_with_jitter_up_to_the_max() -> None:
    """Kafka's reconnect.backoff.ms semantics: base * 2^failures, +/-20 %
    jitter, never above reconnect.backoff.max.ms."""
    rng = random.Random(7)
    for failures, nominal in enumerate([50, 100, 200, 400, 800]):
        for _ in range(50):
            value = reconnect_backoff_ms(failures, 50, 1000, rng)
            assert nominal * 0.8 <= value <= nominal * 1.2
    for failures in (5, 6, 30):
        for _ in range(50):
            value = reconnect_backoff_ms(failures, 50, 1000, rng)
            assert 800 <= value <= 1000
    assert reconnect_backoff_ms(3, 50, 50, rng) == 50  # max <= base: constant, no jitter
    assert len({reconnect_backoff_ms(1, 50, 1000, rng) for _ in range(20)}) > 1  # jittered
