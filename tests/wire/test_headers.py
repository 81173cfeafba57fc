"""Request/response headers and Kafka's rule for which header version goes
with which api version (ApiKeys.requestHeaderVersion/responseHeaderVersion:
the flexible versions of an api use request header v2 and response header
v1; ApiVersions responses always use v0; ControlledShutdown v0 alone used
request header v0)."""

from __future__ import annotations

import pytest

from kraft.messages.errors import DecodeError
from kraft.wire.apis import ApiKey
from kraft.wire.errors import ErrorCode, UnsupportedApiError
from kraft.wire.headers import (
    CONTROLLED_SHUTDOWN,
    RequestHeader,
    ResponseHeader,
    encode_request_header,
    encode_response_header,
    header_to_json,
    read_request_header,
    read_response_header,
    request_header_from_json,
    request_header_version,
    response_header_version,
)

# (api, version, request header version, response header version), from the
# flexibleVersions of Kafka's message specs.
KAFKA_HEADER_VERSIONS = [
    (ApiKey.API_VERSIONS, 0, 1, 0),
    (ApiKey.API_VERSIONS, 2, 1, 0),
    (ApiKey.API_VERSIONS, 3, 2, 0),
    (ApiKey.API_VERSIONS, 4, 2, 0),
    (ApiKey.FETCH, 4, 1, 0),
    (ApiKey.FETCH, 11, 1, 0),
    (ApiKey.FETCH, 12, 2, 1),
    (ApiKey.FETCH, 17, 2, 1),
    (ApiKey.METADATA, 8, 1, 0),
    (ApiKey.METADATA, 9, 2, 1),
    (ApiKey.SASL_HANDSHAKE, 0, 1, 0),
    (ApiKey.SASL_HANDSHAKE, 1, 1, 0),
    (ApiKey.SASL_AUTHENTICATE, 1, 1, 0),
    (ApiKey.SASL_AUTHENTICATE, 2, 2, 1),
    (ApiKey.VOTE, 0, 2, 1),
    (ApiKey.VOTE, 2, 2, 1),
    (ApiKey.BEGIN_QUORUM_EPOCH, 0, 1, 0),
    (ApiKey.BEGIN_QUORUM_EPOCH, 1, 2, 1),
    (ApiKey.END_QUORUM_EPOCH, 0, 1, 0),
    (ApiKey.END_QUORUM_EPOCH, 1, 2, 1),
    (ApiKey.DESCRIBE_QUORUM, 0, 2, 1),
    (ApiKey.FETCH_SNAPSHOT, 0, 2, 1),
    (ApiKey.DESCRIBE_CLUSTER, 1, 2, 1),
    (ApiKey.ADD_RAFT_VOTER, 0, 2, 1),
    (ApiKey.REMOVE_RAFT_VOTER, 0, 2, 1),
    (ApiKey.UPDATE_RAFT_VOTER, 0, 2, 1),
]


@pytest.mark.parametrize(("api", "version", "request_hv", "response_hv"), KAFKA_HEADER_VERSIONS)
def test_header_versions_follow_kafka(api: ApiKey, version: int, request_hv: int, response_hv: int) -> None:
    assert request_header_version(api, version) == request_hv
    assert response_header_version(api, version) == response_hv


def test_every_supported_version_has_a_header_version() -> None:
    for api in ApiKey:
        for version in range(api.min_version, api.max_version + 1):
            flexible = api.request_class.FLEXIBLE_FROM is not None and version >= api.request_class.FLEXIBLE_FROM
            assert request_header_version(api, version) == (2 if flexible else 1)
            expected = 0 if api is ApiKey.API_VERSIONS else (1 if flexible else 0)
            assert response_header_version(api, version) == expected


def test_controlled_shutdown_v0_is_the_only_request_header_v0() -> None:
    assert request_header_version(CONTROLLED_SHUTDOWN, 0) == 0
    assert request_header_version(CONTROLLED_SHUTDOWN, 1) == 1


def test_versions_past_the_supported_range_extrapolate() -> None:
    # Kafka parses the header of a too-new request (to answer it with
    # UNSUPPORTED_VERSION), so the rule must answer for any version.
    assert request_header_version(ApiKey.API_VERSIONS, 99) == 2
    assert request_header_version(ApiKey.SASL_HANDSHAKE, 99) == 1


def test_unknown_api_key_has_no_header_version() -> None:
    with pytest.raises(KeyError):
        request_header_version(99, 0)


def test_request_header_v0_has_no_client_id() -> None:
    header = RequestHeader(request_api_key=7, request_api_version=0, correlation_id=42, client_id="ignored")
    data = encode_request_header(header, 0)
    assert data == bytes.fromhex("0007 0000 0000002a")
    decoded, hv, end = read_request_header(data, 0, header_version=0)
    assert (decoded.request_api_key, decoded.request_api_version, decoded.correlation_id) == (7, 0, 42)
    assert hv == 0 and end == 8
    assert header_to_json(decoded, 0) == {"requestApiKey": 7, "requestApiVersion": 0, "correlationId": 42}
    assert request_header_from_json(header_to_json(decoded, 0), 0) == decoded


def test_request_header_v1_client_id_is_an_int16_string_and_nullable() -> None:
    header = RequestHeader(request_api_key=17, request_api_version=1, correlation_id=1, client_id="kraft")
    assert encode_request_header(header, 1) == bytes.fromhex("0011 0001 00000001 0005") + b"kraft"
    null = RequestHeader(request_api_key=17, request_api_version=1, correlation_id=1, client_id=None)
    data = encode_request_header(null, 1)
    assert data.endswith(b"\xff\xff")
    assert read_request_header(data)[0].client_id is None


def test_request_header_v2_keeps_the_int16_client_id_and_adds_tagged_fields() -> None:
    # ClientId has flexibleVersions "none": an int16 length even in v2, so
    # an old broker can read the header of any ApiVersions request.
    header = RequestHeader(request_api_key=52, request_api_version=1, correlation_id=9, client_id="c")
    assert encode_request_header(header, 2) == bytes.fromhex("0034 0001 00000009 0001 63 00")
    tagged = RequestHeader(request_api_key=52, request_api_version=1, correlation_id=9, client_id="c",
                           unknown_tagged_fields=[(5, b"\x01\x02")])
    data = encode_request_header(tagged, 2)
    decoded, hv, end = read_request_header(data)
    assert hv == 2 and end == len(data)
    assert list(decoded.unknown_tagged_fields) == [(5, b"\x01\x02")]


def test_request_header_version_follows_from_the_api_when_not_given() -> None:
    v1 = encode_request_header(RequestHeader(request_api_key=1, request_api_version=11, correlation_id=3), 1)
    v2 = encode_request_header(RequestHeader(request_api_key=1, request_api_version=12, correlation_id=3), 2)
    assert read_request_header(v1)[1] == 1
    assert read_request_header(v2)[1] == 2


def test_unknown_api_key_is_invalid_request_with_the_correlation_id() -> None:
    data = bytes.fromhex("0063 0000 0000007b 0000")
    with pytest.raises(UnsupportedApiError) as info:
        read_request_header(data)
    err = info.value
    assert err.error_code is ErrorCode.INVALID_REQUEST and int(err.error_code) == 42
    assert (err.api_key, err.api_version, err.correlation_id) == (99, 0, 123)
    assert err.header is None
    assert err.path == "request_api_key" and err.offset == 0


@pytest.mark.parametrize("size", range(8))
def test_truncated_request_header_is_a_decode_error(size: int) -> None:
    data = encode_request_header(RequestHeader(request_api_key=52, request_api_version=1, correlation_id=1,
                                               client_id="x"), 2)
    with pytest.raises(DecodeError):
        read_request_header(data[:size])


def test_truncated_client_id_names_the_field() -> None:
    data = encode_request_header(RequestHeader(request_api_key=52, request_api_version=1, correlation_id=1,
                                               client_id="client"), 2)
    with pytest.raises(DecodeError) as info:
        read_request_header(data[:12])
    assert info.value.path == "client_id"
    assert info.value.offset == 10  # the string's bytes, after its int16 length
    assert "needs 6 bytes, 2 left" in info.value.reason


def test_response_headers() -> None:
    assert encode_response_header(7, 0) == bytes.fromhex("00000007")
    assert encode_response_header(7, 1) == bytes.fromhex("00000007 00")
    header, end = read_response_header(bytes.fromhex("00000007 00"), 0, 1)
    assert header == ResponseHeader(correlation_id=7) and end == 5
    header, end = read_response_header(bytes.fromhex("00000007 00"), 0, 0)
    assert end == 4
    assert header_to_json(header, 0) == {"correlationId": 7}
