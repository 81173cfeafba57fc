"""``kraft storage recover-quorum``: make a stopped surviving voter the only
voter of a new voter set, so that a quorum that lost its majority for good
can start again and take new voters with ``add-controller``.

Kafka 4.x has no way out of that state: AddRaftVoter and RemoveRaftVoter
need a leader, and a leader needs a majority of the voter set in the log.
The recovery writes, in Kafka's formats, what an operator could otherwise
only get by rebuilding the cluster:

1. a control batch at the log end, in a new epoch, holding a
   ``KRaftVersionRecord`` (level 1, only when the log was at 0) and a
   ``VotersRecord`` naming only this node, with its directory id and its
   controller listeners (KIP-853: the latest voter set in the log, committed
   or not, is the one a replica elects with);
2. ``quorum-state`` reset to that epoch, with no leader and no vote, so the
   node starts unattached, finds itself the only voter and elects itself.

Nothing is removed: the node's own log, committed or not, is kept whole
and becomes the new quorum's history. What the lost voters had committed
past this node's log end cannot be known and is lost; the plan says so with
the offsets this node does know. Everything changed is copied first to a
backup directory beside the metadata log directory (not inside it: Kafka
reads every directory there as a partition).

:func:`plan_recovery` reads only and refuses (:class:`RecoveryRefused`, one
line naming the cause and the fix) when the node was not a voter, its log is
corrupt beyond a torn tail, it runs (its directory is locked), or the config
still names a static quorum. :func:`live_voters` is the network check that
no other voter is alive; :func:`apply_recovery` writes.
"""

from __future__ import annotations

import os
import re
import shutil
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kraft.config import NodeConfig
from kraft.doctor.local import DirectoryFacts, LogDamage, read_directory
from kraft.dirlock import DirectoryLock, directory_locked
from kraft.records.control import build_control_batch
from kraft.records.errors import StateFileError
from kraft.records.fileutil import fsync_dir
from kraft.records.kraft_control import kraft_version_record_of, voters_record_of
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

__all__ = ["RecoveryRefused", "NothingToRecover", "ConfigEdit", "RecoveryPlan", "plan_recovery", "probe_targets",
           "live_voters", "apply_recovery", "static_config_edit", "apply_config_edit"]

#: The kraft.version range a kraft node supports (what its VotersRecord entry says).
SUPPORTED_KRAFT_VERSIONS = (0, 1)


class RecoveryRefused(Exception):
    """The recovery would be wrong or unsafe here; the message names why and the fix."""


class NothingToRecover(Exception):
    """This node is already the only voter of its voter set: a recovery ran
    before (or the quorum never had another voter). The message says so."""

    def __init__(self, message: str, config_edit: ConfigEdit | None = None) -> None:
        super().__init__(message)
        self.config_edit = config_edit


#: The config keys that name a quorum's voters or where to find them.
_QUORUM_KEYS = ("controller.quorum.voters", "controller.quorum.bootstrap.servers")


@dataclass(frozen=True, slots=True)
class ConfigEdit:
    """A static quorum's config, made dynamic: ``controller.quorum.voters``
    (and any ``controller.quorum.bootstrap.servers``) replaced by one
    ``controller.quorum.bootstrap.servers`` naming this node, since after the
    recovery its voter set is in the log (KIP-853)."""

    path: Path
    removed: tuple[str, ...]
    added: tuple[str, ...]
    new_text: str

    def lines(self) -> list[str]:
        return [*(f"- {line}" for line in self.removed), *(f"+ {line}" for line in self.added)]


def _logical_lines(text: str) -> list[tuple[list[str], str]]:
    """``server.properties`` lines grouped as java.util.Properties reads them
    (a trailing backslash continues a line), each with its key."""
    out: list[tuple[list[str], str]] = []
    physical = text.splitlines(keepends=True)
    i = 0
    while i < len(physical):
        group = [physical[i]]
        while group[-1].rstrip("\r\n").endswith("\\") and i + 1 < len(physical):
            i += 1
            group.append(physical[i])
        first = group[0].strip()
        key = "" if not first or first[0] in "#!" else re.split(r"[=:\s]", first, maxsplit=1)[0]
        out.append((group, key))
        i += 1
    return out


def static_config_edit(config_path: Path, bootstrap: str) -> ConfigEdit:
    """The edit that makes ``config_path`` name ``bootstrap`` as its only
    bootstrap server instead of a static voter list."""
    text = config_path.read_text(encoding="latin-1")  # as Properties.load reads it; written back byte for byte
    new_line = f"controller.quorum.bootstrap.servers={bootstrap}"
    removed: list[str] = []
    kept: list[str] = []
    placed = False
    for group, key in _logical_lines(text):
        if key in _QUORUM_KEYS:
            removed.append("".join(group).rstrip("\r\n"))
            if not placed:
                kept.append(new_line + "\n")
                placed = True
            continue
        kept.extend(group)
    if not placed:
        kept.append(("" if not kept or kept[-1].endswith("\n") else "\n") + new_line + "\n")
    return ConfigEdit(config_path, tuple(removed), (new_line,), "".join(kept))


def apply_config_edit(edit: ConfigEdit, *, now: float | None = None) -> list[str]:
    """Copy the config aside, then replace it atomically (write, fsync, rename)."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(time.time() if now is None else now))
    backup = edit.path.with_name(f"{edit.path.name}.recover-quorum-backup-{stamp}")
    if backup.exists():
        raise RecoveryRefused(f"Config backup {backup} already exists: move it away and run the command again.")
    shutil.copy2(edit.path, backup)
    tmp = edit.path.with_name(f".{edit.path.name}.recover-quorum.tmp")
    with open(tmp, "w", encoding="latin-1") as f:
        f.write(edit.new_text)
        f.flush()
        os.fsync(f.fileno())
    shutil.copymode(edit.path, tmp)
    os.replace(tmp, edit.path)
    fsync_dir(edit.path.parent)
    return [f"Backed up {edit.path} to {backup}",
            f"Rewrote {edit.path}: " + "; ".join(edit.lines())]


def _voters_text(voters: Sequence[VoterEntry]) -> str:
    return "[" + ", ".join(f"{v.voter_id}:{uuid_to_kafka(v.directory_id)}" if v.directory_id else str(v.voter_id)
                           for v in voters) + "]"


@dataclass(frozen=True, slots=True)
class RecoveryPlan:
    config_path: Path | None
    node_id: int
    directory_id: uuid.UUID
    cluster_id: str
    metadata_log_dir: Path
    old_voters: tuple[VoterEntry, ...]
    new_voter: VoterEntry
    kraft_version: int
    log_start_offset: int
    log_end_offset: int
    last_epoch: int
    latest_snapshot: OffsetAndEpoch | None
    quorum_state_epoch: int
    new_epoch: int
    backup_dir: Path
    torn_tail: tuple[LogDamage, ...]
    #: A static quorum's config must name its voters no more (None: dynamic already).
    config_edit: ConfigEdit | None = None

    @property
    def partition_dir(self) -> Path:
        return self.metadata_log_dir / CLUSTER_METADATA_DIR

    @property
    def lost_voters(self) -> tuple[VoterEntry, ...]:
        return tuple(v for v in self.old_voters if v.voter_id != self.node_id)

    def loss_lines(self) -> list[str]:
        """What may be lost, with the offsets this node knows."""
        snap = self.latest_snapshot.offset if self.latest_snapshot else None
        lines = [
            f"This node's log ends at offset {self.log_end_offset} (last epoch {self.last_epoch}). Records the "
            f"old quorum committed at offset {self.log_end_offset} or later reached only the lost voters "
            f"{[v.voter_id for v in self.lost_voters]}: they are lost, and this node cannot know how many there were.",
        ]
        if snap:  # the KIP-853 bootstrap snapshot 0-0 holds no records
            lines.append(f"Offsets below {snap} are in this node's snapshot {snap}-{self.latest_snapshot.epoch}"  # type: ignore[union-attr]
                         " and were committed: they are kept.")
        low = max(snap or 0, self.log_start_offset)
        if low < self.log_end_offset:
            lines.append(f"Offsets {low}..{self.log_end_offset - 1} are kept; any of them the old quorum had not "
                         "committed yet will be committed by the new one.")
        if self.quorum_state_epoch > self.last_epoch:
            lines.append(f"The quorum had reached epoch {self.quorum_state_epoch} (quorum-state) but this log holds "
                         f"nothing past epoch {self.last_epoch}: whatever leaders of later epochs wrote is lost.")
        for d in self.torn_tail:
            lines.append(f"{d.path.name} ends in a torn batch at position {d.position} ({d.problem}): "
                         "it is cut, as at every start (it was never acknowledged).")
        return lines

    def change_lines(self) -> list[str]:
        endpoints = ", ".join(f"{n}://{h}:{p}" for n, h, p in self.new_voter.endpoints)
        records = ("KRaftVersionRecord(kraft.version=1), " if self.kraft_version < 1 else "") + (
            f"VotersRecord([{self.node_id}:{uuid_to_kafka(self.directory_id)} {endpoints}])")
        out = [
            f"Back up {self.partition_dir} and {self.metadata_log_dir / META_PROPERTIES_FILE} to {self.backup_dir}",
            f"Append a control batch at offset {self.log_end_offset} in epoch {self.new_epoch}: {records}",
            f"Reset {self.partition_dir / QUORUM_STATE_FILE} to epoch {self.new_epoch}, no leader, no vote",
        ]
        if self.config_edit is not None:
            out.append(f"Edit {self.config_edit.path} (--rewrite-config does it, keeping a copy):\n"
                       + "\n".join(f"       {line}" for line in self.config_edit.lines()))
        return out

    def _address(self) -> str:
        endpoints = self.new_voter.endpoints
        return f"{endpoints[0][1]}:{endpoints[0][2]}" if endpoints else "HOST:PORT"

    def describe(self) -> str:
        out = [
            f"Recovery plan for node {self.node_id} (directory id {uuid_to_kafka(self.directory_id)}) "
            f"of cluster {self.cluster_id}, in {self.metadata_log_dir}",
            f"Current voters: {_voters_text(self.old_voters)} (kraft.version {self.kraft_version})",
            f"New voters:     {_voters_text((self.new_voter,))} (kraft.version 1)",
            "",
            "What may be lost:",
            *(f"  {line}" for line in self.loss_lines()),
            "",
            "Changes:",
            *(f"  {i}. {line}" for i, line in enumerate(self.change_lines(), 1)),
            "",
            f"Then start the node: `kraft node start --config {self.config_path or 'CONFIG'}`; it elects itself. "
            "Add each fresh controller, its server.properties as NEW.properties: "
            f"`kraft storage format --config NEW.properties --cluster-id {self.cluster_id} --no-initial-controllers`, "
            "`kraft node start --config NEW.properties`, then "
            f"`kraft quorum --bootstrap-controller {self._address()} --command-config NEW.properties add-controller`.",
        ]
        return "\n".join(out) + "\n"


def _local_endpoints(config: NodeConfig) -> tuple[tuple[str, str, int], ...]:
    """The controller listeners peers reach this node on (advertised, else bound)."""
    listeners = {e.name: e for e in config.listeners}
    advertised = {e.name: e for e in config.advertised_listeners}
    out = []
    for name in config.controller_listener_names:
        e = advertised.get(name) or listeners.get(name)
        if e is not None:
            out.append((name, e.host or "localhost", e.port))
    return tuple(out)


def _previous_voters(facts: DirectoryFacts, config: NodeConfig, directory: Path) -> tuple[VoterEntry, ...]:
    """The voter set the quorum had: the log's VotersRecord, else a static
    quorum's voters (its quorum-state, else the config's
    ``controller.quorum.voters``)."""
    old_voters = facts.voters
    if old_voters is None and facts.quorum_state is not None and facts.quorum_state.current_voters:
        # A static quorum's quorum-state (data version 0) lists its voters.
        old_voters = tuple(VoterEntry(v, None) for v in facts.quorum_state.current_voters)
    if old_voters is None and config.voters:
        old_voters = tuple(VoterEntry(v.node_id, None) for v in config.voters)
    if not old_voters:
        raise RecoveryRefused(f"{directory} names no voter set (no VotersRecord, no voters in quorum-state): "
                              "cannot tell whether this node was a voter.")
    return tuple(old_voters)


def _reachable_endpoints(config: NodeConfig, where: str) -> tuple[tuple[str, str, int], ...]:
    """This node's controller endpoints for the new VotersRecord: at least
    one, and each an address other controllers can reach."""
    endpoints = _local_endpoints(config)
    if not endpoints:
        raise RecoveryRefused(f"No listener matches controller.listener.names{where}: the new voter set needs this "
                              "node's controller endpoint.")
    for name, host, port in endpoints:
        if host in ("0.0.0.0", "::") or port <= 0:
            raise RecoveryRefused(
                f"The {name} listener {host}:{port}{where} is not an address other controllers can reach: set "
                f"advertised.listeners={name}://<host>:<port> (it goes into the new VotersRecord).")
    return endpoints


def plan_recovery(config: NodeConfig, *, config_path: Path | None = None, backup_dir: Path | None = None,
                  now: float | None = None) -> RecoveryPlan:
    """Read the node's directory (nothing is written) and plan the recovery."""
    directory = Path(config.metadata_log_dir)
    where = f" ({config_path})" if config_path else ""
    meta_path = directory / META_PROPERTIES_FILE
    try:
        meta = MetaProperties.read(meta_path)
    except StateFileError as e:
        raise RecoveryRefused(f"Cannot read {meta_path}: {e.reason}. Is metadata.log.dir{where} the surviving "
                              "voter's directory?") from None
    if meta.node_id != config.node_id:
        raise RecoveryRefused(f"Stored node id {meta.node_id} in {meta_path} does not match node.id "
                              f"{config.node_id}{where}: point --config at that node's own configuration.")
    if meta.directory_id is None:
        raise RecoveryRefused(f"{meta_path} has no directory.id, so this node cannot be named in a VotersRecord: "
                              "it was never a voter of a dynamic quorum.")
    if directory_locked(directory):
        raise RecoveryRefused(f"{directory} is locked by a running process ({directory / '.lock'}): stop the "
                              "node first.")
    facts = read_directory(directory)
    if not facts.has_log:
        raise RecoveryRefused(f"{directory} has no {CLUSTER_METADATA_DIR}: there is nothing to recover.")
    corrupt = [d for d in facts.damage if not d.torn_tail]
    if corrupt:
        d = corrupt[0]
        raise RecoveryRefused(f"{d.path} is corrupt at position {d.position} ({d.problem}) with valid data after "
                              "it: recovering from this copy would lose committed records. Use another survivor, or "
                              "restore the file from a backup.")
    old_voters = _previous_voters(facts, config, directory)
    mine = next((v for v in old_voters if v.voter_id == config.node_id), None)
    if mine is None:
        raise RecoveryRefused(f"Node {config.node_id} was not a voter (voters {_voters_text(old_voters)}): only a "
                              "surviving voter holds every committed record. Run this on one of them.")
    if mine.directory_id is not None and mine.directory_id != meta.directory_id:
        raise RecoveryRefused(
            f"Node {config.node_id}'s directory id {uuid_to_kafka(meta.directory_id)} is not the voter's "
            f"{uuid_to_kafka(mine.directory_id)}: this directory was re-formatted and is not the voter's log.")
    endpoints = _reachable_endpoints(config, where)
    new_voter = VoterEntry(config.node_id, meta.directory_id, endpoints, *SUPPORTED_KRAFT_VERSIONS)
    edit = None
    if config.voters:
        if config_path is None:
            raise RecoveryRefused("controller.quorum.voters is set: a static quorum's config must name "
                                  "controller.quorum.bootstrap.servers instead; give --config so the edit can be made.")
        edit = static_config_edit(config_path, f"{endpoints[0][1]}:{endpoints[0][2]}")
    if (facts.kraft_version >= 1 and facts.voters is not None and len(facts.voters) == 1
            and facts.voters[0].voter_id == config.node_id and facts.voters[0].directory_id == meta.directory_id):
        raise NothingToRecover(
            f"Nothing to recover: node {config.node_id} is already the only voter ({_voters_text(facts.voters)}, "
            f"kraft.version {facts.kraft_version}) in {directory}; nothing was changed. Start it: it elects itself.",
            edit)
    qs_epoch = facts.quorum_state.leader_epoch if facts.quorum_state is not None else -1
    snap_epoch = facts.latest_snapshot.epoch if facts.latest_snapshot else -1
    new_epoch = max(facts.last_epoch, qs_epoch, snap_epoch, 0) + 1
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(time.time() if now is None else now))
    backup = backup_dir or directory.parent / f"{directory.name}.recover-quorum-backup-{stamp}"
    if backup_dir is None and (directory.parent / META_PROPERTIES_FILE).exists():
        # Kafka reads every directory of a log dir as a partition: a backup there would stop it.
        raise RecoveryRefused(f"{directory.parent} is itself a log directory, so the backup cannot go beside "
                              f"{directory.name}: give --backup-dir outside every log directory.")
    return RecoveryPlan(config_path, config.node_id, meta.directory_id, meta.cluster_id or "", directory,
                        tuple(old_voters), new_voter, facts.kraft_version, facts.log_start_offset,
                        facts.log_end_offset, facts.last_epoch, facts.latest_snapshot, qs_epoch, new_epoch, backup,
                        tuple(d for d in facts.damage if d.torn_tail), edit)


def probe_targets(plan: RecoveryPlan, config: NodeConfig) -> tuple[list[tuple[str, str, int]], list[int]]:
    """Where the lost voters can be asked whether they are alive: every
    address known for them (the voter set's endpoints, the config's
    ``controller.quorum.voters``), plus the config's bootstrap servers other
    than this node's own endpoints (any answer there is a live controller).
    Returns ``(label, host, port)`` targets and the lost voters with no known
    address (a static quorum's quorum-state names voters by id only)."""
    mine = {(h, p) for _, h, p in plan.new_voter.endpoints}
    by_id: dict[int, set[tuple[str, int]]] = {v.voter_id: set() for v in plan.lost_voters}
    for v in plan.lost_voters:
        by_id[v.voter_id] |= {(h, p) for _, h, p in v.endpoints}
    for spec in config.voters:
        if spec.node_id in by_id:
            by_id[spec.node_id].add((spec.host, spec.port))
    targets = [(f"{i}@{h}:{p}", h, p) for i in sorted(by_id) for h, p in sorted(by_id[i])]
    known = {(h, p) for _, h, p in targets}
    targets += [(f"{h}:{p}", h, p) for h, p in config.bootstrap_servers if (h, p) not in mine | known]
    return targets, sorted(i for i, addresses in by_id.items() if not addresses)


async def live_voters(plan: RecoveryPlan, config: NodeConfig, timeout_ms: int = 3000) -> list[str]:
    """The :func:`probe_targets` that answer ApiVersions, by their label. A
    voter that answers is alive: then the quorum is not lost and recovering
    would split it."""
    import trio

    from kraft.messages.generated.api_versions_request import ApiVersionsRequest
    from kraft.wire.apis import ApiKey
    from kraft.wire.network_client import CLIENT_SOFTWARE_NAME, CLIENT_SOFTWARE_VERSION, PeerClient, PeerClientError

    alive: list[str] = []

    async def probe(label: str, host: str, port: int) -> None:
        client = PeerClient(host, port, client_id="kraft-recover-quorum", request_timeout_ms=timeout_ms,
                            connect_timeout_ms=timeout_ms, security=config.client_security)
        try:
            await client.request(ApiKey.API_VERSIONS, lambda v: ApiVersionsRequest(
                client_software_name=CLIENT_SOFTWARE_NAME, client_software_version=CLIENT_SOFTWARE_VERSION))
            alive.append(label)
        except (PeerClientError, OSError):
            pass
        finally:
            await client.aclose()

    async with trio.open_nursery() as nursery:
        for label, host, port in probe_targets(plan, config)[0]:
            nursery.start_soon(probe, label, host, port)
    return sorted(alive)


def _backup(plan: RecoveryPlan) -> None:
    target = plan.backup_dir
    if target.exists():
        raise RecoveryRefused(f"Backup directory {target} already exists: give another --backup-dir.")
    target.mkdir(parents=True)
    shutil.copytree(plan.partition_dir, target / CLUSTER_METADATA_DIR)
    shutil.copy2(plan.metadata_log_dir / META_PROPERTIES_FILE, target / META_PROPERTIES_FILE)
    # The backup must be durable before the first byte of the original changes.
    for root, _, files in os.walk(target):
        for name in files:
            fd = os.open(os.path.join(root, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        fsync_dir(root)
    fsync_dir(target.parent)


def apply_recovery(plan: RecoveryPlan, *, now_ms: int | None = None) -> list[str]:
    """Back up, then write the new voter set and reset quorum-state. Holds the
    directory's lock throughout. Returns what was done, one line each."""
    from kraft.records.log import MetadataLog

    timestamp = int(time.time() * 1000) if now_ms is None else now_ms
    done = []
    with DirectoryLock(plan.metadata_log_dir):
        _backup(plan)
        done.append(f"Backed up {plan.partition_dir} and meta.properties to {plan.backup_dir}")
        log = MetadataLog.open(plan.partition_dir)
        try:
            for repair in log.recovery_report.repairs:
                done.append(f"Log recovery: {repair}")
            messages = []
            if log.kraft_control_state().kraft_version < 1:
                messages.append(kraft_version_record_of(1))
            messages.append(voters_record_of([plan.new_voter]))
            offset = log.end_offset
            batch = build_control_batch(messages, base_offset=offset, partition_leader_epoch=plan.new_epoch,
                                        timestamp=timestamp)
            info = log.append_as_leader(batch, plan.new_epoch)
            log.flush()
        finally:
            log.close()
        done.append(f"Appended the new voter set at offsets {info.first_offset}..{info.last_offset} "
                    f"in epoch {plan.new_epoch}: {_voters_text((plan.new_voter,))}")
        QuorumStateFile(plan.partition_dir / QUORUM_STATE_FILE).write(
            QuorumStateFileData(leader_id=-1, leader_epoch=plan.new_epoch, voted_id=-1, data_version=1))
        done.append(f"Reset quorum-state to epoch {plan.new_epoch} with no leader and no vote")
    return done
