"""``kraft codec decode`` / ``kraft codec encode``: Kafka protocol bytes to
Kafka's JSON form and back.

Input bytes (a file or stdin, raw or hex text, auto-detected) may be:

- a whole frame as captured on the wire: int32 size, header, body
  (auto-detected when the size prefix matches the length; ``--frame`` /
  ``--body`` to say so). A request frame names its api and version in its
  header; a response frame needs ``--api`` and ``--version``.
- a bare message body, with ``--api`` and ``--version``.
- with ``--record``: a ``__cluster_metadata`` record value (Kafka's
  ``MetadataRecordSerde`` frame: frame version, record type, version, then
  the record), or with ``--version`` a bare record; or a control record's
  value (``LeaderChangeMessage``, ``VotersRecord``, ...).

Requests and responses come out as ``{"kind", "apiKey", "apiName",
"apiVersion", "headerVersion", "header", "body"}`` (header and body in the
form of Kafka's generated ``*JsonConverter`` classes; records fields as
base64); records as kafka-dump-log prints them: ``{"type", "version",
"data"}``. ``encode`` reads exactly that back and writes the same bytes.

Bad input gives one line on stderr naming the field and byte offset, and
exit status 1.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from typing import IO, Any, NoReturn

import click

from kraft.errors import EXIT_DATA, EXIT_INTERNAL, EXIT_REFUSED
from kraft.messages import registry
from kraft.messages.errors import DecodeError, KraftProtocolError
from kraft.messages.json_form import from_json, to_json
from kraft.messages.runtime import read_uvarint, uvarint
from kraft.wire.apis import ApiKey, UnknownApiName, lookup_api
from kraft.wire.codec import decode_request, decode_response, encode_request_with_header, encode_response
from kraft.wire.errors import UnsupportedApiError
from kraft.wire.framing import SIZE_PREFIX_LENGTH
from kraft.wire.headers import (
    header_to_json,
    request_header_from_json,
    request_header_version,
    response_header_from_json,
    response_header_version,
)

__all__ = ["codec_group"]

#: Kafka's ``MetadataRecordSerde`` frame version.
METADATA_FRAME_VERSION = 1
_HEX = re.compile(r"(?:0x)?([0-9a-fA-F]*)")
_WRAPPER_KEYS = {"kind", "apiKey", "apiName", "apiVersion", "headerVersion", "header", "body"}


class CodecCliError(Exception):
    """A user-facing failure: printed as one line, exit status 1 (refused),
    or 6 when the input itself does not decode (``data=True``)."""

    def __init__(self, message: str, *, data: bool = False) -> None:
        super().__init__(message)
        self.exit_code = EXIT_DATA if data else EXIT_REFUSED


# ----------------------------------------------------------------- input


def _input_bytes(stream: IO[bytes], hex_input: bool | None) -> bytes:
    data = stream.read()
    if not data:
        raise CodecCliError("empty input")
    if hex_input is False:
        return data
    try:
        text = re.sub(r"\s+", "", data.decode("ascii"))
    except UnicodeDecodeError:
        if hex_input:
            raise CodecCliError("--hex given but the input is not ASCII hex text", data=True) from None
        return data
    m = _HEX.fullmatch(text)
    if m is None or not m.group(1) or len(m.group(1)) % 2:
        if hex_input:
            raise CodecCliError("--hex given but the input is not an even number of hex digits", data=True)
        return data
    return bytes.fromhex(m.group(1))


def _looks_framed(buf: bytes) -> bool:
    return len(buf) >= SIZE_PREFIX_LENGTH and int.from_bytes(buf[:4], "big", signed=True) == len(buf) - 4


def _payload(buf: bytes) -> memoryview:
    size = int.from_bytes(buf[:4], "big", signed=True) if len(buf) >= 4 else -1
    if len(buf) < 4 or size < 0:
        raise CodecCliError(f"not a frame: {len(buf)} bytes, size prefix {size}", data=True)
    if size != len(buf) - 4:
        raise CodecCliError(f"not a whole frame: size prefix says {size} bytes, {len(buf) - 4} follow it", data=True)
    return memoryview(buf)[SIZE_PREFIX_LENGTH:]


def _decode_failure(e: DecodeError, base: int) -> CodecCliError:
    """One line, with the offset counted from the start of the input (JSON
    errors have no byte offset)."""
    where = f" at {e.path}" if e.path else ""
    at = f" (byte {e.offset + base} of the input)" if e.offset >= 0 else ""
    return CodecCliError(f"cannot decode {e.message}{where}{at}: {e.reason}", data=True)


# ------------------------------------------------------- records by name


def _normalise(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def _snake_upper(name: str) -> str:
    from kraft.records.metadata import kafka_snake_upper

    return kafka_snake_upper(name)


class _RecordKind:
    """What ``--record NAME`` resolved to."""

    def __init__(self, cls: type[Any], type_name: str, metadata_type: int | None) -> None:
        self.cls = cls
        self.type_name = type_name
        self.metadata_type = metadata_type  # None for control records and data


def _record_kinds() -> dict[str, _RecordKind]:
    kinds: dict[str, _RecordKind] = {}
    for type_id, name in registry.metadata_record_types().items():
        cls = registry.message_class(name)
        kind = _RecordKind(cls, _snake_upper(name), type_id)
        for alias in (name, name.removesuffix("Record")):
            kinds[_normalise(alias)] = kind
    for type_id, type_name in registry.CONTROL_RECORD_TYPES.items():
        if type_id not in registry.CONTROL_RECORD_CLASSES:
            continue
        cls = registry.CONTROL_RECORD_CLASSES[type_id]
        kind = _RecordKind(cls, type_name, None)
        kinds[_normalise(type_name)] = kind
        kinds[_normalise(cls.__name__)] = kind
    # Other non-RPC messages (QuorumStateData) by their spec name.
    from kraft.messages import generated

    for name in generated.MODULES:
        cls = registry.message_class(name)
        if cls.MESSAGE_TYPE == "data" and _normalise(name) not in kinds:
            kinds[_normalise(name)] = _RecordKind(cls, _snake_upper(name), None)
    return kinds


def _record_kind(spec: str | int) -> _RecordKind:
    text = str(spec).strip()
    if text.lstrip("-").isdigit():
        try:
            cls = registry.metadata_record_class(int(text))
        except KeyError:
            known = ", ".join(f"{k}={v}" for k, v in registry.metadata_record_types().items())
            raise CodecCliError(f"unknown metadata record type {text} (known: {known})") from None
        return _RecordKind(cls, _snake_upper(cls.__name__), int(text))
    kinds = _record_kinds()
    try:
        return kinds[_normalise(text)]
    except KeyError:
        names = sorted({k.type_name for k in kinds.values()})
        raise CodecCliError(f"unknown record type {text!r} (known: {', '.join(names)})") from None


def _api(spec: str | int) -> ApiKey:
    try:
        return lookup_api(spec)
    except UnknownApiName as e:
        raise CodecCliError(str(e)) from None


def _check_version(cls: type[Any], version: int) -> None:
    lo, hi = cls.LOWEST_VERSION, cls.HIGHEST_VERSION
    if not lo <= version <= hi:
        raise CodecCliError(f"{cls.__name__} version {version} is not supported (valid versions: {lo}-{hi})")


# ----------------------------------------------------------------- decode


def _decode_request(buf: bytes, framed: bool | None, api: ApiKey | None, version: int | None) -> dict[str, Any]:
    if framed or (framed is None and _looks_framed(buf)):
        payload = _payload(buf)
        try:
            decoded = decode_request(payload)
        except UnsupportedApiError as e:
            raise CodecCliError(f"{e.reason} (Kafka answers {e.error_code.name}, error code {int(e.error_code)})"
                                ) from None
        except DecodeError as e:
            raise _decode_failure(e, SIZE_PREFIX_LENGTH) from None
        found = decoded.api_key
        if api is not None and api != found:
            raise CodecCliError(f"--api {api.name} given, but the frame's header says {found.name} ({found.value})")
        if version is not None and version != decoded.api_version:
            raise CodecCliError(f"--version {version} given, but the frame's header says {decoded.api_version}")
        return {
            "kind": "request", "apiKey": found.value, "apiName": found.name, "apiVersion": decoded.api_version,
            "headerVersion": decoded.header_version,
            "header": header_to_json(decoded.header, decoded.header_version),
            "body": to_json(decoded.body, decoded.api_version),
        }
    return _decode_body("request", buf, api, version)


def _decode_response(buf: bytes, framed: bool | None, api: ApiKey | None, version: int | None) -> dict[str, Any]:
    if framed or (framed is None and _looks_framed(buf)):
        if api is None or version is None:
            raise CodecCliError("a response frame does not name its api: give --api and --version "
                                "(those of the request it answers)")
        _check_version(api.response_class, version)
        payload = _payload(buf)
        try:
            decoded = decode_response(payload, api.value, version)
        except DecodeError as e:
            raise _decode_failure(e, SIZE_PREFIX_LENGTH) from None
        return {
            "kind": "response", "apiKey": api.value, "apiName": api.name, "apiVersion": version,
            "headerVersion": decoded.header_version,
            "header": header_to_json(decoded.header, decoded.header_version),
            "body": to_json(decoded.body, version),
        }
    return _decode_body("response", buf, api, version)


def _decode_body(kind: str, buf: bytes, api: ApiKey | None, version: int | None) -> dict[str, Any]:
    if api is None or version is None:
        raise CodecCliError(f"a bare {kind} body (no size prefix and header) needs --api and --version")
    cls = api.request_class if kind == "request" else api.response_class
    _check_version(cls, version)
    try:
        body = cls.decode(buf, version)
    except DecodeError as e:
        raise _decode_failure(e, 0) from None
    return {"kind": kind, "apiKey": api.value, "apiName": api.name, "apiVersion": version,
            "body": to_json(body, version)}


def _decode_record(buf: bytes, framed: bool | None, spec: str | None, version: int | None) -> dict[str, Any]:
    kind = _record_kind(spec) if spec is not None else None
    # A metadata record value carries (frame version, type, version) in
    # front; control records and data files do not.
    has_frame = framed if framed is not None else (version is None and (kind is None or kind.metadata_type is not None))
    base = 0
    if has_frame:
        try:
            frame_version, pos = read_uvarint(buf, 0)
            type_id, pos = read_uvarint(buf, pos)
            frame_record_version, pos = read_uvarint(buf, pos)
        except Exception:
            raise CodecCliError("not a metadata record value: its frame (frame version, type, version "
                                "as unsigned varints) is cut short or malformed", data=True) from None
        if frame_version != METADATA_FRAME_VERSION:
            raise CodecCliError(f"not a metadata record value: frame version {frame_version} "
                                f"(only frame version {METADATA_FRAME_VERSION} exists)", data=True)
        found = _record_kind(type_id)
        if kind is not None and kind.cls is not found.cls:
            raise CodecCliError(f"--record {spec} given, but the value holds a {found.type_name} (type {type_id})")
        if version is not None and version != frame_record_version:
            raise CodecCliError(f"--version {version} given, but the value says version {frame_record_version}")
        kind, version, base = found, frame_record_version, pos
    if kind is None:
        raise CodecCliError("--record without a frame needs the record type: --api NAME|TYPE_ID")
    if version is None:
        if kind.metadata_type is not None:
            raise CodecCliError("a bare metadata record (no frame) needs --version")
        version = 0  # control records are always written at version 0
    _check_version(kind.cls, version)
    try:
        message = kind.cls.decode(memoryview(buf)[base:], version)
    except DecodeError as e:
        raise _decode_failure(e, base) from None
    return {"type": kind.type_name, "version": version, "data": to_json(message, version)}


# ----------------------------------------------------------------- encode


def _parse_json(stream: IO[bytes]) -> Any:
    raw = stream.read()
    if not raw.strip():
        raise CodecCliError("empty input")
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CodecCliError(f"input is not JSON: {e}", data=True) from None


def _pick(what: str, *sources: tuple[str, Any]) -> Any:
    """The one value several places give for ``what``; they must agree."""
    given = [(where, v) for where, v in sources if v is not None]
    if not given:
        return None
    first_where, first = given[0]
    for where, v in given[1:]:
        if v != first:
            raise CodecCliError(f"{what}: {first_where} says {first}, {where} says {v}")
    return first


def _int_field(data: dict[str, Any], key: str) -> int | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise CodecCliError(f"{key} must be an integer, got {value!r}")
    return value


def _encode_message(data: Any, kind: str | None, framed: bool | None, api_opt: str | None,
                    version_opt: int | None) -> list[bytes]:
    if not isinstance(data, dict):
        raise CodecCliError(f"expected a JSON object, got {type(data).__name__}")
    wrapped = "body" in data and set(data) <= _WRAPPER_KEYS
    if kind is None:
        if not wrapped and {"type", "data"} <= set(data):
            kind = "record"
        else:
            kind = data.get("kind", "request") if wrapped else "request"
    if kind == "record":
        return _encode_record(data, framed, api_opt, version_opt)
    if kind not in ("request", "response"):
        raise CodecCliError(f"kind must be request or response, got {kind!r}")
    if wrapped and data.get("kind") not in (None, kind):
        raise CodecCliError(f"--{kind} given, but the JSON says kind {data.get('kind')!r}")
    header_json = data.get("header") if wrapped else None
    body_json = data["body"] if wrapped else data
    if header_json is not None and not isinstance(header_json, dict):
        raise CodecCliError("header must be a JSON object")
    request_header = header_json if (header_json is not None and kind == "request") else {}
    header_api = _int_field(request_header, "requestApiKey")
    header_version_field = _int_field(request_header, "requestApiVersion")

    api_spec = _pick("api", ("--api", _api(api_opt).value if api_opt is not None else None),
                     ("apiKey", _int_field(data, "apiKey") if wrapped else None),
                     ("apiName", _api(data["apiName"]).value if wrapped and data.get("apiName") else None),
                     ("header.requestApiKey", header_api))
    version = _pick("version", ("--version", version_opt),
                    ("apiVersion", _int_field(data, "apiVersion") if wrapped else None),
                    ("header.requestApiVersion", header_version_field))
    if api_spec is None or version is None:
        raise CodecCliError("cannot tell the api and version: give --api and --version, or JSON with "
                            "apiKey and apiVersion (or a request header)")
    api = _api(api_spec)
    cls = api.request_class if kind == "request" else api.response_class
    _check_version(cls, version)
    body = from_json(cls, body_json, version)

    want_frame = framed if framed is not None else header_json is not None
    if not want_frame:
        return body.encode_parts(version)
    if header_json is None:
        raise CodecCliError("--frame needs a header: the JSON has no \"header\"")
    if kind == "request":
        header_version = request_header_version(api.value, version)
        _check_header_version(data, header_version, api, version)
        header = request_header_from_json(header_json, header_version)
        return encode_request_with_header(header, body)  # type: ignore[return-value]
    header_version = response_header_version(api.value, version)
    _check_header_version(data, header_version, api, version)
    response_header = response_header_from_json(header_json, header_version)
    return encode_response(body, version, response_header.correlation_id)  # type: ignore[return-value]


def _check_header_version(data: dict[str, Any], expected: int, api: ApiKey, version: int) -> None:
    given = data.get("headerVersion")
    if given is not None and given != expected:
        raise CodecCliError(f"headerVersion {given} given, but {api.name} v{version} uses header version {expected}")


def _encode_record(data: dict[str, Any], framed: bool | None, spec_opt: str | None,
                   version_opt: int | None) -> list[bytes]:
    wrapped = {"type", "data"} <= set(data)
    spec = _pick("record type", ("--api", _record_kind(spec_opt).type_name if spec_opt is not None else None),
                 ("type", _record_kind(data["type"]).type_name if wrapped else None))
    if spec is None:
        raise CodecCliError("cannot tell the record type: give --api NAME|TYPE_ID or JSON with \"type\"")
    kind = _record_kind(spec)
    version = _pick("version", ("--version", version_opt), ("version", _int_field(data, "version") if wrapped else None))
    if version is None:
        if kind.metadata_type is not None:
            raise CodecCliError("cannot tell the record version: give --version or JSON with \"version\"")
        version = 0
    _check_version(kind.cls, version)
    message = from_json(kind.cls, data["data"] if wrapped else data, version)
    parts: list[bytes] = message.encode_parts(version)
    want_frame = framed if framed is not None else kind.metadata_type is not None
    if not want_frame:
        return parts
    if kind.metadata_type is None:
        raise CodecCliError(f"{kind.type_name} is not a metadata record: it has no frame")
    return [uvarint(METADATA_FRAME_VERSION), uvarint(kind.metadata_type), uvarint(version), *parts]


# -------------------------------------------------------------- commands


def _fail(message: str, code: int = EXIT_REFUSED) -> NoReturn:
    click.echo(f"error: {' '.join(message.split())}", err=True)
    sys.exit(code)


def _guarded(action: Callable[[], None]) -> None:
    """Run a command body: every failure becomes one line and the exit code
    of its class (kraft/errors.py): bytes that do not decode 6, any other
    refusal 1, a bug of ours 70."""
    try:
        action()
    except CodecCliError as e:
        _fail(str(e), e.exit_code)
    except DecodeError as e:
        _fail(str(_decode_failure(e, 0)), EXIT_DATA)
    except KraftProtocolError as e:
        _fail(str(e), EXIT_DATA)
    except (ValueError, KeyError, OSError) as e:
        _fail(str(e) if not isinstance(e, KeyError) else str(e.args[0] if e.args else e))
    except Exception as e:  # a bug of ours: still one line, never a traceback
        _fail(f"internal error ({type(e).__name__}): {e} -- this is a bug in kraft; rerun with "
              "`kraft --debug ...` and report it", EXIT_INTERNAL)


_kind_options = [
    click.option("--request", "kind", flag_value="request", help="A request (the default for decode)."),
    click.option("--response", "kind", flag_value="response", help="A response."),
    click.option("--record", "kind", flag_value="record",
                 help="A __cluster_metadata record (type id or name, e.g. 2 or TopicRecord) or a control "
                      "record (LeaderChangeMessage, VotersRecord, ...)."),
    click.option("--api", "api", metavar="NAME|KEY",
                 help="Api by Kafka name or key (VOTE, Vote, VoteRequest, 52); with --record the record type."),
    click.option("--version", "version", type=int, metavar="N", help="The api (or record) version."),
]


def _with_options(options: list[Callable[[Any], Any]]) -> Callable[[Any], Any]:
    def apply(f: Any) -> Any:
        for option in reversed(options):
            f = option(f)
        return f
    return apply


@click.group("codec", short_help="Decode and encode Kafka protocol frames.")
def codec_group() -> None:
    """Decode Kafka protocol bytes to Kafka's JSON form, and encode it back."""


@codec_group.command("decode")
@click.argument("source", type=click.File("rb"), default="-")
@_with_options(_kind_options)
@click.option("--frame/--body", "framed", default=None,
              help="Input is a whole frame (size, header, body) / a bare body. Default: auto-detect.")
@click.option("--hex/--binary", "hex_input", default=None,
              help="Input is hex text / raw bytes. Default: auto-detect.")
@click.option("--pretty", is_flag=True, help="Indent the JSON.")
def decode_command(source: IO[bytes], kind: str | None, api: str | None, version: int | None,
                   framed: bool | None, hex_input: bool | None, pretty: bool) -> None:
    """Decode bytes to Kafka's JSON form.

    SOURCE is a file, or - (the default) for stdin; raw bytes or hex text.
    A request frame says its api and version in its header; a response or
    a bare body needs --api and --version.

    \b
    Examples:
      kraft codec decode frame.bin
      echo 000000830034... | kraft codec decode
      kraft codec decode --response --api DescribeQuorum --version 2 resp.bin
      kraft codec decode --record value.hex
      kraft codec decode --record --api LeaderChangeMessage control.bin
    """

    def run() -> None:
        buf = _input_bytes(source, hex_input)
        if kind == "record":
            out = _decode_record(buf, framed, api, version)
        elif kind == "response":
            out = _decode_response(buf, framed, _api(api) if api is not None else None, version)
        else:
            out = _decode_request(buf, framed, _api(api) if api is not None else None, version)
        text = json.dumps(out, indent=2 if pretty else None, ensure_ascii=False,
                          separators=None if pretty else (",", ":"))
        click.echo(text)

    _guarded(run)


@codec_group.command("encode")
@click.argument("source", type=click.File("rb"), default="-")
@_with_options(_kind_options)
@click.option("--frame/--body", "framed", default=None,
              help="Write a whole frame (size, header, body) / the bare body. Default: a frame when the "
                   "JSON has a header (for records: the metadata record frame).")
@click.option("--hex", "hex_output", is_flag=True, help="Write hex text instead of raw bytes.")
def encode_command(source: IO[bytes], kind: str | None, api: str | None, version: int | None,
                   framed: bool | None, hex_output: bool) -> None:
    """Encode Kafka's JSON form (as decode prints it) back to bytes.

    SOURCE is a file, or - (the default) for stdin. The output is raw bytes
    unless --hex is given.

    \b
    Examples:
      kraft codec decode frame.bin | kraft codec encode --hex
      kraft codec encode --api VOTE --version 2 --hex body.json
    """

    def run() -> None:
        data = _parse_json(source)
        parts = _encode_message(data, kind, framed, api, version)
        out = b"".join(parts)
        if hex_output:
            click.echo(out.hex())
        else:
            click.echo(out, nl=False)  # bytes go to the binary stdout unchanged

    _guarded(run)
