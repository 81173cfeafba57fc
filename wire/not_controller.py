"""NOT_CONTROLLER answers to the Kafka controller RPCs kraft does not serve.

A Kafka controller that is not the active one answers the controller RPCs
with ``NOT_CONTROLLER`` (Kafka's ``ControllerApis`` via
``NotControllerException``), and the senders retry elsewhere: a broker's
``NodeToControllerRequestThread.handleResponse`` closes the connection,
forgets the controller and re-queues the request until the raft leader
changes; its ``ForwardingManager`` does the same with an ``Envelope`` whose
error is NOT_CONTROLLER (how brokers forward CreateTopics, DeleteTopics,
CreatePartitions, IncrementalAlterConfigs, ... in KRaft mode). kraft is never
a Kafka controller, so it answers these whatever its raft role (a witness
advertises them while it leads a hand-over epoch, kraft/raft/handover.py, so
that a broker finding it as leader sends them and is told to retry, rather
than failing with an unsupported-version error).

Only the header is read: each answer is the response at the request's
version with ``ErrorCode`` NOT_CONTROLLER and every other field at its
default (Kafka's ``AbstractRequest.getErrorResponse``). All five responses
are flexible from v0: header v1 (correlation id, empty tagged fields).
"""

from __future__ import annotations

import struct

__all__ = ["NOT_CONTROLLER", "REFUSED_CONTROLLER_APIS", "not_controller_response"]

#: Kafka's ``Errors.NOT_CONTROLLER``.
NOT_CONTROLLER = 41

#: api key -> (Kafka's name, versions answered): what a Kafka 4.0 controller
#: advertises for them.
REFUSED_CONTROLLER_APIS: dict[int, tuple[str, tuple[int, int]]] = {
    58: ("Envelope", (0, 0)),
    62: ("BrokerRegistration", (0, 4)),
    63: ("BrokerHeartbeat", (0, 1)),
    67: ("AllocateProducerIds", (0, 0)),
    70: ("ControllerRegistration", (0, 0)),
}

_NO_TAGS = b"\x00"
_THROTTLE_AND_ERROR = struct.Struct(">ih")


def _body(api_key: int) -> bytes:
    error = struct.pack(">h", NOT_CONTROLLER)
    head = _THROTTLE_AND_ERROR.pack(0, NOT_CONTROLLER)
    match api_key:
        case 58:  # EnvelopeResponse: ResponseData (nullable bytes, null), ErrorCode
            return b"\x00" + error + _NO_TAGS
        case 62:  # BrokerRegistrationResponse: ThrottleTimeMs, ErrorCode, BrokerEpoch (-1)
            return head + struct.pack(">q", -1) + _NO_TAGS
        case 63:  # BrokerHeartbeatResponse: ..., IsCaughtUp false, IsFenced true, ShouldShutDown false
            return head + b"\x00\x01\x00" + _NO_TAGS
        case 67:  # AllocateProducerIdsResponse: ..., ProducerIdStart 0, ProducerIdLen 0
            return head + struct.pack(">qi", 0, 0) + _NO_TAGS
        case 70:  # ControllerRegistrationResponse: ..., ErrorMessage (nullable string, null)
            return head + b"\x00" + _NO_TAGS
    raise KeyError(api_key)


def not_controller_response(api_key: int, api_version: int, correlation_id: int) -> bytes | None:
    """The framed NOT_CONTROLLER answer to a request of ``api_key`` at
    ``api_version``; None for an api or version not in
    :data:`REFUSED_CONTROLLER_APIS`."""
    entry = REFUSED_CONTROLLER_APIS.get(api_key)
    if entry is None or not entry[1][0] <= api_version <= entry[1][1]:
        return None
    payload = struct.pack(">i", correlation_id) + _NO_TAGS + _body(api_key)
    return struct.pack(">i", len(payload)) + payload
