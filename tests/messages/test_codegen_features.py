"""Every spec feature Kafka uses, on a synthetic spec: versions and
flexibleVersions, nullable fields and structs, tagged fields (known and
unknown), defaults, ignorable fields, commonStructs, field-level
flexibleVersions, and every primitive type."""

from __future__ import annotations

import importlib
import sys
import uuid

import pytest

from kraft.messages.codegen import generate
from kraft.messages.errors import DecodeError, EncodeError, UnsupportedVersionError
from kraft.messages.json_form import from_json, to_json
from kraft.messages.reference_codec import walk_decode

SPEC = """
// A synthetic message that uses every feature of Kafka's spec format.
{
  "apiKey": 9999,
  "type": "request",
  "name": "KitchenSinkRequest",
  "validVersions": "0-3",
  "flexibleVersions": "2+",
  "fields": [
    { "name": "ClientId", "type": "string", "versions": "0+", "nullableVersions": "0+",
      "flexibleVersions": "none", "about": "A string that is never compact, like RequestHeader's." },
    { "name": "Count", "type": "int32", "versions": "0+", "default": "-1" },
    { "name": "Big", "type": "int64", "versions": "1+", "default": "0x7fffffff" },
    { "name": "Flag", "type": "bool", "versions": "0+", "default": "true" },
    { "name": "Ratio", "type": "float64", "versions": "0+" },
    { "name": "Port", "type": "uint16", "versions": "0+" },
    { "name": "Wide", "type": "uint32", "versions": "0+" },
    { "name": "Small", "type": "int8", "versions": "0+" },
    { "name": "Id", "type": "uuid", "versions": "0+" },
    { "name": "Blob", "type": "bytes", "versions": "0+", "nullableVersions": "1+" },
    { "name": "Payload", "type": "records", "versions": "0+", "nullableVersions": "0+" },
    { "name": "Ids", "type": "[]int32", "versions": "0+" },
    { "name": "Names", "type": "[]string", "versions": "0+", "nullableVersions": "1+" },
    { "name": "Dirs", "type": "[]uuid", "versions": "0+" },
    { "name": "OnlyOld", "type": "int32", "versions": "0-1", "ignorable": true },
    { "name": "OnlyNew", "type": "string", "versions": "3+", "default": "x" },
    { "name": "Leader", "type": "Endpoint", "versions": "0+", "nullableVersions": "1+" },
    { "name": "Endpoints", "type": "[]Endpoint", "versions": "0+" },
    { "name": "Nested", "type": "[]Outer", "versions": "0+", "fields": [
      { "name": "Key", "type": "string", "versions": "0+", "mapKey": true },
      { "name": "Inner", "type": "[]Endpoint", "versions": "0+" }
    ]},
    { "name": "TaggedNumber", "type": "int32", "versions": "2+", "taggedVersions": "2+", "tag": 0,
      "default": "-1" },
    { "name": "TaggedText", "type": "string", "versions": "2+", "taggedVersions": "2+", "tag": 1,
      "nullableVersions": "2+", "default": "null" },
    { "name": "TaggedStruct", "type": "State", "versions": "2+", "taggedVersions": "2+", "tag": 2,
      "fields": [
        { "name": "Epoch", "type": "int64", "versions": "2+", "default": "-1" }
    ]},
    { "name": "TaggedList", "type": "[]Endpoint", "versions": "3+", "taggedVersions": "3+", "tag": 5 }
  ],
  "commonStructs": [
    { "name": "Endpoint", "versions": "0+", "fields": [
      { "name": "Host", "type": "string", "versions": "0+" },
      { "name": "Port", "type": "uint16", "versions": "0+" }
    ]}
  ]
}
"""


@pytest.fixture(scope="module")
def mod(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("sink")
    (root / "specs").mkdir()
    (root / "specs" / "KitchenSinkRequest.json").write_text(SPEC)
    generate([root / "specs"], root / "sink_codecs")
    sys.path.insert(0, str(root))
    try:
        yield importlib.import_module("sink_codecs.kitchen_sink_request")
    finally:
        sys.path.remove(str(root))


def full(mod, version: int):
    m = mod.KitchenSinkRequest(
        client_id="cli", count=7, flag=False, ratio=2.5, port=65535, wide=4294967295, small=-128,
        id=uuid.UUID(int=12345), blob=b"\x00\x01", payload=b"records!", ids=[1, -2, 3],
        names=["a", "é"], dirs=[uuid.UUID(int=1), uuid.UUID(int=0)],
        leader=mod.Endpoint(host="h", port=1), endpoints=[mod.Endpoint(host="e", port=2)],
        nested=[mod.Outer(key="k", inner=[mod.Endpoint(host="i", port=3)])],
    )
    if version >= 1:
        m.big = 1 << 40
    else:
        m.big = 0x7FFFFFFF
    if version <= 1:
        m.only_old = 5
    if version >= 2:
        m.tagged_number = 42
        m.tagged_text = "t"
        m.tagged_struct = mod.State(epoch=9)
    if version >= 3:
        m.only_new = "new"
        m.tagged_list = [mod.Endpoint(host="tl", port=4)]
    return m


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_round_trip_every_version(mod, version: int) -> None:
    m = full(mod, version)
    data = m.encode(version)
    back = mod.KitchenSinkRequest.decode(data, version)
    assert back == m
    ref, end = walk_decode(mod.SCHEMA, data, 0, version)
    assert end == len(data) and ref == m
    assert from_json(mod.KitchenSinkRequest, to_json(m, version), version) == m


def test_defaults_follow_the_spec(mod) -> None:
    m = mod.KitchenSinkRequest()
    assert (m.client_id, m.count, m.big, m.flag, m.only_new) == ("", -1, 0x7FFFFFFF, True, "x")
    assert m.tagged_text is None and m.tagged_number == -1 and m.tagged_struct == mod.State(epoch=-1)
    assert m.ids == [] and m.payload is None and m.id == uuid.UUID(int=0)
    assert m.leader == mod.Endpoint() and m.leader is not mod.KitchenSinkRequest().leader


def test_client_id_is_never_compact(mod) -> None:
    # flexibleVersions "none" on the field: int16 length even in flexible v2.
    m = full(mod, 2)
    assert m.encode(2)[:5] == b"\x00\x03cli"
    m.client_id = None
    assert m.encode(2)[:2] == b"\xff\xff"


def test_tagged_fields_only_written_when_not_default(mod) -> None:
    m = full(mod, 2)
    plain = mod.KitchenSinkRequest(client_id="cli")
    with_tags = plain.encode(2)
    plain.tagged_number = 1
    assert len(plain.encode(2)) == len(with_tags) + 1 + 1 + 4  # tag, size, int32
    assert mod.KitchenSinkRequest.decode(m.encode(2), 2).tagged_struct.epoch == 9


def test_unknown_tagged_fields_survive_a_round_trip(mod) -> None:
    m = full(mod, 3)
    m.unknown_tagged_fields = [(9, b"zz"), (3, b"")]
    data = m.encode(3)
    back = mod.KitchenSinkRequest.decode(data, 3)
    assert sorted(back.unknown_tagged_fields) == [(3, b""), (9, b"zz")]
    assert back.encode(3) == data
    # Tags are written in ascending order, known and unknown interleaved.
    assert back.tagged_list == [mod.Endpoint(host="tl", port=4)]


def test_nullable_struct_uses_a_marker_byte(mod) -> None:
    m = full(mod, 1)
    m.leader = None
    assert mod.KitchenSinkRequest.decode(m.encode(1), 1).leader is None
    with pytest.raises(EncodeError, match="leader"):
        full_v0 = full(mod, 0)
        full_v0.leader = None
        full_v0.encode(0)


def test_non_default_field_missing_from_version_is_an_error(mod) -> None:
    m = full(mod, 3)
    m.only_new = "x"  # default: fine at v2
    m.tagged_list = []
    m.encode(2)
    m.only_new = "changed"
    with pytest.raises(UnsupportedVersionError, match="only_new"):
        m.encode(2)


def test_ignorable_field_is_silently_dropped(mod) -> None:
    m = full(mod, 3)
    m.only_old = 99  # ignorable, absent from v3
    assert mod.KitchenSinkRequest.decode(m.encode(3), 3).only_old == 0


def test_records_decode_zero_copy(mod) -> None:
    data = full(mod, 3).encode(3)
    back = mod.KitchenSinkRequest.decode(data, 3)
    assert isinstance(back.payload, memoryview) and bytes(back.payload) == b"records!"
    assert back.payload.obj is data


def test_encode_errors_name_the_field(mod) -> None:
    m = full(mod, 3)
    m.nested[0].inner[0].port = 70000
    with pytest.raises(EncodeError) as e:
        m.encode(3)
    assert e.value.path == "nested[0].inner[0].port"
    m = full(mod, 1)
    m.names = None  # nullable only from v1
    m.encode(1)
    m.only_old = 0
    m.big = 0x7FFFFFFF  # the default: v0 has no Big field
    with pytest.raises(EncodeError, match="names"):
        m.encode(0)


def test_versions_out_of_range(mod) -> None:
    with pytest.raises(UnsupportedVersionError):
        mod.KitchenSinkRequest().encode(4)
    with pytest.raises(UnsupportedVersionError):
        mod.KitchenSinkRequest.decode(b"", -1)


def test_decode_errors_carry_path_and_offset(mod) -> None:
    data = full(mod, 3).encode(3)
    for cut in range(len(data)):
        with pytest.raises(DecodeError) as e:
            mod.KitchenSinkRequest.decode(data[:cut], 3)
        assert 0 <= e.value.offset <= cut
    with pytest.raises(DecodeError, match="trailing"):
        mod.KitchenSinkRequest.decode(data + b"\x00", 3)
