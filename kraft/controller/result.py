"""What a controller operation produces (Kafka's ``ControllerResult``): the
records to append and the response to send once they are committed.

Records are carried with the version to write them at (Kafka's
``ApiMessageAndVersion``): the version depends on the finalized
``metadata.version`` (a PartitionRecord is v0, v1 or v2 by what the
release the cluster runs understands), so the manager that builds a record
decides it, not the encoder.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

__all__ = ["RecordAndVersion", "ControllerResult", "ApiError"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class RecordAndVersion:
    """A generated metadata record message (``kraft.messages.generated``) and
    the version it is written at (Kafka's ``ApiMessageAndVersion``)."""

    message: Any
    version: int


@dataclass(frozen=True, slots=True)
class ControllerResult(Generic[T]):
    """The records an operation appends and the answer it gives once they
    are committed. ``atomic``: the records go into one batch (Kafka's
    ``ControllerResult.isAtomic``), so a reader sees all or none of them.
    An operation with no records answers at once (Kafka still waits for
    the offset it read from to be committed; kraft's active controller
    only reads committed state plus its own appended records)."""

    records: Sequence[RecordAndVersion]
    response: T
    atomic: bool = True

    @staticmethod
    def of(response: T, *records: RecordAndVersion, atomic: bool = True) -> ControllerResult[T]:
        return ControllerResult(tuple(records), response, atomic)


class ApiError(Exception):
    """A refusal with Kafka's error code and message (Kafka's ``ApiError``);
    raised inside a manager and turned into the response's error fields.
    ``message`` None is Kafka's default message for the code. (A plain
    exception: a frozen dataclass cannot take the traceback Python sets
    when it propagates through a ``with`` block.)"""

    def __init__(self, error: int, message: str | None = None) -> None:
        super().__init__(error, message)
        self.error = error
        self.message = message

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ApiError) and (self.error, self.message) == (other.error, other.message)

    def __hash__(self) -> int:
        return hash((self.error, self.message))

    def __repr__(self) -> str:
        return f"ApiError(error={self.error}, message={self.message!r})"

    def __str__(self) -> str:
        return f"{self.error}: {self.message}"
