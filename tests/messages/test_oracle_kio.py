"""Oracle: kio 0.6.5 (generated from newer Kafka specs, with a native
decoder) reads our bytes, writes them back byte for byte, and decodes the
same values we encoded; its bytes decode in our codecs to the original
instance. Every message and version that both kio and we define."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import importlib
import io
import random
import re
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraft.messages import generated
from kraft.messages.registry import message_class
from kraft.messages.schema import MessageInfo, StructInfo
from tests.messages.randgen import random_instance

kio_serial = pytest.importorskip("kio.serial", reason="kio (test oracle) is not installed")
kio_errors = pytest.importorskip("kio.schema.errors")

EXAMPLES = 25
_ORACLE = settings(max_examples=EXAMPLES, derandomize=True, deadline=None,
                   suppress_health_check=[HealthCheck.too_slow])

# kio's ErrorCode enum refuses codes Kafka has not assigned, so error codes
# are drawn from Kafka's list (kio.schema.errors.ErrorCode mirrors Errors.java).
_KNOWN_ERROR_CODES = [int(e) for e in kio_errors.ErrorCode]
# kio maps some int64 millisecond fields to datetime.timedelta: it overflows
# past 2**63 microseconds and writes them back through float seconds (exact
# only while the value fits a double's mantissa), so durations are kept
# within +-2**43 ms (278 years).
_TIMEDELTA_MS_LIMIT = 2**43
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def kio_class(cls: type, version: int) -> type | None:
    """kio's class for our message ``cls`` at ``version``, or None."""
    module = generated.MODULES[cls.__name__]
    kind = cls.MESSAGE_TYPE
    if kind in ("request", "response"):
        package, leaf = re.sub(r"_(request|response)$", "", module), kind
    elif kind == "header":
        package, leaf = module, "header"
    else:
        package, leaf = module, "data"
    try:
        kio_module = importlib.import_module(f"kio.schema.{package}.v{version}.{leaf}")
    except ModuleNotFoundError:
        return None
    return getattr(kio_module, cls.__name__, None)


def _pairs() -> list[tuple[str, int]]:
    pairs = []
    for name in sorted(generated.MODULES):
        cls = message_class(name)
        for version in range(cls.LOWEST_VERSION, cls.HIGHEST_VERSION + 1):
            if kio_class(cls, version) is not None:
                pairs.append((name, version))
    return pairs


PAIRS = _pairs()


def test_kio_covers_the_kraft_apis() -> None:
    # Guards against a silent skip of everything (a kio layout change).
    names = {name for name, _ in PAIRS}
    for expected in ("VoteRequest", "FetchResponse", "DescribeQuorumResponse", "VotersRecord",
                     "ApiVersionsResponse", "RequestHeader", "AddRaftVoterRequest"):
        assert expected in names
    assert len(PAIRS) >= 120


def _kio_compatible(obj: Any, info: MessageInfo, s: StructInfo, version: int, rng: random.Random) -> None:
    """Bend a random instance into kio's narrower value domain (see above)."""
    for f in s.fields:
        if not f.present(version):
            continue
        value = getattr(obj, f.attr, None)
        if f.struct is not None and value is not None:
            for item in value if f.array else [value]:
                _kio_compatible(item, info, info.structs[f.struct], version, rng)
        elif f.attr == "error_code" and f.type == "int16" and not f.array:
            setattr(obj, f.attr, rng.choice(_KNOWN_ERROR_CODES))
        elif f.type == "int64" and "timestamp" in f.attr and not f.array:
            # kio reads the delegation tokens' timestamps as datetimes: not negative.
            setattr(obj, f.attr, abs(value) % (1 << 41))
        elif f.type == "int64" and f.attr.endswith("_ms") and not f.array:
            setattr(obj, f.attr, max(-_TIMEDELTA_MS_LIMIT, min(_TIMEDELTA_MS_LIMIT, value)))


def _kio_value(value: Any) -> Any:
    """kio's value as ours would be: ints for enums, ms for durations."""
    if isinstance(value, enum.Enum):
        return int(value.value)
    if isinstance(value, datetime.timedelta):
        return value // datetime.timedelta(milliseconds=1)
    if isinstance(value, datetime.datetime):
        return (value - _EPOCH) // datetime.timedelta(milliseconds=1)
    return value


def assert_same_values(ours: Any, theirs: Any, info: MessageInfo, s: StructInfo, version: int,
                       path: str) -> None:
    """Field-by-field equality of our object and kio's. Fields pair up in
    spec order; kio drops the ``_ms`` suffix of fields it types as
    durations, and represents the zero uuid as None."""
    our_fields = [f for f in s.fields if f.present(version)]
    kio_fields = dataclasses.fields(theirs)
    assert len(our_fields) == len(kio_fields), (path, [f.attr for f in our_fields], [f.name for f in kio_fields])
    for f, kf in zip(our_fields, kio_fields, strict=True):
        # kio suffixes names that shadow builtins ("id" -> "id_").
        assert kf.name.removesuffix("_") in (f.attr, f.attr.removesuffix("_ms")), (path, f.attr, kf.name)
        a, b = getattr(ours, f.attr), getattr(theirs, kf.name)
        fpath = f"{path}.{f.attr}"
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
    if isinstance(a, uuid.UUID) and b is None:
        assert a.int == 0, path
        return
    if isinstance(a, memoryview):
        a = bytes(a)
    assert a == _kio_value(b), (path, a, b)


def _roundtrip(name: str, version: int, seed: int) -> None:
    cls = message_class(name)
    kio_cls = kio_class(cls, version)
    rng = random.Random(seed)
    obj = random_instance(cls, version, rng)
    _kio_compatible(obj, cls.SCHEMA, cls.SCHEMA.root, version, rng)
    ours = obj.encode(version)

    kio_obj, size = kio_serial.entity_reader(kio_cls)(ours, 0)
    assert size == len(ours), f"kio read {size} of our {len(ours)} bytes"
    assert_same_values(obj, kio_obj, cls.SCHEMA, cls.SCHEMA.root, version, name)

    out = io.BytesIO()
    kio_serial.entity_writer(kio_cls)(out, kio_obj)
    theirs = out.getvalue()
    assert theirs == ours, f"{name} v{version}: kio writes {theirs.hex()}, we wrote {ours.hex()}"
    assert cls.decode(theirs, version) == obj


@pytest.mark.parametrize(("name", "version"), PAIRS, ids=[f"{n}-v{v}" for n, v in PAIRS])
@_ORACLE
@given(seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_kio_reads_and_writes_our_bytes(name: str, version: int, seed: int) -> None:
    _roundtrip(name, version, seed)


@pytest.mark.slow
@pytest.mark.parametrize(("name", "version"), PAIRS, ids=[f"{n}-v{v}" for n, v in PAIRS])
@settings(_ORACLE, max_examples=150)
@given(seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_kio_oracle_sweep(name: str, version: int, seed: int) -> None:
    _roundtrip(name, version, seed)
