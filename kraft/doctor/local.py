"""Offline checks: what the data directories and configuration files of
controllers say, read without changing a byte (a running node's directory,
or a copy of a real Kafka one, can be checked as it is).

:func:`read_directory` gathers a :class:`DirectoryFacts` per metadata log
directory; each ``check_*`` function looks at the facts for one problem and
returns its findings.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kraft.config import ConfigError, VoterSpec, load_properties, parse_voters
from kraft.doctor.findings import Finding, Severity
from kraft.raft.roles import election_state_of
from kraft.records.batch import iter_batches
from kraft.records.endpoint_overrides import ENDPOINT_OVERRIDES_FILE, read_endpoint_overrides
from kraft.records.voter_api_versions import VOTER_API_VERSIONS_FILE, read_voter_api_versions
from kraft.records.errors import CorruptSnapshotError, RecordsError, StateFileError
from kraft.records.kraft_control import control_entries, voter_entries
from kraft.records.recovery import find_valid_batch_after, scan
from kraft.records.segment import parse_segment_base
from kraft.records.snapshot import list_snapshot_paths, validate_snapshot_bytes
from kraft.records.state_files import (
    CLUSTER_METADATA_DIR,
    META_PROPERTIES_FILE,
    QUORUM_STATE_FILE,
    MetaProperties,
    QuorumStateFile,
    QuorumStateFileData,
    uuid_to_kafka,
)
from kraft.records.view import OffsetAndEpoch, VoterEntry

__all__ = ["LogDamage", "DirectoryFacts", "ControllerConfig", "read_directory", "read_config", "LocalLimits",
           "local_findings"]


@dataclass(frozen=True, slots=True)
class LogDamage:
    """A segment or snapshot that does not read to its end."""

    path: Path
    position: int
    problem: str
    #: A torn tail: nothing valid follows in the last segment (Kafka's
    #: recovery truncates it at start, losing only an unflushed tail).
    torn_tail: bool


@dataclass(slots=True)
class DirectoryFacts:
    """What one metadata log directory holds."""

    path: Path
    meta: MetaProperties | None = None
    meta_error: str | None = None
    #: What ``quorum-state`` says (None: absent or not readable at all).
    quorum_state: QuorumStateFileData | None = None
    #: Why the node cannot use ``quorum-state`` (not JSON, a missing field, a
    #: negative epoch or id): ``kraft node start`` stops on it.
    quorum_state_error: str | None = None
    has_log: bool = False
    log_start_offset: int = 0
    log_end_offset: int = 0
    last_epoch: int = -1
    latest_snapshot: OffsetAndEpoch | None = None
    #: Bytes of log batches at or after the latest snapshot's end offset.
    bytes_since_snapshot: int = 0
    #: The latest voter set of the snapshot and log (None: never set, a static quorum).
    voters: tuple[VoterEntry, ...] | None = None
    kraft_version: int = 0
    damage: list[LogDamage] = field(default_factory=list)
    disk_total: int = 0
    disk_free: int = 0
    #: Directories of it the node must write to but the kernel would refuse
    #: (a read-only file system, or permissions), with the reason.
    unwritable: list[tuple[Path, str]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ControllerConfig:
    """The few ``server.properties`` keys the checks compare."""

    path: Path
    node_id: int | None
    metadata_log_dir: Path | None
    static_voters: tuple[VoterSpec, ...]
    bootstrap_servers: str
    error: str | None = None


def read_config(path: Path) -> ControllerConfig:
    """``server.properties``; a file that cannot be read or parsed gives a
    config whose ``error`` says why (checked like any other problem)."""
    try:
        props = load_properties(path)
    except ConfigError as e:
        return ControllerConfig(path, None, None, (), "", str(e))
    error = None
    node_id = None
    try:
        node_id = int(props["node.id"].strip()) if props.get("node.id", "").strip() else None
    except ValueError:
        error = f"node.id is not an integer: {props['node.id']!r}"
    directory = (props.get("metadata.log.dir", "").strip() or props.get("log.dirs", "").split(",")[0].strip()
                 or props.get("log.dir", "").strip())
    try:
        voters = tuple(parse_voters(props.get("controller.quorum.voters", "")))
    except ConfigError as e:
        voters, error = (), str(e)
    return ControllerConfig(path, node_id, Path(directory) if directory else None, voters,
                            props.get("controller.quorum.bootstrap.servers", "").strip(), error)


def _read_segments(part: Path, facts: DirectoryFacts) -> list[tuple[int, object]]:
    """Scan every segment (read-only); returns the control entries found."""
    bases = sorted(b for p in part.iterdir() if (b := parse_segment_base(p.name)) is not None)
    entries: list[tuple[int, object]] = []
    for i, base in enumerate(bases):
        path = part / f"{base:020d}.log"
        data = path.read_bytes()
        result = scan(memoryview(data), base)
        if result.problem is not None:
            last = i == len(bases) - 1
            later = find_valid_batch_after(memoryview(data), result.valid_bytes)
            facts.damage.append(LogDamage(path, result.valid_bytes, result.problem, last and later is None))
        if result.headers:
            facts.log_end_offset = max(facts.log_end_offset, result.headers[-1].last_offset + 1)
            facts.last_epoch = max(facts.last_epoch, result.headers[-1].partition_leader_epoch)
        snapshot_end = facts.latest_snapshot.offset if facts.latest_snapshot else 0
        facts.bytes_since_snapshot += sum(h.size for h in result.headers if h.base_offset >= snapshot_end)
        for batch in iter_batches(memoryview(data)[: result.valid_bytes]):
            if batch.is_control and batch.base_offset >= snapshot_end:
                try:
                    entries.extend(control_entries(batch))
                except (RecordsError, ValueError) as e:
                    facts.damage.append(LogDamage(path, batch.position, f"unreadable control record: {e}", False))
    if bases:
        facts.log_start_offset = bases[0]
    return entries


def read_directory(path: Path) -> DirectoryFacts:
    """The facts of one metadata log directory (``metadata.log.dir``)."""
    facts = DirectoryFacts(Path(path))
    meta_path = facts.path / META_PROPERTIES_FILE
    try:
        facts.meta = MetaProperties.read(meta_path)
    except StateFileError as e:
        if not facts.path.is_dir():
            facts.meta_error = "the directory does not exist"
        else:
            facts.meta_error = e.reason if meta_path.exists() else "no meta.properties (the directory is not formatted)"
    if facts.path.exists():
        usage = shutil.disk_usage(facts.path)
        facts.disk_total, facts.disk_free = usage.total, usage.free
    facts.unwritable = _unwritable(facts.path)
    part = facts.path / CLUSTER_METADATA_DIR
    if not part.is_dir():
        return facts
    facts.has_log = True
    try:
        facts.quorum_state = QuorumStateFile(part / QUORUM_STATE_FILE).read()
        if facts.quorum_state is not None:
            election_state_of(facts.quorum_state)  # kept for recovery; the node refuses it at start
    except StateFileError as e:
        facts.quorum_state_error = e.reason
    except ValueError as e:
        facts.quorum_state_error = str(e)
    snapshots = [s for s in list_snapshot_paths(part) if not s.partial and not s.deleted]
    # The newest snapshot that reads whole is the one recovery would use.
    for snap in sorted(snapshots, key=lambda s: s.snapshot_id, reverse=True):
        try:
            contents = validate_snapshot_bytes(snap.path.read_bytes(), str(snap.path))
        except (CorruptSnapshotError, RecordsError) as e:
            facts.damage.append(LogDamage(snap.path, 0, f"snapshot does not validate: {e}", False))
            continue
        facts.latest_snapshot = snap.snapshot_id
        facts.log_end_offset = snap.snapshot_id.offset
        if contents.voters is not None:
            facts.voters = voter_entries(contents.voters)
        if contents.kraft_version is not None:
            facts.kraft_version = int(contents.kraft_version.k_raft_version)
        break
    for _, value in _read_segments(part, facts):
        if isinstance(value, int):
            facts.kraft_version = value
        else:
            facts.voters = value  # type: ignore[assignment]
    return facts


# ---------------------------------------------------------------- checks


@dataclass(frozen=True, slots=True)
class LocalLimits:
    """Thresholds of the offline checks."""

    #: Log bytes past the latest snapshot beyond which it is "far behind"
    #: (Kafka snapshots every metadata.log.max.record.bytes.between.snapshots,
    #: 20 MiB by default: twice that means snapshots are not being taken).
    max_bytes_since_snapshot: int = 40 * 1024 * 1024
    #: Free space below this percentage of the disk: a warning.
    warn_free_percent: float = 10.0
    #: Free space below this percentage: an error (the next segment roll fails).
    error_free_percent: float = 2.0


def check_meta(facts: DirectoryFacts, config: ControllerConfig | None) -> list[Finding]:
    if facts.meta is not None:
        return []
    cfg = str(config.path) if config else "<this node's server.properties>"
    if facts.meta_error is not None and facts.meta_error.startswith("no meta.properties") \
            or facts.meta_error == "the directory does not exist":
        fix = (f"kraft storage format --config {cfg} --cluster-id <the cluster's id> (metadata.log.dir={facts.path}), "
               "or point --dir/metadata.log.dir at the node's formatted directory")
    else:
        # A damaged meta.properties: re-formatting would give the node a new directory id.
        fix = (f"restore {facts.path / META_PROPERTIES_FILE} from a backup (kraft dump-log and a voter's VotersRecord "
               f"name its node.id and directory.id), or treat the node as lost: kraft storage format --config {cfg} "
               "--cluster-id <the cluster's id> into an empty directory")
    return [Finding(Severity.ERROR, "meta-properties-unreadable", f"{facts.path} has no usable meta.properties",
                    {"directory": str(facts.path), "reason": facts.meta_error}, fix)]


def check_meta_vs_config(facts: DirectoryFacts, config: ControllerConfig) -> list[Finding]:
    """meta.properties' node.id must be the config's (Kafka refuses to start otherwise)."""
    out = []
    if config.error:
        out.append(Finding(Severity.ERROR, "config-unreadable", f"{config.path} cannot be used",
                           {"config": str(config.path), "reason": config.error},
                           f"correct {config.path} ({config.error}) and run kraft doctor again"))
    if facts.meta is not None and config.node_id is not None and facts.meta.node_id != config.node_id:
        out.append(Finding(
            Severity.ERROR, "node-id-mismatch",
            f"meta.properties in {facts.path} belongs to node {facts.meta.node_id}, the config says {config.node_id}",
            {"config": str(config.path), "config_node_id": config.node_id, "meta_node_id": facts.meta.node_id},
            f"set node.id={facts.meta.node_id} in {config.path}, or point metadata.log.dir at node "
            f"{config.node_id}'s directory"))
    return out


def check_cluster_ids(all_facts: Sequence[DirectoryFacts], expected: str | None = None) -> list[Finding]:
    """Every directory must carry the same cluster id (and the live quorum's, when known)."""
    ids: dict[str, list[Path]] = {}
    for f in all_facts:
        if f.meta is not None and f.meta.cluster_id:
            ids.setdefault(f.meta.cluster_id, []).append(f.path)
    if not ids:
        return []
    if expected is None:
        if len(ids) == 1:
            return []
        expected = max(ids, key=lambda c: len(ids[c]))
    out = []
    for cluster_id, paths in sorted(ids.items()):
        if cluster_id == expected:
            continue
        for p in paths:
            out.append(Finding(Severity.ERROR, "cluster-id-mismatch",
                               f"{p} is formatted for cluster {cluster_id}, not {expected}",
                               {"directory": str(p), "cluster_id": cluster_id, "expected": expected},
                               f"stop that node, move {p} away and run kraft storage format --cluster-id {expected}"))
    return out


def check_static_voters(configs: Sequence[ControllerConfig]) -> list[Finding]:
    """A static quorum only works when every node lists the same voters."""
    sets = {c.path: tuple(sorted((v.node_id, v.host, v.port) for v in c.static_voters))
            for c in configs if c.static_voters}
    if len(set(sets.values())) <= 1:
        return []
    counts: dict[tuple[tuple[int, str, int], ...], int] = {}
    for s in sets.values():
        counts[s] = counts.get(s, 0) + 1
    common = max(counts, key=lambda s: counts[s])
    text = ",".join(f"{i}@{h}:{p}" for i, h, p in common)
    return [Finding(Severity.ERROR, "static-voters-differ",
                    f"controller.quorum.voters in {path} differs from the other nodes'",
                    {"config": str(path), "voters": ",".join(f"{i}@{h}:{p}" for i, h, p in s), "others": text},
                    f"set controller.quorum.voters={text} in {path}")
            for path, s in sorted(sets.items()) if s != common]


def check_even_voters(voter_ids: Sequence[int], source: str) -> list[Finding]:
    n = len(voter_ids)
    if n == 0 or n % 2:
        return []
    return [Finding(Severity.WARNING, "even-voter-count",
                    f"{n} voters tolerate no more failures than {n - 1}: {n // 2 + 1} must agree",
                    {"voters": sorted(voter_ids), "source": source},
                    "add or remove one controller (kraft quorum add-controller / remove-controller)")]


def check_directory_id(facts: DirectoryFacts, config: ControllerConfig | None = None) -> list[Finding]:
    """A voter whose meta.properties directory.id is not the voter set's for
    its node id: it was re-formatted, and counts as another replica."""
    if facts.meta is None or facts.voters is None or facts.meta.directory_id is None:
        return []
    for v in facts.voters:
        if v.voter_id == facts.meta.node_id and v.directory_id is not None and v.directory_id != facts.meta.directory_id:
            return [directory_id_finding(v.voter_id, v.directory_id, facts.meta.directory_id, str(facts.path),
                                         _other_voters(facts, v.voter_id), config.path if config else None)]
    return []


def _other_voters(facts: DirectoryFacts, node_id: int | None) -> str:
    """The controller endpoints of the log's other voters (where the quorum answers)."""
    return ",".join(f"{host}:{port}" for v in facts.voters or () if v.voter_id != node_id
                    for _, host, port in v.endpoints[:1]) or "HOST:PORT"


def directory_id_finding(node_id: int, voter_dir: uuid.UUID, actual: uuid.UUID, where: str,
                         bootstrap: str = "HOST:PORT", config: Path | None = None) -> Finding:
    """The replica with the new directory replaces the voter's old one
    (KIP-853), once it has caught up as an observer: remove the old
    (id, directory id), then add-controller reads the new one from the
    node's config and meta.properties."""
    quorum = f"kraft quorum --bootstrap-controller {bootstrap}"
    cfg = str(config) if config is not None else f"<node {node_id}'s server.properties>"
    return Finding(
        Severity.ERROR, "directory-id-mismatch",
        f"node {node_id}'s directory id is not the one in the voter set (re-formatted?): it does not count as a voter",
        {"node": node_id, "voter_set_directory_id": uuid_to_kafka(voter_dir), "directory_id": uuid_to_kafka(actual),
         "where": where},
        f"once node {node_id} has caught up as an observer: `{quorum} remove-controller --controller-id {node_id} "
        f"--controller-directory-id {uuid_to_kafka(voter_dir)}`, then `{quorum} --command-config {cfg} add-controller`")


def _refetch_fix(facts: DirectoryFacts, config: ControllerConfig | None) -> str:
    """How a node gets a whole log back from the leader, each command in
    backquotes in the order to run them (as ``kraft node start`` prints it,
    ``kraft/node/remedies.py``). Decided from the log: a voter the log's
    VotersRecord names by this directory's id (KIP-853, a dynamic quorum or a
    static one upgraded to kraft.version 1) comes back with a new directory
    id after formatting, so once it has caught up as an observer the old
    directory id leaves the voter set and the new one joins it; a voter known
    by id only (kraft.version 0) or an observer just fetches the log again.
    The format takes ``--no-initial-controllers`` only when the config has no
    ``controller.quorum.voters`` (``kraft storage format`` asks for it then)."""
    cfg = str(config.path) if config else "<this node's server.properties>"
    cluster = facts.meta.cluster_id if facts.meta is not None and facts.meta.cluster_id else "<the cluster's id>"
    node_id = facts.meta.node_id if facts.meta is not None else None
    directory_id = facts.meta.directory_id if facts.meta is not None else None
    static = config is not None and bool(config.static_voters)
    fmt = f"`kraft storage format --config {cfg} --cluster-id {cluster}" + ("`" if static else " --no-initial-controllers`")
    steps = f"`mv {facts.path} {facts.path}.corrupt`, {fmt}, `kraft node start --config {cfg}`"
    mine = next((v for v in facts.voters or () if v.voter_id == node_id and v.directory_id is not None
                 and v.directory_id == directory_id), None)
    if mine is None or mine.directory_id is None:
        return f"stop the node, then {steps} (it fetches the log from the leader)"
    quorum = f"kraft quorum --bootstrap-controller {_other_voters(facts, node_id)}"
    return (f"stop node {node_id}, then {steps} (it catches up as an observer), then `{quorum} remove-controller "
            f"--controller-id {node_id} --controller-directory-id {uuid_to_kafka(mine.directory_id)}` and "
            f"`{quorum} --command-config {cfg} add-controller`")


def check_damage(facts: DirectoryFacts, config: ControllerConfig | None = None) -> list[Finding]:
    out = []
    for d in facts.damage:
        if d.torn_tail:
            out.append(Finding(Severity.WARNING, "torn-tail",
                               f"{d.path.name} ends in a torn batch: recovery will truncate it at start",
                               {"file": str(d.path), "position": d.position, "problem": d.problem},
                               "none needed (an unflushed tail is cut on start); kraft dump-log --files "
                               f"{d.path} shows the valid part"))
        else:
            out.append(Finding(Severity.ERROR, "corrupt-batch",
                               f"{d.path.name} has a corrupt batch with valid data after it",
                               {"file": str(d.path), "position": d.position, "problem": d.problem},
                               _refetch_fix(facts, config)))
    return out


def registered_controllers(path: Path) -> dict[int, int]:
    """The controllers the directory's metadata image has registered
    (``RegisterControllerRecord``, KIP-919), id -> the highest
    metadata.version each claims to support; empty when unreadable."""
    import logging

    from kraft.image.metadata_source import MetadataSourceError, image_from_directory

    quiet = logging.getLogger("kraft.image")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # damage is the other checks' business
    try:
        image = image_from_directory(path)
    except (MetadataSourceError, RecordsError, OSError, ValueError):
        return {}
    finally:
        quiet.setLevel(level)
    return {i: next((f.max_version for f in c.supported_features if f.name == "metadata.version"), -1)
            for i, c in image.controllers.items()}


def check_ghost_controllers(facts: DirectoryFacts, registered: dict[int, int]) -> list[Finding]:
    """Registered controllers that are not voters ("ghosts": removed voters,
    or voters lost to a recover-quorum). Kafka 4.0 to 4.3's
    ``FeatureControlManager.reasonNotSupported`` checks every controller
    registration (``ClusterControlManager.controllerSupportedFeatures``)
    before a metadata.version upgrade, and nothing removes a controller's
    registration (``kafka-cluster.sh unregister`` / UnregisterBroker removes
    brokers only): a ghost registered by an older Kafka blocks the upgrade.
    A new registration under the same id (a new incarnation) replaces it."""
    if facts.voters is None or not registered:
        return []
    voters = {v.voter_id for v in facts.voters}
    ghosts = sorted(set(registered) - voters)
    if not ghosts:
        return []
    ids = ", ".join(map(str, ghosts))
    return [Finding(
        Severity.WARNING, "ghost-controller-registration",
        f"controller{'s' if len(ghosts) > 1 else ''} {ids} {'are' if len(ghosts) > 1 else 'is'} registered but not "
        "a voter: a metadata.version upgrade checks every registered controller",
        {"directory": str(facts.path), "registered": sorted(registered), "voters": sorted(voters),
         "max_metadata_version": {i: registered[i] for i in ghosts}},
        f"Kafka 4.0-4.3 (no RPC removes a controller registration; kafka-cluster.sh unregister removes brokers "
        f"only): for each of {ids}, start a controller with that node.id on the target Kafka version, formatted with "
        "--no-initial-controllers and never added as a voter; it registers again (a new incarnation replaces the "
        "ghost's supported versions); then upgrade metadata.version and stop it. A controller of that id still "
        "running as an observer needs only its upgrade. Kafka 4.4 and later: see its upgrade notes on controller "
        "registrations (not checked here)")]


def check_snapshot_lag(facts: DirectoryFacts, limits: LocalLimits) -> list[Finding]:
    if not facts.has_log or facts.bytes_since_snapshot <= limits.max_bytes_since_snapshot:
        return []
    snap = facts.latest_snapshot
    return [Finding(Severity.WARNING, "snapshot-far-behind",
                    f"{facts.path}: {facts.bytes_since_snapshot} bytes of log since the latest snapshot",
                    {"directory": str(facts.path), "latest_snapshot_offset": snap.offset if snap else None,
                     "log_end_offset": facts.log_end_offset, "bytes_since_snapshot": facts.bytes_since_snapshot,
                     "threshold": limits.max_bytes_since_snapshot},
                    "check metadata.log.max.record.bytes.between.snapshots and the node's log for snapshot errors")]


def check_endpoint_overrides(facts: DirectoryFacts) -> list[Finding]:
    """``voter-endpoint-overrides``, the file ``kraft storage recover-quorum
    --endpoints`` leaves beside ``quorum-state``: kraft's own, not Kafka's
    (a Kafka controller on this directory ignores it, so it dials the
    endpoints the log records). While an entry is in force the node dials
    that voter elsewhere than the log says; once the log's voter set
    records the new endpoints it is inert and only misleads whoever reads
    the directory. Either way one line says so, with the way out."""
    path = facts.path / CLUSTER_METADATA_DIR / ENDPOINT_OVERRIDES_FILE
    if not facts.has_log or not path.exists():
        return []
    try:
        overrides = read_endpoint_overrides(path.parent)
    except StateFileError as e:
        return [Finding(Severity.ERROR, "endpoint-overrides-unreadable",
                        f"{path} (kraft's file, not Kafka's) cannot be read, so kraft node start refuses to start",
                        {"file": str(path), "reason": e.reason},
                        f"move {path} away, then rerun kraft storage recover-quorum --endpoints if hosts still moved")]
    voters = {v.voter_id: v for v in facts.voters or ()}
    in_force, superseded = [], []
    for o in overrides:
        voter = voters.get(o.voter_id)
        recorded = next(((h, p) for name, h, p in voter.endpoints if name == o.listener), None) if voter else None
        if o.in_force(voter is not None, voter.directory_id if voter is not None else None, recorded):
            stale = f"{o.stale[0]}:{o.stale[1]}" if o.stale else "no endpoint"
            in_force.append(f"voter {o.voter_id} at {o.host}:{o.port} (the log records {stale})")
        else:
            now = (f"{recorded[0]}:{recorded[1]}" if recorded else "no endpoint") if voter else "no such voter"
            superseded.append(f"voter {o.voter_id}: the log records {now}")
    if in_force:
        return [Finding(Severity.WARNING, "voter-endpoint-overrides",
                        f"{path} (kraft's file, not Kafka's) makes this node dial " + "; ".join(in_force)
                        + " instead of the endpoints in the log's VotersRecord",
                        {"file": str(path), "superseded": superseded} if superseded else {"file": str(path)},
                        "start every voter: the elected leader records the new endpoints (UpdateRaftVoter), "
                        f"then the entries stop applying; rm {path} once kraft doctor says they no longer apply")]
    return [Finding(Severity.WARNING, "voter-endpoint-overrides-superseded",
                    f"{path} (kraft's file, not Kafka's) no longer applies: " + "; ".join(superseded)
                    + "; the node ignores it",
                    {"file": str(path)}, f"rm {path}")]


def check_quorum_state(facts: DirectoryFacts) -> list[Finding]:
    """``quorum-state``, the election state (Kafka's ``FileQuorumStateStore``):
    one the node cannot use (unreadable, or no replica writes it: a negative
    epoch, an id below -1) stops ``kraft node start`` with one line naming
    it, where Kafka 4.1 would start anyway. Without the file the node starts
    unattached, with no vote, in its log's latest epoch."""
    if facts.quorum_state_error is None:
        return []
    path = facts.path / CLUSTER_METADATA_DIR / QUORUM_STATE_FILE
    return [Finding(Severity.ERROR, "quorum-state-unreadable",
                    f"{path} cannot be used ({facts.quorum_state_error}), so kraft node start stops on it",
                    {"file": str(path), "reason": facts.quorum_state_error},
                    f"move {path} away: the node then starts unattached, with no vote, in its log's latest epoch "
                    "(as Kafka does when quorum-state is behind the log)")]


def check_voter_api_versions(facts: DirectoryFacts) -> list[Finding]:
    """``voter-api-versions``, kraft's own record (Kafka has none) of what each
    voter last answered on ApiVersions, which the witness decision starts
    from (kraft/raft/witness_policy.py). A damaged one does not stop the node: it
    is ignored, as if no voter had been heard before the start -- so a
    kraft-only quorum whose log holds Kafka-shaped records waits again for
    every voter's live answer. One line says so."""
    path = facts.path / CLUSTER_METADATA_DIR / VOTER_API_VERSIONS_FILE
    if not facts.has_log or not path.exists():
        return []
    try:
        read_voter_api_versions(path.parent)
    except StateFileError as e:
        return [Finding(Severity.WARNING, "voter-api-versions-unreadable",
                        f"{path} (kraft's file, not Kafka's) cannot be read: the node ignores it, as if no voter "
                        f"had answered ApiVersions before its start (a voter that is down stays unheard)",
                        {"file": str(path), "reason": e.reason},
                        f"rm {path} (the node writes it again from the voters' next answers)")]
    return []


def _unwritable(path: Path) -> list[tuple[Path, str]]:
    """Which of the directory and its ``__cluster_metadata-0`` the node could
    not write to. access(2) answers without writing a byte, and says EROFS
    on a read-only mount even to root (whom permission bits do not stop, as
    they do not stop a node run as root)."""
    out = []
    for directory in (path, path / CLUSTER_METADATA_DIR):
        if directory.is_dir() and not os.access(directory, os.W_OK | os.X_OK):
            out.append((directory, "read-only file system" if _read_only_mount(directory) else "permission denied"))
    return out


def _read_only_mount(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def check_writable(facts: DirectoryFacts) -> list[Finding]:
    """``kraft node start`` writes the lock, quorum-state and the log there:
    a directory it cannot write to stops it (doctor said "healthy")."""
    return [Finding(Severity.ERROR, "log-dir-unwritable", f"{directory} cannot be written ({why}): the node "
                    "cannot start on it", {"directory": str(directory), "reason": why},
                    "remount the file system read-write" if why == "read-only file system"
                    else f"give the node's user write access to {directory}")
            for directory, why in facts.unwritable]


def check_disk(facts: DirectoryFacts, limits: LocalLimits) -> list[Finding]:
    if facts.disk_total <= 0:
        return []
    percent = 100.0 * facts.disk_free / facts.disk_total
    if percent >= limits.warn_free_percent:
        return []
    severity = Severity.ERROR if percent < limits.error_free_percent else Severity.WARNING
    return [Finding(severity, "disk-nearly-full", f"the disk of {facts.path} is {100 - percent:.1f}% full",
                    {"directory": str(facts.path), "free_bytes": facts.disk_free, "total_bytes": facts.disk_total},
                    "free space on that file system (a full disk stops the node: fail-stop on a failed write)")]


def local_findings(directories: Sequence[Path], configs: Sequence[ControllerConfig],
                   limits: LocalLimits = LocalLimits(),
                   expected_cluster_id: str | None = None) -> tuple[list[Finding], list[DirectoryFacts]]:
    """Every offline check over ``directories`` and the directories the
    ``configs`` name (each checked against its config)."""
    # A __cluster_metadata-0 directory given by mistake stands for its metadata log directory.
    by_dir: dict[Path, ControllerConfig | None] = {
        (Path(d).resolve().parent if Path(d).name == CLUSTER_METADATA_DIR else Path(d).resolve()): None
        for d in directories}
    for c in configs:
        if c.metadata_log_dir is not None:
            by_dir[c.metadata_log_dir.resolve()] = c
    findings: list[Finding] = []
    all_facts = []
    for path, config in by_dir.items():
        facts = read_directory(path)
        all_facts.append(facts)
        findings += check_meta(facts, config)
        if config is not None:
            findings += check_meta_vs_config(facts, config)
        findings += check_directory_id(facts, config)
        findings += check_damage(facts, config)
        findings += check_snapshot_lag(facts, limits)
        if facts.has_log and facts.voters is not None:
            findings += check_ghost_controllers(facts, registered_controllers(path))
        findings += check_quorum_state(facts)
        findings += check_endpoint_overrides(facts)
        findings += check_voter_api_versions(facts)
        findings += check_disk(facts, limits)
        findings += check_writable(facts)
    for c in configs:
        if c.metadata_log_dir is None and c.error is not None:
            # Unreadable or unparsable: the file itself is the problem, not a missing key.
            findings.append(Finding(Severity.ERROR, "config-unreadable", f"{c.path} cannot be used",
                                    {"config": str(c.path), "reason": c.error},
                                    f"give the path of the controller's server.properties, or correct {c.path}"))
        elif c.metadata_log_dir is None:
            findings.append(Finding(Severity.ERROR, "config-unreadable", f"{c.path} names no metadata.log.dir",
                                    {"config": str(c.path), "reason": "no metadata.log.dir or log.dirs"},
                                    f"set metadata.log.dir=<the node's metadata log directory> in {c.path}"))
    findings += check_cluster_ids(all_facts, expected_cluster_id)
    findings += check_static_voters(configs)
    voter_sets = {tuple(sorted(v.voter_id for v in f.voters)) for f in all_facts if f.voters is not None}
    voter_sets |= {tuple(sorted(v.node_id for v in c.static_voters)) for c in configs if c.static_voters}
    for ids in sorted(voter_sets):
        findings += check_even_voters(ids, "directories" if not configs else "directories and configs")
    return findings, all_facts
