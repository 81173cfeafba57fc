"""The node's metrics port (``metrics.prometheus.port``): a small HTTP/1.1
server inside the node's trio loop.

* ``GET /metrics`` -- the raft metrics in the Prometheus text format
  (:mod:`kraft.node.raft_metrics`, rendered by ``prometheus_client``);
* ``GET /healthz`` -- 200 while the raft loop runs and the metadata log
  directory can be written (a small file written, fsynced and removed), 503
  with the reason otherwise: restart me;
* ``GET /readyz`` -- 200 once a leader is known and, for a voter, this node
  is that leader or fetched from it within ``controller.quorum.fetch.timeout.ms``;
  503 with the reason otherwise: do not count on me now;
* ``GET /status`` -- the same, with the raft-metrics gauges, as JSON (what
  ``kraft node status`` prints).

Why in the trio loop rather than ``prometheus_client``'s own thread server:
the gauges and the health checks read the raft core and the raft driver, which
only the trio thread may touch consistently (a thread would read them while
the raft driver mutates them), and the server ends with the node's nursery. One
connection at a time per request, ``Connection: close``; every read and
write is bounded by a timeout, and a malformed request gets a 400.

It reads a node through a :class:`MetricsTarget` (its raft driver and identity),
never the node object itself.
"""

from __future__ import annotations

from collections.abc import Callable

import json
import logging
import math
import os
import tempfile
from dataclasses import dataclass
from functools import partial
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

import trio
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

from kraft.node.raft_metrics import RaftMetrics, current_state
from kraft.raft.roles import Follower, Leader
from kraft.raft.witness_policy import WitnessDecision

if TYPE_CHECKING:
    from kraft.node.raft_view import RaftView

log = logging.getLogger("kraft.node")

__all__ = ["MetricsTarget", "serve_metrics", "health", "readiness", "status"]

_MAX_HEAD = 8192
_IO_TIMEOUT_S = 5.0
_PROBE_TIMEOUT_S = 5.0


@dataclass(frozen=True, slots=True)
class MetricsTarget:
    """What the endpoints read of a node: its raft driver and who it is."""

    raft_driver: RaftView
    node_id: int
    cluster_id: str | None
    #: The directory /healthz writes a probe file to.
    metadata_log_dir: str
    #: May this voter lead, and why (kraft/raft/witness_policy.py); None on an observer.
    witness_decision: Callable[[], WitnessDecision | None] = lambda: None


async def serve_metrics(target: MetricsTarget, metrics: RaftMetrics, host: str, port: int, *,
                        task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    """Serve until cancelled; ``task_status.started(port)`` once listening."""
    listeners = await trio.open_tcp_listeners(port, host=host or None)
    bound = listeners[0].socket.getsockname()[1]
    task_status.started(bound)
    await trio.serve_listeners(partial(_connection, target, metrics), listeners)


async def _connection(target: MetricsTarget, metrics: RaftMetrics, stream: trio.SocketStream) -> None:
    try:
        async with stream:
            with trio.move_on_after(_IO_TIMEOUT_S):
                head = await _read_head(stream)
                if head is None:
                    await _send(stream, HTTPStatus.BAD_REQUEST, b"bad request\n")
                    return
                method, path = head
                status_code, body, content_type = await _route(target, metrics, method, path)
                await _send(stream, status_code, body, content_type, head_only=method == "HEAD")
    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
        pass  # the client went away


async def _read_head(stream: trio.SocketStream) -> tuple[str, str] | None:
    data = b""
    while b"\r\n\r\n" not in data and b"\n\n" not in data:
        chunk = await stream.receive_some(4096)
        if not chunk:
            break
        data += chunk
        if len(data) > _MAX_HEAD:
            return None
    line = data.split(b"\n", 1)[0].decode("latin-1").strip()
    parts = line.split()
    if len(parts) != 3 or not parts[2].startswith("HTTP/"):
        return None
    return parts[0].upper(), parts[1].split("?", 1)[0]


async def _send(stream: trio.SocketStream, code: HTTPStatus, body: bytes,
                content_type: str = "text/plain; charset=utf-8", head_only: bool = False) -> None:
    head = (f"HTTP/1.1 {code.value} {code.phrase}\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
    await stream.send_all(head if head_only else head + body)


async def _route(target: MetricsTarget, metrics: RaftMetrics, method: str,
                 path: str) -> tuple[HTTPStatus, bytes, str]:
    text = "text/plain; charset=utf-8"
    if method not in ("GET", "HEAD"):
        return HTTPStatus.METHOD_NOT_ALLOWED, b"only GET\n", text
    if path == "/metrics":
        return HTTPStatus.OK, generate_latest(metrics.registry), CONTENT_TYPE_LATEST
    if path == "/healthz":
        ok, reason = await health(target)
        return (HTTPStatus.OK if ok else HTTPStatus.SERVICE_UNAVAILABLE), f"{reason}\n".encode(), text
    if path == "/readyz":
        ok, reason = readiness(target)
        return (HTTPStatus.OK if ok else HTTPStatus.SERVICE_UNAVAILABLE), f"{reason}\n".encode(), text
    if path == "/status":
        body = json.dumps(await status(target, metrics), indent=2, sort_keys=True).encode() + b"\n"
        return HTTPStatus.OK, body, "application/json"
    return HTTPStatus.NOT_FOUND, b"not found: try /metrics, /healthz, /readyz or /status\n", text


def _probe_write(directory: str) -> None:
    fd, path = tempfile.mkstemp(prefix=".healthz-", dir=directory)
    try:
        os.write(fd, b"ok")
        os.fsync(fd)
    finally:
        os.close(fd)
        os.unlink(path)


async def health(target: MetricsTarget) -> tuple[bool, str]:
    """Liveness: the raft loop runs and the metadata log directory takes a
    write (a disk that went read-only or full fails here)."""
    raft_driver = target.raft_driver
    if raft_driver.stopped.is_set():
        return False, "the raft loop is not running"
    if raft_driver.storage_error is not None:
        return False, f"the metadata log cannot be written: {raft_driver.storage_error}"
    try:
        with trio.fail_after(_PROBE_TIMEOUT_S):
            await trio.to_thread.run_sync(_probe_write, target.metadata_log_dir, abandon_on_cancel=True)
    except trio.TooSlowError:
        return False, f"writing to {target.metadata_log_dir} took over {_PROBE_TIMEOUT_S:g} s"
    except OSError as e:
        return False, f"cannot write to {target.metadata_log_dir}: {e}"
    return True, "ok"


def readiness(target: MetricsTarget) -> tuple[bool, str]:
    """Readiness: a known leader and, for a voter, being that leader or having
    fetched from it within ``controller.quorum.fetch.timeout.ms``."""
    raft_driver = target.raft_driver
    if not raft_driver.initialized or raft_driver.stopped.is_set():
        return False, "stopped" if raft_driver.stopped.is_set() else "starting"
    core = raft_driver.core
    role = core.role
    state = current_state(role, core.is_voter)
    if core.leader_id is None:
        return False, f"no known leader in epoch {core.epoch} ({state})"
    if isinstance(role, Leader):
        return True, f"leader of epoch {core.epoch}"
    if not isinstance(role, Follower):
        return False, f"{state} in epoch {core.epoch} (last leader {core.leader_id})"
    if not core.is_voter:
        return True, f"observer of leader {role.leader_id} in epoch {core.epoch}"
    if not role.has_fetched_from_leader:
        return False, f"has not fetched from leader {role.leader_id} of epoch {core.epoch} yet"
    if role.fetch_deadline_ms is not None and raft_driver.clock_ms() >= role.fetch_deadline_ms:
        return False, f"no fetch from leader {role.leader_id} within controller.quorum.fetch.timeout.ms"
    return True, f"follower of leader {role.leader_id} in epoch {core.epoch}"


async def status(target: MetricsTarget, metrics: RaftMetrics) -> dict[str, Any]:
    healthy, health_reason = await health(target)
    ready, ready_reason = readiness(target)
    gauges = {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in metrics.snapshot().items()}
    raft_driver = target.raft_driver
    voters = list(raft_driver.core.voters.voter_ids) if raft_driver.initialized else []
    return {
        "node_id": target.node_id,
        "cluster_id": target.cluster_id,
        "healthy": healthy,
        "health": health_reason,
        "ready": ready,
        "readiness": ready_reason,
        "voters": voters,
        "raft_metrics": gauges,
        # kraft: may this voter lead, and why (kraft/raft/witness_policy.py); null on an observer.
        "witness": None if (decision := target.witness_decision()) is None else decision.describe(),
    }
