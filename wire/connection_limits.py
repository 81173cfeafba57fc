"""Connection limits of a node's listeners: how many connections, from
where, for how long, and how fast a request must arrive.

Kafka's keys and defaults (``SocketServerConfigs``):

* ``max.connections`` (default 2147483647): connections across all
  listeners. Kafka's acceptor waits for a free slot when it is reached;
  kraft refuses the connection at once (accept, log, close): a waiting
  acceptor would also hold back the peers of the quorum.
* ``max.connections.per.ip`` (default 2147483647) and
  ``max.connections.per.ip.overrides`` (``host:count,...``): a connection
  over the limit is closed right after accept with Kafka's log line.
* ``connections.max.idle.ms`` (default 600000): a connection with no
  request in progress and nothing read for this long is closed.
* ``socket.request.max.bytes`` (default 104857600): the largest request;
  checked on the 4-byte size prefix, before anything is allocated.
* ``sasl.server.max.receive.size`` (default 524288): the largest request
  before SASL authentication completed (Kafka's bound for the same thing).

kraft's own (Kafka has no equivalent; the ``kraft.`` prefix says so):

* ``kraft.socket.request.receive.timeout.ms`` (default 30000): once a
  request's first byte arrived, all of it must arrive within this time,
  and a TLS handshake must finish within it (slow-loris protection).
* ``kraft.max.in.flight.requests.per.connection`` (default 100): requests
  read and not yet answered on one connection; at the cap the connection
  is not read until an answer goes out (TCP pushes back on the client).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["ConnectionLimits", "ConnectionTracker", "INT32_MAX"]

INT32_MAX = (1 << 31) - 1


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    max_connections: int = INT32_MAX
    max_connections_per_ip: int = INT32_MAX
    max_connections_per_ip_overrides: Mapping[str, int] = field(default_factory=dict)
    idle_timeout_ms: int = 600_000
    request_receive_timeout_ms: int = 30_000
    max_in_flight_per_connection: int = 100
    sasl_max_receive_size: int = 524_288

    def __post_init__(self) -> None:
        for name in ("max_connections", "max_connections_per_ip", "idle_timeout_ms",
                     "request_receive_timeout_ms", "max_in_flight_per_connection", "sasl_max_receive_size"):
            if getattr(self, name) < (0 if name.startswith("max_connections") else 1):
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")

    def per_ip_limit(self, host: str) -> int:
        return self.max_connections_per_ip_overrides.get(host, self.max_connections_per_ip)


class ConnectionTracker:
    """Counts open connections per address and in total (Kafka's
    ``ConnectionQuotas``); one per node, shared by its listeners."""

    def __init__(self, limits: ConnectionLimits) -> None:
        self.limits = limits
        self.total = 0
        self.per_ip: Counter[str] = Counter()
        self.refused = 0
        #: The most connections ever open at once (tests check the limits held).
        self.peak_total = 0
        self.peak_per_ip: Counter[str] = Counter()

    def try_open(self, host: str) -> str | None:
        """Count a new connection from ``host``; None when admitted, else
        why not (the caller closes it)."""
        per_ip = self.limits.per_ip_limit(host)
        if self.per_ip[host] >= per_ip:
            self.refused += 1
            return f"address already has the configured maximum of {per_ip} connections"
        if self.total >= self.limits.max_connections:
            self.refused += 1
            return (f"the node already has the configured maximum of {self.limits.max_connections} connections "
                    "(max.connections)")
        self.per_ip[host] += 1
        self.total += 1
        self.peak_total = max(self.peak_total, self.total)
        self.peak_per_ip[host] = max(self.peak_per_ip[host], self.per_ip[host])
        return None

    def close(self, host: str) -> None:
        self.total -= 1
        self.per_ip[host] -= 1
        if self.per_ip[host] <= 0:
            del self.per_ip[host]
