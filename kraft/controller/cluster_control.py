"""Brokers and controllers joining and leaving the cluster (Kafka's
``ClusterControlManager``, and the heartbeat half of
``ReplicationControlManager``): BrokerRegistration, BrokerHeartbeat,
UnregisterBroker, ControllerRegistration, and the fencing of brokers whose
session expired.

What a broker's state change does to its partitions (ISR, leaders) is
:mod:`kraft.controller.replication_control`'s; this module decides when.
"""

from __future__ import annotations

import logging

from kraft.controller import feature_control, replication_control
from kraft.controller.replica_checks import check_broker_epoch
from kraft.controller.heartbeats import BrokerControlState, BrokerHeartbeatManager, HeartbeatIntent
from kraft.controller.metadata_version import by_level
from kraft.controller.result import ApiError, ControllerResult, RecordAndVersion
from kraft.controller.settings import ControllerSettings
from kraft.image.model import MetadataImage, ZERO_UUID
from kraft.messages.generated import register_broker_record as rbr
from kraft.messages.generated import register_controller_record as rcr
from kraft.messages.generated.broker_heartbeat_request import BrokerHeartbeatRequest
from kraft.messages.generated.broker_heartbeat_response import BrokerHeartbeatResponse
from kraft.messages.generated.broker_registration_request import BrokerRegistrationRequest
from kraft.messages.generated.broker_registration_response import BrokerRegistrationResponse
from kraft.messages.generated.controller_registration_request import ControllerRegistrationRequest

from kraft.messages.generated.unregister_broker_record import UnregisterBrokerRecord
from kraft.messages.json_form import uuid_to_kafka
from kraft.wire.errors import ErrorCode

__all__ = ["register_broker", "broker_heartbeat", "unregister_broker", "register_controller",
           "fence_stale_brokers"]

log = logging.getLogger("kraft.controller")

#: ``DirectoryId.reserved``: UNASSIGNED, LOST, MIGRATING (the first 100 ids are reserved).
_RESERVED_DIRECTORY_IDS = 100


def _check_directories(image: MetadataImage, request: BrokerRegistrationRequest) -> None:
    dirs = list(request.log_dirs)
    if not dirs:
        raise ApiError(ErrorCode.INVALID_REGISTRATION, "No directories specified in request")
    if any(d.int < _RESERVED_DIRECTORY_IDS for d in dirs):
        raise ApiError(ErrorCode.INVALID_REGISTRATION, "Reserved directory ID in request")
    if len(set(dirs)) != len(dirs):
        raise ApiError(ErrorCode.INVALID_REGISTRATION, "Duplicate directory ID in request")
    for other in image.brokers.values():
        if other.id != request.broker_id:
            for d in dirs:
                if d in other.directories:
                    raise ApiError(ErrorCode.INVALID_REGISTRATION,
                                   f"Broker {other.id} is already registered with directory {uuid_to_kafka(d)}")


def register_broker(image: MetadataImage, settings: ControllerSettings, heartbeats: BrokerHeartbeatManager,
                    request: BrokerRegistrationRequest, *, next_offset: int, now_ms: int
                    ) -> ControllerResult[BrokerRegistrationResponse]:
    """``ClusterControlManager.registerBroker``: a new incarnation gets the
    broker epoch ``next_offset`` (the offset its RegisterBrokerRecord is
    written at) and starts fenced; the same incarnation again keeps its
    epoch and state. Records that clean up after the previous incarnation
    (its partitions, as if it were fenced) come first."""
    if request.cluster_id != settings.cluster_id:
        raise ApiError(ErrorCode.INCONSISTENT_CLUSTER_ID,
                       f"Expected cluster ID {settings.cluster_id}, but got cluster ID {request.cluster_id}")
    broker_id = request.broker_id
    existing = image.brokers.get(broker_id)
    if existing is not None and heartbeats.has_valid_session(broker_id, existing.epoch, now_ms) \
            and request.incarnation_id != existing.incarnation_id:
        raise ApiError(ErrorCode.DUPLICATE_BROKER_REGISTRATION,
                       "Another broker is registered with that broker id. If the broker was recently restarted this "
                       "should self-resolve once the heartbeat manager expires the broker's session.")
    if request.is_migrating_zk_broker:
        raise ApiError(ErrorCode.BROKER_ID_NOT_REGISTERED, "Controller does not support registering ZK brokers.")
    mv = by_level(image.features.metadata_version or 0)
    if mv.is_directory_assignment_supported:
        _check_directories(image, request)
    refusal = feature_control.broker_supports_finalized(
        image, {f.name: (f.min_supported_version, f.max_supported_version) for f in request.features}, broker_id)
    if refusal is not None:
        raise refusal
    features = [rbr.BrokerFeature(name=f.name, min_supported_version=f.min_supported_version,
                                  max_supported_version=f.max_supported_version) for f in request.features]
    record = rbr.RegisterBrokerRecord(
        broker_id=broker_id, is_migrating_zk_broker=False, incarnation_id=request.incarnation_id,
        rack=request.rack, features=features,
        end_points=[rbr.BrokerEndpoint(name=e.name, host=e.host, port=e.port, security_protocol=e.security_protocol)
                    for e in request.listeners])
    if mv.is_directory_assignment_supported:
        record.log_dirs = list(request.log_dirs)
    records: list[RecordAndVersion] = []
    if existing is None or request.incarnation_id != existing.incarnation_id:
        if existing is not None:
            # A clean shutdown: the new incarnation names the epoch it had
            # (Kafka's cleanShutdownDetectionEnabled is on by default).
            clean = request.previous_broker_epoch == existing.epoch
            records.extend(replication_control.broker_shutdown(image, settings, broker_id, clean))
            log.info("Registering a new incarnation of broker %d. Previous incarnation ID was %s; new incarnation "
                     "ID is %s. Generated %d record(s) to clean up previous incarnations. Broker epoch will become "
                     "%d.", broker_id, uuid_to_kafka(existing.incarnation_id), uuid_to_kafka(request.incarnation_id),
                     len(records), next_offset)
        else:
            log.info("No previous registration found for broker %d. New incarnation ID is %s.  Generated 0 "
                     "record(s) to clean up previous incarnations. New broker epoch is %d.", broker_id,
                     uuid_to_kafka(request.incarnation_id), next_offset)
        # Kafka's broker epoch is the controller's next write offset when
        # the registration is handled: the first record of this result.
        record.broker_epoch = next_offset
        record.fenced = True
        heartbeats.remove(broker_id)
    else:
        log.info("Amending registration of broker %d, incarnation ID %s. Broker epoch remains %d.", broker_id,
                 uuid_to_kafka(request.incarnation_id), existing.epoch)
        record.fenced = existing.fenced
        record.in_controlled_shutdown = existing.in_controlled_shutdown
        record.broker_epoch = existing.epoch
    records.append(RecordAndVersion(record, mv.register_broker_record_version))
    heartbeats.register(broker_id, record.broker_epoch, record.fenced, now_ms)
    return ControllerResult(tuple(records), BrokerRegistrationResponse(error_code=0, broker_epoch=record.broker_epoch),
                            atomic=False)


def broker_heartbeat(image: MetadataImage, settings: ControllerSettings, heartbeats: BrokerHeartbeatManager,
                     request: BrokerHeartbeatRequest, *, register_record_offset: int, next_offset: int, now_ms: int
                     ) -> ControllerResult[BrokerHeartbeatResponse]:
    """``ReplicationControlManager.processBrokerHeartbeat``."""
    broker_id, epoch = request.broker_id, request.broker_epoch
    check_broker_epoch(image, broker_id, epoch)
    intent = HeartbeatIntent(request.want_fence, request.want_shut_down, request.current_metadata_offset)
    current, nxt = heartbeats.next_state(broker_id, intent, register_record_offset,
                                         replication_control.leaders_led_by(image, broker_id) > 0)
    records: list[RecordAndVersion] = []
    if current is not nxt:
        if nxt in (BrokerControlState.FENCED, BrokerControlState.SHUTDOWN_NOW):
            if not image.brokers[broker_id].fenced:
                records.extend(replication_control.broker_fenced(image, settings, broker_id))
        elif nxt is BrokerControlState.UNFENCED:
            records.extend(replication_control.broker_unfenced(image, settings, broker_id, epoch))
        elif nxt is BrokerControlState.CONTROLLED_SHUTDOWN:
            records.extend(replication_control.broker_in_controlled_shutdown(image, settings, broker_id, epoch))
    heartbeats.touch(broker_id, nxt.fenced, request.current_metadata_offset, now_ms)
    if nxt is BrokerControlState.CONTROLLED_SHUTDOWN:
        heartbeats.mark_controlled_shutdown(broker_id, next_offset + len(records))
    response = BrokerHeartbeatResponse(
        error_code=0, is_caught_up=request.current_metadata_offset >= register_record_offset,
        is_fenced=nxt.fenced, should_shut_down=nxt.should_shut_down)
    return ControllerResult(tuple(records), response)


def unregister_broker(image: MetadataImage, settings: ControllerSettings, heartbeats: BrokerHeartbeatManager,
                      broker_id: int) -> ControllerResult[None]:
    """``ReplicationControlManager.unregisterBroker``."""
    registration = image.brokers.get(broker_id)
    if registration is None:
        raise ApiError(ErrorCode.BROKER_ID_NOT_REGISTERED, f"Broker ID {broker_id} is not currently registered")
    records = list(replication_control.broker_unregistered(image, settings, broker_id, registration.epoch))
    records.append(RecordAndVersion(UnregisterBrokerRecord(broker_id=broker_id, broker_epoch=registration.epoch), 0))
    heartbeats.remove(broker_id)
    return ControllerResult(tuple(records), None)


def fence_stale_brokers(image: MetadataImage, settings: ControllerSettings, heartbeats: BrokerHeartbeatManager,
                        now_ms: int) -> ControllerResult[list[int]]:
    """``maybeFenceOneStaleBroker``, for every broker whose session expired
    (Kafka fences one per run of its periodic task, every few hundred ms)."""
    records: list[RecordAndVersion] = []
    fenced = []
    for broker_id in heartbeats.stale_brokers(now_ms):
        registration = image.brokers.get(broker_id)
        heartbeats.touch(broker_id, True, -1, now_ms)
        if registration is None or registration.fenced:
            continue
        log.info("Fencing broker %d because its session has timed out.", broker_id)
        records.extend(replication_control.broker_fenced(image, settings, broker_id))
        fenced.append(broker_id)
        break  # one per result: each is computed from the image before it
    return ControllerResult(tuple(records), fenced)


def register_controller(image: MetadataImage, request: ControllerRegistrationRequest) -> ControllerResult[None]:
    """``ClusterControlManager.registerController``."""
    mv = by_level(image.features.metadata_version or 0)
    if not mv.is_controller_registration_supported:
        raise ApiError(ErrorCode.UNSUPPORTED_VERSION,
                       "The current MetadataVersion is too old to support controller registrations.")
    record = rcr.RegisterControllerRecord(
        controller_id=request.controller_id, incarnation_id=request.incarnation_id or ZERO_UUID,
        zk_migration_ready=False,
        end_points=[rcr.ControllerEndpoint(name=e.name, host=e.host, port=e.port, security_protocol=e.security_protocol)
                    for e in request.listeners],
        features=[rcr.ControllerFeature(name=f.name, min_supported_version=f.min_supported_version,
                                        max_supported_version=f.max_supported_version) for f in request.features])
    return ControllerResult.of(None, RecordAndVersion(record, 0))
