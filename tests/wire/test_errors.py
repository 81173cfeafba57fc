"""Kafka's error codes (org.apache.kafka.common.protocol.Errors)."""

from __future__ import annotations

import pytest

from kraft.messages.errors import DecodeError
from kraft.wire.errors import ErrorCode, FrameSizeError, UnsupportedApiError


@pytest.mark.parametrize(("name", "code"), [
    ("UNKNOWN_SERVER_ERROR", -1), ("NONE", 0), ("OFFSET_OUT_OF_RANGE", 1), ("CORRUPT_MESSAGE", 2),
    ("NOT_LEADER_OR_FOLLOWER", 6), ("BROKER_NOT_AVAILABLE", 8), ("CLUSTER_AUTHORIZATION_FAILED", 31),
    ("UNSUPPORTED_SASL_MECHANISM", 33), ("ILLEGAL_SASL_STATE", 34), ("UNSUPPORTED_VERSION", 35),
    ("NOT_CONTROLLER", 41), ("INVALID_REQUEST", 42), ("SASL_AUTHENTICATION_FAILED", 58),
    ("FENCED_LEADER_EPOCH", 74), ("UNKNOWN_LEADER_EPOCH", 75), ("INCONSISTENT_VOTER_SET", 94),
    ("INVALID_UPDATE_VERSION", 95), ("SNAPSHOT_NOT_FOUND", 98), ("POSITION_OUT_OF_RANGE", 99),
    ("UNKNOWN_TOPIC_ID", 100), ("INCONSISTENT_CLUSTER_ID", 104), ("UNSUPPORTED_ENDPOINT_TYPE", 115),
    ("INVALID_VOTER_KEY", 125), ("DUPLICATE_VOTER", 126), ("VOTER_NOT_FOUND", 127),
    ("SHARE_SESSION_LIMIT_REACHED", 133),
    ("CONTROLLER_ID_NOT_REGISTERED", 136),  # Kafka 4.4's Errors
])
def test_codes_match_kafka(name: str, code: int) -> None:
    assert ErrorCode[name] == code
    assert ErrorCode(code).name == name


def test_codes_are_dense_from_minus_one() -> None:
    # Errors.java assigns every code from -1 up without gaps.
    assert sorted(int(e) for e in ErrorCode) == list(range(-1, 137))


@pytest.mark.parametrize(("error", "retriable"), [
    (ErrorCode.NOT_LEADER_OR_FOLLOWER, True), (ErrorCode.REQUEST_TIMED_OUT, True),
    (ErrorCode.FENCED_LEADER_EPOCH, True), (ErrorCode.UNKNOWN_LEADER_EPOCH, True),
    (ErrorCode.NOT_CONTROLLER, True), (ErrorCode.UNSUPPORTED_VERSION, False),
    (ErrorCode.INVALID_REQUEST, False), (ErrorCode.INCONSISTENT_CLUSTER_ID, False), (ErrorCode.NONE, False),
])
def test_retriable_follows_kafka(error: ErrorCode, retriable: bool) -> None:
    assert error.retriable is retriable


def test_unknown_code_still_has_a_name() -> None:
    assert ErrorCode.name_of(35) == "UNSUPPORTED_VERSION"
    assert ErrorCode.name_of(999) == "UNKNOWN_ERROR_CODE(999)"


def test_wire_errors_are_decode_errors() -> None:
    size = FrameSizeError(200_000_000, 104_857_600)
    assert isinstance(size, DecodeError)
    assert str(size).endswith("Invalid receive (size = 200000000 larger than 104857600)")
    api = UnsupportedApiError(52, 9, 4, ErrorCode.UNSUPPORTED_VERSION, "VOTE version 9 is not supported")
    assert isinstance(api, DecodeError)
    assert (api.path, api.offset) == ("request_api_version", 2)
