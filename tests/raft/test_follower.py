"""Follower: fetching, log reconciliation, the follower high watermark,
snapshot catch-up, pre-votes and EndQuorumEpoch."""

from __future__ import annotations

from kraft.raft.errors import Errors
from kraft.raft.rpcs import FetchRequest, FetchSnapshotRequest, VoteRequest, VoteResponse
from kraft.raft.logops import AppendAsFollower, Flush, InstallSnapshot, SnapshotChunk
from kraft.raft.quorum_config import QuorumConfig
from kraft.records.view import OffsetAndEpoch
from kraft.raft.roles import ElectionState, Follower, Prospective
from kraft.sim.memlog import MemBatch, MemLog, encode_batches
from tests.harness.raft_context import RaftTestContext


def follower(
    *log: tuple[int, int], epoch: int = 5, leader: int = 2, config: QuorumConfig | None = None, seed: int = 0
) -> RaftTestContext:
    ctx = RaftTestContext(local_id=1, voters=[1, 2, 3], config=config, seed=seed).with_log(*log).start()
    ctx.clear_sent()  # the Unattached replica's discovery fetch
    ctx.deliver(ctx.begin_quorum_epoch(leader=leader, epoch=epoch), source=leader)
    return ctx


def the_fetch(ctx: RaftTestContext):
    [fetch] = ctx.assert_sent(FetchRequest)
    ctx.clear_sent()
    return fetch


def test_fetches_from_its_log_end_with_its_last_epoch() -> None:
    ctx = follower((1, 3), (4, 2))
    [fetch] = ctx.assert_sent(FetchRequest, destination=2, epoch=5)
    assert (fetch.message.fetch_offset, fetch.message.last_fetched_epoch) == (5, 4)
    assert fetch.message.max_wait_ms == ctx.config.fetch_max_wait_ms


def test_keeps_a_single_fetch_in_flight() -> None:
    ctx = follower((1, 3))
    the_fetch(ctx)
    ctx.advance(ctx.config.fetch_timeout_ms - 1)
    ctx.assert_not_sent(FetchRequest, destination=2)


def test_appends_fetched_records_flushes_and_fetches_on() -> None:
    ctx = follower((1, 3))
    fetch = the_fetch(ctx)
    ready = ctx.respond(fetch, ctx.fetch_response(leader=2, epoch=5, records=[(3, 5, 2)], high_watermark=4))
    assert isinstance(ready.log[0], AppendAsFollower) and isinstance(ready.log[1], Flush)
    assert ctx.log.end_offset == 5
    # The next fetch starts where the write ended, and only after it was executed.
    [nxt] = ctx.assert_sent(FetchRequest, destination=2)
    assert (nxt.message.fetch_offset, nxt.message.last_fetched_epoch) == (5, 5)


def test_the_follower_high_watermark_is_the_leaders_capped_by_its_log_end() -> None:
    ctx = follower((1, 3))
    fetch = the_fetch(ctx)
    ctx.respond(fetch, ctx.fetch_response(leader=2, epoch=5, records=[(3, 5, 1)], high_watermark=10))
    assert ctx.raft.high_watermark == 4 and ctx.committed == 4
    fetch = the_fetch(ctx)
    ctx.respond(fetch, ctx.fetch_response(leader=2, epoch=5, records=[(4, 5, 2)], high_watermark=10))
    assert ctx.raft.high_watermark == 6
    fetch = the_fetch(ctx)
    ctx.respond(fetch, ctx.fetch_response(leader=2, epoch=5, records=[(6, 5, 9)], high_watermark=10))
    assert ctx.raft.high_watermark == 10


def test_truncation_takes_the_smaller_end_of_the_same_epoch() -> None:
    ctx = follower((1, 3), (3, 2), (3, 2))
    fetch = the_fetch(ctx)
    ctx.respond(fetch, ctx.fetch_response(leader=2, epoch=5, diverging_epoch=OffsetAndEpoch(5, 3)))
    assert ctx.log.end_offset == 5


def test_never_truncates_below_its_high_watermark() -> None:
    """A leader asking us to drop committed records is refused, not obeyed."""
    ctx = follower((1, 3))
    fetch = the_fetch(ctx)
    ctx.respond(fetch, ctx.fetch_response(leader=2, epoch=5, records=[(3, 5, 2)], high_watermark=5))
    assert ctx.committed == 5
    fetch = the_fetch(ctx)
    ready = ctx.respond(fetch, ctx.fetch_response(leader=2, epoch=5, diverging_epoch=OffsetAndEpoch(2, 1)))
    assert not ready.log and ctx.log.end_offset == 5
    assert ready.violations and "below the high watermark" in ready.violations[0].description


def test_downloads_a_snapshot_in_slices_and_installs_it() -> None:
    """KIP-630: snapshot id in the fetch answer -> FetchSnapshot from position 0
    until the whole file is written; then the log is truncated to it."""
    ctx = follower((1, 2), config=QuorumConfig(fetch_snapshot_max_bytes=10))
    leader_log = MemLog()
    leader_log.append_as_follower(
        encode_batches([MemBatch(0, 1, (b"a", b"b")), MemBatch(2, 3, (b"c", b"d"))])
    )
    sid = OffsetAndEpoch(4, 3)
    leader_log.create_snapshot(sid)
    snapshot = leader_log.read_snapshot(sid, 0, 10_000)
    assert snapshot is not None
    fetch = the_fetch(ctx)
    ctx.respond(fetch, ctx.fetch_response(leader=2, epoch=5, snapshot_id=sid))
    position = 0
    while True:
        [req] = ctx.assert_sent(FetchSnapshotRequest, destination=2, snapshot_id=sid, position=position)
        ctx.clear_sent()
        chunk = snapshot.data[position : position + req.message.max_bytes]
        ready = ctx.respond(
            req,
            ctx.fetch_snapshot_response(
                epoch=5, leader=2, snapshot_id=sid, size=snapshot.size, position=position, data=chunk
            ),
        )
        assert isinstance(ready.log[0], SnapshotChunk)
        position += len(chunk)
        if position == snapshot.size:
            assert isinstance(ready.log[-1], InstallSnapshot)
            break
    assert (ctx.log.start_offset, ctx.log.end_offset, ctx.log.last_epoch) == (4, 4, 3)
    assert ctx.committed == 4  # a snapshot only holds committed records
    [nxt] = ctx.assert_sent(FetchRequest)
    assert (nxt.message.fetch_offset, nxt.message.last_fetched_epoch) == (4, 3)


def test_a_failed_install_does_not_raise_the_high_watermark() -> None:
    """The shell could not install the downloaded snapshot (full disk, bad
    file): the log is unchanged, so the high watermark must stay where it was
    -- the old tail past it may diverge from the leader's log."""
    ctx = follower((1, 2))
    leader_log = MemLog()
    leader_log.append_as_follower(encode_batches([MemBatch(0, 1, (b"a", b"b", b"c", b"d"))]))
    sid = OffsetAndEpoch(4, 1)
    leader_log.create_snapshot(sid)
    snapshot = leader_log.read_snapshot(sid, 0, 10_000)
    assert snapshot is not None
    apply = ctx.log.apply

    def install_fails(op: object) -> None:
        if not isinstance(op, InstallSnapshot):
            apply(op)

    ctx.log.apply = install_fails  # type: ignore[method-assign]
    before = ctx.committed
    ctx.respond(the_fetch(ctx), ctx.fetch_response(leader=2, epoch=5, snapshot_id=sid))
    [req] = ctx.assert_sent(FetchSnapshotRequest)
    ready = ctx.respond(req, ctx.fetch_snapshot_response(
        epoch=5, leader=2, snapshot_id=sid, size=snapshot.size, position=0, data=snapshot.data))
    assert isinstance(ready.log[-1], InstallSnapshot)
    assert ctx.log.start_offset == 0 and ctx.committed == before
    assert (ctx.raft.quorum.high_watermark or -1) < sid.offset


def test_snapshot_not_found_restarts_with_a_fetch() -> None:
    """The leader deleted the snapshot mid-download: start over with a Fetch."""
    ctx = follower((1, 2))
    fetch = the_fetch(ctx)
    ctx.respond(fetch, ctx.fetch_response(leader=2, epoch=5, snapshot_id=OffsetAndEpoch(9, 4)))
    [req] = ctx.assert_sent(FetchSnapshotRequest)
    ctx.clear_sent()
    ctx.respond(
        req,
        ctx.fetch_snapshot_response(
            epoch=5,
            leader=2,
            snapshot_id=OffsetAndEpoch(-1, -1),
            size=-1,
            position=-1,
            data=b"",
            error=Errors.SNAPSHOT_NOT_FOUND,
        ),
    )
    assert isinstance(ctx.role, Follower) and ctx.role.fetching_snapshot is None
    ctx.assert_sent(FetchRequest, destination=2, fetch_offset=2)


def test_a_fetch_timeout_starts_a_pre_vote() -> None:
    ctx = follower((1, 3))
    ctx.advance(ctx.config.fetch_timeout_ms - 1)
    assert isinstance(ctx.role, Follower)
    ctx.advance(1)
    assert isinstance(ctx.role, Prospective)


def test_grants_a_pre_vote_only_until_it_has_fetched_from_its_leader() -> None:
    """KIP-996: a follower that has not heard from its leader may be cut off
    from it and supports a pre-vote; once it fetched, it protects the leader."""
    ctx = follower((1, 3))
    ctx.deliver(ctx.vote_request(candidate=3, epoch=5, pre_vote=True), source=3)
    assert ctx.assert_response(VoteResponse).vote_granted
    fetch = the_fetch(ctx)
    ctx.respond(fetch, ctx.fetch_response(leader=2, epoch=5))
    ctx.clear_sent()
    ctx.deliver(ctx.vote_request(candidate=3, epoch=5, pre_vote=True), source=3)
    assert not ctx.assert_response(VoteResponse).vote_granted


def test_end_quorum_epoch_shortens_the_timeout_by_preference() -> None:
    """KIP-595 EndQuorumEpoch: the first preferred successor starts at once; the
    others wait a strict exponential backoff by their position."""
    ctx = follower((1, 3))
    ctx.deliver(ctx.end_quorum_epoch(leader=2, epoch=5, preferred=[1, 3]), source=2)
    ctx.advance(0)
    ctx.poll()
    assert isinstance(ctx.role, Prospective)
    ctx.assert_sent(VoteRequest, pre_vote=True, epoch=5)

    ctx = follower((1, 3))
    ctx.deliver(ctx.end_quorum_epoch(leader=2, epoch=5, preferred=[3, 1]), source=2)
    backoff = ctx.config.election_backoff_max_ms >> 1  # position 1 of 2
    ctx.advance(backoff - 1)
    assert isinstance(ctx.role, Follower)
    ctx.advance(1)
    assert isinstance(ctx.role, Prospective)


def test_follows_a_newer_leader_named_in_a_fetch_answer() -> None:
    ctx = follower((1, 3))
    fetch = the_fetch(ctx)
    ctx.respond(fetch, ctx.fetch_response(leader=3, epoch=7, error=Errors.FENCED_LEADER_EPOCH))
    assert isinstance(ctx.role, Follower) and ctx.role.leader_id == 3 and ctx.epoch == 7
    assert ctx.persisted == ElectionState(7, leader_id=3)


def test_an_unanswered_fetch_is_retried_through_another_voter() -> None:
    """Kafka's maybeSendFetchToBestNode: after the request timeout the follower
    asks the other voters who the leader is."""
    ctx = follower((1, 3), config=QuorumConfig(request_timeout_ms=500))
    the_fetch(ctx)
    ctx.advance(500)
    ctx.assert_sent(FetchRequest, destination=3)


def test_a_failed_request_backs_off_from_the_leader() -> None:
    """retry.backoff.ms after a failure; meanwhile it asks another voter."""
    ctx = follower((1, 3))
    fetch = the_fetch(ctx)
    ctx.fail(fetch)
    ctx.assert_not_sent(FetchRequest, destination=2)
    [other] = ctx.assert_sent(FetchRequest, destination=3)
    ctx.clear_sent()
    ctx.advance(ctx.config.retry_backoff_ms)
    ctx.respond(other, ctx.fetch_response(leader=2, epoch=5, error=Errors.NOT_LEADER_OR_FOLLOWER))
    ctx.assert_sent(FetchRequest, destination=2)


def test_the_fetch_timer_after_a_successful_fetch_is_drawn_below_fetch_timeout() -> None:
    """Kafka's ``FollowerState.resetFetchTimeoutForSuccessfulFetch`` restarts a
    fixed ``fetchTimeoutMs`` timer, and ``KafkaRaftClient.pollFollowerAsVoter``
    turns Prospective when it expires. kraft draws the timer from
    ``[0.8, 1.0] x fetch.timeout.ms`` on every successful fetch (issue 28), so
    two followers that fetched together from a leader that then died do not
    time out together and split the vote; the timer never runs longer than
    Kafka's."""
    timeout = QuorumConfig().fetch_timeout_ms
    deadlines = set()
    for seed in range(20):
        ctx = follower((1, 3), seed=seed)
        fetch = the_fetch(ctx)
        ctx.respond(fetch, ctx.fetch_response(leader=2, epoch=5, records=[], high_watermark=1))
        role = ctx.role
        assert isinstance(role, Follower) and role.fetch_deadline_ms is not None
        drawn = role.fetch_deadline_ms - ctx.now_ms
        assert timeout * 4 // 5 <= drawn <= timeout
        deadlines.add(drawn)
        ctx.advance(drawn - 1)
        assert isinstance(ctx.role, Follower)
        ctx.advance(1)
        assert isinstance(ctx.role, Prospective)
    assert len(deadlines) > 10  # drawn anew, not one fixed value
