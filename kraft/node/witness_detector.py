"""Detecting a Kafka quorum, for the witness decision (:mod:`kraft.raft.witness_policy`).

Two kinds of evidence feed the :class:`~kraft.raft.witness_policy.WitnessPolicy`:

* **The other voters' ApiVersions** on the controller listener.
  :class:`WitnessDetector` asks every other voter, on the raft connection
  to it, ApiVersions (and on first contact DescribeCluster, endpoint type 2,
  for its cluster id, and DescribeQuorum, for the voter set if it leads) and
  hands the advertised api keys to the policy: a Kafka controller lists
  BrokerRegistration, BrokerHeartbeat, CreateTopics, ... which kraft lacks.
  Voters not heard yet are asked again with an exponential backoff; heard
  ones every :data:`REFRESH_MS`. When no voter answers a round, one line
  says so; one more when one answers again -- never one per attempt. A
  voter of another cluster, or (static quorum) a leader whose voter set does
  not name this configured voter, is one ERROR line naming both sides, and
  its answer is no evidence.

  The voter set is never read from DescribeCluster: a Kafka controller
  lists there the controllers that *registered* (ControllerRegistrationRecord,
  KIP-919; ``ControllerApis.handleDescribeCluster`` answers from
  ``ControllerRegistrationsPublisher.describeClusterControllers``), and a
  kraft witness, having no QuorumController, never registers. A static
  voter set is this node's ``controller.quorum.voters`` (Kafka's
  ``QuorumConfig.parseVoterConnections``), a dynamic one the log's
  VotersRecord; the only peer that states the quorum's voters is its leader,
  in DescribeQuorum (``KafkaRaftClient.handleDescribeQuorumRequest``; any
  other voter answers NOT_LEADER_OR_FOLLOWER).
* **The local log**: :func:`scan_for_kafka_metadata` looks at the latest
  snapshot and the first batches of the log for what only a Kafka controller
  writes: a ``metadata.version`` FeatureLevelRecord, a RegisterBrokerRecord
  or RegisterControllerRecord. (A Kafka leader writes its bootstrap
  metadata in its first epoch, and every Kafka snapshot starts with the
  features.) This keeps a restarted kraft voter a witness even when no Kafka
  controller is reachable yet.

What each voter answered is also written, when it changes, to kraft's
``voter-api-versions`` file beside ``quorum-state`` (``save``;
:mod:`kraft.records.voter_api_versions`), from which the node seeds the
policy at its next start: a voter dead for good still counts as what it was.
A failed write is one ERROR line and is retried every round; a stop,
even in the middle of a round, writes what was heard so far.

The decision is logged at INFO once at start and on every change (of the
state or of its reason), as
``kraft.witness: witness: voter 1 advertises Kafka controller APIs ...``.
The module depends on small callables, not on the node.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trio

from kraft.controller.describe_cluster_rpc import ENDPOINT_TYPE_CONTROLLER, cluster_view, describe_cluster_request
from kraft.messages.errors import KraftProtocolError
from kraft.messages.generated import api_versions_request as av_req
from kraft.raft.rpcs import describe_quorum_rpc
from kraft.raft.witness_policy import WitnessDecision, WitnessPolicy
from kraft.records.batch import iter_batches
from kraft.records.errors import RecordsError, StateFileError
from kraft.records.snapshot import BOOTSTRAP_SNAPSHOT_ID
from kraft.records.metadata import MetadataRecordError, decode_metadata_record, read_frame_header
from kraft.records.voter_api_versions import RememberedAnswer, read_voter_api_versions
from kraft.wire.apis import ApiKey
from kraft.wire.network_client import CLIENT_SOFTWARE_NAME, CLIENT_SOFTWARE_VERSION, ClientPool, PeerClientError

log = logging.getLogger("kraft.node")

__all__ = ["PeerAnswer", "WitnessDetector", "kafka_metadata_evidence", "remembered_answers", "scan_for_kafka_metadata",
           "REFRESH_MS"]

#: How often voters already heard are asked again.
REFRESH_MS = 30_000
#: The backoff between rounds while some voter is unheard.
MIN_BACKOFF_MS = 100
MAX_BACKOFF_MS = 5_000
#: How long a stopping node waits to record the answers heard last.
SAVE_ON_STOP_S = 5.0
#: How much of the log and the latest snapshot the start-up scan reads.
SCAN_BATCHES = 256
SCAN_SNAPSHOT_BYTES = 4 << 20

#: Metadata record types only a Kafka controller writes (type id -> name).
_KAFKA_RECORDS = {0: "RegisterBrokerRecord", 27: "RegisterControllerRecord"}
_FEATURE_LEVEL = 12

@dataclass(frozen=True, slots=True)
class PeerAnswer:
    """What one voter said: the api keys its ApiVersions advertised, its
    cluster id from DescribeCluster (endpoint type 2), and -- only when it
    leads -- the voter set of its DescribeQuorum answer (None otherwise)."""

    api_keys: tuple[int, ...]
    cluster_id: str | None = None
    voter_ids: tuple[int, ...] | None = None


async def probe_peer(pool: ClientPool, supported: Mapping[Any, tuple[int, int]], node_id: int,
                     address: tuple[str, int], describe: bool = True) -> PeerAnswer | None:
    """ApiVersions, then with ``describe`` DescribeCluster (endpoint type
    2: its cluster id, read as :func:`kraft.controller.describe_cluster_rpc.cluster_view`)
    and DescribeQuorum (the voter set, answered by the leader alone), to one
    voter on the raft connection to it from ``pool`` (so an outage is logged
    once by that connection, not once per probe); None when it cannot be
    reached. ``supported``: the versions this node speaks."""
    client = pool.get(node_id, *address)
    try:
        await client.request(ApiKey.API_VERSIONS, lambda v: av_req.ApiVersionsRequest(
            client_software_name=CLIENT_SOFTWARE_NAME, client_software_version=CLIENT_SOFTWARE_VERSION),
            max_version=supported[ApiKey.API_VERSIONS][1])
        advertised = client.api_versions or {}
        answer = PeerAnswer(tuple(sorted(advertised)))
        if describe and advertised.get(ApiKey.DESCRIBE_CLUSTER, (0, 0))[1] >= 1:
            _, body = await client.request(
                ApiKey.DESCRIBE_CLUSTER,
                describe_cluster_request(ENDPOINT_TYPE_CONTROLLER),
                max_version=supported[ApiKey.DESCRIBE_CLUSTER][1])
            if body.error_code == 0:
                # Its controllers are the registered ones, not the voters (see the module docstring).
                answer = PeerAnswer(answer.api_keys, cluster_view(body).cluster_id)
        if describe and ApiKey.DESCRIBE_QUORUM in advertised:
            _, body = await client.request(ApiKey.DESCRIBE_QUORUM, describe_quorum_rpc.request,
                                           max_version=supported[ApiKey.DESCRIBE_QUORUM][1])
            info = describe_quorum_rpc.quorum_answer(body).info  # None unless it leads
            if info is not None:
                answer = PeerAnswer(answer.api_keys, answer.cluster_id, tuple(sorted(v.replica_id for v in info.voters)))
    except (PeerClientError, KraftProtocolError) as e:
        log.debug("witness probe of node %d at %s:%d failed: %s", node_id, *address, e)
        return None
    return answer


#: node id -> its controller endpoint (None: unknown address).
Addresses = Mapping[int, "tuple[str, int] | None"]


def kafka_metadata_evidence(records: Iterable[tuple[int, bytes | memoryview | None]]) -> str | None:
    """The first Kafka controller record among ``(offset, value)`` pairs,
    named with its offset; None if there is none. A value must decode whole
    to count (an application's own bytes that merely look alike do not)."""
    for offset, value in records:
        if value is None:
            continue
        try:
            api_key, _, _ = read_frame_header(value)
            if api_key not in _KAFKA_RECORDS and api_key != _FEATURE_LEVEL:
                continue
            record = decode_metadata_record(value)
        except MetadataRecordError:
            continue
        if api_key in _KAFKA_RECORDS:
            return f"{_KAFKA_RECORDS[api_key]} at offset {offset}"
        if getattr(record.message, "name", None) == "metadata.version":
            return f"metadata.version FeatureLevelRecord at offset {offset}"
    return None


def _batch_records(data: bytes | memoryview) -> Iterable[tuple[int, bytes | memoryview | None]]:
    try:
        for batch in iter_batches(data):
            if batch.is_control:
                continue
            for record in batch.records():
                yield record.offset, record.value
    except RecordsError:
        return  # a prefix read cut the last batch: what was read is enough


def scan_for_kafka_metadata(mlog: Any) -> str | None:
    """Kafka controller metadata in the latest snapshot but the bootstrap one (its first
    :data:`SCAN_SNAPSHOT_BYTES`) or the first :data:`SCAN_BATCHES` batches of
    the log; ``mlog`` is a :class:`~kraft.records.log.MetadataLog`. Run it
    where the log may be read (the node does it at start, before the raft core exists)."""
    snapshot_id = mlog.latest_snapshot_id()
    # The bootstrap snapshot (0-0) is no evidence: Kafka 4.4's
    # ``kafka-storage format`` writes metadata.version into it on every
    # controller (KIP-1170, ``Formatter``), a kraft-only quorum's included.
    if snapshot_id is not None and snapshot_id != BOOTSTRAP_SNAPSHOT_ID:
        part = mlog.read_snapshot(snapshot_id, 0, SCAN_SNAPSHOT_BYTES)
        if part is not None:
            found = kafka_metadata_evidence(_batch_records(part.data))
            if found is not None:
                return f"{found} of snapshot {snapshot_id.offset}-{snapshot_id.epoch}"

    def log_records() -> Iterable[tuple[int, bytes | memoryview | None]]:
        for count, batch in enumerate(mlog.iter_batches()):
            if count >= SCAN_BATCHES:
                return
            if not batch.is_control:
                for record in batch.records():
                    yield record.offset, record.value

    try:
        return kafka_metadata_evidence(log_records())
    except RecordsError:
        return None


def remembered_answers(partition_dir: Path) -> tuple[RememberedAnswer, ...]:
    """The voters' ApiVersions answers of earlier runs (kraft's
    ``voter-api-versions`` in ``partition_dir``); a damaged file is one line
    and counts as nothing heard (the witness decision then waits for live
    answers, as on a first start), never a reason not to start."""
    try:
        return read_voter_api_versions(partition_dir)
    except StateFileError as e:
        log.warning("kraft.witness: ignoring %s: %s; treated as no voter heard before this start (it is rewritten "
                    "from the voters' next answers)", e.path, e.reason)
        return ()


class WitnessDetector:
    """Feeds the policy with the other voters' ApiVersions and logs the
    decision (see the module docstring).

    ``voters()`` gives the current voters' controller endpoints (our own id
    included or not); ``probe(node_id, address, describe)`` asks one of them
    ApiVersions and, with ``describe``, DescribeCluster (a :class:`PeerAnswer`),
    None when it cannot be reached; ``changed()`` is called when the decision changed (wake the raft
    core). ``cluster_id`` is this node's (meta.properties): a voter of
    another cluster is reported in one line (naming both ids) and its answer
    is no evidence; so is a leader whose voter set does not name this node
    while this node is configured as a voter. ``directories()`` gives the
    current voters' directory ids (None in a static quorum); ``save(answers)``
    (blocking, run in a thread) keeps the policy's answers durably, called
    when they changed since the last save (or since the policy was seeded)."""

    def __init__(
        self,
        policy: WitnessPolicy,
        local_id: int,
        *,
        voters: Callable[[], Addresses],
        probe: Callable[[int, tuple[str, int], bool], Awaitable[PeerAnswer | None]],
        changed: Callable[[], object] = lambda: None,
        clock_ms: Callable[[], float] = lambda: trio.current_time() * 1000,
        cluster_id: str | None = None,
        voters_source: str = "controller.quorum.voters",
        directories: Callable[[], Mapping[int, uuid.UUID | None]] = dict,
        save: Callable[[tuple[RememberedAnswer, ...]], object] | None = None,
    ) -> None:
        self.policy = policy
        self._directories = directories
        self._save = save
        #: What the file holds (as seeded, or as last written).
        self._saved = policy.answers()
        #: The last write failure reported (one line per distinct failure).
        self._save_error: str | None = None
        self.local_id = local_id
        self._voters = voters
        self._probe = probe
        self._changed = changed
        self._clock_ms = clock_ms
        self._heard_at: dict[int, float] = {}
        self._logged: WitnessDecision | None = None
        self._unreachable: tuple[int, ...] | None = None
        self.cluster_id = cluster_id
        self._voters_source = voters_source
        #: node id -> the mismatch last reported about it (one line per change).
        self._problems: dict[int, str] = {}
        #: Rounds of probes made (for tests and status).
        self.rounds = 0

    @property
    def decision(self) -> WitnessDecision:
        return self.policy.decide(self.local_id, tuple(self._voters()))

    def _decision_maybe_changed(self) -> None:
        voters = tuple(self._voters())
        if self.local_id not in voters:
            return  # an observer: nothing to decide
        decision = self.policy.decide(self.local_id, voters)
        if decision != self._logged:
            log.info("kraft.witness: %s", decision.describe())
            self._logged = decision
            self._changed()

    async def run(self) -> None:
        """Run until cancelled: rounds of probes, logging each decision change."""
        self.policy.note_voter_directories(self._directories())
        self._decision_maybe_changed()
        backoff = MIN_BACKOFF_MS
        try:
            while True:
                complete = await self._round()
                self._decision_maybe_changed()
                await self.save_answers()
                if complete:
                    backoff = MIN_BACKOFF_MS
                    await trio.sleep(1.0)  # notice voter set changes; refresh per REFRESH_MS
                else:
                    await trio.sleep(backoff / 1000)
                    backoff = min(MAX_BACKOFF_MS, backoff * 2)
        finally:
            # A stop in the middle of a round (one voter slow to answer) must
            # not forget the answers already heard in it: the next start
            # counts them (a voter dead by then never answers again).
            with trio.move_on_after(SAVE_ON_STOP_S) as scope:
                scope.shield = True
                await self.save_answers()

    async def _round(self) -> bool:
        """Probe the voters due; True when every other voter has been heard."""
        now = self._clock_ms()
        voters = self._voters()
        others = {i: a for i, a in voters.items() if i != self.local_id}
        directories = self._directories()
        self.policy.note_voter_directories(directories)
        for i in list(self._heard_at):
            if directories.get(i) != self.policy.heard_directory(i):
                # Another replica under that id (KIP-853): ask it now.
                del self._heard_at[i]
        due = {i: a for i, a in others.items()
               if a is not None and (i not in self._heard_at or now - self._heard_at[i] >= REFRESH_MS)}
        if not due:
            return all(i in self._heard_at for i in others)
        self.rounds += 1

        async def ask(node_id: int, address: tuple[str, int]) -> None:
            # DescribeCluster only on first contact (and after a failure or a
            # mismatch): a refresh of a voter already heard is ApiVersions alone.
            answer = await self._probe(node_id, address, node_id not in self._heard_at)
            problem = None if answer is None else self._mismatch(node_id, address, answer, others)
            self._report(node_id, problem)
            if answer is None or problem is not None:
                # Asked again with the backoff; what it advertised is kept.
                self._heard_at.pop(node_id, None)
            else:
                self.policy.heard(node_id, answer.api_keys, directories.get(node_id))
                self._heard_at[node_id] = self._clock_ms()

        async with trio.open_nursery() as nursery:
            for node_id, address in sorted(due.items()):
                nursery.start_soon(ask, node_id, address)
        if self.local_id in voters:  # an observer decides nothing (see _note_reachability)
            self._note_reachability(others)
        return all(i in self._heard_at for i in others)

    async def save_answers(self) -> None:
        """Write the policy's answers when they changed since the last write;
        a failure is one ERROR line (per distinct failure) and is retried
        next round (the answers heard stay in force in memory)."""
        answers = self.policy.answers()
        if self._save is None or answers == self._saved:
            return
        try:
            await trio.to_thread.run_sync(self._save, answers)
        except OSError as e:
            problem = str(e)
            if problem != self._save_error:
                log.error("kraft.witness: could not record the voters' ApiVersions answers (%s); retrying, and "
                          "until it succeeds a restart forgets what was heard since the last write", problem)
                self._save_error = problem
            return
        if self._save_error is not None:
            log.info("kraft.witness: the voters' ApiVersions answers are recorded again")
            self._save_error = None
        self._saved = answers

    def _mismatch(self, node_id: int, address: tuple[str, int], answer: PeerAnswer,
                  others: Mapping[int, Any]) -> str | None:
        """Why ``answer`` is not from a voter of this node's quorum, or None."""
        where = f"voter {node_id} at {address[0]}:{address[1]}"
        if self.cluster_id is not None and answer.cluster_id is not None and answer.cluster_id != self.cluster_id:
            return (f"{where} belongs to cluster {answer.cluster_id}, this node to cluster {self.cluster_id} "
                    f"(its meta.properties): nothing is fetched from it; point {self._voters_source} at this "
                    f"cluster's controllers, or format this node with -t {answer.cluster_id}")
        theirs = answer.voter_ids  # the leader's voter set, from DescribeQuorum
        # Only a static voter set is this node's configuration (a dynamic
        # one is the log's, and a peer may lag behind a change for a while).
        static = self._voters_source == "controller.quorum.voters"
        if static and theirs and self.local_id not in theirs and self.local_id in self._voters():
            ours = sorted({*others, self.local_id})
            return (f"this node is configured as voter {self.local_id} of {ours} ({self._voters_source}), but "
                    f"{where}, the quorum's leader, has the voter set {sorted(theirs)}, which does not name it: fix "
                    f"{self._voters_source}, or add this node with add-controller")
        return None

    def _report(self, node_id: int, problem: str | None) -> None:
        if problem == self._problems.get(node_id):
            return
        if problem is not None:
            log.error("kraft.witness: %s", problem)
            self._problems[node_id] = problem
        else:
            self._problems.pop(node_id, None)

    def _note_reachability(self, others: Mapping[int, Any]) -> None:
        """One line when no other voter answers, one when some voter answers
        again -- said by a voter only: an observer decides nothing, and its
        connection to the leader says when that is down."""
        reachable = [i for i in others if i in self._heard_at]
        state = tuple(sorted(others)) if others and not reachable else None
        if state == self._unreachable:
            return
        if state is not None:
            log.warning("kraft.witness: cannot reach any other voter (%s) with ApiVersions; retrying with backoff "
                        "up to %d ms", ", ".join(str(i) for i in state), MAX_BACKOFF_MS)
        elif self._unreachable is not None:
            log.info("kraft.witness: voters reachable again (heard %s)", ", ".join(str(i) for i in sorted(reachable)))
        self._unreachable = state
