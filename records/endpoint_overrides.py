"""``voter-endpoint-overrides``: where to reach voters whose hosts moved.

A dynamic (KIP-853) quorum keeps its voters' endpoints in ``VotersRecord``
control records, and those win over ``controller.quorum.bootstrap.servers``:
when every controller moved to a new host, no voter can reach another, no
leader is elected, and no leader means no ``UpdateRaftVoter`` to record the
new endpoints. ``kraft storage recover-quorum --endpoints`` writes this file
next to ``quorum-state`` on every (stopped) voter. A node that starts reads
it and dials a listed voter at its new address *while the log still records
the stale one*; once a leader is elected, each voter's ``UpdateRaftVoter``
(and the leader's own start-of-epoch ``VotersRecord``) puts the new
endpoint into the log through Raft, and the entry stops applying.

The file never changes the log, the voter set or any vote: it only decides
which address a request for voter N goes to. JSON, written atomically::

    {"version": 0, "overrides": [{"id": 1, "directoryId": "...", "listener": "CONTROLLER",
      "staleHost": "old-1", "stalePort": 9093, "host": "new-1", "port": 9093}]}
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kraft.records.errors import StateFileError
from kraft.records.fileutil import atomic_write
from kraft.records.state_files import read_voter_list_file, uuid_from_kafka, uuid_to_kafka

__all__ = ["ENDPOINT_OVERRIDES_FILE", "EndpointOverride", "read_endpoint_overrides", "write_endpoint_overrides"]

#: Beside ``quorum-state`` in ``__cluster_metadata-0`` (Kafka's log loader
#: ignores files it does not know there).
ENDPOINT_OVERRIDES_FILE = "voter-endpoint-overrides"


@dataclass(frozen=True, slots=True)
class EndpointOverride:
    """Dial voter ``voter_id`` (directory ``directory_id``) at ``host:port``
    on ``listener`` while the voter set records it at ``stale``."""

    voter_id: int
    directory_id: uuid.UUID | None
    listener: str
    stale: tuple[str, int] | None
    host: str
    port: int

    def applies(self, recorded: tuple[str, int] | None) -> bool:
        """Whether this override wins over the endpoint the voter set now
        records (``None``: none on this listener). A newer VotersRecord with
        any other endpoint (the leader wrote the voter's UpdateRaftVoter)
        ends it."""
        return recorded is None or recorded == self.stale

    def in_force(self, voter: bool, voter_directory_id: uuid.UUID | None, recorded: tuple[str, int] | None) -> bool:
        """Whether a node dials this override now: ``voter_id`` is a voter
        of the current voter set (``voter``), with the directory id the
        override names (if it names one), and the set still records the
        stale endpoint (:meth:`applies`). The node and ``kraft doctor`` both
        decide with this."""
        return (voter and (self.directory_id is None or voter_directory_id == self.directory_id)
                and self.applies(recorded))

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.voter_id,
            "directoryId": uuid_to_kafka(self.directory_id) if self.directory_id is not None else None,
            "listener": self.listener,
            "staleHost": self.stale[0] if self.stale else None,
            "stalePort": self.stale[1] if self.stale else None,
            "host": self.host,
            "port": self.port,
        }


def _entry(path: str, raw: Any) -> EndpointOverride:
    if not isinstance(raw, dict):
        raise StateFileError(path, "an override is not a JSON object")
    try:
        voter_id, host, port, listener = raw["id"], raw["host"], raw["port"], raw["listener"]
        directory = raw.get("directoryId")
        stale_host, stale_port = raw.get("staleHost"), raw.get("stalePort")
    except KeyError as e:
        raise StateFileError(path, f"an override lacks {e.args[0]!r}") from None
    if not (isinstance(voter_id, int) and isinstance(port, int) and isinstance(host, str) and isinstance(listener, str)
            and 0 <= voter_id <= 2**31 - 1 and 0 < port <= 65535 and host):
        raise StateFileError(path, f"bad override {raw!r}")
    try:
        directory_id = uuid_from_kafka(directory) if isinstance(directory, str) else None
    except ValueError:
        raise StateFileError(path, f"bad directoryId {directory!r}") from None
    stale = (stale_host, stale_port) if isinstance(stale_host, str) and isinstance(stale_port, int) else None
    return EndpointOverride(voter_id, directory_id, listener, stale, host, port)


def read_endpoint_overrides(partition_dir: Path) -> tuple[EndpointOverride, ...]:
    """The overrides in ``partition_dir`` (none when the file is absent);
    :class:`StateFileError` naming the file when it is malformed."""
    path = partition_dir / ENDPOINT_OVERRIDES_FILE
    return read_voter_list_file(path, "overrides", _entry)


def write_endpoint_overrides(partition_dir: Path, overrides: Iterable[EndpointOverride]) -> Path:
    """Write the file atomically (fsynced, renamed, directory fsynced)."""
    path = partition_dir / ENDPOINT_OVERRIDES_FILE
    body = {"version": 0, "overrides": [o.to_json() for o in sorted(overrides, key=lambda o: o.voter_id)]}
    atomic_write(path, (json.dumps(body, indent=1) + "\n").encode(), standalone=True)
    return path
