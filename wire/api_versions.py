"""ApiVersions by Kafka's rules (KIP-35, KIP-511, KIP-584): the answer a
server gives, and the version choice a client makes from it.

Server side, as Kafka's ``KafkaApis.handleApiVersionsRequest`` and
``ApiVersionsRequest.getErrorResponse`` do it:

* a request at a version the server does not know gets a v0 response with
  ``UNSUPPORTED_VERSION`` whose ``api_keys`` lists only ApiVersions' own
  range (KIP-511), so an old or new client can read it and retry;
* a v3+ request whose client software name or version does not match
  Kafka's pattern gets ``INVALID_REQUEST`` (no api keys);
* otherwise ``NONE``, every supported api with its version range, and (in
  v3+, where the fields exist) the supported and finalized features.

The response header of ApiVersions is always v0 (:mod:`.headers`), whatever
the version of the body.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from kraft.messages.generated.api_versions_request import ApiVersionsRequest
from kraft.messages.generated.api_versions_response import (
    ApiVersion,
    ApiVersionsResponse,
    FinalizedFeatureKey,
    SupportedFeatureKey,
)
from kraft.wire.apis import ApiKey
from kraft.wire.errors import ErrorCode

__all__ = [
    "VersionRange",
    "SOFTWARE_NAME_VERSION_PATTERN",
    "supported_versions",
    "response_version",
    "is_valid_request",
    "unsupported_version_response",
    "api_versions_response",
    "advertised_versions",
    "usable_version_range",
]

#: (lowest, highest) supported version, both inclusive.
VersionRange = tuple[int, int]

#: Kafka's ``ApiVersionsRequest`` check on the v3+ client software fields.
SOFTWARE_NAME_VERSION_PATTERN = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")

#: Fields of the response that exist only from this version on (features,
#: ZK migration flag); writing them at older versions is not possible.
_FEATURES_FROM_VERSION = 3


def supported_versions(apis: Iterable[ApiKey] | None = None) -> dict[ApiKey, VersionRange]:
    """The version range our codecs support for each of ``apis`` (all apis
    kraft knows when None)."""
    return {api: (api.min_version, api.max_version) for api in (ApiKey if apis is None else apis)}


def response_version(request_version: int) -> int:
    """The version an ApiVersions response body is written in: the
    request's when it is supported, else 0 (so any client can parse it)."""
    return request_version if ApiKey.API_VERSIONS.is_version_supported(request_version) else 0


def is_valid_request(request: ApiVersionsRequest, request_version: int) -> bool:
    """Kafka's ``ApiVersionsRequest.isValid``: from v3 on, the client
    software name and version must match :data:`SOFTWARE_NAME_VERSION_PATTERN`."""
    if request_version < 3:
        return True
    return bool(SOFTWARE_NAME_VERSION_PATTERN.fullmatch(request.client_software_name or "")
                and SOFTWARE_NAME_VERSION_PATTERN.fullmatch(request.client_software_version or ""))


def unsupported_version_response() -> ApiVersionsResponse:
    """The answer to an ApiVersions request at a version we do not support:
    ``UNSUPPORTED_VERSION`` plus ApiVersions' own range (KIP-511), to be
    written as v0."""
    api = ApiKey.API_VERSIONS
    return ApiVersionsResponse(
        error_code=ErrorCode.UNSUPPORTED_VERSION,
        api_keys=[ApiVersion(api_key=api.value, min_version=api.min_version, max_version=api.max_version)],
    )


def api_versions_response(
    request_version: int,
    supported: Mapping[ApiKey | int, VersionRange],
    *,
    request: ApiVersionsRequest | None = None,
    supported_features: Mapping[str, VersionRange] | None = None,
    finalized_features: Mapping[str, int] | None = None,
    finalized_features_epoch: int = -1,
    throttle_time_ms: int = 0,
    zk_migration_ready: bool = False,
) -> ApiVersionsResponse:
    """Kafka's ApiVersions answer to a request at ``request_version``.

    ``supported`` maps each api the listener serves to its version range;
    entries come out sorted by api key, as Kafka lists them.
    ``supported_features`` maps a feature name (``kraft.version``) to the
    range this node supports; ``finalized_features`` a feature name to its
    finalized level (Kafka writes the level as both min and max). Write the
    result at :func:`response_version` ``(request_version)``.
    """
    if not ApiKey.API_VERSIONS.is_version_supported(request_version):
        return unsupported_version_response()
    if request is not None and not is_valid_request(request, request_version):
        return ApiVersionsResponse(error_code=ErrorCode.INVALID_REQUEST, throttle_time_ms=throttle_time_ms)
    api_keys = [
        ApiVersion(api_key=int(key), min_version=lo, max_version=hi)
        for key, (lo, hi) in sorted(supported.items(), key=lambda item: int(item[0]))
    ]
    response = ApiVersionsResponse(error_code=ErrorCode.NONE, api_keys=api_keys, throttle_time_ms=throttle_time_ms)
    if request_version >= _FEATURES_FROM_VERSION:
        response.supported_features = [
            SupportedFeatureKey(name=name, min_version=lo, max_version=hi)
            for name, (lo, hi) in (supported_features or {}).items()
        ]
        response.finalized_features = [
            FinalizedFeatureKey(name=name, min_version_level=level, max_version_level=level)
            for name, level in (finalized_features or {}).items()
        ]
        response.finalized_features_epoch = finalized_features_epoch
        response.zk_migration_ready = zk_migration_ready
    return response


def advertised_versions(response: ApiVersionsResponse) -> dict[int, VersionRange]:
    """What a peer's ApiVersions response advertises: api key -> range.
    A key listed twice keeps its last entry (Kafka's collection is keyed
    by api key too)."""
    return {int(v.api_key): (int(v.min_version), int(v.max_version)) for v in response.api_keys}


def usable_version_range(ours: VersionRange, theirs: VersionRange | None,
                         max_version: int | None = None) -> VersionRange | None:
    """The versions both sides speak (capped by ``max_version``), or None
    when there are none (Kafka's ``NodeApiVersions.latestUsableVersion``)."""
    if theirs is None:
        return None
    lo = max(ours[0], theirs[0])
    hi = min(ours[1], theirs[1])
    if max_version is not None:
        hi = min(hi, max_version)
    return (lo, hi) if lo <= hi else None
