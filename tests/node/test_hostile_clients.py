"""Hostile clients against a live SASL_SSL quorum (three real node
processes), for a minute, over real sockets from another loopback address
(127.0.0.2 and 127.0.0.3, so the per-address limits bite the attacker and
not the voters' own connections on 127.0.0.1):

garbage before the TLS handshake, a plaintext client on the TLS port,
SaslAuthenticate before SaslHandshake, a wrong password, a SCRAM nonce
mismatch, a 2 GiB length prefix, ten thousand idle connections, one byte
per second, an authenticated-then-silent client, and random byte streams
(before and after TLS).

Afterwards the quorum still commits, every refused connection was refused
with a log line, no more than ``max.connections.per.ip`` connections from
the attacker were ever open at once, and the nodes' peak memory (VmHWM)
stayed bounded; the peak is printed."""

from __future__ import annotations

import os
import random
import re
import ssl
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from kraft.messages.generated.api_versions_request import ApiVersionsRequest
from kraft.messages.generated import describe_quorum_request as dq_req
from kraft.messages.generated.sasl_authenticate_request import SaslAuthenticateRequest
from kraft.messages.generated.sasl_handshake_request import SaslHandshakeRequest
from kraft.wire.apis import ApiKey
from kraft.wire.network_client import PeerClient
from kraft.wire.codec import decode_response, encode_request
from kraft.wire.errors import ErrorCode
from kraft.wire.framing import FrameReader
from kraft.wire.security import client_security_from_properties
from tests.harness.poll import until_async
from tests.harness.processes import ProcessCluster
from tests.node.test_secure_cluster import (  # noqa: F401 - certs: the module's fixture, shared
    ACCOUNTS,
    SCRAM_FORMAT_ARGS,
    certs,
    sasl_client_props,
    sasl_ssl_properties,
    start_cluster,
)
from tests.wire.certs import Certs

pytestmark = pytest.mark.slow

ATTACKER = "127.0.0.2"
#: The idle flood comes from its own address: it holds that address's
#: connection quota, which would otherwise also refuse the other attacks.
FLOODER = "127.0.0.3"
DURATION_S = 60.0
PER_IP = 40
IDLE_MS = 3000
RECEIVE_TIMEOUT_MS = 2000
MAX_REQUEST = 1024 * 1024
FLOOD = 10_000
FLOOD_S = 15.0
#: Peak resident memory a node may reach during the attack.
MEMORY_BOUND_MB = 300


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, certs: Certs) -> Iterator[ProcessCluster]:
    root = tmp_path_factory.mktemp("hostile")
    extra = {
        **sasl_ssl_properties(certs),
        "max.connections.per.ip": str(PER_IP),
        "max.connections": "1000",
        "connections.max.idle.ms": str(IDLE_MS),
        "kraft.socket.request.receive.timeout.ms": str(RECEIVE_TIMEOUT_MS),
        "socket.request.max.bytes": str(MAX_REQUEST),
    }
    c = start_cluster(root, extra, SCRAM_FORMAT_ARGS)
    try:
        yield c
    finally:
        c.stop()


_BROKEN = (trio.BrokenResourceError, trio.ClosedResourceError, OSError)


class CutBeforeTheAttack(Exception):
    """The server closed the connection before it read the attack's first
    request: nothing of the attack was delivered, so there is no outcome to
    check, and the attack is made again."""


def client_context(certs: Certs) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(certs.truststore))
    return context


class Attacker:
    def __init__(self, cluster: ProcessCluster, certs: Certs, port: int) -> None:
        self.cluster = cluster
        self.port = port
        self.context = client_context(certs)
        self.rng = random.Random(1234)
        self.counts: dict[str, int] = {}
        self.open_now = 0
        self.open_peak = 0

    def count(self, what: str) -> None:
        self.counts[what] = self.counts.get(what, 0) + 1

    async def connect(self, source: str = ATTACKER) -> trio.SocketStream:
        return await trio.open_tcp_stream("127.0.0.1", self.port, local_address=source)

    async def tls_with(self, first: bytes) -> trio.SSLStream[trio.SocketStream]:
        """A TLS connection with the attack's first bytes sent.

        The node bounds a TLS handshake by
        ``kraft.socket.request.receive.timeout.ms`` (RECEIVE_TIMEOUT_MS, short
        here for the slow-loris attack), and on a loaded machine that bound
        can expire. Usually the handshake then fails here; but in TLS 1.3
        the client's handshake is done once it has sent its Finished,
        before the server has read it, so the server may close after that:
        the kernel answers the Finished with a reset, and this first write
        fails (EPIPE). Either way nothing of the attack reached the node:
        :class:`CutBeforeTheAttack`, not a failure -- every later write or
        read failure still is one."""
        stream = trio.SSLStream(await self.connect(), self.context, server_hostname="127.0.0.1")
        try:
            await stream.do_handshake()
            await stream.send_all(first)
        except _BROKEN as e:
            await trio.aclose_forcefully(stream)
            raise CutBeforeTheAttack(repr(e)) from e
        return stream

    @staticmethod
    def frame(body: object, version: int, correlation_id: int = 1) -> bytes:
        return b"".join(encode_request(body, version, correlation_id, "hostile"))

    @classmethod
    async def request(cls, stream: trio.abc.Stream, body: object, version: int, correlation_id: int = 1) -> None:
        await stream.send_all(cls.frame(body, version, correlation_id))

    @staticmethod
    async def response(stream: trio.abc.Stream, api: ApiKey, version: int) -> object:
        frames = FrameReader()
        while (frame := frames.next_frame()) is None:
            data = await stream.receive_some(65536)
            if not data:
                raise EOFError
            frames.feed(data)
        return decode_response(frame, api, version).body

    @staticmethod
    async def closed_without_answer(stream: trio.abc.Stream) -> bool:
        """Read until the server closes (EOF or a reset): True when it sent
        nothing before closing (no answer, Kafka's InvalidReceiveException)."""
        answered = b""
        try:
            while data := await stream.receive_some(65536):
                answered += data
        except _BROKEN:
            pass
        assert not answered, f"the server answered {answered[:64]!r} before closing"
        return True

    @staticmethod
    async def closed_by_server(stream: trio.abc.Stream) -> bool:
        """Read until EOF (True) -- anything else the server sends first is
        skipped; a reset counts as closed."""
        try:
            while await stream.receive_some(65536):
                pass
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass
        return True

    # ------------------------------------------------------------ the attacks

    async def garbage_before_tls(self) -> None:
        stream = await self.connect()
        await stream.send_all(self.rng.randbytes(self.rng.randint(1, 4096)))
        assert await self.closed_by_server(stream)
        await stream.aclose()

    async def plaintext_on_tls_port(self) -> None:
        stream = await self.connect()
        await self.request(stream, ApiVersionsRequest(client_software_name="x", client_software_version="1"), 3)
        assert await self.closed_by_server(stream)
        await stream.aclose()

    async def authenticate_before_handshake(self) -> None:
        stream = await self.tls_with(self.frame(SaslAuthenticateRequest(auth_bytes=b"n,,n=admin,r=abc"), 2))
        answer = await self.response(stream, ApiKey.SASL_AUTHENTICATE, 2)
        assert answer.error_code == ErrorCode.ILLEGAL_SASL_STATE  # type: ignore[attr-defined]
        assert await self.closed_by_server(stream)
        await trio.aclose_forcefully(stream)

    async def _scram_first(self, nonce: str) -> tuple[trio.SSLStream[trio.SocketStream], bytes]:
        stream = await self.tls_with(self.frame(SaslHandshakeRequest(mechanism="SCRAM-SHA-512"), 1, 1))
        handshake = await self.response(stream, ApiKey.SASL_HANDSHAKE, 1)
        assert handshake.error_code == ErrorCode.NONE  # type: ignore[attr-defined]
        await self.request(stream, SaslAuthenticateRequest(auth_bytes=f"n,,n=admin,r={nonce}".encode()), 2, 2)
        first = await self.response(stream, ApiKey.SASL_AUTHENTICATE, 2)
        assert first.error_code == ErrorCode.NONE  # type: ignore[attr-defined]
        return stream, bytes(first.auth_bytes)  # type: ignore[attr-defined]

    async def wrong_password(self) -> None:
        from kraft.wire.scram import ScramClient, ScramMechanism

        client = ScramClient(ScramMechanism.SCRAM_SHA_512, "admin", "wrong-password")
        nonce = client.first().decode().rsplit("r=", 1)[1]
        stream, server_first = await self._scram_first(nonce)
        await self.request(stream, SaslAuthenticateRequest(auth_bytes=client.final(server_first)), 2, 3)
        answer = await self.response(stream, ApiKey.SASL_AUTHENTICATE, 2)
        assert answer.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED  # type: ignore[attr-defined]
        assert await self.closed_by_server(stream)
        await trio.aclose_forcefully(stream)

    async def nonce_mismatch(self) -> None:
        stream, _ = await self._scram_first("clientnonce")
        await self.request(stream, SaslAuthenticateRequest(auth_bytes=b"c=biws,r=clientnonceFORGED,p=AAAA"), 2, 3)
        answer = await self.response(stream, ApiKey.SASL_AUTHENTICATE, 2)
        assert answer.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED  # type: ignore[attr-defined]
        assert await self.closed_by_server(stream)
        await trio.aclose_forcefully(stream)

    async def huge_length_prefix(self) -> None:
        # Kafka's NetworkReceive throws InvalidReceiveException on the size
        # prefix and the connection is closed without an answer.
        stream = await self.tls_with(struct.pack(">i", 0x7FFF_FFFF) + b"\x00" * 16)
        assert await self.closed_without_answer(stream)
        await trio.aclose_forcefully(stream)

    async def one_byte_per_second(self) -> None:
        """Slow loris: a request trickled one byte a second, the whole frame
        this time, so a node without ``kraft.socket.request.receive.timeout.ms``
        would end up reading it and answering. The node must instead close
        the connection while the frame is incomplete, without an answer
        (its "request not received within" line is checked after the run,
        and the quorum committing throughout shows it kept serving others).
        Nothing is timed here: the outcome is what the node sent and when,
        in bytes of the request, it hung up."""
        frame = b"".join(encode_request(ApiVersionsRequest(client_software_name="slow", client_software_version="1"),
                                        3, 1, "slow"))
        stream = await self.tls_with(frame[:1])
        delivered = 1  # bytes of the frame handed to the connection

        async def trickle() -> None:
            nonlocal delivered
            try:
                for byte in frame[1:]:
                    await trio.sleep(1)
                    await stream.send_all(bytes([byte]))
                    delivered += 1
            except _BROKEN:
                pass  # the node closed the connection under us

        answered = b""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(trickle)
            try:
                while data := await stream.receive_some(65536):
                    answered += data
            except _BROKEN:
                pass  # a reset: closed as well
            nursery.cancel_scope.cancel()  # closed: stop trickling
        assert not answered, f"the node answered a request trickled over {delivered} s: {answered[:64]!r}"
        assert delivered < len(frame), "the node let the whole trickled frame in before closing"
        await trio.aclose_forcefully(stream)

    async def idle_after_api_versions(self) -> None:
        """A client that completes TLS and one request, then says nothing:
        closed at connections.max.idle.ms. (The idle flood's bare TCP
        connections never get that far on a TLS listener: the handshake
        timeout closes them first.)"""
        stream = await self.tls_with(
            self.frame(ApiVersionsRequest(client_software_name="idle", client_software_version="1"), 3))
        await self.response(stream, ApiKey.API_VERSIONS, 3)
        assert await self.closed_by_server(stream)
        await trio.aclose_forcefully(stream)

    async def random_after_tls(self) -> None:
        stream = await self.tls_with(self.rng.randbytes(self.rng.randint(1, 2048)))
        try:
            for _ in range(self.rng.randint(0, 19)):
                await stream.send_all(self.rng.randbytes(self.rng.randint(1, 2048)))
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass
        with trio.move_on_after(RECEIVE_TIMEOUT_MS / 1000 + IDLE_MS / 1000 + 5):
            assert await self.closed_by_server(stream)
        await trio.aclose_forcefully(stream)

    async def idle_flood(self) -> None:
        """FLOOD connections held open: the node admits at most PER_IP of
        them and closes the rest at once; the admitted ones go at the idle
        timeout."""
        streams: list[trio.SocketStream] = []
        try:
            # At most FLOOD_S of connecting: on a loaded machine FLOOD
            # connects take longer than the attack's 30 s bound (the node
            # accepts slowly and the kernel's queue makes connects wait).
            with trio.move_on_after(FLOOD_S):
                for _ in range(FLOOD):
                    try:
                        streams.append(await self.connect(FLOODER))
                    except OSError:
                        self.count("flood connect failed")
            await trio.sleep(1)
        finally:
            for s in streams:
                await trio.aclose_forcefully(s)


def node_connections_from(pid: int, address: str) -> set[str]:
    """The socket inodes of TCP connections the node process holds open
    whose remote end is ``address`` (its fds matched against
    /proc/net/tcp). Connections still in the kernel's accept queue are not
    the node's and are not listed; one being refused is, for the moment
    between its accept and its close."""
    inodes = set()
    fd_dir = Path(f"/proc/{pid}/fd")
    for fd in fd_dir.iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    remote = "".join(f"{int(part):02X}" for part in reversed(address.split(".")))
    held = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[2].startswith(remote + ":") and fields[9] in inodes:
            held.add(fields[9])
    return held


def node_memory_kb(pid: int) -> dict[str, int]:
    text = Path(f"/proc/{pid}/status").read_text()
    return {k: int(v) for k, v in re.findall(r"^(VmHWM|VmRSS):\s+(\d+) kB", text, re.M)}


async def high_watermark(cluster: ProcessCluster, certs: Certs) -> int:
    security = client_security_from_properties(sasl_client_props(certs, "admin", ACCOUNTS["admin"]))
    best = -1
    for port in cluster.ports.values():
        client = PeerClient("127.0.0.1", port, client_id="hostile-check", security=security, request_timeout_ms=5000)
        try:
            _, body = await client.request(ApiKey.DESCRIBE_QUORUM, lambda v: dq_req.DescribeQuorumRequest(
                topics=[dq_req.TopicData(topic_name="__cluster_metadata",
                                         partitions=[dq_req.PartitionData(partition_index=0)])]))
            partition = body.topics[0].partitions[0] if body.topics else None
            if partition is not None and partition.error_code == 0:
                best = max(best, partition.high_watermark)
        except Exception as e:  # noqa: BLE001 - a node that cannot answer now
            print(f"DescribeQuorum to {port} failed: {e!r}")
        finally:
            await client.aclose()
    return best


async def test_hostile_clients_for_a_minute_leave_the_quorum_committing(cluster: ProcessCluster, certs: Certs) -> None:
    async def committed() -> int | None:
        hwm = await high_watermark(cluster, certs)
        return hwm if hwm > 0 else None

    before = await until_async("the quorum to commit", committed, timeout_s=60, interval_s=0.5)
    target = cluster.ports[1]
    attacker = Attacker(cluster, certs, target)
    attacks = [attacker.garbage_before_tls, attacker.plaintext_on_tls_port, attacker.authenticate_before_handshake,
               attacker.wrong_password, attacker.nonce_mismatch, attacker.huge_length_prefix,
               attacker.random_after_tls, attacker.idle_after_api_versions]
    peak_kb = {n: 0 for n in cluster.nodes}
    failures: list[str] = []

    async def loop(attack, until: float, bound_s: float = 30) -> None:  # type: ignore[no-untyped-def]
        while trio.current_time() < until:
            try:
                with trio.fail_after(bound_s):
                    await attack()
                attacker.count(attack.__name__)
            except CutBeforeTheAttack:
                attacker.count(f"{attack.__name__} cut before its request")
            except Exception as e:  # noqa: BLE001 - collected and reported below
                failures.append(f"{attack.__name__}: {e!r}")

    async def sample(until: float) -> None:
        target_proc = cluster.nodes[1].proc
        assert target_proc is not None
        previous: set[str] = set()
        while trio.current_time() < until:
            for n, node in cluster.nodes.items():
                assert node.proc is not None and node.alive, f"node {n} died"
                peak_kb[n] = max(peak_kb[n], node_memory_kb(node.proc.pid)["VmHWM"])
            # Held across two samples 0.3 s apart: admitted connections (a
            # refused one is closed within moments of its accept).
            # In a thread: with the flood's thousands of sockets, reading
            # /proc takes long enough under load to starve the attacks.
            held = await trio.to_thread.run_sync(node_connections_from, target_proc.pid, FLOODER)
            attacker.open_peak = max(attacker.open_peak, len(held & previous))
            previous = held
            await trio.sleep(0.3)

    until = trio.current_time() + DURATION_S
    async with trio.open_nursery() as nursery:
        nursery.start_soon(sample, until)
        for attack in attacks:
            nursery.start_soon(loop, attack, until)
        nursery.start_soon(loop, attacker.one_byte_per_second, until)
        # The flood's bound covers its connecting (FLOOD_S) and closing up
        # to FLOOD sockets, which on a loaded machine is most of 30 s alone.
        nursery.start_soon(loop, attacker.idle_flood, until - 15, FLOOD_S + 45)

    after = await high_watermark(cluster, certs)
    logs = {n: node.output() for n, node in cluster.nodes.items()}
    print(f"\nhostile suite: attacks completed {attacker.counts}; attacker connections open at once "
          f"(peak held by the node) {attacker.open_peak}; node peak RSS (VmHWM) "
          + ", ".join(f"node {n}: {kb / 1024:.1f} MiB" for n, kb in peak_kb.items())
          + f"; high watermark {before} -> {after}")
    assert not failures, "\n".join(failures[:20])
    assert 0 < attacker.open_peak <= PER_IP
    assert after > before, "the quorum stopped committing"
    for name in ("garbage_before_tls", "plaintext_on_tls_port", "authenticate_before_handshake", "wrong_password",
                 "nonce_mismatch", "huge_length_prefix", "one_byte_per_second", "idle_flood", "random_after_tls",
                 "idle_after_api_versions"):
        assert attacker.counts.get(name, 0) > 0, f"{name} never completed"
    target_log = logs[1]
    assert f"Rejected connection from {FLOODER}, address already has the configured maximum of {PER_IP}" \
        in target_log
    assert "TLS handshake failed" in target_log
    assert "SaslAuthenticate in state handshake" in target_log
    assert "authentication failed for user 'admin'" in target_log
    assert "invalid client nonce" in target_log
    assert "Invalid receive (size = 2147483647 larger than" in target_log
    assert f"request not received within {RECEIVE_TIMEOUT_MS} ms" in target_log
    assert f"idle for {IDLE_MS} ms" in target_log
    for n, kb in peak_kb.items():
        assert kb < MEMORY_BOUND_MB * 1024, f"node {n} peaked at {kb / 1024:.0f} MiB"
    # Every node is still running and nothing crashed a listener.
    for n, node in cluster.nodes.items():
        assert node.alive, f"node {n} died"
        assert "Traceback" not in logs[n], logs[n][-4000:]
