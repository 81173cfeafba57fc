"""Whole requests and responses: header + body in frames, for every api and
version, and the typed errors a peer's bad frame produces."""

from __future__ import annotations

import random
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraft.messages.errors import DecodeError, UnsupportedVersionError
from kraft.messages.generated.api_versions_request import ApiVersionsRequest
from kraft.messages.generated.fetch_response import FetchableTopicResponse, FetchResponse, PartitionData
from kraft.messages.generated.vote_response import VoteResponse
from kraft.wire.apis import ApiKey
from kraft.wire.codec import (
    decode_request,
    decode_response,
    encode_request,
    encode_request_with_header,
    encode_response,
)
from kraft.wire.errors import ErrorCode, UnsupportedApiError
from kraft.wire.framing import FrameReader
from kraft.wire.headers import RequestHeader, request_header_version, response_header_version
from tests.messages.randgen import random_instance

ALL_VERSIONS = [(api, v) for api in ApiKey for v in range(api.min_version, api.max_version + 1)]
IDS = [f"{api.name}-v{v}" for api, v in ALL_VERSIONS]


def _payload(parts: list) -> bytes:
    """Push the encoded parts through a FrameReader, as a socket would."""
    reader = FrameReader()
    reader.feed(b"".join(parts))
    (frame,) = list(reader)
    return frame


@pytest.mark.parametrize(("api", "version"), ALL_VERSIONS, ids=IDS)
def test_request_round_trip(api: ApiKey, version: int) -> None:
    rng = random.Random(version)
    for _ in range(3):
        body = random_instance(api.request_class, version, rng)
        parts = encode_request(body, version, correlation_id=rng.randrange(1 << 31), client_id="kraft-test")
        decoded = decode_request(_payload(parts))
        assert decoded.api_key is api and decoded.api_version == version
        assert decoded.header_version == request_header_version(api, version)
        assert decoded.header.client_id == "kraft-test"
        assert decoded.body == body
        assert b"".join(encode_request_with_header(decoded.header, decoded.body)) == b"".join(parts)


@pytest.mark.parametrize(("api", "version"), ALL_VERSIONS, ids=IDS)
def test_response_round_trip(api: ApiKey, version: int) -> None:
    rng = random.Random(version)
    for _ in range(3):
        body = random_instance(api.response_class, version, rng)
        parts = encode_response(body, version, correlation_id=77)
        decoded = decode_response(_payload(parts), api, version)
        assert decoded.header.correlation_id == 77
        assert decoded.header_version == response_header_version(api, version)
        assert decoded.body == body


def test_api_versions_response_header_is_v0_even_when_flexible() -> None:
    body = random_instance(ApiKey.API_VERSIONS.response_class, 4, random.Random(1))
    frame = b"".join(encode_response(body, 4, correlation_id=5))
    # size, correlation id, then the body straight away: no tagged-field byte.
    assert frame[4:8] == struct.pack(">i", 5)
    assert frame[8:] == body.encode(4)


def test_unknown_api_key_is_invalid_request() -> None:
    payload = struct.pack(">hhi", 0, 9, 31) + b"\x00\x00"  # PRODUCE: not served by kraft
    with pytest.raises(UnsupportedApiError) as info:
        decode_request(payload)
    assert info.value.error_code is ErrorCode.INVALID_REQUEST
    assert info.value.correlation_id == 31


def test_unsupported_version_is_unsupported_version_with_the_header() -> None:
    # An ApiVersions request from a newer client: Kafka parses its header
    # and answers with a v0 ApiVersions response carrying error 35.
    header = RequestHeader(request_api_key=18, request_api_version=9, correlation_id=12, client_id="future")
    payload = header.encode(2) + b"\x00\x00\x00"  # header v2, then a body we cannot know
    with pytest.raises(UnsupportedApiError) as info:
        decode_request(payload)
    err = info.value
    assert err.error_code is ErrorCode.UNSUPPORTED_VERSION and int(err.error_code) == 35
    assert (err.api_key, err.api_version, err.correlation_id) == (18, 9, 12)
    assert err.header is not None and err.header.client_id == "future"
    assert "valid versions: 0-4" in err.reason


def test_negative_version_is_unsupported() -> None:
    payload = struct.pack(">hhi", 52, -1, 3) + b"\x00\x01x\x00"
    with pytest.raises(UnsupportedApiError) as info:
        decode_request(payload)
    assert info.value.error_code is ErrorCode.UNSUPPORTED_VERSION


def test_trailing_bytes_after_the_body() -> None:
    parts = encode_request(ApiVersionsRequest(client_software_name="k", client_software_version="1"), 3, 1,
                           framed=False)
    payload = b"".join(parts) + b"\xde\xad"
    with pytest.raises(DecodeError, match="2 trailing bytes") as info:
        decode_request(payload)
    assert info.value.offset == len(payload) - 2


def test_body_errors_name_the_field_and_the_offset_in_the_frame() -> None:
    body = VoteResponse(error_code=0)
    payload = b"".join(encode_response(body, 2, 1, framed=False))
    with pytest.raises(DecodeError) as info:
        decode_response(payload[:-1], ApiKey.VOTE, 2)
    assert 0 <= info.value.offset <= len(payload)
    assert info.value.message == "VoteResponse v2"


def test_decode_response_at_an_unsupported_version() -> None:
    with pytest.raises(UnsupportedVersionError):
        decode_response(b"\x00\x00\x00\x01\x00", ApiKey.VOTE, 99)


def test_records_are_not_copied() -> None:
    records = bytes(range(256)) * 64
    body = FetchResponse(responses=[FetchableTopicResponse(partitions=[PartitionData(records=records)])])
    parts = encode_response(body, 17, correlation_id=1)
    assert any(p is records for p in parts), "the records should be passed through to the writer"
    payload = memoryview(b"".join(parts))[4:]
    decoded = decode_response(payload, ApiKey.FETCH, 17)
    got = decoded.body.responses[0].partitions[0].records
    assert isinstance(got, memoryview) and got.obj is payload.obj
    assert bytes(got) == records


def test_encode_checks_the_message_kind() -> None:
    with pytest.raises(TypeError):
        encode_request(VoteResponse(), 0, 1)
    with pytest.raises(TypeError):
        encode_response(ApiVersionsRequest(), 0, 1)
    with pytest.raises(TypeError):
        encode_request(object(), 0, 1)


_KNOWN = st.sampled_from(ALL_VERSIONS)


@settings(max_examples=400, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(target=_KNOWN, tail=st.binary(max_size=64), correlation_id=st.integers(-(1 << 31), (1 << 31) - 1))
def test_garbage_after_a_valid_header_prefix_is_a_decode_error(target: tuple[ApiKey, int], tail: bytes,
                                                               correlation_id: int) -> None:
    api, version = target
    payload = struct.pack(">hhi", api, version, correlation_id) + tail
    try:
        decoded = decode_request(payload)
    except DecodeError as e:
        assert e.reason and 0 <= e.offset <= len(payload)
    else:
        assert decoded.header.correlation_id == correlation_id


@settings(max_examples=400, derandomize=True, deadline=None)
@given(payload=st.binary(max_size=64))
def test_random_payloads_only_raise_decode_errors(payload: bytes) -> None:
    try:
        decode_request(payload)
    except DecodeError as e:
        assert e.reason


def test_unknown_tagged_fields_survive_a_round_trip_through_a_frame() -> None:
    body = VoteResponse(error_code=0, unknown_tagged_fields=[(90, b"future")])
    header = RequestHeader(request_api_key=52, request_api_version=2, correlation_id=1,
                           unknown_tagged_fields=[(7, b"\x00")])
    request_body = random_instance(ApiKey.VOTE.request_class, 2, random.Random(3))
    request_body.unknown_tagged_fields = [(1000, b"\x01\x02\x03")]
    decoded = decode_request(_payload(encode_request_with_header(header, request_body)))
    assert list(decoded.header.unknown_tagged_fields) == [(7, b"\x00")]
    assert list(decoded.body.unknown_tagged_fields) == [(1000, b"\x01\x02\x03")]
    response = decode_response(_payload(encode_response(body, 2, 1)), ApiKey.VOTE, 2)
    assert list(response.body.unknown_tagged_fields) == [(90, b"future")]


def test_tagged_field_running_past_the_frame_is_a_decode_error() -> None:
    payload = bytearray(b"".join(encode_response(VoteResponse(), 2, 1, framed=False)))
    # The body's last byte is its tagged-field count (0): claim one field
    # (tag 3) of 100 bytes that are not there.
    payload[-1:] = b"\x01\x03\x64"
    with pytest.raises(DecodeError, match="past end") as info:
        decode_response(bytes(payload), ApiKey.VOTE, 2)
    assert 0 <= info.value.offset <= len(payload)
