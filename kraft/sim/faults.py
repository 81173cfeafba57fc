"""The faults of a simulation's chaos phase, drawn from the run's seed:
partitions, isolation, crashes (also in the middle of executing a Ready),
graceful shutdowns, resignations, message-loss bursts, a disk whose fsync
fails (disk runs: the replica must fail-stop), and in reconfig runs the
KIP-853 membership changes an admin client asks for."""

from __future__ import annotations

from kraft.raft.errors import Errors
from kraft.raft.events import OutboundResponse
from kraft.raft.rpcs import AddRaftVoterRequest, RemoveRaftVoterRequest
from kraft.raft.roles import Leader
from kraft.raft.voters import VoterSet
from kraft.sim.sim_config import CLUSTER_ID
from kraft.sim.disklog import DiskLog
from kraft.sim.host import SimulationHost
from kraft.sim.network import Network
from kraft.sim.replica import SimNode

__all__ = ["FaultInjector"]


class FaultInjector:
    """Injects one fault at a time into the host's replicas and network."""

    def __init__(self, host: SimulationHost, network: Network) -> None:
        self.host = host
        self.network = network

    def inject_fault(self) -> None:
        kind = self._draw_kind()
        if kind in ("add-voter", "remove-voter", "replace-disk", "move-endpoint"):
            self._inject_membership_fault(kind)
            return
        up = [n for n in self.host.nodes if n.core is not None]
        all_ids = [n.node_id for n in self.host.nodes]
        match kind:
            case "partition" if len(all_ids) > 1:
                self._partition(all_ids)
            case "isolate" if up:
                self._isolate(self._pick_leader_or_any(up), all_ids)
            case "crash" if up:
                self.host.crash(self._pick_leader_or_any(up), "fault")
            case "crash-mid-ready" if up:
                victim = self._pick_leader_or_any(up)
                victim.crash_armed = True
                self.host.note(f"node {victim.node_id} will crash while executing its next Ready")
            case "shutdown-leader":
                leaders = [n for n in up if isinstance(n.role, Leader) and not n.shutting_down]
                if leaders:
                    node = leaders[0]
                    node.shutting_down = True
                    assert node.core is not None
                    self.host.note(f"graceful shutdown of leader {node.node_id}")
                    self.host.execute(node, node.core.begin_shutdown(self.host.now_ms, 5000))
            case "resign":
                for node in up:
                    if isinstance(node.role, Leader) and node.core is not None:
                        self.host.note(f"leader {node.node_id} asked to resign")
                        self.host.stats["resign-requests"] += 1
                        node.core.resign(node.core.epoch)
                        self.host.execute(node, node.core.poll(self.host.now_ms))
                        break
            case "fsync-fault" if up:
                victim = self._pick_leader_or_any(up)
                if isinstance(victim.log, DiskLog):
                    # Until the node fail-stops (its next fsync) or the run heals.
                    self.host.note(f"node {victim.node_id}'s disk starts failing every fsync (EIO)")
                    self.host.stats["fsync-faults"] += 1
                    victim.log.fail_fsync()
            case "drop-burst":
                old = self.network.drop_rate
                self.network.drop_rate = 0.3
                self.host.note("30% message loss for a while")
                self.host.schedule(self.host.now_ms + self.host.rng.randint(200, 2000), "fault-restore-drop", old)
            case _:
                pass

    def _draw_kind(self) -> str:
        """The next fault, drawn with the run's weights: membership changes
        only in reconfig runs, a failing disk only in disk runs."""
        kinds = [
            "partition",
            "isolate",
            "crash",
            "crash-mid-ready",
            "shutdown-leader",
            "resign",
            "drop-burst",
            "nothing",
        ]
        weights = [3, 3, 3, 3, 1, 1, 1, 2]
        if self.host.config.reconfig:
            kinds += ["add-voter", "remove-voter", "replace-disk", "move-endpoint"]
            weights += [5, 4, 2, 1]
        if self.host.config.storage == "disk":
            kinds.append("fsync-fault")
            weights.append(2)
        return self.host.rng.choices(kinds, weights=weights)[0]

    def _partition(self, all_ids: list[int]) -> None:
        """Split the nodes in two random sides that cannot reach each other
        (both directions) for a while."""
        side = set(self.host.rng.sample(all_ids, self.host.rng.randint(1, len(all_ids) - 1)))
        duration = self.host.rng.randint(500, 6000)
        self.host.note(f"partition {sorted(side)} | {sorted(set(all_ids) - side)} for {duration}ms")
        self.host.stats["partitions"] += 1
        for a in side:
            for b in set(all_ids) - side:
                self._block((a, b), duration)
                self._block((b, a), duration)

    def _isolate(self, victim: SimNode, all_ids: list[int]) -> None:
        """Cut one node off from every other for a while: both directions,
        or (30% of the time) only what it receives."""
        duration = self.host.rng.randint(1000, 6000)
        one_way = self.host.rng.random() < 0.3
        self.host.note(f"isolate node {victim.node_id} for {duration}ms{' (inbound only)' if one_way else ''}")
        self.host.stats["isolations"] += 1
        for other in all_ids:
            if other == victim.node_id:
                continue
            self._block((other, victim.node_id), duration)
            if not one_way:
                self._block((victim.node_id, other), duration)

    def _block(self, link: tuple[int, int], duration: int) -> None:
        """Drop what ``link`` carries for ``duration`` ms (a link already down
        keeps its own heal time)."""
        if link not in self.network.blocked:
            self.network.blocked.add(link)
            self.host.schedule(self.host.now_ms + duration, "heal-link", *link)

    # --- membership changes (reconfig runs) ---------------------------------------------------

    def _leader(self) -> SimNode | None:
        leaders = [n for n in self.host.nodes if n.core is not None and isinstance(n.role, Leader)]
        return max(leaders, key=lambda n: n.core.epoch if n.core else -1) if leaders else None

    def _live(self, voters: VoterSet) -> int:
        """Voters whose replica still exists (its disk was not wiped since)."""
        return sum(1 for key in voters.voter_keys if self.host.node(key.id).replica_key == key)

    def _voter_sets_in_play(self) -> list[VoterSet]:
        """Every voter set some replica's log holds now (they differ while a
        change is uncommitted)."""
        sets: list[VoterSet] = []
        for node in self.host.nodes:
            voters = node.voters
            if len(voters) and voters not in sets:
                sets.append(voters)
        return sets

    def _inject_membership_fault(self, kind: str) -> None:
        up = [n for n in self.host.nodes if n.core is not None]
        leader = self._leader()
        match kind:
            case "add-voter" if leader is not None:
                voters = leader.voters
                candidates = [n for n in up if not voters.is_voter(n.replica_key) and n.replica_key.id not in voters]
                if not candidates:
                    return
                new = self.host.rng.choice(candidates)
                request: AddRaftVoterRequest | RemoveRaftVoterRequest = AddRaftVoterRequest(
                    cluster_id=CLUSTER_ID, voter_key=new.replica_key, listeners=new.endpoints
                )
                self.admin_send(leader if self.host.rng.random() < 0.85 else self.host.rng.choice(up), request)
            case "remove-voter" if leader is not None:
                voters = leader.voters
                if len(voters) < 2:
                    return
                # Stale keys (wiped disks) first; never leave the live voters a minority.
                stale = [k for k in voters.voter_keys if self.host.node(k.id).replica_key != k]
                keys = stale if stale and self.host.rng.random() < 0.7 else list(voters.voter_keys)
                key = self.host.rng.choice(keys)
                remaining = voters.remove_voter(key)
                if remaining is None or self._live(remaining) < remaining.majority_size:
                    return
                request = RemoveRaftVoterRequest(cluster_id=CLUSTER_ID, voter_key=key)
                self.admin_send(leader if self.host.rng.random() < 0.85 else self.host.rng.choice(up), request)
            case "replace-disk":
                # A leader still counts what the lost disk fetched; only a disk
                # holding nothing uncommitted can go without a later commit
                # being counted on a copy that no longer exists (the disk-loss
                # hazard KIP-853 cannot remove: it is beyond the crash model).
                committed_end = self.host.invariants.stable.committed_end
                spare = [n for n in self.host.nodes if n.log.end_offset <= committed_end]
                if not spare:
                    return
                victim = self.host.rng.choice(spare)
                key = victim.replica_key
                for voters in self._voter_sets_in_play():
                    if voters.is_voter(key) and self._live(voters) - 1 < voters.majority_size:
                        return  # it would leave a voter set without a live majority
                commit_voters = self.host.invariants.commit_voters
                if commit_voters is not None and commit_voters.is_voter(key):
                    holders = self.host.invariants.durable.holders(self.host, self.host.invariants.stable.committed, commit_voters)
                    if len([h for h in holders if h != victim.node_id]) < commit_voters.majority_size:
                        return  # it would lose a committed record
                self.host.note(f"disk of node {victim.node_id} replaced (directory {key.directory_id} is gone)")
                self.host.stats["disks-replaced"] += 1
                victim.wipe_disk()
                self.host.schedule(self.host.now_ms + self.host.rng.randint(200, 3000), "restart", victim.node_id)
            case "move-endpoint" if up:
                victim = self.host.rng.choice(up)
                self.host.crash(victim, "moving to another port")
                victim.port += 1
                self.host.stats["endpoint-moves"] += 1
            case _:
                pass

    def admin_send(self, target: SimNode, request: object) -> int:
        """Send ``request`` as the admin client; its correlation id (the
        answer, if any, goes to ``Network.admin_answer`` with it)."""
        correlation_id = 10_000_000 + self.host.next_payload_id()
        self.host.stats[f"admin-{type(request).__name__}"] += 1
        delay = self.host.rng.randint(self.host.config.min_delay_ms, self.host.config.max_delay_ms)
        self.host.schedule(self.host.now_ms + delay, "admin", target.node_id, target.incarnation, correlation_id, request)
        return correlation_id

    def admin_answer(self, node: SimNode, message: OutboundResponse) -> None:
        answer = message.message
        error = getattr(answer, "error", Errors.NONE)
        self.host.stats[f"admin-{type(answer).__name__}-{error.name}"] += 1
        detail = getattr(answer, "error_message", None)
        self.host.note(f"node {node.node_id}->admin #{message.correlation_id} {type(answer).__name__} {error.name} {detail or ''}")

    def _pick_leader_or_any(self, up: list[SimNode]) -> SimNode:
        leaders = [n for n in up if isinstance(n.role, Leader)]
        if leaders and self.host.rng.random() < 0.5:
            return leaders[0]
        return self.host.rng.choice(up)
