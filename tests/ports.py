"""Ports for the nodes a test starts, safe when tests run in parallel.

A port found by binding port 0 and closing the socket is only free until
someone else takes it, and with several test workers someone else is busy:
another worker's ``free_ports``, or any outgoing connection, whose source
port the kernel draws from the same ephemeral range (32768-60999 here). So
the ports handed out here come from below that range, from a block of its
own for each pytest-xdist worker, and each one is checked free by binding
it before it is handed out.
"""

from __future__ import annotations

import itertools
import os
import socket

#: first port of worker gw0's block; gw1 starts BLOCK later, and so on.
#: Two test runs side by side on one machine (two checkouts) give each its
#: own range: KRAFT_TEST_FIRST_PORT and KRAFT_TEST_PORT_BLOCKS (how many
#: worker blocks the range holds; workers beyond it wrap around).
FIRST_PORT = int(os.environ.get("KRAFT_TEST_FIRST_PORT", "12000"))
BLOCKS = int(os.environ.get("KRAFT_TEST_PORT_BLOCKS", "12"))
BLOCK = int(os.environ.get("KRAFT_TEST_PORT_BLOCK", "1500"))


def _worker_index() -> int:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")  # "gw3"; absent when not parallel
    try:
        return int(worker.removeprefix("gw")) % BLOCKS  # 12 blocks end at 30000, below the ephemeral range
    except ValueError:
        return 0


_start = FIRST_PORT + _worker_index() * BLOCK
_next = itertools.cycle(range(_start, _start + BLOCK))


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False  # in use, or in TIME_WAIT from an earlier test: take the next one
    return True


def free_ports(n: int) -> list[int]:
    """``n`` distinct ports nothing listens on, from this worker's block."""
    ports: list[int] = []
    for _ in range(BLOCK):
        port = next(_next)
        if port not in ports and _bindable(port):
            ports.append(port)
            if len(ports) == n:
                return ports
    raise RuntimeError(f"no {n} free ports in {_start}-{_start + BLOCK - 1}")


def free_port() -> int:
    return free_ports(1)[0]
