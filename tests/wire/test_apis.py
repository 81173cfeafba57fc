"""The api-key registry: Kafka's names and numbers, version ranges from the
generated codecs, and lookup by any of the names people use."""

from __future__ import annotations

import pytest

from kraft.messages import generated
from kraft.messages.registry import request_class, response_class
from kraft.wire.apis import ApiKey, UnknownApiName, lookup_api

# Kafka's ApiKeys numbers for the apis kraft speaks.
KAFKA_API_KEYS = {
    "FETCH": 1, "METADATA": 3, "SASL_HANDSHAKE": 17, "API_VERSIONS": 18, "SASL_AUTHENTICATE": 36,
    "VOTE": 52, "BEGIN_QUORUM_EPOCH": 53, "END_QUORUM_EPOCH": 54, "DESCRIBE_QUORUM": 55, "UPDATE_FEATURES": 57,
    "FETCH_SNAPSHOT": 59, "DESCRIBE_CLUSTER": 60, "ADD_RAFT_VOTER": 80, "REMOVE_RAFT_VOTER": 81,
    "UPDATE_RAFT_VOTER": 82,
    # Answered with NOT_CONTROLLER only (wire/not_controller_admin.py).
    "CREATE_TOPICS": 19, "DELETE_TOPICS": 20, "DESCRIBE_ACLS": 29, "CREATE_ACLS": 30, "DELETE_ACLS": 31,
    "DESCRIBE_CONFIGS": 32, "ALTER_CONFIGS": 33, "CREATE_PARTITIONS": 37, "CREATE_DELEGATION_TOKEN": 38,
    "RENEW_DELEGATION_TOKEN": 39, "EXPIRE_DELEGATION_TOKEN": 40, "DESCRIBE_DELEGATION_TOKEN": 41,
    "ELECT_LEADERS": 43, "INCREMENTAL_ALTER_CONFIGS": 44, "ALTER_PARTITION_REASSIGNMENTS": 45,
    "LIST_PARTITION_REASSIGNMENTS": 46, "ALTER_CLIENT_QUOTAS": 49, "DESCRIBE_USER_SCRAM_CREDENTIALS": 50,
    "ALTER_USER_SCRAM_CREDENTIALS": 51, "ALTER_PARTITION": 56, "UNREGISTER_BROKER": 64, "CONTROLLER_REGISTRATION": 70,
    "ASSIGN_REPLICAS_TO_DIRS": 73,
    # The broker-to-controller RPCs (kraft/controller/).
    "ENVELOPE": 58, "BROKER_REGISTRATION": 62, "BROKER_HEARTBEAT": 63, "ALLOCATE_PRODUCER_IDS": 67,
    # Sent by remove-controller --unregister (KIP-1312, Kafka 4.4).
    "UNREGISTER_CONTROLLER": 94,
}


def test_names_and_numbers_are_kafkas() -> None:
    assert {api.name: api.value for api in ApiKey} == KAFKA_API_KEYS


def test_the_registry_and_the_generated_codecs_agree() -> None:
    assert set(generated.BY_TYPE["request"]) == {api.value for api in ApiKey}
    assert set(generated.BY_TYPE["response"]) == {api.value for api in ApiKey}


@pytest.mark.parametrize("api", list(ApiKey))
def test_version_ranges_come_from_the_generated_classes(api: ApiKey) -> None:
    request, response = request_class(api.value), response_class(api.value)
    assert api.request_class is request and api.response_class is response
    assert (api.min_version, api.max_version) == (request.LOWEST_VERSION, request.HIGHEST_VERSION)
    # Kafka keeps a request and its response on the same versions.
    assert (response.LOWEST_VERSION, response.HIGHEST_VERSION) == (api.min_version, api.max_version)
    assert response.FLEXIBLE_FROM == request.FLEXIBLE_FROM
    assert api.is_version_supported(api.max_version)
    assert not api.is_version_supported(api.max_version + 1)
    assert not api.is_version_supported(api.min_version - 1)


def test_kraft_rpc_versions() -> None:
    # The versions Kafka 4.x voters negotiate (see fixtures/README.md).
    assert ApiKey.VOTE.max_version >= 2
    assert ApiKey.FETCH.max_version >= 17
    assert ApiKey.DESCRIBE_QUORUM.max_version >= 2
    assert ApiKey.API_VERSIONS.max_version >= 4


@pytest.mark.parametrize("text", ["VOTE", "Vote", "vote", "VoteRequest", "VoteResponse", "vote_request",
                                  "52", 52, " 52 "])
def test_lookup_accepts_every_spelling(text: str | int) -> None:
    assert lookup_api(text) is ApiKey.VOTE


@pytest.mark.parametrize(("text", "api"), [
    ("DESCRIBE_QUORUM", ApiKey.DESCRIBE_QUORUM), ("DescribeQuorum", ApiKey.DESCRIBE_QUORUM),
    ("describe-quorum", ApiKey.DESCRIBE_QUORUM), ("ApiVersionsRequest", ApiKey.API_VERSIONS),
    ("FetchSnapshotResponse", ApiKey.FETCH_SNAPSHOT), ("fetch", ApiKey.FETCH), ("1", ApiKey.FETCH),
])
def test_lookup_by_name(text: str, api: ApiKey) -> None:
    assert lookup_api(text) is api


@pytest.mark.parametrize("text", ["PRODUCE", "0", "99", "-1", "Votes", "", "Request"])
def test_unknown_names_raise_with_the_known_list(text: str) -> None:
    with pytest.raises(UnknownApiName, match="VOTE=52"):
        lookup_api(text)


def test_display_name_is_kafkas_message_name() -> None:
    assert ApiKey.DESCRIBE_QUORUM.display_name == "DescribeQuorum"
    assert ApiKey.API_VERSIONS.display_name == "ApiVersions"
