"""The admin client's feature requests: what Kafka's ``Admin.describeFeatures``
and ``Admin.updateFeatures`` send for ``kafka-features.sh``, over an
:class:`~kraft.admin_client.admin.AdminSession`. The transport's part only (which
node, the retries, the deadline); each RPC's request, version and reading
of the answer are its unit's:

* :func:`describe_features`: ApiVersions (its unit,
  :mod:`kraft.raft.rpcs.api_versions_rpc`, with the model
  :class:`FeatureMetadata`, Kafka's of the same name) to the bootstrap
  addresses, in order, until one answers -- Kafka's
  ``KafkaAdminClient.describeFeatures`` sends it to the least loaded node.
* :func:`update_features`: one UpdateFeatures (its unit,
  :mod:`kraft.controller.update_features_rpc`) to the active controller
  found with DescribeCluster, retried while it is unknown or answers
  NOT_CONTROLLER until the session's deadline; the answer is each
  feature's failure message (None on success), as
  ``KafkaAdminClient.updateFeatures`` completes each feature's future.

Failures are :class:`~kraft.admin_client.errors.AdminError`: one line.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kraft.admin_client.admin import AdminSession
from kraft.admin_client.errors import AdminError, UnreachableError
from kraft.controller import update_features_rpc
from kraft.controller.update_features_rpc import FeatureUpdate, UpgradeType
from kraft.messages.errors import KraftProtocolError
from kraft.raft.rpcs import api_versions_rpc
from kraft.raft.rpcs.api_versions_rpc import ApiVersionsRequest, FeatureMetadata, SupportedVersionRange
from kraft.wire.apis import ApiKey
from kraft.wire.network_client import PeerClientError
from kraft.wire.errors import ErrorCode

__all__ = [
    "UpgradeType",
    "FeatureUpdate",
    "SupportedVersionRange",
    "FeatureMetadata",
    "api_versions",
    "describe_features",
    "update_features",
]


async def api_versions(session: AdminSession, address: tuple[str, int]) -> tuple[int, Any]:
    """ApiVersions to ``address`` as its unit writes it, at most the unit's
    newest version: the version used and the response body."""
    rpc = api_versions_rpc.RPC
    return await session.request(address, rpc.api_key, lambda v: rpc.write_request(ApiVersionsRequest(endpoints=()), v),
                                 max_version=rpc.versions[1])


async def describe_features(session: AdminSession) -> FeatureMetadata:
    """ApiVersions to the bootstrap addresses, in order, until one answers."""
    failures = []
    for address in session.bootstrap.addresses:
        try:
            _, body = await api_versions(session, address)
        except (PeerClientError, KraftProtocolError) as e:
            failures.append(str(e))
            continue
        if body.error_code != ErrorCode.NONE:
            raise AdminError(f"ApiVersions to {address[0]}:{address[1]} failed: {ErrorCode.name_of(body.error_code)}")
        return api_versions_rpc.feature_metadata(body)
    raise UnreachableError(f"Cannot reach any of the bootstrap {session.bootstrap.kind}: " + "; ".join(failures))


async def update_features(session: AdminSession, updates: Mapping[str, FeatureUpdate],
                          validate_only: bool) -> dict[str, str | None]:
    """UpdateFeatures to the active controller: each feature's failure
    message (None on success), in the order of ``updates``."""
    build = update_features_rpc.request(updates, validate_only, session.settings.request_timeout_ms)

    async def attempt() -> Any:
        try:
            sent = await session.send_to_leader(ApiKey.UPDATE_FEATURES, build,
                                                max_version=update_features_rpc.VERSIONS[1])
        except update_features_rpc.CannotExpress as e:
            raise AdminError(str(e)) from None
        if isinstance(sent, str):
            return sent
        view, _, body = sent
        if body.error_code == ErrorCode.NOT_CONTROLLER:
            return f"node {view.controller_id} answered NOT_CONTROLLER: {body.error_message}"
        return body

    body = await session.until_deadline("the active controller", attempt)
    return update_features_rpc.results(updates, body)
