"""Frames captured from Apache Kafka's own Java code (a 3-voter quorum of
KafkaRaftClient voters and kafka-metadata-quorum.sh): our codecs decode every
one to what Kafka's JsonConverter printed, and re-encode it byte for byte."""

from __future__ import annotations

import json
from typing import Any


from kraft.messages.json_form import from_json, to_json
from kraft.messages.registry import message_class, request_class, response_class
from tests.conftest import fixture_path

# Kafka 4.1 renamed Vote's Candidate* fields to Replica* (KIP-996); the frames
# come from 4.0. Same bytes, new JSON keys.
RENAMED = {"candidateEpoch": "replicaEpoch", "candidateId": "replicaId", "candidateDirectoryId": "replicaDirectoryId"}
# Keys the capture tool added beside Kafka's JSON (not part of Kafka's form).
CAPTURE_EXTRAS = {"recordsSizeInBytes", "recordsHex", "recordsBatches"}


def _frames() -> list[dict[str, Any]]:
    path = fixture_path("wire", "kafka-java-frames.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _normalise(node: Any) -> Any:
    if isinstance(node, dict):
        return {RENAMED.get(k, k): _normalise(v) for k, v in node.items() if k not in CAPTURE_EXTRAS}
    if isinstance(node, list):
        return [_normalise(v) for v in node]
    return node


def test_every_frame_decodes_and_reencodes_exactly() -> None:
    frames = _frames()
    assert len(frames) >= 30
    seen = set()
    for frame in frames:
        raw = bytes.fromhex(frame["frameHex"])
        decoded = frame["kafkaDecoded"]
        assert int.from_bytes(raw[:4], "big") == len(raw) - 4
        payload = raw[4:]
        header_version = decoded["headerVersion"]
        if frame["direction"] == "request":
            header_cls, body_cls = message_class("RequestHeader"), request_class(frame["apiKey"])
        else:
            header_cls, body_cls = message_class("ResponseHeader"), response_class(frame["apiKey"])
        header, pos = header_cls.read(payload, 0, header_version)
        assert pos == decoded["headerSize"]
        body = body_cls.decode(payload[pos:], frame["apiVersion"])
        assert to_json(header, header_version) == decoded["header"]
        assert to_json(body, frame["apiVersion"]) == _normalise(decoded["body"]), frame["api"]
        assert header.encode(header_version) + body.encode(frame["apiVersion"]) == payload
        # Kafka's JSON form reads back into the same message.
        assert from_json(body_cls, to_json(body, frame["apiVersion"]), frame["apiVersion"]) == body
        seen.add((frame["api"], frame["direction"]))
    assert ("FETCH", "response") in seen and ("DESCRIBE_QUORUM", "response") in seen


def test_fetch_records_are_zero_copy() -> None:
    frame = next(f for f in _frames() if f["api"] == "FETCH" and f["direction"] == "response"
                 and f["kafkaDecoded"]["body"]["responses"])
    payload = bytes.fromhex(frame["frameHex"])[4:]
    header, pos = message_class("ResponseHeader").read(payload, 0, 1)
    body = response_class(1).decode(payload[pos:], frame["apiVersion"])
    records = body.responses[0].partitions[0].records
    assert isinstance(records, memoryview)
    expected = frame["kafkaDecoded"]["body"]["responses"][0]["partitions"][0]["recordsHex"]
    assert bytes(records).hex() == expected
