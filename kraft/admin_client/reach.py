"""Can any bootstrap server be reached at all? A TCP connect to each, bounded
by the command's timeout, before a tool starts the slower machinery (an
observer's DescribeCluster, Fetch and retries): a refused or unreachable
address is then reported at once, named, with exit status 5, instead of as
"did not catch up" after the timeout.

Plain blocking sockets: it runs before trio starts and imports nothing heavy.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Sequence

from kraft.admin_client.errors import UnreachableError
from kraft.wire.addresses import format_address
from kraft.wire.tcp_connect import connect

__all__ = ["check_reachable"]


def _why(exc: OSError) -> str:
    if isinstance(exc, TimeoutError | socket.timeout):
        return "connection timed out"
    return (exc.strerror or str(exc)).lower() if exc.strerror else str(exc)


def check_reachable(addresses: Sequence[tuple[str, int]], timeout_s: float, kind: str = "controllers",
                    option: str = "--bootstrap-controller", *, source_port: int = 0) -> None:
    """Return once one of ``addresses`` accepts a TCP connection; raise
    :class:`UnreachableError` naming each address and why it failed when
    none does within ``timeout_s`` (shared between the addresses).
    ``source_port``: bind the client end there (tests force a connection to
    itself with it)."""
    deadline = time.monotonic() + max(timeout_s, 0.001)
    failures = []
    for i, (host, port) in enumerate(addresses):
        # An even share of what is left, so a black-holed first address
        # leaves time for the next.
        left = deadline - time.monotonic()
        share = max(left / (len(addresses) - i), 0.001)
        try:
            with connect(host, port, share, source_port=source_port):
                return
        except OSError as e:  # a connection to itself comes as refused (tcp_connect)
            failures.append(f"{format_address(host, port)} ({_why(e)})")
    raise UnreachableError(f"Cannot reach any of the bootstrap {kind}: {', '.join(failures)}; check {option} "
                           f"and that the {kind} are running")
