"""The cluster an interaction transcript drives: the simulation's replicas
(:class:`~kraft.sim.replica.SimNode`: a ``RaftCore``, its ``MemLog``, its
durable ``quorum-state``) on the simulation's :class:`~kraft.sim.network.Network`,
with the network's random delays replaced by a queue the transcript empties
by hand (``deliver-msgs``, ``stabilise``).

Each replica has its own virtual clock (Raft only measures local
durations), so one replica's election timer can fire while the others'
do not (``campaign``, ``tick nodes=...``). The seeded ``random.Random`` gives
each core its own, so a transcript replays the same, run after run. The
simulation's safety invariants (:mod:`kraft.sim.invariants`) are checked
after every command."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kraft.raft.ready import Ready
from kraft.raft.events import InboundRequest, Outbound, OutboundRequest, OutboundResponse, RaftRequest, RequestFailed
from kraft.raft.rpcs import VoteRequest, VoteResponse
from kraft.raft.voters import VoterSet
from kraft.sim.invariants import Invariants
from kraft.sim.network import Network
from kraft.sim.replica import SimNode
from kraft.sim.sim_config import ADMIN_ID, SimulationConfig
from tests.raft.interaction.output import after_send_lines, message_line, ready_is_empty, ready_lines
from tests.raft.transcripts import TranscriptError

__all__ = ["InFlight", "InteractionEnv"]


@dataclass(frozen=True, slots=True)
class InFlight:
    """A message on the wire, as the network queues it (its ``deliver`` event's data)."""

    source: int
    source_incarnation: int
    destination: int | None
    destination_incarnation: int | None
    message: Outbound | RequestFailed

    @property
    def recipient(self) -> int:
        """Whose core it steps: a failed request goes back to its sender."""
        return self.source if self.destination is None else self.destination


class InteractionEnv:
    """The replicas, their clocks and the messages in flight (a ``SimulationHost``)."""

    def __init__(self, seed: int = 1) -> None:
        self.rng = random.Random(seed)
        self.config = SimulationConfig(seed=seed, voters=0, observers=0, legacy_voters=0)
        #: The network's clock; the replicas keep their own (:attr:`clocks`).
        self.now_ms = 0
        self.clocks: dict[int, int] = {}
        self.stats: Counter[str] = Counter()
        self.invariants = Invariants()
        self.voter_set = VoterSet.empty()
        self._nodes: dict[int, SimNode] = {}
        self.network = Network(self, 0.0, admin_answer=self._admin_answer)
        self.in_flight: list[InFlight] = []
        #: The highest high watermark each replica exposed (``commit:`` lines print a move).
        self.committed: dict[int, int | None] = {}
        #: (requester, responder, correlation id) of pre-votes sent: their answers print as PreVoteResp.
        self._pre_votes: set[tuple[int, int, int]] = set()
        self._payloads = 0

    # --- SimulationHost -------------------------------------------------------------

    @property
    def nodes(self) -> Iterator[SimNode]:
        return iter(self._nodes.values())

    @property
    def voter_count(self) -> int:
        return len(self.voter_set)

    def node(self, node_id: int) -> SimNode:
        found = self._nodes.get(node_id)
        if found is None:
            raise TranscriptError(f"no node {node_id} (add-nodes first)")
        return found

    def schedule(self, at_ms: int, kind: str, *data: Any) -> None:
        # The network queues deliveries only; the transcript decides when each arrives.
        if kind == "deliver":
            self.in_flight.append(InFlight(*data))

    def note(self, text: str) -> None:
        pass  # the transcript prints its own lines

    def execute(self, node: SimNode, ready: Ready) -> None:
        self.execute_ready(node, ready)

    def crash(self, node: SimNode, why: str) -> None:
        node.crash(None)

    def next_payload_id(self) -> int:
        self._payloads += 1
        return self._payloads

    def _admin_answer(self, node: SimNode, message: OutboundResponse) -> None:
        pass  # printed as sent (``1->admin ...``)

    def commit_voter_set(self) -> VoterSet | None:
        """(dynamic quorums) What the invariants count a commit against: the
        voter set of the leader exposing the highest high watermark."""
        leaders = [n for n in self._nodes.values() if n.core is not None and n.core.is_leader]
        best = max(leaders, key=lambda n: n.high_watermark or -1, default=None)
        return None if best is None or best.high_watermark is None else best.voters

    def admin(self, node_id: int, request: RaftRequest) -> str:
        """Step an admin client's request (AddRaftVoter, RemoveRaftVoter) into a replica."""
        core = self.up(node_id).core
        assert core is not None
        correlation_id = self.next_payload_id()
        core.step(self.clocks[node_id], InboundRequest(ADMIN_ID, correlation_id, request))
        return message_line(ADMIN_ID, node_id, request)

    # --- replicas -----------------------------------------------------------------

    @property
    def node_ids(self) -> list[int]:
        return sorted(self._nodes)

    def add(self, node: SimNode) -> None:
        self._nodes[node.node_id] = node
        self.clocks.setdefault(node.node_id, 0)

    def up(self, node_id: int) -> SimNode:
        node = self.node(node_id)
        if node.core is None:
            raise TranscriptError(f"node {node_id} is down")
        return node

    def boot(self, node: SimNode) -> None:
        """Build a replica's core from what its disk holds (it receives from now on)."""
        node.start(self.rng.getrandbits(64))
        self.committed[node.node_id] = None

    def initialize(self, node: SimNode) -> list[str]:
        """The booted replica's first Ready, executed; its lines."""
        assert node.core is not None
        return self.execute_ready(node, node.core.initialize(self.clocks[node.node_id]))

    def start(self, node: SimNode) -> list[str]:
        """Start (or restart) a replica: :meth:`boot`, then :meth:`initialize`."""
        self.boot(node)
        return self.initialize(node)

    # --- the shell's part -------------------------------------------------------------

    def execute_ready(self, node: SimNode, ready: Ready) -> list[str]:
        """Execute a Ready as the node's shell must, in its order: persist, log, send;
        returns what it did, one line each."""
        before = self.committed.get(node.node_id)
        if ready_is_empty(ready, before):
            return []
        out = ready_lines(ready)
        if ready.persist is not None:
            node.persist_election(ready.persist)
        for op in ready.log:
            node.log.apply(op)
        for message in ready.send:
            out.append(self._send(node, message))
        out.extend(after_send_lines(ready, before))
        if ready.committed is not None:
            self.committed[node.node_id] = ready.committed
        return out

    def _send(self, node: SimNode, envelope: Outbound) -> str:
        source, destination = node.node_id, envelope.destination
        if isinstance(envelope, OutboundRequest) and isinstance(envelope.message, VoteRequest):
            if envelope.message.pre_vote:
                self._pre_votes.add((source, destination, envelope.correlation_id))
        line = self.line(source, envelope)
        lost = self.stats["messages-lost"]
        self.network.send(node, envelope)
        if self.stats["messages-lost"] != lost:
            down = destination in self._nodes and self._nodes[destination].core is None
            line += " (lost: node down)" if down else " (lost: partitioned)"
        return line

    def line(self, source: int, envelope: Outbound) -> str:
        pre_vote = isinstance(envelope.message, VoteResponse) and (
            (envelope.destination, source, envelope.correlation_id) in self._pre_votes
        )
        return message_line(source, envelope.destination, envelope.message, pre_vote=pre_vote)

    def process_ready(self, node_id: int) -> list[str]:
        """Poll one replica at its clock and execute the Ready (timers fire here)."""
        node = self.up(node_id)
        assert node.core is not None
        return self.execute_ready(node, node.core.poll(self.clocks[node_id]))

    def describe(self, flight: InFlight) -> str:
        if isinstance(flight.message, RequestFailed):
            return message_line(flight.source, flight.message.destination, flight.message)
        return self.line(flight.source, flight.message)

    def deliver(self, flight: InFlight) -> str:
        """Hand one message to its recipient's core (no poll: that is ``process-ready``)."""
        line = self.describe(flight)
        lost = self.stats["messages-lost"]
        accepted = self.network.accept(flight.source, flight.source_incarnation, flight.destination,
                                       flight.destination_incarnation, flight.message)
        if accepted is None:
            # Lost in flight, or answered before the core (ApiVersions, a legacy peer's refusal).
            return line + (" (lost)" if self.stats["messages-lost"] != lost else " (answered without the core)")
        node, inbound = accepted
        assert node.core is not None
        node.core.step(self.clocks[node.node_id], inbound)
        return line

    def take_in_flight(self, *, source: int | None = None, recipient: int | None = None) -> list[InFlight]:
        """The messages in flight from ``source`` to ``recipient`` (None: any), taken off the wire."""
        taken: list[InFlight] = []
        kept: list[InFlight] = []
        for flight in self.in_flight:
            wanted = (source is None or flight.source == source) and (recipient is None or flight.recipient == recipient)
            (taken if wanted else kept).append(flight)
        self.in_flight = kept
        return taken

    def chosen(self, words: list[str]) -> list[int]:
        """The node ids a command names as bare words (``1 2`` or ``1,2``); none: every node."""
        if not words:
            return self.node_ids
        ids = [int(w) for word in words for w in word.split(",") if w]
        for node_id in ids:
            self.node(node_id)
        return ids

    def check_invariants(self) -> None:
        self.invariants.check(self)
