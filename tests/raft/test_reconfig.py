"""KIP-853 dynamic quorums in the raft core: the voter set from the log, and
AddRaftVoter / RemoveRaftVoter / UpdateRaftVoter at the leader (Kafka's
AddVoterHandler, RemoveVoterHandler, UpdateVoterHandler)."""

from __future__ import annotations

import pytest

from kraft.raft.errors import Errors, LocalRaftError, NotLeaderError
from kraft.raft.rpcs import AddRaftVoterRequest, AddRaftVoterResponse, ApiVersionsRequest, EndQuorumEpochRequest, FetchRequest, RemoveRaftVoterRequest, RemoveRaftVoterResponse, UpdateRaftVoterRequest, UpdateRaftVoterResponse, VoteRequest, VoteResponse
from kraft.raft.logops import AppendAsLeader, KRaftVersionControl, LeaderChangeMessage, VotersControl
from kraft.records.view import OffsetAndEpoch
from kraft.raft.roles import Leader, Resigned
from kraft.raft.voters import Endpoint, ReplicaKey, VoterNode, VoterSet
from tests.harness.raft_context import RaftTestContext


def leader_of(voters: list[int], **options: object) -> RaftTestContext:
    """Replica 1, elected leader of a dynamic quorum, its epoch committed."""
    ctx = RaftTestContext(local_id=1, voters=voters, dynamic=True, **options).start()  # type: ignore[arg-type]
    ctx.elect_local()
    for peer in voters[1: len(voters) // 2 + 1]:
        ctx.catch_up(peer)
    assert ctx.raft.high_watermark is not None, "the leader's epoch should be committed"
    ctx.clear_sent()
    return ctx


def follow(ctx: RaftTestContext, *, leader: int, epoch: int) -> None:
    """A BeginQuorumEpoch from ``leader``; the first Fetch stays in ``ctx.sent``."""
    ctx.clear_sent()
    ctx.deliver(ctx.begin_quorum_epoch(leader=leader, epoch=epoch), source=leader)


def appended_controls(ctx: RaftTestContext) -> list[object]:
    return [c for ready in ctx.readies for op in ready.log if isinstance(op, AppendAsLeader) for c in op.batch.controls]


def add_voter(ctx: RaftTestContext, node_id: int, *, disk: int = 0) -> None:
    """AddRaftVoter for a caught-up observer, answered through ApiVersions."""
    ctx.catch_up(node_id, disk=disk)
    ctx.clear_sent()
    ctx.deliver(ctx.add_voter_request(node_id, disk=disk), source=-1)
    [api_versions] = ctx.assert_sent(ApiVersionsRequest, destination=node_id)
    ctx.respond(api_versions, ctx.api_versions_response())


# --- the voter set comes from the log ----------------------------------------------


def test_the_first_leader_writes_the_bootstrap_voter_set_to_the_log() -> None:
    """KIP-853: the voter set of the bootstrap checkpoint (offset -1) is not
    replicated, so the first leader writes KRaftVersion and Voters records
    in the batch of its LeaderChangeMessage (Kafka's
    appendStartOfEpochControlRecords)."""
    ctx = RaftTestContext(local_id=1, voters=[1], dynamic=True).start()
    assert isinstance(ctx.role, Leader)
    [leader_change, version, voters] = appended_controls(ctx)
    assert isinstance(leader_change, LeaderChangeMessage)
    assert version == KRaftVersionControl(1)
    assert isinstance(voters, VotersControl) and voters.voters == ctx.voters.to_entries()
    assert ctx.log.kraft_control_state().voters.offset == 2
    assert ctx.raft.voters_offset == 2


def test_a_later_leader_does_not_rewrite_an_unchanged_voter_set() -> None:
    ctx = leader_of([1, 2, 3])
    first = appended_controls(ctx)
    assert any(isinstance(c, VotersControl) for c in first)
    ctx.raft.resign(ctx.epoch)
    ctx.advance(10 * ctx.config.election_timeout_ms)
    ctx.clear_sent()
    ctx.readies.clear()
    ctx.elect_local()
    assert not any(isinstance(c, VotersControl) for c in appended_controls(ctx))


def test_a_follower_uses_an_uncommitted_voters_record_and_reverts_it_when_truncated() -> None:
    """KIP-853: replicas act on a VotersRecord as soon as it is in their log;
    a truncation below it reverts the voter set."""
    ctx = RaftTestContext(local_id=2, voters=[1, 2, 3], dynamic=True).start()
    follow(ctx, leader=1, epoch=1)
    bigger = ctx.voters.add_voter(VoterNode(ctx.key(4), ctx.endpoints(4), (0, 1)))
    assert bigger is not None
    [fetch] = ctx.assert_sent(FetchRequest, destination=1)
    ctx.clear_sent()
    ctx.respond(fetch, ctx.fetch_response_with(leader=1, epoch=1, batches=[ctx.voters_batch(0, 1, bigger)]))
    assert ctx.raft.voters == bigger and ctx.raft.voters_offset == 0
    # A new leader of epoch 2 never had that record: it tells us to truncate.
    follow(ctx, leader=3, epoch=2)
    [fetch] = ctx.assert_sent(FetchRequest, destination=3)
    ctx.clear_sent()
    ctx.respond(fetch, ctx.fetch_response(leader=3, epoch=2, diverging_epoch=OffsetAndEpoch(0, 0)))
    assert ctx.log.end_offset == 0
    assert ctx.raft.voters.voter_ids == (1, 2, 3) and ctx.raft.voters_offset == -1


def test_an_observer_becomes_a_voter_when_its_voters_record_arrives() -> None:
    ctx = RaftTestContext(local_id=4, voters=[1, 2, 3], dynamic=True).start()
    assert ctx.raft.quorum.is_observer
    follow(ctx, leader=1, epoch=1)
    bigger = ctx.voters.add_voter(VoterNode(ctx.key(4), ctx.endpoints(4), (0, 1)))
    assert bigger is not None
    [fetch] = ctx.assert_sent(FetchRequest, destination=1)
    ctx.clear_sent()
    ctx.respond(fetch, ctx.fetch_response_with(leader=1, epoch=1, batches=[ctx.voters_batch(0, 1, bigger)]))
    assert ctx.raft.quorum.is_voter
    # Now a voter: it starts an election when the leader goes quiet.
    ctx.advance(3 * ctx.config.fetch_timeout_ms)
    assert ctx.find_sent(VoteRequest, pre_vote=True), "a new voter campaigns when the leader is gone"


def test_a_voter_that_lacks_the_record_still_votes_in_a_dynamic_quorum() -> None:
    """KIP-853 (Kafka 4.x): membership is not checked on Vote; a voter just
    added may not have the record that made it one."""
    ctx = RaftTestContext(local_id=4, voters=[1, 2, 3], dynamic=True).start()
    vote = VoteRequest(
        cluster_id="test-cluster-AAAAAAAAAA",
        voter_key=ctx.key(4),
        candidate_epoch=2,
        candidate_key=ctx.key(2),
        last_offset_epoch=0,
        last_offset=0,
    )
    ctx.deliver(vote, source=2)
    answer = ctx.assert_response(VoteResponse)
    assert answer.partition_error is Errors.NONE and answer.vote_granted
    assert ctx.persisted is not None and ctx.persisted.voted_key == ctx.key(2)


# --- AddRaftVoter ---------------------------------------------------------------------


def test_add_voter_asks_api_versions_then_commits_under_the_new_majority() -> None:
    ctx = leader_of([1, 2, 3])
    add_voter(ctx, 4)
    assert ctx.raft.voters.voter_ids == (1, 2, 3, 4)
    controls = [c for c in appended_controls(ctx) if isinstance(c, VotersControl)]
    assert [v.voter_id for v in controls[-1].voters] == [1, 2, 3, 4]
    offset = ctx.raft.voters_offset
    assert offset is not None
    # The old majority (1, 2) is not enough any more: 3 of 4 are needed.
    ctx.catch_up(2)
    assert not ctx.find_sent(AddRaftVoterResponse)
    assert (ctx.raft.high_watermark or 0) <= offset
    ctx.catch_up(4)
    answer = ctx.assert_response(AddRaftVoterResponse)
    assert answer.error is Errors.NONE
    assert ctx.raft.high_watermark is not None and ctx.raft.high_watermark > offset


def test_add_voter_is_refused_until_the_leader_commits_its_epoch() -> None:
    ctx = RaftTestContext(local_id=1, voters=[1, 2, 3], dynamic=True).start().elect_local()
    ctx.deliver(ctx.add_voter_request(4), source=-1)
    answer = ctx.assert_response(AddRaftVoterResponse)
    assert answer.error is Errors.REQUEST_TIMED_OUT and "HWM" in (answer.error_message or "")


def test_add_voter_refuses_a_voter_id_already_in_the_set() -> None:
    ctx = leader_of([1, 2, 3])
    ctx.deliver(ctx.add_voter_request(2, disk=1), source=-1)
    assert ctx.assert_response(AddRaftVoterResponse).error is Errors.DUPLICATE_VOTER


def test_add_voter_refuses_a_replica_that_is_not_caught_up() -> None:
    ctx = leader_of([1, 2, 3])
    ctx.deliver(ctx.add_voter_request(4), source=-1)
    [api_versions] = ctx.assert_sent(ApiVersionsRequest, destination=4)
    ctx.respond(api_versions, ctx.api_versions_response())
    answer = ctx.assert_response(AddRaftVoterResponse)
    assert answer.error is Errors.REQUEST_TIMED_OUT and "lagging" in (answer.error_message or "")
    assert ctx.raft.voters.voter_ids == (1, 2, 3)


def test_add_voter_refuses_a_replica_without_kraft_version_1() -> None:
    ctx = leader_of([1, 2, 3])
    ctx.catch_up(4)
    ctx.clear_sent()
    ctx.deliver(ctx.add_voter_request(4), source=-1)
    [api_versions] = ctx.assert_sent(ApiVersionsRequest, destination=4)
    ctx.respond(api_versions, ctx.api_versions_response(versions=(0, 0)))
    assert ctx.assert_response(AddRaftVoterResponse).error is Errors.INVALID_REQUEST


def test_add_voter_times_out_if_the_new_voter_does_not_answer() -> None:
    ctx = leader_of([1, 2, 3])
    ctx.catch_up(4)
    ctx.clear_sent()
    ctx.deliver(ctx.add_voter_request(4), source=-1)
    ctx.advance(ctx.config.request_timeout_ms + 1)
    assert ctx.assert_response(AddRaftVoterResponse).error is Errors.REQUEST_TIMED_OUT
    assert ctx.raft.voters.voter_ids == (1, 2, 3)


def test_one_voter_change_at_a_time() -> None:
    ctx = leader_of([1, 2, 3])
    add_voter(ctx, 4)
    ctx.clear_sent()
    ctx.deliver(ctx.remove_voter_request(3), source=-1)
    answer = ctx.assert_response(RemoveRaftVoterResponse)
    assert answer.error is Errors.REQUEST_TIMED_OUT and "previous voter change" in (answer.error_message or "")


def test_add_voter_needs_a_directory_id_and_the_default_listener() -> None:
    ctx = leader_of([1, 2, 3])
    no_directory = AddRaftVoterRequest(
        cluster_id="test-cluster-AAAAAAAAAA", voter_key=ReplicaKey(4), listeners=ctx.endpoints(4)
    )
    ctx.deliver(no_directory, source=-1)
    assert ctx.assert_response(AddRaftVoterResponse).error is Errors.INVALID_REQUEST
    ctx.clear_sent()
    ctx.deliver(ctx.add_voter_request(4, listeners=(Endpoint("OTHER", "h", 1),)), source=-1)
    assert ctx.assert_response(AddRaftVoterResponse).error is Errors.INVALID_REQUEST


def test_voter_changes_go_to_the_leader_of_the_right_cluster() -> None:
    follower = RaftTestContext(local_id=2, voters=[1, 2, 3], dynamic=True).start().follow(leader=1, epoch=1)
    follower.deliver(follower.add_voter_request(4), source=-1)
    assert follower.assert_response(AddRaftVoterResponse).error is Errors.NOT_LEADER_OR_FOLLOWER
    ctx = leader_of([1, 2, 3])
    ctx.deliver(ctx.remove_voter_request(3, cluster_id="another-cluster"), source=-1)
    assert ctx.assert_response(RemoveRaftVoterResponse).error is Errors.INCONSISTENT_CLUSTER_ID


def test_a_static_quorum_does_not_support_voter_changes() -> None:
    ctx = RaftTestContext(local_id=1, voters=[1]).start()
    assert isinstance(ctx.role, Leader) and ctx.raft.high_watermark is not None
    request = AddRaftVoterRequest(
        cluster_id="test-cluster-AAAAAAAAAA",
        voter_key=ReplicaKey(4, RaftTestContext.directory_id(4)),
        listeners=ctx.endpoints(4),
    )
    ctx.deliver(request, source=-1)
    assert ctx.assert_response(AddRaftVoterResponse).error is Errors.UNSUPPORTED_VERSION


# --- RemoveRaftVoter ------------------------------------------------------------------


def test_remove_voter_commits_under_the_new_majority() -> None:
    ctx = leader_of([1, 2, 3])
    ctx.deliver(ctx.remove_voter_request(3), source=-1)
    assert ctx.raft.voters.voter_ids == (1, 2)
    offset = ctx.raft.voters_offset
    assert offset is not None
    assert not ctx.find_sent(RemoveRaftVoterResponse)
    ctx.catch_up(2)
    assert ctx.assert_response(RemoveRaftVoterResponse).error is Errors.NONE
    assert ctx.raft.high_watermark is not None and ctx.raft.high_watermark > offset


def test_remove_voter_needs_the_exact_directory_id() -> None:
    ctx = leader_of([1, 2, 3])
    ctx.deliver(ctx.remove_voter_request(3, disk=7), source=-1)
    assert ctx.assert_response(RemoveRaftVoterResponse).error is Errors.VOTER_NOT_FOUND
    ctx.clear_sent()
    ctx.deliver(ctx.remove_voter_request(9), source=-1)
    assert ctx.assert_response(RemoveRaftVoterResponse).error is Errors.VOTER_NOT_FOUND


def test_the_last_voter_is_never_removed() -> None:
    ctx = RaftTestContext(local_id=1, voters=[1], dynamic=True).start()
    assert ctx.raft.high_watermark is not None
    ctx.deliver(ctx.remove_voter_request(1), source=-1)
    answer = ctx.assert_response(RemoveRaftVoterResponse)
    assert answer.error is Errors.INVALID_REQUEST and "only voter" in (answer.error_message or "")
    assert isinstance(ctx.role, Leader)


def test_a_removed_leader_serves_fetches_does_not_count_itself_and_resigns_once_committed() -> None:
    """KIP-853: the leader removed from the voter set keeps serving Fetch
    until the removal commits -- counted by the remaining voters only -- and
    then resigns (EndQuorumEpoch)."""
    ctx = leader_of([1, 2, 3])
    ctx.deliver(ctx.remove_voter_request(1), source=-1)
    assert ctx.raft.voters.voter_ids == (2, 3) and isinstance(ctx.role, Leader)
    offset = ctx.raft.voters_offset
    assert offset is not None
    ctx.catch_up(2)  # one of two new voters: not a majority without the leader
    assert isinstance(ctx.role, Leader) and not ctx.find_sent(RemoveRaftVoterResponse)
    assert ctx.raft.high_watermark is not None and ctx.raft.high_watermark <= offset
    ctx.catch_up(3)
    assert ctx.assert_response(RemoveRaftVoterResponse).error is Errors.NONE
    assert isinstance(ctx.role, Resigned)
    ctx.assert_sent(EndQuorumEpochRequest, destination=2)
    ctx.assert_sent(EndQuorumEpochRequest, destination=3)


# --- UpdateRaftVoter --------------------------------------------------------------------


def test_update_voter_records_new_listeners_and_answers_at_once() -> None:
    ctx = leader_of([1, 2, 3])
    ctx.deliver(ctx.update_voter_request(2, port=19093), source=2)
    assert ctx.assert_response(UpdateRaftVoterResponse).error is Errors.NONE
    assert ctx.raft.voters.endpoints(2) == ctx.endpoints(2, 19093)


def test_update_voter_for_an_unknown_voter_is_voter_not_found() -> None:
    ctx = leader_of([1, 2, 3])
    ctx.deliver(ctx.update_voter_request(7), source=7)
    assert ctx.assert_response(UpdateRaftVoterResponse).error is Errors.VOTER_NOT_FOUND


def test_a_follower_sends_update_voter_when_its_listeners_changed() -> None:
    ctx = RaftTestContext(local_id=2, voters=[1, 2, 3], dynamic=True)
    stale = ctx.voters.update_voter(VoterNode(ctx.key(2), ctx.endpoints(2, 1111), (0, 1)))
    assert stale is not None
    ctx.log.bootstrap(stale.to_entries())
    follow(ctx.start(), leader=1, epoch=1)
    [update] = ctx.assert_sent(UpdateRaftVoterRequest, destination=1)
    assert update.message.listeners == ctx.endpoints(2)
    ctx.clear_sent()
    ctx.respond(update, UpdateRaftVoterResponse(leader_id=1, leader_epoch=1, leader_endpoints=ctx.endpoints(1)))
    # Told once per leader: then back to fetching.
    ctx.assert_sent(FetchRequest, destination=1)
    ctx.advance(3 * ctx.config.fetch_timeout_ms // 4)
    ctx.assert_not_sent(UpdateRaftVoterRequest)


# --- auto-join -----------------------------------------------------------------------------


def observer_following_leader(auto_join: bool, voters: VoterSet | None = None) -> RaftTestContext:
    ctx = RaftTestContext(local_id=4, voters=[1, 2, 3], dynamic=True, auto_join=auto_join)
    if voters is not None:
        ctx.log.bootstrap(voters.to_entries())
    follow(ctx.start(), leader=1, epoch=1)
    [fetch] = ctx.assert_sent(FetchRequest, destination=1)
    ctx.clear_sent()
    ctx.respond(fetch, ctx.fetch_response(leader=1, epoch=1, records=[(0, 1, 2)], high_watermark=2))
    ctx.advance(1)
    return ctx


def test_an_observer_with_auto_join_adds_itself_once_caught_up() -> None:
    ctx = observer_following_leader(auto_join=True)
    [add] = ctx.assert_sent(AddRaftVoterRequest, destination=1)
    assert add.message.voter_key == ctx.key(4) and add.message.ack_when_committed is False


def test_an_observer_without_auto_join_stays_an_observer() -> None:
    ctx = observer_following_leader(auto_join=False)
    ctx.assert_not_sent(AddRaftVoterRequest)


def test_auto_join_first_removes_a_stale_voter_with_its_id() -> None:
    """KIP-853: a replica whose disk was replaced (new directory id) finds its
    id in the voter set with the old directory id; it removes that entry."""
    base = RaftTestContext(dynamic=True)
    stale = VoterSet.of(
        [VoterNode(base.key(i), base.endpoints(i), (0, 1)) for i in (1, 2, 3)]
        + [VoterNode(base.key(4, disk=1), base.endpoints(4), (0, 1))]
    )
    ctx = observer_following_leader(auto_join=True, voters=stale)
    [remove] = ctx.assert_sent(RemoveRaftVoterRequest, destination=1)
    assert remove.message.voter_key == base.key(4, disk=1)


# --- kraft.version upgrade ----------------------------------------------------------------


def test_kraft_version_upgrade_needs_every_directory_id() -> None:
    ctx = RaftTestContext(local_id=1, voters=[1, 2, 3]).start().elect_local()
    with pytest.raises(LocalRaftError):
        ctx.raft.upgrade_kraft_version(ctx.now_ms, 1)
    follower = RaftTestContext(local_id=2, voters=[1, 2, 3]).start().follow(leader=1, epoch=1)
    with pytest.raises(NotLeaderError):
        follower.raft.upgrade_kraft_version(follower.now_ms, 1)


def test_kraft_version_upgrade_once_every_voter_sent_its_directory_id() -> None:
    """Kafka 4.x: under kraft.version 0 voters send UpdateRaftVoter; once the
    leader knows every directory id, 0 -> 1 appends KRaftVersion + Voters."""
    ctx = RaftTestContext(local_id=1, voters=[1, 2, 3])
    ctx.dynamic = True  # identities with directory ids, a static voter set
    ctx.start()
    ctx.elect_local()
    for peer in (2, 3):
        ctx.catch_up(peer)
    with pytest.raises(LocalRaftError, match="not all of the voters support it"):
        ctx.raft.upgrade_kraft_version(ctx.now_ms, 1)
    for peer in (2, 3):
        ctx.deliver(ctx.update_voter_request(peer), source=peer)
        assert ctx.assert_response(UpdateRaftVoterResponse).error is Errors.NONE
        ctx.clear_sent()
    assert ctx.raft.upgrade_kraft_version(ctx.now_ms, 1, validate_only=True)
    assert ctx.raft.kraft_version == 0
    assert ctx.raft.upgrade_kraft_version(ctx.now_ms, 1)
    ctx.poll()
    assert ctx.raft.kraft_version == 1
    assert [v.directory_id for v in ctx.raft.voters.voter_keys] == [ctx.directory_id(i) for i in (1, 2, 3)]
    assert not ctx.raft.upgrade_kraft_version(ctx.now_ms, 1)  # already finalized
