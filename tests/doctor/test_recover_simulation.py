"""The recovery inside the simulation, with its invariants checked after
every event (``kraft/sim/invariants.py``), on the disk-backed replicas
(the node's MetadataLog on real files, fsync watched by the disk model).

A 3-voter dynamic quorum with two observers commits records; two voters
are lost for good (down for ever); the survivor -- a caught-up follower --
is stopped, ``plan_recovery`` / ``apply_recovery`` rewrite its directory
exactly as ``kraft storage recover-quorum --unsafe`` does, it restarts,
elects itself, and both observers join with AddRaftVoter, one at a time.
From then on every invariant holds: one leader per epoch, one vote per
epoch, committed records never change (every record committed before the
loss included), a majority of the voter set durably holds the last
commit, high watermarks and durable epochs never go back. The one rule the
recovery breaks on purpose -- the voter set changing by one voter at a
time (KIP-853) -- is exempted at the recovery's own offset only.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from kraft.config import NodeConfig
from kraft.doctor.quorum_recovery import apply_recovery, plan_recovery
from kraft.raft.errors import Errors
from kraft.raft.events import OutboundResponse
from kraft.raft.rpcs import AddRaftVoterRequest, AddRaftVoterResponse
from kraft.raft.roles import Leader
from kraft.records.state_files import MetaProperties
from kraft.sim.disklog import DiskLog
from kraft.sim.invariants import InvariantViolation, VoterChangesOneAtATime
from kraft.sim.simulation import CLUSTER_ID, SimNode, Simulation, SimulationConfig

pytestmark = pytest.mark.slow


class OneAtATimeExceptTheRecovery(VoterChangesOneAtATime):
    """KIP-853's rule, except for the recovery's VotersRecord at ``offset``."""

    def __init__(self, offset: int) -> None:
        super().__init__()
        self.offset = offset

    def check(self, cluster: object) -> None:
        for node in cluster.nodes:  # type: ignore[attr-defined]
            history = node.log.kraft_control.voter_history()
            for before, after in zip(history, history[1:]):
                old, new = self._members(before.voters), self._members(after.voters)
                if len(old ^ new) > 1 and after.offset != self.offset:
                    raise InvariantViolation(self.name, f"node {node.node_id}: {sorted(old)} -> {sorted(new)} "
                                                        f"at offset {after.offset}")


class LostMajority(Simulation):
    def __init__(self, config: SimulationConfig, backup: Path) -> None:
        super().__init__(config)
        self.backup = backup
        self.committed_before: dict[int, tuple[int, bytes]] = {}
        self.survivor: SimNode | None = None
        #: The admin client's answers, by correlation id.
        self.admin_answers: dict[int, object] = {}
        noted = self.network.admin_answer

        def answered(node: SimNode, message: OutboundResponse) -> None:
            self.admin_answers[message.correlation_id] = message.message
            noted(node, message)
        self.network.admin_answer = answered

    async def _wait(self, what: str, done: Callable[[], bool], limit_ms: int = 30_000) -> None:
        if not await self._run_until(self.now_ms + limit_ms, until=done):
            raise self._fail(f"timed out waiting for {what}")

    async def _appending(self, duration_ms: int) -> None:
        end = self.now_ms + duration_ms
        while self.now_ms < end:
            self._client_append()
            await self._run_until(self.now_ms + 100)

    def _recover(self, survivor: SimNode, disks: object) -> int:
        """What an operator does: stop the node, run recover-quorum --unsafe."""
        self.note(f"node {survivor.node_id} stopped for recovery")
        survivor.core = None
        survivor.timer_token += 1
        assert isinstance(survivor.log, DiskLog)
        generation = survivor.log.generation
        survivor.log.close()
        partition = survivor.log.directory
        metadata_dir = partition.parent
        MetaProperties(1, CLUSTER_ID, survivor.node_id, survivor.directory_id).write(metadata_dir / "meta.properties")
        config = NodeConfig.from_properties({
            "process.roles": "controller", "node.id": str(survivor.node_id),
            "listeners": f"CONTROLLER://node-{survivor.node_id}:{survivor.port}",
            "controller.listener.names": "CONTROLLER",
            "controller.quorum.bootstrap.servers": f"node-{survivor.node_id}:{survivor.port}",
            "metadata.log.dir": str(metadata_dir)})
        plan = plan_recovery(config, backup_dir=self.backup)
        apply_recovery(plan, now_ms=self.now_ms)
        model = disks.model  # type: ignore[attr-defined]
        model.untrack(partition)
        model.track(partition)
        survivor.log = DiskLog(partition, model, lambda: self.now_ms, None, CLUSTER_ID, generation=generation + 1)
        survivor.durable_election = survivor.log.read_election()
        return plan.log_end_offset

    async def _add_voter(self, leader: SimNode, node: SimNode, attempts: int = 5) -> None:
        """AddRaftVoter for ``node``, answered NONE (sent with
        ack_when_committed: after the new voter set committed). Kafka's
        AddVoterHandler answers REQUEST_TIMED_OUT when the change cannot be
        made yet and may be asked again -- a previous voter change not
        committed, no high watermark in this epoch, the new voter lagging
        behind or not answering ApiVersions -- so that is retried; any other
        error fails the test at once with the leader's answer."""
        for attempt in range(1, attempts + 1):
            correlation_id = self.faults.admin_send(leader, AddRaftVoterRequest(
                cluster_id=CLUSTER_ID, voter_key=node.replica_key, listeners=node.endpoints))
            await self._wait(f"the answer to AddRaftVoter for node {node.node_id}",
                             lambda: correlation_id in self.admin_answers)
            answer = self.admin_answers[correlation_id]
            assert isinstance(answer, AddRaftVoterResponse), answer
            if answer.error == Errors.NONE:
                return
            if answer.error != Errors.REQUEST_TIMED_OUT or attempt == attempts:
                raise self._fail(f"AddRaftVoter for node {node.node_id} (attempt {attempt}) answered "
                                 f"{answer.error.name}: {answer.error_message}")
            await self._run_until(self.now_ms + 1000)

    async def _run(self):  # type: ignore[no-untyped-def]
        with self._storage() as disks:
            assert disks is not None
            try:
                nodes = list(self._nodes.values())
                for node in nodes:
                    node.format(disks)
                for node in nodes:
                    self._start_node(node)
                # No chaos, no lost messages: the loss below is the fault.
                self._faults = False
                self.network.drop_rate = 0.0
                await self._wait("a leader", lambda: self._stable_leader() is not None)
                await self._appending(3000)
                await self._run_until(self.now_ms + 3000)  # quiet: followers catch up
                leader = self._stable_leader()
                assert leader is not None
                voters = [n for n in nodes if n.node_id <= self.config.voters]
                survivor = next(n for n in voters if n is not leader
                                and n.log.end_offset == leader.log.end_offset)
                self.survivor = survivor
                self.committed_before = dict(self.invariants.stable.committed)
                for node in voters:
                    if node is not survivor:
                        self.crash(node, "lost for good")  # no faults: never restarted
                recovered_at = self._recover(survivor, disks)
                self.invariants.voter_changes = OneAtATimeExceptTheRecovery(recovered_at)
                self._start_node(survivor)
                await self._wait("the survivor to lead alone", lambda: isinstance(survivor.role, Leader))
                for node in nodes:
                    if node.node_id <= self.config.voters:
                        continue
                    # As an operator does: the new controller follows the new leader first.
                    await self._wait(f"node {node.node_id} to follow the survivor",
                                     lambda n=node: n.core is not None and survivor.core is not None  # type: ignore[misc]
                                     and n.core.epoch == survivor.core.epoch
                                     and n.log.end_offset == survivor.log.end_offset)
                    # ... and, as `describe --replication` shows, until the leader has
                    # seen it caught up: its own log end is known a fetch before the
                    # leader's view, and AddRaftVoter refuses a lagging observer at once
                    # (REQUEST_TIMED_OUT "lagging behind", Kafka's AddVoterHandler).
                    await self._wait(f"the leader to see node {node.node_id} caught up",
                                     lambda n=node: _caught_up(survivor, n, self.now_ms))  # type: ignore[misc]
                    await self._add_voter(survivor, node)
                    await self._wait(f"node {node.node_id} to become a voter",
                                     lambda n=node: survivor.core is not None  # type: ignore[misc]
                                     and survivor.core.voters.is_voter(n.replica_key)
                                     and (survivor.high_watermark or 0) >= survivor.log.end_offset)
                await self._appending(3000)
                members = [survivor, *(n for n in nodes if n.node_id > self.config.voters)]
                target = survivor.log.end_offset
                await self._wait("the new voters to commit everything",
                                 lambda: all((n.committed_offset or 0) >= target for n in members))
                self.invariants.check(self)
            except InvariantViolation as e:
                raise self._fail(f"invariant violated: {e}") from None
            return sorted(k.id for k in survivor.core.voters.voter_keys), {  # type: ignore[union-attr]
                o: survivor.log.entry_at(o) for o in self.committed_before if o >= survivor.log.start_offset}


def _caught_up(leader: SimNode, node: SimNode, now_ms: int) -> bool:
    """The leader's DescribeQuorum lists ``node`` as an observer at the leader's log end."""
    info = leader.core.describe_quorum(now_ms) if leader.core is not None else None
    return info is not None and any(
        o.replica_id == node.node_id and o.log_end_offset >= leader.log.end_offset
        and o.last_caught_up_ms is not None for o in info.observers)


def _run(sim: LostMajority) -> tuple[list[int], dict[int, tuple[int, bytes] | None]]:
    import trio

    return trio.run(sim._run)  # type: ignore[no-any-return]


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_recovery_keeps_every_committed_record_and_the_invariants_hold_from_then_on(tmp_path: Path,
                                                                                       seed: int) -> None:
    sim = LostMajority(SimulationConfig(seed=seed, voters=3, observers=2, dynamic=True, storage="disk"),
                       tmp_path / "backup")
    voters, kept = _run(sim)
    assert sim.survivor is not None
    assert voters == sorted([sim.survivor.node_id, 4, 5])
    assert len(sim.committed_before) > 20, "the quorum barely committed anything before the loss"
    assert kept == {o: e for o, e in sim.committed_before.items() if o in kept}
    assert (tmp_path / "backup" / "__cluster_metadata-0").is_dir()


