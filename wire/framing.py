"""Size-prefixed frames: every Kafka request and response travels as an int32
byte count followed by that many bytes (header, then body).

:class:`FrameReader` is sans-IO (bytes in, frames out, as h11 does it): the
connection code feeds it whatever the socket returned and takes whole frames
out. A size prefix is checked against the maximum *before* any buffer for
that frame is reserved, so a hostile or corrupt prefix (negative, or 2 GiB)
costs nothing (Kafka's ``socket.request.max.bytes``, default 100 MiB).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from typing import Any

from kraft.messages.errors import DecodeError, EncodeError
from kraft.wire.errors import FrameSizeError

__all__ = [
    "DEFAULT_MAX_FRAME_SIZE",
    "SIZE_PREFIX_LENGTH",
    "frame_parts",
    "read_size_prefix",
    "unframe",
    "FrameReader",
]

#: Kafka's ``socket.request.max.bytes`` default (100 MiB).
DEFAULT_MAX_FRAME_SIZE = 104_857_600
SIZE_PREFIX_LENGTH = 4
_INT32 = struct.Struct(">i")
_INT32_MAX = (1 << 31) - 1

# Consumed bytes are dropped from the reader's buffer once they pass this
# many and make up at least half of it: amortised O(1) per byte, no
# per-frame memmove of the unread tail.
_COMPACT_AFTER = 1 << 16


def frame_parts(parts: Sequence[bytes | bytearray | memoryview]) -> list[bytes | bytearray | memoryview]:
    """``parts`` (header and body, in order) behind their size prefix, ready
    for a vectored write; nothing is copied."""
    size = 0
    for p in parts:
        size += len(p)
    if size > _INT32_MAX:
        raise EncodeError("frame", f"{size} bytes do not fit an int32 size prefix")
    return [_INT32.pack(size), *parts]


def read_size_prefix(buf: Any, pos: int = 0, max_size: int = DEFAULT_MAX_FRAME_SIZE) -> int:
    """The frame size at ``pos``, checked: 0 <= size <= max_size."""
    if len(buf) - pos < SIZE_PREFIX_LENGTH:
        raise DecodeError("frame", f"{len(buf) - pos} bytes, the size prefix needs 4", "size", pos)
    (size,) = _INT32.unpack_from(buf, pos)
    if size < 0 or size > max_size:
        raise FrameSizeError(size, max_size, pos)
    return size


def unframe(buf: Any, max_size: int = DEFAULT_MAX_FRAME_SIZE) -> memoryview:
    """The payload of ``buf``, which must hold exactly one whole frame."""
    size = read_size_prefix(buf, 0, max_size)
    end = SIZE_PREFIX_LENGTH + size
    if len(buf) < end:
        raise DecodeError("frame", f"truncated: size prefix says {size} bytes, {len(buf) - 4} present",
                          "", len(buf))
    if len(buf) > end:
        raise DecodeError("frame", f"{len(buf) - end} trailing bytes after the frame", "", end)
    return memoryview(buf)[SIZE_PREFIX_LENGTH:end]


class FrameReader:
    """Reassembles frames from a byte stream.

    ``feed()`` what arrived, then take frames with ``next_frame()`` (None
    when no whole frame is buffered) or by iterating. A bad size prefix
    raises :class:`FrameSizeError`; the stream cannot be resynchronised
    after it, so every later call raises the same error.
    """

    __slots__ = ("max_frame_size", "_buf", "_pos", "_failed")

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        if not 0 <= max_frame_size <= _INT32_MAX:
            raise ValueError(f"max_frame_size must be in 0..{_INT32_MAX}, got {max_frame_size}")
        self.max_frame_size = max_frame_size
        self._buf = bytearray()
        self._pos = 0
        self._failed: FrameSizeError | None = None

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        if self._failed is not None:
            raise self._failed
        self._buf += data

    @property
    def buffered(self) -> int:
        """Bytes received and not yet returned in a frame."""
        return len(self._buf) - self._pos

    def bytes_wanted(self) -> int:
        """How many more bytes complete the frame being received (at least
        1): a good size for the next socket read."""
        if self._failed is not None:
            raise self._failed
        have = self.buffered
        if have < SIZE_PREFIX_LENGTH:
            return SIZE_PREFIX_LENGTH - have
        size = self._checked_size()
        return max(1, SIZE_PREFIX_LENGTH + size - have)

    def _checked_size(self) -> int:
        try:
            return read_size_prefix(self._buf, self._pos, self.max_frame_size)
        except FrameSizeError as e:
            self._failed = e
            raise

    def next_frame(self) -> bytes | None:
        """The next whole frame's payload (header and body, no size prefix)."""
        if self._failed is not None:
            raise self._failed
        pos = self._pos
        if len(self._buf) - pos < SIZE_PREFIX_LENGTH:
            return None
        size = self._checked_size()
        start = pos + SIZE_PREFIX_LENGTH
        end = start + size
        if end > len(self._buf):
            return None
        frame = bytes(self._buf[start:end])
        if end == len(self._buf):
            self._buf.clear()
            self._pos = 0
        else:
            self._pos = end
            if end >= _COMPACT_AFTER and end * 2 >= len(self._buf):
                del self._buf[:end]
                self._pos = 0
        return frame

    def __iter__(self) -> Iterator[bytes]:
        while (frame := self.next_frame()) is not None:
            yield frame

    def check_eof(self) -> None:
        """Call when the peer closed the stream: a partial frame left in the
        buffer is a truncated frame."""
        if self._failed is not None:
            raise self._failed
        if self.buffered:
            raise DecodeError("frame", f"stream ended inside a frame ({self.buffered} bytes of it received)",
                              "", self.buffered)
