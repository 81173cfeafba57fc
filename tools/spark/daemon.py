"""PySpark's Python daemon for local masters (``spark.python.daemon.module``),
quiet when the JVM hangs up on a worker on purpose.

A query that needs only part of a partition (``show``, ``take``, ``limit``)
ends its task as soon as it has its rows, and the JVM closes that worker's
socket while the worker still holds a batch of the data source's rows in its
buffer. PySpark's daemon (4.x) then fails the worker's final flush and, with
``spark.python.daemon.killWorkerOnFlushFailure`` (on by default), re-raises
it: a ``BrokenPipeError: [Errno 32] Broken pipe`` traceback on stderr in the
middle of a run where nothing failed. This is PySpark's daemon, except that a
worker whose socket the JVM closed ends quietly and is not reused (what the
kill on flush failure asks for). Imported only as the daemon's main module,
in the Python worker processes of a local master.
"""

from __future__ import annotations

import socket

import pyspark.daemon as _daemon

_pyspark_worker = _daemon.worker


def worker(sock: socket.socket, authenticated: bool) -> int:
    """PySpark's ``daemon.worker``; a hang-up by the JVM returns non-zero,
    which ends this forked child instead of reusing it."""
    try:
        return _pyspark_worker(sock, authenticated)
    except (BrokenPipeError, ConnectionResetError):
        return 1


if __name__ == "__main__":
    _daemon.worker = worker  # manager() looks the name up at each call
    _daemon.manager()
