"""Kafka's topic config checks (LogConfig.validate, ConfigDef.parseType and its validators, Kafka 4.4)."""

from __future__ import annotations

import pytest

from kraft.controller.result import ApiError
from kraft.controller.topic_config_table import TOPIC_CONFIGS, validate_topic_configs
from kraft.wire.errors import ErrorCode


@pytest.mark.parametrize("configs", [
    {"retention.ms": "-1", "cleanup.policy": "compact, delete", "min.cleanable.dirty.ratio": "0.1"},
    {"compression.gzip.level": "-1", "compression.lz4.level": "17", "unclean.leader.election.enable": " TRUE "},
    {"cleanup.policy": "", "leader.replication.throttled.replicas": ""},
])
def test_good_values_pass(configs: dict[str, str]) -> None:
    """LogConfig.validate: values that parse and pass their validators."""
    validate_topic_configs(configs)


@pytest.mark.parametrize("configs,message", [
    ({"retention": "1"}, "Unknown topic config name: retention"),
    ({"segment.bytes": "1000"}, "Invalid value 1000 for configuration segment.bytes: Value must be at least 1048576"),
    ({"compression.lz4.level": "18"},
     "Invalid value 18 for configuration compression.lz4.level: Value must be no more than 17"),
    ({"compression.gzip.level": "0"},
     "Invalid value 0 for configuration compression.gzip.level: Value must be between 1 and 9 or equal to -1"),
    ({"min.cleanable.dirty.ratio": "2"},
     "Invalid value 2.0 for configuration min.cleanable.dirty.ratio: Value must be no more than 1"),
    ({"retention.ms": "1_000"}, "Invalid value 1_000 for configuration retention.ms: Not a number of type LONG"),
    ({"segment.bytes": "9999999999"},
     "Invalid value 9999999999 for configuration segment.bytes: Not a number of type INT"),
    ({"preallocate": "yes"}, "Invalid value yes for configuration preallocate: Expected value to be either true or false"),
    ({"message.timestamp.type": "Now"}, "Invalid value Now for configuration message.timestamp.type: String must be "
                                        "one of: CreateTime, LogAppendTime"),
    ({"cleanup.policy": "delete,delete"}, "Configuration 'cleanup.policy' values must not be duplicated."),
    ({"remote.storage.enable": "true"}, "Tiered Storage functionality is disabled in the broker. Topic cannot be "
                                        "configured with remote log storage."),
    ({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"},
     "conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)"),
])
def test_bad_values_are_invalid_config(configs: dict[str, str], message: str) -> None:
    """LogConfig.validateNames, ConfigDef.parseType, Range/ValidString/ValidList and validateValues:
    INVALID_CONFIG with Kafka's ConfigException message."""
    with pytest.raises(ApiError) as e:
        validate_topic_configs(configs)
    assert (e.value.error, e.value.message) == (ErrorCode.INVALID_CONFIG, message)


def test_remote_storage_when_the_system_has_it() -> None:
    """LogConfig.validateRemoteStorageOnlyIfSystemEnabled: allowed with remote.log.storage.system.enable."""
    validate_topic_configs({"remote.storage.enable": "true"}, remote_storage_system_enabled=True)


def test_every_default_passes_its_own_check() -> None:
    """LogConfig's ConfigDef: each default is a valid value of its key."""
    validate_topic_configs({name: spec.default for name, spec in TOPIC_CONFIGS.items()})
