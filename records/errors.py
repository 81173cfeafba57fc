"""Typed errors of the records layer.

Every error that comes from bad bytes says where the bytes were: the file (when
there is one) and the byte position, so an operator can find the damage with
``kraft dump-log`` or a hex editor.
"""

from __future__ import annotations

import errno


class RecordsError(Exception):
    """Base of every error raised by ``kraft.records``."""


class CorruptRecordError(RecordsError, ValueError):
    """Bytes that do not form a valid v2 record batch (Kafka's
    ``CorruptRecordException``): bad length, bad magic, CRC mismatch,
    truncated batch, malformed record inside a batch."""

    def __init__(self, reason: str, *, position: int | None = None, path: str | None = None) -> None:
        self.reason = reason
        self.position = position
        self.path = path
        super().__init__(self._render())

    def _render(self) -> str:
        where = []
        if self.path is not None:
            where.append(str(self.path))
        if self.position is not None:
            where.append(f"position {self.position}")
        return f"{self.reason} ({', '.join(where)})" if where else self.reason

    def located(self, *, path: str | None = None, position: int | None = None) -> CorruptRecordError:
        """A copy of this error with the file and/or absolute position filled in."""
        return type(self)(
            self.reason,
            position=self.position if position is None else position,
            path=self.path if path is None else path,
        )


class CrcMismatchError(CorruptRecordError):
    """The stored CRC32C of a batch does not match its bytes."""


class TruncatedBatchError(CorruptRecordError):
    """A batch whose header or body runs past the end of the data."""


class UnsupportedCompressionError(RecordsError, ValueError):
    """A compression codec id outside 0..4, or a codec that failed to decode."""


class CorruptSnapshotError(CorruptRecordError):
    """A snapshot file that is not header, records, footer."""


class CorruptIndexError(RecordsError, ValueError):
    """An ``.index`` / ``.timeindex`` file that fails its sanity check."""


class CorruptLogError(RecordsError):
    """The log directory cannot be opened without dropping valid data.

    Raised by recovery when damage sits *before* batches whose CRC is valid:
    truncating there would drop committed data, so recovery refuses and leaves
    the files untouched for an operator to inspect.
    """

    def __init__(self, reason: str, *, path: str | None = None, position: int | None = None) -> None:
        self.reason = reason
        self.path = path
        self.position = position
        where = ", ".join(p for p in (path, None if position is None else f"position {position}") if p)
        super().__init__(f"{reason} ({where})" if where else reason)


class StateFileError(RecordsError, ValueError):
    """A malformed ``quorum-state``, ``meta.properties``, ``partition.metadata``
    or ``leader-epoch-checkpoint`` file."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}")


class LogOffsetError(RecordsError, ValueError):
    """An append or truncate that would break the log's offset order."""


class DiskIOError(OSError):
    """A write, fsync, truncate, rename or create on a log file that the
    operating system refused (Kafka wraps these in ``KafkaStorageException``).

    ``operation`` names what failed ("write", "fsync", "truncate", "rename",
    "create"), ``filename`` the file or directory. ``rolled_back`` is True only
    when the outcome is known: the write was undone completely (a full disk
    refusing a write that the log then cut back), so nothing of it can be
    on disk or count for anything. Every other failure has an unknown
    outcome (after a failed fsync the kernel may already have dropped the
    dirty pages), which is why the node stops on it (fail-stop)."""

    def __init__(self, code: int, strerror: str, filename: str, operation: str, *, rolled_back: bool = False) -> None:
        super().__init__(code, strerror, filename)
        self.operation = operation
        self.rolled_back = rolled_back

    def __str__(self) -> str:
        name = errno.errorcode.get(self.errno or 0, f"errno {self.errno}")
        return f"{self.operation} of {self.filename} failed: {name} ({self.strerror})"
