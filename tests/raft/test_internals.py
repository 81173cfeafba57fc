"""Small parts of the core: request bookkeeping, the batch accumulator, the
vote tally, the successor backoff, log reconciliation helpers."""

from __future__ import annotations

import random

import pytest

from kraft.raft.accumulator import BatchAccumulator
from kraft.raft.families.election import strict_exponential_election_backoff_ms
from kraft.raft.logops import AppendAsLeader, Batch, LeaderChangeMessage
from kraft.raft.quorum_config import QuorumConfig
from kraft.records.view import OffsetAndEpoch
from kraft.raft.log_reconciliation import FetchValidity, truncation_offset, validate_offset_and_epoch
from kraft.raft.request_manager import RequestManager
from kraft.raft.roles import EpochElection
from kraft.sim.memlog import MemLog


def test_one_request_in_flight_per_peer_with_timeout_and_backoff() -> None:
    rm = RequestManager(retry_backoff_ms=20, request_timeout_ms=2000, rng=random.Random(0))
    assert rm.is_ready(2, 0)
    rm.on_request_sent(2, 7, 0)
    assert not rm.is_ready(2, 10) and rm.has_any_inflight(10)
    assert rm.is_response_expected(2, 7) and not rm.is_response_expected(2, 8)
    assert rm.is_ready(2, 2000)  # timed out: ready again, the late answer is unwanted
    assert not rm.is_response_expected(2, 7)
    rm.on_request_sent(2, 8, 2000)
    rm.on_response(2, 8, False, 2005)
    assert rm.is_backing_off(2, 2010) and not rm.is_backing_off(2, 2025)


def test_a_peer_that_keeps_breaking_the_protocol_is_asked_less_and_less_often() -> None:
    """Issue 44: an observer dialling itself refused ~37 answers a second.
    Each violation in a row doubles retry.backoff.ms (KIP-580's exponential
    client back-off), up to request.timeout.ms; a good answer resets it."""
    rm = RequestManager(retry_backoff_ms=20, request_timeout_ms=2000, rng=random.Random(0))
    waits = []
    for n in range(9):
        rm.on_request_sent(2, n, 0)
        rm.on_violation(2)
        rm.on_response(2, n, False, 0)
        waits.append(rm.time_until_ready(2, 0))
    assert waits == [40, 80, 160, 320, 640, 1280, 2000, 2000, 2000]
    rm.on_request_sent(2, 99, 5000)
    rm.on_response(2, 99, True, 5000)
    rm.on_request_sent(2, 100, 5000)
    rm.on_response(2, 100, False, 5000)  # a plain failure after a good answer: retry.backoff.ms again
    assert rm.time_until_ready(2, 5000) == 20


def test_reset_all_forgets_requests_of_the_old_role() -> None:
    rm = RequestManager(20, 2000, random.Random(0))
    rm.on_request_sent(3, 1, 0)
    rm.reset_all()
    assert not rm.is_response_expected(3, 1) and rm.is_ready(3, 1)


def test_no_bootstrap_fetch_while_any_request_is_in_flight() -> None:
    rm = RequestManager(20, 2000, random.Random(0))
    rm.on_request_sent(2, 1, 0)
    assert rm.find_ready_bootstrap(5, [2, 3]) is None
    assert rm.backoff_before_available(5, [2, 3]) == 1995


def test_the_accumulator_lingers_and_closes_batches_on_control_records() -> None:
    acc = BatchAccumulator(epoch=3, base_offset=10, linger_ms=25, max_batch_size_bytes=1000)
    assert acc.time_until_drain(0) is None
    assert acc.append(0, [b"a", b"b"]) == 11
    assert acc.time_until_drain(5) == 20 and acc.drain(5) == []
    acc.append_control(6, LeaderChangeMessage(1, (1, 2, 3), (1, 2)))
    assert acc.time_until_drain(6) == 0
    first, control = acc.drain(6)
    assert (first.base_offset, first.records) == (10, (b"a", b"b"))
    assert (control.base_offset, control.control) == (12, LeaderChangeMessage(1, (1, 2, 3), (1, 2)))


def test_the_accumulator_starts_a_new_batch_when_full() -> None:
    acc = BatchAccumulator(epoch=1, base_offset=0, linger_ms=25, max_batch_size_bytes=10)
    acc.append(0, [b"12345678"])
    acc.append(0, [b"1234", b"5678"])
    batches = acc.drain(25)
    assert [(b.base_offset, b.records) for b in batches] == [(0, (b"12345678",)), (1, (b"1234", b"5678"))]


def test_the_accumulator_refuses_non_bytes() -> None:
    acc = BatchAccumulator(epoch=1, base_offset=0, linger_ms=25, max_batch_size_bytes=10)
    with pytest.raises(TypeError):
        acc.append(0, ["text"])  # type: ignore[list-item]
    with pytest.raises(ValueError):
        acc.append(0, [])


def test_a_vote_tally_needs_a_majority_and_knows_when_it_lost() -> None:
    tally = EpochElection.start((1, 2, 3, 4, 5), 1)
    tally = tally.record(2, True)
    assert not tally.is_vote_granted() and not tally.is_vote_rejected()
    tally = tally.record(3, False).record(4, False).record(5, False)
    assert tally.is_vote_rejected()
    assert tally.record(3, True) == tally  # a recorded answer is final
    assert tally.record(9, True) == tally  # not a voter


@pytest.mark.parametrize(
    ("position", "total", "expected"),
    [(0, 3, 0), (1, 3, 250), (2, 3, 500), (1, 2, 500), (3, 3, 1000), (-1, 3, 1000), (0, 0, 0)],
)
def test_strict_exponential_election_backoff(position: int, total: int, expected: int) -> None:
    """KafkaRaftClient.strictExponentialElectionBackoffMs with backoff.max = 1000."""
    assert strict_exponential_election_backoff_ms(position, total, 1000) == expected


def test_fetch_validation_cases() -> None:
    log = MemLog()
    for base, epoch, n in [(0, 1, 3), (3, 3, 2)]:
        log.apply(AppendAsLeader(Batch(base, epoch, (b"x",) * n)))
    assert validate_offset_and_epoch(log, 0, 0).kind is FetchValidity.VALID
    assert validate_offset_and_epoch(log, 5, 3).kind is FetchValidity.VALID
    check = validate_offset_and_epoch(log, 4, 2)
    assert (check.kind, check.offset_and_epoch) == (FetchValidity.DIVERGING, OffsetAndEpoch(3, 1))
    assert truncation_offset(log, OffsetAndEpoch(3, 1)) == 3
    assert truncation_offset(log, OffsetAndEpoch(4, 3)) == 4


def test_quorum_config_reads_kafka_property_names() -> None:
    config = QuorumConfig.from_properties(
        {
            "controller.quorum.election.timeout.ms": "500",
            "controller.quorum.fetch.timeout.ms": "900",
            "process.roles": "controller",
        }
    )
    assert (config.election_timeout_ms, config.fetch_timeout_ms, config.append_linger_ms) == (500, 900, 25)
    assert config.check_quorum_timeout_ms == 1350 and config.begin_quorum_epoch_timeout_ms == 450
    with pytest.raises(ValueError):
        QuorumConfig.from_properties({"controller.quorum.fetch.timeout.ms": "soon"})
    with pytest.raises(ValueError):
        QuorumConfig(fetch_timeout_ms=0)
