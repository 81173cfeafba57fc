"""The kraft.version 0 -> 1 upgrade at the leader (KIP-853; Kafka's
``LeaderState.maybeAppendUpgradedKRaftVersion`` and ``KRaftVersionUpgrade``),
sans-IO: the checks in their order, the one control batch it appends, and a
static quorum that takes AddRaftVoter only once upgraded."""

from __future__ import annotations

import pytest

from kraft.raft.errors import Errors, LocalRaftError, NotLeaderError
from kraft.raft.rpcs import AddRaftVoterResponse, ApiVersionsRequest, UpdateRaftVoterResponse
from kraft.raft.kraft_version import InvalidUpdateVersionError, check_upgrade, level_name, voters_not_supporting
from kraft.raft.logops import AppendAsLeader, KRaftVersionControl, LeaderChangeMessage, VotersControl
from kraft.raft.voters import ReplicaKey, VoterNode, VoterSet
from tests.harness.raft_context import RaftTestContext

# --- the checks (pure) --------------------------------------------------------------------------


def _voters(supported: dict[int, tuple[int, int]], *, directory: bool = True) -> VoterSet:
    return VoterSet.of(
        VoterNode(ReplicaKey(i, RaftTestContext.directory_id(i) if directory else None),
                  RaftTestContext.endpoints(i), r)
        for i, r in supported.items())


STATIC = VoterSet.from_ids([1, 2, 3])
ALL_SUPPORT = _voters({1: (0, 1), 2: (0, 1), 3: (0, 1)})


def check(**overrides: object) -> bool:
    arguments: dict[str, object] = dict(new_level=1, finalized_level=0, pending_level=None,
                                        upgrade_voters=ALL_SUPPORT, voters=STATIC)
    arguments.update(overrides)
    return check_upgrade(**arguments)  # type: ignore[arg-type]


def test_levels_print_as_kafkas_enum_constants() -> None:
    assert level_name(0) == "KRAFT_VERSION_0" and level_name(1) == "KRAFT_VERSION_1"


def test_every_voter_supporting_it_with_a_directory_id_admits_the_upgrade() -> None:
    assert check() is True


def test_the_finalized_level_again_is_a_no_op() -> None:
    assert check(finalized_level=1, upgrade_voters=None) is False


def test_an_upgrade_already_appended_is_a_no_op_and_another_level_is_refused() -> None:
    assert check(pending_level=1) is False
    with pytest.raises(InvalidUpdateVersionError,
                       match="^Invalid concurrent upgrade of kraft.version from version KRAFT_VERSION_1 to "
                             "KRAFT_VERSION_0$"):
        check(pending_level=1, new_level=0)


def test_a_downgrade_is_refused() -> None:
    with pytest.raises(InvalidUpdateVersionError,
                       match="^Invalid upgrade of kraft.version from version KRAFT_VERSION_1 to KRAFT_VERSION_0 "
                             "because the new version is a downgrade$"):
        check(new_level=0, finalized_level=1)


def test_without_the_upgrade_voters_there_is_nothing_to_upgrade_from() -> None:
    with pytest.raises(InvalidUpdateVersionError,
                       match="^Invalid upgrade of kraft.version from version KRAFT_VERSION_0 to KRAFT_VERSION_1$"):
        check(upgrade_voters=None)


def test_a_voter_that_does_not_support_level_1_refuses_it_with_kafkas_message() -> None:
    """A voter that has not sent UpdateRaftVoter keeps the static range (0, 0)."""
    some = _voters({1: (0, 1), 2: (0, 0), 3: (0, 1)})
    with pytest.raises(InvalidUpdateVersionError,
                       match="^Invalid upgrade of kraft.version to KRAFT_VERSION_1 because not all of the voters "
                             "support it$"):
        check(upgrade_voters=some)
    assert voters_not_supporting(some, 1) == [2]


def test_kafkas_impossible_states_are_local_errors_not_refusals() -> None:
    with pytest.raises(LocalRaftError, match="missing voters") as caught:
        check(upgrade_voters=_voters({1: (0, 1), 2: (0, 1)}))
    assert not isinstance(caught.value, InvalidUpdateVersionError)
    with pytest.raises(LocalRaftError, match="Directory id must be known") as caught:
        check(upgrade_voters=_voters({1: (0, 1), 2: (0, 1), 3: (0, 1)}, directory=False))
    assert not isinstance(caught.value, InvalidUpdateVersionError)


def test_the_checks_run_in_kafkas_order() -> None:
    """A pending upgrade answers before anything else; a downgrade before the
    voters are looked at."""
    assert check(pending_level=1, upgrade_voters=None) is False
    with pytest.raises(InvalidUpdateVersionError, match="downgrade"):
        check(new_level=0, finalized_level=1, upgrade_voters=_voters({1: (0, 0)}))


# --- the leader ---------------------------------------------------------------------------------


def static_leader() -> RaftTestContext:
    """Replica 1 leading a static quorum {1, 2, 3} (kraft.version 0) whose
    replicas have directory ids, its epoch committed."""
    ctx = RaftTestContext(local_id=1, voters=[1, 2, 3])
    ctx.dynamic = True  # identities with directory ids and listeners; the voter set stays static
    ctx.start()
    ctx.elect_local()
    for peer in (2, 3):
        ctx.catch_up(peer)
    assert ctx.raft.kraft_version == 0 and ctx.raft.high_watermark is not None
    ctx.clear_sent()
    return ctx


def announce(ctx: RaftTestContext, *peers: int, versions: tuple[int, int] = (0, 1)) -> None:
    """Each peer sends UpdateRaftVoter, as voters do once per leader epoch under kraft.version 0."""
    for peer in peers:
        ctx.deliver(ctx.update_voter_request(peer, versions=versions), source=peer)
        assert ctx.assert_response(UpdateRaftVoterResponse).error is Errors.NONE
        ctx.clear_sent()


def upgrade_batches(ctx: RaftTestContext) -> list[tuple[object, ...]]:
    return [op.batch.controls for ready in ctx.readies for op in ready.log
            if isinstance(op, AppendAsLeader) and any(isinstance(c, KRaftVersionControl) for c in op.batch.controls)]


def test_upgrade_appends_one_batch_with_the_version_and_the_static_voters_with_directory_ids() -> None:
    ctx = static_leader()
    announce(ctx, 2, 3)
    assert ctx.raft.upgrade_kraft_version(ctx.now_ms, 1)
    position = ctx.raft.pending_kraft_version_upgrade
    assert position is not None and position.epoch == ctx.epoch
    ctx.poll()
    [controls] = upgrade_batches(ctx)
    kraft, voters = controls
    assert kraft == KRaftVersionControl(1)
    assert isinstance(voters, VotersControl)
    written = VoterSet.from_entries(voters.voters)
    assert written.voter_ids == (1, 2, 3)
    assert [k.directory_id for k in written.voter_keys] == [ctx.directory_id(i) for i in (1, 2, 3)]
    assert [written.endpoints(i) for i in (1, 2, 3)] == [ctx.endpoints(i) for i in (1, 2, 3)]
    # The voters record is the last record of the batch: the position to wait for.
    assert position.offset == ctx.log.end_offset - 1
    assert ctx.raft.kraft_version == 1 and ctx.raft.voters_offset == position.offset


def test_asking_again_while_pending_or_after_is_a_no_op_with_the_same_position() -> None:
    ctx = static_leader()
    announce(ctx, 2, 3)
    assert ctx.raft.upgrade_kraft_version(ctx.now_ms, 1)
    position = ctx.raft.pending_kraft_version_upgrade
    assert not ctx.raft.upgrade_kraft_version(ctx.now_ms, 1)  # before the shell wrote it
    ctx.poll()
    assert not ctx.raft.upgrade_kraft_version(ctx.now_ms, 1)  # in the log, not yet committed
    assert ctx.raft.pending_kraft_version_upgrade == position
    assert len(upgrade_batches(ctx)) == 1


def test_validate_only_runs_the_checks_and_appends_nothing() -> None:
    ctx = static_leader()
    with pytest.raises(InvalidUpdateVersionError, match="not all of the voters support it"):
        ctx.raft.upgrade_kraft_version(ctx.now_ms, 1, validate_only=True)
    announce(ctx, 2, 3)
    end = ctx.log.end_offset
    assert ctx.raft.upgrade_kraft_version(ctx.now_ms, 1, validate_only=True)
    ctx.advance(ctx.config.append_linger_ms + 1)
    assert ctx.log.end_offset == end and ctx.raft.kraft_version == 0
    assert ctx.raft.pending_kraft_version_upgrade is None and upgrade_batches(ctx) == []


def test_a_voter_announcing_only_level_0_blocks_the_upgrade() -> None:
    ctx = static_leader()
    announce(ctx, 2)
    announce(ctx, 3, versions=(0, 0))
    with pytest.raises(InvalidUpdateVersionError):
        ctx.raft.upgrade_kraft_version(ctx.now_ms, 1)
    upgrade_voters = ctx.raft.upgrade_voters
    assert upgrade_voters is not None and voters_not_supporting(upgrade_voters, 1) == [3]


def test_only_the_leader_upgrades_and_a_new_leader_forgets_the_pending_upgrade() -> None:
    follower = RaftTestContext(local_id=2, voters=[1, 2, 3]).start().follow(leader=1, epoch=1)
    with pytest.raises(NotLeaderError):
        follower.raft.upgrade_kraft_version(follower.now_ms, 1)
    ctx = static_leader()
    announce(ctx, 2, 3)
    assert ctx.raft.upgrade_kraft_version(ctx.now_ms, 1)
    ctx.deliver(ctx.begin_quorum_epoch(leader=2, epoch=ctx.epoch + 1), source=2)
    assert ctx.raft.pending_kraft_version_upgrade is None
    with pytest.raises(NotLeaderError):
        ctx.raft.upgrade_kraft_version(ctx.now_ms, 1)


def test_a_new_leader_relearns_the_voters_before_it_can_upgrade() -> None:
    """The upgrade voters live in the leader's memory for its epoch only
    (Kafka's KRaftVersionUpgrade state): each leader hears every voter again."""
    ctx = static_leader()
    announce(ctx, 2)
    with pytest.raises(InvalidUpdateVersionError):
        ctx.raft.upgrade_kraft_version(ctx.now_ms, 1)
    announce(ctx, 3)
    assert ctx.raft.upgrade_kraft_version(ctx.now_ms, 1, validate_only=True)


def test_add_voter_is_refused_before_the_upgrade_and_admitted_once_it_committed() -> None:
    """KIP-853: AddRaftVoter needs kraft.version 1 (UNSUPPORTED_VERSION before)."""
    ctx = static_leader()
    ctx.catch_up(4)
    ctx.clear_sent()
    ctx.deliver(ctx.add_voter_request(4), source=-1)
    refused = ctx.assert_response(AddRaftVoterResponse)
    assert refused.error is Errors.UNSUPPORTED_VERSION
    assert refused.error_message == "Cluster doesn't support adding voter because the kraft.version feature is 0"
    ctx.clear_sent()
    announce(ctx, 2, 3)
    assert ctx.raft.upgrade_kraft_version(ctx.now_ms, 1)
    ctx.poll()
    position = ctx.raft.pending_kraft_version_upgrade
    assert position is not None
    for peer in (2, 3):
        ctx.catch_up(peer)
    assert ctx.raft.high_watermark is not None and ctx.raft.high_watermark > position.offset
    ctx.catch_up(4)
    ctx.clear_sent()
    ctx.deliver(ctx.add_voter_request(4), source=-1)
    [api_versions] = ctx.assert_sent(ApiVersionsRequest, destination=4)
    ctx.respond(api_versions, ctx.api_versions_response())
    ctx.poll()
    assert ctx.raft.voters.voter_ids == (1, 2, 3, 4)
    assert not any(isinstance(c, LeaderChangeMessage) for c in upgrade_batches(ctx)[0])
