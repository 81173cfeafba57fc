"""The four codecs, framed as Kafka's Java client frames them."""

from __future__ import annotations

import gzip
import random
import struct
import zlib

import cramjam
import pytest

from kraft.records.compression import Compression, _xxh32, compress, decompress
from kraft.records.errors import UnsupportedCompressionError


def _payload(n: int, seed: int = 7) -> bytes:
    rng = random.Random(seed)
    words = [b"topic", b"partition", b"leader", b"\x00\x01\x02", b"isr"]
    return b"".join(rng.choice(words) for _ in range(n))[:n]


@pytest.mark.parametrize("codec", list(Compression))
@pytest.mark.parametrize("size", [0, 1, 1000, 32 * 1024, 32 * 1024 + 1, 200_000])
def test_round_trip(codec: Compression, size: int) -> None:
    data = _payload(size)
    assert decompress(codec, compress(codec, data)) == data


def test_names_are_kafkas() -> None:
    assert [c.kafka_name for c in Compression] == ["none", "gzip", "snappy", "lz4", "zstd"]
    assert Compression.from_name("LZ4") is Compression.LZ4
    with pytest.raises(UnsupportedCompressionError):
        Compression.from_id(5)


def test_gzip_is_java_gzipoutputstream_framing() -> None:
    data = _payload(5000)
    out = compress(Compression.GZIP, data)
    # magic, deflate, no flags, mtime 0, XFL 0, OS 255 (JDK 16+)
    assert out[:10] == b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
    crc, size = struct.unpack("<II", out[-8:])
    assert (crc, size) == (zlib.crc32(data), len(data))
    # raw deflate at Java's default level: the bytes zlib's deflate produces
    deflater = zlib.compressobj(6, zlib.DEFLATED, -15, 8)
    assert out[10:-8] == deflater.compress(data) + deflater.flush()
    assert gzip.decompress(out) == data


def test_gzip_reads_multiple_members() -> None:
    assert decompress(Compression.GZIP, gzip.compress(b"ab") + gzip.compress(b"cd")) == b"abcd"


def test_snappy_is_xerial_framed_in_32k_blocks() -> None:
    data = _payload(70_000)
    out = compress(Compression.SNAPPY, data)
    assert out[:16] == b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    pos, blocks = 16, []
    while pos < len(out):
        (length,) = struct.unpack_from(">i", out, pos)
        blocks.append(bytes(cramjam.snappy.decompress_raw(out[pos + 4 : pos + 4 + length])))
        pos += 4 + length
    assert [len(b) for b in blocks] == [32768, 32768, 70_000 - 65536]
    assert b"".join(blocks) == data


def test_snappy_accepts_raw_and_concatenated_streams() -> None:
    data = _payload(1000)
    assert decompress(Compression.SNAPPY, bytes(cramjam.snappy.compress_raw(data))) == data
    framed = compress(Compression.SNAPPY, data)
    assert decompress(Compression.SNAPPY, framed + framed) == data + data


def test_lz4_frame_flags_are_kafkas() -> None:
    data = _payload(150_000)
    out = compress(Compression.LZ4, data)
    # magic, FLG 0x60 (v1, independent blocks, no checksums), BD 0x40 (64 KiB), HC
    assert out[:7] == b"\x04\x22\x4d\x18\x60\x40\x82"
    assert out[6] == (_xxh32(b"\x60\x40") >> 8) & 0xFF
    assert out[-4:] == b"\x00\x00\x00\x00"  # end mark, no content checksum
    sizes, pos = [], 7
    while True:
        (raw,) = struct.unpack_from("<I", out, pos)
        if raw == 0:
            break
        sizes.append(raw & 0x7FFFFFFF)
        pos += 4 + (raw & 0x7FFFFFFF)
    assert len(sizes) == 3  # 64 KiB + 64 KiB + rest
    assert bytes(cramjam.lz4.decompress(out)) == data


def test_lz4_stores_incompressible_blocks_raw() -> None:
    data = random.Random(3).randbytes(1000)
    out = compress(Compression.LZ4, data)
    (raw,) = struct.unpack_from("<I", out, 7)
    assert raw == 0x80000000 | 1000
    assert out[11 : 11 + 1000] == data


def test_xxh32_known_values() -> None:
    # Reference values of XXH32 with seed 0.
    assert _xxh32(b"") == 0x02CC5D05
    assert _xxh32(b"abc") == 0x32D153FF
    assert _xxh32(b"Nobody inspects the spammish repetition") == 0xE2293B2F


def test_zstd_frame_is_streaming_form() -> None:
    out = compress(Compression.ZSTD, _payload(10_000))
    assert out[:4] == b"\x28\xb5\x2f\xfd"
    descriptor = out[4]
    assert descriptor & 0xC0 == 0  # no content size field, as zstd-jni's stream writes
    assert descriptor & 0x20 == 0  # not single-segment
    assert descriptor & 0x04 == 0  # no checksum


@pytest.mark.parametrize("codec", [Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD])
@pytest.mark.parametrize("garbage", [b"", b"\x00" * 10, b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01\x7f\xff\xff\xff", b"\x04\x22\x4d\x18\x60\x40\x00garbage"])
def test_corrupt_input_is_a_typed_error(codec: Compression, garbage: bytes) -> None:
    """Garbage either decodes to some bytes or raises the typed error; no
    codec library exception escapes."""
    try:
        result = decompress(codec, garbage)
    except UnsupportedCompressionError as exc:
        assert str(exc)
    else:
        assert isinstance(result, bytes)


def test_truncated_gzip_is_rejected() -> None:
    with pytest.raises(UnsupportedCompressionError, match="gzip"):
        decompress(Compression.GZIP, compress(Compression.GZIP, _payload(5000))[:-20])
