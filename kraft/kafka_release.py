"""Which Apache Kafka release kraft's Kafka look-alike tools print as.

``kraft dump-log``, ``shell``, ``storage``, ``features`` and ``quorum``
print what the newest Kafka release the suite runs live prints
(:data:`LATEST`, Kafka 4.4.0; ``.ci/kafka-releases``). ``--kafka-version
X.Y`` on each of them, or the environment variable :data:`ENV_VAR` for
scripts, picks an older 4.x release where its output differed: ``4.0`` is
Kafka 4.0.0, ``4.1`` is 4.1.0. A patch release (``4.0.2``) prints as its
minor release here. The facts of 4.4 were found by running its tools on the
shared fixtures (tests/kafka/test_tools_live.py keeps checking them).

Each :class:`KafkaRelease` holds the facts that differ, named after what
Kafka changed (with the Kafka class that changed it), so a tool asks
``release.decodes_leader_change`` rather than comparing version strings.
This module imports nothing of ours and nothing heavy: every tool's
``--help`` loads it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace

__all__ = ["ENV_VAR", "KafkaRelease", "LATEST", "RELEASES", "UnknownKafkaVersion", "kafka_release", "known_versions"]

#: The environment variable scripts set instead of ``--kafka-version``.
ENV_VAR = "KRAFT_KAFKA_VERSION"


@dataclass(frozen=True)
class KafkaRelease:
    """What one Kafka release's tools print where releases differ."""

    #: ``4.1``: what ``--kafka-version`` takes
    name: str
    #: ``/local/version`` of the metadata shell (``AppInfoParser.getVersion``)
    version: str
    #: ``/local/commitId`` (``AppInfoParser.getCommitId``) of the release's build
    commit_id: str
    #: ``DumpLogSegments.printControlRecord`` decodes LeaderChange control
    #: records (``LeaderChange: {...}``, 4.1); 4.0 prints ``controlType: LEADER_CHANGE(2)``
    decodes_leader_change: bool
    #: ``MetadataQuorumCommand.Node.toString`` leaves out the ``directoryId``
    #: of a replica without one (4.1); 4.0 prints ``"directoryId": null``
    omits_missing_directory_id: bool
    #: ``MetadataVersion.LATEST_PRODUCTION``: ``storage format``'s default,
    #: ``version-mapping`` without ``--release-version``
    latest_production: str
    #: ``MetadataVersion.latestTesting()``: the newest ``--release-version`` accepted
    latest_testing: str
    #: ``Feature.PRODUCTION_FEATURES`` (metadata.version apart), in Kafka's order
    features: tuple[str, ...]
    #: ``Formatter.effectiveKRaftFeatureLevel``'s error for kraft.version=1 without a dynamic quorum
    kraft_version_1_error: str
    #: ... and for kraft.version=0 with one of them (4.1's; 4.0.0 names "KIP-853 configuration")
    kraft_version_0_error: str = (
        "Cannot set kraft.version to 0 if one of the flags --standalone, --initial-controllers, or "
        "--no-initial-controllers is used. For dynamic controllers support, try removing the --feature flag for "
        "kraft.version."
    )
    #: ``MetadataVersion.fromVersionString``'s error for a ``--release-version``
    #: it does not know, where it differs from 4.0's and 4.1's "Version X is not
    #: a valid version..." (``{text}``; ``{known}``: every version it knows,
    #: comma-separated, as Kafka 4.4 lists them)
    unknown_release_version: str | None = None
    #: KIP-1170 (Kafka 4.4, ``Formatter.run`` and ``writeBoostrapSnapshot``):
    #: ``storage format`` prints ``Bootstrap metadata: BootstrapMetadata(...)``
    #: first and writes the bootstrap records into a controller's
    #: ``__cluster_metadata-0/00000000000000000000-0000000000.checkpoint``
    #: (a broker's directories get ``meta.properties`` alone); older releases
    #: write ``bootstrap.checkpoint``
    bootstrap_snapshot: bool = False
    #: ``MetadataQuorumCommand.handleRemoveController``'s line; ``{action}`` is
    #: "Removed " or "DRY RUN of removing ". 4.0 and 4.1 format it with
    #: ``"%s KRaft controller ..."`` (two spaces), 4.4 with ``"%sKRaft ..."`` (one)
    removed_controller: str = "{action} KRaft controller {controller_id} with directory id {directory_id}"
    #: ``MetadataQuorumCommand``'s error for a missing ``--command-config``
    #: (``{path}``; 4.0 and 4.1 say "does not exists!", Kafka 4.4 "does not exist.")
    missing_command_config: str = "Properties file {path} does not exists!"
    #: ``DumpLogSegments`` (ported to Java in 4.3) starts a file's offset
    #: sequence at -1, so a segment or snapshot whose first record is not
    #: offset 0 reports ``-1 is followed by N`` on stderr; 4.0 and 4.1 start
    #: the sequence at the first record
    reports_gap_from_minus_one: bool = False
    #: ... and lists a file's gaps in file order (4.0 and 4.1: last gap first)
    lists_gaps_in_file_order: bool = False
    #: ``DumpLogSegments --skip-record-metadata`` prefixes the first field it
    #: prints with ``| `` (``| payload: ...``; 4.0 and 4.1: `` payload: ...``)
    bars_first_field_without_metadata: bool = False
    #: metadata record ids the release's ``MetadataRecordType`` does not know
    #: (its tools print ``Unknown metadata id N``): 4.0 and 4.1 lack 4.4's
    #: UnregisterControllerRecord (29, KIP-1312) -- run on a log holding one
    unknown_metadata_records: tuple[int, ...] = ()
    #: features whose ``feature-dependencies`` lists none at any level, as the
    #: release's ``kafka-storage.sh feature-dependencies`` prints (run live:
    #: group.version=1 has none in 4.0.2, 4.1.0 and 4.4.0; kraft.version=1
    #: none in 4.0.2 and 4.4.0, metadata.version 3.9-IV0 in 4.1.0)
    without_dependencies: tuple[str, ...] = ("group.version",)


_KAFKA_41 = KafkaRelease(
    name="4.1",
    version="4.1.0",
    commit_id="13f70256db3c994c",
    decodes_leader_change=True,
    omits_missing_directory_id=True,
    latest_production="4.1-IV1",
    latest_testing="4.2-IV1",
    features=("kraft.version", "transaction.version", "group.version", "eligible.leader.replicas.version",
              "share.version", "streams.version"),
    kraft_version_1_error=(
        "Cannot set kraft.version to 1 unless one of the flags --standalone, --initial-controllers, or "
        "--no-initial-controllers is used. For dynamic controllers support, try using one of --standalone, "
        "--initial-controllers, or --no-initial-controllers."
    ),
    unknown_metadata_records=(29,),
)

RELEASES: dict[str, KafkaRelease] = {
    "4.0": KafkaRelease(
        name="4.0",
        version="4.0.0",
        # The 4.0.0 release's build (the version-bump commit 985bc99).
        commit_id="985bc99521dd22bb",
        decodes_leader_change=False,
        omits_missing_directory_id=False,
        latest_production="4.0-IV3",
        latest_testing="4.1-IV0",
        features=("kraft.version", "transaction.version", "group.version", "eligible.leader.replicas.version"),
        kraft_version_1_error=(
            "Cannot set kraft.version to 1 unless KIP-853 configuration is present. "
            "Try removing the --feature flag for kraft.version."
        ),
        kraft_version_0_error=(
            "Cannot set kraft.version to 0 if KIP-853 configuration is present. "
            "Try removing the --feature flag for kraft.version."
        ),
        without_dependencies=("kraft.version", "group.version"),
        unknown_metadata_records=(29,),
    ),
    "4.1": _KAFKA_41,
    # Run, not read: the live comparison (tests/kafka/test_tools_live.py) of
    # 4.4.0's jars on the shared fixtures. Its metadata shell is not on Maven
    # Central (kafka-shell 4.4.0 is not published): ``kraft shell
    # --kafka-version 4.4`` prints as the newest shell there is, 4.1.0's, with
    # 4.4.0's ``/local/version`` and ``/local/commitId`` (kafka-clients-4.4.0.jar's
    # kafka/kafka-version.properties). What is not listed is 4.1.0's
    # (tests/kafka/test_storage_format_live.py compares ``storage format``).
    "4.4": replace(
        _KAFKA_41,
        name="4.4",
        version="4.4.0",
        commit_id="1156b2752aaa28ea",
        latest_production="4.4-IV2",
        latest_testing="4.4-IV2",
        missing_command_config="Properties file {path} does not exist.",
        removed_controller="{action}KRaft controller {controller_id} with directory id {directory_id}",
        kraft_version_1_error=(
            "Cannot set kraft.version to 1 unless controller.quorum.voters is empty and one of the flags "
            "--standalone, --initial-controllers, or --no-initial-controllers is used. For dynamic controllers "
            "support, try using one of --standalone, --initial-controllers, or --no-initial-controllers and "
            "removing controller.quorum.voters."
        ),
        kraft_version_0_error=(
            "Cannot set kraft.version to 0 if controller.quorum.voters is empty and one of the flags --standalone, "
            "--initial-controllers, or --no-initial-controllers is used. For dynamic controllers support, try "
            "removing the --feature flag for kraft.version."
        ),
        unknown_release_version="Unknown metadata.version '{text}'. Supported metadata.version are: {known}",
        bootstrap_snapshot=True,
        reports_gap_from_minus_one=True,
        lists_gaps_in_file_order=True,
        bars_first_field_without_metadata=True,
        without_dependencies=("kraft.version", "group.version"),
        unknown_metadata_records=(),
    ),
}

#: The default: the newest release the suite runs live.
LATEST = RELEASES["4.4"]

_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


class UnknownKafkaVersion(ValueError):
    """A ``--kafka-version`` (or :data:`ENV_VAR`) kraft cannot print as."""


def known_versions() -> str:
    return ", ".join(RELEASES)


def kafka_release(requested: str | None = None, environ: Mapping[str, str] | None = None) -> KafkaRelease:
    """The release named by ``requested`` (``--kafka-version``), else by
    :data:`ENV_VAR`, else :data:`LATEST`. ``X.Y`` or ``X.Y.Z``; raises
    :class:`UnknownKafkaVersion` with one line naming the known ones."""
    source = "--kafka-version"
    if requested is None:
        requested = (os.environ if environ is None else environ).get(ENV_VAR) or None
        source = ENV_VAR
    if requested is None:
        return LATEST
    m = _VERSION.fullmatch(requested.strip())
    release = RELEASES.get(f"{m.group(1)}.{m.group(2)}") if m else None
    if release is None:
        raise UnknownKafkaVersion(
            f"unknown Kafka version {requested!r} ({source}): kraft prints as Kafka {known_versions()}")
    return release
