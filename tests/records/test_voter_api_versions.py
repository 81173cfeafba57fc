"""kraft's ``voter-api-versions`` file (records/voter_api_versions.py):
round trip, atomic replacement, and every malformation named with the file."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pytest

from kraft.records.errors import StateFileError
from kraft.records.state_files import uuid_to_kafka
from kraft.records.voter_api_versions import (
    VOTER_API_VERSIONS_FILE,
    RememberedAnswer,
    read_voter_api_versions,
    write_voter_api_versions,
)

ANSWERS = (
    RememberedAnswer(1, None, ()),
    RememberedAnswer(2, uuid.UUID(int=7), ("CreateTopics", "BrokerRegistration")),
)


def test_round_trip_by_voter_id(tmp_path: Path) -> None:
    assert read_voter_api_versions(tmp_path) == ()
    path = write_voter_api_versions(tmp_path, reversed(ANSWERS))
    assert path == tmp_path / VOTER_API_VERSIONS_FILE
    assert read_voter_api_versions(tmp_path) == ANSWERS
    data = json.loads(path.read_text())
    assert data == {"version": 0, "voters": [
        {"id": 1, "directoryId": None, "answeredAs": "kraft", "kafkaControllerApis": []},
        {"id": 2, "directoryId": uuid_to_kafka(uuid.UUID(int=7)), "answeredAs": "kafka-controller",
         "kafkaControllerApis": ["CreateTopics", "BrokerRegistration"]}]}
    # Replaced whole, no temporary file left behind.
    write_voter_api_versions(tmp_path, ANSWERS[:1])
    assert read_voter_api_versions(tmp_path) == ANSWERS[:1]
    assert sorted(os.listdir(tmp_path)) == [VOTER_API_VERSIONS_FILE]


def entry(**changes: object) -> dict[str, object]:
    return {"id": 1, "directoryId": None, "answeredAs": "kraft", "kafkaControllerApis": [], **changes}


@pytest.mark.parametrize(("text", "reason"), [
    ("", "not JSON"),
    ("{\"version\": 0, \"voters\": [", "not JSON"),
    (json.dumps({"version": 1, "voters": []}), 'expected {"version": 0'),
    (json.dumps([]), 'expected {"version": 0'),
    (json.dumps({"version": 0, "voters": [7]}), "a voter entry is not a JSON object"),
    (json.dumps({"version": 0, "voters": [entry(id=-1)]}), "bad voter id"),
    (json.dumps({"version": 0, "voters": [entry(id=True)]}), "bad voter id"),
    (json.dumps({"version": 0, "voters": [entry(kafkaControllerApis="CreateTopics")]}), "not a list of API names"),
    (json.dumps({"version": 0, "voters": [entry(answeredAs="kafka-controller")]}), "does not fit"),
    (json.dumps({"version": 0, "voters": [entry(kafkaControllerApis=["CreateTopics"])]}), "does not fit"),
    (json.dumps({"version": 0, "voters": [entry(directoryId="nope")]}), "bad directoryId"),
    (json.dumps({"version": 0, "voters": [entry(), entry()]}), "listed twice"),
])
def test_a_malformed_file_is_named_with_the_reason(tmp_path: Path, text: str, reason: str) -> None:
    (tmp_path / VOTER_API_VERSIONS_FILE).write_text(text)
    with pytest.raises(StateFileError) as raised:
        read_voter_api_versions(tmp_path)
    assert raised.value.path == str(tmp_path / VOTER_API_VERSIONS_FILE)
    assert reason in raised.value.reason


def test_unreadable_bytes_are_named_too(tmp_path: Path) -> None:
    (tmp_path / VOTER_API_VERSIONS_FILE).write_bytes(b"\xff\xfe{")
    with pytest.raises(StateFileError, match="cannot be read"):
        read_voter_api_versions(tmp_path)
    (tmp_path / VOTER_API_VERSIONS_FILE).unlink()
    (tmp_path / VOTER_API_VERSIONS_FILE).mkdir()  # not a file at all
    with pytest.raises(StateFileError, match="cannot be read"):
        read_voter_api_versions(tmp_path)
