"""Helpers for the real-socket tests of the wire layer: a running server,
a raw client connection that sends whatever bytes a test wants, a
scripted server that answers with whatever bytes a test wants, and a
canned request handler."""

from __future__ import annotations

import struct
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import trio

from kraft.messages.generated.describe_quorum_response import DescribeQuorumResponse
from kraft.messages.generated.describe_quorum_response import PartitionData as QuorumPartition
from kraft.messages.generated.describe_quorum_response import TopicData as QuorumTopic
from kraft.messages.generated.vote_request import PartitionData as VotePartitionRequest
from kraft.messages.generated.vote_request import TopicData as VoteTopicRequest
from kraft.messages.generated.vote_request import VoteRequest
from kraft.messages.generated.vote_response import PartitionData as VotePartition
from kraft.messages.generated.vote_response import TopicData as VoteTopic
from kraft.messages.generated.vote_response import VoteResponse
from kraft.wire.api_versions import VersionRange, api_versions_response, response_version, supported_versions
from kraft.wire.apis import ApiKey
from kraft.wire.codec import DecodedRequest, encode_request
from kraft.wire.framing import FrameReader
from kraft.wire.headers import peek_request_header
from kraft.wire.server import ConnectionInfo, Response, serve_listener

#: Every test's bound: a hang fails the test instead of the run.
TEST_TIMEOUT_S = 10
HOST = "127.0.0.1"
METADATA_TOPIC = "__cluster_metadata"


def vote_request(voter_id: int, epoch: int = 1) -> VoteRequest:
    return VoteRequest(cluster_id="test-cluster", voter_id=voter_id, topics=[
        VoteTopicRequest(topic_name=METADATA_TOPIC, partitions=[
            VotePartitionRequest(partition_index=0, replica_epoch=epoch, replica_id=voter_id)])])


def vote_echo(request: VoteRequest) -> VoteResponse:
    """A Vote answer that carries the request's voter id and epoch back, so
    a test can tell which request a response belongs to."""
    partition = request.topics[0].partitions[0]
    return VoteResponse(topics=[VoteTopic(topic_name=METADATA_TOPIC, partitions=[
        VotePartition(partition_index=0, leader_id=request.voter_id, leader_epoch=partition.replica_epoch,
                      vote_granted=True)])])


def echoed(response: VoteResponse) -> tuple[int, int]:
    """(voter id, epoch) of the request a :func:`vote_echo` answer was for."""
    partition = response.topics[0].partitions[0]
    return partition.leader_id, partition.leader_epoch


CANNED_QUORUM = DescribeQuorumResponse(topics=[QuorumTopic(topic_name=METADATA_TOPIC, partitions=[
    QuorumPartition(partition_index=0, leader_id=1, leader_epoch=7, high_watermark=42)])])


class CannedHandler:
    """Answers ApiVersions by Kafka's rules (advertising ``supported``),
    DescribeQuorum with :data:`CANNED_QUORUM` and Vote with
    :func:`vote_echo`; ``before_vote`` runs first for each Vote (a test
    uses it to hold or fail requests)."""

    def __init__(self, supported: dict[ApiKey | int, VersionRange] | None = None,
                 before_vote: Callable[[VoteRequest], Awaitable[None]] | None = None) -> None:
        self.supported = supported if supported is not None else dict(
            supported_versions([ApiKey.API_VERSIONS, ApiKey.VOTE, ApiKey.DESCRIBE_QUORUM]))
        self.before_vote = before_vote
        self.connections: set[int] = set()
        self.requests: list[tuple[ApiKey, int]] = []

    async def handle(self, request: DecodedRequest, conn: ConnectionInfo) -> Response | None:
        self.connections.add(conn.connection_id)
        self.requests.append((request.api_key, request.api_version))
        version = request.api_version
        if request.api_key == ApiKey.API_VERSIONS:
            body = api_versions_response(version, self.supported, request=request.body)
            return Response(body, response_version(version))
        if request.api_key == ApiKey.DESCRIBE_QUORUM:
            return Response(CANNED_QUORUM, version)
        if request.api_key == ApiKey.VOTE:
            if self.before_vote is not None:
                await self.before_vote(request.body)
            return Response(vote_echo(request.body), version)
        raise AssertionError(f"unexpected {request.api_key.name}")


@asynccontextmanager
async def running_server(handler: Any, **options: Any) -> AsyncIterator[int]:
    """serve_listener on 127.0.0.1, a free port; yields the port."""
    async with trio.open_nursery() as nursery:
        port = await nursery.start(partial(serve_listener, handler, HOST, 0, **options))
        yield port
        nursery.cancel_scope.cancel()


class RawConnection:
    """A client socket that sends exactly the bytes a test gives it."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.frames = FrameReader()
        self.next_correlation_id = 0

    @classmethod
    async def open(cls, port: int) -> RawConnection:
        return cls(await trio.open_tcp_stream(HOST, port))

    async def send(self, data: bytes) -> None:
        await self.stream.send_all(data)

    async def send_request(self, body: Any, version: int, correlation_id: int | None = None) -> int:
        if correlation_id is None:
            correlation_id = self.next_correlation_id
            self.next_correlation_id += 1
        await self.send(b"".join(encode_request(body, version, correlation_id, "raw-test")))
        return correlation_id

    async def read_frame(self) -> bytes:
        while (frame := self.frames.next_frame()) is None:
            data = await self.stream.receive_some(65536)
            if not data:
                raise EOFError("connection closed before a whole frame")
            self.frames.feed(data)
        return frame

    async def assert_closed_by_peer(self) -> None:
        """The server closed this connection (EOF, or a reset when it
        closed with our bytes unread) without sending anything first."""
        try:
            data = await self.stream.receive_some(65536)
        except trio.BrokenResourceError:
            return
        assert data == b"", f"expected the server to close, got {data[:40]!r}"

    async def aclose(self) -> None:
        await self.stream.aclose()


def frame_of(payload: bytes) -> bytes:
    """``payload`` behind its int32 size prefix."""
    return struct.pack(">i", len(payload)) + payload


def correlation_id_of(response_frame: bytes) -> int:
    return int(struct.unpack_from(">i", response_frame)[0])


@asynccontextmanager
async def scripted_server(respond: Callable[[int, int, int, bytes], bytes | None]) -> AsyncIterator[int]:
    """A bare server for client tests: for each request frame it calls
    ``respond(api_key, api_version, correlation_id, payload)`` and sends the
    returned payload framed (None sends nothing). Yields the port."""

    async def serve(stream: trio.SocketStream) -> None:
        frames = FrameReader()
        while True:
            data = await stream.receive_some(65536)
            if not data:
                return
            frames.feed(data)
            for payload in frames:
                api_key, api_version, correlation_id = peek_request_header(payload)
                answer = respond(api_key, api_version, correlation_id, payload)
                if answer is not None:
                    await stream.send_all(frame_of(answer))

    async def serve_quietly(stream: trio.SocketStream) -> None:
        try:
            await serve(stream)
        except trio.BrokenResourceError:
            pass

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(partial(trio.serve_tcp, serve_quietly, 0, host=HOST))
        yield int(listeners[0].socket.getsockname()[1])
        nursery.cancel_scope.cancel()


def reader_tasks() -> list[trio.lowlevel.Task]:
    """The PeerClient reader tasks alive in this trio run."""
    found: list[trio.lowlevel.Task] = []

    def walk(task: trio.lowlevel.Task) -> None:
        if str(task.name).startswith("kraft.wire reader"):
            found.append(task)
        for nursery in task.child_nurseries:
            for child in nursery.child_tasks:
                walk(child)

    root = trio.lowlevel.current_root_task()
    assert root is not None
    walk(root)
    return found


__all__ = [
    "TEST_TIMEOUT_S",
    "HOST",
    "CANNED_QUORUM",
    "CannedHandler",
    "RawConnection",
    "running_server",
    "scripted_server",
    "frame_of",
    "correlation_id_of",
    "vote_request",
    "vote_echo",
    "echoed",
    "reader_tasks",
]
