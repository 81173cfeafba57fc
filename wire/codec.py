"""Whole requests and responses: header and body, in and out of frames.

Encoding returns a list of byte strings (size prefix, header, body parts)
for one vectored write; records fields are never copied. Decoding takes a
frame's payload (what :class:`~kraft.wire.framing.FrameReader` returns)
and never copies it: records fields come back as slices of it.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from kraft.messages.errors import DecodeError, UnsupportedVersionError
from kraft.wire.apis import ApiKey
from kraft.wire.errors import ErrorCode, UnsupportedApiError
from kraft.wire.framing import frame_parts
from kraft.wire.headers import (
    RequestHeader,
    ResponseHeader,
    encode_request_header,
    encode_response_header,
    read_request_header,
    read_response_header,
    request_header_version,
    response_header_version,
)

__all__ = [
    "DecodedRequest",
    "DecodedResponse",
    "api_of",
    "encode_request",
    "decode_request",
    "encode_response",
    "decode_response",
]

Buffer = bytes | bytearray | memoryview


class DecodedRequest(NamedTuple):
    header: RequestHeader
    body: Any
    header_version: int

    @property
    def api_key(self) -> ApiKey:
        return ApiKey(self.header.request_api_key)

    @property
    def api_version(self) -> int:
        return int(self.header.request_api_version)


class DecodedResponse(NamedTuple):
    header: ResponseHeader
    body: Any
    header_version: int


def api_of(body: Any) -> ApiKey:
    """The api of a generated request or response object."""
    key = getattr(type(body), "API_KEY", None)
    if getattr(type(body), "MESSAGE_TYPE", None) not in ("request", "response") or key is None:
        raise TypeError(f"{type(body).__name__} is not a request or response message")
    return ApiKey(key)


def encode_request(body: Any, api_version: int, correlation_id: int,
                   client_id: str | None = "kraft", *, framed: bool = True) -> list[Buffer]:
    """``body`` at ``api_version`` behind the matching request header (and
    the size prefix unless ``framed=False``)."""
    api = api_of(body)
    if type(body).MESSAGE_TYPE != "request":
        raise TypeError(f"{type(body).__name__} is not a request")
    header = RequestHeader(request_api_key=api.value, request_api_version=api_version,
                           correlation_id=correlation_id, client_id=client_id)
    return encode_request_with_header(header, body, framed=framed)


def encode_request_with_header(header: RequestHeader, body: Any, *, framed: bool = True) -> list[Buffer]:
    """Like :func:`encode_request` with a ready header (its api key and
    version say how to encode ``body``; unknown tagged fields are kept)."""
    api_version = header.request_api_version
    header_version = request_header_version(header.request_api_key, api_version)
    parts: list[Buffer] = [encode_request_header(header, header_version)]
    parts += body.encode_parts(api_version)
    return frame_parts(parts) if framed else parts


def decode_request(payload: Buffer) -> DecodedRequest:
    """Header and body of one request frame (without its size prefix).

    An api key we have no codecs for raises :class:`UnsupportedApiError`
    with ``INVALID_REQUEST``; a known api at a version outside our range
    raises it with ``UNSUPPORTED_VERSION`` and the parsed header. Any other
    fault is a :class:`DecodeError` naming the field and byte offset.
    """
    header, header_version, pos = read_request_header(payload, 0)
    api = ApiKey(header.request_api_key)
    version = header.request_api_version
    if not api.is_version_supported(version):
        raise UnsupportedApiError(
            api.value, version, header.correlation_id, ErrorCode.UNSUPPORTED_VERSION,
            f"{api.name} version {version} is not supported (valid versions: "
            f"{api.min_version}-{api.max_version})", header)
    body = _read_body(api.request_class, payload, pos, version)
    return DecodedRequest(header, body, header_version)


def encode_response(body: Any, api_version: int, correlation_id: int, *, framed: bool = True) -> list[Buffer]:
    api = api_of(body)
    if type(body).MESSAGE_TYPE != "response":
        raise TypeError(f"{type(body).__name__} is not a response")
    parts: list[Buffer] = [encode_response_header(correlation_id, response_header_version(api.value, api_version))]
    parts += body.encode_parts(api_version)
    return frame_parts(parts) if framed else parts


def decode_response(payload: Buffer, api_key: int, api_version: int) -> DecodedResponse:
    """Header and body of one response frame (without its size prefix) to a
    request we sent at ``api_key``/``api_version``."""
    api = ApiKey(api_key)
    if not api.is_version_supported(api_version):
        raise UnsupportedVersionError(
            f"{api.name} version {api_version} is not supported (valid versions: "
            f"{api.min_version}-{api.max_version})")
    header_version = response_header_version(api.value, api_version)
    header, pos = read_response_header(payload, 0, header_version)
    body = _read_body(api.response_class, payload, pos, api_version)
    return DecodedResponse(header, body, header_version)


def _read_body(cls: Any, payload: Buffer, pos: int, version: int) -> Any:
    body, end = cls.read(payload, pos, version)
    if end != len(payload):
        raise DecodeError(f"{cls.__name__} v{version}", f"{len(payload) - end} trailing bytes after the message",
                          "", end)
    return body
