"""AddRaftVoter, RemoveRaftVoter, UpdateRaftVoter (KIP-853) and the
kraft.version upgrade.

The leader side follows Kafka's ``AddVoterHandler``, ``RemoveVoterHandler``
and ``UpdateVoterHandler`` (admission rules in :mod:`kraft.raft.voter_changes`):
each RPC's module (``kraft/raft/rpcs/add_raft_voter_rpc.py``, ...) reads its
request and builds its answer, and calls the family's steps here, which
name no message class. The change in flight lives on the leader's
:class:`~kraft.raft.leader_state.LeaderState`, so it ends with the
leadership, and carries its RPC's answer. The follower side is
:mod:`kraft.raft.own_membership`.
"""

from __future__ import annotations

from kraft.raft import kraft_version as kraft_version_feature
from kraft.raft.errors import Errors, LocalRaftError, NotLeaderError
from kraft.raft.events import InboundRequest
from kraft.raft.families.common import MembershipContext, validate_leader_only
from kraft.raft.leader_state import LeaderState
from kraft.raft.logops import KRaftVersionControl, VotersControl
from kraft.raft.roles import Leader
from kraft.raft.voter_changes import Answer, PendingVoterChange, Refusal, admission_refusal
from kraft.raft.voters import Endpoints, ReplicaKey, VoterNode
from kraft.records.view import OffsetAndEpoch

#: Kafka's ``LeaderState.isReplicaCaughtUp``: an observer that fetched
#: within the last hour (and has caught up with the leader once) may be added.
ADD_VOTER_CAUGHT_UP_WINDOW_MS = 3_600_000


def finish_voter_change(
    ctx: MembershipContext, state: LeaderState, error: Errors, message: str | None = None
) -> None:
    """Answer the pending AddRaftVoter/RemoveRaftVoter and forget it
    (Kafka's ``LeaderState.resetAddVoterHandlerState``)."""
    pending, state.voter_change = state.voter_change, None
    if pending is None:
        return
    if message is None and error is not Errors.NONE:
        message = f"{pending.describe()} failed: {error.name}"
    ctx.respond(pending.request, pending.answer(error, message))


def admit(
    ctx: MembershipContext, cluster_id: str | None, epoch: int, key: ReplicaKey, listeners: Endpoints | None
) -> LeaderState | Refusal:
    """The checks Kafka's ``KafkaRaftClient`` makes before handing a voter
    change to its handler: the cluster id, the leader of ``epoch``, a voter
    key with a directory id, an endpoint on the default listener among
    ``listeners`` (None: RemoveRaftVoter names none). The leader's state to
    work on, or why not."""
    if cluster_id is not None and ctx.cluster_id is not None and cluster_id != ctx.cluster_id:
        return Refusal(
            Errors.INCONSISTENT_CLUSTER_ID,
            f'The given id "{cluster_id}" doesn\'t match the cluster id "{ctx.cluster_id}"',
        )
    error = validate_leader_only(ctx.quorum, epoch, ctx.shutting_down)
    if error is not None:
        return Refusal(error, None)
    if key.id < 0 or key.directory_id is None:
        return Refusal(Errors.INVALID_REQUEST, f"The request didn't include a valid voter: {key}")
    listener = ctx.default_listener
    if listeners is not None and not any(e.listener == listener for e in listeners):
        shown = ", ".join(f"{e.listener}://{e.host}:{e.port}" for e in listeners)
        return Refusal(
            Errors.INVALID_REQUEST,
            f"The request didn't include the endpoint ({shown}) for the default listener {listener}",
        )
    leader = ctx.quorum.role
    assert isinstance(leader, Leader)
    if leader.state.handover is not None:
        # A witness leading a hand-over epoch writes nothing but LeaderChange
        # (kraft/raft/handover.py): ask again of the leader it hands over to.
        return Refusal(Errors.NOT_LEADER_OR_FOLLOWER,
                       "The leader is a kraft witness handing the log over; retry with the next leader")
    return leader.state


def _admission_refusal(ctx: MembershipContext, state: LeaderState, action: str) -> Refusal | None:
    return admission_refusal(
        pending=state.voter_change,
        high_watermark=state.high_watermark,
        kraft_version=ctx.kraft_version,
        voters_offset=ctx.voters_offset,
        action=action,
    )


def add_voter_refusal(ctx: MembershipContext, state: LeaderState, key: ReplicaKey) -> Refusal | None:
    """Kafka's ``AddVoterHandler.handleAddVoterRequest`` admission: one
    change at a time, on a committed voter set, of a new id."""
    refusal = _admission_refusal(ctx, state, "adding voter")
    if refusal is None and key.id in ctx.voters:
        refusal = Refusal(
            Errors.DUPLICATE_VOTER, f"The voter id for {key} is already part of the set of voters {ctx.voters}."
        )
    return refusal


def api_versions_answered(
    ctx: MembershipContext, now_ms: int, correlation_id: int, error: Errors, versions: tuple[int, int] | None
) -> bool:
    """The would-be voter answered (Kafka's ``AddVoterHandler.handleApiVersionsResponse``):
    it must support the finalized kraft.version and be caught up; then the
    new voter set is appended (it takes effect once in our log)."""
    leader = ctx.quorum.role
    if not isinstance(leader, Leader):
        return True  # nothing is waiting for it any more
    state = leader.state
    pending = state.voter_change
    if pending is None or pending.kind != "add" or pending.api_versions_correlation != correlation_id:
        return True
    pending.api_versions_correlation = None
    key = pending.voter.key
    if error is not Errors.NONE:
        finish_voter_change(
            ctx,
            state,
            Errors.REQUEST_TIMED_OUT,
            f"Aborted add voter operation for {key} since API_VERSIONS returned an error {error.name}",
        )
        return False
    kraft_version = ctx.kraft_version
    if versions is None or not versions[0] <= kraft_version <= versions[1]:
        shown = "(min: 0, max: 0)" if versions is None else f"(min: {versions[0]}, max: {versions[1]})"
        finish_voter_change(
            ctx,
            state,
            Errors.INVALID_REQUEST,
            f"Aborted add voter operation for {key} since the kraft.version range {shown} doesn't "
            f"support the finalized version {kraft_version}",
        )
        return True
    # Kafka's window (an hour), not fetch.timeout.ms: on a busy cluster a
    # healthy observer is rarely at the very log end when asked.
    if not state.progress.is_replica_caught_up(key, now_ms, ADD_VOTER_CAUGHT_UP_WINDOW_MS):
        finish_voter_change(
            ctx, state, Errors.REQUEST_TIMED_OUT, f"Aborted add voter operation for {key} since it is lagging behind"
        )
        return True
    node = VoterNode(key, pending.voter.endpoints, versions)
    new_voters = ctx.voters.add_voter(node)
    if new_voters is None:
        finish_voter_change(
            ctx, state, Errors.DUPLICATE_VOTER,
            f"The voter id for {key} is already part of the set of voters {ctx.voters}.",
        )
        return True
    pending.voter = node
    pending.last_offset = state.accumulator.append_control(now_ms, VotersControl(new_voters.to_entries()))
    if not pending.ack_when_committed:
        finish_voter_change(ctx, state, Errors.NONE)
    return True


def remove_voter(
    ctx: MembershipContext, now_ms: int, env: InboundRequest, answer: Answer, key: ReplicaKey, state: LeaderState
) -> Refusal | None:
    """Kafka's ``RemoveVoterHandler``: append the smaller set; ``answer``
    once it is committed (the leader, if removed, then resigns). Why not,
    if refused."""
    voters = ctx.voters
    refusal = _admission_refusal(ctx, state, "removing voter")
    node = voters.node(key.id)
    if refusal is None and (node is None or node.key != key):
        refusal = Refusal(Errors.VOTER_NOT_FOUND, f"Cannot remove voter {key} from the set of voters {voters}")
    if refusal is None and len(voters) == 1:
        refusal = Refusal(
            Errors.INVALID_REQUEST, f"Cannot remove voter {key}: it is the only voter of the set {voters}"
        )
    new_voters = voters.remove_voter(key) if refusal is None else None
    if refusal is not None or new_voters is None or node is None:
        return refusal or Refusal(Errors.VOTER_NOT_FOUND, f"Cannot remove voter {key}")
    offset = state.accumulator.append_control(now_ms, VotersControl(new_voters.to_entries()))
    state.voter_change = PendingVoterChange(
        "remove", env, answer, node, now_ms + ctx.config.request_timeout_ms, last_offset=offset
    )
    return None


def update_voter(ctx: MembershipContext, now_ms: int, node: VoterNode, state: LeaderState) -> Errors:
    """Kafka's ``UpdateVoterHandler``: a voter's new listeners or supported
    versions. Under kraft.version 0 the leader only remembers them for an
    upgrade; under 1 it appends the updated set. The error to answer with."""
    low, high = node.supported_kraft_versions
    hwm = state.high_watermark
    if low < 0 or high < 0 or high < low:
        return Errors.INVALID_REQUEST
    if state.voter_change is not None or hwm is None:
        return Errors.REQUEST_TIMED_OUT
    if ctx.kraft_version < 1:
        upgrade = state.upgrade_voters
        if upgrade is None or node.key.id not in upgrade:
            return Errors.VOTER_NOT_FOUND
        state.upgrade_voters = upgrade.update_voter_ignoring_directory_id(node) or upgrade
        return Errors.NONE
    if ctx.voters_offset is None or ctx.voters_offset >= hwm:
        return Errors.REQUEST_TIMED_OUT
    if not node.supports(ctx.kraft_version):
        return Errors.INVALID_REQUEST
    updated = ctx.voters.update_voter(node)
    if updated is None:
        return Errors.VOTER_NOT_FOUND
    if updated != ctx.voters:
        state.accumulator.append_control(now_ms, VotersControl(updated.to_entries()))
    return Errors.NONE


def maybe_complete_voter_change(ctx: MembershipContext, state: LeaderState) -> None:
    """Kafka's ``highWatermarkUpdated``: the pending change's VotersRecord
    is committed under the new voter set."""
    pending = state.voter_change
    hwm = state.high_watermark
    if pending is not None and pending.last_offset is not None and hwm is not None and hwm > pending.last_offset:
        finish_voter_change(ctx, state, Errors.NONE)


def expire_voter_change(ctx: MembershipContext, now_ms: int, state: LeaderState) -> int | None:
    """Answer REQUEST_TIMED_OUT once the change in flight passed its
    deadline; returns the time left otherwise (``None``: none in flight)."""
    pending = state.voter_change
    if pending is None:
        return None
    if now_ms < pending.deadline_ms:
        return pending.deadline_ms - now_ms
    stage = "commit" if pending.last_offset is not None else "be admitted"
    finish_voter_change(
        ctx, state, Errors.REQUEST_TIMED_OUT, f"Request timed out waiting for {pending.describe()} to {stage}"
    )
    return None


def on_request_failed(ctx: MembershipContext, correlation_id: int) -> None:
    """The ApiVersions request to a would-be voter could not be sent or answered."""
    leader = ctx.quorum.role
    if not isinstance(leader, Leader):
        return
    pending = leader.state.voter_change
    if pending is not None and pending.api_versions_correlation == correlation_id:
        finish_voter_change(
            ctx, leader.state, Errors.REQUEST_TIMED_OUT,
            f"Aborted add voter operation for {pending.voter.key}: it could not be reached",
        )


def removed_leader_must_resign(ctx: MembershipContext, leader: Leader) -> bool:
    """A leader not in the committed voter set hands over (KIP-853: it kept
    serving fetches until the removal committed)."""
    hwm = leader.high_watermark
    local = ctx.local_key
    return (
        ctx.voters_offset is not None
        and hwm is not None
        and hwm > ctx.voters_offset
        and local is not None
        and not ctx.voters.is_voter(local)
    )


def upgrade_kraft_version(
    ctx: MembershipContext, now_ms: int, kraft_version: int, *, validate_only: bool = False
) -> bool:
    """Finalize ``kraft_version`` (Kafka's ``upgradeKRaftVersion`` /
    ``LeaderState.maybeAppendUpgradedKRaftVersion``; the checks are
    :func:`kraft.raft.kraft_version.check_upgrade`): only 0 -> 1, on the
    leader, once every static voter told it its directory id and that it
    supports version 1 (UpdateRaftVoter). Appends one control batch with the
    KRaftVersion record and the voter set (see
    ``RaftCore.pending_kraft_version_upgrade``); call ``RaftCore.poll``
    afterwards. ``validate_only`` runs the checks and appends nothing.
    Returns False when there is nothing to do (already finalized, or already
    appended). Raises :class:`~kraft.raft.errors.NotLeaderError` off the
    leader, :class:`~kraft.raft.kraft_version.InvalidUpdateVersionError` when
    the upgrade is refused (Kafka's ``InvalidUpdateVersionException``) and
    :class:`~kraft.raft.errors.LocalRaftError` for the states Kafka treats as
    impossible."""
    leader = ctx.quorum.role
    if not isinstance(leader, Leader) or not leader.state.accepts_appends():
        raise NotLeaderError("Upgrade kraft version failed since the replica is not the leader")
    state = leader.state
    pending = state.pending_upgrade
    finalized = ctx.kraft_version
    if not kraft_version_feature.check_upgrade(
        new_level=kraft_version,
        finalized_level=finalized,
        pending_level=pending[0] if pending is not None and pending[0] > finalized else None,
        upgrade_voters=state.upgrade_voters,
        voters=ctx.voters,
    ):
        return False
    voters = state.upgrade_voters
    assert voters is not None  # check_upgrade refuses an upgrade without them
    if state.voter_change is not None:
        # Unreachable in Kafka (no voter change under kraft.version 0); kept as a guard.
        raise LocalRaftError(
            f"Invalid upgrade of kraft.version while a voter change is pending ({state.voter_change.describe()})"
        )
    if not validate_only:
        last = state.accumulator.append_control(
            now_ms, KRaftVersionControl(kraft_version), VotersControl(voters.to_entries())
        )
        state.pending_upgrade = (kraft_version, OffsetAndEpoch(last, leader.epoch))
    return True
