"""Envelope (KIP-590): a broker forwards a client's request to the active
controller inside one, with the client's principal and address. Kafka's
``EnvelopeUtils.handleEnvelopeRequest`` unwraps it; the answer to the inner
request goes back inside an EnvelopeResponse.

Kafka's refusals, as the EnvelopeResponse's ErrorCode with no data:
a principal that does not deserialize (PRINCIPAL_DESERIALIZATION_FAILURE), a
client address that is not 4 or 16 bytes (INVALID_REQUEST), an inner
request whose header or body does not parse (UNSUPPORTED_VERSION, to tell
it from a malformed envelope), an api Kafka does not forward
(INVALID_REQUEST).
"""

from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass

from kraft.messages.generated.default_principal_data import DefaultPrincipalData
from kraft.messages.generated.envelope_request import EnvelopeRequest
from kraft.messages.generated.envelope_response import EnvelopeResponse
from kraft.wire.codec import DecodedRequest, decode_request, encode_response
from kraft.wire.errors import ErrorCode, UnsupportedApiError
from kraft.messages.errors import DecodeError

__all__ = ["FORWARDABLE_APIS", "EnvelopeError", "Forwarded", "unwrap", "wrap", "refusal"]

#: Kafka's ``ApiKeys`` with ``forwardable`` set (4.4).
FORWARDABLE_APIS: frozenset[int] = frozenset({
    19, 20, 30, 31, 33, 37, 38, 39, 40, 43, 44, 45, 46, 49, 51, 55, 57, 64, 67, 80, 81, 94,
})

#: Kafka's ``Errors.PRINCIPAL_DESERIALIZATION_FAILURE``.
PRINCIPAL_DESERIALIZATION_FAILURE = 97


class EnvelopeError(Exception):
    """An envelope Kafka refuses: ``error`` goes in the EnvelopeResponse."""

    def __init__(self, error: int, message: str) -> None:
        super().__init__(message)
        self.error = error


@dataclass(frozen=True, slots=True)
class Forwarded:
    """The inner request and who sent it to the broker."""

    request: DecodedRequest
    #: ``type:name`` (Kafka's ``KafkaPrincipal.toString``).
    principal: str
    client_host: str


def _principal(data: bytes | None) -> str:
    """Kafka's ``DefaultKafkaPrincipalBuilder.deserialize``: a version (int16)
    then ``DefaultPrincipalData`` at that version."""
    try:
        if data is None or len(data) < 2:
            raise ValueError("no version")
        (version,) = struct.unpack_from(">h", data)
        if not DefaultPrincipalData.LOWEST_VERSION <= version <= DefaultPrincipalData.HIGHEST_VERSION:
            raise ValueError(f"version {version}")
        principal, end = DefaultPrincipalData.read(data, 2, version)
        if end != len(data):
            raise ValueError("trailing bytes")
    except (ValueError, DecodeError, struct.error):
        raise EnvelopeError(PRINCIPAL_DESERIALIZATION_FAILURE,
                            "Failed to deserialize client principal from envelope") from None
    return f"{principal.type}:{principal.name}"


def unwrap(envelope: EnvelopeRequest) -> Forwarded:
    """The forwarded request; :class:`EnvelopeError` for what Kafka refuses."""
    principal = _principal(envelope.request_principal)
    address = bytes(envelope.client_host_address or b"")
    try:
        host = str(ipaddress.ip_address(address))
    except ValueError:
        raise EnvelopeError(ErrorCode.INVALID_REQUEST, "Failed to parse client address from envelope") from None
    try:
        inner = decode_request(bytes(envelope.request_data or b""))
    except (UnsupportedApiError, DecodeError, ValueError) as e:
        raise EnvelopeError(ErrorCode.UNSUPPORTED_VERSION, f"Failed to parse forwarded request: {e}") from None
    if inner.api_key not in FORWARDABLE_APIS:
        raise EnvelopeError(ErrorCode.INVALID_REQUEST,
                            f"API {inner.api_key.name} is not enabled or is not eligible for forwarding")
    return Forwarded(inner, principal, host)


def wrap(inner: DecodedRequest, body: object, version: int) -> EnvelopeResponse:
    """The EnvelopeResponse carrying ``body``, the answer to ``inner``
    (its response header, then the body: no size prefix)."""
    data = b"".join(bytes(p) for p in encode_response(body, version, inner.header.correlation_id, framed=False))
    return EnvelopeResponse(response_data=data, error_code=ErrorCode.NONE)


def refusal(error: int) -> EnvelopeResponse:
    return EnvelopeResponse(response_data=None, error_code=error)
