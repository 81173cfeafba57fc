"""A KRaft node: the raft shell, the metadata log, the controller listener
and the peer connections, assembled from a :class:`~kraft.config.NodeConfig`.

Python API::

    node = KraftNode(NodeConfig.load(path))
    async with trio.open_nursery() as nursery:
        await nursery.start(node.run)
        offset = await node.append([b"record"])     # leader only; waits for commit
        async for batch in node.committed_batches(): # every committed batch, in order
            ...
        await node.shutdown()                        # a leader hands over first
"""

from __future__ import annotations

import logging
import random
import time
from functools import partial
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trio

from kraft import events as ev
from kraft.config import NodeConfig
from kraft.core import RaftCore
from kraft.errors import Errors
from kraft.node import rpc
from kraft.node.shell import ElectionStateStore, RaftShell
from kraft.records.batch import RecordBatch
from kraft.records.control import decode_control_record
from kraft.records.errors import StateFileError
from kraft.records.log import MetadataLog, metadata_partition_dir
from kraft.records.log_config import LogConfig
from kraft.records.state_files import MetaProperties, QuorumStateFile
from kraft.roles import LeaderAndEpoch
from kraft.voters import Endpoint, ReplicaKey, VoterNode, VoterSet
from kraft.wire.api_versions import api_versions_response
from kraft.wire.apis import ApiKey
from kraft.wire.client import ClientPool, ConnectionFailed, NoCommonVersion, RequestTimedOut
from kraft.wire.server import CloseConnection, ConnectionInfo, Response, serve_listener

log = logging.getLogger("kraft.node")

__all__ = ["KraftNode", "NodeStartError", "CommittedBatch"]

#: The APIs a kraft controller listener answers, with the versions we speak.
SUPPORTED_APIS: dict[ApiKey, tuple[int, int]] = {
    ApiKey.FETCH: (4, 18),
    ApiKey.API_VERSIONS: (0, 4),
    ApiKey.VOTE: (0, 2),
    ApiKey.BEGIN_QUORUM_EPOCH: (0, 1),
    ApiKey.END_QUORUM_EPOCH: (0, 1),
    ApiKey.FETCH_SNAPSHOT: (0, 1),
}


class NodeStartError(Exception):
    """The node cannot start (unformatted directory, wrong node id, ...)."""


@dataclass(frozen=True, slots=True)
class CommittedBatch:
    """A committed record batch as listeners see it."""

    base_offset: int
    last_offset: int
    epoch: int
    append_time_ms: int
    is_control: bool
    records: tuple[bytes, ...]  # values; for a control batch, the raw control values


class _PreVoteNeedsV2(Exception):
    """The peer cannot take Vote v2, so it cannot take a pre-vote (KIP-996)."""


class KraftNode:
    def __init__(self, config: NodeConfig, *, rng: random.Random | None = None) -> None:
        self.config = config
        self._rng = rng or random.Random()
        self.shell: RaftShell | None = None
        self.log: MetadataLog | None = None
        self.cluster_id: str | None = None
        self.directory_id = None
        self._waiting: dict[int, tuple[trio.Event, list[ev.RaftResponse]]] = {}
        self._pool = ClientPool(client_id=f"raft-client-{config.node_id}",
                                request_timeout_ms=config.quorum.request_timeout_ms)
        self._nursery: trio.Nursery | None = None
        self.ports: dict[str, int] = {}
        self._endpoints: dict[int, tuple[str, int]] = {v.node_id: (v.host, v.port) for v in config.voters}

    # ------------------------------------------------------------ start

    def _open_storage(self) -> tuple[MetadataLog, MetaProperties]:
        log_dir = Path(self.config.metadata_log_dir)
        meta_path = log_dir / "meta.properties"
        if not meta_path.exists():
            raise NodeStartError(
                f"No meta.properties found in {log_dir} (have you run `kraft storage format`?)")
        try:
            meta = MetaProperties.read(meta_path)
        except StateFileError as e:
            raise NodeStartError(str(e)) from None
        if meta.node_id != self.config.node_id:
            raise NodeStartError(
                f"Stored node id {meta.node_id} doesn't match previous node id {self.config.node_id} in {meta_path}")
        c = self.config
        mlog = MetadataLog.open(
            metadata_partition_dir(log_dir),
            LogConfig(segment_bytes=c.segment_bytes, segment_ms=c.segment_ms,
                      retention_bytes=c.retention_bytes, retention_ms=c.retention_ms),
        )
        if mlog.recovery_report.repairs:
            log.warning("recovered %s: %s", mlog.recovery_report.directory, mlog.recovery_report)
        return mlog, meta

    def _voter_set(self) -> VoterSet:
        listener = self.config.controller_listener_names[0]
        return VoterSet({
            v.node_id: VoterNode(ReplicaKey(v.node_id), (Endpoint(listener, v.host, v.port),))
            for v in self.config.voters
        })

    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Run until cancelled or :meth:`shutdown`. ``task_status.started()``
        once every listener accepts connections (ports in :attr:`ports`)."""
        mlog, meta = self._open_storage()
        self.log = mlog
        self.cluster_id = meta.cluster_id
        self.directory_id = meta.directory_id
        c = self.config
        store = ElectionStateStore(QuorumStateFile(mlog.quorum_state_path),
                                   [v.node_id for v in c.voters] if c.voters else None, meta.cluster_id or "")
        core = RaftCore(
            node_id=c.node_id,
            voters=self._voter_set(),
            log=mlog,
            rng=self._rng,
            config=c.quorum,
            directory_id=meta.directory_id,
            cluster_id=meta.cluster_id,
            election_state=store.read(),
        )
        self.shell = shell = RaftShell(core, mlog, store, send_request=self._send_request,
                                       send_response=self._send_response)
        role = "voter" if c.is_voter_candidate else "observer"
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                for listener in c.listeners:
                    port = await nursery.start(partial(
                        serve_listener, self, listener.host, listener.port,
                        listener=listener.name, max_frame_size=c.socket_request_max_bytes))
                    self.ports[listener.name] = port
                log.info("node %d (%s) of cluster %s listening on %s, log end offset %d",
                         c.node_id, role, meta.cluster_id,
                         ", ".join(f"{n}:{p}" for n, p in self.ports.items()), mlog.end_offset)
                nursery.start_soon(self._run_shell, nursery)
                task_status.started()
        finally:
            await self._pool.aclose()
            mlog.close()

    async def _run_shell(self, nursery: trio.Nursery) -> None:
        assert self.shell is not None
        await self.shell.run()
        nursery.cancel_scope.cancel()

    # ------------------------------------------------------------ API

    @property
    def leader(self) -> LeaderAndEpoch:
        assert self.shell is not None
        return self.shell.leader

    @property
    def high_watermark(self) -> int:
        assert self.shell is not None
        return self.shell.high_watermark

    @property
    def role(self) -> str:
        """The raft role's name (``leader``, ``follower``, ...), ``starting``
        before the core is initialized."""
        if self.shell is None or not self.shell.initialized:
            return "starting"
        return self.shell.core.role.name.lower()

    async def append(self, records: Sequence[bytes]) -> int:
        """Append records as leader; the offset of the last one, once committed.
        Raises :class:`kraft.errors.NotLeaderError` on a non-leader."""
        assert self.shell is not None
        return await self.shell.append(records)

    async def shutdown(self, timeout_ms: int = 5000) -> None:
        """Graceful stop: a leader resigns with EndQuorumEpoch first."""
        if self.shell is not None:
            with trio.move_on_after(timeout_ms / 1000 + 1):
                await self.shell.shutdown(timeout_ms)
        if self._nursery is not None:
            self._nursery.cancel_scope.cancel()

    async def wait_for_leader(self) -> LeaderAndEpoch:
        assert self.shell is not None
        async with self.shell.leader_changed:
            while self.shell.leader.leader_id is None:
                await self.shell.leader_changed.wait()
        return self.shell.leader

    async def committed_batches(self, start_offset: int = 0) -> AsyncIterator[CommittedBatch]:
        """Every committed batch from ``start_offset`` on, as it commits."""
        assert self.shell is not None and self.log is not None
        shell, mlog = self.shell, self.log
        offset = max(start_offset, mlog.start_offset)
        while True:
            async with shell.committed:
                while shell.high_watermark <= offset:
                    await shell.committed.wait()
                hwm = shell.high_watermark
            async with shell.log_lock:
                batches = self._read_committed(offset, hwm)
            for batch in batches:
                yield batch
                offset = batch.last_offset + 1

    def _read_committed(self, offset: int, hwm: int) -> list[CommittedBatch]:
        assert self.log is not None
        out: list[CommittedBatch] = []
        for b in self.log.iter_batches(offset):
            if b.base_offset >= hwm:
                break
            last = b.base_offset + b.last_offset_delta
            if last < offset:
                continue
            recs = b.records()
            out.append(CommittedBatch(b.base_offset, last, b.partition_leader_epoch, b.max_timestamp,
                                      b.is_control, tuple(bytes(r.value or b"") for r in recs)))
        return out

    # ------------------------------------------------------------ server side

    async def handle(self, request: Any, conn: ConnectionInfo) -> Response | None:
        key = request.api_key
        version = request.api_version
        if key == ApiKey.API_VERSIONS:
            return Response(api_versions_response(version, SUPPORTED_APIS, request=request.body,
                                                  supported_features={"kraft.version": (0, 1)}), version)
        if key in rpc.RAFT_API_KEYS:
            return await self._handle_raft(key, version, request.body, conn)
        raise CloseConnection(f"api {ApiKey(key).name} is not served by a kraft controller")

    async def _handle_raft(self, key: int, version: int, body: Any, conn: ConnectionInfo) -> Response:
        shell = self.shell
        assert shell is not None
        event = rpc.request_from_wire(key, version, body)
        if not isinstance(event, ev.RaftRequest.__args__):  # type: ignore[attr-defined]
            return Response(rpc.response_to_wire(key, event, version, conn.listener), version)
        source = _source_of(event)
        correlation = shell.next_correlation_id()
        done = trio.Event()
        slot: list[ev.RaftResponse] = []
        self._waiting[correlation] = (done, slot)
        try:
            shell.deliver(ev.InboundRequest(source, correlation, event))
            wait_ms = self.config.quorum.request_timeout_ms
            if isinstance(event, ev.FetchRequest):
                wait_ms += event.max_wait_ms
            with trio.move_on_after(wait_ms / 1000):
                await done.wait()
        finally:
            self._waiting.pop(correlation, None)
        if not slot:
            response = rpc.error_response(key, Errors.REQUEST_TIMED_OUT)
        else:
            response = slot[0]
        return Response(rpc.response_to_wire(key, response, version, conn.listener), version)

    def _send_response(self, out: ev.OutboundResponse) -> None:
        waiting = self._waiting.get(out.correlation_id)
        if waiting is None:
            return  # the request timed out on our side meanwhile
        done, slot = waiting
        slot.append(out.message)
        done.set()

    # ------------------------------------------------------------ client side

    def _send_request(self, out: ev.OutboundRequest) -> None:
        assert self._nursery is not None
        self._nursery.start_soon(self._request, out)

    async def _request(self, out: ev.OutboundRequest) -> None:
        shell = self.shell
        assert shell is not None
        address = self._endpoints.get(out.destination)
        if address is None:
            shell.deliver(ev.RequestFailed(out.destination, out.correlation_id, "no known address"))
            return
        message = out.message
        key = {ev.VoteRequest: rpc.VOTE, ev.BeginQuorumEpochRequest: rpc.BEGIN_QUORUM_EPOCH,
               ev.EndQuorumEpochRequest: rpc.END_QUORUM_EPOCH, ev.FetchRequest: rpc.FETCH,
               ev.FetchSnapshotRequest: rpc.FETCH_SNAPSHOT}[type(message)]
        listener = self.config.controller_listener_names[0]
        endpoints = self._voter_set().nodes[self.config.node_id].endpoints \
            if self.config.node_id in self._voter_set().nodes else ()

        def build(version: int) -> Any:
            if isinstance(message, ev.VoteRequest) and message.pre_vote and version < 2:
                raise _PreVoteNeedsV2()
            return rpc.request_to_wire(message, version, endpoints)[1]

        timeout = self.config.quorum.request_timeout_ms
        if isinstance(message, ev.FetchRequest):
            timeout += message.max_wait_ms
        client = self._pool.get(out.destination, *address)
        try:
            version, body = await client.request(ApiKey(key), build, timeout_ms=timeout,
                                                 max_version=SUPPORTED_APIS[ApiKey(key)][1])
        except _PreVoteNeedsV2:
            shell.deliver(ev.InboundResponse(out.destination, out.correlation_id,
                                             ev.VoteResponse(error=Errors.UNSUPPORTED_VERSION)))
            return
        except NoCommonVersion as e:
            shell.deliver(ev.RequestFailed(out.destination, out.correlation_id, str(e)))
            return
        except (ConnectionFailed, RequestTimedOut) as e:
            log.debug("request to node %d failed: %s", out.destination, e)
            shell.deliver(ev.RequestFailed(out.destination, out.correlation_id, str(e)))
            return
        shell.deliver(ev.InboundResponse(out.destination, out.correlation_id,
                                         rpc.response_from_wire(key, version, body, listener)))


def _source_of(event: ev.RaftRequest) -> int:
    match event:
        case ev.VoteRequest():
            return event.candidate_key.id
        case ev.BeginQuorumEpochRequest() | ev.EndQuorumEpochRequest():
            return event.leader_id
        case ev.FetchRequest() | ev.FetchSnapshotRequest():
            return event.replica_key.id
    return -1


def now_ms() -> int:
    return int(time.time() * 1000)
