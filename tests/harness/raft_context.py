"""RaftTestContext: drive one RaftCore by hand, so tests read like the spec.

The context plays the shell for a single replica: it owns a virtual clock, a
:class:`~kraft.sim.memlog.MemLog` and the durable ``quorum-state``, and it
executes every ``Ready`` the way the real shell must (persist, log
operations, then sends — which it records instead of sending). Peers are
played by the test::

    ctx = RaftTestContext(local_id=1, voters=[1, 2, 3]).start()
    ctx.advance(2 * ctx.config.election_timeout_ms)     # election timer fires
    [pre_vote] = ctx.assert_sent(VoteRequest, destination=2, pre_vote=True, epoch=0)
    ctx.respond(pre_vote, ctx.vote_response(granted=True, epoch=0))
    ctx.assert_sent(VoteRequest, destination=2, pre_vote=False, epoch=1)

``assert_sent`` matches message fields by name, plus ``destination`` and an
``epoch`` alias for whichever epoch field the message has (candidate epoch,
leader epoch, current leader epoch).
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import fields, is_dataclass
from typing import Any, TypeVar

from kraft.raft.core import RaftCore, Ready
from kraft.raft.errors import Errors
from kraft.raft.events import METADATA_PARTITION, InboundRequest, InboundResponse, Outbound, OutboundRequest, OutboundResponse, RaftRequest, RaftResponse, RequestFailed
from kraft.raft.rpcs import AddRaftVoterRequest, ApiVersionsResponse, BeginQuorumEpochRequest, BeginQuorumEpochResponse, EndQuorumEpochRequest, EndQuorumEpochResponse, FetchRequest, FetchResponse, FetchSnapshotRequest, FetchSnapshotResponse, RemoveRaftVoterRequest, UpdateRaftVoterRequest, VoteRequest, VoteResponse
from kraft.raft.logops import Batch, KRaftVersionControl, VotersControl
from kraft.raft.quorum_config import QuorumConfig
from kraft.records.view import OffsetAndEpoch
from kraft.raft.roles import ElectionState, Leader, Role
from kraft.sim.memlog import MemBatch, MemLog, encode_batches
from kraft.raft.voters import Endpoint, Endpoints, ReplicaKey, VoterNode, VoterSet
from kraft.raft.witness_policy import CampaignPolicy

M = TypeVar("M")

CLUSTER_ID = "test-cluster-AAAAAAAAAA"

_EPOCH_FIELDS = ("candidate_epoch", "leader_epoch", "current_leader_epoch")


class RaftTestContext:
    """One replica under test, with the shell played by the context."""

    def __init__(
        self,
        *,
        local_id: int | None = 1,
        voters: Iterable[int] = (1, 2, 3),
        config: QuorumConfig | None = None,
        seed: int = 0,
        election_state: ElectionState | None = None,
        dynamic: bool = False,
        auto_join: bool = False,
        campaign_policy: CampaignPolicy | None = None,
        bootstrap_ids: Sequence[int] = (),
    ) -> None:
        """``campaign_policy``: handed to the core (a witness, :mod:`kraft.raft.witness_policy`).
        ``bootstrap_ids``: the ids the core gives ``controller.quorum.bootstrap.servers``
        (negative, as the node numbers them: -1, -2, ...).
        ``dynamic``: a KIP-853 quorum (kraft.version 1) formatted with
        ``voters`` as its initial controllers: every replica has the directory
        id :meth:`directory_id` and listeners :meth:`endpoints`, and the
        voter set is in the log's bootstrap checkpoint (offset -1)."""
        self.dynamic = dynamic
        self.auto_join = auto_join
        self.campaign_policy = campaign_policy
        self.bootstrap_ids = tuple(bootstrap_ids)
        if dynamic:
            self.voters = VoterSet.of(
                VoterNode(self.key(i), self.endpoints(i), (0, 1)) for i in voters
            )
        else:
            self.voters = VoterSet.from_ids(voters)
        self.local_id = local_id
        self.config = config or QuorumConfig()
        self.log = MemLog()
        self.persisted: ElectionState | None = election_state
        self.now_ms = 0
        self.sent: list[Outbound] = []
        self.readies: list[Ready] = []
        self.committed: int | None = None
        self._seed = seed
        self._next_deadline: int | None = None
        self._next_correlation_id = 1000
        self.core: RaftCore | None = None
        if dynamic:
            self.log.bootstrap(self.voters.to_entries())

    # --- KIP-853 identities ------------------------------------------------------

    @staticmethod
    def directory_id(node_id: int, disk: int = 0) -> uuid.UUID:
        """A deterministic directory id; ``disk`` > 0 for a reformatted disk."""
        return uuid.UUID(int=(disk << 32) + node_id + 1)

    def key(self, node_id: int, disk: int = 0) -> ReplicaKey:
        return ReplicaKey(node_id, self.directory_id(node_id, disk) if self.dynamic else None)

    @staticmethod
    def endpoints(node_id: int, port: int = 9093) -> Endpoints:
        return (Endpoint("CONTROLLER", f"node-{node_id}", port),)

    # --- set-up ------------------------------------------------------------------

    def with_log(self, *epochs_and_counts: tuple[int, int]) -> RaftTestContext:
        """Pre-fill the log: one batch of ``count`` records per (epoch, count)."""
        for epoch, count in epochs_and_counts:
            base = self.log.end_offset
            records = tuple(f"e{epoch}-o{base + i}".encode() for i in range(count))
            self.log.append_as_leader(Batch(base, epoch, records))
        self.log.flush()
        return self

    def with_snapshot(self, snapshot_id: OffsetAndEpoch) -> RaftTestContext:
        """Snapshot the pre-filled log at ``snapshot_id`` and move the log start."""
        self.log.create_snapshot(snapshot_id)
        self.log.delete_before_snapshot(snapshot_id)
        return self

    def with_election_state(self, state: ElectionState) -> RaftTestContext:
        self.persisted = state
        return self

    def start(self) -> RaftTestContext:
        self.core = RaftCore(
            node_id=self.local_id,
            voters=self.voters,
            log=self.log,
            rng=random.Random(self._seed),
            config=self.config,
            cluster_id=CLUSTER_ID,
            election_state=self.persisted,
            directory_id=self.directory_id(self.local_id) if self.dynamic and self.local_id is not None else None,
            local_endpoints=self.endpoints(self.local_id) if self.dynamic and self.local_id is not None else (),
            auto_join=self.auto_join,
            followers_always_flush=self.dynamic,
            campaign_policy=self.campaign_policy,
            bootstrap_ids=self.bootstrap_ids,
        )
        self._apply(self.core.initialize(self.now_ms))
        return self

    # --- driving -------------------------------------------------------------------

    @property
    def raft(self) -> RaftCore:
        if self.core is None:
            raise AssertionError("call start() first")
        return self.core

    @property
    def role(self) -> Role:
        return self.raft.role

    @property
    def epoch(self) -> int:
        return self.raft.epoch

    @property
    def next_deadline_ms(self) -> int | None:
        return self._next_deadline

    def advance(self, ms: int) -> RaftTestContext:
        """Let ``ms`` of virtual time pass, polling at every deadline on the way."""
        target = self.now_ms + ms
        while self._next_deadline is not None and self._next_deadline <= target:
            self.now_ms = max(self.now_ms, self._next_deadline)
            self._apply(self.raft.poll(self.now_ms))
        self.now_ms = target
        return self

    def poll(self) -> Ready:
        ready = self.raft.poll(self.now_ms)
        self._apply(ready)
        return ready

    def deliver(self, message: RaftRequest, *, source: int, correlation_id: int | None = None) -> Ready:
        """A request from peer ``source``."""
        if correlation_id is None:
            self._next_correlation_id += 1
            correlation_id = self._next_correlation_id
        self.raft.step(self.now_ms, InboundRequest(source, correlation_id, message))
        ready = self.raft.poll(self.now_ms)
        self._apply(ready)
        return ready

    def respond(self, request: OutboundRequest, response: RaftResponse) -> Ready:
        """The peer's answer to a request the core sent."""
        self.raft.step(self.now_ms, InboundResponse(request.destination, request.correlation_id, response))
        ready = self.raft.poll(self.now_ms)
        self._apply(ready)
        return ready

    def fail(self, request: OutboundRequest) -> Ready:
        self.raft.step(self.now_ms, RequestFailed(request.destination, request.correlation_id, "test"))
        ready = self.raft.poll(self.now_ms)
        self._apply(ready)
        return ready

    def append(self, *records: bytes) -> int:
        offset = self.raft.append(self.now_ms, list(records))
        self.poll()
        return offset

    def _apply(self, ready: Ready) -> None:
        """Execute a Ready like the shell: persist, log, send; then re-poll at
        once if the core asks to run again now (to see its writes, or as a
        leader to flush what it just sent)."""
        for _ in range(50):
            self.readies.append(ready)
            if ready.persist is not None:
                self.persisted = ready.persist
            for op in ready.log:
                self.log.apply(op)
            self.sent.extend(ready.send)
            if ready.committed is not None:
                self.committed = ready.committed
            self._next_deadline = ready.next_deadline_ms
            if ready.next_deadline_ms != self.now_ms:
                return
            ready = self.raft.poll(self.now_ms)
        raise AssertionError("the core keeps asking to be polled at the same instant")

    # --- assertions ----------------------------------------------------------------

    def take_sent(self) -> list[Outbound]:
        sent, self.sent = self.sent, []
        return sent

    def clear_sent(self) -> RaftTestContext:
        self.sent = []
        return self

    def find_sent(self, kind: type[M], **expected: Any) -> list[Any]:
        return [m for m in self.sent if isinstance(m.message, kind) and _matches(m, expected)]

    def assert_sent(self, kind: type[M], **expected: Any) -> list[Any]:
        """The outbound envelopes carrying a ``kind`` whose fields match; fails
        with everything that was sent if there is none."""
        found = self.find_sent(kind, **expected)
        if not found:
            dump = "\n  ".join(repr(m) for m in self.sent) or "(nothing)"
            raise AssertionError(f"no {kind.__name__} matching {expected} was sent; sent:\n  {dump}")
        return found

    def last_sent(self, kind: type[M], **expected: Any) -> Any:
        """The latest matching envelope ever sent, ``clear_sent`` or not."""
        for ready in reversed(self.readies):
            for m in reversed(ready.send):
                if isinstance(m.message, kind) and _matches(m, expected):
                    return m
        raise AssertionError(f"no {kind.__name__} matching {expected} was ever sent")

    def assert_not_sent(self, kind: type[M], **expected: Any) -> None:
        found = self.find_sent(kind, **expected)
        if found:
            raise AssertionError(f"unexpected {kind.__name__} matching {expected}: {found}")

    def assert_response(self, kind: type[M], **expected: Any) -> Any:
        """The single response of type ``kind`` sent since the last clear."""
        found = [m for m in self.find_sent(kind, **expected) if isinstance(m, OutboundResponse)]
        if len(found) != 1:
            raise AssertionError(
                f"expected one {kind.__name__} matching {expected}, got {found or self.sent}"
            )
        return found[0].message

    # --- message builders ------------------------------------------------------------

    def vote_request(
        self,
        *,
        candidate: int,
        epoch: int,
        last_offset: int | None = None,
        last_epoch: int | None = None,
        pre_vote: bool = False,
        voter: int | None = None,
    ) -> VoteRequest:
        """A Vote from ``candidate``; its log defaults to ours (up to date)."""
        return VoteRequest(
            cluster_id=CLUSTER_ID,
            voter_key=None if voter is None else ReplicaKey(voter),
            candidate_epoch=epoch,
            candidate_key=ReplicaKey(candidate),
            last_offset_epoch=self.log.last_epoch if last_epoch is None else last_epoch,
            last_offset=self.log.end_offset if last_offset is None else last_offset,
            pre_vote=pre_vote,
        )

    def vote_response(
        self, *, granted: bool, epoch: int, leader: int = -1, error: Errors = Errors.NONE
    ) -> VoteResponse:
        return VoteResponse(partition_error=error, vote_granted=granted, leader_epoch=epoch, leader_id=leader)

    def begin_quorum_epoch(self, *, leader: int, epoch: int) -> BeginQuorumEpochRequest:
        return BeginQuorumEpochRequest(
            cluster_id=CLUSTER_ID,
            voter_key=None if self.local_id is None else ReplicaKey(self.local_id),
            leader_id=leader,
            leader_epoch=epoch,
            leader_endpoints=self.voters.endpoints(leader),
        )

    def end_quorum_epoch(self, *, leader: int, epoch: int, preferred: Sequence[int]) -> EndQuorumEpochRequest:
        return EndQuorumEpochRequest(
            cluster_id=CLUSTER_ID,
            leader_id=leader,
            leader_epoch=epoch,
            preferred_candidates=tuple(ReplicaKey(i) for i in preferred),
        )

    def fetch_request(
        self,
        *,
        replica: int,
        fetch_offset: int,
        last_fetched_epoch: int,
        epoch: int | None = None,
        max_wait_ms: int = 0,
        high_watermark: int = -1,
    ) -> FetchRequest:
        return FetchRequest(
            cluster_id=CLUSTER_ID,
            replica_key=ReplicaKey(replica),
            current_leader_epoch=self.epoch if epoch is None else epoch,
            fetch_offset=fetch_offset,
            last_fetched_epoch=last_fetched_epoch,
            max_wait_ms=max_wait_ms,
            max_bytes=self.config.fetch_max_bytes,
            high_watermark=high_watermark,
        )

    def fetch_snapshot_request(
        self,
        *,
        replica: int,
        snapshot_id: OffsetAndEpoch,
        position: int,
        epoch: int | None = None,
        max_bytes: int | None = None,
    ) -> FetchSnapshotRequest:
        return FetchSnapshotRequest(
            cluster_id=CLUSTER_ID,
            replica_key=ReplicaKey(replica),
            current_leader_epoch=self.epoch if epoch is None else epoch,
            snapshot_id=snapshot_id,
            position=position,
            max_bytes=self.config.fetch_snapshot_max_bytes if max_bytes is None else max_bytes,
        )

    def fetch_response(
        self,
        *,
        leader: int,
        epoch: int,
        records: Sequence[tuple[int, int, int]] = (),
        high_watermark: int = -1,
        diverging_epoch: OffsetAndEpoch | None = None,
        snapshot_id: OffsetAndEpoch | None = None,
        error: Errors = Errors.NONE,
    ) -> FetchResponse:
        """``records``: (base offset, epoch, count) batches, as the leader's log would send them."""
        batches = [
            MemBatch(base, e, tuple(f"e{e}-o{base + i}".encode() for i in range(count)))
            for base, e, count in records
        ]
        return FetchResponse(
            partition_error=error,
            high_watermark=high_watermark,
            log_start_offset=0,
            records=encode_batches(batches),
            diverging_epoch=diverging_epoch,
            snapshot_id=snapshot_id,
            leader_id=leader,
            leader_epoch=epoch,
        )

    def begin_quorum_epoch_response(
        self, *, epoch: int, leader: int, error: Errors = Errors.NONE
    ) -> BeginQuorumEpochResponse:
        return BeginQuorumEpochResponse(partition_error=error, leader_id=leader, leader_epoch=epoch)

    def end_quorum_epoch_response(
        self, *, epoch: int, leader: int, error: Errors = Errors.NONE
    ) -> EndQuorumEpochResponse:
        return EndQuorumEpochResponse(partition_error=error, leader_id=leader, leader_epoch=epoch)

    def fetch_snapshot_response(
        self,
        *,
        epoch: int,
        leader: int,
        snapshot_id: OffsetAndEpoch,
        size: int,
        position: int,
        data: bytes,
        error: Errors = Errors.NONE,
    ) -> FetchSnapshotResponse:
        return FetchSnapshotResponse(
            partition_error=error,
            snapshot_id=snapshot_id,
            size=size,
            position=position,
            unaligned_records=data,
            leader_id=leader,
            leader_epoch=epoch,
        )

    # --- KIP-853 builders --------------------------------------------------------------

    def add_voter_request(
        self, node_id: int, *, disk: int = 0, listeners: Endpoints | None = None, cluster_id: str = CLUSTER_ID
    ) -> AddRaftVoterRequest:
        return AddRaftVoterRequest(
            cluster_id=cluster_id,
            voter_key=self.key(node_id, disk),
            listeners=self.endpoints(node_id) if listeners is None else listeners,
        )

    def remove_voter_request(self, node_id: int, *, disk: int = 0, cluster_id: str = CLUSTER_ID) -> RemoveRaftVoterRequest:
        return RemoveRaftVoterRequest(cluster_id=cluster_id, voter_key=self.key(node_id, disk))

    def update_voter_request(
        self, node_id: int, *, epoch: int | None = None, port: int = 9093, versions: tuple[int, int] = (0, 1)
    ) -> UpdateRaftVoterRequest:
        return UpdateRaftVoterRequest(
            cluster_id=CLUSTER_ID,
            current_leader_epoch=self.epoch if epoch is None else epoch,
            voter_key=self.key(node_id),
            listeners=self.endpoints(node_id, port),
            supported_kraft_versions=versions,
        )

    @staticmethod
    def api_versions_response(versions: tuple[int, int] | None = (0, 1), error: Errors = Errors.NONE) -> ApiVersionsResponse:
        return ApiVersionsResponse(error=error, supported_kraft_versions=versions)

    def voters_batch(self, base: int, epoch: int, voters: VoterSet, kraft_version: int | None = None) -> MemBatch:
        """A control batch with a VotersRecord (and a KRaftVersion record
        first, if given), as a leader's log would send it."""
        from kraft.sim.memlog import encode_control

        controls: list[Any] = []
        if kraft_version is not None:
            controls.append(KRaftVersionControl(kraft_version))
        controls.append(VotersControl(voters.to_entries()))
        return MemBatch(base, epoch, tuple(encode_control(c) for c in controls), control=True)

    def fetch_response_with(
        self, *, leader: int, epoch: int, batches: Sequence[MemBatch], high_watermark: int = -1
    ) -> FetchResponse:
        return FetchResponse(
            high_watermark=high_watermark,
            log_start_offset=0,
            records=encode_batches(list(batches)),
            leader_id=leader,
            leader_epoch=epoch,
            leader_endpoints=self.voters.endpoints(leader) or self.endpoints(leader),
        )

    def catch_up(self, replica: int, *, disk: int = 0) -> FetchResponse:
        """``replica`` fetches at our log end (a caught-up follower or observer)."""
        ready = self.deliver(
            FetchRequest(
                cluster_id=CLUSTER_ID,
                replica_key=self.key(replica, disk),
                current_leader_epoch=self.epoch,
                fetch_offset=self.log.end_offset,
                last_fetched_epoch=self.log.last_epoch,
                max_wait_ms=0,
                max_bytes=self.config.fetch_max_bytes,
            ),
            source=replica,
        )
        answers = [m.message for m in ready.send if isinstance(m.message, FetchResponse)]
        assert len(answers) == 1, f"no fetch answer in {ready}"
        return answers[0]

    # --- whole scenarios -----------------------------------------------------------------

    def elect_local(self) -> RaftTestContext:
        """Run a full election this replica wins: pre-vote, vote, and the
        LeaderChangeMessage written. Peers grant everything."""
        answered: set[tuple[int, int]] = set()
        for _ in range(20):
            if isinstance(self.role, Leader):
                break
            pending = [
                req
                for req in self.find_sent(VoteRequest, epoch=self.epoch)
                if isinstance(req, OutboundRequest) and (req.destination, req.correlation_id) not in answered
            ]
            if not pending:
                self.advance(2 * self.config.election_timeout_ms)
                continue
            for req in pending:
                answered.add((req.destination, req.correlation_id))
                vote = req.message
                if isinstance(vote, VoteRequest) and vote.candidate_epoch == self.epoch:
                    self.respond(req, self.vote_response(granted=True, epoch=self.epoch))
        if not isinstance(self.role, Leader):
            raise AssertionError(f"replica {self.local_id} did not become leader: {self.role}")
        self.clear_sent()
        return self

    def follow(self, *, leader: int, epoch: int) -> RaftTestContext:
        """Make this replica follow ``leader`` in ``epoch`` (a BeginQuorumEpoch)."""
        self.deliver(self.begin_quorum_epoch(leader=leader, epoch=epoch), source=leader)
        self.clear_sent()
        return self


def _matches(envelope: OutboundRequest | OutboundResponse, expected: dict[str, Any]) -> bool:
    message = envelope.message
    assert is_dataclass(message)
    names = {f.name for f in fields(message)}
    for key, want in expected.items():
        if key == "destination":
            have = envelope.destination
        elif key == "epoch" and key not in names:
            epoch_field = next((f for f in _EPOCH_FIELDS if f in names), None)
            if epoch_field is None:
                return False
            have = getattr(message, epoch_field)
        elif key in names:
            have = getattr(message, key)
        else:
            raise AssertionError(f"{type(message).__name__} has no field {key!r}")
        if have != want:
            return False
    return True


__all__ = ["CLUSTER_ID", "METADATA_PARTITION", "RaftTestContext"]
