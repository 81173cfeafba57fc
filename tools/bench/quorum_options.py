"""The settings of ``kraft bench quorum`` and its targets: apart from the
harness (:mod:`kraft.tools.bench.quorum_commits`) so the command's options need no trio."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["QuorumBenchOptions", "TARGETS", "VOTERS"]

VOTERS = (1, 2, 3)

#: The acceptance targets (issue 4; failover: issues 14 and 28): records/s at least, p99 ms and failover s at most.
TARGETS = {"records_per_s": 20_000.0, "p99_ms": 20.0, "failover_median_s": 2.0, "failover_p90_s": 2.5}


@dataclass(frozen=True)
class QuorumBenchOptions:
    duration_s: float = 10.0
    warmup_s: float = 2.0
    record_size: int = 100
    failovers: int = 5
    linger_ms: int = 5
    window: int = 20_000
    #: Records/s of the latency phase; ``None``: half the measured maximum,
    #: then half the throughput target.
    latency_rate: float | None = None
    #: Records/s appended during the failovers (the new leader's first
    #: commit ends a failover): half the throughput target.
    failover_rate: float = TARGETS["records_per_s"] / 2
    #: Extra server.properties for every voter.
    extra: dict[str, str] = field(default_factory=dict)
