"""Oracle: kafka-python 3.0.12's JSON-schema-driven protocol layer reads our
bytes, writes them back byte for byte and decodes the values we encoded;
its bytes decode in our codecs to the original instance. For every message
and version kafka-python has (ApiVersions, Metadata, Fetch, DescribeCluster,
DescribeQuorum, SaslHandshake, SaslAuthenticate and the headers)."""

from __future__ import annotations

import io
import random
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraft.messages.registry import message_class
from kraft.messages.schema import MessageInfo, StructInfo, default_value
from tests.messages.randgen import random_instance

kp_header = pytest.importorskip("kafka.protocol.api_header", reason="kafka-python is not installed")
from kafka.protocol import sasl as kp_sasl  # noqa: E402
from kafka.protocol.admin import cluster as kp_cluster  # noqa: E402
from kafka.protocol.consumer import fetch as kp_fetch  # noqa: E402
from kafka.protocol.metadata import api_versions as kp_api_versions  # noqa: E402
from kafka.protocol.metadata import metadata as kp_metadata  # noqa: E402

EXAMPLES = 25
_ORACLE = settings(max_examples=EXAMPLES, derandomize=True, deadline=None,
                   suppress_health_check=[HealthCheck.too_slow])

KAFKA_PYTHON: dict[str, Any] = {
    "ApiVersionsRequest": kp_api_versions.ApiVersionsRequest,
    "ApiVersionsResponse": kp_api_versions.ApiVersionsResponse,
    "MetadataRequest": kp_metadata.MetadataRequest,
    "MetadataResponse": kp_metadata.MetadataResponse,
    "FetchRequest": kp_fetch.FetchRequest,
    "FetchResponse": kp_fetch.FetchResponse,
    "DescribeClusterRequest": kp_cluster.DescribeClusterRequest,
    "DescribeClusterResponse": kp_cluster.DescribeClusterResponse,
    "DescribeQuorumRequest": kp_cluster.DescribeQuorumRequest,
    "DescribeQuorumResponse": kp_cluster.DescribeQuorumResponse,
    "SaslHandshakeRequest": kp_sasl.SaslHandshakeRequest,
    "SaslHandshakeResponse": kp_sasl.SaslHandshakeResponse,
    "SaslAuthenticateRequest": kp_sasl.SaslAuthenticateRequest,
    "SaslAuthenticateResponse": kp_sasl.SaslAuthenticateResponse,
}


def _pairs() -> list[tuple[str, int]]:
    pairs = []
    for name, kp_cls in sorted(KAFKA_PYTHON.items()):
        cls = message_class(name)
        for version in range(cls.LOWEST_VERSION, min(cls.HIGHEST_VERSION, kp_cls.max_version) + 1):
            pairs.append((name, version))
    return pairs


PAIRS = _pairs()


def test_kafka_python_has_the_versions_kraft_uses() -> None:
    versions = {(n, v) for n, v in PAIRS}
    for expected in [("ApiVersionsResponse", 4), ("FetchResponse", 17), ("DescribeQuorumResponse", 2),
                     ("DescribeClusterRequest", 1), ("MetadataResponse", 13)]:
        assert expected in versions


def _kafka_python_decode(kp_cls: Any, data: bytes, version: int) -> Any:
    obj = kp_cls.decode(data, version=version)
    # kafka-python's decoder builds objects without __init__, so the
    # header slot that encode() reads is unset (it never re-encodes what it
    # decoded); fill it in to be able to write the object back.
    if not hasattr(obj, "_header"):
        obj._header = None
    return obj


# kafka-python renames the authorized-operations int32 fields of Metadata and
# DescribeCluster responses and reads them as a set of bit positions ({31},
# the sign bit alone, i.e. Kafka's "not requested" -2147483648, as None).
_KP_BITFIELDS = {
    "cluster_authorized_operations": "authorized_operations",
    "topic_authorized_operations": "authorized_operations",
}


def _bitfield_to_int32(bits: set[int] | None) -> int:
    value = sum(1 << b for b in ({31} if bits is None else bits))
    return value - (1 << 32) if value >= 1 << 31 else value


def assert_same_values(ours: Any, theirs: Any, info: MessageInfo, s: StructInfo, version: int,
                       path: str) -> None:
    """Field-by-field equality (kafka-python uses the same snake_case
    names). kafka-python leaves a tagged struct it did not receive as None
    where we hold the default struct."""
    for f in s.fields:
        if not f.present(version):
            continue
        a = getattr(ours, f.attr)
        fpath = f"{path}.{f.attr}"
        if f.attr in _KP_BITFIELDS:
            assert a == _bitfield_to_int32(getattr(theirs, _KP_BITFIELDS[f.attr])), fpath
            continue
        b = getattr(theirs, f.attr)
        if f.struct is not None and not f.array and b is None and f.is_tagged(version):
            assert a == default_value(info, f), fpath
            continue
        if f.array:
            if a is None or b is None:
                assert a is None and b is None, fpath
                continue
            assert len(a) == len(b), fpath
            for i, (x, y) in enumerate(zip(a, b, strict=True)):
                _assert_element(f.struct, x, y, info, version, f"{fpath}[{i}]")
        else:
            _assert_element(f.struct, a, b, info, version, fpath)


def _assert_element(struct: str | None, a: Any, b: Any, info: MessageInfo, version: int, path: str) -> None:
    if struct is not None:
        if a is None or b is None:
            assert a is None and b is None, path
        else:
            assert_same_values(a, b, info, info.structs[struct], version, path)
        return
    if isinstance(a, memoryview):
        a = bytes(a)
    if isinstance(a, uuid.UUID) and b is None:
        assert a.int == 0, path
        return
    assert a == b, (path, a, b)


def _roundtrip(name: str, version: int, seed: int) -> None:
    cls = message_class(name)
    kp_cls = KAFKA_PYTHON[name]
    obj = random_instance(cls, version, random.Random(seed))
    if name == "ApiVersionsResponse":
        # kafka-python (like Kafka's client) reads any ApiVersions response
        # with a non-zero error code as v0, the version a broker answers an
        # unsupported request with; the oracle needs the regular layout.
        obj.error_code = 0
    ours = obj.encode(version)

    kp_obj = _kafka_python_decode(kp_cls, ours, version)
    assert_same_values(obj, kp_obj, cls.SCHEMA, cls.SCHEMA.root, version, name)
    theirs = kp_obj.encode(version=version)
    assert theirs == ours, f"{name} v{version}: kafka-python writes {theirs.hex()}, we wrote {ours.hex()}"
    assert cls.decode(theirs, version) == obj


@pytest.mark.parametrize(("name", "version"), PAIRS, ids=[f"{n}-v{v}" for n, v in PAIRS])
@_ORACLE
@given(seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_kafka_python_reads_and_writes_our_bytes(name: str, version: int, seed: int) -> None:
    _roundtrip(name, version, seed)


@pytest.mark.slow
@pytest.mark.parametrize(("name", "version"), PAIRS, ids=[f"{n}-v{v}" for n, v in PAIRS])
@settings(_ORACLE, max_examples=150)
@given(seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_kafka_python_oracle_sweep(name: str, version: int, seed: int) -> None:
    _roundtrip(name, version, seed)


# kafka-python's headers are chosen by a flexible flag: request v1/v2,
# response v0/v1 (it has no request header v0).
HEADER_CASES = [("RequestHeader", 1, False), ("RequestHeader", 2, True),
                ("ResponseHeader", 0, False), ("ResponseHeader", 1, True)]


@pytest.mark.parametrize(("name", "version", "flexible"), HEADER_CASES)
@_ORACLE
@given(seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_kafka_python_headers(name: str, version: int, flexible: bool, seed: int) -> None:
    cls = message_class(name)
    kp_cls = getattr(kp_header, name)
    obj = random_instance(cls, version, random.Random(seed))
    ours = obj.encode(version)
    data = io.BytesIO(ours)
    kp_obj = kp_cls.decode(data, flexible=flexible)
    assert data.tell() == len(ours)
    assert_same_values(obj, kp_obj, cls.SCHEMA, cls.SCHEMA.root, version, name)
    fields = {f.attr: getattr(obj, f.attr) for f in cls.SCHEMA.root.fields if f.present(version)}
    assert kp_cls(**fields).encode(flexible=flexible) == ours
    assert cls.decode(kp_obj.encode(flexible=flexible), version) == obj
