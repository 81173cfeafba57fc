"""``version-mapping`` and ``feature-dependencies``: offline answers of
``kafka-storage.sh`` and ``kafka-features.sh`` (Kafka 4.x ``StorageTool`` /
``FeatureCommand``, both printing from ``Feature`` and ``MetadataVersion``).

    $ kraft storage version-mapping --release-version 3.9-IV0
    metadata.version=21 (3.9-IV0)
    kraft.version=1
    ...
    $ kraft storage feature-dependencies --feature eligible.leader.replicas.version=1
    eligible.leader.replicas.version=1 requires:
        metadata.version=23 (4.0-IV1)

The model (levels, defaults, dependencies) is :mod:`kraft.records.bootstrap`.
"""

from __future__ import annotations

from collections.abc import Sequence

from kraft.kafka_release import LATEST, KafkaRelease
from kraft.records.bootstrap import (
    FEATURE_VERSIONS,
    METADATA_VERSION_FEATURE,
    FormatError,
    default_level,
    feature_level,
    parse_release_version,
    release_for_level,
)

__all__ = ["version_mapping", "feature_dependencies", "FEATURES_UNSUPPORTED_LEVEL", "STORAGE_UNSUPPORTED_LEVEL"]


def _metadata_version(level: int) -> str:
    return f"{METADATA_VERSION_FEATURE}={level} ({release_for_level(level)})"


def version_mapping(release_version: str | None, kafka: KafkaRelease = LATEST) -> str:
    """``metadata.version=L (R)`` then each feature's default level for the
    release (default: the latest production one), in Kafka's feature order
    -- Kafka ``kafka``'s features (4.1 added share.version and streams.version)."""
    release = kafka.latest_production
    if release_version is not None:
        # StorageTool.runVersionMappingCommand words the refusal its own way in 4.0 and 4.1.
        release = parse_release_version(release_version, kafka.latest_testing, kafka.unknown_mapping_version
                                        .replace("{production}", kafka.latest_production))
    lines = [_metadata_version(feature_level(release))]
    lines += [f"{name}={default_level(name, release, kafka.level_caps.get(name))}" for name in kafka.features]
    return "".join(f"{line}\n" for line in lines)


def _parse_feature(text: str) -> tuple[str, int]:
    name, sep, level_text = text.partition("=")
    name = name.strip()
    if not sep:
        raise FormatError(f"Can't parse feature={text}. The format must be feature=level.")
    try:
        level = int(level_text.strip())
    except ValueError:
        raise FormatError(f"Can't parse feature={text}: unable to parse {level_text.strip()} as a short.") from None
    return name, level


#: ``StorageTool.runFeatureDependencies``' refusal of a level the feature lacks.
STORAGE_UNSUPPORTED_LEVEL = "Feature level {level} is not supported for feature {name}"
#: ``FeatureCommand.handleFeatureDependencies``' (Feature.fromFeatureLevel's IllegalArgumentException).
FEATURES_UNSUPPORTED_LEVEL = "No feature:{name} with feature level {level}"


def feature_dependencies(features: Sequence[str], kafka: KafkaRelease = LATEST,
                         unsupported: str = STORAGE_UNSUPPORTED_LEVEL) -> str:
    """For each ``feature=level``: ``has no dependencies.`` or ``requires:``
    and one indented ``feature=level`` per dependency. Raises
    :class:`FormatError` (Kafka's message) for an unknown feature or level
    (of Kafka ``kafka``'s features)."""
    if not features:
        raise FormatError("You must specify at least one --feature.")
    out: list[str] = []
    for text in features:
        name, level = _parse_feature(text)
        if name == METADATA_VERSION_FEATURE:
            if release_for_level(level) is None:
                raise FormatError(f"Unknown metadata.version {level}")
            out.append(f"{_metadata_version(level)} has no dependencies.\n")
            continue
        versions = FEATURE_VERSIONS.get(name) if name in kafka.features else None
        if versions is None:
            raise FormatError(f"Unknown feature: {name}")
        # A level is the release's when its bootstrap metadata.version is one
        # the release knows (share.version=2 came with 4.4-IV0: Kafka 4.1.0's
        # Feature.SHARE_VERSION stops at 1). StorageTool.runFeatureDependencies.
        newest = feature_level(kafka.latest_testing)
        if level not in versions or versions[level][0] > newest or level > kafka.level_caps.get(name, level):
            raise FormatError(unsupported.format(level=level, name=name))
        dependencies = {} if name in kafka.without_dependencies else versions[level][1]
        if not dependencies:
            out.append(f"{name}={level} has no dependencies.\n")
            continue
        out.append(f"{name}={level} requires:\n")
        for dep, dep_level in dependencies.items():
            shown = _metadata_version(dep_level) if dep == METADATA_VERSION_FEATURE else f"{dep}={dep_level}"
            out.append(f"    {shown}\n")
    return "".join(out)
