"""Brokers joining, heartbeating and leaving: Kafka's
``ClusterControlManager.registerBroker``, ``ReplicationControlManager.processBrokerHeartbeat``,
``BrokerHeartbeatManager.calculateNextBrokerState`` and
``ProducerIdControlManager.generateNextProducerId``, on images built from records."""

from __future__ import annotations

import uuid

import pytest

from kraft.controller import cluster_control, producer_ids
from kraft.controller.heartbeats import BrokerHeartbeatManager
from kraft.controller.result import ApiError
from kraft.controller.settings import ControllerSettings
from kraft.image.model import MetadataImage
from kraft.messages.generated import broker_registration_request as brq
from kraft.messages.generated.allocate_producer_ids_request import AllocateProducerIdsRequest
from kraft.messages.generated.broker_heartbeat_request import BrokerHeartbeatRequest
from kraft.messages.generated.broker_registration_change_record import BrokerRegistrationChangeRecord
from kraft.messages.generated.register_broker_record import RegisterBrokerRecord
from kraft.wire.errors import ErrorCode
from tests.controller.images import features, replay

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qk"
SETTINGS = ControllerSettings(node_id=1, cluster_id=CLUSTER_ID, broker_session_timeout_ms=9000)


def registration_request(broker_id: int, *, cluster_id: str = CLUSTER_ID, incarnation: int = 1,
             mv: tuple[int, int] = (7, 33)) -> brq.BrokerRegistrationRequest:
    return brq.BrokerRegistrationRequest(
        broker_id=broker_id, cluster_id=cluster_id, incarnation_id=uuid.UUID(int=incarnation),
        listeners=[brq.Listener(name="PLAINTEXT", host="127.0.0.1", port=9092, security_protocol=0)],
        features=[brq.Feature(name="metadata.version", min_supported_version=mv[0], max_supported_version=mv[1])],
        rack=None, log_dirs=[uuid.UUID(int=1000 + broker_id)], previous_broker_epoch=-1)


def _registered(broker_id: int = 10, *, now_ms: int = 0) -> tuple[MetadataImage, BrokerHeartbeatManager, int]:
    """An image with one registered (fenced) broker, its sessions and its epoch."""
    heartbeats = BrokerHeartbeatManager(SETTINGS.broker_session_timeout_ms)
    image = replay(features(33))
    result = cluster_control.register_broker(image, SETTINGS, heartbeats, registration_request(broker_id),
                                             next_offset=40, now_ms=now_ms)
    return replay(result.records, image), heartbeats, result.response.broker_epoch


def test_a_new_broker_is_registered_fenced_with_the_next_write_offset_as_its_epoch() -> None:
    """registerBroker: a new incarnation's epoch is the controller's next write offset; it starts fenced."""
    image, _, epoch = _registered()
    assert epoch == 40
    broker = image.brokers[10]
    assert (broker.epoch, broker.fenced, broker.incarnation_id) == (40, True, uuid.UUID(int=1))


def test_the_wrong_cluster_id_is_inconsistent_cluster_id() -> None:
    """registerBroker: InconsistentClusterIdException "Expected cluster ID X, but got cluster ID Y"."""
    with pytest.raises(ApiError) as e:
        cluster_control.register_broker(replay(features(33)), SETTINGS, BrokerHeartbeatManager(9000),
                                        registration_request(10, cluster_id="other"), next_offset=1, now_ms=0)
    assert e.value.error == ErrorCode.INCONSISTENT_CLUSTER_ID
    assert e.value.message == f"Expected cluster ID {CLUSTER_ID}, but got cluster ID other"


def test_a_second_incarnation_while_the_first_has_a_session_is_a_duplicate() -> None:
    """registerBroker: DuplicateBrokerRegistrationException while the old session is valid; once it expired, the
    new incarnation replaces it with a new epoch."""
    image, heartbeats, _ = _registered(now_ms=0)
    with pytest.raises(ApiError) as e:
        cluster_control.register_broker(image, SETTINGS, heartbeats, registration_request(10, incarnation=2),
                                        next_offset=50, now_ms=1000)
    assert e.value.error == ErrorCode.DUPLICATE_BROKER_REGISTRATION
    result = cluster_control.register_broker(image, SETTINGS, heartbeats, registration_request(10, incarnation=2),
                                             next_offset=50, now_ms=10_000)
    assert result.response.broker_epoch == 50


def test_a_broker_without_the_finalized_metadata_version_is_unsupported_version() -> None:
    """processRegistrationFeature: the broker's range must hold the finalized level."""
    with pytest.raises(ApiError) as e:
        cluster_control.register_broker(replay(features(33)), SETTINGS, BrokerHeartbeatManager(9000),
                                        registration_request(10, mv=(7, 27)), next_offset=1, now_ms=0)
    assert e.value.error == ErrorCode.UNSUPPORTED_VERSION
    assert "does not support finalized version 33 of metadata.version" in str(e.value.message)


def _heartbeat(image: MetadataImage, heartbeats: BrokerHeartbeatManager, epoch: int, *, offset: int,
               want_fence: bool = False, now_ms: int = 100) -> tuple[MetadataImage, bool, bool]:
    result = cluster_control.broker_heartbeat(
        image, SETTINGS, heartbeats,
        BrokerHeartbeatRequest(broker_id=10, broker_epoch=epoch, current_metadata_offset=offset,
                               want_fence=want_fence, want_shut_down=False),
        register_record_offset=40, next_offset=60, now_ms=now_ms)
    return replay(result.records, image), result.response.is_caught_up, result.response.is_fenced


def test_a_broker_is_unfenced_once_it_has_caught_up_with_its_registration() -> None:
    """calculateNextBrokerState: FENCED -> UNFENCED only when currentMetadataOffset >= the register record's
    offset; the change is a BrokerRegistrationChangeRecord."""
    image, heartbeats, epoch = _registered()
    image, caught_up, fenced = _heartbeat(image, heartbeats, epoch, offset=39)
    assert (caught_up, fenced, image.brokers[10].fenced) == (False, True, True)
    image, caught_up, fenced = _heartbeat(image, heartbeats, epoch, offset=40)
    assert (caught_up, fenced, image.brokers[10].fenced) == (True, False, False)


def test_a_heartbeat_with_a_stale_epoch_is_stale_broker_epoch() -> None:
    """checkBrokerEpoch: "Expected broker epoch X, but got broker epoch Y"."""
    image, heartbeats, epoch = _registered()
    with pytest.raises(ApiError) as e:
        _heartbeat(image, heartbeats, epoch - 1, offset=40)
    assert e.value.error == ErrorCode.STALE_BROKER_EPOCH
    assert e.value.message == f"Expected broker epoch {epoch}, but got broker epoch {epoch - 1}"


def test_a_broker_whose_session_expired_is_fenced() -> None:
    """maybeFenceOneStaleBroker: no heartbeat for broker.session.timeout.ms fences an unfenced broker."""
    image, heartbeats, epoch = _registered()
    image, _, _ = _heartbeat(image, heartbeats, epoch, offset=40, now_ms=100)
    assert cluster_control.fence_stale_brokers(image, SETTINGS, heartbeats, 9099).records == ()
    result = cluster_control.fence_stale_brokers(image, SETTINGS, heartbeats, 9100)
    assert result.response == [10]
    change = [r.message for r in result.records if isinstance(r.message, BrokerRegistrationChangeRecord)]
    assert [(c.broker_id, c.fenced) for c in change] == [(10, 1)]
    assert replay(result.records, image).brokers[10].fenced


def test_producer_ids_come_in_blocks_of_a_thousand() -> None:
    """generateNextProducerId: the first block starts at 0; the record names the next block's first id."""
    image, _, epoch = _registered()
    first = producer_ids.allocate_producer_ids(image, AllocateProducerIdsRequest(broker_id=10, broker_epoch=epoch))
    assert (first.response.producer_id_start, first.response.producer_id_len) == (0, 1000)
    image = replay(first.records, image)
    second = producer_ids.allocate_producer_ids(image, AllocateProducerIdsRequest(broker_id=10, broker_epoch=epoch))
    assert second.response.producer_id_start == 1000
    with pytest.raises(ApiError) as e:
        producer_ids.allocate_producer_ids(image, AllocateProducerIdsRequest(broker_id=10, broker_epoch=1))
    assert e.value.error == ErrorCode.STALE_BROKER_EPOCH


def test_the_same_incarnation_again_keeps_its_epoch_and_state() -> None:
    """registerBroker: "Amending registration of broker N": the epoch and the fencing state stay."""
    image, heartbeats, epoch = _registered()
    result = cluster_control.register_broker(image, SETTINGS, heartbeats, registration_request(10), next_offset=70, now_ms=5)
    (record,) = [r.message for r in result.records if isinstance(r.message, RegisterBrokerRecord)]
    assert (result.response.broker_epoch, record.broker_epoch, record.fenced) == (epoch, epoch, True)
