"""Kafka 4.4's features and UpdateFeatures: ``QuorumFeatures``,
``FeatureControlManager.updateFeatures``, ``ClusterControlManager.registerBroker``'s
feature checks and ``QuorumController.updateFeatures``' response."""

from __future__ import annotations

from typing import Any

from kraft.controller import feature_control as features
from kraft.controller.feature_control import KraftVersionUpgrade, update_features
from kraft.controller.java_order import hash_map_order, string_hash
from kraft.controller.result import ControllerResult
from kraft.controller.settings import ControllerSettings
from kraft.image.model import MetadataImage
from kraft.messages.generated.config_record import ConfigRecord
from kraft.messages.generated.update_features_request import FeatureUpdateKey, UpdateFeaturesRequest
from kraft.messages.generated.update_features_response import UpdateFeaturesResponse
from kraft.wire.errors import ErrorCode
from tests.controller.images import broker, features as feature_records, replay

SETTINGS = ControllerSettings(node_id=3000, min_insync_replicas=2)
ALL = features.controller_supported_features()
PREFIX = "The update failed for all features since the following feature had an error: "


def _request(*updates: tuple[str, int, int], validate_only: bool = False) -> UpdateFeaturesRequest:
    return UpdateFeaturesRequest(feature_updates=[FeatureUpdateKey(feature=f, max_version_level=lv, upgrade_type=t)
                                                  for f, lv, t in updates], validate_only=validate_only)


def _update(image: MetadataImage, *updates: tuple[str, int, int], version: int = 2, validate_only: bool = False,
            **kw: Any) -> ControllerResult[UpdateFeaturesResponse]:
    kw.setdefault("quorum_supported", {3000: ALL})
    kw.setdefault("kraft_version", 1)
    result = update_features(image, SETTINGS, _request(*updates, validate_only=validate_only), version, **kw)
    assert isinstance(result, ControllerResult)
    return result


def _image(*extra: Any, mv: int = 33, **levels: int) -> MetadataImage:
    return replay([*feature_records(mv, **levels), broker(1, ALL), *extra])


def test_controller_supported_features_are_quorum_features_default_map() -> None:
    # QuorumFeatures.defaultSupportedFeatureMap(false): MV 3.3-IV3 (7) to 4.4-IV2 (33), each
    # production feature from its first level to its latestProduction.
    assert ALL == {"metadata.version": (7, 33), "kraft.version": (0, 1), "transaction.version": (0, 2),
                   "group.version": (0, 1), "eligible.leader.replicas.version": (0, 1), "share.version": (0, 2),
                   "streams.version": (0, 1)}


def test_default_level_follows_bootstrap_metadata_version() -> None:
    # Feature.defaultLevel: ELRV_1 from 4.1-IV0 (26), share SV_2 from 4.4-IV0 (31).
    by_name = {f.name: f for f in features.FEATURES}
    assert by_name["eligible.leader.replicas.version"].default_level(25) == 0
    assert by_name["eligible.leader.replicas.version"].default_level(26) == 1
    assert by_name["share.version"].default_level(30) == 1
    assert by_name["share.version"].default_level(33) == 2


def test_java_hash_map_order() -> None:
    # java.util.HashMap's keySet order for these keys, printed by a JVM (String.hashCode).
    keys = ["metadata.version", "kraft.version", "group.version", "transaction.version",
            "eligible.leader.replicas.version", "share.version", "streams.version", "foo", "é"]
    assert string_hash("metadata.version") == 1098778905 and string_hash("kraft.version") == -868769006
    assert hash_map_order(keys) == ["group.version", "kraft.version", "metadata.version", "share.version", "foo",
                                    "streams.version", "é", "transaction.version",
                                    "eligible.leader.replicas.version"]


def test_upgrade_writes_feature_level_record_and_v1_results() -> None:
    # FeatureControlManager.updateFeature: FeatureLevelRecord v0; QuorumController.updateFeatures:
    # per-feature NONE results only up to v1.
    result = _update(_image(), ("group.version", 1, features.UPGRADE), version=1)
    assert [(r.message.name, r.message.feature_level, r.version) for r in result.records] == [("group.version", 1, 0)]
    assert result.response.error_code == 0 and result.response.error_message is None
    assert [(r.feature, r.error_code, r.error_message) for r in result.response.results] == [("group.version", 0, "NONE")]
    assert _update(_image(), ("group.version", 1, features.UPGRADE), version=2).response.results == []


def test_validate_only_writes_nothing() -> None:
    result = _update(_image(), ("group.version", 1, features.UPGRADE), validate_only=True)
    assert result.records == () and result.response.error_code == 0


def test_broker_without_the_feature_refuses() -> None:
    # FeatureControlManager.reasonNotSupported via QuorumFeatures.reasonNotSupported.
    image = _image(broker(2, {"metadata.version": (7, 33)}))
    response = _update(image, ("group.version", 1, features.UPGRADE)).response
    assert response.error_code == ErrorCode.INVALID_UPDATE_VERSION
    assert response.error_message == PREFIX + "Invalid update version 1 for feature group.version. " \
                                              "Broker 2 does not support this feature."
    response = _update(_image(broker(2, {"metadata.version": (7, 30)})), ("metadata.version", 33, 1)).response
    assert response.error_message == PREFIX + "Invalid update version 33 for feature metadata.version. " \
                                              "Broker 2 only supports versions 7-30"


def test_local_controller_and_unregistered_voter() -> None:
    # reasonNotLocallySupported first; then every quorum node must have registered.
    response = _update(_image(), ("share.version", 3, features.UPGRADE)).response
    assert response.error_message.endswith("Local controller 3000 only supports versions 0-2")
    response = _update(_image(), ("group.version", 1, features.UPGRADE), voter_ids=[3000, 3001]).response
    assert response.error_message.endswith("controller 3001 has not registered, and may not support this feature")
    other = {3000: ALL, 3001: {"metadata.version": (7, 33)}}
    response = _update(_image(), ("group.version", 1, features.UPGRADE), quorum_supported=other).response
    assert response.error_message.endswith("Controller 3001 does not support this feature.")


def test_downgrade_needs_a_downgrade_type() -> None:
    image = _image(group_version=1)
    assert _update(image, ("group.version", 0, features.UPGRADE)).response.error_message.endswith(
        "Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe "
        "downgrade.")
    assert _update(_image(), ("group.version", 1, features.SAFE_DOWNGRADE)).response.error_message.endswith(
        "Can't downgrade to a newer version.")
    assert _update(_image(), ("group.version", 1, 7)).response.error_message.endswith(
        "The controller does not support the given upgrade type.")
    assert _update(_image(), ("group.version", -1, 1)).response.error_message.endswith(
        "A feature version cannot be less than 0.")
    ok = _update(image, ("group.version", 0, features.SAFE_DOWNGRADE))
    assert ok.response.error_code == 0 and ok.records[0].message.feature_level == 0


def test_dependency_on_metadata_version() -> None:
    # Feature.validateVersion: ELRV_1 depends on metadata.version 23 (4.0-IV1).
    response = _update(_image(mv=22), ("eligible.leader.replicas.version", 1, 1)).response
    assert response.error_message == PREFIX + (
        "Invalid update version 1 for feature eligible.leader.replicas.version. eligible.leader.replicas.version "
        "could not be set to 1 because it depends on metadata.version level 23")
    # The same request raising metadata.version with it passes (proposedUpdatedVersions).
    result = _update(_image(mv=22), ("eligible.leader.replicas.version", 1, 1), ("metadata.version", 23, 1))
    assert result.response.error_code == 0


def test_metadata_version_downgrade_rules() -> None:
    # updateMetadataVersion: a downgrade across a level that changed metadata is refused.
    response = _update(_image(mv=33), ("metadata.version", 32, features.SAFE_DOWNGRADE)).response
    assert response.error_message == PREFIX + (
        "Unsupported metadata.version downgrade from 33 to 32. Refusing to perform the requested downgrade because "
        "it might delete metadata information.")
    response = _update(_image(mv=33), ("metadata.version", 32, features.UNSAFE_DOWNGRADE)).response
    assert response.error_message.endswith("Unsafe metadata downgrade is not supported in this version.")
    ok = _update(_image(mv=31), ("metadata.version", 30, features.SAFE_DOWNGRADE))  # 4.4-IV0 changed nothing
    assert ok.response.error_code == 0 and ok.records[0].message.feature_level == 30


def test_kraft_version_goes_to_the_raft_layer() -> None:
    # FeatureControlManager.updateFeature hands kraft.version to its KRaftVersionAccessor.
    result = update_features(_image(), SETTINGS, _request(("kraft.version", 1, 1), ("group.version", 1, 1)), 2,
                             quorum_supported={3000: ALL}, kraft_version=0)
    assert isinstance(result, KraftVersionUpgrade)
    assert result.level == 1 and not result.validate_only
    assert [r.message.name for r in result.records] == ["group.version"]
    response = _update(_image(), ("kraft.version", 0, features.SAFE_DOWNGRADE)).response
    assert response.error_message.endswith("Can't downgrade the version of this feature.")


def test_first_refusal_in_hash_map_order_wins() -> None:
    # QuorumController.updateFeatures collects the updates in a HashMap: group.version comes before
    # transaction.version, so its refusal is the answer.
    image = _image(broker(2, {"metadata.version": (7, 33)}))
    response = _update(image, ("transaction.version", 1, 1), ("group.version", 1, 1)).response
    assert "feature group.version" in response.error_message


def test_enabling_elr_pins_cluster_min_isr() -> None:
    # ConfigurationControlManager.updateFeatures -> maybeGenerateElrSafetyRecords: the static
    # min.insync.replicas at cluster level, broker-level ones removed, before the FeatureLevelRecord.
    image = _image(ConfigRecord(resource_type=4, resource_name="1", name="min.insync.replicas", value="3"))
    result = _update(image, ("eligible.leader.replicas.version", 1, 1))
    assert [(r.message.resource_name, r.message.value) for r in result.records[:2]] == [("", "2"), ("1", None)]
    assert result.records[2].message.name == "eligible.leader.replicas.version"


def test_broker_registration_feature_checks() -> None:
    # ClusterControlManager.processRegistrationFeature / registerBroker.
    image = _image(group_version=1)
    assert features.broker_supports_finalized(image, ALL, 5) is None
    error = features.broker_supports_finalized(image, {"metadata.version": (7, 30), "group.version": (0, 1)}, 5)
    assert error is not None and error.error == ErrorCode.UNSUPPORTED_VERSION
    assert error.message == ("Unable to register because the broker does not support finalized version 33 of "
                             "metadata.version. The broker wants a version between 7 and 30, inclusive.")
    error = features.broker_supports_finalized(image, {"metadata.version": (7, 33)}, 5)
    assert error is not None and error.message == (
        "Unable to register because the broker does not support finalized version 1 of group.version. "
        "The broker wants a version between 0 and 0, inclusive.")
    error = features.broker_supports_finalized(image, {"group.version": (0, 1)}, 5)
    assert error is not None and error.error == ErrorCode.INVALID_REGISTRATION
    assert error.message == "Request features do not contain 'metadata.version'"
