"""Timing and sizing knobs of the raft core, with Kafka's defaults.

The core takes one frozen :class:`QuorumConfig`; it never reads configuration
files. :meth:`QuorumConfig.from_properties` maps Kafka's
``controller.quorum.*`` property names onto it so the shell can pass a parsed
``server.properties`` straight through.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields


@dataclass(frozen=True, slots=True)
class QuorumConfig:
    """Kafka's ``QuorumConfig``; every default is Kafka's."""

    #: ``controller.quorum.election.timeout.ms``: the base of the randomized
    #: election timeout ``t + rand(t)``.
    election_timeout_ms: int = 1000
    #: ``controller.quorum.fetch.timeout.ms``: a voter that has not fetched
    #: successfully for this long starts an election; a leader that has not
    #: been fetched from by a majority for 1.5x this long resigns.
    fetch_timeout_ms: int = 2000
    #: ``controller.quorum.election.backoff.max.ms``: the cap of the strict
    #: exponential backoff after an EndQuorumEpoch.
    election_backoff_max_ms: int = 1000
    #: ``controller.quorum.append.linger.ms``: how long the leader lets client
    #: appends accumulate before writing a batch.
    append_linger_ms: int = 25
    #: ``controller.quorum.request.timeout.ms``.
    request_timeout_ms: int = 2000
    #: ``controller.quorum.retry.backoff.ms``: pause after a failed request.
    retry_backoff_ms: int = 20
    #: ``controller.quorum.fetch.max.bytes``.
    fetch_max_bytes: int = 8 * 1024 * 1024  # KafkaRaftClient.MAX_FETCH_SIZE_BYTES
    #: ``controller.quorum.fetch.snapshot.max.bytes``.
    fetch_snapshot_max_bytes: int = 1_048_576
    #: Long-poll time of a follower's Fetch (Kafka's constant
    #: ``KafkaRaftClient.MAX_FETCH_WAIT_MS``, not a config).
    fetch_max_wait_ms: int = 500
    #: Largest batch the leader builds (``KafkaRaftClient.MAX_BATCH_SIZE_BYTES``).
    max_batch_size_bytes: int = 8 * 1024 * 1024

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"{f.name} must be an int, got {value!r}")
            if value < 0:
                raise ValueError(f"{f.name} must not be negative, got {value}")
        for name in (
            "fetch_timeout_ms",
            "fetch_max_bytes",
            "fetch_snapshot_max_bytes",
            "max_batch_size_bytes",
            "request_timeout_ms",
        ):
            if getattr(self, name) == 0:
                raise ValueError(f"{name} must be positive")

    @property
    def check_quorum_timeout_ms(self) -> int:
        """A leader resigns after this long without fetches from a majority
        (``LeaderState.CHECK_QUORUM_TIMEOUT_FACTOR`` = 1.5)."""
        return int(self.fetch_timeout_ms * 1.5)

    @property
    def begin_quorum_epoch_timeout_ms(self) -> int:
        """A leader re-sends BeginQuorumEpoch to a voter that has not fetched for
        this long (``fetch.timeout.ms / 2``)."""
        return self.fetch_timeout_ms // 2

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> QuorumConfig:
        """Build from Kafka property names; unknown keys are ignored (they
        belong to other parts of the node)."""
        values: dict[str, int] = {}
        for key, attr in PROPERTY_NAMES.items():
            if key in props:
                raw = props[key]
                try:
                    values[attr] = int(str(raw).strip())
                except ValueError:
                    raise ValueError(f"{key} must be an integer, got {raw!r}") from None
        return cls(**values)


#: Kafka property name -> :class:`QuorumConfig` field.
PROPERTY_NAMES: dict[str, str] = {
    "controller.quorum.election.timeout.ms": "election_timeout_ms",
    "controller.quorum.fetch.timeout.ms": "fetch_timeout_ms",
    "controller.quorum.election.backoff.max.ms": "election_backoff_max_ms",
    "controller.quorum.append.linger.ms": "append_linger_ms",
    "controller.quorum.request.timeout.ms": "request_timeout_ms",
    "controller.quorum.retry.backoff.ms": "retry_backoff_ms",
    "controller.quorum.fetch.max.bytes": "fetch_max_bytes",
    "controller.quorum.fetch.snapshot.max.bytes": "fetch_snapshot_max_bytes",
}
