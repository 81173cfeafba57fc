"""IncrementalAlterConfigs and AlterConfigs on the controller: Kafka 4.4's
``ControllerApis.handleIncrementalAlterConfigs`` / ``handleLegacyAlterConfigs``
(unknown resource types, duplicates, BROKER_LOGGER), then
``ConfigurationControlManager.incrementalAlterConfigs`` / ``legacyAlterConfigs``
with ``ControllerConfigurationValidator`` and the quorum controller's
existence checker.

Per resource, in Kafka's order: the records it would write (a ConfigRecord
per changed key; a BROKER key always, changed or not), then
``validateAlterConfig``'s checks -- ELR's min.insync.replicas rules,
cordoned.log.dirs, the value size --, the validator (resource name, then
the configs: ``LogConfig.validate`` for a topic), then the resource must
exist. A refusal drops that resource's records only. With ELR enabled a
min.insync.replicas change also clears ELRs (ClearElrRecord, after the
ConfigRecords).

BROKER_LOGGER changes the node's own loggers: this module checks them as
``RuntimeLoggerManager`` does (node id, operation, level, the logger
existing) and returns no records; the node applies the levels.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from kraft.controller import topic_configs
from kraft.controller.feature_control import is_elr_enabled
from kraft.controller.java_order import hash_map_order
from kraft.controller.metadata_version import by_level
from kraft.controller.result import ApiError, ControllerResult, RecordAndVersion
from kraft.controller.settings import ControllerSettings
from kraft.image.model import ConfigResource, ConfigResourceType, MetadataImage
from kraft.messages.generated import alter_configs_request as legacy_req
from kraft.messages.generated import alter_configs_response as legacy_resp
from kraft.messages.generated import incremental_alter_configs_request as inc_req
from kraft.messages.generated import incremental_alter_configs_response as inc_resp
from kraft.messages.generated.clear_elr_record import ClearElrRecord
from kraft.messages.generated.config_record import ConfigRecord
from kraft.wire.errors import ErrorCode

__all__ = ["SET", "DELETE", "APPEND", "SUBTRACT", "BROKER_LIST_CONFIGS", "incremental_alter_configs", "alter_configs",
           "check_broker_logger"]

#: ``AlterConfigOp.OpType`` ids.
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
_OP_NAMES = {SET: "SET", DELETE: "DELETE", APPEND: "APPEND", SUBTRACT: "SUBTRACT"}

MIN_INSYNC_REPLICAS = "min.insync.replicas"
CORDONED_LOG_DIRS = "cordoned.log.dirs"
_SHORT_MAX = 32767

#: ``KafkaConfig.configDef``'s LIST keys (the broker keys APPEND/SUBTRACT
#: take) with their defaults as ``ConfigDef.convertToString`` gives them.
BROKER_LIST_CONFIGS: Mapping[str, str | None] = {
    "config.providers": "", "early.start.listeners": None, "process.roles": None, "controller.listener.names": None,
    "listeners": "PLAINTEXT://:9092", "advertised.listeners": None,
    "group.coordinator.rebalance.protocols": "classic,consumer,streams", "group.consumer.assignors": "uniform,range",
    "group.share.assignors": "simple", "group.streams.assignors": "sticky",
    "group.streams.rack.aware.assignment.tags": "", "log.dir": "/tmp/kafka-logs", "log.dirs": None,
    CORDONED_LOG_DIRS: "", "log.cleanup.policy": "delete", "controller.quorum.voters": "",
    "controller.quorum.bootstrap.servers": "", "metric.reporters": "org.apache.kafka.common.metrics.JmxReporter",
    "kafka.metrics.reporters": "", "ssl.enabled.protocols": "TLSv1.2,TLSv1.3", "ssl.cipher.suites": "",
    "sasl.enabled.mechanisms": "GSSAPI", "sasl.kerberos.principal.to.local.rules": "DEFAULT",
    "sasl.oauthbearer.expected.audience": "",
}

_KNOWN_TYPES = frozenset(ConfigResourceType.NAMES) - {ConfigResourceType.UNKNOWN}
_VALID_LOG_LEVELS = ("DEBUG", "ERROR", "FATAL", "INFO", "TRACE", "WARN")  # sorted, as Kafka lists them


@dataclass(frozen=True, slots=True)
class _Context:
    image: MetadataImage
    settings: ControllerSettings


def _config_record(resource: ConfigResource, name: str, value: str | None) -> RecordAndVersion:
    return RecordAndVersion(ConfigRecord(resource_type=resource.type, resource_name=resource.name, name=name,
                                         value=value), 0)


# ---- validateAlterConfig


def _record_refusal(ctx: _Context, record: ConfigRecord, current_cordoned: str | None) -> ApiError | None:
    """``validateAlterConfig``'s checks of one record, in Kafka's order."""
    broker = record.resource_type == ConfigResourceType.BROKER
    if broker and record.name == MIN_INSYNC_REPLICAS and is_elr_enabled(ctx.image):
        if record.resource_name:
            return ApiError(ErrorCode.INVALID_CONFIG,
                            f"Broker-level {MIN_INSYNC_REPLICAS} cannot be altered while ELR is enabled.")
        if record.value is None:
            return ApiError(ErrorCode.INVALID_CONFIG,
                            f"Cluster-level {MIN_INSYNC_REPLICAS} cannot be removed while ELR is enabled.")
    if broker and record.name == CORDONED_LOG_DIRS:
        mv = by_level(ctx.image.features.metadata_version or 0)
        if not mv.is_cordoned_log_dirs_supported:
            return ApiError(ErrorCode.INVALID_CONFIG, f"The {CORDONED_LOG_DIRS} configuration value cannot be set "
                                                      "because it requires metadata.version >= 4.3-IV0")
        if record.value is not None and record.value.strip():
            current = _split_dirs(current_cordoned) if current_cordoned is not None else []
            if not set(_split_dirs(record.value)) <= set(current):
                return ApiError(ErrorCode.INVALID_CONFIG, f"When updating {CORDONED_LOG_DIRS} via controllers,  the "
                                                          "new value must be a subset of the current configuration "
                                                          "value.")
    if record.value is not None and len(record.value) > _SHORT_MAX:
        return ApiError(ErrorCode.INVALID_CONFIG, "The configuration value cannot be added because it exceeds the "
                                                  f"maximum value size of {_SHORT_MAX} bytes.")
    return None


def _split_dirs(value: str) -> list[str]:
    return [d.strip() for d in value.strip().split(",")]


def _topic_name_refusal(name: str) -> ApiError | None:
    """``ControllerConfigurationValidator.validateTopicName`` and ``Topic.validate``."""
    if not name:
        return ApiError(ErrorCode.INVALID_REQUEST, "Default topic resources are not allowed.")
    reason = None
    if name in (".", ".."):
        reason = f"'{name}' is not allowed"
    elif len(name) > 249:
        reason = f"the length of '{name}' is longer than the max allowed length 249"
    elif not all(c.isascii() and (c.isalnum() or c in "._-") for c in name):
        reason = f"'{name}' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"
    return None if reason is None else ApiError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"Topic name is invalid: {reason}")


def _java_int(text: str) -> int | None:
    """``Integer.parseInt``: an optional sign, ASCII digits, within 32 bits."""
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not digits or not digits.isdecimal():  # Character.digit takes any Unicode decimal digit, as int() does
        return None
    value = int(text)
    return value if -(1 << 31) <= value < 1 << 31 else None


def _broker_name_refusal(name: str) -> ApiError | None:
    """``ControllerConfigurationValidator.validateBrokerName``."""
    if not name:
        return None
    broker_id = _java_int(name)
    if broker_id is None:
        return ApiError(ErrorCode.INVALID_REQUEST, "Unable to parse broker name as a base 10 number.")
    if broker_id < 0:
        return ApiError(ErrorCode.INVALID_REQUEST, "Invalid negative broker ID.")
    return None


def _group_refusal(name: str, configs: Mapping[str, str]) -> ApiError | None:
    """``validateGroupName`` and ``GroupConfig.validate``'s names and values."""
    if not name:
        return ApiError(ErrorCode.INVALID_REQUEST, "Default group resources are not allowed.")
    for key in hash_map_order(configs):
        if key not in topic_configs.GROUP_CONFIGS:
            return ApiError(ErrorCode.INVALID_CONFIG, f"Unknown group config name: {key}")
    for key, definition in topic_configs.GROUP_CONFIGS.items():
        reason = topic_configs.parse_error(definition, configs[key]) if key in configs else None
        if reason:
            return ApiError(ErrorCode.INVALID_CONFIG, reason)
    return None


def _client_metrics_refusal(name: str, configs: Mapping[str, str]) -> ApiError | None:
    """``ClientMetricsConfigs.validate``'s name and key checks."""
    if not name:
        return ApiError(ErrorCode.INVALID_REQUEST, "Subscription name can't be empty")
    for key in hash_map_order(configs):
        if key not in ("metrics", "interval.ms", "match"):
            return ApiError(ErrorCode.INVALID_REQUEST, f"Unknown client metrics configuration: {key}")
    return None


def _validator_refusal(resource: ConfigResource, configs: Mapping[str, str],
                       existing: Mapping[str, str]) -> ApiError | None:
    """``ControllerConfigurationValidator.validate(resource, newConfigs, oldConfigs)``."""
    match resource.type:
        case ConfigResourceType.TOPIC:
            return _topic_name_refusal(resource.name) or topic_configs.validate_topic_configs(configs, existing)
        case ConfigResourceType.BROKER:
            return _broker_name_refusal(resource.name)
        case ConfigResourceType.CLIENT_METRICS:
            return _client_metrics_refusal(resource.name, configs)
        case ConfigResourceType.GROUP:
            return _group_refusal(resource.name, configs)
    return ApiError(ErrorCode.INVALID_REQUEST, f"Unknown resource type {ConfigResourceType.name_of(resource.type)}")


def _existence_refusal(ctx: _Context, resource: ConfigResource) -> ApiError | None:
    """``QuorumController.ConfigResourceExistenceChecker``."""
    if resource.type == ConfigResourceType.BROKER and resource.name:
        node_id = int(resource.name)
        if node_id not in ctx.image.brokers and node_id not in ctx.image.controllers \
                and node_id != ctx.settings.node_id:
            return ApiError(ErrorCode.BROKER_ID_NOT_REGISTERED, f"No node with id {node_id} found.")
    if resource.type == ConfigResourceType.TOPIC and ctx.image.topic(resource.name) is None:
        return ApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{resource.name}' does not exist.")
    return None


def _validate(ctx: _Context, resource: ConfigResource, altered: Sequence[RecordAndVersion],
              deleted: Sequence[RecordAndVersion] = ()) -> ApiError | None:
    """``ConfigurationControlManager.validateAlterConfig``."""
    existing = dict(ctx.image.configs.get(resource, {}))
    merged = dict(existing)
    for r in (*altered, *deleted):
        refusal = _record_refusal(ctx, r.message, existing.get(CORDONED_LOG_DIRS))
        if refusal:
            return refusal
        if r.message.value is None or r in deleted:
            merged.pop(r.message.name, None)
        else:
            merged[r.message.name] = r.message.value
    return _validator_refusal(resource, merged, existing) or _existence_refusal(ctx, resource)


# ---- IncrementalAlterConfigs


def _is_splittable(resource_type: int, key: str) -> bool:
    """``KafkaConfigSchema.isSplittable``: the controller's schema knows broker and topic keys only."""
    if resource_type == ConfigResourceType.TOPIC:
        return key in topic_configs.TOPIC_CONFIGS and topic_configs.TOPIC_CONFIGS[key].is_list
    return resource_type == ConfigResourceType.BROKER and key in BROKER_LIST_CONFIGS


def _default(resource_type: int, key: str) -> str | None:
    if resource_type == ConfigResourceType.TOPIC:
        return topic_configs.TOPIC_CONFIGS[key].default
    return BROKER_LIST_CONFIGS.get(key)


def _java_split(value: str) -> list[str]:
    """``String.split(",")``: trailing empty strings dropped."""
    if not value:
        return [""]
    parts = value.split(",")
    while parts and not parts[-1]:
        parts.pop()
    return parts


def _list_op(resource: ConfigResource, key: str, op: int, current: str | None, value: str | None) -> str:
    """APPEND/SUBTRACT (``getParts`` and the op)."""
    base = current if current is not None else _default(resource.type, key)
    parts = [p for p in base.split(",") if p] if base is not None else []
    for item in _java_split(value or ""):
        if op == APPEND and item not in parts:
            parts.append(item)
        elif op == SUBTRACT and item in parts:
            parts.remove(item)
    return ",".join(parts)


def _incremental_resource(ctx: _Context, resource: ConfigResource,
                          ops: Mapping[str, tuple[int, str | None]]) -> tuple[list[RecordAndVersion], ApiError | None]:
    """``incrementalAlterConfigResource``."""
    current_configs = ctx.image.configs.get(resource, {})
    records: list[RecordAndVersion] = []
    for key in hash_map_order(ops):
        op, value = ops[key]
        current = current_configs.get(key)
        if op == SET:
            new = value
        elif op == DELETE:
            new = None
        elif op in (APPEND, SUBTRACT):
            if not _is_splittable(resource.type, key):
                return [], ApiError(ErrorCode.INVALID_CONFIG,
                                    f"Can't {_OP_NAMES[op]} to key {key} because its type is not LIST.")
            new = _list_op(resource, key, op, current, value)
        else:
            return [], ApiError(ErrorCode.INVALID_REQUEST, f"Unknown operation type {op}")
        if new != current or resource.type == ConfigResourceType.BROKER:
            records.append(_config_record(resource, key, new))
    refusal = _validate(ctx, resource, records)
    return ([], refusal) if refusal else (records, None)


def clear_elr_records(image: MetadataImage, records: Sequence[RecordAndVersion]) -> list[RecordAndVersion]:
    """``createClearElrRecordsAsNeeded``: with ELR enabled, a min.insync.replicas
    change clears the ELRs of the topic (or of every topic)."""
    if not is_elr_enabled(image):
        return []
    out = []
    for r in records:
        m = r.message
        if isinstance(m, ConfigRecord) and m.name == MIN_INSYNC_REPLICAS:
            topic = m.resource_name if m.resource_type == ConfigResourceType.TOPIC else ""
            out.append(RecordAndVersion(ClearElrRecord(topic_name=topic), 0))
    return out


def check_broker_logger(node_id: int, resource: inc_req.AlterConfigsResource,
                        logger_exists: Callable[[str], bool]) -> ApiError | None:
    """``RuntimeLoggerManager.validateResourceNameIsNodeId`` and ``validateLogLevelConfigs``."""
    requested = _java_int(resource.resource_name)
    if requested is None:
        return ApiError(ErrorCode.INVALID_REQUEST, f"Node id must be an integer, but it is: {resource.resource_name}")
    if requested != node_id:
        return ApiError(ErrorCode.INVALID_REQUEST, f"Unexpected node id. Expected {node_id}, but received {requested}")
    for c in resource.configs:
        if c.config_operation in (APPEND, SUBTRACT):
            return ApiError(ErrorCode.INVALID_REQUEST, f"{_OP_NAMES[c.config_operation]} operation is not allowed "
                                                       "for the BROKER_LOGGER resource")
        if c.config_operation not in (SET, DELETE):
            return ApiError(ErrorCode.INVALID_REQUEST, f"Unknown operation type {c.config_operation} is not allowed "
                                                       "for the BROKER_LOGGER resource")
        if not logger_exists(c.name):
            return ApiError(ErrorCode.INVALID_CONFIG, f"Logger {c.name} does not exist!")
        if c.config_operation == SET and c.value not in _VALID_LOG_LEVELS:
            return ApiError(ErrorCode.INVALID_CONFIG, f"Cannot set the log level of {c.name} to {c.value} as it is "
                                                      "not a supported log level. Valid log levels are "
                                                      + ", ".join(_VALID_LOG_LEVELS))
        if c.config_operation == DELETE and c.name == "root":
            return ApiError(ErrorCode.INVALID_REQUEST, "Removing the log level of the root logger is not allowed")
    return None


@dataclass(slots=True)
class _Collected:
    """``ControllerApis``' first pass: answers given at once, and the resources left for the controller."""

    early: list[tuple[int, str, ApiError]]
    changes: dict[ConfigResource, dict[str, object]]


def _collect(resources: Sequence[object], configs_of: Callable[[object], dict[str, object]]) -> _Collected:
    """Unknown resource types and duplicates, as ``ControllerApis`` answers them."""
    out = _Collected([], {})
    duplicates: set[ConfigResource] = set()
    for r in resources:
        rtype, rname = r.resource_type, r.resource_name  # type: ignore[attr-defined]
        resource = ConfigResource(rtype if rtype in _KNOWN_TYPES else ConfigResourceType.UNKNOWN, rname)
        if resource.type == ConfigResourceType.UNKNOWN:
            out.early.append((rtype, rname, ApiError(ErrorCode.UNSUPPORTED_VERSION, f"Unknown resource type {rtype}.")))
        elif resource not in duplicates:
            if resource in out.changes:
                duplicates.add(resource)
                del out.changes[resource]
                out.early.append((rtype, rname, ApiError(ErrorCode.INVALID_REQUEST, "Duplicate resource.")))
            else:
                out.changes[resource] = configs_of(r)
    return out


def incremental_alter_configs(image: MetadataImage, settings: ControllerSettings,
                              request: inc_req.IncrementalAlterConfigsRequest, version: int, *,
                              logger_exists: Callable[[str], bool] = lambda _: True,
                              ) -> ControllerResult[inc_resp.IncrementalAlterConfigsResponse]:
    """``ControllerApis.handleIncrementalAlterConfigs`` and
    ``ConfigurationControlManager.incrementalAlterConfigs`` (module docstring).
    ``logger_exists``: whether this node has the named logger (BROKER_LOGGER)."""
    del version  # every version answers alike
    ctx = _Context(image, settings)
    loggers = [r for r in request.resources if r.resource_type == ConfigResourceType.BROKER_LOGGER]
    others = [r for r in request.resources if r.resource_type != ConfigResourceType.BROKER_LOGGER]
    collected = _collect(others, lambda r: {c.name: (c.config_operation, c.value) for c in r.configs})  # type: ignore[attr-defined]
    answers = list(collected.early)
    records: list[RecordAndVersion] = []
    for resource, ops in collected.changes.items():
        new, refusal = _incremental_resource(ctx, resource, ops)  # type: ignore[arg-type]
        records += new
        answers.append((resource.type, resource.name, refusal or ApiError(ErrorCode.NONE)))
    records += clear_elr_records(image, records)
    for r in loggers:
        refusal = check_broker_logger(settings.node_id, r, logger_exists)
        answers.append((r.resource_type, r.resource_name, refusal or ApiError(ErrorCode.NONE)))
    response = inc_resp.IncrementalAlterConfigsResponse(responses=[
        inc_resp.AlterConfigsResourceResponse(error_code=e.error, error_message=e.message, resource_type=t,
                                              resource_name=n) for t, n, e in answers])
    return ControllerResult.of(response, *(() if request.validate_only else records))


def _legacy_resource(ctx: _Context, resource: ConfigResource,
                     new_configs: Mapping[str, str | None]) -> tuple[list[RecordAndVersion], ApiError | None]:
    """``legacyAlterConfigResource``: the request's configs replace the resource's."""
    current = ctx.image.configs.get(resource, {})
    altered = [_config_record(resource, k, new_configs[k]) for k in hash_map_order(new_configs)
               if current.get(k) != new_configs[k] or resource.type == ConfigResourceType.BROKER]
    deleted = [_config_record(resource, k, None) for k in hash_map_order(current) if k not in new_configs]
    refusal = _validate(ctx, resource, altered, deleted)
    return ([], refusal) if refusal else ([*altered, *deleted], None)


def alter_configs(image: MetadataImage, settings: ControllerSettings, request: legacy_req.AlterConfigsRequest,
                  version: int) -> ControllerResult[legacy_resp.AlterConfigsResponse]:
    """``ControllerApis.handleLegacyAlterConfigs`` and
    ``ConfigurationControlManager.legacyAlterConfigs``: each resource's
    configs become exactly the request's (a key left out is deleted)."""
    del version
    ctx = _Context(image, settings)
    collected = _collect(request.resources, lambda r: {c.name: c.value for c in r.configs})  # type: ignore[attr-defined]
    answers = list(collected.early)
    records: list[RecordAndVersion] = []
    for resource, configs in collected.changes.items():
        new, refusal = _legacy_resource(ctx, resource, configs)  # type: ignore[arg-type]
        records += new
        answers.append((resource.type, resource.name, refusal or ApiError(ErrorCode.NONE)))
    records += clear_elr_records(image, records)
    response = legacy_resp.AlterConfigsResponse(responses=[
        legacy_resp.AlterConfigsResourceResponse(error_code=e.error, error_message=e.message, resource_type=t,
                                                 resource_name=n) for t, n, e in answers])
    return ControllerResult.of(response, *(() if request.validate_only else records))
