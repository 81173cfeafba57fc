"""The simulated network: every message between replicas is an event
delivered after a random delay (overlapping delays reorder), lost when a
link is cut (partitions, isolation), the destination is down or restarted
meanwhile, or at random (``drop_rate``). Delivering one steps the
destination's core; a vote granted is checked durable on the way out."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from kraft.raft.errors import Errors
from kraft.raft.events import Inbound, InboundRequest, InboundResponse, Outbound, OutboundRequest, OutboundResponse, RequestFailed
from kraft.raft.rpcs import AddRaftVoterRequest, ApiVersionsRequest, ApiVersionsResponse, EndQuorumEpochRequest, FetchResponse, FetchSnapshotRequest, FetchSnapshotResponse, RemoveRaftVoterRequest, UpdateRaftVoterRequest, VoteRequest, VoteResponse
from kraft.sim.sim_config import ADMIN_ID
from kraft.sim.host import SimulationHost
from kraft.sim.replica import SimNode

__all__ = ["Network", "describe"]


class Network:
    """Links, loss and delivery between the host's replicas."""

    def __init__(self, host: SimulationHost, drop_rate: float,
                 admin_answer: Callable[[SimNode, OutboundResponse], None]) -> None:
        self.host = host
        #: Cut links (source id, destination id).
        self.blocked: set[tuple[int, int]] = set()
        self.drop_rate = drop_rate
        #: Where answers to the admin client (ADMIN_ID) go.
        self.admin_answer = admin_answer
        #: (responder, requester, correlation id) of pre-votes in flight.
        self._pre_vote_requests: set[tuple[int, int, int]] = set()

    def send(self, node: SimNode, message: Outbound) -> None:
        payload = message.message
        if isinstance(message, OutboundResponse) and isinstance(payload, VoteResponse):
            if payload.vote_granted and payload.leader_epoch >= 0:
                self._check_vote_durable(node, message)
        self._count_message(payload)
        if message.destination == ADMIN_ID and isinstance(message, OutboundResponse):
            self.admin_answer(node, message)
            return
        dst = self.host.node(message.destination)
        lost = (
            (node.node_id, dst.node_id) in self.blocked
            or dst.core is None
            or (self.drop_rate and self.host.rng.random() < self.drop_rate)
        )
        if lost:
            self.host.stats["messages-lost"] += 1
            if isinstance(message, OutboundRequest) and dst.core is None and self.host.rng.random() < 0.5:
                # Connection refused: the shell reports it quickly.
                self.host.schedule(
                    self.host.now_ms + self.host.rng.randint(1, 5),
                    "deliver",
                    node.node_id,
                    node.incarnation,
                    None,
                    None,
                    RequestFailed(message.destination, message.correlation_id, "connection refused"),
                )
            return
        delay = self.host.rng.randint(self.host.config.min_delay_ms, self.host.config.max_delay_ms)
        self.host.schedule(
            self.host.now_ms + delay,
            "deliver",
            node.node_id,
            node.incarnation,
            dst.node_id,
            dst.incarnation,
            message,
        )

    def _check_vote_durable(self, node: SimNode, message: OutboundResponse) -> None:
        # Only real votes bind; a pre-vote grant is not recorded anywhere. The
        # response does not say which it answers, so the simulation remembers.
        key = (node.node_id, message.destination, message.correlation_id)
        if key in self._pre_vote_requests:
            self._pre_vote_requests.discard(key)
            return
        vote = message.message
        assert isinstance(vote, VoteResponse)
        self.host.invariants.one_vote.check_vote_sent(node, vote.leader_epoch, message.destination)

    def _count_message(self, payload: object) -> None:
        match payload:
            case VoteRequest(pre_vote=True):
                self.host.stats["pre-vote-requests"] += 1
            case VoteRequest():
                self.host.stats["vote-requests"] += 1
            case EndQuorumEpochRequest():
                self.host.stats["end-quorum-epoch-requests"] += 1
            case FetchSnapshotRequest():
                self.host.stats["fetch-snapshot-requests"] += 1
            case UpdateRaftVoterRequest():
                self.host.stats["update-voter-requests"] += 1
            case AddRaftVoterRequest() | RemoveRaftVoterRequest():
                self.host.stats[f"auto-join-{type(payload).__name__}"] += 1
            case FetchResponse(diverging_epoch=d) if d is not None:
                self.host.stats["diverging-epoch-responses"] += 1
            case FetchResponse(snapshot_id=s) if s is not None:
                self.host.stats["snapshot-id-responses"] += 1
            case FetchSnapshotResponse(partition_error=Errors.SNAPSHOT_NOT_FOUND):
                self.host.stats["snapshot-not-found-responses"] += 1

    def deliver(
        self,
        src_id: int,
        src_incarnation: int,
        dst_id: int | None,
        dst_incarnation: int | None,
        message: Outbound | RequestFailed,
    ) -> None:
        accepted = self.accept(src_id, src_incarnation, dst_id, dst_incarnation, message)
        if accepted is None:
            return
        node, inbound = accepted
        assert node.core is not None
        node.core.step(self.host.now_ms, inbound)
        self.host.execute(node, node.core.poll(self.host.now_ms))

    def accept(
        self,
        src_id: int,
        src_incarnation: int,
        dst_id: int | None,
        dst_incarnation: int | None,
        message: Outbound | RequestFailed,
    ) -> tuple[SimNode, Inbound] | None:
        """The replica whose core a delivered message is for and what it
        steps, without stepping it (an interaction transcript steps and
        polls as separate commands). None: the message was lost, or answered
        without the core (ApiVersions by the listener, a legacy peer's
        refusal of a pre-vote)."""
        src = self.host.node(src_id)
        if isinstance(message, RequestFailed):
            # A local notification back to the sender.
            if src.core is not None and src.incarnation == src_incarnation:
                self.host.note(f"node {src_id}: request {message.correlation_id} to {message.destination} failed")
                return src, message
            return None
        assert dst_id is not None
        dst = self.host.node(dst_id)
        if (
            dst.core is None
            or dst.incarnation != dst_incarnation
            or src.incarnation != src_incarnation
            or (src_id, dst_id) in self.blocked
        ):
            # A crash broke the connection, or a partition cut it in flight.
            self.host.stats["messages-lost"] += 1
            return None
        if isinstance(message, OutboundRequest):
            request = message.message
            if isinstance(request, ApiVersionsRequest):
                # Answered by the node's listener, not its raft core.
                self.host.stats["api-versions-requests"] += 1
                answer = ApiVersionsResponse(supported_kraft_versions=(0, 1))
                self.send(dst, OutboundResponse(src_id, message.correlation_id, answer))
                return None
            if isinstance(request, VoteRequest) and request.pre_vote:
                if dst.legacy:
                    # A Vote v0/v1 peer cannot parse PreVote.
                    self.host.stats["unsupported-version-answers"] += 1
                    self.host.note(f"legacy node {dst_id} rejects pre-vote from {src_id}")
                    refusal = VoteResponse(error=Errors.UNSUPPORTED_VERSION)
                    self.send(dst, OutboundResponse(src_id, message.correlation_id, refusal))
                    return None
                self._pre_vote_requests.add((dst_id, src_id, message.correlation_id))
            self.host.note(f"{src_id}->{dst_id} #{message.correlation_id} {describe(request)}")
            return dst, InboundRequest(src_id, message.correlation_id, request)
        self.host.note(f"{src_id}->{dst_id} #{message.correlation_id} {describe(message.message)}")
        return dst, InboundResponse(src_id, message.correlation_id, message.message)

def describe(payload: object) -> str:
    text = repr(payload)
    if isinstance(payload, FetchResponse) and payload.records:
        text = repr(replace(payload, records=f"<{len(payload.records)} bytes>".encode()))
    return text if len(text) < 300 else text[:297] + "..."
