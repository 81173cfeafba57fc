"""SCRAM accounts for a node's SASL listeners, from the metadata as Kafka
keeps them: ``UserScramCredentialRecord`` / ``RemoveUserScramCredentialRecord``.

Two sources, applied in log order:

* the bootstrap records of the metadata log directory (``kraft storage
  format --add-scram``, as ``kafka-storage format --add-scram`` writes them:
  ``bootstrap.checkpoint`` before Kafka 4.4, the 0-0 bootstrap snapshot in
  4.4's KIP-1170 layout): read at start, so a quorum can authenticate its
  own members before it has elected a leader;
* every committed record of the metadata log (and the latest snapshot),
  followed while the node runs: a credential appended through the leader
  is accepted by every node once committed and replicated to it.

Only salted credentials exist anywhere (the records hold salt, StoredKey,
ServerKey and iterations).
"""

from __future__ import annotations

import logging
from pathlib import Path

from kraft.node.snapshots import CommittedSource, SnapshotLoaded
from kraft.records.bootstrap import bootstrap_metadata_path, read_bootstrap_checkpoint
from kraft.records.metadata import decode_metadata_record
from kraft.wire.security import ScramCredentialStore

__all__ = ["load_bootstrap_credentials", "follow_credentials", "apply_values"]

log = logging.getLogger("kraft.node")

_SCRAM_RECORD_KEYS = frozenset({11, 22})  # UserScramCredentialRecord, RemoveUserScramCredentialRecord


def load_bootstrap_credentials(metadata_log_dir: Path, store: ScramCredentialStore) -> int:
    """Apply the SCRAM records of the bootstrap metadata (either layout); how many."""
    path = bootstrap_metadata_path(Path(metadata_log_dir))
    if path is None:
        return 0
    try:
        records = read_bootstrap_checkpoint(path)
    except Exception as e:  # a damaged file must not stop the node: no accounts from it
        log.warning("cannot read SCRAM credentials from %s: %s", path, e)
        return 0
    return store.apply_records(records)


def apply_values(values: tuple[bytes, ...], store: ScramCredentialStore) -> int:
    """Apply the SCRAM records among metadata record values (others, and
    values that are not metadata records, are skipped)."""
    applied = 0
    for value in values:
        # Frame version 1, then the api key (both one-byte varints here):
        # skip everything else without decoding it.
        if len(value) < 3 or value[0] != 1 or value[1] not in _SCRAM_RECORD_KEYS:
            continue
        try:
            record = decode_metadata_record(value).message
        except Exception:  # not a metadata record: user data in a raft-only cluster
            continue
        if store.apply_record(record):
            applied += 1
    return applied


async def follow_credentials(source: CommittedSource, store: ScramCredentialStore) -> None:
    """Apply SCRAM records as they commit, until cancelled. A snapshot load
    replaces the state: the accounts become those of the bootstrap metadata
    (what the store held when following began) plus the snapshot's, so an
    account removed in the records the snapshot covers is gone."""
    base = store.copy()
    async for item in source.committed_batches():
        if isinstance(item, SnapshotLoaded):
            store.restore(base)
        elif getattr(item, "is_control", False):
            continue
        changed = apply_values(tuple(item.records), store)
        if changed:
            log.info("SCRAM credentials updated from the metadata log (%d records): %d accounts", changed, len(store))
