"""AddRaftVoter, RemoveRaftVoter, UpdateRaftVoter (KIP-853) and the
kraft.version upgrade.

The leader side follows Kafka's ``AddVoterHandler``, ``RemoveVoterHandler``
and ``UpdateVoterHandler`` (admission rules in :mod:`kraft.raft.voter_changes`);
the change in flight lives on the leader's
:class:`~kraft.raft.leader_state.LeaderState`, so it ends with the
leadership. The follower side (:class:`MembershipClient`) sends
UpdateRaftVoter when its listeners changed and, with ``auto_join``,
AddRaftVoter (after RemoveRaftVoter of a stale entry with its id).
"""

from __future__ import annotations


from kraft.raft import kraft_version as kraft_version_feature
from kraft.raft.errors import Errors, LocalRaftError, NotLeaderError
from kraft.raft.events import (
    AddRaftVoterRequest,
    AddRaftVoterResponse,
    ApiVersionsRequest,
    ApiVersionsResponse,
    InboundRequest,
    RaftRequest,
    RaftResponse,
    RemoveRaftVoterRequest,
    RemoveRaftVoterResponse,
    UpdateRaftVoterRequest,
    UpdateRaftVoterResponse,
)
from kraft.raft.handlers.common import MembershipContext, validate_leader_only
from kraft.raft.leader_state import LeaderState
from kraft.raft.logops import KRaftVersionControl, VotersControl
from kraft.raft.roles import Follower, Leader
from kraft.raft.voter_changes import PendingVoterChange, Refusal, admission_refusal
from kraft.raft.voters import Endpoints, KRaftVersionRange, ReplicaKey, VoterNode
from kraft.records.view import OffsetAndEpoch

#: Kafka's ``LeaderState.isReplicaCaughtUp``: an observer that fetched
#: within the last hour (and has caught up with the leader once) may be added.
ADD_VOTER_CAUGHT_UP_WINDOW_MS = 3_600_000




def _answer(ctx: MembershipContext, msg: RaftRequest, error: Errors, message: str | None) -> RaftResponse:
    match msg:
        case AddRaftVoterRequest():
            return AddRaftVoterResponse(error=error, error_message=message)
        case RemoveRaftVoterRequest():
            return RemoveRaftVoterResponse(error=error, error_message=message)
        case UpdateRaftVoterRequest():
            return UpdateRaftVoterResponse(error=error, **ctx.quorum.leader_fields)
    raise TypeError(f"not a voter change request: {msg!r}")


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
    if pending.kind == "add":
        ctx.respond(pending.request, AddRaftVoterResponse(error=error, error_message=message))
    else:
        ctx.respond(pending.request, RemoveRaftVoterResponse(error=error, error_message=message))


def handle_voter_change_request(ctx: MembershipContext, now_ms: int, env: InboundRequest) -> None:
    """AddRaftVoter, RemoveRaftVoter, UpdateRaftVoter: the checks Kafka's
    ``KafkaRaftClient`` makes before handing them to the handlers (cluster
    id, leader of the epoch, a voter key with a directory id, an endpoint on
    the default listener)."""
    msg = env.message
    assert isinstance(msg, (AddRaftVoterRequest, RemoveRaftVoterRequest, UpdateRaftVoterRequest))

    def refuse(error: Errors, message: str | None = None) -> None:
        ctx.respond(env, _answer(ctx, msg, error, message))

    if msg.cluster_id is not None and ctx.cluster_id is not None and msg.cluster_id != ctx.cluster_id:
        return refuse(
            Errors.INCONSISTENT_CLUSTER_ID,
            f'The given id "{msg.cluster_id}" doesn\'t match the cluster id "{ctx.cluster_id}"',
        )
    epoch = msg.current_leader_epoch if isinstance(msg, UpdateRaftVoterRequest) else ctx.quorum.epoch
    error = validate_leader_only(ctx.quorum, epoch, ctx.shutting_down)
    if error is not None:
        return refuse(error)
    key = msg.voter_key
    if key.id < 0 or key.directory_id is None:
        return refuse(Errors.INVALID_REQUEST, f"The request didn't include a valid voter: {key}")
    listener = ctx.default_listener
    if not isinstance(msg, RemoveRaftVoterRequest) and not any(e.listener == listener for e in msg.listeners):
        shown = ", ".join(f"{e.listener}://{e.host}:{e.port}" for e in msg.listeners)
        return refuse(
            Errors.INVALID_REQUEST,
            f"The request didn't include the endpoint ({shown}) for the default listener {listener}",
        )
    leader = ctx.quorum.role
    assert isinstance(leader, Leader)
    if leader.state.handover is not None:
        # A witness leading a hand-over epoch writes nothing but LeaderChange
        # (kraft/raft/handover.py): ask again of the leader it hands over to.
        return refuse(Errors.NOT_LEADER_OR_FOLLOWER,
                      "The leader is a kraft witness handing the log over; retry with the next leader")
    match msg:
        case AddRaftVoterRequest():
            _handle_add_voter(ctx, now_ms, env, msg, leader.state)
        case RemoveRaftVoterRequest():
            _handle_remove_voter(ctx, now_ms, env, msg, leader.state)
        case UpdateRaftVoterRequest():
            _handle_update_voter(ctx, now_ms, env, msg, leader.state)


def _admission_refusal(ctx: MembershipContext, state: LeaderState, action: str) -> Refusal | None:
    return admission_refusal(
        pending=state.voter_change,
        high_watermark=state.high_watermark,
        kraft_version=ctx.kraft_version,
        voters_offset=ctx.voters_offset,
        action=action,
    )


def _handle_add_voter(
    ctx: MembershipContext, now_ms: int, env: InboundRequest, msg: AddRaftVoterRequest, state: LeaderState
) -> None:
    """Kafka's ``AddVoterHandler.handleAddVoterRequest``: admission, then
    ApiVersions to the new voter; the rest happens when it answers."""
    key = msg.voter_key
    refusal = _admission_refusal(ctx, state, "adding voter")
    if refusal is None and key.id in ctx.voters:
        refusal = Refusal(
            Errors.DUPLICATE_VOTER, f"The voter id for {key} is already part of the set of voters {ctx.voters}."
        )
    if refusal is None:
        correlation = ctx.send_request_now(now_ms, key.id, ApiVersionsRequest(endpoints=msg.listeners))
        if correlation is None:
            refusal = Refusal(Errors.REQUEST_TIMED_OUT, f"New voter {key} is not ready to receive requests")
        else:
            state.voter_change = PendingVoterChange(
                "add",
                env,
                VoterNode(key, msg.listeners),
                now_ms + ctx.config.request_timeout_ms,
                ack_when_committed=msg.ack_when_committed,
                api_versions_correlation=correlation,
            )
            return
    ctx.respond(env, AddRaftVoterResponse(error=refusal.error, error_message=refusal.message))


def handle_api_versions_response(
    ctx: MembershipContext, now_ms: int, correlation_id: int, msg: ApiVersionsResponse
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
    if msg.error is not Errors.NONE:
        finish_voter_change(
            ctx,
            state,
            Errors.REQUEST_TIMED_OUT,
            f"Aborted add voter operation for {key} since API_VERSIONS returned an error {msg.error.name}",
        )
        return False
    versions = msg.supported_kraft_versions
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


def _handle_remove_voter(
    ctx: MembershipContext, now_ms: int, env: InboundRequest, msg: RemoveRaftVoterRequest, state: LeaderState
) -> None:
    """Kafka's ``RemoveVoterHandler``: append the smaller set; answer once
    it is committed (the leader, if removed, then resigns)."""
    key = msg.voter_key
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
        refusal = refusal or Refusal(Errors.VOTER_NOT_FOUND, f"Cannot remove voter {key}")
        ctx.respond(env, RemoveRaftVoterResponse(error=refusal.error, error_message=refusal.message))
        return
    offset = state.accumulator.append_control(now_ms, VotersControl(new_voters.to_entries()))
    state.voter_change = PendingVoterChange(
        "remove", env, node, now_ms + ctx.config.request_timeout_ms, last_offset=offset
    )


def _handle_update_voter(
    ctx: MembershipContext, now_ms: int, env: InboundRequest, msg: UpdateRaftVoterRequest, state: LeaderState
) -> None:
    """Kafka's ``UpdateVoterHandler``: a voter's new listeners or supported
    versions. Under kraft.version 0 the leader only remembers them for an
    upgrade; under 1 it appends the updated set and answers at once."""
    low, high = msg.supported_kraft_versions
    node = VoterNode(msg.voter_key, msg.listeners, (low, high))

    def answer(error: Errors) -> None:
        ctx.respond(env, UpdateRaftVoterResponse(error=error, **ctx.quorum.leader_fields))

    hwm = state.high_watermark
    if low < 0 or high < 0 or high < low:
        return answer(Errors.INVALID_REQUEST)
    if state.voter_change is not None or hwm is None:
        return answer(Errors.REQUEST_TIMED_OUT)
    if ctx.kraft_version < 1:
        upgrade = state.upgrade_voters
        if upgrade is None or msg.voter_key.id not in upgrade:
            return answer(Errors.VOTER_NOT_FOUND)
        state.upgrade_voters = upgrade.update_voter_ignoring_directory_id(node) or upgrade
        return answer(Errors.NONE)
    if ctx.voters_offset is None or ctx.voters_offset >= hwm:
        return answer(Errors.REQUEST_TIMED_OUT)
    if not node.supports(ctx.kraft_version):
        return answer(Errors.INVALID_REQUEST)
    updated = ctx.voters.update_voter(node)
    if updated is None:
        return answer(Errors.VOTER_NOT_FOUND)
    if updated != ctx.voters:
        state.accumulator.append_control(now_ms, VotersControl(updated.to_entries()))
    answer(Errors.NONE)


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


def start_of_epoch_control_records(
    ctx: MembershipContext, client: MembershipClient
) -> list[KRaftVersionControl | VotersControl]:
    """KRaftVersion and Voters records a new leader writes with its
    LeaderChange (Kafka's ``LeaderState.appendLeaderChangeMessageAndBootstrapRecords``):
    the voter set read from the bootstrap checkpoint is not replicated, so the
    first leader writes it to the log; a leader whose listeners changed
    records the new ones."""
    local_key = ctx.local_key
    if ctx.kraft_version < 1 or ctx.voters_offset is None or local_key is None or not client.has_endpoints:
        return []
    local = client.local_voter_node(local_key)
    if ctx.voters_offset != -1 and not ctx.voters.voter_node_needs_update(local):
        return []
    updated = ctx.voters.update_voter(local) or ctx.voters
    return [KRaftVersionControl(ctx.kraft_version), VotersControl(updated.to_entries())]


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


# --- followers and observers ---------------------------------------------------------


class MembershipClient:
    """A follower's own KIP-853 requests: UpdateRaftVoter from a voter whose
    recorded listeners or supported versions are stale (under kraft.version
    0: once per leader epoch, so a leader learns the directory ids an upgrade
    needs); AddRaftVoter from an observer with
    ``controller.quorum.auto.join.enable`` that has caught up -- after
    RemoveRaftVoter of a stale voter with its id. What changes while
    following one leader (told it, when to retry) is on the
    :class:`~kraft.raft.roles.Follower` role, as on Kafka's ``FollowerState``;
    this object holds only the replica's own settings."""

    __slots__ = ("_endpoints", "_supported", "_auto_join")

    def __init__(self, local_endpoints: Endpoints, supported_kraft_versions: KRaftVersionRange, auto_join: bool) -> None:
        self._endpoints = tuple(local_endpoints)
        self._supported = supported_kraft_versions
        self._auto_join = auto_join

    @property
    def has_endpoints(self) -> bool:
        return bool(self._endpoints)

    def local_voter_node(self, key: ReplicaKey) -> VoterNode:
        return VoterNode(key, self._endpoints, self._supported)

    def request(self, ctx: MembershipContext, now_ms: int, role: Follower) -> RaftRequest | None:
        key = ctx.local_key
        if key is None or key.directory_id is None or not self._endpoints or now_ms < role.membership_retry_ms:
            return None
        voters = ctx.voters
        quorum = ctx.quorum
        if quorum.is_voter:
            if role.updated_voter:
                return None
            if ctx.kraft_version >= 1 and not voters.voter_node_needs_update(self.local_voter_node(key)):
                return None
            quorum.set_membership_state(retry_ms=now_ms + ctx.config.fetch_timeout_ms)
            return UpdateRaftVoterRequest(
                cluster_id=ctx.cluster_id,
                current_leader_epoch=role.epoch,
                voter_key=key,
                listeners=self._endpoints,
                supported_kraft_versions=self._supported,
            )
        hwm = role.high_watermark
        if (
            not self._auto_join
            or ctx.kraft_version < 1
            or not role.has_fetched_from_leader
            or hwm is None
            or ctx.log.end_offset < hwm
        ):
            return None
        quorum.set_membership_state(retry_ms=now_ms + ctx.config.fetch_timeout_ms)
        stale = voters.key(key.id)
        if stale is not None:
            # Our id is a voter with another directory id: a disk we replaced.
            return RemoveRaftVoterRequest(cluster_id=ctx.cluster_id, voter_key=stale)
        return AddRaftVoterRequest(
            cluster_id=ctx.cluster_id,
            timeout_ms=ctx.config.request_timeout_ms,
            voter_key=key,
            listeners=self._endpoints,
            ack_when_committed=False,
        )

    def handle_join_response(
        self, ctx: MembershipContext, now_ms: int, msg: AddRaftVoterResponse | RemoveRaftVoterResponse
    ) -> bool:
        removed = isinstance(msg, RemoveRaftVoterResponse) and msg.error is Errors.NONE
        if removed and isinstance(ctx.quorum.role, Follower):
            # The stale entry is gone: join as soon as the removal commits.
            ctx.quorum.set_membership_state(retry_ms=now_ms + ctx.config.retry_backoff_ms)
        return True

    def note_update_answered(self, ctx: MembershipContext, msg: UpdateRaftVoterResponse) -> None:
        done = msg.error in (Errors.NONE, Errors.INVALID_REQUEST, Errors.VOTER_NOT_FOUND, Errors.UNSUPPORTED_VERSION)
        if done and isinstance(ctx.quorum.role, Follower):
            # Done for this leader: told it, or it will not take it.
            ctx.quorum.set_membership_state(updated_voter=True)
