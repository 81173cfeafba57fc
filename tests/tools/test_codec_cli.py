"""``kraft codec decode`` / ``encode`` on captured frames, bare bodies and
metadata/control records: Kafka's JSON out, the exact bytes back, and one
clear line (exit 1, never a traceback) for bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kraft.errors import EXIT_DATA, EXIT_REFUSED
from kraft.messages.generated.leader_change_message import LeaderChangeMessage, Voter
from kraft.messages.generated.topic_record import TopicRecord
from kraft.messages.generated.vote_request import PartitionData, TopicData, VoteRequest
from tests.conftest import fixture_path
from tests.harness import cli

def run(args: list[str], stdin: bytes | str | None = None) -> Any:
    result = cli.invoke(["codec", *args], input=stdin)
    return result


def ok_json(args: list[str], stdin: bytes | str | None = None) -> Any:
    result = run(args, stdin)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def fails(args: list[str], stdin: bytes | str | None, *needles: str, code: int = EXIT_REFUSED) -> str:
    """One ``error:`` line naming ``needles``, and the exit code of the
    failure's class: 1 refused (an unknown name, a missing option), 6 the
    input does not decode (kraft/errors.py)."""
    result = run(args, stdin)
    assert result.exit_code == code, (result.stdout, result.stderr)
    err = result.stderr
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in err, err
    return err


def _golden() -> list[dict[str, Any]]:
    path = fixture_path("wire", "kafka-java-frames.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _strip_annotations(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _strip_annotations(v) for k, v in node.items()
                if not (k.startswith("records") and k != "records")}
    if isinstance(node, list):
        return [_strip_annotations(v) for v in node]
    return node


VOTE = VoteRequest(cluster_id="MkU3OEVBNTcwNTJENDM2Qk", voter_id=1, topics=[TopicData(
    topic_name="__cluster_metadata", partitions=[PartitionData(partition_index=0, replica_epoch=4, replica_id=2,
                                                               last_offset_epoch=3, last_offset=99)])])


# ------------------------------------------------------------ golden frames


def test_decode_and_encode_every_golden_frame() -> None:
    for frame in _golden():
        args = [] if frame["direction"] == "request" else ["--response", "--api", frame["api"],
                                                            "--version", str(frame["apiVersion"])]
        out = ok_json(["decode", *args], frame["frameHex"] + "\n")
        kafka = frame["kafkaDecoded"]
        assert out["kind"] == frame["direction"]
        assert (out["apiKey"], out["apiName"], out["apiVersion"]) == (frame["apiKey"], frame["api"],
                                                                      frame["apiVersion"])
        assert out["headerVersion"] == kafka["headerVersion"]
        assert out["header"] == kafka["header"]
        if not (frame["api"] == "VOTE" and frame["direction"] == "request"):  # Kafka 4.1 renamed Candidate*
            assert out["body"] == _strip_annotations(kafka["body"])
        again = run(["encode", "--hex"], json.dumps(out))
        assert again.exit_code == 0, again.stderr
        assert again.stdout.strip() == frame["frameHex"]


def test_binary_frame_from_a_file(tmp_path: Path) -> None:
    frame = next(f for f in _golden() if f["api"] == "DESCRIBE_QUORUM" and f["direction"] == "response")
    path = tmp_path / "frame.bin"
    path.write_bytes(bytes.fromhex(frame["frameHex"]))
    out = ok_json(["decode", "--response", "--api", "DescribeQuorum", "--version", "2", "--frame", str(path)])
    assert out["body"] == frame["kafkaDecoded"]["body"]
    binary = run(["encode"], json.dumps(out))
    assert binary.exit_code == 0
    assert binary.stdout_bytes == path.read_bytes()


# ------------------------------------------------------------ bare bodies


@pytest.mark.parametrize("api", ["VOTE", "Vote", "VoteRequest", "vote-request", "52"])
def test_bare_request_body(api: str) -> None:
    out = ok_json(["decode", "--api", api, "--version", "2"], VOTE.encode(2).hex())
    assert out == {"kind": "request", "apiKey": 52, "apiName": "VOTE", "apiVersion": 2,
                   "body": {"clusterId": "MkU3OEVBNTcwNTJENDM2Qk", "voterId": 1, "topics": [{
                       "topicName": "__cluster_metadata", "partitions": [{
                           "partitionIndex": 0, "replicaEpoch": 4, "replicaId": 2,
                           "replicaDirectoryId": "AAAAAAAAAAAAAAAAAAAAAA", "voterDirectoryId": "AAAAAAAAAAAAAAAAAAAAAA",
                           "lastOffsetEpoch": 3, "lastOffset": 99, "preVote": False}]}]}}
    again = run(["encode", "--hex"], json.dumps(out))
    assert again.stdout.strip() == VOTE.encode(2).hex()


def test_bare_body_json_with_options() -> None:
    body = ok_json(["decode", "--api", "vote", "--version", "1"], VOTE.encode(1).hex())["body"]
    result = run(["encode", "--api", "VoteRequest", "--version", "1", "--hex"], json.dumps(body))
    assert result.stdout.strip() == VOTE.encode(1).hex()


def test_hex_with_whitespace_and_0x() -> None:
    text = VOTE.encode(2).hex()
    spaced = "\n".join(text[i:i + 32] for i in range(0, len(text), 32)) + "\n"
    assert ok_json(["decode", "--api", "52", "--version", "2"], spaced)["apiKey"] == 52
    assert ok_json(["decode", "--api", "52", "--version", "2"], "0x" + text)["apiKey"] == 52


def test_raw_binary_on_stdin() -> None:
    assert ok_json(["decode", "--api", "52", "--version", "2"], VOTE.encode(2))["apiVersion"] == 2


def test_request_frame_built_from_header_and_body_json() -> None:
    doc = {"header": {"requestApiKey": 52, "requestApiVersion": 2, "correlationId": 7, "clientId": "me"},
           "body": ok_json(["decode", "--api", "52", "--version", "2"], VOTE.encode(2).hex())["body"]}
    frame = run(["encode", "--hex"], json.dumps(doc)).stdout.strip()
    out = ok_json(["decode"], frame)
    assert out["header"] == doc["header"] and out["headerVersion"] == 2
    assert run(["encode", "--body", "--hex"], json.dumps(doc)).stdout.strip() == VOTE.encode(2).hex()


# ---------------------------------------------------------------- records


def test_metadata_record_value_round_trip() -> None:
    import uuid

    record = TopicRecord(name="foo", topic_id=uuid.UUID(int=5))
    value = b"\x01\x02\x00" + record.encode(0)  # frame version 1, type 2, version 0
    out = ok_json(["decode", "--record"], value.hex())
    assert out == {"type": "TOPIC_RECORD", "version": 0, "data": {"name": "foo", "topicId": "AAAAAAAAAAAAAAAAAAAABQ"}}
    assert run(["encode", "--hex"], json.dumps(out)).stdout.strip() == value.hex()
    for name in ("TopicRecord", "TOPIC_RECORD", "topic", "2"):
        assert ok_json(["decode", "--record", "--api", name], value.hex()) == out
        assert ok_json(["decode", "--record", "--api", name, "--version", "0"], record.encode(0).hex()) == out
    assert run(["encode", "--body", "--hex"], json.dumps(out)).stdout.strip() == record.encode(0).hex()


@pytest.mark.parametrize("name", ["LeaderChangeMessage", "LEADER_CHANGE", "leader-change"])
def test_control_record_round_trip(name: str) -> None:
    message = LeaderChangeMessage(version=0, leader_id=1, voters=[Voter(voter_id=1)], granting_voters=[])
    out = ok_json(["decode", "--record", "--api", name], message.encode(0).hex())
    assert out["type"] == "LEADER_CHANGE" and out["version"] == 0
    assert out["data"]["leaderId"] == 1
    assert run(["encode", "--hex"], json.dumps(out)).stdout.strip() == message.encode(0).hex()


# ----------------------------------------------------------------- errors


def test_error_truncated_frame_body_names_field_and_offset() -> None:
    frame = next(f for f in _golden() if f["api"] == "VOTE" and f["direction"] == "request")
    raw = bytes.fromhex(frame["frameHex"])
    cut = raw[:-10]
    cut = len(cut[4:]).to_bytes(4, "big") + cut[4:]
    fails(["decode", "--frame"], cut.hex(), "cannot decode VoteRequest v1 at topics[0].partitions[0]",
          "of the input", code=EXIT_DATA)


def test_error_unknown_api_key_in_a_frame() -> None:
    payload = bytes.fromhex("0063 0000 00000001 0000")
    fails(["decode"], (len(payload).to_bytes(4, "big") + payload).hex(), "Unknown API key 99", "INVALID_REQUEST")


def test_error_unsupported_version_in_a_frame() -> None:
    payload = bytes.fromhex("0034 0063 00000001 0000 00")
    fails(["decode"], (len(payload).to_bytes(4, "big") + payload).hex(), "VOTE version 99", "UNSUPPORTED_VERSION",
          "error code 35")


def test_error_invalid_utf8() -> None:
    body = bytearray(VOTE.encode(2))
    body[2] = 0xFF  # inside the cluster id
    fails(["decode", "--api", "vote", "--version", "2"], bytes(body).hex(), "at cluster_id", "invalid UTF-8", code=EXIT_DATA)


def test_error_negative_length() -> None:
    # SaslHandshake v1 (not flexible): int16 string length -5.
    fails(["decode", "--api", "SaslHandshake", "--version", "1"], "fffb", "mechanism", "byte 0", code=EXIT_DATA)


def test_error_trailing_garbage() -> None:
    fails(["decode", "--api", "vote", "--version", "2"], VOTE.encode(2).hex() + "00", "trailing", code=EXIT_DATA)


@pytest.mark.parametrize(("args", "stdin", "needle", "code"), [
    (["decode"], "", "empty input", EXIT_REFUSED),
    (["decode", "--hex"], "xyz", "not an even number of hex digits", EXIT_DATA),
    (["decode", "--api", "vote"], "00", "needs --api and --version", EXIT_REFUSED),
    (["decode", "--version", "1"], "00", "needs --api and --version", EXIT_REFUSED),
    (["decode", "--api", "PRODUCE", "--version", "1"], "00", "unknown api 'PRODUCE'", EXIT_REFUSED),
    (["decode", "--api", "vote", "--version", "9"], "00", "VoteRequest version 9 is not supported", EXIT_REFUSED),
    (["decode", "--response", "--frame"], "0000000100", "give --api and --version", EXIT_REFUSED),
    (["decode", "--frame"], "0000000500", "size prefix says 5 bytes, 1 follow", EXIT_DATA),
    (["decode", "--record"], "090200", "frame version 9", EXIT_DATA),
    (["decode", "--record"], "01", "cut short", EXIT_DATA),
    (["decode", "--record", "--api", "NoSuchRecord"], "00", "unknown record type 'NoSuchRecord'", EXIT_REFUSED),
    (["decode", "--record", "--api", "99"], "00", "unknown metadata record type 99", EXIT_REFUSED),
    (["encode"], "{nope", "not JSON", EXIT_DATA),
    (["encode"], "[]", "expected a JSON object", EXIT_REFUSED),
    (["encode"], "{}", "cannot tell the api and version", EXIT_REFUSED),
    (["encode", "--api", "vote", "--version", "2"], '{"clusterId": null, "voterId": 1}',
     "VoteRequest.topics: missing required field", EXIT_DATA),
    (["encode", "--api", "vote", "--version", "2"], '{"clusterId": 5, "topics": []}', "expected a string", EXIT_DATA),
    (["encode", "--api", "53", "--version", "1"], json.dumps({"kind": "request", "apiKey": 52, "apiVersion": 1,
                                                             "body": {}}), "api: --api says 53, apiKey says 52", EXIT_REFUSED),
    (["encode", "--frame", "--api", "vote", "--version", "2"], '{"clusterId": null, "voterId": 1, "topics": []}',
     "--frame needs a header", EXIT_REFUSED),
    (["encode", "--record"], '{"type": "TOPIC_RECORD", "data": {}}', "record version", EXIT_REFUSED),
    (["encode", "--record", "--frame", "--api", "LeaderChangeMessage"],
     '{"version": 0, "leaderId": 1, "voters": [], "grantingVoters": []}', "not a metadata record", EXIT_REFUSED),
])
def test_errors_are_one_line(args: list[str], stdin: str, needle: str, code: int) -> None:
    fails(args, stdin, needle, code=code)


# ------------------------------------------------------ the real executable


def _kraft() -> list[str]:
    exe = Path(sys.executable).with_name("kraft")
    if exe.exists():
        return [str(exe)]
    return [sys.executable, "-c", "from kraft.cli import main; main()"]


def test_real_process_decodes_and_fails_cleanly() -> None:
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    good = subprocess.run([*_kraft(), "codec", "decode", "--api", "VOTE", "--version", "2"],
                          input=VOTE.encode(2).hex().encode(), capture_output=True, env=env, timeout=60)
    assert good.returncode == 0, good.stderr
    assert json.loads(good.stdout)["body"]["voterId"] == 1
    bad = subprocess.run([*_kraft(), "codec", "decode", "--api", "VOTE", "--version", "2"],
                         input=VOTE.encode(2)[:-3], capture_output=True, env=env, timeout=60)
    assert bad.returncode == EXIT_DATA  # the input does not decode
    assert bad.stdout == b""
    lines = bad.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: cannot decode VoteRequest v2 at ")
