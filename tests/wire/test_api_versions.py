"""Kafka's ApiVersions rules as data: the answer by request version
(KIP-35, KIP-511, KIP-584) and the version choice from an answer."""

from __future__ import annotations

import pytest

from kraft.messages.generated.api_versions_request import ApiVersionsRequest
from kraft.wire.api_versions import (
    advertised_versions,
    api_versions_response,
    is_valid_request,
    response_version,
    supported_versions,
    unsupported_version_response,
    usable_version_range,
)
from kraft.wire.apis import ApiKey
from kraft.wire.codec import decode_response, encode_response
from kraft.wire.errors import ErrorCode

SUPPORTED = {ApiKey.VOTE: (0, 2), ApiKey.API_VERSIONS: (0, 4), ApiKey.FETCH: (4, 17)}


def test_lists_every_supported_api_sorted_by_key() -> None:
    response = api_versions_response(4, SUPPORTED)
    assert response.error_code == ErrorCode.NONE
    assert [(k.api_key, k.min_version, k.max_version) for k in response.api_keys] == [
        (1, 4, 17), (18, 0, 4), (52, 0, 2)]
    assert advertised_versions(response) == {1: (4, 17), 18: (0, 4), 52: (0, 2)}


def test_features_are_written_from_v3_and_finalized_levels_are_min_and_max() -> None:
    response = api_versions_response(3, SUPPORTED, supported_features={"kraft.version": (0, 1)},
                                     finalized_features={"metadata.version": 21}, finalized_features_epoch=9)
    assert [(f.name, f.min_version, f.max_version) for f in response.supported_features] == [
        ("kraft.version", 0, 1)]
    assert [(f.name, f.min_version_level, f.max_version_level) for f in response.finalized_features] == [
        ("metadata.version", 21, 21)]
    assert response.finalized_features_epoch == 9
    old = api_versions_response(2, SUPPORTED, supported_features={"kraft.version": (0, 1)})
    assert old.supported_features == [] and old.finalized_features_epoch == -1


@pytest.mark.parametrize("version", [5, 6, 100, -1])
def test_an_unsupported_request_version_gets_unsupported_version_in_v0(version: int) -> None:
    assert response_version(version) == 0
    response = api_versions_response(version, SUPPORTED)
    assert response == unsupported_version_response()
    assert response.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert [(k.api_key, k.min_version, k.max_version) for k in response.api_keys] == [(18, 0, 4)]
    # Readable by a client that parses it as v0 (header v0: correlation id).
    body = decode_response(b"".join(encode_response(response, 0, 1, framed=False)), ApiKey.API_VERSIONS, 0).body
    assert body == response


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_a_supported_request_version_is_answered_in_kind(version: int) -> None:
    assert response_version(version) == version


@pytest.mark.parametrize(("name", "software_version", "valid"), [
    ("apache-kafka-java", "4.0.0-SNAPSHOT", True),
    ("kraft", "0.1.0", True),
    ("a", "1", True),
    ("-kafka", "1.0", False),
    ("kafka-", "1.0", False),
    ("kafka java", "1.0", False),
    ("kafka", "", False),
    ("kafka_python", "1.0", False),
])
def test_software_name_and_version_must_match_kafkas_pattern_from_v3(name: str, software_version: str,
                                                                     valid: bool) -> None:
    request = ApiVersionsRequest(client_software_name=name, client_software_version=software_version)
    assert is_valid_request(request, 3) is valid
    assert is_valid_request(request, 2) is True  # the fields do not exist before v3
    response = api_versions_response(3, SUPPORTED, request=request)
    assert response.error_code == (ErrorCode.NONE if valid else ErrorCode.INVALID_REQUEST)
    if not valid:
        assert response.api_keys == []


def test_usable_version_range() -> None:
    assert usable_version_range((0, 2), (0, 1)) == (0, 1)
    assert usable_version_range((0, 2), (1, 9)) == (1, 2)
    assert usable_version_range((0, 2), (0, 9), max_version=0) == (0, 0)
    assert usable_version_range((0, 2), (3, 9)) is None
    assert usable_version_range((0, 2), None) is None
    assert usable_version_range((1, 2), (0, 9), max_version=0) is None


def test_supported_versions_come_from_the_codecs() -> None:
    assert supported_versions([ApiKey.VOTE]) == {ApiKey.VOTE: (ApiKey.VOTE.min_version, ApiKey.VOTE.max_version)}
    assert set(supported_versions()) == set(ApiKey)
