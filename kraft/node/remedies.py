"""What to do about a log directory the node cannot open: one line naming
the damage (file, byte position, offset) and the commands that fix it.

Recovery (:mod:`kraft.records.recovery`) truncates a torn tail by itself, but
refuses damage that valid batches follow: truncating there would drop
committed records. Such a copy of the log is lost; the quorum still has the
records, so the remedy is to give this node a fresh directory and let it
fetch them again:

Which remedy is decided from the log, not the config: the ``kraft.version``
and the ``VotersRecord`` still readable in the directory
(:mod:`kraft.records.damaged_log`). A quorum started from
``controller.quorum.voters`` and upgraded to kraft.version 1 keeps its voters,
directory ids included, in the log like any dynamic quorum, and a voter that
comes back with a fresh directory is only an observer there.

- a voter of the log's voter set (KIP-853, this directory's id in it): format
  a fresh directory (a new directory id), start it -- it catches up as an
  observer -- then ``remove-controller`` the old directory id and
  ``add-controller`` the new one (in that order: Kafka's AddRaftVoter refuses
  a voter id that is already in the voter set, DUPLICATE_VOTER);
- a voter of a static quorum (no VotersRecord, kraft.version 0: the voters
  are the config's, by id only; one at a time), or an observer: move the
  directory aside, format it again with the cluster id, start: the node
  fetches the log from the leader.

The format command is the one ``kraft storage format`` takes for this
config: ``--no-initial-controllers`` only without ``controller.quorum.voters``.

Every command is in backquotes, in the order to run them.
"""

from __future__ import annotations

from pathlib import Path

from kraft.config import NodeConfig
from kraft.records.damaged_log import readable_kraft_control_state
from kraft.records.errors import CorruptLogError
from kraft.records.log import metadata_partition_dir
from kraft.records.state_files import MetaProperties, uuid_to_kafka

__all__ = ["corruption_remedy", "damaged_offset"]


def damaged_offset(path: str | None, position: int | None) -> int | None:
    """The offset of the first batch that cannot be read: the one after the
    last valid batch before ``position`` in segment ``path``."""
    if path is None or position is None or not path.endswith(".log"):
        return None
    from kraft.records.recovery import scan

    try:
        base = int(Path(path).name.split(".")[0])
        with open(path, "rb") as f:
            data = f.read(position)
    except (OSError, ValueError):
        return None
    headers = scan(memoryview(data), base).headers
    return headers[-1].next_offset if headers else base


def _bootstrap(config: NodeConfig) -> str:
    """Where the other controllers answer (for kraft metadata-quorum)."""
    own = {(e.host, e.port) for e in (*config.listeners, *config.advertised_listeners)}
    addresses = [(v.host, v.port) for v in config.voters if v.node_id != config.node_id]
    addresses += [a for a in config.bootstrap_servers if a not in own]
    return ",".join(f"{h}:{p}" for h, p in addresses) or "HOST:PORT"


def _log_voter(config: NodeConfig, meta: MetaProperties) -> tuple[int, str] | None:
    """(kraft.version, the log's voter set as text) when the log's last
    readable VotersRecord lists this directory (node id and directory id)."""
    try:
        state = readable_kraft_control_state(metadata_partition_dir(Path(config.metadata_log_dir)))
    except OSError:
        return None
    if state.voters is None:
        return None
    entries = state.voters.voters
    if not any(v.voter_id == config.node_id and v.directory_id in (None, meta.directory_id) for v in entries):
        return None
    return state.kraft_version, ", ".join(str(v.voter_id) for v in entries)


def corruption_remedy(error: CorruptLogError, config: NodeConfig, meta: MetaProperties) -> str:
    """The one line for a log directory recovery refused to repair."""
    log_dir = Path(config.metadata_log_dir)
    offset = damaged_offset(error.path, error.position)
    where = f"{error.path or log_dir}" + (f" at byte {error.position}" if error.position is not None else "") \
        + (f" (offset {offset})" if offset is not None else "")
    config_path = str(config.source_path) if config.source_path is not None else "CONFIG"
    cluster = meta.cluster_id or "CLUSTER_ID"
    aside = f"`mv {log_dir} {log_dir}.corrupt`"
    start = f"`kraft node start -c {config_path}`"
    fmt = f"`kraft storage format -c {config_path} -t {cluster}" + ("`" if config.voters else " --no-initial-controllers`")
    head = f"corrupt log in {where}: {error.reason}; this copy of the log is lost (the quorum still has it)"
    voter = _log_voter(config, meta)
    if voter is not None and meta.directory_id is not None:
        kraft_version, voters = voter
        bootstrap = _bootstrap(config)
        quorum = f"kraft metadata-quorum --bootstrap-controller {bootstrap}"
        return (f"{head}. Node {config.node_id} is a voter of the log's voter set ({voters}; kraft.version "
                f"{kraft_version}): replace its directory (KIP-853): {aside}, {fmt}, {start} (it catches up as an "
                f"observer), then `{quorum} remove-controller --controller-id {config.node_id} "
                f"--controller-directory-id {uuid_to_kafka(meta.directory_id)}` and "
                f"`{quorum} --command-config {config_path} add-controller`")
    role = "a voter of a static quorum (one voter at a time)" if config.is_voter_candidate else "an observer"
    return f"{head}. This node is {role}: refetch the log: {aside}, {fmt}, {start} (it fetches the log from the leader)"
