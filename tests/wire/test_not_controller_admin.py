"""NOT_CONTROLLER for the admin RPCs a Kafka 4.0 controller advertises and
kraft does not serve (wire/not_controller_admin.py): the answer has
the error on every item the request named, as each Kafka request class's
``getErrorResponse`` (e.g. ``CreateTopicsRequest.getErrorResponse``) builds
it, and encodes at every version a Kafka 4.0 controller advertises."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from kraft.node.controller_apis import SUPPORTED_APIS, replayed_api_versions
from kraft.wire.apis import ApiKey
from kraft.wire.not_controller import REFUSED_CONTROLLER_APIS
from kraft.wire.not_controller_admin import ADMIN_NOT_CONTROLLER_APIS, NOT_CONTROLLER, admin_not_controller_response
from tests.messages.randgen import random_instance
from tests.conftest import FIXTURES

FRAMES = FIXTURES / "wire" / \
    "kafka-4.0-controller-frames.jsonl"

CASES = [(key, v) for key in ADMIN_NOT_CONTROLLER_APIS
         for v in range(ApiKey(key).min_version, ApiKey(key).max_version + 1)]


def test_every_api_a_kafka_controller_advertises_is_served_or_refused() -> None:
    """What a real Kafka 4.0 controller advertises, minus what kraft serves,
    is exactly what kraft answers with NOT_CONTROLLER, at versions that cover
    4.0's (the codecs follow Kafka 4.4: AlterPartitionReassignments v1 is
    4.1's KIP-1117 AllowReplicationFactorChange)."""
    frame = next(f for line in FRAMES.read_text().splitlines()
                 if (f := json.loads(line))["direction"] == "response" and f["apiKey"] == ApiKey.API_VERSIONS)
    kafka = replayed_api_versions(frame["frameHex"])
    rest = {k: r for k, r in kafka.items() if k not in SUPPORTED_APIS and k not in REFUSED_CONTROLLER_APIS}
    assert set(rest) == set(ADMIN_NOT_CONTROLLER_APIS)
    for key, (lo, hi) in rest.items():
        assert ApiKey(key).min_version == lo and ApiKey(key).max_version >= hi, ADMIN_NOT_CONTROLLER_APIS[key]


def _errors(obj: Any) -> list[int]:
    """Every ErrorCode in a response, depth first."""
    found = []
    for name in obj.__slots__:
        value = getattr(obj, name, None)
        if name == "error_code":
            found.append(value)
        for item in value if isinstance(value, list) else [value]:
            if hasattr(item, "__slots__") and not isinstance(item, (str, bytes)):
                found.extend(_errors(item))
    return found


@pytest.mark.parametrize(("key", "version"), CASES)
def test_the_answer_mirrors_the_request_and_encodes_at_every_version(key: int, version: int) -> None:
    api = ApiKey(key)
    answered = 0
    for seed in range(20):
        request = random_instance(api.request_class, version, random.Random(seed))
        request = api.request_class.decode(request.encode(version), version=version)
        body = admin_not_controller_response(key, version, request).encode(version)
        answer = api.response_class.decode(body, version=version)
        errors = _errors(answer)
        if (key, version) == (ApiKey.ELECT_LEADERS, 0):
            errors.remove(0)  # v0 has no top-level ErrorCode: the decoded default
        # No other code anywhere (an empty request gets an empty answer).
        assert set(errors) <= {NOT_CONTROLLER}, (api.display_name, errors)
        answered += bool(errors)
    assert answered, api.display_name



def test_create_topics_gets_the_error_on_every_topic() -> None:
    from kraft.messages.generated import create_topics_request as ct
    request = ct.CreateTopicsRequest(topics=[ct.CreatableTopic(name="a", num_partitions=1, replication_factor=1),
                                             ct.CreatableTopic(name="b", num_partitions=3, replication_factor=1)])
    answer = admin_not_controller_response(19, 7, request)
    assert [(t.name, t.error_code) for t in answer.topics] == [("a", NOT_CONTROLLER), ("b", NOT_CONTROLLER)]


def test_delete_topics_by_name_and_by_id() -> None:
    from kraft.messages.generated import delete_topics_request as dt
    import uuid
    by_name = admin_not_controller_response(20, 6, dt.DeleteTopicsRequest(topic_names=["a", "b"]))
    assert [(r.name, r.error_code) for r in by_name.responses] == [("a", NOT_CONTROLLER), ("b", NOT_CONTROLLER)]
    tid = uuid.uuid4()
    by_id = admin_not_controller_response(20, 6, dt.DeleteTopicsRequest(topics=[dt.DeleteTopicState(topic_id=tid)]))
    assert [(r.topic_id, r.error_code) for r in by_id.responses] == [(tid, NOT_CONTROLLER)]
    by_id.encode(6)


def test_alter_user_scram_credentials_answers_each_user_once() -> None:
    from kraft.messages.generated import alter_user_scram_credentials_request as a
    request = a.AlterUserScramCredentialsRequest(
        deletions=[a.ScramCredentialDeletion(name="alice", mechanism=1)],
        upsertions=[a.ScramCredentialUpsertion(name="alice", mechanism=2), a.ScramCredentialUpsertion(name="bob")])
    answer = admin_not_controller_response(51, 0, request)
    assert [(r.user, r.error_code) for r in answer.results] == [("alice", NOT_CONTROLLER), ("bob", NOT_CONTROLLER)]
