"""What to do about a log directory the node cannot open: one line naming
the damage (file, byte position, offset) and the commands that fix it.

Recovery (:mod:`kraft.records.recovery`) truncates a torn tail by itself, but
refuses damage that valid batches follow: truncating there would drop
committed records. Such a copy of the log is lost; the quorum still has the
records, so the remedy is to give this node a fresh directory and let it
fetch them again:

- a voter of a dynamic quorum (KIP-853): format a fresh directory (a new
  directory id), start it -- it catches up as an observer -- then
  ``remove-controller`` the old directory id and ``add-controller`` the new
  one (in that order: Kafka's AddRaftVoter refuses a voter id that is
  already in the voter set, DUPLICATE_VOTER);
- an observer, or a voter of a static quorum (kraft.version 0, one at a
  time): move the directory aside, format it again with the cluster id,
  start: the node fetches the log from the leader.

Every command is in backquotes, in the order to run them.
"""

from __future__ import annotations

from pathlib import Path

from kraft.config import NodeConfig
from kraft.records.errors import CorruptLogError
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
    dynamic = not config.voters
    fmt = f"`kraft storage format -c {config_path} -t {cluster}" + (" --no-initial-controllers`" if dynamic else "`")
    head = f"corrupt log in {where}: {error.reason}; this copy of the log is lost (the quorum still has it)"
    if dynamic and meta.directory_id is not None:
        bootstrap = _bootstrap(config)
        quorum = f"kraft metadata-quorum --bootstrap-controller {bootstrap}"
        return (f"{head}. If node {config.node_id} is a voter, replace its directory (KIP-853): {aside}, {fmt}, "
                f"{start}, then `{quorum} remove-controller --controller-id {config.node_id} "
                f"--controller-directory-id {uuid_to_kafka(meta.directory_id)}` and "
                f"`{quorum} --command-config {config_path} add-controller`; if it is an observer: {aside}, {fmt}, "
                f"{start} (it fetches the log again)")
    role = "a voter of a static quorum (one voter at a time)" if config.is_voter_candidate else "an observer"
    return f"{head}. This node is {role}: refetch the log: {aside}, {fmt}, {start} (it fetches the log from the leader)"
