"""The calling side: one outbound connection per peer node, as Kafka's
``NetworkClient`` keeps one per node (hence the name). The raft driver's
network channel and the admin client (:mod:`kraft.admin_client`) both send
through it. It was ``kraft.wire.client`` until issue 45.

:class:`PeerClient` connects on first use, opens with an ApiVersions
exchange (the highest version we speak; on ``UNSUPPORTED_VERSION`` again at
the highest version the peer listed for ApiVersions, or v0 -- KIP-511, as
Kafka's client does), and then sends each request at the highest version
both sides speak. Several requests may be in flight on the connection at
once: writes are serialised by a lock, and one reader task per connection
hands each response to its caller. Responses must come back in request
order with matching correlation ids (Kafka checks the same: a mismatch is
a broken connection).

Failure semantics follow Kafka's client: a request that times out, a
response that cannot be decoded, or the peer going away closes the
connection and fails every request in flight on it; the next request
reconnects once the reconnect backoff has passed (``reconnect.backoff.ms``
doubling per consecutive failed attempt up to ``reconnect.backoff.max.ms``,
+/-20 % jitter, measured from the start of the last attempt, reset once a
connection is ready).

The reader runs as a trio system task (the client has no nursery of its
own to offer); it never raises, and :meth:`PeerClient.aclose` ends it and
waits for it, so nothing outlives the client.
"""

from __future__ import annotations

import logging
import math
import random
from collections import deque
from collections.abc import Callable
from typing import Any

import trio

from kraft.messages.errors import DecodeError, KraftProtocolError
from kraft.messages.generated.api_versions_request import ApiVersionsRequest
from kraft.messages.generated.api_versions_response import ApiVersionsResponse
from kraft.messages.generated.sasl_authenticate_request import SaslAuthenticateRequest
from kraft.messages.generated.sasl_handshake_request import SaslHandshakeRequest
from kraft.wire.addresses import format_address
from kraft.wire.api_versions import VersionRange, advertised_versions, usable_version_range
from kraft.wire.apis import ApiKey
from kraft.wire.client_software import CLIENT_SOFTWARE_NAME, CLIENT_SOFTWARE_VERSION
from kraft.wire.codec import decode_response, encode_request
from kraft.wire.errors import ErrorCode, FrameSizeError
from kraft.wire.framing import DEFAULT_MAX_FRAME_SIZE, FrameReader
from kraft.wire.sasl import SaslClient, SaslClientError
from kraft.wire.security import ClientSecurity
from kraft.wire.tcp_connect import open_tcp_stream
from kraft.wire.tls import close_quietly

__all__ = [
    "PeerClientError",
    "ConnectionFailed",
    "AuthenticationFailed",
    "RequestTimedOut",
    "NoCommonVersion",
    "PeerClient",
    "ClientPool",
    "reconnect_backoff_ms",
    "CLIENT_SOFTWARE_NAME",
    "CLIENT_SOFTWARE_VERSION",
]

log = logging.getLogger("kraft.wire")

# Kafka's reconnect backoff: ExponentialBackoff(base, 2, max, jitter 0.2).
_BACKOFF_MULTIPLIER = 2
_BACKOFF_JITTER = 0.2
_INT32_MAX = (1 << 31) - 1
_READ_SIZE = 64 * 1024
_DISCONNECTED = (trio.BrokenResourceError, trio.ClosedResourceError, OSError)


class PeerClientError(Exception):
    """Base of the client's errors; ``host``/``port`` name the peer."""

    def __init__(self, host: str, port: int, message: str) -> None:
        self.host = host
        self.port = port
        super().__init__(f"{host}:{port}: {message}")


class ConnectionFailed(PeerClientError):
    """No connection (refused, reset, closed, unreachable, in reconnect
    backoff) or it broke while the request was in flight; ``reason`` says
    which. Retriable: the next request reconnects."""

    def __init__(self, host: str, port: int, reason: str) -> None:
        self.reason = reason
        super().__init__(host, port, reason)


class AuthenticationFailed(ConnectionFailed):
    """The TLS handshake or SASL authentication was refused (bad
    credentials, untrusted certificate, a mechanism the peer does not
    enable); ``reason`` has the peer's message. Retrying with the same
    settings fails the same way."""


class RequestTimedOut(PeerClientError):
    """No response within the request timeout (the connection was closed,
    as Kafka's client does, failing the other requests in flight on it)."""

    def __init__(self, host: str, port: int, api_key: ApiKey, timeout_ms: float) -> None:
        self.api_key = api_key
        self.timeout_ms = timeout_ms
        super().__init__(host, port, f"{api_key.display_name} request timed out after {timeout_ms:g} ms")


class NoCommonVersion(PeerClientError):
    """The peer speaks no version of the api that we speak (Kafka's
    ``UnsupportedVersionException``); ``theirs`` is None when the peer does
    not list the api at all. The connection stays up."""

    def __init__(self, host: str, port: int, api_key: ApiKey, ours: VersionRange,
                 theirs: VersionRange | None) -> None:
        self.api_key = api_key
        self.ours = ours
        self.theirs = theirs
        their_text = "does not support it" if theirs is None else f"supports v{theirs[0]}-v{theirs[1]}"
        super().__init__(host, port, f"no common version of {api_key.display_name}: we support "
                                     f"v{ours[0]}-v{ours[1]}, the peer {their_text}")


def reconnect_backoff_ms(failed_attempts: int, base_ms: float, max_ms: float, rng: random.Random) -> float:
    """How long to wait before the next connection attempt after
    ``failed_attempts`` consecutive failures (Kafka's ``ExponentialBackoff``
    as ``ClusterConnectionStates`` uses it): ``base * 2^failures`` with
    +/-20 % jitter, capped at ``max``; constant ``base`` when ``max <= base``."""
    if max_ms <= base_ms:
        return float(base_ms)
    max_exp = math.log(max_ms / max(base_ms, 1)) / math.log(_BACKOFF_MULTIPLIER)
    term = base_ms * math.pow(_BACKOFF_MULTIPLIER, min(failed_attempts, max_exp))
    return min(rng.uniform(1 - _BACKOFF_JITTER, 1 + _BACKOFF_JITTER) * term, float(max_ms))


class _Pending:
    """A request in flight, waiting for its response."""

    __slots__ = ("correlation_id", "api_key", "api_version", "done", "body", "error", "abandoned")

    def __init__(self, correlation_id: int, api_key: ApiKey, api_version: int) -> None:
        self.correlation_id = correlation_id
        self.api_key = api_key
        self.api_version = api_version
        self.done = trio.Event()
        self.body: Any = None
        self.error: PeerClientError | None = None
        # The caller was cancelled: the response, when it comes, is read
        # (it keeps the order check honest) and dropped.
        self.abandoned = False

    def succeed(self, body: Any) -> None:
        self.body = body
        self.done.set()

    def fail(self, error: PeerClientError) -> None:
        self.error = error
        self.done.set()


class _Connection:
    """One TCP connection: the stream, the requests in flight on it (in send
    order) and the reader task's bookkeeping."""

    def __init__(self, client: PeerClient, stream: trio.abc.Stream, max_response_size: int,
                 raw_socket: Any) -> None:
        self.client = client
        self.stream = stream
        self.raw_socket = raw_socket  # under the TLS layer, if any
        self.send_lock = trio.Lock()
        self.in_flight: deque[_Pending] = deque()
        self.frames = FrameReader(max_response_size)
        self.closed = False
        self.close_reason = ""
        self.reader_scope = trio.CancelScope()
        self.reader_done = trio.Event()

    def close(self, reason: str, level: int = logging.INFO) -> None:
        """Close now (sync: callable from anywhere) and fail everything in
        flight with ``reason``. The reader task finishes the job."""
        if self.closed:
            return
        self.closed = True
        self.close_reason = reason
        client = self.client
        for pending in self.in_flight:
            pending.fail(ConnectionFailed(client.host, client.port, reason))
        self.in_flight.clear()
        self.reader_scope.cancel()
        # Wakes a writer blocked in send_all (it gets ClosedResourceError).
        self.raw_socket.close()
        client._connection_closed(self, reason, level)

    async def read_responses(self) -> None:
        """The reader task. Never raises (it runs as a system task)."""
        try:
            with self.reader_scope:
                while not self.closed:
                    data = await self.stream.receive_some(_READ_SIZE)
                    if not data:
                        self.close("connection closed by the peer" + (
                            f" inside a response ({self.frames.buffered} bytes of it received)"
                            if self.frames.buffered else ""))
                        return
                    self.frames.feed(data)
                    while not self.closed and (frame := self.frames.next_frame()) is not None:
                        self._on_response(frame)
        except FrameSizeError as e:
            self.close(f"bad response frame: {e.reason}", logging.WARNING)
        except _DISCONNECTED as e:
            # A TLS alert (e.g. TLS 1.3's certificate_required, sent after
            # the client's handshake completed) is the useful part.
            cause = e.__cause__
            self.close(f"read failed: {getattr(cause, 'reason', None) or e!r}")
        except Exception as e:  # a bug: fail the requests, keep the run alive
            log.exception("reader task for %s:%d failed", self.client.host, self.client.port)
            self.close(f"internal error: {e!r}", logging.DEBUG)
        finally:
            await close_quietly(self.stream)
            self.reader_done.set()
            self.client._reader_finished(self)

    def _on_response(self, frame: bytes) -> None:
        if len(frame) < 4:
            self.close(f"response frame of {len(frame)} bytes has no correlation id", logging.WARNING)
            return
        correlation_id = int.from_bytes(frame[:4], "big", signed=True)
        if not self.in_flight:
            self.close(f"response with correlation id {correlation_id} to no request", logging.WARNING)
            return
        pending = self.in_flight[0]
        if correlation_id != pending.correlation_id:
            # Kafka's CorrelationIdMismatchException: responses come in
            # request order or the connection is unusable.
            self.close(f"correlation id {correlation_id} does not match {pending.correlation_id}, the oldest "
                       f"request in flight ({pending.api_key.display_name})", logging.WARNING)
            return
        self.in_flight.popleft()
        try:
            body = _decode_body(frame, pending.api_key, pending.api_version)
        except KraftProtocolError as e:
            self.in_flight.appendleft(pending)  # fail it with the rest
            self.close(f"cannot decode {pending.api_key.display_name} v{pending.api_version} response: {e}",
                       logging.WARNING)
            return
        pending.succeed(body)

    async def send(self, api_key: ApiKey, api_version: int, body: Any, client_id: str,
                   deadline: float) -> _Pending:
        client = self.client
        async with self.send_lock:
            if self.closed:
                raise ConnectionFailed(client.host, client.port, self.close_reason)
            correlation_id = client._next_correlation_id()
            frame = b"".join(encode_request(body, api_version, correlation_id, client_id))
            pending = _Pending(correlation_id, api_key, api_version)
            self.in_flight.append(pending)
            # Shielded: a send_all cut short by a caller's cancellation
            # would leave half a frame on the wire. Bounded by the request
            # deadline instead.
            with trio.CancelScope(shield=True, deadline=deadline) as scope:
                try:
                    await self.stream.send_all(frame)
                except _DISCONNECTED as e:
                    self.close(f"write failed: {e!r}")
            if scope.cancelled_caught:
                self.close(f"{api_key.display_name} request could not be written before its timeout")
                raise _WriteTimedOut
        return pending

    async def wait(self, pending: _Pending) -> Any:
        try:
            await pending.done.wait()
        except trio.Cancelled:
            pending.abandoned = True
            raise
        if pending.error is not None:
            raise pending.error
        return pending.body


class _WriteTimedOut(Exception):
    """A request's deadline passed inside send_all (the connection is closed)."""


def _decode_body(frame: bytes, api_key: ApiKey, api_version: int) -> Any:
    try:
        return decode_response(frame, api_key, api_version).body
    except DecodeError:
        # Kafka's ApiVersionsResponse.parse: a server that does not know
        # our version answers in v0; parse it as such.
        if api_key != ApiKey.API_VERSIONS or api_version == 0:
            raise
        return decode_response(frame, api_key, 0).body


class PeerClient:
    """One outbound connection to one node (Kafka's ``NetworkClient`` for a
    single node). Safe to use from several tasks at once."""

    def __init__(self, host: str, port: int, *, client_id: str, request_timeout_ms: int = 2000,
                 connect_timeout_ms: int = 2000, reconnect_backoff_ms: int = 50,
                 reconnect_backoff_max_ms: int = 1000, max_response_size: int = DEFAULT_MAX_FRAME_SIZE,
                 rng: random.Random | None = None, security: ClientSecurity | None = None,
                 source_port: int = 0, software_name: str = CLIENT_SOFTWARE_NAME) -> None:
        if reconnect_backoff_ms < 0 or reconnect_backoff_max_ms < 0:
            raise ValueError("reconnect backoffs must not be negative")
        FrameReader(max_response_size)  # validates the bound
        self.host = host
        self.port = port
        self.client_id = client_id
        self.request_timeout_ms = request_timeout_ms
        self.connect_timeout_ms = connect_timeout_ms
        self.reconnect_backoff_ms = reconnect_backoff_ms
        self.reconnect_backoff_max_ms = reconnect_backoff_max_ms
        self._max_response_size = max_response_size
        #: TLS and SASL settings (None: PLAINTEXT).
        self.security = security
        # The local port to bind (0: the kernel picks); tests force a
        # connection to itself with it.
        self._source_port = source_port
        #: The ApiVersions ClientSoftwareName (what the peer advertises depends on it).
        self._software_name = software_name
        self._rng = rng if rng is not None else random.Random()
        self._conn: _Connection | None = None
        self._live: set[_Connection] = set()  # connections whose reader task still runs
        self._connect_lock = trio.Lock()
        self._correlation_id = 0
        self._api_versions: dict[int, VersionRange] | None = None
        self._closed = False
        # Reconnect backoff, as Kafka's ClusterConnectionStates keeps it.
        self._failed_attempts = 0
        self._backoff_s = 0.0
        self._last_attempt = -math.inf
        self._connect_failures = 0
        self._last_failure = ""

    def __repr__(self) -> str:
        state = "closed" if self._closed else ("connected" if self.connected else "idle")
        return f"PeerClient({self.host}:{self.port}, {state})"

    @property
    def api_versions(self) -> dict[int, VersionRange] | None:
        """What the peer advertised in its last ApiVersions response (api key
        -> (min, max)); None before the first connection is ready."""
        return None if self._api_versions is None else dict(self._api_versions)

    @property
    def connected(self) -> bool:
        return self._conn is not None and not self._conn.closed

    @property
    def closed(self) -> bool:
        return self._closed

    async def request(self, api_key: ApiKey, build: Callable[[int], Any], *, timeout_ms: int | None = None,
                      max_version: int | None = None) -> tuple[int, Any]:
        """Send the request ``build(version)`` returns, at the highest version
        both sides speak (at most ``max_version``), and return ``(version,
        response body)``. Connects first if needed.

        Raises :class:`ConnectionFailed`, :class:`RequestTimedOut` (the
        timeout covers connecting, the ApiVersions exchange, sending and the
        response) or :class:`NoCommonVersion`.
        """
        api = ApiKey(api_key)
        timeout = float(self.request_timeout_ms if timeout_ms is None else timeout_ms)
        deadline = trio.current_time() + timeout / 1000
        if self._closed:
            raise ConnectionFailed(self.host, self.port, "client closed")
        sent_on: _Connection | None = None
        with trio.move_on_at(deadline):
            try:
                conn = await self._ready_connection(deadline)
                version = self._choose_version(api, max_version)
                body = build(version)
                pending = await conn.send(api, version, body, self.client_id, deadline)
            except _WriteTimedOut:
                raise RequestTimedOut(self.host, self.port, api, timeout) from None
            sent_on = conn
            return version, await conn.wait(pending)
        if sent_on is not None:
            # Kafka's client disconnects on a request timeout: whatever else
            # is in flight on the connection is failed with it.
            sent_on.close(f"{api.display_name} request timed out after {timeout:g} ms")
        raise RequestTimedOut(self.host, self.port, api, timeout)

    def close(self) -> None:
        """Start closing (sync): fail everything in flight, refuse new
        requests. :meth:`aclose` also waits for the reader task to end."""
        self._closed = True
        for conn in list(self._live):
            conn.close("client closed", logging.DEBUG)

    async def aclose(self) -> None:
        self.close()
        for conn in list(self._live):
            await conn.reader_done.wait()

    def _choose_version(self, api: ApiKey, max_version: int | None) -> int:
        ours = (api.min_version, api.max_version)
        theirs = (self._api_versions or {}).get(api.value)
        usable = usable_version_range(ours, theirs, max_version)
        if usable is None:
            capped = ours if max_version is None else (ours[0], min(ours[1], max_version))
            raise NoCommonVersion(self.host, self.port, api, capped, theirs)
        return int(usable[1])

    def _next_correlation_id(self) -> int:
        correlation_id = self._correlation_id
        self._correlation_id = 0 if correlation_id == _INT32_MAX else correlation_id + 1
        return correlation_id

    async def _ready_connection(self, deadline: float) -> _Connection:
        conn = self._conn
        if conn is not None and not conn.closed:
            return conn
        failures_before = self._connect_failures
        async with self._connect_lock:
            conn = self._conn
            if conn is not None and not conn.closed:
                return conn
            if self._closed:
                raise ConnectionFailed(self.host, self.port, "client closed")
            if self._connect_failures != failures_before:
                # The attempt we waited for failed: share its verdict rather
                # than retrying inside the backoff.
                raise ConnectionFailed(self.host, self.port, self._last_failure)
            await self._wait_for_backoff(deadline)
            self._last_attempt = trio.current_time()
            try:
                conn = await self._connect(deadline)
            except ConnectionFailed as e:
                self._connect_failed(e.reason)
                raise
            self._failed_attempts = 0  # ready: Kafka resets the backoff here
            self._conn = conn
            return conn

    async def _wait_for_backoff(self, deadline: float) -> None:
        allowed_at = self._last_attempt + self._backoff_s
        now = trio.current_time()
        if allowed_at <= now:
            return
        if allowed_at > deadline:
            raise ConnectionFailed(self.host, self.port, f"in reconnect backoff for another "
                                   f"{(allowed_at - now) * 1000:.0f} ms after: {self._last_failure}")
        await trio.sleep_until(allowed_at)

    async def _connect(self, deadline: float) -> _Connection:
        with trio.move_on_after(self.connect_timeout_ms / 1000) as connect_scope:
            try:
                stream = await open_tcp_stream(self.host, self.port, source_port=self._source_port)
            except ConnectionRefusedError:
                # Refused, or a connection to itself (tcp_connect): either way
                # nobody serves this address.
                raise ConnectionFailed(self.host, self.port, f"connect failed: connection refused (nothing listens "
                                       f"on {format_address(self.host, self.port)})") from None
            except OSError as e:
                raise ConnectionFailed(self.host, self.port, f"connect failed: {e}") from None
        if connect_scope.cancelled_caught:
            raise ConnectionFailed(self.host, self.port, f"connect timed out after {self.connect_timeout_ms} ms")
        if self._closed:  # aclose() ran while we were connecting: start nothing
            await close_quietly(stream)
            raise ConnectionFailed(self.host, self.port, "client closed")
        raw_socket = stream.socket
        transport: trio.abc.Stream = stream
        security = self.security
        if security is not None and security.ssl_context is not None:
            transport = await self._tls_handshake(stream, security, deadline)
        conn = _Connection(self, transport, self._max_response_size, raw_socket)
        self._live.add(conn)
        trio.lowlevel.spawn_system_task(conn.read_responses, name=f"kraft.wire reader {self.host}:{self.port}")
        try:
            response = await self._exchange_api_versions(conn, deadline)
            self._api_versions = advertised_versions(response)
            if security is not None and security.mechanism is not None:
                await self._authenticate(conn, security, deadline)
        except BaseException:
            conn.close("connection setup did not complete", logging.DEBUG)
            raise
        return conn

    async def _tls_handshake(self, stream: trio.SocketStream, security: ClientSecurity,
                             deadline: float) -> trio.SSLStream[trio.SocketStream]:
        assert security.ssl_context is not None
        ssl_stream = trio.SSLStream(stream, security.ssl_context, server_hostname=self.host)
        failure = ""
        with trio.move_on_at(deadline) as scope:
            try:
                await ssl_stream.do_handshake()
            except (trio.BrokenResourceError, trio.ClosedResourceError) as e:
                cause = e.__cause__
                reason = getattr(cause, "verify_message", None) or getattr(cause, "reason", None) or cause or repr(e)
                failure = f"TLS handshake failed: {reason}"
        if scope.cancelled_caught:
            failure = "TLS handshake timed out"
        if failure:
            await close_quietly(ssl_stream)
            raise AuthenticationFailed(self.host, self.port, failure)
        return ssl_stream

    async def _authenticate(self, conn: _Connection, security: ClientSecurity, deadline: float) -> None:
        """SaslHandshake v1 then SaslAuthenticate rounds (KIP-152), as
        Kafka's ``SaslClientAuthenticator`` does after ApiVersions."""
        assert security.mechanism is not None
        try:
            handshake_version = self._choose_version(ApiKey.SASL_HANDSHAKE, None)
            authenticate_version = self._choose_version(ApiKey.SASL_AUTHENTICATE, None)
        except NoCommonVersion as e:
            raise AuthenticationFailed(self.host, self.port, f"the peer does not speak SASL: {e}") from None
        if handshake_version < 1:
            raise AuthenticationFailed(self.host, self.port, "the peer speaks SaslHandshake v0 only (unframed tokens)")
        pending = await conn.send(ApiKey.SASL_HANDSHAKE, handshake_version,
                                  SaslHandshakeRequest(mechanism=security.mechanism), self.client_id, deadline)
        handshake = await conn.wait(pending)
        if handshake.error_code != ErrorCode.NONE:
            raise AuthenticationFailed(self.host, self.port, f"SaslHandshake for {security.mechanism} failed with "
                                       f"{ErrorCode.name_of(handshake.error_code)} (enabled mechanisms: "
                                       f"{', '.join(handshake.mechanisms) or 'none'})")
        sasl = SaslClient(security.mechanism, security.username, security.password)
        token: bytes | None = sasl.first_token()
        while token is not None:
            pending = await conn.send(ApiKey.SASL_AUTHENTICATE, authenticate_version,
                                      SaslAuthenticateRequest(auth_bytes=token), self.client_id, deadline)
            answer = await conn.wait(pending)
            if answer.error_code != ErrorCode.NONE:
                raise AuthenticationFailed(self.host, self.port, f"{ErrorCode.name_of(answer.error_code)}: "
                                           f"{answer.error_message or 'SASL authentication failed'}")
            try:
                token = sasl.next_token(bytes(answer.auth_bytes))
            except SaslClientError as e:
                raise AuthenticationFailed(self.host, self.port, f"SASL authentication failed: {e}") from None
        log.debug("authenticated to %s:%d as User:%s with %s", self.host, self.port, security.username,
                  security.mechanism)

    async def _exchange_api_versions(self, conn: _Connection, deadline: float) -> ApiVersionsResponse:
        api = ApiKey.API_VERSIONS
        version = api.max_version
        request = ApiVersionsRequest(client_software_name=self._software_name,
                                     client_software_version=CLIENT_SOFTWARE_VERSION)
        while True:
            pending = await conn.send(api, version, request, self.client_id, deadline)
            response: ApiVersionsResponse = await conn.wait(pending)
            if response.error_code == ErrorCode.NONE:
                return response
            if response.error_code == ErrorCode.UNSUPPORTED_VERSION and version > 0:
                # KIP-511: retry at the highest ApiVersions version the peer
                # listed (v0 when it listed none), as Kafka's client does.
                theirs = advertised_versions(response).get(api.value)
                retry = 0 if theirs is None else min(theirs[1], api.max_version)
                if retry < version:
                    log.debug("%s:%d does not support ApiVersions v%d; retrying with v%d",
                              self.host, self.port, version, retry)
                    version = retry
                    continue
            raise ConnectionFailed(self.host, self.port, f"ApiVersions v{version} failed with "
                                   f"{ErrorCode.name_of(response.error_code)}")

    def _connect_failed(self, reason: str) -> None:
        self._connect_failures += 1
        self._last_failure = reason
        self._update_backoff()
        # Once per outage at INFO; the retries after it at DEBUG.
        level = logging.INFO if self._failed_attempts == 1 else logging.DEBUG
        log.log(level, "cannot connect to %s:%d: %s (next attempt in %.0f ms)",
                self.host, self.port, reason, self._backoff_s * 1000)

    def _update_backoff(self) -> None:
        self._backoff_s = reconnect_backoff_ms(self._failed_attempts, self.reconnect_backoff_ms,
                                               self.reconnect_backoff_max_ms, self._rng) / 1000
        self._failed_attempts += 1

    def _connection_closed(self, conn: _Connection, reason: str, level: int) -> None:
        if self._conn is not conn:
            return  # a connection that never became ready: _connect reports it
        self._conn = None
        self._last_failure = reason
        self._update_backoff()
        log.log(level, "disconnected from %s:%d: %s", self.host, self.port, reason)

    def _reader_finished(self, conn: _Connection) -> None:
        self._live.discard(conn)


class ClientPool:
    """One :class:`PeerClient` per node id; a node whose address changed
    gets a new client (the old one is closed)."""

    def __init__(self, *, client_id: str, **client_options: Any) -> None:
        self.client_id = client_id
        self._options = client_options
        self._clients: dict[int, PeerClient] = {}
        self._retired: list[PeerClient] = []

    def get(self, node_id: int, host: str, port: int) -> PeerClient:
        client = self._clients.get(node_id)
        if client is not None and not client.closed and (client.host, client.port) == (host, port):
            return client
        if client is not None:
            client.close()
            self._retired.append(client)
        client = PeerClient(host, port, client_id=self.client_id, **self._options)
        self._clients[node_id] = client
        return client

    def __contains__(self, node_id: int) -> bool:
        return node_id in self._clients

    async def aclose(self) -> None:
        clients = [*self._clients.values(), *self._retired]
        self._clients.clear()
        self._retired.clear()
        for client in clients:
            client.close()
        for client in clients:
            await client.aclose()
