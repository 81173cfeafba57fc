"""The old name of :mod:`kraft.wire.connection_limits`, kept only while kraft/node/node.py imports it; delete it
once it imports the new name."""

from kraft.wire.connection_limits import INT32_MAX, ConnectionLimits, ConnectionTracker

__all__ = ["ConnectionLimits", "ConnectionTracker", "INT32_MAX"]
