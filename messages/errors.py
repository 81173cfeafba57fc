"""Typed errors of the codec layer.

Following h11: a ``RemoteProtocolError`` means the peer (or a file) sent bytes
that break the protocol; a ``LocalProtocolError`` means our side tried to send
something the protocol does not allow. Neither ever leaks ``struct.error`` or
``IndexError`` to callers.
"""

from __future__ import annotations


class KraftProtocolError(Exception):
    """Base of every codec error."""


class RemoteProtocolError(KraftProtocolError):
    """Bytes we received (or read from disk) are not valid."""


class LocalProtocolError(KraftProtocolError):
    """We were asked to produce something the protocol does not allow."""


class DecodeError(RemoteProtocolError, ValueError):
    """A buffer could not be decoded.

    ``path`` names the field (``topics[0].partitions[2].last_offset``),
    ``offset`` the byte position in the buffer where that field starts.
    """

    def __init__(self, message: str, reason: str, path: str = "", offset: int = -1) -> None:
        self.message = message
        self.reason = reason
        self.path = path
        self.offset = offset
        where = f" at {path}" if path else ""
        super().__init__(f"cannot decode {message}{where} (byte {offset}): {reason}")


class EncodeError(LocalProtocolError, ValueError):
    """A message could not be encoded (bad value, null where not allowed, ...)."""

    def __init__(self, message: str, reason: str, path: str = "") -> None:
        self.message = message
        self.reason = reason
        self.path = path
        where = f" at {path}" if path else ""
        super().__init__(f"cannot encode {message}{where}: {reason}")


class UnsupportedVersionError(LocalProtocolError, ValueError):
    """A version outside a message's valid range, or a non-default value in a
    field the requested version does not have (Kafka's
    ``UnsupportedVersionException``)."""
