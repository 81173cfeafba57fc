"""The admin client's feature requests: what Kafka's ``Admin.describeFeatures``
and ``Admin.updateFeatures`` send for ``kafka-features.sh``, over an
:class:`~kraft.client.admin.AdminSession`.

* :func:`describe_features`: ApiVersions (v4 at most; v4 is the first that
  shows a feature whose minimum is 0, such as ``kraft.version``) to the
  bootstrap addresses, in order, until one answers -- Kafka's
  ``KafkaAdminClient.describeFeatures`` sends it to the least loaded node.
  The answer is :class:`FeatureMetadata`, Kafka's model of the same name.
* :func:`update_features`: one UpdateFeatures (v2 at most) to the active
  controller found with DescribeCluster, retried while it is unknown or
  answers NOT_CONTROLLER until the session's deadline; the answer is each
  feature's failure message (None on success), as
  ``KafkaAdminClient.updateFeatures`` completes each feature's future.

Failures are :class:`~kraft.client.errors.AdminError`: one line.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kraft.client.admin import AdminSession
from kraft.client.errors import AdminError, UnreachableError
from kraft.messages.errors import KraftProtocolError
from kraft.messages.generated import update_features_request as uf_req
from kraft.messages.generated.api_versions_request import ApiVersionsRequest
from kraft.wire.apis import ApiKey
from kraft.wire.client import CLIENT_SOFTWARE_NAME, CLIENT_SOFTWARE_VERSION, PeerClientError
from kraft.wire.errors import ErrorCode

__all__ = [
    "UpgradeType",
    "FeatureUpdate",
    "SupportedVersionRange",
    "FeatureMetadata",
    "describe_features",
    "update_features",
]


class UpgradeType(enum.IntEnum):
    """Kafka's ``FeatureUpdate.UpgradeType`` and its wire codes."""

    UPGRADE = 1
    SAFE_DOWNGRADE = 2
    UNSAFE_DOWNGRADE = 3


@dataclass(frozen=True, slots=True)
class FeatureUpdate:
    """Kafka's ``FeatureUpdate``: the level to reach and how."""

    max_version_level: int
    upgrade_type: UpgradeType


@dataclass(frozen=True, slots=True)
class SupportedVersionRange:
    """Kafka's ``SupportedVersionRange``: the levels a node supports."""

    min_version: int
    max_version: int


@dataclass(frozen=True, slots=True)
class FeatureMetadata:
    """Kafka's ``FeatureMetadata``: an ApiVersions answer's features.
    ``finalized`` holds each finalized feature's level (Kafka's
    ``FinalizedVersionRange.maxVersionLevel``); ``finalized_epoch`` is None
    when the node reported none (-1)."""

    finalized: dict[str, int]
    finalized_epoch: int | None
    supported: dict[str, SupportedVersionRange]


async def describe_features(session: AdminSession) -> FeatureMetadata:
    """ApiVersions to the bootstrap addresses, in order, until one answers."""

    def build(version: int) -> ApiVersionsRequest:
        return ApiVersionsRequest(client_software_name=CLIENT_SOFTWARE_NAME,
                                  client_software_version=CLIENT_SOFTWARE_VERSION)

    failures = []
    for address in session.bootstrap.addresses:
        try:
            _, body = await session.request(address, ApiKey.API_VERSIONS, build, max_version=4)
        except (PeerClientError, KraftProtocolError) as e:
            failures.append(str(e))
            continue
        if body.error_code != ErrorCode.NONE:
            raise AdminError(f"ApiVersions to {address[0]}:{address[1]} failed: {ErrorCode.name_of(body.error_code)}")
        return FeatureMetadata(
            finalized={f.name: f.max_version_level for f in body.finalized_features},
            finalized_epoch=body.finalized_features_epoch if body.finalized_features_epoch >= 0 else None,
            supported={f.name: SupportedVersionRange(f.min_version, f.max_version) for f in body.supported_features})
    raise UnreachableError(f"Cannot reach any of the bootstrap {session.bootstrap.kind}: " + "; ".join(failures))


async def update_features(session: AdminSession, updates: Mapping[str, FeatureUpdate],
                          validate_only: bool) -> dict[str, str | None]:
    """UpdateFeatures to the active controller: each feature's failure
    message (None on success), in the order of ``updates``."""

    def build(version: int) -> uf_req.UpdateFeaturesRequest:
        if version == 0 and (validate_only or any(u.upgrade_type != UpgradeType.UPGRADE for u in updates.values())):
            # v0 has neither ValidateOnly nor UpgradeType.
            raise AdminError("The controller only speaks UpdateFeatures v0, which cannot express this update")
        return uf_req.UpdateFeaturesRequest(
            timeout_ms=session.settings.request_timeout_ms,
            feature_updates=[uf_req.FeatureUpdateKey(feature=name, max_version_level=u.max_version_level,
                                                     upgrade_type=int(u.upgrade_type))
                             for name, u in updates.items()],
            validate_only=validate_only)

    async def attempt() -> tuple[int, Any] | str:
        sent = await session.send_to_leader(ApiKey.UPDATE_FEATURES, build, max_version=2)
        if isinstance(sent, str):
            return sent
        view, version, body = sent
        if body.error_code == ErrorCode.NOT_CONTROLLER:
            return f"node {view.controller_id} answered NOT_CONTROLLER: {body.error_message}"
        return version, body

    _, body = await session.until_deadline("the active controller", attempt)
    if body.error_code != ErrorCode.NONE:
        message = body.error_message or ErrorCode.name_of(body.error_code)
        return {name: message for name in updates}
    results = {r.feature: r for r in body.results}
    out: dict[str, str | None] = {}
    for name in updates:
        result = results.get(name)
        if result is None or result.error_code == ErrorCode.NONE:
            # v2 answers a success without per-feature results.
            out[name] = None
        else:
            out[name] = result.error_message or ErrorCode.name_of(result.error_code)
    return out
