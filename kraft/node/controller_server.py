"""The controller on trio (Kafka's ``QuorumController`` event loop around
the sans-IO :class:`~kraft.controller.quorum_controller.QuorumController`).

One task replays what the raft commits (a listener of the committed log,
:func:`kraft.node.snapshots.committed_items`) and follows leader changes:
this node's own leadership, once the listener has read past the epoch's
start, activates the controller; any other ends it. Requests come in from
the listeners (:meth:`ControllerServer.handle`): the controller turns each
into records and a response, the records go to the raft leader's
accumulator at once (so the next request sees them), and the response is
sent only once they are committed. A leadership that ends first fails the
response with NOT_CONTROLLER (:class:`NotController`): the records' fate is
then the next leader's. A request that writes nothing still waits until
every record before it is committed, as Kafka's controller does, so no
answer reflects state a new leader could drop.

A second task runs the periodic work (fencing brokers whose session
expired, the NoOpRecord of an idle log) at the controller's next deadline.

Snapshots hold the controller's image (:func:`kraft.controller.image_writer.image_records`),
written after ``metadata.log.max.record.bytes.between.snapshots`` or
``metadata.log.max.snapshot.interval.ms`` as Kafka's ``SnapshotGenerator``
does; a restarted controller resumes from the latest one plus the log.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import trio

from kraft.controller.image_writer import image_records
from kraft.controller.quorum_controller import NotActiveError, QuorumController
from kraft.controller.result import ApiError, ControllerResult, RecordAndVersion
from kraft.controller.settings import ControllerSettings
from kraft.node.leader_changes import LeaderChanged
from kraft.node.snapshots import CommittedBatch, SnapshotLoaded, SnapshotPolicy, write_snapshot
from kraft.raft.errors import NotLeaderError
from kraft.records.metadata import MetadataRecordError, decode_metadata_record, encode_metadata_record, read_frame_header
from kraft.records.view import OffsetAndEpoch
from kraft.messages.generated.controller_registration_request import ControllerRegistrationRequest
from kraft.wire.apis import ApiKey

__all__ = ["ControllerRaft", "ControllerServer", "NotController", "bootstrap_records", "controller_settings"]

log = logging.getLogger("kraft.controller")

class NotController(Exception):
    """This node is not (or no longer) the active controller: answer NOT_CONTROLLER."""


class ControllerRaft(Protocol):
    """What the controller needs of the raft: the leader's appends and commits."""

    def next_append_offset(self) -> int: ...

    def append_nowait(self, records: Sequence[bytes], *, epoch: int | None = None) -> OffsetAndEpoch: ...

    async def wait_committed(self, position: OffsetAndEpoch) -> None: ...

    def clock_ms(self) -> int: ...


#: The committed log as a listener reads it (with leader changes).
CommittedItems = Callable[[], AsyncIterator[CommittedBatch | SnapshotLoaded | LeaderChanged]]
#: Writes a snapshot of ``records`` at a committed offset (the embedding API's ``create_snapshot``).
SnapshotWriter = Callable[[OffsetAndEpoch, Sequence[bytes]], Awaitable[object]]


class ControllerServer:
    """Runs one node's controller: :meth:`run` in the node's nursery,
    :meth:`handle` from the listeners."""

    def __init__(self, controller: QuorumController,
                 registration: Callable[[], ControllerRegistrationRequest] | None = None, *,
                 foreign_log_stands_down: bool = False) -> None:
        self.controller = controller
        #: ``kraft.controller=auto``: a committed record that is not a Kafka
        #: metadata record (a replicated log of someone's own records) stands
        #: the controller down with one INFO line instead of an ERROR.
        self._foreign_log_stands_down = foreign_log_stands_down
        #: Set once the controller is off for good: it stood down or cannot
        #: replay the log (:attr:`is_stopped`).
        self.stopped = trio.Event()
        #: This controller's own ControllerRegistration (its listeners and
        #: features, one incarnation per process): applied when it becomes
        #: active, as Kafka's active controller registers itself.
        self._registration = registration
        self._raft: ControllerRaft | None = None
        self._items: CommittedItems | None = None
        self._create_snapshot: SnapshotWriter | None = None
        self._policy: SnapshotPolicy | None = None
        #: Set when the periodic task's deadline may have moved.
        self._changed = trio.Event()

    def attach(self, raft: ControllerRaft, committed_items: CommittedItems,
               create_snapshot: SnapshotWriter | None = None, snapshot_policy: SnapshotPolicy | None = None) -> None:
        """The raft it runs on (built after the controller: the listeners
        need the controller to exist first)."""
        self._raft = raft
        self._items = committed_items
        self._create_snapshot = create_snapshot
        self._policy = snapshot_policy

    @property
    def raft(self) -> ControllerRaft:
        if self._raft is None:
            raise RuntimeError("ControllerServer.attach was not called")
        return self._raft

    @property
    def node_id(self) -> int:
        return self.controller.settings.node_id

    @property
    def is_active(self) -> bool:
        return self.controller.is_active

    # ------------------------------------------------------------ requests

    async def handle(self, api_key: int, body: Any, version: int) -> Any:
        """The response to a request once its records are committed. Raises
        :class:`NotController` on a standby (or when leadership ends first),
        and :class:`~kraft.controller.result.ApiError` for a request the
        controller refuses as a whole."""
        controller = self.controller
        epoch = controller.active_epoch
        if epoch is None:
            raise NotController("not the active controller")
        now = self.raft.clock_ms()
        try:
            next_offset = self.raft.next_append_offset()
            result = controller.handle(api_key, body, version, now, next_offset=next_offset)
            position = self._write(result, epoch, now, next_offset)
        except (NotLeaderError, NotActiveError) as e:
            raise NotController(str(e)) from None
        try:
            await self.raft.wait_committed(position)
        except NotLeaderError as e:
            raise NotController(str(e)) from None
        return result.response

    def _write(self, result: ControllerResult[Any], epoch: int, now: int, next_offset: int) -> OffsetAndEpoch:
        """Append ``result``'s records (nothing to append: the last offset
        written so far); the position to wait for."""
        self._changed.set()
        if not result.records:
            return OffsetAndEpoch(next_offset - 1, epoch)
        position = self.raft.append_nowait(self.controller.encode(result), epoch=epoch)
        self.controller.appended(result, position.offset, epoch, now)
        return position

    # ------------------------------------------------------------ tasks

    async def run(self) -> None:
        """Replay and follow leadership, and run the periodic tasks, until cancelled."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._periodic)
            await self._listen()
            nursery.cancel_scope.cancel()

    async def _listen(self) -> None:
        try:
            await self._replay()
        except (trio.Cancelled, KeyboardInterrupt, OSError):
            raise
        except Exception as e:
            # Kafka's controller halts on a record it cannot replay. Here the
            # raft quorum member (a witness, an observer's copy) keeps
            # running: only the controller stops, and says why once.
            log.error("The controller stopped: it cannot replay the committed metadata log (%s: %s). The node keeps "
                      "serving the raft quorum; controller requests get NOT_CONTROLLER. Run kraft doctor on the "
                      "log directory.", type(e).__name__, e)
            self._stop()

    def stand_down(self, reason: str) -> None:
        """Stop for good, saying why once at INFO (``kraft.controller=auto``)."""
        log.info("Not running Kafka's controller: %s.", reason)
        self._stop()

    def _stop(self) -> None:
        self.controller.deactivate()
        self.stopped.set()

    @property
    def is_stopped(self) -> bool:
        """Off for good: stood down, or a committed record could not be replayed."""
        return self.stopped.is_set()

    async def _replay(self) -> None:
        controller = self.controller
        assert self._items is not None
        async for item in self._items():
            if self.is_stopped:
                return
            if isinstance(item, LeaderChanged):
                self._leader_changed(item)
            elif isinstance(item, SnapshotLoaded):
                # Never the bootstrap snapshot (committed_items): its records
                # are the bootstrap metadata the first activation writes.
                controller.deactivate()  # a leader never loads a snapshot; a follower may
                controller.load_snapshot(item.snapshot_id, item.records, item.last_contained_log_timestamp)
                if self._policy is not None:
                    self._policy.on_snapshot(self.raft.clock_ms())
            elif self._foreign_log_stands_down and (offset := _foreign_record(item)) is not None:
                self.stand_down(f"the metadata log holds records that are not Kafka metadata records (offset "
                                f"{offset}): the node runs the raft quorum only (kraft.controller=auto; true makes "
                                "this an error)")
                return
            else:
                controller.replay_batch(item.base_offset, item.last_offset, item.epoch, item.append_time_ms,
                                        item.records, is_control=item.is_control)
                await self._maybe_snapshot(item)

    def _leader_changed(self, change: LeaderChanged) -> None:
        controller = self.controller
        leader = change.leader
        if self.is_stopped:
            return
        if leader.leader_id != self.node_id:
            if controller.is_active:
                controller.deactivate()
            return
        if controller.active_epoch == leader.epoch:
            return
        now = self.raft.clock_ms()
        try:
            next_offset = self.raft.next_append_offset()
            result = controller.activate(leader.epoch, next_offset, now)
            self._write(result, leader.epoch, now, next_offset)
        except NotLeaderError as e:
            # Gone already (or a witness's hand-over epoch, which appends nothing).
            log.info("Not activating the controller in epoch %d: %s", leader.epoch, e)
            controller.deactivate()
            return
        log.info("Becoming the active controller at epoch %d, next write offset %d.", leader.epoch, next_offset)
        self._register_self(leader.epoch)

    def _register_self(self, epoch: int) -> None:
        """Kafka's ``ControllerRegistrationManager`` of the active controller:
        a RegisterControllerRecord for this incarnation unless the image has
        it (DescribeCluster's controller endpoints come from these records).
        Below metadata.version 3.7-IV0 there are no registrations: nothing."""
        if self._registration is None:
            return
        request = self._registration()
        known = self.controller.image.controllers.get(request.controller_id)
        if known is not None and known.incarnation_id == request.incarnation_id:
            return
        now = self.raft.clock_ms()
        try:
            next_offset = self.raft.next_append_offset()
            result = self.controller.handle(ApiKey.CONTROLLER_REGISTRATION, request, 0, now, next_offset=next_offset)
            self._write(result, epoch, now, next_offset)
        except ApiError as e:
            log.debug("no controller registration: %s", e.message)
        except (NotLeaderError, NotActiveError) as e:
            log.debug("no controller registration: %s", e)
        else:
            log.info("Registered controller %d (incarnation %s) with itself, the active controller.",
                     request.controller_id, request.incarnation_id)

    async def _periodic(self) -> None:
        controller = self.controller
        while True:
            deadline = controller.next_deadline_ms()
            now = self.raft.clock_ms()
            if deadline is not None and deadline <= now:
                self._tick(now)
                await trio.sleep(0)
                continue
            self._changed = trio.Event()
            wait_s = None if deadline is None else (deadline - now) / 1000
            with trio.move_on_after(wait_s if wait_s is not None else float("inf")):
                await self._changed.wait()

    def _tick(self, now: int) -> None:
        controller = self.controller
        epoch = controller.active_epoch
        if epoch is None:
            return
        try:
            next_offset = self.raft.next_append_offset()
            for result in controller.tick(now, next_offset=next_offset):
                self._write(result, epoch, now, self.raft.next_append_offset())
        except NotLeaderError as e:
            log.debug("periodic controller task skipped: %s", e)
            controller.deactivate()

    async def _maybe_snapshot(self, batch: CommittedBatch) -> None:
        policy = self._policy
        if policy is None or self._create_snapshot is None:
            return
        now = self.raft.clock_ms()
        reason = policy.on_commit(batch.size_in_bytes, now)
        if reason is None:
            return
        snapshot_id = OffsetAndEpoch(batch.last_offset + 1, batch.epoch)
        records = [encode_metadata_record(r.message, r.version) for r in image_records(self.controller.committed_image)]
        await write_snapshot(self._create_snapshot, snapshot_id, records, policy, now,
                             f"Creating new KRaft snapshot file snapshot {snapshot_id.offset:020d}-"
                             f"{snapshot_id.epoch:010d} because {reason}.")


def _foreign_record(batch: CommittedBatch) -> int | None:
    """The offset of the batch's first record that is not a Kafka metadata
    record at all (its frame does not parse); None when there is none."""
    if batch.is_control:
        return None
    for index, value in enumerate(batch.records):
        try:
            read_frame_header(value)
        except MetadataRecordError:
            return batch.base_offset + index
    return None


def bootstrap_records(metadata_log_dir: Path) -> list[RecordAndVersion] | None:
    """The bootstrap metadata a formatted controller writes at its first
    activation, from the file Kafka's ``BootstrapMetadata.fromDirectory``
    reads (``bootstrap.checkpoint``, else Kafka 4.4's bootstrap snapshot:
    :func:`kraft.records.bootstrap.bootstrap_metadata_path`). None when it
    names no metadata.version: a log directory formatted for raft alone,
    where no controller runs."""
    from kraft.records.bootstrap import bootstrap_metadata_path, validate_snapshot_bytes

    path = bootstrap_metadata_path(metadata_log_dir)
    if path is None:
        return None
    contents = validate_snapshot_bytes(path.read_bytes(), str(path))
    records = [decode_metadata_record(r.value) for r in contents.data_records()]
    out = [RecordAndVersion(r.message, r.version) for r in records]
    return out if any(getattr(r.message, "name", "") == "metadata.version" for r in out) else None


def controller_settings(node_id: int, cluster_id: str, props: Mapping[str, str],
                        quorum_node_ids: tuple[int, ...] = ()) -> ControllerSettings:
    """The controller's settings from the node's properties (validated by
    :mod:`kraft.config`), Kafka's defaults for the keys not set;
    ``quorum_node_ids``: the static voters' ids."""
    from kraft.config import controller_values

    values = controller_values(props)
    return ControllerSettings(node_id=node_id, cluster_id=cluster_id, static_config=dict(props),
                              quorum_node_ids=quorum_node_ids, **values)
