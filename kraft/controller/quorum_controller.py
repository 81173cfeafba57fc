"""The controller state machine (Kafka's ``QuorumController``), sans-IO.

Every controller replays the committed metadata log into an image
(:meth:`QuorumController.replay_batch`, :meth:`QuorumController.load_snapshot`);
a standby controller does nothing else. The raft leader's controller is the
active one (:meth:`activate`): it turns each request into a
:class:`~kraft.controller.result.ControllerResult`, records plus a response.
The driver appends the records (:meth:`appended` tells the controller
where they went) and sends the response once they are committed.

The active controller reads its own writes before they commit: it keeps a
second image, the committed one plus every record it appended
(Kafka's timeline data structures at the last written offset). Leaving
leadership (:meth:`deactivate`) drops that image, and with it whatever did
not commit -- Kafka's revert to the last committed snapshot -- and the
driver fails every response still waiting with NOT_CONTROLLER.

Transitions: standby -> active (:meth:`activate`, once the listener has
replayed the log up to the new epoch's start), active -> standby
(:meth:`deactivate`, on any leader change away from this node).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kraft.controller import cluster_control, producer_ids
from kraft.controller.heartbeats import BrokerHeartbeatManager
from kraft.controller.metadata_version import by_level
from kraft.controller.result import ApiError, ControllerResult, RecordAndVersion
from kraft.controller.settings import ControllerSettings
from kraft.image.builder import ImageBuilder
from kraft.image.model import MetadataImage
from kraft.messages.generated.begin_transaction_record import BeginTransactionRecord
from kraft.messages.generated.config_record import ConfigRecord
from kraft.messages.generated.controller_registration_response import ControllerRegistrationResponse
from kraft.messages.generated.end_transaction_record import EndTransactionRecord
from kraft.messages.generated.no_op_record import NoOpRecord
from kraft.messages.generated.register_broker_record import RegisterBrokerRecord
from kraft.messages.generated.unregister_broker_response import UnregisterBrokerResponse
from kraft.records.metadata import MetadataRecord, encode_metadata_record
from kraft.records.view import OffsetAndEpoch
from kraft.wire.apis import ApiKey

__all__ = ["QuorumController", "RequestContext", "Handler", "NotActiveError", "ReplayError"]

log = logging.getLogger("kraft.controller")

#: ``ConfigResource.Type.BROKER``.
_BROKER = 4


class ReplayError(Exception):
    """A committed record the controller cannot replay."""


class NotActiveError(Exception):
    """A write asked of a controller that is not the active one (the
    driver answers NOT_CONTROLLER)."""


@dataclass(slots=True)
class RequestContext:
    """What a request handler reads: the active image, the settings, the
    sessions, where the next record goes, the time and the randomness."""

    image: MetadataImage
    settings: ControllerSettings
    heartbeats: BrokerHeartbeatManager
    next_offset: int
    now_ms: int
    rng: random.Random
    register_offsets: dict[int, int]


#: A request handler: (context, request body, api version) -> result.
Handler = Callable[[RequestContext, Any, int], ControllerResult[Any]]


@dataclass(slots=True)
class _Active:
    """The active controller's state: it exists only while this node leads."""

    epoch: int
    builder: ImageBuilder
    heartbeats: BrokerHeartbeatManager
    next_offset: int
    last_write_ms: int
    #: broker id -> offset of its latest RegisterBrokerRecord (``registerBrokerRecordOffset``).
    register_offsets: dict[int, int] = field(default_factory=dict)


class QuorumController:
    """One node's controller. ``handlers`` maps api keys to request
    handlers (:data:`Handler`); :func:`kraft.controller.request_handlers.controller_handlers` is the table."""

    def __init__(self, settings: ControllerSettings, handlers: dict[int, Handler], *,
                 bootstrap: Sequence[RecordAndVersion] = (), rng: random.Random | None = None) -> None:
        self.settings = settings
        self._handlers = handlers
        self._bootstrap = tuple(bootstrap)
        self._rng = rng or random.Random()
        self._committed = ImageBuilder()
        self._active: _Active | None = None

    # ------------------------------------------------------------ replay

    @property
    def committed_image(self) -> MetadataImage:
        return self._committed.image

    @property
    def image(self) -> MetadataImage:
        """What requests are answered from: the active image, else the committed one."""
        active = self._active
        return self._committed.image if active is None else active.builder.image

    @property
    def is_active(self) -> bool:
        return self._active is not None

    @property
    def active_epoch(self) -> int | None:
        return None if self._active is None else self._active.epoch

    def load_snapshot(self, snapshot_id: OffsetAndEpoch, records: Iterable[bytes], timestamp_ms: int) -> None:
        self._committed.load_snapshot(snapshot_id, records, timestamp_ms)

    def replay_batch(self, base_offset: int, last_offset: int, epoch: int, timestamp_ms: int,
                     records: Sequence[bytes], *, is_control: bool) -> None:
        """A committed batch (Kafka's ``handleCommit``). A record that cannot
        be replayed raises :class:`ReplayError` (Kafka's controller halts on
        one; the image of a tool skips it)."""
        builder = self._committed
        before = builder.problems
        builder.apply_batch(base_offset, epoch, timestamp_ms, records, is_control=is_control,
                            last_offset=last_offset)
        if builder.problems != before:
            raise ReplayError(f"batch {base_offset}-{last_offset}: {builder.last_problem}")

    # ------------------------------------------------------------ leadership

    def activate(self, epoch: int, next_offset: int, now_ms: int) -> ControllerResult[None]:
        """Become the active controller of ``epoch`` (``QuorumController.claim``):
        the committed image is the start, every registered broker gets a fresh
        session, and the activation records (Kafka's
        ``ActivationRecordsGenerator``) are the first write."""
        image = self._committed.image
        heartbeats = BrokerHeartbeatManager(self.settings.broker_session_timeout_ms)
        for broker in image.brokers.values():
            heartbeats.register(broker.id, broker.epoch, broker.fenced, now_ms)
        self._active = _Active(epoch, ImageBuilder(image), heartbeats, next_offset, now_ms,
                               {b.id: b.epoch for b in image.brokers.values()})
        return self._activation_records(image)

    def _activation_records(self, image: MetadataImage) -> ControllerResult[None]:
        if image.features.metadata_version is not None:
            log.info("Performing controller activation.")
            return ControllerResult((), None)
        records = list(self._bootstrap)
        mv = next((r.message.feature_level for r in records if getattr(r.message, "name", "") == "metadata.version"),
                  None)
        if mv is None:
            raise RuntimeError("the bootstrap metadata has no metadata.version: format the directory "
                               "(kraft storage format) before starting a controller")
        version = by_level(mv)
        elr = next((r.message.feature_level for r in records
                    if getattr(r.message, "name", "") == "eligible.leader.replicas.version"), 0)
        if elr > 0:
            records.append(RecordAndVersion(ConfigRecord(resource_type=_BROKER, resource_name="",
                                                         name="min.insync.replicas",
                                                         value=str(self.settings.min_insync_replicas)), 0))
        log.info("Performing controller activation. The metadata log appears to be empty. Appending %d bootstrap "
                 "record(s) %sat metadata.version %s from bootstrap source 'the binary bootstrap metadata file'.",
                 len(self._bootstrap), "in metadata transaction " if version.is_metadata_transaction_supported else "",
                 version)
        if version.is_metadata_transaction_supported:
            records.insert(0, RecordAndVersion(BeginTransactionRecord(name="Bootstrap records"), 0))
            records.append(RecordAndVersion(EndTransactionRecord(), 0))
            return ControllerResult(tuple(records), None, atomic=False)
        return ControllerResult(tuple(records), None)

    def deactivate(self) -> None:
        """Leave the active role (``QuorumController.renounce``): what was
        written and not committed is forgotten with the active image."""
        if self._active is not None:
            log.info("Renouncing the leadership due to a metadata log event. Reverting to last committed offset %d.",
                     self._committed.offset)
        self._active = None

    # ------------------------------------------------------------ writes

    def _require_active(self) -> _Active:
        active = self._active
        if active is None:
            raise NotActiveError("not the active controller")
        return active

    def handle(self, api_key: int, body: Any, version: int, now_ms: int, *,
               next_offset: int | None = None) -> ControllerResult[Any]:
        """A request's records and response on the active controller (an
        :class:`ApiError` propagates for the driver to answer with).
        ``next_offset``: where the raft leader puts the next record, when
        it wrote records of its own (control records) since :meth:`appended`."""
        active = self._require_active()
        if next_offset is not None:
            active.next_offset = next_offset
        handler = self._handlers.get(api_key)
        if handler is None:
            raise ApiError(35, f"the controller does not handle {ApiKey(api_key).name}")
        ctx = RequestContext(active.builder.image, self.settings, active.heartbeats, active.next_offset, now_ms,
                             self._rng, active.register_offsets)
        return handler(ctx, body, version)

    def encode(self, result: ControllerResult[Any]) -> list[bytes]:
        """The record values of ``result`` as the log holds them."""
        return [encode_metadata_record(r.message, r.version) for r in result.records]

    def appended(self, result: ControllerResult[Any], last_offset: int, epoch: int, now_ms: int) -> None:
        """``result``'s records went into the log ending at ``last_offset``:
        the active image takes them, so the next request sees them."""
        active = self._require_active()
        base = last_offset - len(result.records) + 1
        for i, r in enumerate(result.records):
            offset = base + i
            active.builder.apply(offset, MetadataRecord(r.message.API_KEY, r.version, r.message), epoch=epoch,
                                 timestamp_ms=now_ms)
            if isinstance(r.message, RegisterBrokerRecord):
                active.register_offsets[r.message.broker_id] = offset
        active.next_offset = last_offset + 1
        active.last_write_ms = now_ms

    # ------------------------------------------------------------ periodic tasks

    def tick(self, now_ms: int, *, next_offset: int | None = None) -> list[ControllerResult[Any]]:
        """The periodic tasks due at ``now_ms`` (Kafka's
        ``PeriodicTaskControlManager``): fencing brokers whose session
        expired, and a NoOpRecord after ``metadata.max.idle.interval.ms``
        without a write (so brokers see the log advance)."""
        active = self._active
        if active is None:
            return []
        if next_offset is not None:
            active.next_offset = next_offset
        out: list[ControllerResult[Any]] = []
        fenced = cluster_control.fence_stale_brokers(active.builder.image, self.settings, active.heartbeats, now_ms)
        if fenced.records:
            out.append(fenced)
        idle = self.settings.metadata_max_idle_interval_ms
        if not out and idle > 0 and now_ms - active.last_write_ms >= idle:
            out.append(ControllerResult((RecordAndVersion(NoOpRecord(), 0),), None))
        return out

    def next_deadline_ms(self) -> int | None:
        """When :meth:`tick` next has work."""
        active = self._active
        if active is None:
            return None
        times = [t for t in (active.heartbeats.next_expiry_ms(),) if t is not None]
        idle = self.settings.metadata_max_idle_interval_ms
        if idle > 0:
            times.append(active.last_write_ms + idle)
        return min(times) if times else None


def broker_handlers() -> dict[int, Handler]:
    """The broker-to-controller RPCs this module answers itself."""

    def register(ctx: RequestContext, body: Any, version: int) -> ControllerResult[Any]:
        return cluster_control.register_broker(ctx.image, ctx.settings, ctx.heartbeats, body,
                                               next_offset=ctx.next_offset, now_ms=ctx.now_ms)

    def heartbeat(ctx: RequestContext, body: Any, version: int) -> ControllerResult[Any]:
        offset = ctx.register_offsets.get(body.broker_id, -1)
        return cluster_control.broker_heartbeat(ctx.image, ctx.settings, ctx.heartbeats, body,
                                                register_record_offset=offset, next_offset=ctx.next_offset,
                                                now_ms=ctx.now_ms)

    def unregister(ctx: RequestContext, body: Any, version: int) -> ControllerResult[Any]:
        result = cluster_control.unregister_broker(ctx.image, ctx.settings, ctx.heartbeats, body.broker_id)
        return ControllerResult(result.records, UnregisterBrokerResponse(error_code=0), result.atomic)

    def controller_registration(ctx: RequestContext, body: Any, version: int) -> ControllerResult[Any]:
        result = cluster_control.register_controller(ctx.image, body)
        return ControllerResult(result.records, ControllerRegistrationResponse(error_code=0))

    def allocate(ctx: RequestContext, body: Any, version: int) -> ControllerResult[Any]:
        return producer_ids.allocate_producer_ids(ctx.image, body)

    return {
        ApiKey.BROKER_REGISTRATION: register,
        ApiKey.BROKER_HEARTBEAT: heartbeat,
        ApiKey.UNREGISTER_BROKER: unregister,
        ApiKey.CONTROLLER_REGISTRATION: controller_registration,
        ApiKey.ALLOCATE_PRODUCER_IDS: allocate,
    }
