"""Request and response headers, and which header version goes with which
api version (Kafka's ``ApiKeys.requestHeaderVersion`` /
``responseHeaderVersion``).

Request headers:
  v0  api key, api version, correlation id (only ControlledShutdown v0 used it)
  v1  + client id (a nullable string with an int16 length, even in v2)
  v2  + tagged fields; used by every flexible api version

Response headers:
  v0  correlation id
  v1  + tagged fields; used by every flexible api version, except
      ApiVersions, whose responses always carry a v0 header: a client parses
      that response before it knows which versions the server speaks.
"""

from __future__ import annotations

import struct
from typing import Any

from kraft.messages.errors import DecodeError, UnsupportedVersionError
from kraft.messages.generated.request_header import RequestHeader
from kraft.messages.generated.response_header import ResponseHeader
from kraft.messages.json_form import from_json, to_json
from kraft.wire.apis import ApiKey
from kraft.wire.errors import ErrorCode, UnsupportedApiError

__all__ = [
    "RequestHeader",
    "ResponseHeader",
    "CONTROLLED_SHUTDOWN",
    "request_header_version",
    "response_header_version",
    "peek_request_header",
    "encode_request_header",
    "read_request_header",
    "encode_response_header",
    "read_response_header",
    "header_to_json",
    "request_header_from_json",
    "response_header_from_json",
]

#: Kafka's api key 7: its v0 is the one request with a v0 header. kraft does
#: not serve it; the number is here only for the header rule.
CONTROLLED_SHUTDOWN = 7

_PREFIX = struct.Struct(">hhi")  # api key, api version, correlation id
_CORRELATION_ID = struct.Struct(">i")


def _flexible(api_key: int, api_version: int) -> bool:
    try:
        return ApiKey(api_key).is_flexible(api_version)
    except ValueError:
        raise KeyError(api_key) from None


def request_header_version(api_key: int, api_version: int) -> int:
    """The request header version for ``api_key`` at ``api_version``.
    KeyError for an api key kraft has no codecs for (its header layout,
    like Kafka's for an unknown key, cannot be known)."""
    if api_key == CONTROLLED_SHUTDOWN:
        return 0 if api_version == 0 else 1
    return 2 if _flexible(api_key, api_version) else 1


def response_header_version(api_key: int, api_version: int) -> int:
    if api_key == ApiKey.API_VERSIONS:
        return 0
    return 1 if _flexible(api_key, api_version) else 0


def peek_request_header(buf: Any, pos: int = 0) -> tuple[int, int, int]:
    """(api key, api version, correlation id): the first eight bytes of
    every request header version."""
    if len(buf) - pos < _PREFIX.size:
        raise DecodeError("request header", f"{len(buf) - pos} bytes, a request header needs at least 8",
                          "", pos)
    return _PREFIX.unpack_from(buf, pos)


def encode_request_header(header: RequestHeader, header_version: int) -> bytes:
    if header_version == 0:
        # v0 has no client id; Kafka ignores it (the field is ignorable).
        try:
            return _PREFIX.pack(header.request_api_key, header.request_api_version, header.correlation_id)
        except struct.error as e:
            raise UnsupportedVersionError(f"cannot encode request header v0: {e}") from None
    return header.encode(header_version)


def read_request_header(buf: Any, pos: int = 0,
                        header_version: int | None = None) -> tuple[RequestHeader, int, int]:
    """Decode the request header at ``pos``: (header, header version, position
    after it). Without ``header_version`` it follows from the api key and
    version in the first four bytes; an api key kraft does not know raises
    :class:`UnsupportedApiError` with ``INVALID_REQUEST`` (as Kafka's
    ``RequestHeader.parse`` does)."""
    api_key, api_version, correlation_id = peek_request_header(buf, pos)
    if header_version is None:
        try:
            header_version = request_header_version(api_key, api_version)
        except KeyError:
            raise UnsupportedApiError(api_key, api_version, correlation_id, ErrorCode.INVALID_REQUEST,
                                      f"Unknown API key {api_key}") from None
    if header_version == 0:
        header = RequestHeader(request_api_key=api_key, request_api_version=api_version,
                               correlation_id=correlation_id)
        return header, 0, pos + _PREFIX.size
    header, end = RequestHeader.read(buf, pos, header_version)
    return header, header_version, end


def encode_response_header(correlation_id: int, header_version: int) -> bytes:
    if header_version == 0:
        try:
            return _CORRELATION_ID.pack(correlation_id)
        except struct.error as e:
            raise UnsupportedVersionError(f"cannot encode response header v0: {e}") from None
    return ResponseHeader(correlation_id=correlation_id).encode(header_version)


def read_response_header(buf: Any, pos: int, header_version: int) -> tuple[ResponseHeader, int]:
    return ResponseHeader.read(buf, pos, header_version)


def header_to_json(header: RequestHeader | ResponseHeader, header_version: int) -> dict[str, Any]:
    """Kafka's JSON form of a header (``RequestHeaderDataJsonConverter``)."""
    if isinstance(header, RequestHeader) and header_version == 0:
        return {
            "requestApiKey": header.request_api_key,
            "requestApiVersion": header.request_api_version,
            "correlationId": header.correlation_id,
        }
    return to_json(header, header_version)


def request_header_from_json(data: Any, header_version: int) -> RequestHeader:
    if header_version == 0:
        if not isinstance(data, dict):
            raise DecodeError("JSON", "expected an object", "header", -1)
        v1 = {**data, "clientId": ""}
        header = from_json(RequestHeader, v1, 1)
        return header
    return from_json(RequestHeader, data, header_version)


def response_header_from_json(data: Any, header_version: int) -> ResponseHeader:
    return from_json(ResponseHeader, data, header_version)
