"""Size-prefixed frames: building them, checking the prefix before anything
is allocated, and reassembling them from a byte stream cut anywhere."""

from __future__ import annotations

import random
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kraft.messages.errors import DecodeError, EncodeError
from kraft.wire.errors import FrameSizeError
from kraft.wire.framing import DEFAULT_MAX_FRAME_SIZE, FrameReader, frame_parts, read_size_prefix, unframe


def _frame(payload: bytes) -> bytes:
    return b"".join(frame_parts([payload]))


def test_default_max_is_kafkas_socket_request_max_bytes() -> None:
    assert DEFAULT_MAX_FRAME_SIZE == 104_857_600


def test_frame_parts_prefixes_the_total_size_without_copying() -> None:
    head, body = b"\x00\x01", memoryview(b"records" * 3)
    parts = frame_parts([head, body])
    assert parts[0] == struct.pack(">i", 2 + 21)
    assert parts[1] is head and parts[2] is body


def test_frame_larger_than_int32_is_an_encode_error() -> None:
    class Huge(bytes):
        def __len__(self) -> int:
            return 1 << 31

    with pytest.raises(EncodeError, match="int32"):
        frame_parts([Huge()])


@pytest.mark.parametrize("size", [-1, -(1 << 31), DEFAULT_MAX_FRAME_SIZE + 1, (1 << 31) - 1])
def test_bad_size_prefix_is_rejected_from_the_four_prefix_bytes_alone(size: int) -> None:
    prefix = struct.pack(">i", size)
    with pytest.raises(FrameSizeError) as info:
        read_size_prefix(prefix)
    assert info.value.size == size
    assert info.value.offset == 0
    assert "Invalid receive" in str(info.value)

    reader = FrameReader()
    reader.feed(prefix)
    with pytest.raises(FrameSizeError):
        reader.next_frame()
    # Nothing was reserved for the claimed size: only the prefix is held.
    assert reader.buffered == 4


def test_configured_maximum_is_inclusive() -> None:
    reader = FrameReader(max_frame_size=8)
    reader.feed(_frame(b"12345678"))
    assert reader.next_frame() == b"12345678"
    reader.feed(_frame(b"123456789"))
    with pytest.raises(FrameSizeError, match="larger than 8"):
        reader.next_frame()


def test_reader_stays_failed_after_a_bad_prefix() -> None:
    reader = FrameReader()
    reader.feed(struct.pack(">i", -5) + b"junk")
    with pytest.raises(FrameSizeError):
        list(reader)
    for call in (reader.next_frame, reader.bytes_wanted, reader.check_eof, lambda: reader.feed(b"x")):
        with pytest.raises(FrameSizeError):
            call()


def test_frames_fed_one_byte_at_a_time() -> None:
    payloads = [b"", b"a", b"hello" * 100, bytes(range(256))]
    stream = b"".join(_frame(p) for p in payloads)
    reader = FrameReader()
    out = []
    for i in range(len(stream)):
        reader.feed(stream[i:i + 1])
        while (frame := reader.next_frame()) is not None:
            out.append(frame)
    assert out == payloads
    assert reader.buffered == 0
    reader.check_eof()


def test_several_frames_in_one_read() -> None:
    reader = FrameReader()
    reader.feed(_frame(b"one") + _frame(b"two") + _frame(b"three")[:5])
    assert list(reader) == [b"one", b"two"]
    assert reader.next_frame() is None
    reader.feed(_frame(b"three")[5:])
    assert list(reader) == [b"three"]


def test_bytes_wanted_counts_down_to_the_end_of_the_frame() -> None:
    reader = FrameReader()
    assert reader.bytes_wanted() == 4
    reader.feed(b"\x00\x00")
    assert reader.bytes_wanted() == 2
    reader.feed(b"\x00\x0a" + b"abc")
    assert reader.bytes_wanted() == 7
    reader.feed(b"defghij")
    assert reader.next_frame() == b"abcdefghij"
    assert reader.bytes_wanted() == 4


def test_eof_inside_a_frame_is_a_truncated_frame() -> None:
    reader = FrameReader()
    reader.feed(_frame(b"abcdef")[:-1])
    assert reader.next_frame() is None
    with pytest.raises(DecodeError, match="stream ended inside a frame"):
        reader.check_eof()


def test_long_streams_keep_the_buffer_bounded() -> None:
    # Many frames through one reader: consumed bytes are dropped, so the
    # buffer never holds much more than the frames not yet taken.
    reader = FrameReader()
    rng = random.Random(7)
    payload = rng.randbytes(10_000)
    chunk = _frame(payload) * 10
    for _ in range(50):
        reader.feed(chunk)
        assert list(reader) == [payload] * 10
        assert len(reader._buf) <= 2 * len(chunk)
    assert reader.buffered == 0


@settings(max_examples=200, derandomize=True, deadline=None)
@given(payloads=st.lists(st.binary(max_size=300), max_size=8), cuts=st.lists(st.integers(0, 3000), max_size=12))
def test_any_split_of_the_stream_gives_the_same_frames(payloads: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(_frame(p) for p in payloads)
    bounds = sorted({0, len(stream), *(c % (len(stream) + 1) for c in cuts)})
    reader = FrameReader()
    out: list[bytes] = []
    for a, b in zip(bounds, bounds[1:]):
        reader.feed(stream[a:b])
        out.extend(reader)
    assert out == payloads
    reader.check_eof()


def test_unframe_takes_exactly_one_whole_frame() -> None:
    assert bytes(unframe(_frame(b"body"))) == b"body"
    with pytest.raises(DecodeError, match="truncated") as info:
        unframe(_frame(b"body")[:-1])
    assert info.value.offset == 7
    with pytest.raises(DecodeError, match="trailing") as info:
        unframe(_frame(b"body") + b"\x00")
    assert info.value.offset == 8
    with pytest.raises(DecodeError, match="size prefix needs 4"):
        unframe(b"\x00\x00")
    with pytest.raises(FrameSizeError):
        unframe(b"\xff\xff\xff\xff")


def test_unframe_is_zero_copy() -> None:
    frame = bytearray(_frame(b"abc"))
    view = unframe(frame)
    frame[4] = ord("X")
    assert bytes(view) == b"Xbc"
