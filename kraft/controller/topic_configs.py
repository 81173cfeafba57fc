"""Kafka 4.4's topic configs (``LogConfig``'s ``ConfigDef``) and group
configs (``GroupConfig``): each key's type, default and validator, and the
checks Kafka's ``ConfigDef.parse`` and ``LogConfig.validate`` make, with
their messages (``ConfigException``: "Invalid value V for configuration K:
<reason>").

The one table of topic config keys: CreateTopics and the config RPCs both
validate here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from kraft.controller.java_order import hash_map_order
from kraft.controller.result import ApiError
from kraft.wire.errors import ErrorCode

__all__ = [
    "ConfigKey",
    "TOPIC_CONFIGS",
    "GROUP_CONFIGS",
    "parse_error",
    "validate_topic_config",
    "validate_topic_configs",
]

_INT_MIN, _INT_MAX = -(1 << 31), (1 << 31) - 1
_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1


@dataclass(frozen=True, slots=True)
class ConfigKey:
    """One ``ConfigDef.ConfigKey``: ``type`` is ConfigDef's type name;
    ``at_least``/``at_most`` a ``Range``; ``one_of`` a ``ValidString`` (or,
    for a LIST, a ``ValidList.in``); ``validator`` names a special one."""

    name: str
    type: str
    default: str | None
    at_least: float | None = None
    at_most: float | None = None
    one_of: tuple[str, ...] = ()
    validator: str = ""

    @property
    def is_list(self) -> bool:
        return self.type == "LIST"


def _k(name: str, type_: str, default: str | None, lo: float | None = None, hi: float | None = None,
       one_of: tuple[str, ...] = (), validator: str = "") -> ConfigKey:
    return ConfigKey(name, type_, default, lo, hi, one_of, validator)


_THROTTLED = "throttled_replicas"
_GZIP = "gzip_level"
_COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")

#: ``LogConfig.configKeys()`` of Kafka 4.4, in definition order (the order ``ConfigDef.parse`` checks).
TOPIC_CONFIGS: Mapping[str, ConfigKey] = {k.name: k for k in (
    _k("segment.bytes", "INT", "1073741824", 1048576),
    _k("segment.ms", "LONG", "604800000", 1),
    _k("segment.jitter.ms", "LONG", "0", 0),
    _k("segment.index.bytes", "INT", "10485760", 4),
    _k("flush.messages", "LONG", str(_LONG_MAX), 1),
    _k("flush.ms", "LONG", str(_LONG_MAX), 0),
    _k("retention.bytes", "LONG", "-1"),
    _k("retention.ms", "LONG", "604800000", -1),
    _k("max.message.bytes", "INT", "1048588", 0),
    _k("max.decompressed.message.bytes", "INT", "2147483639", 1, 2147483639),
    _k("index.interval.bytes", "INT", "4096", 0),
    _k("delete.retention.ms", "LONG", "86400000", 0),
    _k("min.compaction.lag.ms", "LONG", "0", 0),
    _k("max.compaction.lag.ms", "LONG", str(_LONG_MAX), 1),
    _k("file.delete.delay.ms", "LONG", "60000", 0),
    _k("min.cleanable.dirty.ratio", "DOUBLE", "0.5", 0, 1),
    _k("cleanup.policy", "LIST", "delete", one_of=("compact", "delete")),
    _k("unclean.leader.election.enable", "BOOLEAN", "false"),
    _k("min.insync.replicas", "INT", "1", 1),
    _k("compression.type", "STRING", "producer", one_of=_COMPRESSION_TYPES),
    _k("compression.gzip.level", "INT", "-1", 1, 9, validator=_GZIP),
    _k("compression.lz4.level", "INT", "9", 1, 17),
    _k("compression.zstd.level", "INT", "3", -131072, 22),
    _k("preallocate", "BOOLEAN", "false"),
    _k("message.timestamp.type", "STRING", "CreateTime", one_of=("CreateTime", "LogAppendTime")),
    _k("message.timestamp.before.max.ms", "LONG", str(_LONG_MAX), 0),
    _k("message.timestamp.after.max.ms", "LONG", "3600000", 0),
    _k("leader.replication.throttled.replicas", "LIST", "", validator=_THROTTLED),
    _k("follower.replication.throttled.replicas", "LIST", "", validator=_THROTTLED),
    _k("remote.storage.enable", "BOOLEAN", "false"),
    _k("local.retention.ms", "LONG", "-2", -2),
    _k("local.retention.bytes", "LONG", "-2", -2),
    _k("remote.log.copy.disable", "BOOLEAN", "false"),
    _k("remote.copy.lag.ms", "LONG", "0", -1),
    _k("remote.copy.lag.bytes", "LONG", "-1", -1),
    _k("remote.log.delete.on.disable", "BOOLEAN", "false"),
    _k("errors.deadletterqueue.group.enable", "BOOLEAN", "false"),
    _k("internal.segment.bytes", "INT", None),
)}

#: ``GroupConfig``'s keys of Kafka 4.4 (types and ranges; its cross-checks
#: against the broker's group coordinator config are not made here).
GROUP_CONFIGS: Mapping[str, ConfigKey] = {k.name: k for k in (
    _k("consumer.session.timeout.ms", "INT", "45000", 1),
    _k("consumer.heartbeat.interval.ms", "INT", "5000", 1),
    _k("consumer.assignment.interval.ms", "INT", "1000", 0),
    _k("consumer.assignor.offload.enable", "BOOLEAN", "true"),
    _k("share.session.timeout.ms", "INT", "45000", 1),
    _k("share.heartbeat.interval.ms", "INT", "5000", 1),
    _k("share.record.lock.duration.ms", "INT", "30000", 1000),
    _k("share.delivery.count.limit", "INT", "5", 2),
    _k("share.partition.max.record.locks", "INT", "2000", 100),
    _k("share.auto.offset.reset", "STRING", "latest"),
    _k("share.isolation.level", "STRING", "read_uncommitted", one_of=("read_committed", "read_uncommitted")),
    _k("share.renew.acknowledge.enable", "BOOLEAN", "true"),
    _k("share.assignment.interval.ms", "INT", "1000", 0),
    _k("share.assignor.offload.enable", "BOOLEAN", "true"),
    _k("streams.session.timeout.ms", "INT", "45000", 1),
    _k("streams.heartbeat.interval.ms", "INT", "5000", 1),
    _k("streams.num.standby.replicas", "INT", "0", 0),
    _k("streams.initial.rebalance.delay.ms", "INT", "3000", 0),
    _k("streams.assignment.interval.ms", "INT", "1000", 0),
    _k("streams.assignor.offload.enable", "BOOLEAN", "true"),
    _k("streams.task.offset.interval.ms", "INT", "60000", 1),
    _k("streams.num.warmup.replicas", "INT", "2", 0),
    _k("streams.rack.aware.assignment.tags", "LIST", ""),
    _k("streams.acceptable.recovery.lag", "LONG", "10000", 0),
    _k("streams.assignor.name", "STRING", None),
    _k("errors.deadletterqueue.topic.name", "STRING", ""),
    _k("errors.deadletterqueue.copy.record.enable", "BOOLEAN", "false"),
)}

_JAVA_INT = re.compile(r"[+-]?[0-9]+")
_JAVA_DOUBLE = re.compile(r"[+-]?(NaN|Infinity|([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?[fFdD]?)")
_LIST_SPLIT = re.compile(r"\s*,\s*")
_REPLICA = re.compile(r"([0-9]+:[0-9]+)?")


def _number_text(n: float) -> str:
    """A bound or parsed number as Java prints it (an int without ".0")."""
    return str(int(n)) if float(n).is_integer() and not isinstance(n, float) else str(n)


def _parse(key: ConfigKey, value: str) -> tuple[object, str | None]:
    """``ConfigDef.parseType``: the parsed value, or the reason it is not one."""
    v = value.strip()
    if key.type in ("INT", "LONG"):
        lo, hi = (_INT_MIN, _INT_MAX) if key.type == "INT" else (_LONG_MIN, _LONG_MAX)
        if not _JAVA_INT.fullmatch(v) or not lo <= int(v) <= hi:
            return None, f"Not a number of type {key.type}"
        return int(v), None
    if key.type == "DOUBLE":
        if not _JAVA_DOUBLE.fullmatch(v):
            return None, "Not a number of type DOUBLE"
        return float(v.rstrip("fFdD").replace("Infinity", "inf")), None
    if key.type == "BOOLEAN":
        if v.lower() not in ("true", "false"):
            return None, "Expected value to be either true or false"
        return v.lower() == "true", None
    if key.type == "LIST":
        return ([] if not v else _LIST_SPLIT.split(v)), None
    return v, None


def _range_reason(key: ConfigKey, n: float) -> str | None:
    """``ConfigDef.Range.ensureValid`` (and the gzip level's ``or -1``)."""
    lo, hi = key.at_least, key.at_most
    if key.validator == _GZIP:
        return None if n == -1 or 1 <= n <= 9 else "Value must be between 1 and 9 or equal to -1"
    if lo is not None and n < lo:
        return f"Value must be at least {_number_text(lo)}"
    if hi is not None and n > hi:
        return f"Value must be no more than {_number_text(hi)}"
    return None


def _list_reason(key: ConfigKey, items: list[str]) -> str | None:
    if key.validator == _THROTTLED:
        if all(_REPLICA.fullmatch(i.strip()) for i in items) or "".join(items).strip() == "*":
            return None
        return (f"{key.name} must be the literal '*' or a list of replicas in the following format: "
                "[partitionId]:[brokerId],[partitionId]:[brokerId],...")
    if key.one_of:
        if any(not i for i in items):
            return f"Configuration '{key.name}' values must not be empty."
        for i in items:
            if i not in key.one_of:
                return f"Invalid value {i} for configuration {key.name}: String must be one of: {', '.join(key.one_of)}"
    return None


def parse_error(key: ConfigKey, value: str) -> str | None:
    """``ConfigDef.parseValue`` for one value: None, or ``ConfigException``'s message."""
    parsed, reason = _parse(key, value)
    shown: str = value.strip()
    if reason is None and isinstance(parsed, (int, float)) and not isinstance(parsed, bool):
        reason = _range_reason(key, parsed)
        shown = repr(parsed) if isinstance(parsed, float) else str(parsed)
    elif reason is None and isinstance(parsed, list):
        reason = _list_reason(key, parsed)
        if reason is not None and reason.startswith(("Configuration '", "Invalid value ")):
            return reason
        shown = "[" + ", ".join(parsed) + "]"
    elif reason is None and key.one_of and parsed not in key.one_of:
        reason = f"String must be one of: {', '.join(key.one_of)}"
    return None if reason is None else f"Invalid value {shown} for configuration {key.name}: {reason}"


def validate_topic_config(name: str, value: str) -> ApiError | None:
    """One topic config as CreateTopics and AlterConfigs check it: a name
    ``LogConfig`` knows, and a value its ``ConfigDef`` accepts
    (INVALID_CONFIG with Kafka's message)."""
    key = TOPIC_CONFIGS.get(name)
    if key is None:
        return ApiError(ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {name}")
    reason = parse_error(key, value)
    return None if reason is None else ApiError(ErrorCode.INVALID_CONFIG, reason)


def _long(configs: Mapping[str, str], name: str) -> int:
    return int(configs.get(name, TOPIC_CONFIGS[name].default or "0").strip())


def _bool(configs: Mapping[str, str], name: str) -> bool:
    return configs.get(name, TOPIC_CONFIGS[name].default or "false").strip().lower() == "true"


def validate_topic_configs(configs: Mapping[str, str], existing: Mapping[str, str] | None = None) -> ApiError | None:
    """``LogConfig.validate(existing, configs, brokerDefaults, false)`` as
    the controller calls it: names (in ``HashMap`` order), then every value
    in definition order, then ``validateTopicLogConfigValues``' cross-checks
    (tiered storage being disabled in a kraft cluster)."""
    for name in hash_map_order(configs):
        if name not in TOPIC_CONFIGS:
            return ApiError(ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {name}")
    for name, key in TOPIC_CONFIGS.items():
        if name in configs:
            reason = parse_error(key, configs[name])
            if reason is not None:
                return ApiError(ErrorCode.INVALID_CONFIG, reason)
    low, high = _long(configs, "min.compaction.lag.ms"), _long(configs, "max.compaction.lag.ms")
    if low > high:
        return ApiError(ErrorCode.INVALID_CONFIG, "conflict topic config setting min.compaction.lag.ms "
                                                  f"({low}) > max.compaction.lag.ms ({high})")
    if _bool(configs, "remote.storage.enable"):
        return ApiError(ErrorCode.INVALID_CONFIG, "Tiered Storage functionality is disabled in the broker. Topic "
                                                  "cannot be configured with remote log storage.")
    was_remote = (existing or {}).get("remote.storage.enable", "false").strip().lower() == "true"
    if was_remote and not _bool(configs, "remote.log.delete.on.disable"):
        return ApiError(ErrorCode.INVALID_CONFIG, _TURN_OFF_REMOTE)
    return None


_TURN_OFF_REMOTE = (
    "It is invalid to disable remote storage without deleting remote data. If you want to keep the remote data and "
    "turn to read only, please set `remote.storage.enable=true,remote.log.copy.disable=true`. If you want to disable "
    "remote storage and delete all remote data, please set "
    "`remote.storage.enable=false,remote.log.delete.on.disable=true`.")
