"""What ``kafka-storage format`` writes: the release versions it knows, the
feature levels it bootstraps, ``bootstrap.checkpoint``, and the KIP-853
bootstrap snapshot ``00000000000000000000-0000000000.checkpoint`` of a
dynamic quorum -- where Kafka 4.4 also puts the bootstrap records (KIP-1170)
-- and where to read the bootstrap records back from either layout
(:func:`read_bootstrap_metadata`).
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kraft.records.metadata import encode_metadata_record
from kraft.records.snapshot import (
    BOOTSTRAP_FILE_NAME,
    BOOTSTRAP_SNAPSHOT_ID,
    SnapshotWriter,
    snapshot_file_name,
    validate_snapshot_bytes,
)
from kraft.records.state_files import CLUSTER_METADATA_DIR, uuid_from_kafka

METADATA_VERSION_FEATURE = "metadata.version"
KRAFT_VERSION_FEATURE = "kraft.version"

#: ``MetadataVersion``: release version -> (feature level, production ready).
METADATA_VERSIONS: dict[str, tuple[int, bool]] = {
    "3.0-IV1": (1, True),
    "3.1-IV0": (2, True),
    "3.2-IV0": (3, True),
    "3.3-IV0": (4, True),
    "3.3-IV1": (5, True),
    "3.3-IV2": (6, True),
    "3.3-IV3": (7, True),
    "3.4-IV0": (8, True),
    "3.5-IV0": (9, True),
    "3.5-IV1": (10, True),
    "3.5-IV2": (11, True),
    "3.6-IV0": (12, True),
    "3.6-IV1": (13, True),
    "3.6-IV2": (14, True),
    "3.7-IV0": (15, True),
    "3.7-IV1": (16, True),
    "3.7-IV2": (17, True),
    "3.7-IV3": (18, True),
    "3.7-IV4": (19, True),
    "3.8-IV0": (20, True),
    "3.9-IV0": (21, True),
    "4.0-IV0": (22, True),
    "4.0-IV1": (23, True),
    "4.0-IV2": (24, True),
    "4.0-IV3": (25, True),
    "4.1-IV0": (26, True),
    "4.1-IV1": (27, True),
    # Kafka 4.1's MetadataVersion knows 4.2's first two, not yet production
    # there; 4.4.0's knows every one below and calls 4.4-IV2 production
    # (``kafka-storage.sh version-mapping`` of 4.4.0, run).
    "4.2-IV0": (28, True),
    "4.2-IV1": (29, True),
    "4.3-IV0": (30, True),
    "4.4-IV0": (31, True),
    "4.4-IV1": (32, True),
    "4.4-IV2": (33, True),
    # Kafka 4.4.0's latestTesting(): version-mapping answers it, format
    # refuses it without unstable.feature.versions.enable (run).
    "4.5-IV0": (34, False),
}
#: ``MetadataVersion.LATEST_PRODUCTION`` of the Kafka release the tools
#: print as by default (4.4.0); another release's is in
#: :class:`kraft.kafka_release.KafkaRelease`.
LATEST_PRODUCTION = "4.4-IV2"
MINIMUM_RELEASE = "3.3-IV3"  # the oldest a KRaft cluster is formatted with nowadays

#: The newest metadata.version the tools accept (``MetadataVersion.latestTesting()``
#: of Kafka 4.4.0; another release's is in :class:`kraft.kafka_release.KafkaRelease`).
LATEST_TESTING = "4.5-IV0"

#: Kafka's finalized features other than metadata.version, in
#: ``Feature.PRODUCTION_FEATURES`` order (Kafka 4.1.0; 4.0.0 has the first
#: four, :attr:`kraft.kafka_release.KafkaRelease.features`): level -> (the
#: metadata.version level from which it is the default, the feature levels
#: it depends on). From server-common's KRaftVersion, TransactionVersion,
#: GroupVersion and EligibleLeaderReplicasVersion enums.
FEATURE_VERSIONS: dict[str, dict[int, tuple[int, dict[str, int]]]] = {
    "kraft.version": {0: (7, {}), 1: (21, {METADATA_VERSION_FEATURE: 21})},  # KIP-853, 3.9-IV0
    "transaction.version": {0: (7, {}), 1: (24, {}), 2: (24, {})},  # KIP-890, 4.0-IV2
    "group.version": {0: (7, {}), 1: (22, {METADATA_VERSION_FEATURE: 22})},  # KIP-848, 4.0-IV0
    "eligible.leader.replicas.version": {0: (7, {}), 1: (26, {METADATA_VERSION_FEATURE: 23})},  # KIP-966
    "share.version": {0: (7, {}), 1: (28, {}), 2: (31, {})},  # KIP-932, 4.2-IV0 (Kafka 4.1); 2 from 4.4-IV0 (4.4)
    "streams.version": {0: (7, {}), 1: (29, {})},  # KIP-1071, 4.2-IV1 (Kafka 4.1)
}


def default_level(feature: str, release: str, newest: int | None = None) -> int:
    """``Feature.defaultLevel``: the newest level (up to ``newest``, the
    Kafka release's own newest level of it) whose bootstrap metadata.version
    is at most ``release``'s."""
    level = feature_level(release)
    return max(v for v, (since, _) in FEATURE_VERSIONS[feature].items()
               if since <= level and (newest is None or v <= newest))


class FormatError(ValueError):
    """A format request Kafka's ``Formatter`` would refuse (``FormatterException``)."""


#: ``MetadataVersion.fromVersionString``'s error in Kafka 4.0 and 4.1.
UNKNOWN_RELEASE_VERSION = ("Version {text} is not a valid version. The minimum version is {minimum} "
                           "and the maximum version is {maximum}")


def parse_release_version(text: str, latest_testing: str = LATEST_TESTING, unknown: str | None = None) -> str:
    """Kafka's ``MetadataVersion.fromVersionString``: ``4.0-IV3``, or ``3.9``
    for the latest IV of that release, between MINIMUM_RELEASE and
    ``latest_testing``; raises :class:`FormatError` with Kafka's message
    (``unknown``: the release's wording, ``KafkaRelease.unknown_release_version``)."""
    text = text.strip()
    low, high = METADATA_VERSIONS[MINIMUM_RELEASE][0], METADATA_VERSIONS[latest_testing][0]
    known = [v for v, (level, _) in METADATA_VERSIONS.items() if low <= level <= high]
    if text in known:
        return text
    candidates = [v for v in known if v.split("-")[0] == text]
    if not candidates:
        wording = unknown or UNKNOWN_RELEASE_VERSION
        raise FormatError(wording.format(text=text, minimum=MINIMUM_RELEASE, maximum=latest_testing,
                                         known=", ".join(known)))
    return candidates[-1]


def feature_level(release: str) -> int:
    return METADATA_VERSIONS[release][0]


def release_for_level(level: int) -> str | None:
    for name, (lvl, _) in METADATA_VERSIONS.items():
        if lvl == level:
            return name
    return None


def default_feature_levels(release: str, features: tuple[str, ...] | None = None,
                           caps: dict[str, int] | None = None) -> dict[str, int]:
    """Every finalized feature (of ``features``, default all) but kraft.version
    and its default level for ``release`` (``caps``: a Kafka release's newest
    level of a feature, where below kraft's)."""
    names = FEATURE_VERSIONS if features is None else features
    return {name: default_level(name, release, (caps or {}).get(name)) for name in names
            if name != KRAFT_VERSION_FEATURE}


@dataclass(frozen=True)
class DynamicVoter:
    """One entry of ``--initial-controllers``: ``id@host:port:directoryId``."""

    node_id: int
    host: str
    port: int
    directory_id: uuid.UUID


def parse_dynamic_voter(text: str) -> DynamicVoter:
    """One ``id@host:port:directoryId`` (``[v6]`` hosts in brackets), with
    the messages of Kafka's ``DynamicVoter.parse``."""
    rest = text.strip()
    node_text, at, rest = rest.partition("@")
    if not at:
        raise FormatError("No @ found in dynamic voter string.")
    if not node_text:
        raise FormatError("Invalid @ at beginning of dynamic voter string.")
    if not re.fullmatch(r"[+-]?\d+", node_text):
        raise FormatError("Failed to parse node id in dynamic voter string.")
    node_id = int(node_text)
    if node_id < 0:
        raise FormatError(f"Invalid negative node id {node_id} in dynamic voter string.")
    if not rest:
        raise FormatError("No hostname found after node id.")
    if rest.startswith("["):
        end = rest.find("]")
        if end < 0:
            raise FormatError("Hostname began with left bracket, but no right bracket was found.")
        host, rest = rest[1:end], rest[end + 1:]
    else:
        end = rest.find(":")
        if end < 0:
            raise FormatError("No colon following hostname could be found.")
        host, rest = rest[:end], rest[end:]
    if not rest.startswith(":"):
        raise FormatError("Port section must start with a colon.")
    port_text, colon, directory_text = rest[1:].partition(":")
    if not colon:
        raise FormatError("No colon following port could be found.")
    if not re.fullmatch(r"[+-]?\d+", port_text):
        raise FormatError("Failed to parse port in dynamic voter string.")
    port = int(port_text)
    if not 0 <= port <= 65535:
        raise FormatError(f"Invalid port {port} in dynamic voter string.")
    try:
        directory_id = uuid_from_kafka(directory_text)
    except ValueError:
        raise FormatError("Failed to parse directory ID in dynamic voter string.") from None
    return DynamicVoter(node_id, host, port, directory_id)


def parse_dynamic_voters(text: str) -> list[DynamicVoter]:
    """Kafka's ``DynamicVoters.parse``; raises :class:`FormatError`."""
    voters: list[DynamicVoter] = []
    for item in (s.strip() for s in text.split(",")):
        if not item:
            continue
        voter = parse_dynamic_voter(item)
        if any(v.node_id == voter.node_id for v in voters):
            raise FormatError(f"Node id {voter.node_id} was specified more than once.")
        voters.append(voter)
    if not voters:
        raise FormatError("No voters given.")
    return voters


def bootstrap_records(release: str, features: dict[str, int]) -> list[Any]:
    """``BootstrapMetadata.fromVersions``: metadata.version first, then every
    other non-zero feature in name order (kraft.version lives in the log as a
    control record instead)."""
    from kraft.messages.registry import message_class

    feature_cls = message_class("FeatureLevelRecord")
    records = [feature_cls(name=METADATA_VERSION_FEATURE, feature_level=feature_level(release))]
    for name in sorted(features):
        if name in (METADATA_VERSION_FEATURE, KRAFT_VERSION_FEATURE) or features[name] <= 0:
            continue
        records.append(feature_cls(name=name, feature_level=features[name]))
    return records


def _java_bytes(data: bytes) -> str:
    """``Arrays.toString(byte[])``: signed bytes in brackets."""
    return "[" + ", ".join(str(b - 256 if b > 127 else b) for b in data) + "]"


def _describe_record(record: Any) -> str:
    """The generated ``toString`` of a bootstrap record (FeatureLevelRecord, UserScramCredentialRecord)."""
    if hasattr(record, "feature_level"):
        return f"FeatureLevelRecord(name='{record.name}', featureLevel={record.feature_level})"
    return (f"UserScramCredentialRecord(name='{record.name}', mechanism={record.mechanism}, "
            f"salt={_java_bytes(record.salt)}, storedKey={_java_bytes(record.stored_key)}, "
            f"serverKey={_java_bytes(record.server_key)}, iterations={record.iterations})")


def describe_bootstrap(records: list[Any], release: str) -> str:
    """Kafka's ``BootstrapMetadata.toString``, which the format command of
    Kafka 4.4 prints (``Formatter.run``)."""
    parts = [f"ApiMessageAndVersion({_describe_record(r)} at version 0)" for r in records]
    return (f"BootstrapMetadata(records=[{', '.join(parts)}], metadataVersionLevel={feature_level(release)}, "
            "source=format command)")


def write_bootstrap_checkpoint(metadata_log_dir: Path, records: list[Any], *, timestamp_ms: int) -> Path:
    """``<log dir>/bootstrap.checkpoint``: header, the records, footer. Kafka
    writes a header whose lastContainedLogTimestamp is 0 here."""
    writer = SnapshotWriter(
        Path(metadata_log_dir),
        BOOTSTRAP_SNAPSHOT_ID,
        last_contained_log_timestamp=0,
        clock_ms=lambda: timestamp_ms,
        final_name=BOOTSTRAP_FILE_NAME,
    )
    with writer:
        writer.append([encode_metadata_record(r, 0) for r in records])
        return writer.freeze()


def voters_record(voters: list[DynamicVoter], listener_name: str, kraft_versions: tuple[int, int] = (0, 1)) -> Any:
    """The ``VotersRecord`` of an initial dynamic quorum."""
    from kraft.messages.generated import voters_record as vr

    return vr.VotersRecord(
        version=0,
        voters=[
            vr.Voter(
                voter_id=v.node_id,
                voter_directory_id=v.directory_id,
                endpoints=[vr.Endpoint(name=listener_name, host=v.host, port=v.port)],
                k_raft_version_feature=vr.KRaftVersionFeature(
                    min_supported_version=kraft_versions[0], max_supported_version=kraft_versions[1]
                ),
            )
            for v in voters
        ],
    )


def write_bootstrap_snapshot(
    metadata_log_dir: Path, voters: list[DynamicVoter] | None, listener_name: str, *, kraft_version: int,
    timestamp_ms: int, records: list[Any] | None = None,
) -> Path:
    """``__cluster_metadata-0/00000000000000000000-0000000000.checkpoint`` with the
    KRaftVersion and Voters control records (KIP-853 ``--standalone`` /
    ``--initial-controllers``; no voters: ``--no-initial-controllers``), then
    ``records``: the bootstrap metadata records where Kafka 4.4 puts them
    (KIP-1170, ``Formatter.writeBoostrapSnapshot``), in one batch."""
    from kraft.records.metadata import encode_metadata_record

    partition_dir = Path(metadata_log_dir) / CLUSTER_METADATA_DIR
    partition_dir.mkdir(parents=True, exist_ok=True)
    writer = SnapshotWriter(
        partition_dir,
        BOOTSTRAP_SNAPSHOT_ID,
        last_contained_log_timestamp=timestamp_ms,
        kraft_version=kraft_version,
        voters_record=voters_record(voters, listener_name) if voters else None,
        clock_ms=lambda: timestamp_ms,
    )
    with writer:
        if records:
            writer.append([encode_metadata_record(r, 0) for r in records])
        return writer.freeze()


def read_bootstrap_checkpoint(path: Path) -> list[Any]:
    """The metadata records of a ``bootstrap.checkpoint``."""
    from kraft.records.metadata import decode_metadata_record

    contents = validate_snapshot_bytes(Path(path).read_bytes(), str(path))
    return [decode_metadata_record(r.value).message for r in contents.data_records()]


def bootstrap_metadata_path(metadata_log_dir: Path) -> Path | None:
    """The file that holds the bootstrap records of ``metadata_log_dir``:
    ``bootstrap.checkpoint`` where there is one (Kafka 4.4's
    ``BootstrapMetadata.fromDirectory`` reads that legacy file first), else
    the KIP-1170 bootstrap snapshot ``__cluster_metadata-0/00000000000000000000-0000000000.checkpoint``;
    None when neither exists (a broker formatted by Kafka 4.4)."""
    legacy = Path(metadata_log_dir) / BOOTSTRAP_FILE_NAME
    if legacy.exists():
        return legacy
    snapshot = Path(metadata_log_dir) / CLUSTER_METADATA_DIR / snapshot_file_name(BOOTSTRAP_SNAPSHOT_ID)
    return snapshot if snapshot.exists() else None


def read_bootstrap_metadata(metadata_log_dir: Path) -> list[Any]:
    """The bootstrap metadata records of ``metadata_log_dir`` in either
    layout (:func:`bootstrap_metadata_path`; the KRaft control records of
    the snapshot are not metadata and are left out); none without either
    file. A damaged file raises as :func:`read_bootstrap_checkpoint`."""
    path = bootstrap_metadata_path(metadata_log_dir)
    return read_bootstrap_checkpoint(path) if path is not None else []
