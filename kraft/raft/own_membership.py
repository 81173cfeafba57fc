"""A replica's requests about its own membership (:class:`OwnMembership`,
KIP-853) and the control records a new leader writes about itself.

Not a client of the admin kind (that is :mod:`kraft.admin_client`): the core
sends these as a follower, as Kafka's ``KafkaRaftClient`` does in
``maybeSendUpdateVoterRequest`` and the auto-join of
``pollFollowerAsObserver``.
It was ``membership_client.py`` (``MembershipClient``) until issue 45.

A voter whose recorded listeners or supported ``kraft.version`` range are
stale sends UpdateRaftVoter; an observer with
``controller.quorum.auto.join.enable`` sends AddRaftVoter (after
RemoveRaftVoter of a stale entry with its id). The leader's side is each
RPC's module and :mod:`kraft.raft.families.membership`.
"""

from __future__ import annotations

from kraft.raft.errors import Errors
from kraft.raft.events import RaftRequest
from kraft.raft.families.common import MembershipContext
from kraft.raft.logops import KRaftVersionControl, VotersControl
from kraft.raft.roles import Follower
from kraft.raft.rpcs.add_raft_voter_rpc import AddRaftVoterRequest, AddRaftVoterResponse
from kraft.raft.rpcs.remove_raft_voter_rpc import RemoveRaftVoterRequest, RemoveRaftVoterResponse
from kraft.raft.rpcs.update_raft_voter_rpc import UpdateRaftVoterRequest, UpdateRaftVoterResponse
from kraft.raft.voters import Endpoints, KRaftVersionRange, ReplicaKey, VoterNode

__all__ = ["OwnMembership", "start_of_epoch_control_records"]


def start_of_epoch_control_records(
    ctx: MembershipContext, client: OwnMembership
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



class OwnMembership:
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
