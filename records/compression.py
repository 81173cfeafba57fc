"""The four record-batch compression codecs, framed exactly as Kafka's Java
client frames them.

- gzip: RFC 1952 member with Java ``GZIPOutputStream``'s header (mtime 0,
  XFL 0, OS 255) and raw deflate at Java's default level (6). We deflate with
  the standard library's zlib, the same library Java's ``Deflater`` wraps, so
  the bytes match what the Java client writes; cramjam's gzip uses another
  deflate implementation whose output differs.
- snappy: the xerial ``SnappyOutputStream`` framing Kafka uses: an 8-byte magic
  ``\\x82SNAPPY\\0``, int32 version 1, int32 compatible version 1, then blocks of
  at most 32 KiB of input, each an int32 big-endian length + raw snappy data.
  Readers also accept raw (unframed) snappy, as xerial's input stream does.
- lz4: the LZ4 frame format as ``KafkaLZ4BlockOutputStream`` writes it: FLG 0x60
  (version 1, independent blocks, no checksums, no content size), BD 0x40
  (64 KiB blocks), the correct header checksum, blocks stored uncompressed (high
  bit of the size) when LZ4 does not shrink them, and a zero end mark.
- zstd: a standard streaming zstd frame (no content size, no checksum) at
  Kafka's default level 3, as ``ZstdOutputStreamNoFinalizer`` writes it.
"""

from __future__ import annotations

import enum
import struct
import zlib
from collections.abc import Callable
from typing import Any

import cramjam

from kraft.records.errors import UnsupportedCompressionError


class Compression(enum.IntEnum):
    """The compression codec id in bits 0-2 of a batch's attributes."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

    @property
    def kafka_name(self) -> str:
        """Kafka's ``CompressionType.name``: ``none``, ``gzip``, ..."""
        return self.name.lower()

    @classmethod
    def from_id(cls, codec_id: int) -> Compression:
        try:
            return cls(codec_id)
        except ValueError:
            raise UnsupportedCompressionError(f"unknown compression codec id {codec_id}") from None

    @classmethod
    def from_name(cls, name: str) -> Compression:
        try:
            return cls[name.upper()]
        except KeyError:
            raise UnsupportedCompressionError(f"unknown compression codec {name!r}") from None


# --- gzip -------------------------------------------------------------------

# Java's GZIPOutputStream header: magic, CM=8 (deflate), FLG=0, MTIME=0, XFL=0, OS=255.
_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
GZIP_DEFAULT_LEVEL = 6  # Java's Deflater.DEFAULT_COMPRESSION


def _gzip_compress(data: bytes, level: int = GZIP_DEFAULT_LEVEL) -> bytes:
    deflater = zlib.compressobj(level, zlib.DEFLATED, -zlib.MAX_WBITS, 8, zlib.Z_DEFAULT_STRATEGY)
    body = deflater.compress(data) + deflater.flush()
    trailer = struct.pack("<II", zlib.crc32(data) & 0xFFFFFFFF, len(data) & 0xFFFFFFFF)
    return _GZIP_HEADER + body + trailer


def _gzip_decompress(data: bytes) -> bytes:
    out = []
    rest = bytes(data)
    # A gzip stream may hold several members back to back (GZIPInputStream reads them all).
    while rest:
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        out.append(inflater.decompress(rest))
        if not inflater.eof:
            raise UnsupportedCompressionError("truncated gzip stream")
        rest = inflater.unused_data
    return b"".join(out)


# --- snappy (xerial framing) --------------------------------------------------

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
XERIAL_BLOCK_SIZE = 32 * 1024  # xerial SnappyOutputStream.DEFAULT_BLOCK_SIZE
_INT32 = struct.Struct(">i")


def _snappy_compress(data: bytes) -> bytes:
    parts = [_XERIAL_HEADER]
    view = memoryview(data)
    for start in range(0, len(data), XERIAL_BLOCK_SIZE):
        block = bytes(cramjam.snappy.compress_raw(view[start : start + XERIAL_BLOCK_SIZE]))
        parts.append(_INT32.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


def _snappy_decompress(data: bytes) -> bytes:
    data = bytes(data)
    if not data.startswith(_XERIAL_MAGIC):
        # xerial's SnappyInputStream treats a stream without its header as raw snappy.
        return bytes(cramjam.snappy.decompress_raw(data))
    if len(data) < 16:
        raise UnsupportedCompressionError("truncated xerial snappy header")
    out = []
    pos = 16
    end = len(data)
    while pos < end:
        # Concatenated xerial streams repeat the header; skip it.
        if data.startswith(_XERIAL_MAGIC, pos):
            pos += 16
            continue
        if pos + 4 > end:
            raise UnsupportedCompressionError("truncated xerial snappy block length")
        (length,) = _INT32.unpack_from(data, pos)
        pos += 4
        if length < 0 or pos + length > end:
            raise UnsupportedCompressionError("xerial snappy block runs past the end of the data")
        out.append(bytes(cramjam.snappy.decompress_raw(data[pos : pos + length])))
        pos += length
    return b"".join(out)


# --- lz4 (frame, as KafkaLZ4BlockOutputStream writes it) ----------------------

_LZ4_MAGIC = b"\x04\x22\x4d\x18"
_LZ4_FLG = 0x60  # version 01, block independence; no block/content checksum, no content size
_LZ4_BD = 0x40  # block maximum size 64 KiB
LZ4_BLOCK_SIZE = 64 * 1024
_LZ4_INCOMPRESSIBLE = 0x80000000
_UINT32_LE = struct.Struct("<I")


def _xxh32(data: bytes, seed: int = 0) -> int:
    """XXH32, used only for the 2-byte LZ4 frame descriptor checksum."""
    p1, p2, p3, p4, p5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
    mask = 0xFFFFFFFF

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & mask

    n = len(data)
    pos = 0
    if n >= 16:
        v = [(seed + p1 + p2) & mask, (seed + p2) & mask, seed & mask, (seed - p1) & mask]
        while pos + 16 <= n:
            for i in range(4):
                (lane,) = _UINT32_LE.unpack_from(data, pos)
                v[i] = (rotl((v[i] + lane * p2) & mask, 13) * p1) & mask
                pos += 4
        h = (rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18)) & mask
    else:
        h = (seed + p5) & mask
    h = (h + n) & mask
    while pos + 4 <= n:
        (lane,) = _UINT32_LE.unpack_from(data, pos)
        h = (rotl((h + lane * p3) & mask, 17) * p4) & mask
        pos += 4
    while pos < n:
        h = (rotl((h + data[pos] * p5) & mask, 11) * p1) & mask
        pos += 1
    h ^= h >> 15
    h = (h * p2) & mask
    h ^= h >> 13
    h = (h * p3) & mask
    h ^= h >> 16
    return h


_LZ4_HEADER = _LZ4_MAGIC + bytes([_LZ4_FLG, _LZ4_BD, (_xxh32(bytes([_LZ4_FLG, _LZ4_BD])) >> 8) & 0xFF])


def _lz4_compress(data: bytes) -> bytes:
    parts = [_LZ4_HEADER]
    view = memoryview(data)
    for start in range(0, len(data), LZ4_BLOCK_SIZE):
        block = view[start : start + LZ4_BLOCK_SIZE]
        packed = bytes(cramjam.lz4.compress_block(block, store_size=False))
        if len(packed) >= len(block):
            parts.append(_UINT32_LE.pack(len(block) | _LZ4_INCOMPRESSIBLE))
            parts.append(bytes(block))
        else:
            parts.append(_UINT32_LE.pack(len(packed)))
            parts.append(packed)
    parts.append(b"\x00\x00\x00\x00")  # end mark
    return b"".join(parts)


def _lz4_decompress(data: bytes) -> bytes:
    # cramjam's frame decoder accepts every valid LZ4 frame (checksums,
    # content size, linked blocks), which is a superset of what Kafka writes.
    return bytes(cramjam.lz4.decompress(bytes(data)))


# --- zstd ----------------------------------------------------------------------

ZSTD_DEFAULT_LEVEL = 3  # Kafka's CompressionType.ZSTD default level


def _zstd_compress(data: bytes, level: int = ZSTD_DEFAULT_LEVEL) -> bytes:
    # The streaming compressor, like zstd-jni's output stream, writes a frame
    # without the content size; the one-shot API would add it.
    compressor = cramjam.zstd.Compressor(level=level)
    compressor.compress(data)
    return bytes(compressor.finish())


def _zstd_decompress(data: bytes) -> bytes:
    return bytes(cramjam.zstd.decompress(bytes(data)))


_COMPRESS = {
    Compression.GZIP: _gzip_compress,
    Compression.SNAPPY: _snappy_compress,
    Compression.LZ4: _lz4_compress,
    Compression.ZSTD: _zstd_compress,
}
#: Each takes any buffer (bytes or a memoryview of the batch).
_DECOMPRESS: dict[Compression, Callable[[Any], bytes]] = {
    Compression.GZIP: _gzip_decompress,
    Compression.SNAPPY: _snappy_decompress,
    Compression.LZ4: _lz4_decompress,
    Compression.ZSTD: _zstd_decompress,
}


def compress(codec: Compression, data: bytes) -> bytes:
    """Compress the records section of a batch with ``codec``."""
    if codec == Compression.NONE:
        return bytes(data)
    return _COMPRESS[Compression(codec)](data)


def decompress(codec: Compression, data: bytes | memoryview) -> bytes:
    """Decompress the records section of a batch. Any codec failure becomes an
    :class:`UnsupportedCompressionError` naming the codec."""
    if codec == Compression.NONE:
        return bytes(data)
    try:
        fn = _DECOMPRESS[Compression(codec)]
    except (KeyError, ValueError):
        raise UnsupportedCompressionError(f"unknown compression codec id {codec}") from None
    try:
        return fn(data)
    except UnsupportedCompressionError:
        raise
    except Exception as exc:  # cramjam and zlib raise their own error types
        raise UnsupportedCompressionError(f"{Compression(codec).kafka_name} decompression failed: {exc}") from exc
