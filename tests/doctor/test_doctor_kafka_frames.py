"""``kraft doctor`` reads what a real Kafka 4.0 controller answers: a
loopback server replays the ApiVersions v4, DescribeCluster v2 and
DescribeQuorum v2 response frames captured from a Kafka 4.0 quorum
(``fixtures/wire/kafka-4.0-controller-frames.jsonl``), each with
the request's correlation id. Doctor parses them as Kafka's admin client
does (``KafkaAdminClient.describeMetadataQuorum``): leader 1 in epoch 3,
voters 1-3 with their directory ids and listeners, which it then asks
directly (they are long gone: unreachable, no majority)."""

from __future__ import annotations

import json
import socket
import socketserver
import struct
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kraft.tools.doctor import doctor_command
from tests.conftest import FIXTURES
from tests.harness import cli

FRAMES = FIXTURES / "wire" / \
    "kafka-4.0-controller-frames.jsonl"
#: (api key, version) -> the recorded response frame (size prefix included).
WANTED = {("ApiVersions", 12): (18, 4), ("DescribeCluster", 12): (60, 2), ("DescribeQuorum", 18): (55, 2)}


def recorded_responses() -> dict[tuple[int, int], bytes]:
    out = {}
    for line in FRAMES.read_text().splitlines():
        d = json.loads(line)
        key = WANTED.get((d["api"], d["conn"]))
        if key is not None and d["direction"] == "response":
            out[key] = bytes.fromhex(d["frameHex"])
    assert len(out) == len(WANTED)
    return out


class _Replay(socketserver.BaseRequestHandler):
    responses: dict[tuple[int, int], bytes] = {}
    unexpected: list[tuple[int, int]] = []

    def handle(self) -> None:
        sock: socket.socket = self.request
        sock.settimeout(30)
        buffer = b""
        while True:
            while len(buffer) < 4 or len(buffer) < 4 + struct.unpack(">i", buffer[:4])[0]:
                chunk = sock.recv(65536)
                if not chunk:
                    return
                buffer += chunk
            size = struct.unpack(">i", buffer[:4])[0]
            frame, buffer = buffer[4:4 + size], buffer[4 + size:]
            api_key, version, correlation_id = struct.unpack(">hhi", frame[:8])
            response = self.responses.get((api_key, version))
            if response is None:
                self.unexpected.append((api_key, version))
                return
            sock.sendall(response[:4] + struct.pack(">i", correlation_id) + response[8:])


@pytest.fixture
def kafka_controller() -> Iterator[int]:
    _Replay.responses = recorded_responses()
    _Replay.unexpected = []
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Replay)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def test_doctor_reads_a_kafka_controller_s_answers(kafka_controller: int) -> None:
    result = cli.invoke(["--bootstrap-controller", f"127.0.0.1:{kafka_controller}"], command=doctor_command)
    assert _Replay.unexpected == [], "doctor sent a request (or a version) a Kafka 4.0 admin client does not"
    lines = result.stdout.splitlines()
    codes = [line.split()[1].rstrip(":") for line in lines if line.startswith(("ERROR", "WARNING"))]
    assert result.exit_code == 1
    assert codes == ["voter-unreachable"] * 3 + ["no-majority-reachable"], result.stdout
    for node_id, port in ((1, 21311), (2, 21302), (3, 21303)):
        assert f"voter {node_id} at 127.0.0.1:{port} does not answer" in result.stdout
    assert lines[-1] == ("errors found: leader 1 in epoch 3, voters [1, 2, 3], high watermark 76; "
                         "1 of 4 controllers answered")
