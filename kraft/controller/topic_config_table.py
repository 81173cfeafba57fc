"""Kafka's topic configs (``TopicConfig`` keys, defined with their types,
defaults and validators in ``LogConfig``'s ``ConfigDef``, Kafka 4.4): what
CreateTopics may set, how a value is checked (``ConfigDef.parse`` and
``LogConfig.validate``) and the default an effective config falls back to.
Kafka's refusal is ``InvalidConfigurationException``/``ConfigException``,
INVALID_CONFIG on the wire, with the messages below.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from kraft.controller.result import ApiError
from kraft.wire.errors import ErrorCode

__all__ = ["TopicConfigDef", "TOPIC_CONFIGS", "TOPIC_CONFIG_SYNONYMS", "validate_topic_configs", "synonym_value",
           "MIN_INSYNC_REPLICAS", "UNCLEAN_LEADER_ELECTION_ENABLE"]

MIN_INSYNC_REPLICAS = "min.insync.replicas"
UNCLEAN_LEADER_ELECTION_ENABLE = "unclean.leader.election.enable"
_LONG_MAX = 9223372036854775807
_JAVA_INTEGER = re.compile(r"[+-]?[0-9]+")
_INT_RANGE = (-(2 ** 31), 2 ** 31 - 1)
_LONG_RANGE = (-(2 ** 63), 2 ** 63 - 1)


@dataclass(frozen=True, slots=True)
class TopicConfigDef:
    """One ``ConfigDef.define``: ``type`` is Kafka's ``ConfigDef.Type`` name,
    ``default`` as DescribeConfigs prints it; ``at_least``/``at_most`` the
    ``Range`` validator, ``choices`` a ``ValidString``/``ValidList.in``."""

    name: str
    type: str
    default: str
    at_least: float | None = None
    at_most: float | None = None
    choices: tuple[str, ...] = ()


def _d(name: str, type_: str, default: object, at_least: float | None = None, at_most: float | None = None,
       choices: tuple[str, ...] = ()) -> tuple[str, TopicConfigDef]:
    text = str(default).lower() if isinstance(default, bool) else str(default)
    return name, TopicConfigDef(name, type_, text, at_least, at_most, choices)


_COMPRESSION = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")

#: In ``LogConfig``'s definition order.
TOPIC_CONFIGS: Mapping[str, TopicConfigDef] = MappingProxyType(dict([
    _d("segment.bytes", "INT", 1073741824, 1024 * 1024),
    _d("segment.ms", "LONG", 604800000, 1),
    _d("segment.jitter.ms", "LONG", 0, 0),
    _d("segment.index.bytes", "INT", 10485760, 4),
    _d("flush.messages", "LONG", _LONG_MAX, 1),
    _d("flush.ms", "LONG", _LONG_MAX, 0),
    _d("retention.bytes", "LONG", -1),
    _d("retention.ms", "LONG", 604800000, -1),
    _d("max.message.bytes", "INT", 1048588, 0),
    _d("index.interval.bytes", "INT", 4096, 0),
    _d("delete.retention.ms", "LONG", 86400000, 0),
    _d("min.compaction.lag.ms", "LONG", 0, 0),
    _d("max.compaction.lag.ms", "LONG", _LONG_MAX, 1),
    _d("file.delete.delay.ms", "LONG", 60000, 0),
    _d("min.cleanable.dirty.ratio", "DOUBLE", 0.5, 0, 1),
    _d("cleanup.policy", "LIST", "delete", choices=("compact", "delete")),
    _d(UNCLEAN_LEADER_ELECTION_ENABLE, "BOOLEAN", False),
    _d(MIN_INSYNC_REPLICAS, "INT", 1, 1),
    _d("compression.type", "STRING", "producer", choices=_COMPRESSION),
    _d("compression.gzip.level", "INT", -1),
    _d("compression.lz4.level", "INT", 9, 1, 17),
    _d("compression.zstd.level", "INT", 3, -131072, 22),
    _d("preallocate", "BOOLEAN", False),
    _d("message.timestamp.type", "STRING", "CreateTime", choices=("CreateTime", "LogAppendTime")),
    _d("message.timestamp.before.max.ms", "LONG", _LONG_MAX, 0),
    _d("message.timestamp.after.max.ms", "LONG", 3600000, 0),
    _d("leader.replication.throttled.replicas", "LIST", ""),
    _d("follower.replication.throttled.replicas", "LIST", ""),
    _d("remote.storage.enable", "BOOLEAN", False),
    _d("local.retention.ms", "LONG", -2, -2),
    _d("local.retention.bytes", "LONG", -2, -2),
    _d("remote.log.copy.disable", "BOOLEAN", False),
    _d("remote.copy.lag.ms", "LONG", 0, -1),
    _d("remote.copy.lag.bytes", "LONG", -1, -1),
    _d("remote.log.delete.on.disable", "BOOLEAN", False),
    _d("errors.deadletterqueue.group.enable", "BOOLEAN", False),
]))


def _invalid(name: str, value: str, why: str) -> ApiError:
    # ConfigException(name, value, message)
    return ApiError(ErrorCode.INVALID_CONFIG, f"Invalid value {value} for configuration {name}: {why}")


def _parse_number(spec: TopicConfigDef, value: str) -> float:
    text = value.strip()
    try:
        if "_" in text or (spec.type != "DOUBLE" and not _JAVA_INTEGER.fullmatch(text)):
            raise ValueError(text)  # Integer.parseInt/Long.parseLong take [+-]digits only
        number: float = float(text) if spec.type == "DOUBLE" else int(text)
    except ValueError:
        raise _invalid(spec.name, value, f"Not a number of type {spec.type}") from None
    low, high = _INT_RANGE if spec.type == "INT" else _LONG_RANGE
    if spec.type != "DOUBLE" and not low <= number <= high:
        raise _invalid(spec.name, value, f"Not a number of type {spec.type}")
    return number


def _shown(spec: TopicConfigDef, number: float) -> str:
    """The parsed value as Java prints it (``Double.toString`` for a DOUBLE)."""
    return repr(float(number)) if spec.type == "DOUBLE" else str(int(number))


def _check_range(spec: TopicConfigDef, number: float) -> None:
    """``ConfigDef.Range.ensureValid`` (bounds are whole numbers, printed so)."""
    if spec.name == "compression.gzip.level":  # CompressionType.GZIP.levelValidator
        if number > 9 or (number < 1 and number != -1):
            raise _invalid(spec.name, _shown(spec, number), "Value must be between 1 and 9 or equal to -1")
        return
    if spec.at_least is not None and number < spec.at_least:
        raise _invalid(spec.name, _shown(spec, number), f"Value must be at least {int(spec.at_least)}")
    if spec.at_most is not None and number > spec.at_most:
        raise _invalid(spec.name, _shown(spec, number), f"Value must be no more than {int(spec.at_most)}")


def _check_list(spec: TopicConfigDef, value: str) -> None:
    """``ConfigDef.parseType`` LIST and ``ValidList.ensureValid``."""
    text = value.strip()
    items = [v.strip() for v in text.split(",")] if text else []
    if len(set(items)) != len(items):
        raise ApiError(ErrorCode.INVALID_CONFIG, f"Configuration '{spec.name}' values must not be duplicated.")
    for item in items:
        if not item:
            raise ApiError(ErrorCode.INVALID_CONFIG, f"Configuration '{spec.name}' values must not be empty.")
        if spec.choices and item not in spec.choices:
            raise _invalid(spec.name, item, f"String must be one of: {', '.join(spec.choices)}")


def _check_one(spec: TopicConfigDef, value: str) -> float | None:
    """``ConfigDef.parseType`` then the key's validator; the number parsed, if any."""
    if spec.type in ("INT", "LONG", "DOUBLE"):
        number = _parse_number(spec, value)
        _check_range(spec, number)
        return number
    if spec.type == "BOOLEAN":
        if value.strip().lower() not in ("true", "false"):
            raise _invalid(spec.name, value, "Expected value to be either true or false")
    elif spec.type == "STRING" and spec.choices and value.strip() not in spec.choices:
        raise _invalid(spec.name, value.strip(), f"String must be one of: {', '.join(spec.choices)}")
    elif spec.type == "LIST":
        _check_list(spec, value)
    return None


def validate_topic_configs(configs: Mapping[str, str], *, remote_storage_system_enabled: bool = False) -> None:
    """``LogConfig.validate``: known names (``validateNames``), values that
    parse and pass their validators, ``validateValues``'s compaction-lag
    check, and no ``remote.storage.enable=true`` while tiered storage is off
    (``validateRemoteStorageOnlyIfSystemEnabled``); raises :class:`ApiError`
    INVALID_CONFIG."""
    for name in configs:
        if name not in TOPIC_CONFIGS:
            raise ApiError(ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {name}")
    numbers = {name: _check_one(TOPIC_CONFIGS[name], value) for name, value in configs.items()}
    lag_min = numbers.get("min.compaction.lag.ms")
    lag_max = numbers.get("max.compaction.lag.ms")
    low = int(lag_min) if lag_min is not None else 0
    high = int(lag_max) if lag_max is not None else _LONG_MAX
    if low > high:
        raise ApiError(ErrorCode.INVALID_CONFIG, f"conflict topic config setting min.compaction.lag.ms ({low}) > "
                       f"max.compaction.lag.ms ({high})")
    remote = configs.get("remote.storage.enable", "false").strip().lower() == "true"
    if remote and not remote_storage_system_enabled:
        raise ApiError(ErrorCode.INVALID_CONFIG, "Tiered Storage functionality is disabled in the broker. "
                       "Topic cannot be configured with remote log storage.")


def _log(*names: str) -> tuple[str, ...]:
    return tuple(f"log.{n}" for n in names)


#: ``ServerTopicConfigSynonyms.ALL_TOPIC_CONFIG_SYNONYMS``: the broker keys a
#: topic config falls back to, in order; a ``.hours``/``.minutes`` key is
#: converted to milliseconds (``ConfigSynonym.HOURS_TO_MILLISECONDS``).
TOPIC_CONFIG_SYNONYMS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "segment.bytes": _log("segment.bytes"),
    "segment.ms": _log("roll.ms", "roll.hours"),
    "segment.jitter.ms": _log("roll.jitter.ms", "roll.jitter.hours"),
    "segment.index.bytes": _log("index.size.max.bytes"),
    "flush.messages": _log("flush.interval.messages"),
    "flush.ms": _log("flush.interval.ms", "flush.scheduler.interval.ms"),
    "retention.bytes": _log("retention.bytes"),
    "retention.ms": _log("retention.ms", "retention.minutes", "retention.hours"),
    "max.message.bytes": ("message.max.bytes",),
    "index.interval.bytes": _log("index.interval.bytes"),
    "delete.retention.ms": ("log.cleaner.delete.retention.ms",),
    "min.compaction.lag.ms": ("log.cleaner.min.compaction.lag.ms",),
    "max.compaction.lag.ms": ("log.cleaner.max.compaction.lag.ms",),
    "file.delete.delay.ms": _log("segment.delete.delay.ms"),
    "min.cleanable.dirty.ratio": ("log.cleaner.min.cleanable.ratio",),
    "cleanup.policy": _log("cleanup.policy"),
    UNCLEAN_LEADER_ELECTION_ENABLE: (UNCLEAN_LEADER_ELECTION_ENABLE,),
    MIN_INSYNC_REPLICAS: (MIN_INSYNC_REPLICAS,),
    "compression.type": ("compression.type",),
    "compression.gzip.level": ("compression.gzip.level",),
    "compression.lz4.level": ("compression.lz4.level",),
    "compression.zstd.level": ("compression.zstd.level",),
    "preallocate": _log("preallocate"),
    "message.timestamp.type": _log("message.timestamp.type"),
    "message.timestamp.before.max.ms": _log("message.timestamp.before.max.ms"),
    "message.timestamp.after.max.ms": _log("message.timestamp.after.max.ms"),
    "local.retention.ms": _log("local.retention.ms"),
    "local.retention.bytes": _log("local.retention.bytes"),
    "remote.copy.lag.ms": _log("remote.copy.lag.ms"),
    "remote.copy.lag.bytes": _log("remote.copy.lag.bytes"),
})


def synonym_value(synonym: str, value: str) -> str:
    """``ConfigSynonym``'s converter: hours and minutes become milliseconds."""
    if synonym.endswith(".hours"):
        return str(int(value.strip()) * 3_600_000)
    if synonym.endswith(".minutes"):
        return str(int(value.strip()) * 60_000)
    return value
