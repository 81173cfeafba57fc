"""Per-peer request bookkeeping: one request in flight per peer, timeouts, backoff.

Kafka's ``RequestManager``. A connection to a peer is READY, AWAITING a
response to exactly one correlation id, or BACKING_OFF after a failed
request. A request that gets no answer within ``request.timeout.ms`` makes the
connection ready again (its late answer is then ignored); a failed one makes
it back off for ``retry.backoff.ms``, doubled for each protocol violation
in a row from that peer (:meth:`on_violation`; up to ``request.timeout.ms``),
so a peer that keeps answering nonsense is asked less and less often
(Kafka's clients back off exponentially, KIP-580). ``reset_all`` forgets every in-flight
request, which the core does on each role change so answers meant for the old
role are dropped.

Followers use :meth:`has_any_inflight` to keep a single Fetch in flight across
all peers: two concurrent fetches could append the same offsets twice.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum


class _State(Enum):
    READY = "ready"
    AWAITING_RESPONSE = "awaiting"
    BACKING_OFF = "backing-off"


@dataclass(slots=True)
class _Connection:
    state: _State = _State.READY
    correlation_id: int | None = None
    #: The type of the request in flight: its answer must be the matching response.
    request_kind: str | None = None
    last_send_ms: int = 0
    last_fail_ms: int = 0
    #: Protocol violations from this peer since its last good answer.
    violations: int = 0


class RequestManager:
    def __init__(self, retry_backoff_ms: int, request_timeout_ms: int, rng: random.Random) -> None:
        self._retry_backoff_ms = retry_backoff_ms
        self._request_timeout_ms = request_timeout_ms
        self._rng = rng
        self._connections: dict[int, _Connection] = {}
        self._next_correlation_id = 0

    def _conn(self, node: int) -> _Connection:
        c = self._connections.get(node)
        if c is None:
            c = self._connections[node] = _Connection()
        return c

    def _backoff_ms(self, c: _Connection) -> int:
        """``retry.backoff.ms``, doubled per violation in a row, at most ``request.timeout.ms``."""
        if not c.violations:
            return self._retry_backoff_ms
        return max(self._retry_backoff_ms,
                   min(self._retry_backoff_ms << min(c.violations, 20), self._request_timeout_ms))

    def _refresh(self, c: _Connection, now_ms: int) -> None:
        if c.state is _State.BACKING_OFF and now_ms >= c.last_fail_ms + self._backoff_ms(c):
            c.state = _State.READY
        elif c.state is _State.AWAITING_RESPONSE and now_ms >= c.last_send_ms + self._request_timeout_ms:
            c.state = _State.READY
            c.correlation_id = None

    # --- queries --------------------------------------------------------------

    def is_ready(self, node: int, now_ms: int) -> bool:
        c = self._conn(node)
        self._refresh(c, now_ms)
        return c.state is _State.READY

    def is_backing_off(self, node: int, now_ms: int) -> bool:
        c = self._conn(node)
        self._refresh(c, now_ms)
        return c.state is _State.BACKING_OFF

    def has_inflight(self, node: int, now_ms: int) -> bool:
        c = self._conn(node)
        self._refresh(c, now_ms)
        return c.state is _State.AWAITING_RESPONSE

    def has_request_timed_out(self, node: int, now_ms: int) -> bool:
        c = self._conn(node)
        return c.state is _State.AWAITING_RESPONSE and now_ms >= c.last_send_ms + self._request_timeout_ms

    def has_any_inflight(self, now_ms: int) -> bool:
        return any(self.has_inflight(n, now_ms) for n in list(self._connections))

    def is_response_expected(self, node: int, correlation_id: int) -> bool:
        c = self._connections.get(node)
        return c is not None and c.state is _State.AWAITING_RESPONSE and c.correlation_id == correlation_id

    def request_kind(self, node: int) -> str | None:
        """The name of the request type in flight to ``node``."""
        c = self._connections.get(node)
        return None if c is None else c.request_kind

    def time_until_ready(self, node: int, now_ms: int) -> int:
        """0 if ready, else the remaining backoff or request time."""
        c = self._conn(node)
        self._refresh(c, now_ms)
        if c.state is _State.BACKING_OFF:
            return c.last_fail_ms + self._backoff_ms(c) - now_ms
        if c.state is _State.AWAITING_RESPONSE:
            return c.last_send_ms + self._request_timeout_ms - now_ms
        return 0

    def find_ready_bootstrap(self, now_ms: int, candidates: Sequence[int]) -> int | None:
        """A random ready peer among ``candidates`` — but none while any request
        is in flight (Kafka's ``findReadyBootstrapServer``)."""
        if not candidates or self.has_any_inflight(now_ms):
            return None
        start = self._rng.randrange(len(candidates))
        for i in range(len(candidates)):
            node = candidates[(start + i) % len(candidates)]
            if self.is_ready(node, now_ms):
                return node
        return None

    def send_to_bootstrap(self, now_ms: int, candidates: Sequence[int], kind: str) -> tuple[int, int, int] | None:
        """:meth:`find_ready_bootstrap`, a correlation id and :meth:`sent` in
        one call: the peer picked, the correlation id of the ``kind`` request
        recorded as sent to it, and the time until that peer may be tried
        again; None when no peer can be asked now."""
        node = self.find_ready_bootstrap(now_ms, candidates)
        if node is None:
            return None
        correlation_id = self.next_correlation_id()
        return node, correlation_id, self.sent(node, correlation_id, now_ms, kind)

    def backoff_before_available(self, now_ms: int, candidates: Sequence[int]) -> int | None:
        """Time until :meth:`find_ready_bootstrap` can pick one of ``candidates``
        (``None`` if there are none). While a request is in flight that is when
        it times out (its answer wakes the core earlier anyway)."""
        if not candidates:
            return None
        inflight = [
            c.last_send_ms + self._request_timeout_ms - now_ms
            for n, c in self._connections.items()
            if self.has_inflight(n, now_ms)
        ]
        if inflight:
            return max(0, min(inflight))
        return min(self.time_until_ready(n, now_ms) for n in candidates)

    # --- updates --------------------------------------------------------------

    def reserve(self, node: int, now_ms: int) -> int | None:
        """A correlation id for a request to ``node`` if its connection is
        ready (:meth:`is_ready` then :meth:`next_correlation_id`), else None."""
        c = self._conn(node)
        self._refresh(c, now_ms)
        if c.state is not _State.READY:
            return None
        return self.next_correlation_id()

    def sent(self, node: int, correlation_id: int, now_ms: int, kind: str | None = None) -> int:
        """:meth:`on_request_sent`, then :meth:`time_until_ready`."""
        self.on_request_sent(node, correlation_id, now_ms, kind)
        return self.time_until_ready(node, now_ms)

    def next_correlation_id(self) -> int:
        self._next_correlation_id += 1
        return self._next_correlation_id

    def on_request_sent(self, node: int, correlation_id: int, now_ms: int, kind: str | None = None) -> None:
        c = self._conn(node)
        c.state = _State.AWAITING_RESPONSE
        c.correlation_id = correlation_id
        c.request_kind = kind
        c.last_send_ms = now_ms

    def on_response(self, node: int, correlation_id: int, success: bool, now_ms: int) -> None:
        c = self._connections.get(node)
        if c is None or c.correlation_id != correlation_id or c.state is not _State.AWAITING_RESPONSE:
            return
        c.correlation_id = None
        if success:
            c.state = _State.READY
            c.violations = 0
        else:
            c.state = _State.BACKING_OFF
            c.last_fail_ms = now_ms

    def on_violation(self, node: int) -> None:
        """``node`` broke the protocol in its answer: the failure that follows backs off longer."""
        self._conn(node).violations += 1

    def reset(self, node: int) -> None:
        c = self._conn(node)
        c.state = _State.READY
        c.correlation_id = None

    def reset_all(self) -> None:
        for c in self._connections.values():
            c.state = _State.READY
            c.correlation_id = None
