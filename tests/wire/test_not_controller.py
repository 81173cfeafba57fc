"""NOT_CONTROLLER for the Kafka controller RPCs kraft does not serve
(wire/not_controller.py): what Kafka's ``ControllerApis`` answers on a
controller that is not the active one, so a broker's
``NodeToControllerRequestThread.handleResponse`` re-queues the request
(``Errors.NOT_CONTROLLER`` branch) instead of failing it. Checked against a
real Kafka 4.0 controller's frames (``fixtures/wire/``)."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import trio

from kraft.wire.not_controller import NOT_CONTROLLER, REFUSED_CONTROLLER_APIS, not_controller_response
from tests.wire.netutil import CannedHandler, RawConnection, running_server
from tests.conftest import FIXTURES

FRAMES = FIXTURES / "wire" / \
    "kafka-4.0-controller-frames.jsonl"


def real_frames(direction: str) -> list[dict[str, Any]]:
    return [f for line in FRAMES.read_text().splitlines()
            if (f := json.loads(line))["direction"] == direction and f["apiKey"] in REFUSED_CONTROLLER_APIS]


def test_the_answers_have_the_real_responses_layout() -> None:
    """Each answer is the real response's frame with NOT_CONTROLLER as its
    error and the other fields at their defaults (a BrokerRegistration's
    broker epoch -1; the heartbeat's real answer is already fenced, not
    caught up)."""
    checked = set()
    for frame in real_frames("response"):
        real = bytes.fromhex(frame["frameHex"])
        ours = not_controller_response(frame["apiKey"], frame["apiVersion"], frame["correlationId"])
        assert ours is not None
        if frame["apiKey"] == 58:  # Envelope: the real one carries the inner response
            assert ours[4:9] == real[4:9] and struct.unpack(">h", ours[10:12])[0] == NOT_CONTROLLER
            checked.add(58)
            continue
        assert len(ours) == len(real) and ours[:9] == real[:9], frame["api"]
        assert struct.unpack(">h", ours[13:15])[0] == NOT_CONTROLLER
        expected = real[:13] + struct.pack(">h", NOT_CONTROLLER) + real[15:]
        if frame["apiKey"] == 62:
            expected = expected[:15] + struct.pack(">q", -1) + expected[23:]
        if frame["apiKey"] == 70:  # the success answer's ErrorMessage is "", ours null
            expected = expected[:15] + b"\x00" + expected[16:]
        if frame["apiKey"] == 67:
            expected = expected[:15] + bytes(12) + expected[27:]
        assert ours == expected, frame["api"]
        checked.add(frame["apiKey"])
    assert {58, 62, 63, 70} <= checked


def test_versions_outside_kafkas_ranges_are_not_answered() -> None:
    assert not_controller_response(63, 2, 1) is None
    # CreateTopics is decoded first and answered per topic (tests/wire/test_not_controller_admin.py).
    assert not_controller_response(19, 7, 1) is None


async def test_a_listener_answers_a_real_broker_heartbeat_with_not_controller() -> None:
    """Today's answer was to close the connection (an unknown api key); now
    the real request frames get NOT_CONTROLLER and the connection stays."""
    requests = real_frames("request")
    with trio.fail_after(10):
        async with running_server(CannedHandler()) as port:
            conn = await RawConnection.open(port)
            for frame in requests:
                await conn.send(bytes.fromhex(frame["frameHex"]))
                answer = await conn.read_frame()
                assert struct.unpack(">i", answer[:4])[0] == frame["correlationId"]
                assert answer == not_controller_response(frame["apiKey"], frame["apiVersion"],
                                                         frame["correlationId"])[4:]
            await conn.aclose()
