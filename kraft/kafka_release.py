"""Which Apache Kafka release kraft's Kafka look-alike tools print as.

``kraft dump-log``, ``shell``, ``storage``, ``features`` and ``quorum``
print what the newest 4.x release on Maven Central prints (:data:`LATEST`,
Kafka 4.4.0). ``--kafka-version X.Y.Z`` on each of them, or the environment
variable :data:`ENV_VAR` for scripts, picks any other 4.x release Maven
Central serves (:data:`RELEASES`); ``X.Y`` is that line's first release
(``4.2`` is 4.2.0), as it always was. A release kraft does not know (4.4.1,
3.9) is refused in one line naming the known ones.

Each :class:`KafkaRelease` holds the facts that differ, named after what
Kafka changed (with the Kafka class that changed it), so a tool asks
``release.decodes_leader_change`` rather than comparing version strings.
Every fact was read off that release's own jars and tools, run: a patch
release that prints differently from its ``.0`` is its own entry (4.0.2 and
4.1.1 took 4.2's kraft.version wording and dropped kraft.version=1's
dependency on 3.9-IV0). tests/kafka/test_tools_live.py and
tests/kafka/test_storage_format_live.py keep checking them against each
release of ``.ci/kafka-releases``. This module imports nothing of ours and
nothing heavy: every tool's ``--help`` loads it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace

__all__ = ["ENV_VAR", "KafkaRelease", "LATEST", "RELEASES", "UnknownKafkaVersion", "kafka_release", "known_versions",
           "release_lines"]

#: The environment variable scripts set instead of ``--kafka-version``.
ENV_VAR = "KRAFT_KAFKA_VERSION"


@dataclass(frozen=True)
class KafkaRelease:
    """What one Kafka release's tools print where releases differ."""

    #: ``4.1.0``: what ``--kafka-version`` takes, and the metadata shell's
    #: ``/local/version`` (``AppInfoParser.getVersion``)
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
    #: ``StorageTool``'s ``version-mapping`` refusing a ``--release-version``
    #: (``{production}``: :attr:`latest_production`; 4.0 and 4.1 say "Unknown
    #: release version", 4.2 on as :attr:`unknown_release_version`)
    unknown_mapping_version: str = "Unknown release version '{text}'. Supported versions are: {minimum} to {production}"
    #: ``Formatter.run`` prints ``Bootstrap metadata: BootstrapMetadata(...)``
    #: (the records it bootstraps) before ``Formatting ...`` (4.2 on)
    prints_bootstrap_metadata: bool = False
    #: KIP-1170 (Kafka 4.4, ``Formatter.writeBoostrapSnapshot``): ``storage
    #: format`` writes the bootstrap records into a controller's
    #: ``__cluster_metadata-0/00000000000000000000-0000000000.checkpoint``
    #: (a broker's directories get ``meta.properties`` alone); older releases
    #: write ``bootstrap.checkpoint``
    bootstrap_snapshot: bool = False
    #: ``kafka-storage format`` takes the quorum for dynamic (kraft.version 1)
    #: when a voter flag is given (``Formatter.setNoInitialControllersFlag``,
    #: 4.0.0 and 4.1.0); every later release when the config sets no
    #: ``controller.quorum.voters`` (``setHasDynamicQuorum(staticVotersEmpty)``)
    dynamic_quorum_by_flags: bool = False
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
    #: ``ShareVersion.SV_2`` (bootstrapped from metadata.version 4.4-IV0) is
    #: the release's: 4.4 on; 4.3.x knows 4.4-IV0 but its share.version stops at 1
    share_version_2: bool = True
    #: The metadata shell's ``FeaturesImageNode`` lists ``zkMigrationState``
    #: (4.0 and 4.1, whose ``find`` then aborts on it); 4.2 on it is gone
    lists_zk_migration_state: bool = True
    #: ``BrokerRegistration.toString`` (the shell's brokers) ends with
    #: ``cordonedDirectories=...`` (KIP-1066): 4.3 on
    prints_cordoned_directories: bool = False
    #: ``kafka-metadata-quorum.sh remove-controller --unregister`` (KIP-1312,
    #: ``MetadataQuorumCommand.unregisterController``): 4.4 on
    unregisters_controller: bool = False

    @property
    def name(self) -> str:
        """``Kafka 4.1.0``'s ``4.1.0``: what ``--kafka-version`` takes."""
        return self.version

    @property
    def level_caps(self) -> dict[str, int]:
        """Features whose newest level in this release is below kraft's newest (feature -> that level)."""
        return {} if self.share_version_2 else {"share.version": 1}

    @property
    def line(self) -> str:
        """``4.1``: the release's minor line."""
        return ".".join(self.version.split(".")[:2])


#: 4.0.0 and 4.1.0's ``StorageTool.runVersionMappingCommand`` refusing a
#: ``--release-version`` (``{production}``: the release's newest production one).
_UNKNOWN_MAPPING_40 = "Unknown release version '{text}'. Supported versions are: {minimum} to {production}"
#: ``MetadataVersion.fromVersionString`` from 4.2 on, in format and version-mapping alike.
_UNKNOWN_METADATA_VERSION = "Unknown metadata.version '{text}'. Supported metadata.version are: {known}"
#: ``Formatter.effectiveKRaftFeatureLevel`` from 4.0.2 and 4.1.1 on (the static quorum named).
_KRAFT_VERSION_1_ERROR = (
    "Cannot set kraft.version to 1 unless controller.quorum.voters is empty and one of the flags "
    "--standalone, --initial-controllers, or --no-initial-controllers is used. For dynamic controllers "
    "support, try using one of --standalone, --initial-controllers, or --no-initial-controllers and "
    "removing controller.quorum.voters."
)
_KRAFT_VERSION_0_ERROR = (
    "Cannot set kraft.version to 0 if controller.quorum.voters is empty and one of the flags --standalone, "
    "--initial-controllers, or --no-initial-controllers is used. For dynamic controllers support, try "
    "removing the --feature flag for kraft.version."
)

_KAFKA_400 = KafkaRelease(
    version="4.0.0",
    # The 4.0.0 release's build (the version-bump commit 985bc99).
    commit_id="985bc99521dd22bb",
    dynamic_quorum_by_flags=True,
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
    unknown_mapping_version=_UNKNOWN_MAPPING_40,
    unknown_metadata_records=(29,),
    share_version_2=False,
)
# Formatter and KRaftVersion changed in the patch releases (4.0.2's jars, run).
_KAFKA_402 = replace(_KAFKA_400, version="4.0.2", commit_id="5d0fe56677f97d95", dynamic_quorum_by_flags=False,
                     kraft_version_1_error=_KRAFT_VERSION_1_ERROR, kraft_version_0_error=_KRAFT_VERSION_0_ERROR,
                     without_dependencies=("kraft.version", "group.version"))
_KAFKA_410 = replace(
    _KAFKA_400,
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
    kraft_version_0_error=(
        "Cannot set kraft.version to 0 if one of the flags --standalone, --initial-controllers, or "
        "--no-initial-controllers is used. For dynamic controllers support, try removing the --feature flag for "
        "kraft.version."
    ),
)
_KAFKA_411 = replace(_KAFKA_410, version="4.1.1", commit_id="be816b82d25370ce", dynamic_quorum_by_flags=False,
                     kraft_version_1_error=_KRAFT_VERSION_1_ERROR, kraft_version_0_error=_KRAFT_VERSION_0_ERROR,
                     without_dependencies=("kraft.version", "group.version"))
# 4.2: metadata.version 4.2-IV1 production (share.version=1, streams.version=1
# by default), 4.3-IV0 the newest accepted, MetadataVersion's new refusal.
_KAFKA_420 = replace(_KAFKA_411, version="4.2.0", commit_id="a18251bae0b825c6", latest_production="4.2-IV1",
                     latest_testing="4.3-IV0", unknown_release_version=_UNKNOWN_METADATA_VERSION,
                     unknown_mapping_version=_UNKNOWN_METADATA_VERSION, prints_bootstrap_metadata=True,
                     lists_zk_migration_state=False)
# 4.3: DumpLogSegments ported to Java (kafka-tools' org.apache.kafka.tools.DumpLogSegments).
_KAFKA_430 = replace(_KAFKA_420, version="4.3.0", commit_id="a9ce3221537b8653", latest_production="4.3-IV0",
                     latest_testing="4.4-IV0", reports_gap_from_minus_one=True, lists_gaps_in_file_order=True,
                     bars_first_field_without_metadata=True, prints_cordoned_directories=True)
# 4.4: KIP-1170's layout, KIP-1312's UnregisterControllerRecord and
# remove-controller --unregister, MetadataQuorumCommand's rewording.
_KAFKA_440 = replace(_KAFKA_430, version="4.4.0", commit_id="1156b2752aaa28ea", latest_production="4.4-IV2",
                     missing_command_config="Properties file {path} does not exist.",
                     removed_controller="{action}KRaft controller {controller_id} with directory id {directory_id}",
                     bootstrap_snapshot=True, unknown_metadata_records=(), share_version_2=True,
                     latest_testing="4.5-IV0",
                     unregisters_controller=True)

#: Every 4.x release Maven Central serves whole (4.0.1 is not: its
#: connect-api, which kafka-tools 4.0.1 needs, was never published), by version.
RELEASES: dict[str, KafkaRelease] = {r.version: r for r in (
    _KAFKA_400,
    _KAFKA_402,
    _KAFKA_410,
    _KAFKA_411,
    replace(_KAFKA_411, version="4.1.2", commit_id="c82fd9b934b4c1e6"),
    _KAFKA_420,
    replace(_KAFKA_420, version="4.2.1", commit_id="92f61c44867f39dc"),
    replace(_KAFKA_420, version="4.2.2", commit_id="c5e942859576203e"),
    _KAFKA_430,
    replace(_KAFKA_430, version="4.3.1", commit_id="26b251a451ce941d"),
    _KAFKA_440,
)}

#: The default: the newest release on Maven Central.
LATEST = RELEASES["4.4.0"]

_VERSION = re.compile(r"(\d+)\.(\d+)(\.\d+)?")


class UnknownKafkaVersion(ValueError):
    """A ``--kafka-version`` (or :data:`ENV_VAR`) kraft cannot print as."""


def known_versions() -> str:
    return ", ".join(RELEASES)


def release_lines() -> list[str]:
    """``4.0``, ``4.1``, ...: the lines ``--kafka-version X.Y`` names (each its first release)."""
    return sorted({r.line for r in RELEASES.values()})


def kafka_release(requested: str | None = None, environ: Mapping[str, str] | None = None) -> KafkaRelease:
    """The release named by ``requested`` (``--kafka-version``), else by
    :data:`ENV_VAR`, else :data:`LATEST`. ``X.Y.Z`` (a release of
    :data:`RELEASES`) or ``X.Y`` (that line's first release); raises
    :class:`UnknownKafkaVersion` with one line naming the known ones."""
    source = "--kafka-version"
    if requested is None:
        requested = (os.environ if environ is None else environ).get(ENV_VAR) or None
        source = ENV_VAR
    if requested is None:
        return LATEST
    m = _VERSION.fullmatch(requested.strip())
    release = None
    if m is not None:
        release = RELEASES.get(f"{m.group(1)}.{m.group(2)}{m.group(3) or '.0'}")
    if release is None:
        raise UnknownKafkaVersion(
            f"unknown Kafka version {requested!r} ({source}): kraft prints as Kafka {known_versions()} "
            "(X.Y: its first release)")
    return release
