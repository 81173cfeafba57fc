"""Golden frames written by Apache Kafka's own Java clients and raft code
(fixtures/wire/kafka-java-frames.jsonl), at the frame and header
level: size prefix, header version, header fields and sizes as Kafka
reported them, and byte-exact re-encoding of the whole frame. (Body values
field by field are tests/messages/test_golden_frames.py's.)"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from kraft.messages.json_form import to_json
from kraft.wire.apis import ApiKey
from kraft.wire.codec import decode_request, decode_response, encode_request_with_header, encode_response
from kraft.wire.framing import FrameReader, unframe
from kraft.wire.headers import header_to_json
from tests.conftest import fixture_path


def _frames() -> list[dict[str, Any]]:
    path = fixture_path("wire", "kafka-java-frames.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def frames() -> list[dict[str, Any]]:
    return _frames()


def _decode(frame: dict[str, Any], payload: Any) -> Any:
    if frame["direction"] == "request":
        return decode_request(payload)
    return decode_response(payload, frame["apiKey"], frame["apiVersion"])


def test_every_frame_decodes_and_reencodes_byte_for_byte(frames: list[dict[str, Any]]) -> None:
    assert len(frames) >= 30
    for frame in frames:
        raw = bytes.fromhex(frame["frameHex"])
        kafka = frame["kafkaDecoded"]
        payload = unframe(raw)
        assert len(payload) == kafka["frameSize"]
        decoded = _decode(frame, payload)
        what = f"{frame['direction']} {frame['api']} v{frame['apiVersion']}"
        assert ApiKey[frame["api"]].value == frame["apiKey"], what
        assert decoded.header_version == kafka["headerVersion"], what
        assert header_to_json(decoded.header, decoded.header_version) == kafka["header"], what
        if frame["direction"] == "request":
            assert decoded.api_version == frame["apiVersion"]
            again = encode_request_with_header(decoded.header, decoded.body)
            header_size = len(decoded.header.encode(decoded.header_version))
        else:
            again = encode_response(decoded.body, frame["apiVersion"], decoded.header.correlation_id)
            header_size = 4 if decoded.header_version == 0 else 5
        assert header_size == kafka["headerSize"], what
        assert len(payload) - header_size == kafka["bodySize"], what
        assert b"".join(again) == raw, what


def test_api_versions_responses_use_header_v0(frames: list[dict[str, Any]]) -> None:
    responses = [f for f in frames if f["api"] == "API_VERSIONS" and f["direction"] == "response"]
    assert responses
    for frame in responses:
        assert frame["apiVersion"] >= 3  # a flexible version...
        assert frame["kafkaDecoded"]["headerVersion"] == 0  # ...with a v0 header
        assert _decode(frame, unframe(bytes.fromhex(frame["frameHex"]))).header_version == 0


def test_bodies_without_renamed_fields_match_kafkas_json(frames: list[dict[str, Any]]) -> None:
    # Kafka 4.1 renamed Vote's Candidate* fields to Replica*, and the
    # fixture annotates records with sizes and batches: compare the rest.
    for frame in frames:
        if frame["api"] == "VOTE" and frame["direction"] == "request":
            continue
        decoded = _decode(frame, unframe(bytes.fromhex(frame["frameHex"])))
        ours = to_json(decoded.body, frame["apiVersion"])
        assert ours == _strip_annotations(frame["kafkaDecoded"]["body"]), frame["api"]


def _strip_annotations(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _strip_annotations(v) for k, v in node.items()
                if not (k.startswith("records") and k != "records")}
    if isinstance(node, list):
        return [_strip_annotations(v) for v in node]
    return node


def test_the_whole_capture_through_a_frame_reader(frames: list[dict[str, Any]]) -> None:
    # All frames back to back, cut at random places, as a socket delivers
    # them: the reader gives back every frame whole and in order.
    stream = b"".join(bytes.fromhex(f["frameHex"]) for f in frames)
    rng = random.Random(2024)
    reader = FrameReader()
    out = []
    pos = 0
    while pos < len(stream):
        step = rng.randint(1, 97)
        reader.feed(stream[pos:pos + step])
        pos += step
        out.extend(reader)
    reader.check_eof()
    assert out == [bytes.fromhex(f["frameHex"])[4:] for f in frames]
