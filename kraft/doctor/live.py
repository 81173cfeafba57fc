"""Online checks: what each controller the tool could reach answered.

The command (``kraft doctor --bootstrap-controller``) asks every address it
knows -- the bootstrap list, then every voter's endpoint the leader reports
-- for ApiVersions (the finalized ``kraft.version``), DescribeCluster with
endpoint type 2 (the cluster id, the leader this node believes in, the
controllers it knows: the voter set on kraft, the registered controllers
on Kafka, ``ControllerApis.handleDescribeCluster``) and DescribeQuorum (answered by a leader only: the epoch,
the voter set, every replica's log end offset and fetch times). Those are
Kafka's public RPCs, so the checks work on a real Kafka quorum as on kraft.
Each answer becomes a :class:`NodeAnswer`; the ``check_*`` functions below
compare them and return findings.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from kraft.doctor.findings import Finding, Severity
from kraft.doctor.local import check_even_voters, directory_id_finding
from kraft.raft.rpcs.describe_quorum_rpc import QuorumInfo, ReplicaInfo

__all__ = ["LeaderAnswer", "NodeAnswer", "LiveLimits", "live_findings"]


@dataclass(frozen=True, slots=True)
class LeaderAnswer:
    """A DescribeQuorum answer from a node that says it leads."""

    epoch: int
    view: QuorumInfo


@dataclass(frozen=True, slots=True)
class NodeAnswer:
    """What one address answered (``error`` set: it did not)."""

    host: str
    port: int
    #: The voter expected at this address (None: a bootstrap address no voter set names).
    node_id: int | None
    error: str | None = None
    cluster_id: str | None = None
    #: DescribeCluster's controllerId: the leader this node knows (-1: none).
    controller_id: int | None = None
    #: The controllers DescribeCluster lists (kraft: the voter set as this
    #: node knows it; Kafka: the controllers registered in its metadata).
    controllers: tuple[int, ...] | None = None
    #: The finalized kraft.version ApiVersions reports (absent: 0).
    kraft_version: int | None = None
    leader: LeaderAnswer | None = None
    #: Requests the node answered with an error (e.g. CLUSTER_AUTHORIZATION_FAILED).
    refused: tuple[str, ...] = ()
    #: The epoch this node is in: a leader's own, or what a kraft follower
    #: puts in its NOT_LEADER_OR_FOLLOWER answer (Kafka leaves 0 there: unknown).
    epoch: int | None = None
    #: A kraft leader's note of node ids two processes fetch with
    #: (``describe_quorum_rpc.DUPLICATE_NOTE``), None: none.
    duplicates: str | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def name(self) -> str:
        return f"node {self.node_id} ({self.address})" if self.node_id is not None else self.address


@dataclass(frozen=True, slots=True)
class LiveLimits:
    #: A replica further behind the leader's log end than this is lagging.
    max_lag_offsets: int = 10_000
    #: A replica that last caught up longer ago than this is lagging.
    max_lag_ms: int = 30_000


def _bootstrap_text(answers: Sequence[NodeAnswer]) -> str:
    return ",".join(a.address for a in answers if a.error is None) or "HOST:PORT"


def check_unreachable(answers: Sequence[NodeAnswer]) -> list[Finding]:
    out = []
    for a in answers:
        if a.error is None:
            continue
        if a.node_id is not None:
            out.append(Finding(
                Severity.ERROR, "voter-unreachable", f"voter {a.node_id} at {a.address} does not answer",
                {"node": a.node_id, "address": a.address, "error": a.error},
                f"start controller {a.node_id} (or, if it is gone for good: kraft quorum --bootstrap-controller "
                f"{_bootstrap_text(answers)} remove-controller --controller-id {a.node_id} --controller-directory-id ID)"))
        else:
            out.append(Finding(Severity.ERROR, "controller-unreachable", f"{a.address} does not answer",
                               {"address": a.address, "error": a.error},
                               "check the address, or start the controller listening there"))
    return out


def _voter_ids(answers: Sequence[NodeAnswer]) -> tuple[int, ...]:
    """The voter set: the leader's, else the one most nodes list."""
    for a in answers:
        if a.leader is not None:
            return tuple(sorted(v.node_id for v in a.leader.view.voters))
    sets = Counter(a.controllers for a in answers if a.controllers is not None)
    return tuple(sorted(sets.most_common(1)[0][0])) if sets else ()


def check_majority(answers: Sequence[NodeAnswer], voters: Sequence[int]) -> list[Finding]:
    if not voters:
        if any(a.error is None for a in answers):
            return []
        return [Finding(Severity.ERROR, "no-majority-reachable", "no controller answers at all",
                        {"addresses": [a.address for a in answers]},
                        "start the controllers; if a majority is lost for good: kraft storage recover-quorum")]
    reachable = {a.node_id for a in answers if a.error is None and a.node_id in voters}
    need = len(voters) // 2 + 1
    if len(reachable) >= need:
        return []
    return [Finding(Severity.ERROR, "no-majority-reachable",
                    f"only {len(reachable)} of {len(voters)} voters answer; {need} are needed to elect and commit",
                    {"voters": list(voters), "reachable": sorted(reachable)},
                    "start the missing voters; if they are lost for good, on a surviving voter: "
                    "kraft storage recover-quorum --config server.properties --unsafe")]


def expected_cluster_id(answers: Sequence[NodeAnswer]) -> str | None:
    """The cluster the addresses belong to: the one most of them name
    (ties: the first bootstrap address's)."""
    ids = Counter(a.cluster_id for a in answers if a.cluster_id)
    if not ids:
        return None
    top = max(ids.values())
    return next(a.cluster_id for a in answers if a.cluster_id and ids[a.cluster_id] == top)


def check_cluster_ids(answers: Sequence[NodeAnswer]) -> list[Finding]:
    expected = expected_cluster_id(answers)
    return [Finding(Severity.ERROR, "cluster-id-mismatch",
                    f"{a.name} belongs to cluster {a.cluster_id}, not {expected}",
                    {"address": a.address, "cluster_id": a.cluster_id, "expected": expected},
                    f"remove {a.address} from the bootstrap list, or re-format that node with "
                    f"kraft storage format --cluster-id {expected}")
            for a in answers if a.cluster_id and a.cluster_id != expected]


def check_agreement(answers: Sequence[NodeAnswer]) -> list[Finding]:
    """Voters must agree on the leader, its epoch, the voter set and kraft.version."""
    up = [a for a in answers if a.error is None]
    out: list[Finding] = []
    leaders = {a.controller_id for a in up if a.controller_id is not None and a.controller_id >= 0}
    if len(leaders) > 1:
        out.append(Finding(Severity.ERROR, "leader-disagreement", "controllers name different leaders",
                           {a.address: a.controller_id for a in up if a.controller_id is not None},
                           "check that every controller has the same controller.quorum.voters / bootstrap "
                           "servers and cluster id; restart the ones that disagree"))
    elif any(a.controller_id is not None for a in up) and not leaders:
        out.append(Finding(Severity.ERROR, "no-leader", "no controller knows a leader",
                           {a.address: a.controller_id for a in up if a.controller_id is not None},
                           "a majority of voters must be up and reach each other (see the other findings)"))
    claimed = [a for a in up if a.leader is not None]
    epochs = {a.address: a.epoch for a in up if a.epoch is not None}
    if len(claimed) > 1:
        out.append(Finding(Severity.ERROR, "epoch-disagreement",
                           f"{len(claimed)} controllers answer DescribeQuorum as leader",
                           {a.address: a.leader.epoch for a in claimed if a.leader is not None},
                           "two quorums share these addresses: check controller.quorum.* and the cluster ids"))
    elif len(set(epochs.values())) > 1:
        out.append(Finding(Severity.ERROR, "epoch-disagreement", "controllers are in different epochs",
                           epochs, "a controller behind in epoch cannot reach the leader: check its network and log"))
    sets = {a.address: a.controllers for a in up if a.controllers is not None}
    if len(set(sets.values())) > 1:
        out.append(Finding(Severity.ERROR, "voter-set-disagreement", "controllers list different controllers",
                           {k: list(v) for k, v in sets.items() if v is not None},
                           "a controller that missed a voter change has not caught up: see voter-lagging; "
                           "one that lists another quorum's voters belongs to another quorum"))
    versions = {a.address: a.kraft_version for a in up if a.kraft_version is not None}
    if len(set(versions.values())) > 1:
        out.append(Finding(Severity.ERROR, "kraft-version-disagreement", "controllers report different kraft.version",
                           versions, "controllers of one quorum share one log: a node that differs is in another "
                                     "quorum or has not caught up"))
    return out


def _lagging(replica: ReplicaInfo, leader_end: int, now_ms: int, limits: LiveLimits) -> dict[str, int] | None:
    lag = leader_end - replica.log_end_offset
    since = None if replica.last_caught_up_ms is None else now_ms - replica.last_caught_up_ms
    if lag > limits.max_lag_offsets or (lag > 0 and (since is None or since > limits.max_lag_ms)):
        return {"lag_offsets": lag, "last_caught_up_ms_ago": -1 if since is None else since}
    return None


def _leader_now(leader: LeaderAnswer) -> tuple[ReplicaInfo, int] | None:
    """The leader's own entry and its clock: it reports itself at the time of
    the request, so no skew."""
    view = leader.view
    me = view.voter(view.leader_id)
    if me is None:
        return None
    return me, me.last_fetch_ms if me.last_fetch_ms is not None else view.now_ms


def _replaced_directories(leader: LeaderAnswer, limits: LiveLimits) -> set[tuple[int, object]]:
    """(node id, directory) of observer entries a replaced directory left
    behind: the voter with that id fetches, caught up, from its new
    directory (KIP-853 remove-controller, then add-controller), and this
    directory stopped fetching. The leader keeps listing it until Kafka's
    ``LeaderState.OBSERVER_SESSION_TIMEOUT_MS`` (5 min) has passed; there is
    nothing to fix, and a fix naming the voter's new directory would undo
    the replacement."""
    found = _leader_now(leader)
    if found is None:
        return set()
    me, now = found
    voters = {v.node_id: v for v in leader.view.voters}
    out: set[tuple[int, object]] = set()
    for o in leader.view.observers:
        v = voters.get(o.node_id)
        if v is None or v.directory == o.directory or _lagging(v, me.log_end_offset, now, limits) is not None:
            continue
        if o.last_fetch_ms is None or now - o.last_fetch_ms > limits.max_lag_ms:
            out.add((o.node_id, o.directory))
    return out


def check_lag(leader: LeaderAnswer, limits: LiveLimits) -> list[Finding]:
    view = leader.view
    found = _leader_now(leader)
    if found is None:
        return []
    me, now = found
    replaced = _replaced_directories(leader, limits)
    out = []
    for kind, replicas in (("voter", view.voters), ("observer", view.observers)):
        for r in replicas:
            if r.node_id == view.leader_id and kind == "voter" or (r.node_id, r.directory) in replaced:
                continue
            lag = _lagging(r, me.log_end_offset, now, limits)
            if lag is not None:
                out.append(Finding(
                    Severity.WARNING, f"{kind}-lagging", f"{kind} {r.node_id} is behind the leader",
                    {"node": r.node_id, **lag, "log_end_offset": r.log_end_offset,
                     "leader_log_end_offset": me.log_end_offset,
                     "max_lag_offsets": limits.max_lag_offsets, "max_lag_ms": limits.max_lag_ms},
                    f"check node {r.node_id}'s log, disk and network (kraft quorum describe --replication shows it)"))
    return out


def check_directory_ids(leader: LeaderAnswer, bootstrap: str, limits: LiveLimits) -> list[Finding]:
    """A voter id fetching as an observer with another directory id: that
    node was re-formatted and no longer counts as the voter."""
    out = []
    voters = {v.node_id: v for v in leader.view.voters}
    replaced = _replaced_directories(leader, limits)
    for o in leader.view.observers:
        v = voters.get(o.node_id)
        if v is not None and v.directory is not None and o.directory is not None \
                and o.directory != v.directory and (o.node_id, o.directory) not in replaced:
            out.append(directory_id_finding(o.node_id, v.directory, o.directory, "DescribeQuorum observers",
                                            bootstrap))
    return out


def check_refused(answers: Sequence[NodeAnswer]) -> list[Finding]:
    """A node that refuses the doctor's requests cannot be fully checked."""
    return [Finding(Severity.WARNING, "not-authorized", f"{a.name} refused some requests: its checks are incomplete",
                    {"address": a.address, "refused": list(a.refused)},
                    "run doctor as a super user: --command-config with the admin client's security settings")
            for a in answers if a.refused]


def check_duplicate_ids(answers: Sequence[NodeAnswer]) -> list[Finding]:
    """A kraft leader saw one node id's fetches alternate between two log
    directories: two processes run with that ``node.id``."""
    return [Finding(Severity.ERROR, "duplicate-node-id",
                    f"two processes run with one node id, as {a.name}, the leader, sees them: {a.duplicates}",
                    {"leader": a.address, "duplicates": a.duplicates},
                    "give one of them another node.id (and format its directory for it), or stop it")
            for a in answers if a.leader is not None and a.duplicates]


def live_findings(answers: Sequence[NodeAnswer], limits: LiveLimits = LiveLimits()) -> list[Finding]:
    findings = check_unreachable(answers)
    findings += check_refused(answers)
    findings += check_duplicate_ids(answers)
    voters = _voter_ids(answers)
    findings += check_majority(answers, voters)
    findings += check_cluster_ids(answers)
    # A node of another cluster is reported as such, not as a voter that disagrees.
    expected = expected_cluster_id(answers)
    findings += check_agreement([a for a in answers if a.cluster_id in (None, expected)])
    findings += check_even_voters(voters, "DescribeQuorum" if any(a.leader for a in answers) else "DescribeCluster")
    for a in answers:
        if a.leader is not None:
            findings += check_lag(a.leader, limits)
            findings += check_directory_ids(a.leader, _bootstrap_text(answers), limits)
    return findings
