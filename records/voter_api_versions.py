"""``voter-api-versions``: what each voter last answered on ApiVersions.

kraft's own file (Kafka has none like it), beside ``quorum-state`` in
``__cluster_metadata-0``. The witness decision (kraft/raft/witness_policy.py) rests
on the other voters' ApiVersions answers: a kraft node, or a Kafka controller
advertising the controller APIs kraft lacks. Heard only in memory, those
answers were lost on a restart, and a voter dead for good never answers
again -- so a kraft-only quorum whose log holds Kafka-shaped records stayed
witnesses, without a leader, forever. The node writes the answers here when
they change and seeds its witness decision from them at start; a live answer
replaces what is remembered.

JSON, written atomically (temporary file, fsync, rename, directory fsync)::

    {"version": 0, "voters": [
      {"id": 1, "directoryId": null, "answeredAs": "kraft", "kafkaControllerApis": []},
      {"id": 2, "directoryId": "...", "answeredAs": "kafka-controller",
       "kafkaControllerApis": ["CreateTopics", "BrokerRegistration", ...]}]}

``directoryId`` is the voter's directory id in the voter set when it
answered (null in a static quorum): a voter re-added with another directory
(a new disk, or a Kafka controller given a reused id) is not the one
remembered.
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

__all__ = ["VOTER_API_VERSIONS_FILE", "RememberedAnswer", "encode_voter_api_versions", "read_voter_api_versions",
           "write_voter_api_versions"]

#: Beside ``quorum-state`` in ``__cluster_metadata-0`` (Kafka's log loader
#: ignores files it does not know there).
VOTER_API_VERSIONS_FILE = "voter-api-versions"

KRAFT = "kraft"
KAFKA_CONTROLLER = "kafka-controller"


@dataclass(frozen=True, slots=True)
class RememberedAnswer:
    """Voter ``voter_id`` (directory ``directory_id`` when the voter set has
    one) answered ApiVersions advertising ``kafka_controller_apis`` (Kafka's
    names of the controller APIs kraft lacks; none: a kraft node)."""

    voter_id: int
    directory_id: uuid.UUID | None
    kafka_controller_apis: tuple[str, ...]

    @property
    def answered_as(self) -> str:
        return KAFKA_CONTROLLER if self.kafka_controller_apis else KRAFT

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.voter_id,
            "directoryId": uuid_to_kafka(self.directory_id) if self.directory_id is not None else None,
            "answeredAs": self.answered_as,
            "kafkaControllerApis": list(self.kafka_controller_apis),
        }


def _entry(path: str, raw: Any) -> RememberedAnswer:
    if not isinstance(raw, dict):
        raise StateFileError(path, f"a voter entry is not a JSON object: {raw!r}")
    voter_id, directory, kind, apis = (raw.get("id"), raw.get("directoryId"), raw.get("answeredAs"),
                                       raw.get("kafkaControllerApis"))
    if not (isinstance(voter_id, int) and not isinstance(voter_id, bool) and 0 <= voter_id <= 2**31 - 1):
        raise StateFileError(path, f"bad voter id in {raw!r}")
    if not (isinstance(apis, list) and all(isinstance(a, str) and a for a in apis)):
        raise StateFileError(path, f"kafkaControllerApis of voter {voter_id} is not a list of API names")
    if kind not in (KRAFT, KAFKA_CONTROLLER) or (kind == KAFKA_CONTROLLER) != bool(apis):
        raise StateFileError(path, f"answeredAs of voter {voter_id} is {kind!r}, which does not fit its "
                                   f"kafkaControllerApis {apis!r}")
    try:
        directory_id = uuid_from_kafka(directory) if directory is not None else None
    except ValueError:
        raise StateFileError(path, f"bad directoryId {directory!r} of voter {voter_id}") from None
    return RememberedAnswer(voter_id, directory_id, tuple(apis))


def read_voter_api_versions(partition_dir: Path) -> tuple[RememberedAnswer, ...]:
    """The remembered answers in ``partition_dir`` (none when the file is
    absent); :class:`StateFileError` naming the file when it cannot be read
    or is malformed."""
    path = partition_dir / VOTER_API_VERSIONS_FILE
    return read_voter_list_file(path, "voters", _entry)


def encode_voter_api_versions(answers: Iterable[RememberedAnswer]) -> bytes:
    """The file's bytes for ``answers`` (by voter id)."""
    body = {"version": 0, "voters": [a.to_json() for a in sorted(answers, key=lambda a: a.voter_id)]}
    return (json.dumps(body, indent=1) + "\n").encode()


def write_voter_api_versions(partition_dir: Path, answers: Iterable[RememberedAnswer]) -> Path:
    """Write the file atomically (fsynced, renamed, directory fsynced);
    :class:`~kraft.records.errors.DiskIOError` when the disk refuses."""
    path = partition_dir / VOTER_API_VERSIONS_FILE
    atomic_write(path, encode_voter_api_versions(answers), standalone=True)
    return path
