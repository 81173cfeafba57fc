"""UpdateFeatures on a kraft controller: what a Kafka 4.x active controller
answers (``ControllerApis.handleUpdateFeatures`` ->
``QuorumController.updateFeatures`` -> ``FeatureControlManager.updateFeature``)
when the only feature it knows is ``kraft.version`` -- kraft has no quorum
controller, so no ``metadata.version``, ``group.version``, ...

Per requested feature, in Kafka's order (each refusal is
INVALID_UPDATE_VERSION, "Invalid update version L for feature F. <reason>"):

1. an upgrade type other than 1 (upgrade), 2 (safe downgrade), 3 (unsafe
   downgrade): "The controller does not support the given upgrade type.";
2. a level below 0: "A feature version cannot be less than 0.";
3. a level outside what this controller supports (``QuorumFeatures``):
   "Local controller N only supports versions 0-1" for kraft.version, "Local
   controller N does not support this feature." for any other feature above
   level 0 -- the answer of a Kafka controller that lacks the feature;
4. a lower level with type upgrade: "Can't downgrade the version of this
   feature without setting the upgrade type to either safe or unsafe
   downgrade."; a higher level with a downgrade type: "Can't downgrade to a
   newer version.";
5. kraft.version with type upgrade: the raft leader's upgrade
   (:func:`kraft.raft.kraft_version.check_upgrade`); its
   ``InvalidUpdateVersionException`` is INVALID_UPDATE_VERSION with the
   raft layer's own message. With a downgrade type, any other level: "Can't
   downgrade the version of this feature.";
6. any other feature at level 0 (disabling what is not there): Kafka's
   ``Feature.featureFromName`` refusal, "Feature F not found.".

The first refusal fails the whole request (Kafka 4.x applies updates
atomically): its code at the top level, its message after "The update
failed for all features since the following feature had an error: ", no
per-feature results. Success is NONE with, in v0-v1, one NONE result per
feature (message "NONE", Kafka's ``Errors.NONE.message()``); v2 has no
results. The upgrade itself is answered once its control batch is
committed (Kafka waits for its records, a NoOpRecord among them), within the
request's ``timeoutMs`` (REQUEST_TIMED_OUT otherwise).

Off the leader, or when leadership is lost before the commit: NOT_CONTROLLER
with Kafka's ``ControllerExceptions.newWrongControllerException`` message;
the admin client then finds the leader again (DescribeCluster) and retries.

Kafka reads the upgrade type of a v0 request from the UpgradeType field,
which v0 does not carry (default 1): AllowDowngrade is ignored, as the
quorum controller ignores it. Kafka answers the two states it treats as
impossible (voter ids changed, a directory id unknown) with
UNKNOWN_SERVER_ERROR and no message, then fails over; kraft answers
UNKNOWN_SERVER_ERROR with the message and keeps leading.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import trio

from kraft.raft import kraft_version
from kraft.raft.errors import LocalRaftError, NotLeaderError
from kraft.messages.generated import update_features_request as uf_req
from kraft.messages.generated import update_features_response as uf_resp
from kraft.wire.api_versions import VersionRange
from kraft.wire.errors import ErrorCode

if TYPE_CHECKING:
    from kraft.node.raft_view import RaftWriter

__all__ = [
    "UPGRADE",
    "SAFE_DOWNGRADE",
    "UNSAFE_DOWNGRADE",
    "FeatureUpdate",
    "Refusal",
    "requested_updates",
    "feature_refusal",
    "success_response",
    "refusal_response",
    "not_controller_message",
    "update_features",
    "SUPPORTED_FEATURES",
]

log = logging.getLogger("kraft.node.update_features")

#: Kafka's ``FeatureUpdate.UpgradeType`` codes.
UPGRADE = 1
SAFE_DOWNGRADE = 2
UNSAFE_DOWNGRADE = 3
_UPGRADE_TYPES = frozenset({UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE})

#: Feature ranges this node supports (ApiVersions' SupportedFeatures,
#: Kafka's ``QuorumFeatures``).
SUPPORTED_FEATURES: Mapping[str, VersionRange] = {kraft_version.FEATURE_NAME: (0, 1)}

#: ``QuorumController.updateFeatures``' prefix to the refusal of one feature.
_FAILED_PREFIX = "The update failed for all features since the following feature had an error: "
#: ``Errors.NONE.message()``: NONE has no exception, so its name.
_NONE_MESSAGE = "NONE"


@dataclass(frozen=True, slots=True)
class FeatureUpdate:
    """One requested change: the feature, its new level, the upgrade type."""

    feature: str
    level: int
    upgrade_type: int


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why the request fails: Kafka's error code and message (unprefixed)."""

    error: int
    message: str


def requested_updates(request: uf_req.UpdateFeaturesRequest) -> list[FeatureUpdate]:
    """The request's updates, one per feature (a repeated name: the last,
    as Kafka's map keeps it)."""
    by_name = {u.feature: FeatureUpdate(u.feature, u.max_version_level, u.upgrade_type)
               for u in request.feature_updates}
    return list(by_name.values())


def _range_text(r: VersionRange) -> str:
    """Kafka's ``VersionRange.toString``."""
    return str(r[0]) if r[0] == r[1] else f"{r[0]}-{r[1]}"


def _invalid(update: FeatureUpdate, reason: str) -> Refusal:
    """Kafka's ``FeatureControlManager.invalidUpdateVersion``."""
    return Refusal(ErrorCode.INVALID_UPDATE_VERSION,
                   f"Invalid update version {update.level} for feature {update.feature}. {reason}")


def feature_refusal(update: FeatureUpdate, *, node_id: int, supported: Mapping[str, VersionRange],
                    finalized: Mapping[str, int]) -> Refusal | None:
    """Checks 1-4 and 6 of the module docstring for one update; None when it
    may go on (for kraft.version, to the raft leader's upgrade)."""
    if update.upgrade_type not in _UPGRADE_TYPES:
        return _invalid(update, "The controller does not support the given upgrade type.")
    current = finalized.get(update.feature, 0)
    if update.level < 0:
        return _invalid(update, "A feature version cannot be less than 0.")
    local = supported.get(update.feature, (0, 0))
    if not local[0] <= update.level <= local[1]:
        # QuorumFeatures.reasonNotSupported for the local controller.
        what = f"Local controller {node_id}"
        if local[1] == 0:
            return _invalid(update, f"{what} does not support this feature.")
        return _invalid(update, f"{what} only supports versions {_range_text(local)}")
    if update.level < current and update.upgrade_type == UPGRADE:
        return _invalid(update, "Can't downgrade the version of this feature without setting the upgrade type to "
                                "either safe or unsafe downgrade.")
    if update.level > current and update.upgrade_type != UPGRADE:
        return _invalid(update, "Can't downgrade to a newer version.")
    if update.feature == kraft_version.FEATURE_NAME:
        if update.upgrade_type != UPGRADE and update.level != current:
            return _invalid(update, "Can't downgrade the version of this feature.")
        return None
    # A feature this controller does not know, at level 0 (so: unchanged).
    return _invalid(update, f"Feature {update.feature} not found.")


def success_response(version: int, updates: Sequence[FeatureUpdate]) -> uf_resp.UpdateFeaturesResponse:
    results = []
    if version <= 1:
        results = [uf_resp.UpdatableFeatureResult(feature=u.feature, error_code=ErrorCode.NONE,
                                                   error_message=_NONE_MESSAGE) for u in updates]
    return uf_resp.UpdateFeaturesResponse(error_code=ErrorCode.NONE, error_message=None, results=results)


def refusal_response(refusal: Refusal, *, feature_error: bool) -> uf_resp.UpdateFeaturesResponse:
    """A failed request: no per-feature results; a feature's refusal behind
    Kafka's "The update failed for all features ..." prefix."""
    message = _FAILED_PREFIX + refusal.message if feature_error else refusal.message
    return uf_resp.UpdateFeaturesResponse(error_code=refusal.error, error_message=message, results=[])


def not_controller_message(leader_id: int | None) -> str:
    """Kafka's ``ControllerExceptions.newWrongControllerException`` message."""
    if leader_id is None:
        return "No controller appears to be active."
    return f"The active controller appears to be node {leader_id}."


async def update_features(raft_driver: RaftWriter, node_id: int, request: uf_req.UpdateFeaturesRequest,
                          version: int) -> uf_resp.UpdateFeaturesResponse:
    """Answer UpdateFeatures on the node ``node_id`` whose raft is ``raft_driver``
    (see the module docstring)."""
    core = raft_driver.core

    def not_controller() -> uf_resp.UpdateFeaturesResponse:
        return refusal_response(Refusal(ErrorCode.NOT_CONTROLLER, not_controller_message(raft_driver.leader.leader_id)),
                                feature_error=False)

    if not raft_driver.initialized or not core.is_leader:
        return not_controller()
    updates = requested_updates(request)
    finalized = {kraft_version.FEATURE_NAME: core.kraft_version}
    for update in updates:
        refusal = feature_refusal(update, node_id=node_id, supported=SUPPORTED_FEATURES,
                                  finalized=finalized)
        if refusal is not None:
            log.warning("UpdateFeatures refused: %s", refusal.message)
            return refusal_response(refusal, feature_error=True)
    position = None
    upgrade = next((u for u in updates if u.feature == kraft_version.FEATURE_NAME and u.upgrade_type == UPGRADE),
                   None)
    if upgrade is not None:
        try:
            position = raft_driver.upgrade_kraft_version(upgrade.level, validate_only=request.validate_only)
        except NotLeaderError:
            return not_controller()
        except kraft_version.InvalidUpdateVersionError as e:
            upgrade_voters = core.upgrade_voters
            if upgrade_voters is not None:
                # Kafka logs the voter set with this refusal; name who is missing.
                log.info("kraft.version %d refused (%s); voters that have not said they support it: %s",
                         upgrade.level, e, kraft_version.voters_not_supporting(upgrade_voters, upgrade.level))
            return refusal_response(Refusal(ErrorCode.INVALID_UPDATE_VERSION, str(e)), feature_error=True)
        except LocalRaftError as e:
            log.error("kraft.version %d upgrade failed: %s", upgrade.level, e)
            return refusal_response(Refusal(ErrorCode.UNKNOWN_SERVER_ERROR, str(e)), feature_error=False)
    if position is not None:
        with trio.move_on_after(max(request.timeout_ms, 0) / 1000) as scope:
            try:
                await raft_driver.wait_committed(position)
            except NotLeaderError:
                return not_controller()
        if scope.cancelled_caught:
            return refusal_response(Refusal(ErrorCode.REQUEST_TIMED_OUT,
                                            "Timed out waiting for the kraft.version upgrade to commit"),
                                    feature_error=False)
        log.info("kraft.version upgraded to %d (committed at offset %d)", upgrade.level if upgrade else -1,
                 position.offset)
    return success_response(version, updates)
