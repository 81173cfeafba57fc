"""Adding a field to an admin-facing RPC takes its unit only (issue 45,
item 2): the model, its filling and its decoding live in the RPC's module
(``kraft/raft/rpcs/describe_quorum_rpc.py``, ``kraft/raft/rpcs/api_versions_rpc.py``),
and the tools' ``--json`` output is derived from the model's fields
(:mod:`kraft.tools.structured_output`). Each test below adds a field by
patching the unit alone and sees it in ``kraft quorum describe --json`` /
``kraft features describe --json``, run in process against Kafka's own
answers (the golden frames of a real Kafka controller); Kafka's text output
of the same answers is unchanged by it.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

import pytest

from kraft.admin_client.admin import AdminSession
from kraft.raft.rpcs import api_versions_rpc, describe_quorum_rpc
from kraft.wire.apis import ApiKey
from kraft.wire.codec import decode_response
from kraft.wire.framing import unframe
from tests.conftest import fixture_path
from tests.harness import cli

BOOTSTRAP = ["--bootstrap-controller", "127.0.0.1:1"]


def _kafka_answers() -> dict[int, tuple[int, Any]]:
    """api key -> (version, decoded body) of a real Kafka controller's answers."""
    path = fixture_path("wire", "kafka-java-frames.jsonl")
    answers: dict[int, tuple[int, Any]] = {}
    for line in path.read_text().splitlines():
        frame = json.loads(line) if line.strip() else None
        if frame is None or frame["direction"] != "response" or frame["apiKey"] in answers:
            continue
        version = frame["apiVersion"]
        answers[frame["apiKey"]] = (version, decode_response(unframe(bytes.fromhex(frame["frameHex"])),
                                                             frame["apiKey"], version).body)
    return answers


@pytest.fixture
def kafka_controller(monkeypatch: pytest.MonkeyPatch) -> None:
    """The admin session answered from Kafka's frames: each request is still
    built by its unit (at the frame's version), only the transport is replaced."""
    answers = _kafka_answers()

    async def request(self: AdminSession, address: tuple[str, int], api: ApiKey, build: Callable[[int], Any],
                      max_version: int | None = None) -> tuple[int, Any]:
        version, body = answers[api]
        assert max_version is None or version <= max_version
        build(version)
        return version, body

    monkeypatch.setattr(AdminSession, "request", request)


def _run(*args: str) -> str:
    result = cli.invoke(list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_describe_json_is_the_model_field_by_field(kafka_controller: None) -> None:
    document = json.loads(_run("quorum", *BOOTSTRAP, "describe", "--json"))
    quorum = document["quorum"]
    fields = [f.name for f in dataclasses.fields(describe_quorum_rpc.QuorumInfo) if f.repr]
    assert list(quorum) == fields and "now_ms" not in quorum
    assert list(quorum["voters"][0]) == [f.name for f in dataclasses.fields(describe_quorum_rpc.ReplicaInfo)]
    assert quorum["voters"][0]["directory_id"] == "AAAAAAAAAAAAAAAAAAAAAA"  # Kafka's uuid form
    assert set(quorum["nodes"]) == {str(v["replica_id"]) for v in quorum["voters"]}


def test_a_field_added_to_describe_quorums_unit_shows_in_the_cli(kafka_controller: None,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """What a newcomer writes in describe_quorum_rpc.py, and nowhere else: a
    field of the model and its reading off the wire."""
    status_before = _run("quorum", *BOOTSTRAP, "describe", "--status")

    @dataclasses.dataclass(frozen=True, slots=True)
    class ReplicaInfo(describe_quorum_rpc.ReplicaInfo):
        #: The new field: whether the replica ever fetched.
        has_fetched: bool = False

    def replica_info(state: Any) -> describe_quorum_rpc.ReplicaInfo:
        return ReplicaInfo(state.replica_id, state.replica_directory_id, state.log_end_offset,
                           None if state.last_fetch_timestamp == -1 else state.last_fetch_timestamp,
                           None if state.last_caught_up_timestamp == -1 else state.last_caught_up_timestamp,
                           has_fetched=state.last_fetch_timestamp != -1)

    monkeypatch.setattr(describe_quorum_rpc, "ReplicaInfo", ReplicaInfo)
    monkeypatch.setattr(describe_quorum_rpc, "_replica_info", replica_info)
    quorum = json.loads(_run("quorum", *BOOTSTRAP, "describe", "--json"))["quorum"]
    assert [v["has_fetched"] for v in quorum["voters"]] == [True] * len(quorum["voters"])
    # Kafka's text is Kafka's, field or no field.
    assert _run("quorum", *BOOTSTRAP, "describe", "--status") == status_before


def test_a_field_added_to_the_features_unit_shows_in_the_cli(kafka_controller: None,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The same for ApiVersions' feature model (api_versions_rpc.py only)."""
    text_before = _run("features", *BOOTSTRAP, "describe")
    plain = json.loads(_run("features", *BOOTSTRAP, "describe", "--json"))["features"]
    assert list(plain) == [f.name for f in dataclasses.fields(api_versions_rpc.FeatureMetadata)]
    assert "kraft.version" in plain["supported"]

    @dataclasses.dataclass(frozen=True, slots=True)
    class FeatureMetadata(api_versions_rpc.FeatureMetadata):
        #: The new field: the answer's throttle time.
        throttle_time_ms: int = 0

    unit_reading = api_versions_rpc.feature_metadata

    def feature_metadata(msg: Any) -> api_versions_rpc.FeatureMetadata:
        read = unit_reading(msg)
        return FeatureMetadata(read.finalized, read.finalized_epoch, read.supported,
                               throttle_time_ms=msg.throttle_time_ms)

    monkeypatch.setattr(api_versions_rpc, "feature_metadata", feature_metadata)
    features = json.loads(_run("features", *BOOTSTRAP, "describe", "--json"))["features"]
    assert features["throttle_time_ms"] == 0 and features["supported"] == plain["supported"]
    assert _run("features", *BOOTSTRAP, "describe") == text_before


def test_json_is_a_mode_of_its_own(kafka_controller: None) -> None:
    result = cli.invoke(["quorum", *BOOTSTRAP, "describe", "--json", "--status"])
    assert result.exit_code == 1 and "--json is a mode of its own" in result.output
