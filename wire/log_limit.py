"""The old name of :mod:`kraft.wire.rate_limited_log`, kept only while kraft/node/authorizer.py and
kraft/node/cluster_ids.py import it; delete it once they import the new name."""

from kraft.wire.rate_limited_log import RateLimitedLog

__all__ = ["RateLimitedLog"]
