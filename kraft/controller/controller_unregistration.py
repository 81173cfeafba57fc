"""UnregisterController (KIP-1312, Kafka 4.4): the active controller drops a
controller's registration, as ``remove-controller --unregister`` and
``kafka-cluster unregister-controller`` ask once the controller has left
the voter set.

Kafka's ``QuorumController.unregisterController`` (the write event) and
``ClusterControlManager.unregisterController``, checked in their order: an
active controller does not unregister itself, the finalized
``metadata.version`` must be 4.4-IV2 or later, and the id must be
registered. The answer is one UnregisterControllerRecord. Before this
runs, Kafka's ``ControllerApis.handleUnregisterController`` authorizes
ALTER on the cluster; that is the node's check, not this module's.

The client's side of the same RPC is here too (Kafka's
``KafkaAdminClient.unregisterController``): its versions and the request
(:func:`request`); the admin client (:func:`kraft.admin_client.admin.unregister_controller`)
sends it to the active controller and retries.
"""

from __future__ import annotations

from collections.abc import Callable

from kraft.controller.metadata_version import by_level
from kraft.controller.result import ApiError, ControllerResult, RecordAndVersion
from kraft.image.model import MetadataImage
from kraft.messages.generated.unregister_controller_record import UnregisterControllerRecord
from kraft.messages.generated.unregister_controller_request import UnregisterControllerRequest
from kraft.messages.generated.unregister_controller_response import UnregisterControllerResponse
from kraft.wire.errors import ErrorCode

__all__ = ["VERSIONS", "unregister_controller", "error_response", "request"]

#: UnregisterController's versions (KIP-1312: v0).
VERSIONS = (0, 0)


def unregister_controller(image: MetadataImage, node_id: int,
                          request: UnregisterControllerRequest) -> ControllerResult[UnregisterControllerResponse]:
    """The records and the answer of the active controller ``node_id`` to
    ``request``; a refusal raises :class:`ApiError` with Kafka's code and
    message (:func:`error_response` turns it into the response)."""
    controller_id = request.controller_id
    if controller_id == node_id:
        raise ApiError(ErrorCode.INVALID_REQUEST, "Controller cannot unregister itself while it is active.")
    if not by_level(image.features.metadata_version or 0).is_controller_unregistration_supported:
        raise ApiError(ErrorCode.UNSUPPORTED_VERSION,
                       "The current MetadataVersion is too old to support controller unregistration.")
    if controller_id not in image.controllers:
        raise ApiError(ErrorCode.CONTROLLER_ID_NOT_REGISTERED,
                       f"Controller ID {controller_id} is not currently registered.")
    return ControllerResult.of(UnregisterControllerResponse(throttle_time_ms=0, error_code=ErrorCode.NONE),
                               RecordAndVersion(UnregisterControllerRecord(controller_id=controller_id), 0))


def error_response(error: ApiError) -> UnregisterControllerResponse:
    """``UnregisterControllerRequest.getErrorResponse``: the code and the message."""
    return UnregisterControllerResponse(throttle_time_ms=0, error_code=error.error, error_message=error.message)


def request(controller_id: int) -> Callable[[int], UnregisterControllerRequest]:
    """What an admin client sends to unregister ``controller_id`` (the same at every version)."""
    return lambda version: UnregisterControllerRequest(controller_id=controller_id)
