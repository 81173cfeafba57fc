"""``kraft storage recover-quorum --endpoints ID@HOST:PORT,...``: a dynamic
(KIP-853) quorum whose controllers all moved to new hosts.

The voters' endpoints live in ``VotersRecord``s and win over
``controller.quorum.bootstrap.servers``, so after the move no voter reaches
another and no leader is elected. Rewriting the ``VotersRecord`` offline on
every voter would be unsafe: each voter would append it at its own log end
(voters' logs end at different offsets), so the same epoch would hold
different records at different offsets, breaking Raft's log matching.

Instead this writes no record. It leaves the log and ``quorum-state``
untouched and writes :data:`~kraft.records.endpoint_overrides.ENDPOINT_OVERRIDES_FILE`
beside ``quorum-state``: where to dial each listed voter while the log still
records its stale endpoint. Elections then run as Raft always does, and the
elected leader writes the new endpoints itself (its start-of-epoch
``VotersRecord`` for its own, each follower's ``UpdateRaftVoter`` for the
others, as Kafka's ``KafkaRaftClient`` does for any controller whose
listeners changed), committed by a majority and replicated in order.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from kraft.config import NodeConfig
from kraft.dirlock import DirectoryLock, directory_locked
from kraft.doctor.local import read_directory
from kraft.doctor.quorum_recovery import NothingToRecover, RecoveryRefused
from kraft.records.endpoint_overrides import (
    ENDPOINT_OVERRIDES_FILE,
    EndpointOverride,
    read_endpoint_overrides,
    write_endpoint_overrides,
)
from kraft.records.errors import StateFileError
from kraft.records.fileutil import fsync_dir
from kraft.records.state_files import CLUSTER_METADATA_DIR, META_PROPERTIES_FILE, QUORUM_STATE_FILE, MetaProperties

__all__ = ["EndpointsPlan", "apply_endpoints", "parse_endpoints", "plan_endpoints"]


def parse_endpoints(spec: str) -> dict[int, tuple[str, int]]:
    """``ID@HOST:PORT,...``; :class:`RecoveryRefused` naming the bad entry."""
    out: dict[int, tuple[str, int]] = {}
    for item in (s.strip() for s in spec.split(",")):
        ident, at, address = item.partition("@")
        host, colon, port = address.rpartition(":")
        host = host.strip("[]")
        if not (at and colon and host and ident.isdigit() and port.isdigit() and 0 < int(port) <= 65535
                and int(ident) <= 2**31 - 1):
            raise RecoveryRefused(f"--endpoints: {item!r} is not ID@HOST:PORT (e.g. 1@controller-1.new:9093).")
        if int(ident) in out:
            raise RecoveryRefused(f"--endpoints: voter {ident} is listed twice.")
        out[int(ident)] = (host, int(port))
    return out


@dataclass(frozen=True)
class EndpointsPlan:
    node_id: int
    partition_dir: Path
    listener: str
    overrides: tuple[EndpointOverride, ...]
    backup_dir: Path

    def describe(self) -> str:
        lines = [f"Endpoint plan for node {self.node_id} in {self.partition_dir.parent}",
                 "The log and quorum-state are not changed. Until a leader records each voter's new endpoint "
                 "(its UpdateRaftVoter), this node dials:"]
        for o in self.overrides:
            stale = f"{o.stale[0]}:{o.stale[1]}" if o.stale else "no endpoint"
            lines.append(f"  voter {o.voter_id} at {self.listener}://{o.host}:{o.port} (the log records {stale})")
        lines += ["", "Changes:",
                  f"  1. Back up {self.partition_dir / QUORUM_STATE_FILE} (and any previous overrides) "
                  f"to {self.backup_dir}",
                  f"  2. Write {self.partition_dir / ENDPOINT_OVERRIDES_FILE}",
                  "", "Run this on every voter, then start them all: they elect a leader, which records the new "
                  "endpoints through Raft.", ""]
        return "\n".join(lines)


def plan_endpoints(config: NodeConfig, spec: str, *, backup_dir: Path | None = None,
                   now: float | None = None) -> EndpointsPlan:
    """Read the directory (nothing is written) and plan the overrides."""
    wanted = parse_endpoints(spec)
    directory = Path(config.metadata_log_dir)
    meta_path = directory / META_PROPERTIES_FILE
    try:
        MetaProperties.read(meta_path)
    except StateFileError as e:
        raise RecoveryRefused(f"Cannot read {meta_path}: {e.reason}. Is metadata.log.dir in --config this "
                              "controller's directory?") from None
    if directory_locked(directory):
        raise RecoveryRefused(f"{directory} is locked by a running process ({directory / '.lock'}): stop the "
                              "node first (--endpoints is run on every stopped voter).")
    facts = read_directory(directory)
    if facts.kraft_version < 1 or not facts.voters:
        raise RecoveryRefused(f"{directory} holds a static quorum (no VotersRecord): its endpoints are "
                              "controller.quorum.voters; edit that key in every node's config instead.")
    listener = config.controller_listener_names[0]
    recorded = {v.voter_id: v for v in facts.voters}
    unknown = sorted(set(wanted) - set(recorded))
    if unknown:
        raise RecoveryRefused(f"--endpoints names {', '.join(map(str, unknown))}, not voter(s) of this log "
                              f"(voters {sorted(recorded)}): check the ids.")
    if config.node_id in wanted:
        own = {(e.host, e.port) for e in (*config.advertised_listeners, *config.listeners) if e.name == listener}
        if wanted[config.node_id] not in own:
            host, port = wanted[config.node_id]
            raise RecoveryRefused(f"--endpoints gives node {config.node_id} (this node) {host}:{port}, but its "
                                  f"{listener} listener in --config is elsewhere: fix listeners/advertised.listeners "
                                  "or the --endpoints entry so they agree.")
    overrides = []
    for voter_id, (host, port) in sorted(wanted.items()):
        entry = recorded[voter_id]
        stale = next(((h, p) for name, h, p in entry.endpoints if name == listener), None)
        if stale == (host, port):
            continue  # the log already records it
        overrides.append(EndpointOverride(voter_id, entry.directory_id, listener, stale, host, port))
    partition = directory / CLUSTER_METADATA_DIR
    try:
        current = read_endpoint_overrides(partition)
    except StateFileError as e:
        raise RecoveryRefused(f"{e}: move the file away and run again.") from None
    if not overrides:
        raise NothingToRecover(f"Nothing to do: the voter set in {directory} already records these endpoints; "
                               "nothing was changed.")
    if set(current) == set(overrides):
        raise NothingToRecover(f"Nothing to do: {partition / ENDPOINT_OVERRIDES_FILE} already holds these "
                               "endpoints; nothing was changed. Start the node.")
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(time.time() if now is None else now))
    backup = backup_dir or directory.parent / f"{directory.name}.recover-quorum-backup-{stamp}"
    if backup.exists():
        raise RecoveryRefused(f"Backup directory {backup} already exists: give another --backup-dir.")
    return EndpointsPlan(config.node_id, partition, listener, tuple(overrides), backup)


def apply_endpoints(plan: EndpointsPlan) -> list[str]:
    """Back up quorum-state and any previous overrides, then write the file."""
    with DirectoryLock(plan.partition_dir.parent):
        plan.backup_dir.mkdir(parents=True)
        copied = []
        for name in (QUORUM_STATE_FILE, ENDPOINT_OVERRIDES_FILE):
            if (plan.partition_dir / name).exists():
                copied.append(name)
                shutil.copy2(plan.partition_dir / name, plan.backup_dir / name)
                fd = os.open(plan.backup_dir / name, os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
        fsync_dir(plan.backup_dir)
        fsync_dir(plan.backup_dir.parent)
        path = write_endpoint_overrides(plan.partition_dir, plan.overrides)
    return [f"Backed up {' and '.join(copied) or 'nothing (no quorum-state yet)'} to {plan.backup_dir}",
            f"Wrote {path}: " + ", ".join(f"{o.voter_id}@{o.host}:{o.port}" for o in plan.overrides)]
