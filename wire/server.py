"""The listening side of the node: accept TCP connections and answer Kafka
requests on them, with the semantics of Kafka's ``SocketServer``.

One task group per connection: a reader task feeds a
:class:`~kraft.wire.framing.FrameReader` and decodes requests, a task per
request runs the handler, and a writer task sends the responses strictly in
request order (Kafka's guarantee to clients: one connection, responses in
the order of the requests). Handler calls for one connection begin in
request order and may overlap up to ``max_in_flight_per_connection``
(with 1, requests are processed one at a time as Kafka's processor does
it); when that many are unanswered, the reader stops reading and TCP pushes
back on the client.

What closes a connection (only that one; every other keeps being served),
each with one log line on ``kraft.wire``:

* a size prefix that is negative or above ``max_frame_size`` (checked
  before anything is allocated; Kafka's ``InvalidReceiveException``);
* a request header that cannot be parsed, an api key kraft has no codecs
  for, or a known api at a version outside our range (Kafka's
  ``SocketServer`` rejects these with ``InvalidRequestException`` and
  closes) -- except ApiVersions, which is answered in that case with a v0
  ``UNSUPPORTED_VERSION`` response listing ApiVersions' own range (KIP-511)
  so the client can retry at a version we speak;
* a request body that fails to decode;
* the handler raising (logged with its traceback) or raising
  :class:`CloseConnection` (logged without one).
* security and limits (:mod:`kraft.wire.security`, :mod:`kraft.wire.connection_limits`):
  a connection over ``max.connections.per.ip`` / ``max.connections``
  (closed right after accept), a failed or slow TLS handshake, a request
  other than ApiVersions / SaslHandshake / SaslAuthenticate before SASL
  authentication completed, a failed SASL exchange (answered first, see
  :mod:`kraft.wire.sasl`), a request that does not arrive whole within
  ``kraft.socket.request.receive.timeout.ms`` of its first byte, and a
  connection idle for ``connections.max.idle.ms``.

The peer closing its side ends reading; requests already read are still
answered before the connection is closed (a half-closed peer gets its
answers). A reset, or end of stream inside a frame, is logged at DEBUG only.
"""

from __future__ import annotations

import itertools
import logging
from dataclasses import dataclass, replace
from typing import Any, NoReturn, Protocol

import trio

from kraft.messages.errors import DecodeError, KraftProtocolError
from kraft.wire.api_versions import unsupported_version_response
from kraft.wire.apis import ApiKey
from kraft.wire.codec import DecodedRequest, api_of, decode_request, encode_response
from kraft.wire.errors import ErrorCode, FrameSizeError, UnsupportedApiError
from kraft.wire.framing import DEFAULT_MAX_FRAME_SIZE, FrameReader
from kraft.wire.headers import peek_request_header
from kraft.wire.connection_limits import ConnectionLimits, ConnectionTracker
from kraft.wire.rate_limited_log import RateLimitedLog
from kraft.wire.not_controller import REFUSED_CONTROLLER_APIS, not_controller_response
from kraft.wire.sasl import SaslServer, illegal_state_response
from kraft.wire.security import ListenerSecurity
from kraft.wire.tls import ANONYMOUS, certificate_principal, close_quietly

__all__ = [
    "ConnectionInfo",
    "Response",
    "RequestHandler",
    "CloseConnection",
    "serve_listener",
]

log = logging.getLogger("kraft.wire")
#: Refusals and failures of clients, once a minute per client host (a
#: client retrying in a loop is one line, with a count).
limited = RateLimitedLog(log)

# Socket reads: at least this much (several small requests per read), at
# most this much (a 100 MiB frame is read in pieces, never one huge recv).
_MIN_READ = 64 * 1024
_MAX_READ = 1024 * 1024

_DISCONNECTED = (trio.BrokenResourceError, trio.ClosedResourceError, OSError)


@dataclass(frozen=True)
class ConnectionInfo:
    """Who is on the other end of a connection, and where it came in."""

    peer_host: str
    peer_port: int
    listener: str
    connection_id: int
    #: Kafka's principal: ``User:<name>`` after SASL, ``User:<subject DN>``
    #: for a TLS client certificate, else ``User:ANONYMOUS``.
    principal: str = ANONYMOUS
    #: The listener's security protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL).
    security_protocol: str = "PLAINTEXT"

    def __str__(self) -> str:
        return f"{self.peer_host}:{self.peer_port} (connection {self.connection_id} on {self.listener})"


@dataclass(frozen=True)
class Response:
    """A handler's answer: a generated response message and the version to
    write it in (the request's version; Kafka answers in the version asked)."""

    body: Any
    api_version: int


class RequestHandler(Protocol):
    async def handle(self, request: DecodedRequest, conn: ConnectionInfo) -> Response | None:
        """Answer ``request``; None sends nothing back."""
        ...


class CloseConnection(Exception):
    """Raise from a handler to close the connection with one log line and
    no traceback (what Kafka does with a request it refuses outright, e.g.
    an api that the listener does not serve)."""


async def serve_listener(
    handler: RequestHandler,
    host: str,
    port: int,
    *,
    listener: str = "CONTROLLER",
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
    max_in_flight_per_connection: int = 100,
    security: ListenerSecurity | None = None,
    limits: ConnectionLimits | None = None,
    tracker: ConnectionTracker | None = None,
    refuse_controller_rpcs: bool = True,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
) -> NoReturn:
    """Listen on ``host``:``port`` and serve every connection until
    cancelled. ``task_status.started`` gets the bound port (use port 0 and
    ``nursery.start`` to listen on a free one). With a wildcard host and
    port 0, each address family may get its own port; the first is reported.

    ``security`` makes it an SSL / SASL listener (TLS handshake, then SASL
    authentication before any other request but ApiVersions); ``limits``
    bounds connections (:mod:`kraft.wire.connection_limits`), counted in ``tracker``
    (share one between the listeners of a node).

    ``refuse_controller_rpcs``: answer Kafka's controller RPCs (BrokerRegistration,
    Envelope, ...) with NOT_CONTROLLER here (wire/not_controller.py); False
    hands them to ``handler``, which then serves them.
    """
    if max_in_flight_per_connection < 1:
        raise ValueError(f"max_in_flight_per_connection must be at least 1, got {max_in_flight_per_connection}")
    FrameReader(max_frame_size)  # validates the bound before anything is bound
    limits = limits if limits is not None else (tracker.limits if tracker is not None else ConnectionLimits())
    tracker = tracker if tracker is not None else ConnectionTracker(limits)
    protocol = "PLAINTEXT" if security is None else str(security.protocol)
    listeners = await trio.open_tcp_listeners(port, host=host or None)
    bound_port = int(listeners[0].socket.getsockname()[1])
    connection_ids = itertools.count(1)

    async def serve_one(stream: trio.SocketStream) -> None:
        info = _connection_info(stream, listener, next(connection_ids), protocol)
        refusal = tracker.try_open(info.peer_host)
        if refusal is not None:
            # Kafka's TooManyConnectionsException line; only this connection goes.
            limited.log(logging.INFO, ("rejected", info.peer_host), "Rejected connection from %s, %s.",
                        info.peer_host, refusal)
            await close_quietly(stream)
            return
        try:
            transport: trio.abc.Stream = stream
            if security is not None and security.ssl_context is not None:
                secured = await _tls_handshake(stream, security, info, limits)
                if secured is None:
                    return
                transport, info = secured
            sasl = None
            if security is not None and security.protocol.uses_sasl:
                sasl = SaslServer(security.mechanisms, security.plain_users, security.scram_credentials)
            elif security is not None:
                # Per connection: DEBUG (INFO is for state changes).
                log.debug("connection from %s authenticated as %s", info, info.principal)
            connection = _ServerConnection(transport, handler, info, max_frame_size, max_in_flight_per_connection,
                                           limits, sasl, refuse_controller_rpcs=refuse_controller_rpcs)
            await connection.run()
        except Exception:  # never let one connection stop the listener
            log.exception("closing connection from %s: unexpected error while setting it up", info)
        finally:
            tracker.close(info.peer_host)

    log.info("listening for %s on %s:%d", listener, host, bound_port)
    task_status.started(bound_port)
    await trio.serve_listeners(serve_one, listeners)
    raise AssertionError("trio.serve_listeners returned")  # it only ever raises


def _connection_info(stream: trio.SocketStream, listener: str, connection_id: int,
                     protocol: str = "PLAINTEXT") -> ConnectionInfo:
    try:
        peer = stream.socket.getpeername()
        host, port = str(peer[0]), int(peer[1])
    except OSError:  # already reset by the peer
        host, port = "unknown", -1
    return ConnectionInfo(peer_host=host, peer_port=port, listener=listener, connection_id=connection_id,
                          security_protocol=protocol)


async def _tls_handshake(stream: trio.SocketStream, security: ListenerSecurity, info: ConnectionInfo,
                         limits: ConnectionLimits) -> tuple[trio.SSLStream[trio.SocketStream], ConnectionInfo] | None:
    """The server side of the TLS handshake, bounded by the request
    receive timeout; None (logged, closed) when it fails: garbage, a
    plaintext client, an untrusted or missing client certificate, a client
    too slow to finish."""
    assert security.ssl_context is not None
    ssl_stream = trio.SSLStream(stream, security.ssl_context, server_side=True)
    failure = ""
    with trio.move_on_after(limits.request_receive_timeout_ms / 1000) as scope:
        try:
            await ssl_stream.do_handshake()
        except (trio.BrokenResourceError, trio.ClosedResourceError) as e:
            cause = e.__cause__
            failure = f"TLS handshake failed: {getattr(cause, 'reason', None) or cause or e!r}"
    if scope.cancelled_caught:
        failure = f"TLS handshake not completed within {limits.request_receive_timeout_ms} ms"
    if failure:
        limited.log(logging.WARNING, ("tls", info.peer_host), "closing connection from %s: %s", info, failure)
        await close_quietly(ssl_stream)
        return None
    principal = certificate_principal(ssl_stream.getpeercert())
    return ssl_stream, replace(info, principal=principal)


class _Slot:
    """One request's place in the response order; ``frame`` stays None when
    the handler answers nothing."""

    __slots__ = ("done", "frame")

    def __init__(self) -> None:
        self.done = trio.Event()
        self.frame: bytes | None = None

    def complete(self, frame: bytes | None) -> None:
        self.frame = frame
        self.done.set()


class _ServerConnection:
    def __init__(self, stream: trio.abc.Stream, handler: RequestHandler, info: ConnectionInfo,
                 max_frame_size: int, max_in_flight: int, limits: ConnectionLimits | None = None,
                 sasl: SaslServer | None = None, *, refuse_controller_rpcs: bool = True) -> None:
        self._stream = stream
        self._refuse_controller_rpcs = refuse_controller_rpcs
        self._handler = handler
        self._info = info
        self._max_frame_size = max_frame_size
        self._limits = limits if limits is not None else ConnectionLimits()
        self._sasl = sasl
        # Before SASL completes, Kafka bounds requests by sasl.server.max.receive.size.
        self._reader = FrameReader(max_frame_size if sasl is None else min(max_frame_size,
                                                                            self._limits.sasl_max_receive_size))
        self._last_activity = trio.current_time()
        self._outstanding = 0  # requests read and not yet answered (or dropped)
        # The writer holds one slot while it waits for it; the buffer holds
        # the rest: at most max_in_flight requests read and not answered.
        self._slots_in, self._slots_out = trio.open_memory_channel[_Slot](max_in_flight - 1)
        self._cancel_scope: trio.CancelScope | None = None
        self._closing = False

    async def run(self) -> None:
        """Serve until the peer goes away or a fault closes the connection.
        Never raises (but Cancelled): trio.serve_listeners would stop
        accepting if a connection task raised."""
        try:
            async with trio.open_nursery() as nursery:
                self._cancel_scope = nursery.cancel_scope
                nursery.start_soon(self._write_loop)
                async with self._slots_in:
                    await self._read_loop(nursery)
                # Falling out here: end of stream or a fault. The writer
                # drains what is queued (unless a fault cancelled it).
        except Exception:
            log.exception("closing connection from %s: unexpected error in the connection task", self._info)
        finally:
            await close_quietly(self._stream)

    def _close(self, level: int, message: str, *args: Any, exc_info: bool = False) -> None:
        """Log once and stop everything on this connection."""
        if self._closing:
            return
        self._closing = True
        log.log(level, "closing connection from %s: " + message, self._info, *args, exc_info=exc_info)
        assert self._cancel_scope is not None
        self._cancel_scope.cancel()

    async def _read_loop(self, nursery: trio.Nursery) -> None:
        reader = self._reader
        receive_timeout = self._limits.request_receive_timeout_ms / 1000
        idle_timeout = self._limits.idle_timeout_ms / 1000
        frame_deadline: float | None = None  # set while a request is partly received
        while True:
            try:
                frame = reader.next_frame()
            except FrameSizeError as e:
                # Checked on the 4-byte prefix alone: nothing of that size
                # was allocated, and the stream cannot be resynchronised.
                self._close(logging.WARNING, "%s", e.reason)
                return
            if frame is not None:
                frame_deadline = None
                if not await self._dispatch(frame, nursery):
                    return
                continue
            if reader.buffered and frame_deadline is None:
                frame_deadline = trio.current_time() + receive_timeout
            deadline = frame_deadline if frame_deadline is not None else self._last_activity + idle_timeout
            with trio.move_on_at(deadline) as scope:
                try:
                    data = await self._stream.receive_some(min(max(reader.bytes_wanted(), _MIN_READ), _MAX_READ))
                except _DISCONNECTED as e:
                    self._close(logging.DEBUG, "read failed: %r", e)
                    return
            if scope.cancelled_caught:
                if frame_deadline is not None:
                    # Slow-loris: a request must arrive whole in time.
                    self._close(logging.WARNING, "request not received within %d ms (%d bytes of it arrived)",
                                self._limits.request_receive_timeout_ms, reader.buffered)
                    return
                if self._outstanding:
                    self._last_activity = trio.current_time()  # waiting on us is not idle
                    continue
                self._close(logging.INFO, "idle for %d ms (connections.max.idle.ms)", self._limits.idle_timeout_ms)
                return
            self._last_activity = trio.current_time()
            if not data:
                if reader.buffered:
                    log.debug("connection from %s ended inside a frame (%d bytes of it received)",
                              self._info, reader.buffered)
                return
            reader.feed(data)

    async def _dispatch(self, frame: bytes, nursery: trio.Nursery) -> bool:
        """Queue ``frame``'s request for an answer; False when the
        connection is being closed instead."""
        try:
            request = decode_request(frame)
        except UnsupportedApiError as e:
            if e.api_key == ApiKey.API_VERSIONS and e.error_code == ErrorCode.UNSUPPORTED_VERSION:
                log.debug("ApiVersions v%d from %s is not supported: answering with v0", e.api_version, self._info)
                slot = _Slot()
                slot.complete(b"".join(encode_response(unsupported_version_response(), 0, e.correlation_id)))
                await self._enqueue(slot)
                return True
            if await self._refuse_controller_rpc(e.api_key, e.api_version, e.correlation_id):
                return True
            self._close(logging.WARNING, "%s (api key %d, version %d, correlation id %d)",
                        e.reason, e.api_key, e.api_version, e.correlation_id)
            return False
        except DecodeError as e:
            self._close(logging.WARNING, "cannot decode %s: %s", _describe(frame), e)
            return False
        if request.api_key in REFUSED_CONTROLLER_APIS and await self._refuse_controller_rpc(
                request.api_key, request.api_version, request.header.correlation_id):
            # ControllerRegistration decodes (a kraft witness sends it to
            # Kafka's active controller) but is refused all the same.
            return True
        if request.api_key in (ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE):
            return await self._sasl_request(request)
        if self._sasl is not None and not self._sasl.complete and request.api_key != ApiKey.API_VERSIONS:
            # Kafka's SaslServerAuthenticator: "Unexpected Kafka request of
            # type X during SASL handshake" closes the connection.
            self._close(logging.WARNING, "unexpected %s request before SASL authentication completed",
                        request.api_key.display_name)
            return False
        slot = _Slot()
        await self._enqueue(slot)
        # start() returns once the handler task is running, so handler calls
        # begin in request order.
        await nursery.start(self._handle, request, slot)
        return True

    async def _refuse_controller_rpc(self, api_key: int, api_version: int, correlation_id: int) -> bool:
        """A Kafka controller RPC: NOT_CONTROLLER, as a Kafka controller that
        is not the active one answers (wire/not_controller.py); False
        when ``api_key`` is none of them, or SASL has not completed."""
        if not self._refuse_controller_rpcs:
            return False
        refused = not_controller_response(api_key, api_version, correlation_id)
        if refused is None or not (self._sasl is None or self._sasl.complete):
            return False
        log.debug("%s from %s: NOT_CONTROLLER", REFUSED_CONTROLLER_APIS[api_key][0], self._info)
        slot = _Slot()
        slot.complete(refused)
        await self._enqueue(slot)
        return True

    async def _enqueue(self, slot: _Slot) -> None:
        self._outstanding += 1
        await self._slots_in.send(slot)

    async def _sasl_request(self, request: DecodedRequest) -> bool:
        """SaslHandshake / SaslAuthenticate: the connection's SASL state
        machine answers (kraft.wire.sasl); False when the connection closes
        after the answer."""
        handshake = request.api_key == ApiKey.SASL_HANDSHAKE
        sasl = self._sasl
        if sasl is None or sasl.complete:
            # No SASL on this listener, or already authenticated (no KIP-368
            # re-authentication): what Kafka's request handler answers.
            why = "SASL is not enabled on this listener" if sasl is None else "re-authentication is not supported"
            log.debug("%s from %s: ILLEGAL_SASL_STATE (%s)", request.api_key.display_name, self._info, why)
            await self._answer(request, illegal_state_response(handshake, why))
            return True
        if handshake:
            step = sasl.handshake(request.api_version, request.body)
        else:
            # PLAIN re-derives a salted password (PBKDF2): off the event loop.
            step = await trio.to_thread.run_sync(sasl.authenticate, request.api_version, request.body)
        await self._answer(request, step.response)
        if step.close:
            # The answer goes out, then the connection closes (the reader
            # stops here; the writer drains what is queued).
            limited.log(logging.WARNING, ("sasl", self._info.peer_host, step.reason),
                        "closing connection from %s: %s", self._info, step.reason)
            self._closing = True
            return False
        if step.principal is not None:
            self._info = replace(self._info, principal=step.principal)
            self._reader.max_frame_size = self._max_frame_size
            log.debug("connection from %s authenticated as %s with %s", self._info, step.principal, sasl.mechanism)
        return True

    async def _answer(self, request: DecodedRequest, body: Any) -> None:
        slot = _Slot()
        slot.complete(self._encode(request, Response(body, request.api_version)))
        await self._enqueue(slot)

    async def _handle(self, request: DecodedRequest, slot: _Slot,
                      task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        try:
            response = await self._handler.handle(request, self._info)
            frame = None if response is None else self._encode(request, response)
        except CloseConnection as e:
            self._close(logging.INFO, "handler refused %s v%d: %s", request.api_key.name, request.api_version, e)
            return
        except Exception:
            self._close(logging.ERROR, "handler failed on %s v%d (correlation id %d)", request.api_key.name,
                        request.api_version, request.header.correlation_id, exc_info=True)
            return
        slot.complete(frame)

    @staticmethod
    def _encode(request: DecodedRequest, response: Response) -> bytes:
        api = api_of(response.body)
        if api != request.api_key or response.api_version != request.api_version:
            raise ValueError(
                f"response {type(response.body).__name__} v{response.api_version} does not answer "
                f"{request.api_key.name} v{request.api_version}")
        # One write per response: the header and body parts (records fields
        # are still the caller's buffers until here) joined once.
        return b"".join(encode_response(response.body, response.api_version, request.header.correlation_id))

    async def _write_loop(self) -> None:
        async with self._slots_out:
            async for slot in self._slots_out:
                await slot.done.wait()
                self._outstanding -= 1
                if slot.frame is None:
                    continue
                try:
                    await self._stream.send_all(slot.frame)
                except _DISCONNECTED as e:
                    self._close(logging.DEBUG, "write failed: %r", e)
                    return
                self._last_activity = trio.current_time()


def _describe(frame: bytes) -> str:
    """``Vote v1 (correlation id 7)`` from the header prefix, for log lines
    about a request that could not be decoded."""
    try:
        api_key, api_version, correlation_id = peek_request_header(frame)
    except KraftProtocolError:
        return f"a {len(frame)}-byte request"
    try:
        name = ApiKey(api_key).display_name
    except ValueError:
        name = f"api key {api_key}"
    return f"{name} v{api_version} request (correlation id {correlation_id})"
