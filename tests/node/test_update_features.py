"""UpdateFeatures on a kraft controller (kraft/node/update_features.py), the pure
part: Kafka 4.x ``FeatureControlManager.updateFeature``'s checks, in order,
for a controller whose one feature is kraft.version, and the answer's shape
(``QuorumController.updateFeatures``)."""

from __future__ import annotations

import pytest

from kraft.messages.generated import update_features_request as uf_req
from kraft.node.update_features import (
    SAFE_DOWNGRADE,
    UNSAFE_DOWNGRADE,
    UPGRADE,
    FeatureUpdate,
    Refusal,
    feature_refusal,
    not_controller_message,
    refusal_response,
    requested_updates,
    success_response,
)
from kraft.wire.errors import ErrorCode

SUPPORTED = {"kraft.version": (0, 1)}


def refusal(feature: str, level: int, upgrade_type: int = UPGRADE, finalized: int = 0) -> str | None:
    r = feature_refusal(FeatureUpdate(feature, level, upgrade_type), node_id=3, supported=SUPPORTED,
                        finalized={"kraft.version": finalized})
    if r is None:
        return None
    assert r.error == ErrorCode.INVALID_UPDATE_VERSION
    prefix = f"Invalid update version {level} for feature {feature}. "
    assert r.message.startswith(prefix)
    return r.message.removeprefix(prefix)


@pytest.mark.parametrize(("feature", "level", "upgrade_type", "finalized", "reason"), [
    ("kraft.version", 1, UPGRADE, 0, None),  # on to the raft leader's own checks
    ("kraft.version", 1, UPGRADE, 1, None),  # a no-op there
    ("kraft.version", 0, SAFE_DOWNGRADE, 0, None),  # unchanged: nothing to do
    ("kraft.version", 1, 0, 0, "The controller does not support the given upgrade type."),
    ("kraft.version", 1, 4, 0, "The controller does not support the given upgrade type."),
    ("kraft.version", -1, UPGRADE, 0, "A feature version cannot be less than 0."),
    ("kraft.version", 2, UPGRADE, 0, "Local controller 3 only supports versions 0-1"),
    ("kraft.version", 0, UPGRADE, 1, "Can't downgrade the version of this feature without setting the upgrade "
                                     "type to either safe or unsafe downgrade."),
    ("kraft.version", 1, SAFE_DOWNGRADE, 0, "Can't downgrade to a newer version."),
    ("kraft.version", 0, SAFE_DOWNGRADE, 1, "Can't downgrade the version of this feature."),
    ("kraft.version", 0, UNSAFE_DOWNGRADE, 1, "Can't downgrade the version of this feature."),
    ("metadata.version", 21, UPGRADE, 0, "Local controller 3 does not support this feature."),
    ("group.version", 1, UPGRADE, 0, "Local controller 3 does not support this feature."),
    ("group.version", 0, SAFE_DOWNGRADE, 0, "Feature group.version not found."),
])
def test_kafkas_checks_for_a_controller_that_knows_only_kraft_version(
        feature: str, level: int, upgrade_type: int, finalized: int, reason: str | None) -> None:
    assert refusal(feature, level, upgrade_type, finalized) == reason


def test_a_range_of_one_level_prints_as_that_level() -> None:
    """Kafka's VersionRange.toString."""
    r = feature_refusal(FeatureUpdate("kraft.version", 1, UPGRADE), node_id=1, supported={"kraft.version": (0, 0)},
                        finalized={})
    assert r is not None and r.message.endswith("Local controller 1 does not support this feature.")
    r = feature_refusal(FeatureUpdate("x", 3, UPGRADE), node_id=1, supported={"x": (2, 2)}, finalized={})
    assert r is not None and r.message.endswith("Local controller 1 only supports versions 2")


def test_a_repeated_feature_keeps_its_last_update() -> None:
    request = uf_req.UpdateFeaturesRequest(feature_updates=[
        uf_req.FeatureUpdateKey(feature="kraft.version", max_version_level=0),
        uf_req.FeatureUpdateKey(feature="kraft.version", max_version_level=1, upgrade_type=2)])
    assert requested_updates(request) == [FeatureUpdate("kraft.version", 1, 2)]


def test_v0_reads_the_upgrade_type_kafka_reads_the_default() -> None:
    """QuorumController reads UpgradeType, which v0 does not carry: AllowDowngrade is ignored."""
    wire = uf_req.UpdateFeaturesRequest(feature_updates=[
        uf_req.FeatureUpdateKey(feature="kraft.version", max_version_level=0, allow_downgrade=True)]).encode(0)
    decoded = uf_req.UpdateFeaturesRequest.decode(wire, 0)
    assert requested_updates(decoded) == [FeatureUpdate("kraft.version", 0, UPGRADE)]


def test_success_has_one_none_result_per_feature_below_v2_and_none_from_v2() -> None:
    updates = [FeatureUpdate("kraft.version", 1, UPGRADE)]
    for version in (0, 1):
        r = success_response(version, updates)
        assert (r.error_code, r.error_message) == (ErrorCode.NONE, None)
        assert [(x.feature, x.error_code, x.error_message) for x in r.results] == [("kraft.version", 0, "NONE")]
        r.encode(version)
    r = success_response(2, updates)
    assert r.results == [] and r.encode(2)


def test_a_feature_refusal_fails_the_whole_request_behind_kafkas_prefix() -> None:
    r = refusal_response(Refusal(ErrorCode.INVALID_UPDATE_VERSION, "why"), feature_error=True)
    assert (r.error_code, r.error_message, r.results) == (
        ErrorCode.INVALID_UPDATE_VERSION,
        "The update failed for all features since the following feature had an error: why", [])
    r = refusal_response(Refusal(ErrorCode.NOT_CONTROLLER, not_controller_message(2)), feature_error=False)
    assert (r.error_code, r.error_message) == (ErrorCode.NOT_CONTROLLER, "The active controller appears to be node 2.")
    assert not_controller_message(None) == "No controller appears to be active."
