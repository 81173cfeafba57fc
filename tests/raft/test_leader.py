"""Leader: BeginQuorumEpoch, fetch validation, the high watermark, long polls,
linger, check-quorum and resignation."""

from __future__ import annotations

import pytest

from kraft.raft.errors import Errors, NotLeaderError
from kraft.raft.events import OutboundResponse
from kraft.raft.rpcs import BeginQuorumEpochRequest, EndQuorumEpochRequest, FetchResponse, VoteResponse
from kraft.raft.logops import AppendAsLeader, Flush
from kraft.records.view import OffsetAndEpoch
from kraft.raft.roles import Leader, Resigned
from kraft.sim.memlog import decode_batches
from kraft.raft.voters import ReplicaKey
from tests.harness.raft_context import RaftTestContext


def leader(voters: list[int] = [1, 2, 3], log: tuple[tuple[int, int], ...] = ((1, 3),)) -> RaftTestContext:  # noqa: B006
    ctx = RaftTestContext(local_id=1, voters=voters).with_log(*log).start()
    return ctx.elect_local()


def fetch(ctx: RaftTestContext, replica: int, offset: int, epoch: int, **kw) -> FetchResponse | None:
    ctx.clear_sent()
    ctx.deliver(
        ctx.fetch_request(replica=replica, fetch_offset=offset, last_fetched_epoch=epoch, **kw),
        source=replica,
    )
    responses = [
        m.message
        for m in ctx.sent
        if isinstance(m, OutboundResponse) and isinstance(m.message, FetchResponse)
    ]
    return responses[-1] if responses else None


def test_begin_quorum_epoch_goes_to_every_voter_until_it_fetches() -> None:
    """A leader resends BeginQuorumEpoch every fetch.timeout.ms / 2 to voters
    that have not fetched in that time."""
    ctx = RaftTestContext(local_id=1).with_log((1, 3)).start()
    # Win the election, keeping the sends of the new leader.
    ctx.advance(2 * ctx.config.election_timeout_ms)
    [pre] = ctx.assert_sent(type(ctx.vote_request(candidate=1, epoch=0)), destination=2, pre_vote=True)
    ctx.respond(pre, ctx.vote_response(granted=True, epoch=ctx.epoch))
    [vote] = ctx.assert_sent(type(pre.message), destination=2, pre_vote=False)
    ctx.clear_sent()
    ctx.respond(vote, ctx.vote_response(granted=True, epoch=ctx.epoch))
    assert isinstance(ctx.role, Leader)
    epoch = ctx.epoch
    ctx.assert_sent(BeginQuorumEpochRequest, destination=2, epoch=epoch, leader_id=1)
    ctx.assert_sent(BeginQuorumEpochRequest, destination=3, epoch=epoch, leader_id=1)
    ctx.clear_sent()
    # Over the next resend periods voter 2 fetches every 250 ms, voter 3 never.
    for _ in range(8):
        ctx.advance(ctx.config.fetch_timeout_ms // 8)
        fetch(ctx, 2, ctx.log.end_offset, epoch)
    ctx.clear_sent()
    for _ in range(8):
        ctx.advance(ctx.config.fetch_timeout_ms // 8)
        fetch(ctx, 2, ctx.log.end_offset, epoch)
    resent = [m for r in ctx.readies[-16:] for m in r.send if isinstance(m.message, BeginQuorumEpochRequest)]
    assert {m.destination for m in resent} == {3}
    assert len(resent) == 2  # once per fetch.timeout.ms / 2


def test_the_high_watermark_waits_for_a_majority_past_the_epoch_start() -> None:
    """KIP-595: a new leader commits nothing until a record of its own epoch
    reached a majority; then the high watermark is the majority offset."""
    ctx = leader()
    epoch = ctx.epoch
    end = ctx.log.end_offset  # 3 old records + the LeaderChangeMessage
    assert end == 4 and ctx.raft.high_watermark is None
    response = fetch(ctx, 2, 3, 1)  # voter 2 has the old records only
    assert response is not None and response.high_watermark == -1
    assert ctx.raft.high_watermark is None  # 3 is the epoch start, not past it
    response = fetch(ctx, 2, 4, epoch)
    assert ctx.raft.high_watermark == 4 and ctx.committed == 4
    assert response is not None and response.high_watermark == 4


def test_the_high_watermark_never_decreases() -> None:
    ctx = leader()
    epoch = ctx.epoch
    fetch(ctx, 2, 4, epoch)
    assert ctx.raft.high_watermark == 4
    fetch(ctx, 2, 2, 1)  # a stale, reordered fetch from the same voter
    assert ctx.raft.high_watermark == 4


def test_an_observer_does_not_count_towards_the_high_watermark() -> None:
    ctx = leader()
    fetch(ctx, 9, 4, ctx.epoch)  # node 9 is not a voter
    assert ctx.raft.high_watermark is None


def test_answers_a_fetch_with_the_records_after_the_fetch_offset() -> None:
    ctx = leader(log=((1, 3), (2, 2)))
    response = fetch(ctx, 2, 3, 1)
    assert response is not None and response.partition_error is Errors.NONE
    batches = decode_batches(response.records)
    assert batches[0].base_offset == 3 and batches[0].epoch == 2


def test_a_fetch_beyond_the_log_end_is_answered_with_a_diverging_epoch() -> None:
    ctx = leader()
    epoch = ctx.epoch
    response = fetch(ctx, 2, 1000, epoch)
    assert response is not None and response.diverging_epoch == OffsetAndEpoch(4, epoch)


def test_a_fetch_below_the_log_start_is_told_to_fetch_the_snapshot() -> None:
    ctx = RaftTestContext(local_id=1).with_log((1, 3), (2, 3)).start()
    ctx.elect_local()
    fetch(ctx, 2, ctx.log.end_offset, ctx.epoch)
    fetch(ctx, 3, ctx.log.end_offset, ctx.epoch)
    ctx.raft.validate_snapshot_id(OffsetAndEpoch(6, 2))
    ctx.log.create_snapshot(OffsetAndEpoch(6, 2))
    ctx.log.delete_before_snapshot(OffsetAndEpoch(6, 2))
    response = fetch(ctx, 3, 2, 1)
    assert response is not None and response.snapshot_id == OffsetAndEpoch(6, 2)
    # An empty follower always gets the snapshot.
    response = fetch(ctx, 3, 0, 0)
    assert response is not None and response.snapshot_id == OffsetAndEpoch(6, 2)


def test_a_caught_up_fetch_waits_for_new_data() -> None:
    """Long poll: a fetch at the log end is held up to max_wait_ms and answered
    as soon as new records are written."""
    ctx = leader()
    epoch = ctx.epoch
    fetch(ctx, 2, 4, epoch)  # high watermark 4
    assert fetch(ctx, 2, 4, epoch, max_wait_ms=500, high_watermark=4) is None  # parked
    ctx.raft.append(ctx.now_ms, [b"x"])
    ctx.poll()
    ctx.advance(ctx.config.append_linger_ms)
    responses = [m.message for m in ctx.sent if isinstance(m.message, FetchResponse)]
    assert len(responses) == 1 and decode_batches(responses[0].records)[0].records == (b"x",)


def test_a_parked_fetch_is_answered_when_the_high_watermark_moves() -> None:
    ctx = leader([1, 2, 3, 4, 5])
    epoch = ctx.epoch
    # Voter 3 is caught up and waits; then voter 2's fetch makes a majority.
    assert fetch(ctx, 3, 4, epoch, max_wait_ms=500) is None
    response = fetch(ctx, 2, 4, epoch)
    assert response is not None and response.high_watermark == 4
    to_3 = [m.message for m in ctx.sent if m.destination == 3 and isinstance(m.message, FetchResponse)]
    assert len(to_3) == 1 and to_3[0].high_watermark == 4


def test_an_idle_parked_fetch_is_answered_after_max_wait() -> None:
    ctx = leader()
    epoch = ctx.epoch
    fetch(ctx, 2, 4, epoch)
    assert fetch(ctx, 2, 4, epoch, max_wait_ms=500, high_watermark=4) is None
    ctx.advance(499)
    assert not ctx.find_sent(FetchResponse)
    ctx.advance(1)
    [response] = ctx.find_sent(FetchResponse)
    assert response.message.records == b"" and response.message.high_watermark == 4


def test_appends_linger_and_are_batched() -> None:
    """controller.quorum.append.linger.ms: records wait, then go out as one batch."""
    ctx = leader([1])
    start = ctx.log.end_offset
    assert ctx.raft.append(ctx.now_ms, [b"a"]) == start
    ctx.poll()
    ctx.advance(10)
    assert ctx.raft.append(ctx.now_ms, [b"b", b"c"]) == start + 2
    ready = ctx.poll()
    assert not ready.log  # still lingering
    ctx.advance(ctx.config.append_linger_ms - 10)
    appends = [op for r in ctx.readies for op in r.log if isinstance(op, AppendAsLeader)]
    assert appends[-1].batch.records == (b"a", b"b", b"c") and appends[-1].batch.base_offset == start


def test_the_leader_counts_its_records_only_after_they_are_flushed() -> None:
    """Records are written, served, then fsynced (three Readys, each asking to
    be polled again at once); the leader's own end offset moves (and with it,
    for a sole voter, the high watermark) only on the call after the Flush."""
    ctx = leader([1])
    offset = ctx.raft.append(ctx.now_ms, [b"a"])
    ctx.poll()  # the shell polls after appending: the linger timer is armed
    ctx.advance(ctx.config.append_linger_ms)
    i = max(i for i, r in enumerate(ctx.readies) if any(isinstance(op, AppendAsLeader) for op in r.log))
    write, serve, flush, count = ctx.readies[i:i + 4]
    assert not any(isinstance(op, Flush) for op in write.log)
    assert serve.log == [] and flush.log == [Flush()]
    for ready in (write, serve, flush):
        assert ready.committed is None and ready.next_deadline_ms == ctx.now_ms
    assert count.committed == offset + 1 and ctx.committed == offset + 1


def test_parked_fetches_get_new_records_before_the_leader_flushes() -> None:
    """Kafka's flushLeaderLog moves the end offset before the fsync "so that
    parked fetches can return sooner": the records go out in the Ready after
    the write, the Flush comes in the one after that, and the leader's own
    copy counts towards the high watermark only once it is flushed."""
    ctx = leader()
    epoch = ctx.epoch
    fetch(ctx, 2, 4, epoch)  # high watermark 4
    assert fetch(ctx, 2, 4, epoch, max_wait_ms=500, high_watermark=4) is None  # parked
    ctx.raft.append(ctx.now_ms, [b"x"])
    ctx.poll()
    ctx.advance(ctx.config.append_linger_ms)
    i = max(i for i, r in enumerate(ctx.readies) if any(isinstance(op, AppendAsLeader) for op in r.log))
    serve, flush = ctx.readies[i + 1], ctx.readies[i + 2]
    [answer] = [m.message for m in serve.send if isinstance(m.message, FetchResponse)]
    assert decode_batches(answer.records)[0].records == (b"x",)
    assert flush.log == [Flush()] and not flush.send
    # Voter 2 has it durably; with the leader's flushed copy that is a majority.
    assert fetch(ctx, 2, 5, epoch).high_watermark == 5


def test_a_leader_with_unflushed_records_flushes_them_when_it_steps_down() -> None:
    """A former leader's next Fetch tells the new leader its log end, so the
    records it wrote but had not flushed yet must be fsynced first."""
    ctx = leader()
    epoch = ctx.epoch
    ctx.raft.append(ctx.now_ms, [b"x"])
    ctx.poll()
    ctx.now_ms += ctx.config.append_linger_ms
    write = ctx.raft.poll(ctx.now_ms)
    assert any(isinstance(op, AppendAsLeader) for op in write.log) and Flush() not in write.log
    for op in write.log:
        ctx.log.apply(op)
    ready = ctx.deliver(ctx.vote_request(candidate=2, epoch=epoch + 1, last_offset=5, last_epoch=epoch),
                        source=2)
    assert not isinstance(ctx.role, Leader)
    assert Flush() in ready.log


def test_only_the_leader_accepts_appends() -> None:
    ctx = RaftTestContext().start()
    with pytest.raises(NotLeaderError):
        ctx.raft.append(0, [b"x"])
    ctx = leader()
    with pytest.raises(NotLeaderError):
        ctx.raft.append(ctx.now_ms, [b"x"], epoch=ctx.epoch - 1)


def test_check_quorum_resigns_a_leader_cut_off_from_the_majority() -> None:
    """A leader not fetched from by a majority for 1.5 x fetch.timeout.ms
    resigns and tells the voters, most caught-up first."""
    ctx = leader([1, 2, 3, 4, 5])
    epoch = ctx.epoch
    fetch(ctx, 4, 4, epoch)
    fetch(ctx, 3, 2, 1)
    ctx.clear_sent()
    ctx.advance(int(ctx.config.fetch_timeout_ms * 1.5) - 1)
    assert isinstance(ctx.role, Leader)
    ctx.advance(1)
    assert isinstance(ctx.role, Resigned) and ctx.epoch == epoch
    [end] = ctx.assert_sent(EndQuorumEpochRequest, destination=2, epoch=epoch)
    assert end.message.preferred_candidates == (ReplicaKey(4), ReplicaKey(3), ReplicaKey(2), ReplicaKey(5))


def test_fetches_from_a_majority_keep_it_leader() -> None:
    ctx = leader()
    for _ in range(10):
        ctx.advance(ctx.config.fetch_timeout_ms // 2)
        fetch(ctx, 2, ctx.log.end_offset, ctx.epoch)
    assert isinstance(ctx.role, Leader)


def test_a_leader_grants_no_vote() -> None:
    ctx = leader()
    ctx.deliver(ctx.vote_request(candidate=2, epoch=ctx.epoch, pre_vote=True), source=2)
    assert not ctx.assert_response(VoteResponse).vote_granted


def test_graceful_shutdown_completes_once_another_leader_is_known() -> None:
    ctx = leader()
    epoch = ctx.epoch
    ready = ctx.raft.begin_shutdown(ctx.now_ms, 5000)
    ctx._apply(ready)
    assert isinstance(ctx.role, Resigned) and ready.shutdown is None
    [end] = ctx.assert_sent(EndQuorumEpochRequest, destination=2)
    ready = ctx.respond(end, ctx.end_quorum_epoch_response(epoch=epoch + 1, leader=2))
    assert ready.shutdown is not None and ready.shutdown.completed
