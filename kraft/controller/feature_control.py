"""Kafka 4.4's features (``Feature`` and its ``FeatureVersion`` enums in
server-common), what this controller supports (``QuorumFeatures``), and
UpdateFeatures (``FeatureControlManager.updateFeatures``, with
``ConfigurationControlManager.updateFeatures``' ELR safety records and
``QuorumController.updateFeatures``' response).

``kraft.version`` is finalized by the raft layer, not by a FeatureLevelRecord:
an update that changes it comes back as :class:`KraftVersionUpgrade` for the
node to carry out (``kraft.node.update_features``), as Kafka's
``FeatureControlManager`` hands it to its ``KRaftVersionAccessor``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from kraft.controller import metadata_version as mv
from kraft.controller.java_order import hash_map_order
from kraft.controller.result import ApiError, ControllerResult, RecordAndVersion
from kraft.controller.settings import ControllerSettings
from kraft.image.model import METADATA_VERSION, ConfigResource, ConfigResourceType, MetadataImage
from kraft.messages.generated.config_record import ConfigRecord
from kraft.messages.generated.feature_level_record import FeatureLevelRecord
from kraft.messages.generated.update_features_request import UpdateFeaturesRequest
from kraft.messages.generated.update_features_response import UpdatableFeatureResult, UpdateFeaturesResponse
from kraft.wire.errors import ErrorCode

__all__ = [
    "KRAFT_VERSION",
    "ELIGIBLE_LEADER_REPLICAS_VERSION",
    "FeatureLevel",
    "FeatureDefinition",
    "FEATURES",
    "UPGRADE",
    "SAFE_DOWNGRADE",
    "UNSAFE_DOWNGRADE",
    "KraftVersionUpgrade",
    "controller_supported_features",
    "is_elr_enabled",
    "broker_supports_finalized",
    "elr_safety_records",
    "update_features",
]

KRAFT_VERSION = "kraft.version"
ELIGIBLE_LEADER_REPLICAS_VERSION = "eligible.leader.replicas.version"
MIN_INSYNC_REPLICAS = "min.insync.replicas"

#: ``FeatureUpdate.UpgradeType`` codes.
UPGRADE = 1
SAFE_DOWNGRADE = 2
UNSAFE_DOWNGRADE = 3

Range = tuple[int, int]


@dataclass(frozen=True, slots=True)
class FeatureLevel:
    """One ``FeatureVersion``: its level, the metadata.version a new cluster
    gets it from (``bootstrapMetadataVersion``) and what it depends on."""

    level: int
    bootstrap_metadata_version: int
    dependencies: Mapping[str, int]


@dataclass(frozen=True, slots=True)
class FeatureDefinition:
    """One ``Feature``: its levels (the first is ``minimumProduction``, the
    last ``latestTesting``) and ``latestProduction``."""

    name: str
    levels: tuple[FeatureLevel, ...]
    latest_production: int

    @property
    def minimum_production(self) -> int:
        return self.levels[0].level

    def level(self, level: int) -> FeatureLevel | None:
        return next((f for f in self.levels if f.level == level), None)

    def default_level(self, metadata_version: int) -> int:
        """``Feature.defaultLevel``: the newest level whose bootstrap
        metadata.version is at most ``metadata_version``."""
        chosen = self.levels[0].level
        for f in self.levels:
            if f.bootstrap_metadata_version > metadata_version:
                break
            chosen = f.level
        return chosen


def _levels(*levels: tuple[int, int] | tuple[int, int, Mapping[str, int]]) -> tuple[FeatureLevel, ...]:
    return tuple(FeatureLevel(t[0], t[1], t[2] if len(t) == 3 else {}) for t in levels)


_MIN = mv.MINIMUM.level
#: ``Feature.PRODUCTION_FEATURES`` of Kafka 4.4, in the enum's order.
FEATURES: tuple[FeatureDefinition, ...] = (
    FeatureDefinition(KRAFT_VERSION, _levels((0, _MIN), (1, 21)), 1),
    FeatureDefinition("transaction.version", _levels((0, _MIN), (1, 24), (2, 24)), 2),
    FeatureDefinition("group.version", _levels((0, _MIN), (1, 22)), 1),
    FeatureDefinition(ELIGIBLE_LEADER_REPLICAS_VERSION, _levels((0, _MIN), (1, 26, {METADATA_VERSION: 23})), 1),
    FeatureDefinition("share.version", _levels((0, _MIN), (1, 28), (2, 31)), 2),
    FeatureDefinition("streams.version", _levels((0, _MIN), (1, 29)), 1),
)
_BY_NAME = {f.name: f for f in FEATURES}


@dataclass(frozen=True, slots=True)
class KraftVersionUpgrade:
    """UpdateFeatures asks to upgrade ``kraft.version`` to ``level``: every
    check of the request passed; the raft leader's upgrade
    (``kraft.node.update_features``) decides and answers. ``records``: the
    request's other features' records, to append with it (Kafka adds a
    NoOpRecord so there is an offset to wait on)."""

    level: int
    validate_only: bool
    records: tuple[RecordAndVersion, ...] = ()


def controller_supported_features() -> dict[str, Range]:
    """``QuorumFeatures.defaultSupportedFeatureMap(false)``: metadata.version
    from the minimum to the latest production level, and every production
    feature whose latest production level is above 0."""
    out: dict[str, Range] = {METADATA_VERSION: (mv.MINIMUM.level, mv.LATEST_PRODUCTION.level)}
    for f in FEATURES:
        if f.latest_production > 0:
            out[f.name] = (f.minimum_production, f.latest_production)
    return out


def _range_text(r: Range) -> str:
    """``VersionRange.toString``."""
    if r[0] == r[1]:
        return str(r[0])
    return f"{r[0]}+" if r[1] == 0x7FFF else f"{r[0]}-{r[1]}"


def _reason_not_supported(level: int, what: str, r: Range) -> str | None:
    """``QuorumFeatures.reasonNotSupported``."""
    if r[0] <= level <= r[1]:
        return None
    if r[1] == 0:
        return f"{what} does not support this feature."
    return f"{what} only supports versions {_range_text(r)}"


def _finalized(image: MetadataImage) -> dict[str, int]:
    """``FeatureControlManager.finalizedFeatures``: metadata.version and every
    feature finalized above 0."""
    out = dict(image.features.finalized)
    out.pop(KRAFT_VERSION, None)  # KAFKA-18979: a kraft.version FeatureLevelRecord is skipped
    if image.features.metadata_version is not None:
        out[METADATA_VERSION] = image.features.metadata_version
    return out


def is_elr_enabled(image: MetadataImage) -> bool:
    """``FeatureControlManager.isElrFeatureEnabled``."""
    return image.features.finalized.get(ELIGIBLE_LEADER_REPLICAS_VERSION, 0) >= 1


def broker_supports_finalized(image: MetadataImage, supported: Mapping[str, Range], broker_id: int) -> ApiError | None:
    """``ClusterControlManager.registerBroker``'s feature checks: the broker
    must name metadata.version, and support every finalized level
    (``processRegistrationFeature``); a feature it does not name is (0, 0)."""
    finalized = _finalized(image)
    for name, (low, high) in supported.items():
        level = finalized.get(name, 0)
        if not low <= level <= high:
            return _unsupported_finalized(name, level, (low, high))
    if METADATA_VERSION not in supported:
        return ApiError(ErrorCode.INVALID_REGISTRATION, f"Request features do not contain '{METADATA_VERSION}'")
    for name, level in finalized.items():
        if level != 0 and name not in supported:
            return _unsupported_finalized(name, level, (0, 0))
    del broker_id  # Kafka names it only in a debug log line
    return None


def _unsupported_finalized(name: str, level: int, r: Range) -> ApiError:
    return ApiError(ErrorCode.UNSUPPORTED_VERSION,
                    f"Unable to register because the broker does not support finalized version {level} of {name}. "
                    f"The broker wants a version between {r[0]} and {r[1]}, inclusive.")


def elr_safety_records(image: MetadataImage, settings: ControllerSettings) -> list[RecordAndVersion]:
    """``ConfigurationControlManager.maybeGenerateElrSafetyRecords``: enabling
    ELR pins a cluster-level min.insync.replicas (the controller's static
    one) and removes every broker-level one."""
    out: list[RecordAndVersion] = []
    cluster = image.configs.get(ConfigResource(ConfigResourceType.BROKER, ""), {})
    if MIN_INSYNC_REPLICAS not in cluster:
        out.append(RecordAndVersion(ConfigRecord(resource_type=ConfigResourceType.BROKER, resource_name="",
                                                 name=MIN_INSYNC_REPLICAS, value=str(settings.min_insync_replicas)),
                                    ConfigRecord.HIGHEST_VERSION))
    for resource, configs in sorted(image.configs.items(), key=lambda kv: _broker_sort_key(kv[0].name)):
        if resource.type == ConfigResourceType.BROKER and resource.name and MIN_INSYNC_REPLICAS in configs:
            out.append(RecordAndVersion(ConfigRecord(resource_type=ConfigResourceType.BROKER,
                                                     resource_name=resource.name, name=MIN_INSYNC_REPLICAS,
                                                     value=None), ConfigRecord.HIGHEST_VERSION))
    return out


def _broker_sort_key(name: str) -> tuple[int, str]:
    return (int(name), "") if name.lstrip("-").isdigit() else (0, name)


@dataclass(frozen=True, slots=True)
class _Cluster:
    """What ``FeatureControlManager.reasonNotSupported`` looks at."""

    node_id: int
    brokers: Mapping[int, Mapping[str, Range]]
    controllers: Mapping[int, Mapping[str, Range]]
    voter_ids: Collection[int]
    check_controllers: bool


def _reason_cluster_cannot(cluster: _Cluster, name: str, level: int) -> str | None:
    reason = _reason_not_supported(level, f"Local controller {cluster.node_id}",
                                   controller_supported_features().get(name, (0, 0)))
    if reason:
        return reason
    for broker_id, ranges in sorted(cluster.brokers.items()):
        reason = _reason_not_supported(level, f"Broker {broker_id}", ranges.get(name, (0, 0)))
        if reason:
            return reason
    if not cluster.check_controllers:
        return None
    for controller_id, ranges in sorted(cluster.controllers.items()):
        if controller_id == cluster.node_id:
            continue
        reason = _reason_not_supported(level, f"Controller {controller_id}", ranges.get(name, (0, 0)))
        if reason:
            return reason
    for voter in cluster.voter_ids:
        if voter != cluster.node_id and voter not in cluster.controllers:
            return f"controller {voter} has not registered, and may not support this feature"
    return None


def _invalid(name: str, level: int, message: str) -> ApiError:
    """``FeatureControlManager.invalidUpdateVersion``."""
    return ApiError(ErrorCode.INVALID_UPDATE_VERSION, f"Invalid update version {level} for feature {name}. {message}")


#: The metadata.version levels whose ``didMetadataChange`` is true (Kafka 4.4).
_METADATA_CHANGED = frozenset({7, 8, 11, 13, 14, 15, 17, 23, 30, 32, 33})


def _metadata_changed(low: int, high: int) -> bool:
    """``MetadataVersion.checkIfMetadataChanged``: a level in (low, high]
    changed the metadata, so going from high to low may lose some."""
    return any(level in _METADATA_CHANGED for level in range(low + 1, high + 1))


def _metadata_version_update(current: int, level: int, upgrade_type: int) -> ApiError | RecordAndVersion:
    """``FeatureControlManager.updateMetadataVersion``."""
    if not mv.MINIMUM.level <= level <= mv.LATEST.level:
        return ApiError(ErrorCode.INVALID_UPDATE_VERSION,
                        f"Invalid metadata.version {level}. Valid versions are from {mv.MINIMUM.level} to "
                        f"{mv.LATEST.level}.")
    if level < current and _metadata_changed(level, current):
        why = ("Unsafe metadata downgrade is not supported in this version." if upgrade_type == UNSAFE_DOWNGRADE
               else "Refusing to perform the requested downgrade because it might delete metadata information.")
        return ApiError(ErrorCode.INVALID_UPDATE_VERSION,
                        f"Unsupported metadata.version downgrade from {current} to {level}. {why}")
    return RecordAndVersion(FeatureLevelRecord(name=METADATA_VERSION, feature_level=level), 0)


def _dependency_refusal(name: str, level: int, proposed: Mapping[str, int]) -> str | None:
    """``Feature.featureFromName`` and ``Feature.validateVersion``."""
    feature = _BY_NAME.get(name)
    if feature is None:
        return f"Feature {name} not found."
    definition = feature.level(level)
    if definition is None:
        return f"No feature:{name} with feature level {level}"
    current_mv = proposed.get(METADATA_VERSION)
    if level >= 1 and (current_mv is None or current_mv < mv.MINIMUM.level):
        return (f"{name} could not be set to {level} because it depends on metadata.version={mv.MINIMUM.level} "
                f"({mv.MINIMUM})")
    for dependency, needed in definition.dependencies.items():
        have = proposed.get(dependency)
        if have is None or have < needed:
            return f"{name} could not be set to {level} because it depends on {dependency} level {needed}"
    return None


def _update_feature(name: str, level: int, upgrade_type: int, current: int, cluster: _Cluster,
                    proposed: Mapping[str, int]) -> ApiError | RecordAndVersion | None:
    """``FeatureControlManager.updateFeature`` for one feature: its record,
    None for kraft.version (the raft layer's) or no change, or the refusal."""
    if upgrade_type not in (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
        return _invalid(name, level, "The controller does not support the given upgrade type.")
    if level < 0:
        return _invalid(name, level, "A feature version cannot be less than 0.")
    reason = _reason_cluster_cannot(cluster, name, level)
    if reason:
        return _invalid(name, level, reason)
    if level < current and upgrade_type == UPGRADE:
        return _invalid(name, level, "Can't downgrade the version of this feature without setting the upgrade type "
                                     "to either safe or unsafe downgrade.")
    if level > current and upgrade_type != UPGRADE:
        return _invalid(name, level, "Can't downgrade to a newer version.")
    if name == METADATA_VERSION:
        return _metadata_version_update(current, level, upgrade_type)
    if name == KRAFT_VERSION:
        if upgrade_type != UPGRADE and level != current:
            return _invalid(name, level, "Can't downgrade the version of this feature.")
        return None
    refusal = _dependency_refusal(name, level, proposed)
    if refusal:
        return _invalid(name, level, refusal)
    return RecordAndVersion(FeatureLevelRecord(name=name, feature_level=level), 0)


_FAILED_PREFIX = "The update failed for all features since the following feature had an error: "


def _response(request: UpdateFeaturesRequest, version: int, error: ApiError | None) -> UpdateFeaturesResponse:
    """``QuorumController.updateFeatures``' answer."""
    if error is not None:
        return UpdateFeaturesResponse(error_code=error.error, error_message=_FAILED_PREFIX + str(error.message),
                                      results=[])
    results = []
    if version <= 1:
        # Errors.NONE.message() is the code's name: NONE has no exception.
        results = [UpdatableFeatureResult(feature=u.feature, error_code=ErrorCode.NONE, error_message="NONE")
                   for u in request.feature_updates]
    return UpdateFeaturesResponse(error_code=ErrorCode.NONE, error_message=None, results=results)


def update_features(image: MetadataImage, settings: ControllerSettings, request: UpdateFeaturesRequest, version: int,
                    *, quorum_supported: Mapping[int, Mapping[str, Range]], kraft_version: int,
                    voter_ids: Collection[int] = ()) -> ControllerResult[UpdateFeaturesResponse] | KraftVersionUpgrade:
    """``QuorumController.updateFeatures``: every update checked in Kafka's
    (``HashMap``) order, the first refusal failing the whole request.

    ``quorum_supported``: each registered controller's supported ranges;
    ``voter_ids``: the quorum's voters, each of which must have registered
    (when metadata.version has controller registrations); ``kraft_version``:
    the raft layer's finalized level. The upgrade type of a v0 request is
    its UpgradeType field's default (AllowDowngrade is ignored), as Kafka's
    quorum controller reads it."""
    updates = {u.feature: (u.max_version_level, u.upgrade_type) for u in request.feature_updates}
    finalized = _finalized(image)
    current_mv = finalized.get(METADATA_VERSION, mv.MINIMUM.level)
    cluster = _Cluster(
        settings.node_id,
        {i: {f.name: (f.min_version, f.max_version) for f in b.supported_features} for i, b in image.brokers.items()},
        quorum_supported, voter_ids, mv.by_level(current_mv).is_controller_registration_supported)
    proposed = {**finalized, **{name: level for name, (level, _) in updates.items()}}
    records: list[RecordAndVersion] = []
    kraft_upgrade: int | None = None
    for name in hash_map_order(updates):
        level, upgrade_type = updates[name]
        current = kraft_version if name == KRAFT_VERSION else finalized.get(name, 0)
        outcome = _update_feature(name, level, upgrade_type, current, cluster, proposed)
        if isinstance(outcome, ApiError):
            return ControllerResult.of(_response(request, version, outcome))
        if isinstance(outcome, RecordAndVersion):
            records.append(outcome)
        elif name == KRAFT_VERSION and upgrade_type == UPGRADE:
            kraft_upgrade = level
    if kraft_upgrade is not None:
        return KraftVersionUpgrade(kraft_upgrade, request.validate_only, () if request.validate_only else tuple(records))
    if request.validate_only:
        return ControllerResult.of(_response(request, version, None))
    if updates.get(ELIGIBLE_LEADER_REPLICAS_VERSION, (0, 0))[0] > 0:
        records = elr_safety_records(image, settings) + records
    return ControllerResult.of(_response(request, version, None), *records)
