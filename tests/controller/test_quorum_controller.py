"""The controller state machine: activation, reading its own writes, and the
revert on losing leadership (Kafka's ``QuorumController.claim``/``renounce``,
``ActivationRecordsGenerator``, the NoOpRecord of ``maybeScheduleNoOpRecord``)."""

from __future__ import annotations

import pytest

from kraft.controller.quorum_controller import NotActiveError, QuorumController, broker_handlers
from kraft.controller.result import RecordAndVersion
from kraft.controller.settings import ControllerSettings
from kraft.messages.generated import broker_registration_request as brq
from kraft.messages.generated.feature_level_record import FeatureLevelRecord
from kraft.messages.generated.no_op_record import NoOpRecord
from kraft.records.metadata import encode_metadata_record
from kraft.wire.apis import ApiKey
from tests.controller.test_cluster_control import CLUSTER_ID, registration_request

SETTINGS = ControllerSettings(node_id=1, cluster_id=CLUSTER_ID, metadata_max_idle_interval_ms=500)
BOOTSTRAP = (RecordAndVersion(FeatureLevelRecord(name="metadata.version", feature_level=33), 0),
             RecordAndVersion(FeatureLevelRecord(name="eligible.leader.replicas.version", feature_level=1), 0))


def _controller() -> QuorumController:
    return QuorumController(SETTINGS, broker_handlers(), bootstrap=BOOTSTRAP)


def test_activation_on_an_empty_log_writes_the_bootstrap_records_in_a_transaction() -> None:
    """ActivationRecordsGenerator.recordsForEmptyLog: Begin, the bootstrap records, the cluster
    min.insync.replicas (ELR is finalized), End."""
    result = _controller().activate(epoch=1, next_offset=1, now_ms=0)
    names = [type(r.message).__name__ for r in result.records]
    assert names == ["BeginTransactionRecord", "FeatureLevelRecord", "FeatureLevelRecord", "ConfigRecord",
                     "EndTransactionRecord"]
    assert not result.atomic


def test_a_non_empty_log_writes_nothing_on_activation() -> None:
    """recordsForNonEmptyLog with no transaction in flight: no records."""
    controller = _controller()
    value = encode_metadata_record(FeatureLevelRecord(name="metadata.version", feature_level=33), 0)
    controller.replay_batch(0, 0, 1, 0, [value], is_control=False)
    assert controller.activate(epoch=2, next_offset=1, now_ms=0).records == ()


def test_the_active_controller_reads_its_own_writes_and_forgets_them_when_it_renounces() -> None:
    """QuorumController.renounce reverts to the last committed offset: an uncommitted registration is gone."""
    controller = _controller()
    activation = controller.activate(epoch=1, next_offset=0, now_ms=0)
    controller.appended(activation, len(activation.records) - 1, 1, 0)
    request = registration_request(10)
    request.features.append(brq.Feature(name="eligible.leader.replicas.version", min_supported_version=0,
                                        max_supported_version=1))
    result = controller.handle(ApiKey.BROKER_REGISTRATION, request, 0, now_ms=1)
    assert result.response.broker_epoch == len(activation.records)
    controller.appended(result, len(activation.records), 1, 1)
    assert 10 in controller.image.brokers
    controller.deactivate()
    assert 10 not in controller.image.brokers
    with pytest.raises(NotActiveError):
        controller.handle(ApiKey.BROKER_REGISTRATION, registration_request(10), 0, now_ms=2)


def test_an_idle_active_controller_writes_a_no_op_record() -> None:
    """metadata.max.idle.interval.ms: a NoOpRecord when nothing was written for that long."""
    controller = _controller()
    controller.activate(epoch=1, next_offset=0, now_ms=0)
    assert controller.tick(499) == []
    (result,) = controller.tick(500)
    assert [type(r.message) for r in result.records] == [NoOpRecord]
    assert controller.next_deadline_ms() == 500
