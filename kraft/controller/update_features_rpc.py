"""UpdateFeatures (api key 57, v0-v2) as an admin client sends it: Kafka's
``Admin.updateFeatures`` for ``kafka-features.sh upgrade / downgrade /
disable`` (``kraft features``). The active controller answers it
(:func:`kraft.controller.feature_control.update_features`; a kraft node,
the ``kraft.version`` upgrade: :mod:`kraft.node.update_features`); this
module is the client's side of the same RPC: its versions, the request
(:func:`request`), and the reading of the answer into each feature's
outcome (:func:`results`). Adding a field touches this module and its test.

Sans-IO, as the rest of the controller: the admin client
(:mod:`kraft.admin_client.admin_features`) sends and retries.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from kraft.controller import feature_control
from kraft.messages.generated import update_features_request as uf_req
from kraft.messages.generated import update_features_response as uf_resp
from kraft.wire.errors import ErrorCode

__all__ = ["VERSIONS", "CannotExpress", "FeatureUpdate", "UpgradeType", "request", "results"]

#: The versions a kraft node answers and an admin client asks for (v1 adds
#: UpgradeType and ValidateOnly, v2 answers a success without per-feature results).
VERSIONS = (0, 2)


class UpgradeType(enum.IntEnum):
    """Kafka's ``FeatureUpdate.UpgradeType`` and its wire codes."""

    UPGRADE = feature_control.UPGRADE
    SAFE_DOWNGRADE = feature_control.SAFE_DOWNGRADE
    UNSAFE_DOWNGRADE = feature_control.UNSAFE_DOWNGRADE


@dataclass(frozen=True, slots=True)
class FeatureUpdate:
    """Kafka's ``FeatureUpdate``: the level to reach and how."""

    max_version_level: int
    upgrade_type: UpgradeType


class CannotExpress(Exception):
    """The version the connection agreed on cannot express the update."""


def request(updates: Mapping[str, FeatureUpdate], validate_only: bool,
            timeout_ms: int) -> Callable[[int], uf_req.UpdateFeaturesRequest]:
    """The UpdateFeatures request for the version the connection agreed on;
    v0 has neither ValidateOnly nor UpgradeType (:class:`CannotExpress`)."""

    def build(version: int) -> uf_req.UpdateFeaturesRequest:
        if version == 0 and (validate_only or any(u.upgrade_type != UpgradeType.UPGRADE for u in updates.values())):
            raise CannotExpress("The controller only speaks UpdateFeatures v0, which cannot express this update")
        return uf_req.UpdateFeaturesRequest(
            timeout_ms=timeout_ms,
            feature_updates=[uf_req.FeatureUpdateKey(feature=name, max_version_level=u.max_version_level,
                                                     upgrade_type=int(u.upgrade_type))
                             for name, u in updates.items()],
            validate_only=validate_only)

    return build


def results(updates: Mapping[str, FeatureUpdate], body: uf_resp.UpdateFeaturesResponse) -> dict[str, str | None]:
    """Each feature's failure message (None on success), in the order of
    ``updates``, as ``KafkaAdminClient.updateFeatures`` completes each
    feature's future: a top-level error fails them all."""
    if body.error_code != ErrorCode.NONE:
        message = body.error_message or ErrorCode.name_of(body.error_code)
        return {name: message for name in updates}
    by_name = {r.feature: r for r in body.results}
    out: dict[str, str | None] = {}
    for name in updates:
        result = by_name.get(name)
        if result is None or result.error_code == ErrorCode.NONE:
            # v2 answers a success without per-feature results.
            out[name] = None
        else:
            out[name] = result.error_message or ErrorCode.name_of(result.error_code)
    return out
