"""The election state on disk (Kafka's ``FileQuorumStateStore``): the
``quorum-state`` file, written by temp file, fsync and rename."""

from __future__ import annotations

from collections.abc import Sequence

from kraft.raft.roles import ElectionState, election_state_of
from kraft.records.errors import StateFileError
from kraft.records.state_files import QuorumStateFile, QuorumStateFileData

__all__ = ["ElectionStateStore"]

#: What an operator does with a quorum-state the node cannot use.
_WAY_OUT = ("the file is damaged; move it away and the node starts unattached, with no vote, in its log's latest "
            "epoch (as Kafka does when quorum-state is behind the log)")


class ElectionStateStore:
    """The election state in ``quorum-state`` (temp file, fsync, rename)."""

    def __init__(self, file: QuorumStateFile, static_voters: Sequence[int] | None, cluster_id: str) -> None:
        self.file = file
        self.static_voters = tuple(static_voters) if static_voters is not None else None
        self.cluster_id = cluster_id

    def read(self) -> ElectionState | None:
        """The stored state (``None``: no file). A file no replica writes (a
        negative epoch, an id below Kafka's -1 "none") is a
        ``StateFileError`` naming it, never a silent fresh start."""
        try:
            data = self.file.read()
            if data is None:
                return None
            return election_state_of(data)
        except StateFileError as e:  # torn, not JSON, a field missing
            raise StateFileError(str(self.file.path), f"{e.reason}: {_WAY_OUT}") from None
        except ValueError as e:  # read, but no replica writes it
            raise StateFileError(str(self.file.path), f"{e}: {_WAY_OUT}") from None

    def write(self, state: ElectionState, kraft_version: int | None = None) -> None:
        """Kafka's ``FileQuorumStateStore.writeElectionState``: the data version
        follows the latest kraft.version in the log (0 -> data_version 0 with
        the static voter ids; 1 -> data_version 1 with votedDirectoryId).
        ``None`` (a caller that does not know it): by the configuration."""
        import uuid

        voted = state.voted_key
        v0 = self.static_voters is not None if kraft_version is None else kraft_version == 0
        data = QuorumStateFileData(
            leader_id=-1 if state.leader_id is None else state.leader_id,
            leader_epoch=state.epoch,
            voted_id=-1 if voted is None else voted.id,
            voted_directory_id=uuid.UUID(int=0) if voted is None or voted.directory_id is None else voted.directory_id,
            current_voters=self.static_voters if v0 and self.static_voters is not None else (),
            cluster_id="",
            data_version=0 if v0 else 1,
        )
        self.file.write(data)
