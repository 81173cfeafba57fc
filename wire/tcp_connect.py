"""Opening an outbound TCP connection, with a connection to itself taken
for what it is: nobody listening.

Dialing a port nothing listens on can "succeed" when the port lies in the
kernel's ephemeral range (32768-60999 on Linux): the kernel may pick that
very port as the source port, and the SYN meets itself (TCP simultaneous
open). The socket then reads back what it writes: a Kafka client sees its
own request where the response should be ("correlation id ... does not
match ..."), a reachability probe sees a peer. Every outbound connection of
the package is opened here, and such a connection is closed and reported as
refused (``ECONNREFUSED``), the truth about the address.

The blocking form needs only :mod:`socket` (the tools probe addresses
before trio starts); trio is imported by the async form when it runs.
"""

from __future__ import annotations

import errno
import os
import socket
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import trio

__all__ = ["connected_to_itself", "connect", "open_tcp_stream", "refused"]


def connected_to_itself(sock: socket.socket | trio.socket.SocketType) -> bool:
    """True when the socket's two ends are the same address (a connection to
    itself, see the module docstring)."""
    try:
        return bool(sock.getsockname() == sock.getpeername())
    except OSError:  # not connected (any more): not a connection to itself
        return False


def refused() -> ConnectionRefusedError:
    """The error a refused connection raises: ``ECONNREFUSED``, with the
    kernel's own words, so callers word both cases alike."""
    return ConnectionRefusedError(errno.ECONNREFUSED, os.strerror(errno.ECONNREFUSED))


def connect(host: str, port: int, timeout_s: float | None, *, source_port: int = 0) -> socket.socket:
    """A connected blocking socket (``socket.create_connection``); raises
    :func:`refused` for a connection to itself. ``source_port``: bind the
    client end there (0: the kernel picks; tests force a connection to
    itself with it)."""
    source = ("", source_port) if source_port else None
    sock = socket.create_connection((host, port), timeout=timeout_s, source_address=source)
    if connected_to_itself(sock):
        sock.close()
        raise refused()
    return sock


async def open_tcp_stream(host: str, port: int, *, source_port: int = 0) -> trio.SocketStream:
    """A connected trio stream (``trio.open_tcp_stream``, happy eyeballs
    included); raises :func:`refused` when every address refuses or the
    connection reached itself. ``source_port`` as for :func:`connect` (then
    the first address only)."""
    import trio

    if source_port:
        family, kind, proto, _, address = (await trio.socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))[0]
        sock = trio.socket.socket(family, kind, proto)
        try:
            await sock.bind(("", source_port))
            await sock.connect(address)
        except BaseException:
            sock.close()
            raise
        stream = trio.SocketStream(sock)
    else:
        try:
            stream = await trio.open_tcp_stream(host, port)
        except OSError as e:
            # trio says "all attempts to connect to H:P failed" and keeps the
            # reasons in __cause__; say "refused" when that is all they are.
            causes = getattr(e.__cause__, "exceptions", ())
            if causes and all(isinstance(c, ConnectionRefusedError) for c in causes):
                raise refused() from None
            raise
    if connected_to_itself(stream.socket):
        await stream.aclose()
        raise refused()
    return stream
