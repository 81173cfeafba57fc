"""IncrementalAlterConfigs and AlterConfigs: Kafka 4.4's
``ConfigurationControlManager.incrementalAlterConfigs`` / ``legacyAlterConfigs``,
``ControllerConfigurationValidator``, ``LogConfig.validate`` and
``ControllerApis.handleIncrementalAlterConfigs`` / ``handleLegacyAlterConfigs``.
Expected messages are what the Kafka 4.4.0 jars answer."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from kraft.controller import configs
from kraft.controller.configs import APPEND, DELETE, SET, SUBTRACT
from kraft.controller.settings import ControllerSettings
from kraft.controller.topic_configs import validate_topic_config, validate_topic_configs
from kraft.image.model import MetadataImage
from kraft.messages.generated import alter_configs_request as legacy
from kraft.messages.generated import incremental_alter_configs_request as inc
from kraft.messages.generated.config_record import ConfigRecord
from kraft.messages.generated.topic_record import TopicRecord
from kraft.wire.errors import ErrorCode
from tests.controller.images import broker, features, replay

SETTINGS = ControllerSettings(node_id=3000)
TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32


def _image(*extra: Any, **levels: int) -> MetadataImage:
    return replay([*features(33, **levels), broker(1), TopicRecord(name="t", topic_id=uuid.UUID(int=7)), *extra])


def _inc(image: MetadataImage, *resources: tuple[int, str, list[tuple[str, int, str | None]]],
         validate_only: bool = False) -> Any:
    request = inc.IncrementalAlterConfigsRequest(validate_only=validate_only, resources=[
        inc.AlterConfigsResource(resource_type=t, resource_name=n, configs=[
            inc.AlterableConfig(name=k, config_operation=op, value=v) for k, op, v in cs]) for t, n, cs in resources])
    return configs.incremental_alter_configs(image, SETTINGS, request, 1)


def _answers(result: Any) -> list[tuple[int, str, int, str | None]]:
    return [(r.resource_type, r.resource_name, r.error_code, r.error_message) for r in result.response.responses]


def _records(result: Any) -> list[tuple[Any, ...]]:
    return [(type(r.message).__name__, *(getattr(r.message, f) for f in ("resource_name", "name", "value")
                                         if hasattr(r.message, f))) for r in result.records]


@pytest.mark.parametrize(("name", "value", "message"), [
    ("segment.bytes", "abc", "Invalid value abc for configuration segment.bytes: Not a number of type INT"),
    ("segment.bytes", "5", "Invalid value 5 for configuration segment.bytes: Value must be at least 1048576"),
    ("segment.bytes", " 2000000 ", None),
    ("cleanup.policy", "foo", "Invalid value foo for configuration cleanup.policy: String must be one of: compact, "
                              "delete"),
    ("cleanup.policy", "compact,,delete", "Configuration 'cleanup.policy' values must not be empty."),
    ("min.cleanable.dirty.ratio", "2", "Invalid value 2.0 for configuration min.cleanable.dirty.ratio: Value must be "
                                       "no more than 1"),
    ("unclean.leader.election.enable", "yes", "Invalid value yes for configuration unclean.leader.election.enable: "
                                              "Expected value to be either true or false"),
    ("unclean.leader.election.enable", "TRUE", None),
    ("compression.gzip.level", "0", "Invalid value 0 for configuration compression.gzip.level: Value must be "
                                    "between 1 and 9 or equal to -1"),
    ("leader.replication.throttled.replicas", "x", "Invalid value [x] for configuration "
     "leader.replication.throttled.replicas: leader.replication.throttled.replicas must be the literal '*' or a "
     "list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."),
    ("leader.replication.throttled.replicas", "0:1,1:2", None),
    ("retention.bytes", "", "Invalid value  for configuration retention.bytes: Not a number of type LONG"),
    ("foo.bar", "1", "Unknown topic config name: foo.bar"),
])
def test_topic_config_values_as_log_config_validate(name: str, value: str, message: str | None) -> None:
    # LogConfig.validate -> ConfigDef.parse: messages as the 4.4.0 jars give them.
    error = validate_topic_config(name, value)
    assert (error.message if error else None) == message
    assert error is None or error.error == ErrorCode.INVALID_CONFIG


def test_topic_cross_checks() -> None:
    # LogConfig.validateValues and validateRemoteStorageOnlyIfSystemEnabled.
    error = validate_topic_configs({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"})
    assert error is not None and error.message == "conflict topic config setting min.compaction.lag.ms (10) > " \
                                                  "max.compaction.lag.ms (5)"
    error = validate_topic_configs({"remote.storage.enable": "true"})
    assert error is not None and error.message.startswith("Tiered Storage functionality is disabled in the broker.")


def test_set_and_delete_topic_configs() -> None:
    # incrementalAlterConfigResource: a ConfigRecord per changed key; DELETE writes a null value.
    image = _image(ConfigRecord(resource_type=TOPIC, resource_name="t", name="retention.ms", value="100"))
    result = _inc(image, (TOPIC, "t", [("segment.bytes", SET, "2000000"), ("retention.ms", DELETE, None),
                                       ("cleanup.policy", DELETE, None)]))
    assert _answers(result) == [(TOPIC, "t", 0, None)]
    assert sorted(_records(result)) == [("ConfigRecord", "t", "retention.ms", None),
                                        ("ConfigRecord", "t", "segment.bytes", "2000000")]
    assert all(r.version == 0 for r in result.records)
    assert _inc(image, (TOPIC, "t", [("segment.bytes", SET, "2000000")]), validate_only=True).records == ()


def test_unknown_topic_and_bad_value() -> None:
    # The validator runs before the existence checker: a bad value on a missing topic is INVALID_CONFIG.
    result = _inc(_image(), (TOPIC, "nope", [("segment.bytes", SET, "2000000")]))
    assert _answers(result) == [(TOPIC, "nope", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The topic 'nope' does not exist.")]
    result = _inc(_image(), (TOPIC, "nope", [("segment.bytes", SET, "x")]))
    assert _answers(result)[0][2] == ErrorCode.INVALID_CONFIG
    result = _inc(_image(), (TOPIC, "", [("segment.bytes", SET, "2000000")]))
    assert _answers(result) == [(TOPIC, "", ErrorCode.INVALID_REQUEST, "Default topic resources are not allowed.")]
    assert result.records == ()


def test_append_and_subtract() -> None:
    # APPEND starts from the schema default (cleanup.policy=delete); a non-LIST key is refused.
    result = _inc(_image(), (TOPIC, "t", [("cleanup.policy", APPEND, "compact")]))
    assert _records(result) == [("ConfigRecord", "t", "cleanup.policy", "delete,compact")]
    result = _inc(_image(), (TOPIC, "t", [("cleanup.policy", SUBTRACT, "delete")]))
    assert _records(result) == [("ConfigRecord", "t", "cleanup.policy", "")]
    result = _inc(_image(), (TOPIC, "t", [("retention.ms", APPEND, "1")]))
    assert _answers(result) == [(TOPIC, "t", ErrorCode.INVALID_CONFIG,
                                 "Can't APPEND to key retention.ms because its type is not LIST.")]


def test_broker_resources() -> None:
    # A BROKER key is written even when unchanged; an unregistered node or a bad name is refused.
    image = _image(ConfigRecord(resource_type=BROKER, resource_name="1", name="log.retention.ms", value="5"))
    assert _records(_inc(image, (BROKER, "1", [("log.retention.ms", SET, "5")]))) == [
        ("ConfigRecord", "1", "log.retention.ms", "5")]
    assert _answers(_inc(image, (BROKER, "9", [("x", SET, "1")]))) == [
        (BROKER, "9", ErrorCode.BROKER_ID_NOT_REGISTERED, "No node with id 9 found.")]
    assert _answers(_inc(image, (BROKER, "b", [("x", SET, "1")]))) == [
        (BROKER, "b", ErrorCode.INVALID_REQUEST, "Unable to parse broker name as a base 10 number.")]
    assert _answers(_inc(image, (BROKER, "3000", [("x", SET, "1")])))[0][2] == 0  # the controller itself
    assert _answers(_inc(image, (BROKER, "", [("x", SET, "1")])))[0][2] == 0  # cluster default


def test_elr_min_insync_replicas_rules() -> None:
    # isDisallowedBrokerMinIsrTransition / isDisallowedClusterMinIsrTransition, createClearElrRecordsAsNeeded.
    image = _image(eligible_leader_replicas_version=1)
    assert _answers(_inc(image, (BROKER, "1", [("min.insync.replicas", SET, "2")]))) == [
        (BROKER, "1", ErrorCode.INVALID_CONFIG, "Broker-level min.insync.replicas cannot be altered while ELR is "
                                                "enabled.")]
    assert _answers(_inc(image, (BROKER, "", [("min.insync.replicas", DELETE, None)]))) == [
        (BROKER, "", ErrorCode.INVALID_CONFIG, "Cluster-level min.insync.replicas cannot be removed while ELR is "
                                               "enabled.")]
    result = _inc(image, (TOPIC, "t", [("min.insync.replicas", SET, "2")]), (BROKER, "", [("min.insync.replicas",
                                                                                          SET, "2")]))
    assert [type(r.message).__name__ for r in result.records] == ["ConfigRecord", "ConfigRecord", "ClearElrRecord",
                                                                 "ClearElrRecord"]
    assert [r.message.topic_name for r in result.records[2:]] == ["t", ""]
    assert _answers(_inc(_image(), (BROKER, "1", [("min.insync.replicas", SET, "2")])))[0][2] == 0  # ELR off


def test_unknown_type_duplicates_and_broker_logger() -> None:
    # ControllerApis.handleIncrementalAlterConfigs: unknown types and duplicates first, loggers last.
    result = _inc(_image(), (BROKER_LOGGER, "3000", [("kafka", SET, "DEBUG")]), (99, "x", []),
                  (TOPIC, "t", []), (TOPIC, "t", []))
    assert _answers(result) == [(99, "x", ErrorCode.UNSUPPORTED_VERSION, "Unknown resource type 99."),
                                (TOPIC, "t", ErrorCode.INVALID_REQUEST, "Duplicate resource."),
                                (BROKER_LOGGER, "3000", 0, None)]
    result = _inc(_image(), (BROKER_LOGGER, "1", [("kafka", SET, "DEBUG")]),
                  (BROKER_LOGGER, "3000", [("kafka", SET, "LOUD")]), (BROKER_LOGGER, "3000", [("root", DELETE, None)]))
    assert [a[3] for a in _answers(result)] == [
        "Unexpected node id. Expected 3000, but received 1",
        "Cannot set the log level of kafka to LOUD as it is not a supported log level. Valid log levels are DEBUG, "
        "ERROR, FATAL, INFO, TRACE, WARN",
        "Removing the log level of the root logger is not allowed"]


def test_group_and_client_metrics() -> None:
    # ControllerConfigurationValidator: GroupConfig.validate, ClientMetricsConfigs.validate.
    assert _answers(_inc(_image(), (GROUP, "g", [("consumer.session.timeout.ms", SET, "0")])))[0][3] == \
        "Invalid value 0 for configuration consumer.session.timeout.ms: Value must be at least 1"
    assert _answers(_inc(_image(), (GROUP, "g", [("bogus", SET, "0")])))[0][3] == "Unknown group config name: bogus"
    assert _answers(_inc(_image(), (CLIENT_METRICS, "", [("metrics", SET, "a")])))[0][3] == \
        "Subscription name can't be empty"
    assert _answers(_inc(_image(), (CLIENT_METRICS, "s", [("metrics", APPEND, "a")])))[0][3] == \
        "Can't APPEND to key metrics because its type is not LIST."
    result = _inc(_image(), (CLIENT_METRICS, "s", [("metrics", SET, "a"), ("interval.ms", SET, "1000")]))
    assert _answers(result)[0][2] == 0 and len(result.records) == 2


def test_legacy_alter_configs_replaces_the_resource() -> None:
    # legacyAlterConfigResource: keys left out are deleted (recordsImplicitlyDeleted), after the altered ones.
    image = _image(ConfigRecord(resource_type=TOPIC, resource_name="t", name="retention.ms", value="100"))
    request = legacy.AlterConfigsRequest(resources=[legacy.AlterConfigsResource(
        resource_type=TOPIC, resource_name="t", configs=[legacy.AlterableConfig(name="segment.bytes", value="2000000")])])
    result = configs.alter_configs(image, SETTINGS, request, 2)
    assert [(r.error_code, r.error_message) for r in result.response.responses] == [(0, None)]
    assert _records(result) == [("ConfigRecord", "t", "segment.bytes", "2000000"),
                                ("ConfigRecord", "t", "retention.ms", None)]
    request.resources[0].resource_type = BROKER_LOGGER
    result = configs.alter_configs(image, SETTINGS, request, 2)
    assert [(r.error_code, r.error_message) for r in result.response.responses] == [
        (ErrorCode.INVALID_REQUEST, "Unknown resource type BROKER_LOGGER")]


@pytest.mark.parametrize(("name", "message"), [
    ("-1", "Invalid negative broker ID."),
    ("99999999999", "Unable to parse broker name as a base 10 number."),
    ("--1", "Unable to parse broker name as a base 10 number."),
])
def test_broker_names(name: str, message: str) -> None:
    # ControllerConfigurationValidator.validateBrokerName.
    assert _answers(_inc(_image(), (BROKER, name, [("x", SET, "1")]))) == [(BROKER, name, ErrorCode.INVALID_REQUEST,
                                                                          message)]
