"""UnregisterController (KIP-1312): Kafka 4.4's ``QuorumController.unregisterController``
and ``ClusterControlManager.unregisterController``, on images built from records."""

from __future__ import annotations

import uuid

import pytest

from kraft.controller import controller_unregistration
from kraft.controller.result import ApiError
from kraft.image.model import MetadataImage
from kraft.messages.generated.register_controller_record import ControllerEndpoint, RegisterControllerRecord
from kraft.messages.generated.unregister_controller_record import UnregisterControllerRecord
from kraft.messages.generated.unregister_controller_request import UnregisterControllerRequest
from kraft.wire.errors import ErrorCode
from tests.controller.images import features, replay

ACTIVE = 1


def _registered(*ids: int, mv: int = 33) -> MetadataImage:
    return replay([*features(mv), *(RegisterControllerRecord(
        controller_id=i, incarnation_id=uuid.UUID(int=i), zk_migration_ready=False,
        end_points=[ControllerEndpoint(name="CONTROLLER", host="localhost", port=9093 + i, security_protocol=0)],
        features=[]) for i in ids)])


def _refusal(image: MetadataImage, controller_id: int) -> ApiError:
    with pytest.raises(ApiError) as e:
        controller_unregistration.unregister_controller(image, ACTIVE, UnregisterControllerRequest(controller_id=controller_id))
    return e.value


def test_a_registered_controller_is_unregistered_by_one_record() -> None:
    image = _registered(1, 2, 3)
    result = controller_unregistration.unregister_controller(image, ACTIVE, UnregisterControllerRequest(controller_id=3))
    assert [(type(r.message), r.message.controller_id, r.version) for r in result.records] == [
        (UnregisterControllerRecord, 3, 0)]
    assert result.response.error_code == ErrorCode.NONE
    assert sorted(replay(result.records, image).controllers) == [1, 2]


def test_the_active_controller_does_not_unregister_itself() -> None:
    """QuorumController.unregisterController: InvalidRequestException, checked first."""
    assert _refusal(_registered(1, 2, mv=30), ACTIVE) == ApiError(
        ErrorCode.INVALID_REQUEST, "Controller cannot unregister itself while it is active.")


def test_before_4_4_iv2_it_is_unsupported() -> None:
    """isControllerUnregistrationSupported: IBP_4_4_IV2 (level 33) on."""
    assert _refusal(_registered(1, 2, mv=32), 2) == ApiError(
        ErrorCode.UNSUPPORTED_VERSION, "The current MetadataVersion is too old to support controller unregistration.")


def test_an_unregistered_id_is_controller_id_not_registered() -> None:
    """ControllerIdNotRegisteredException (136), also on a cluster no controller registered with."""
    expected = ApiError(ErrorCode.CONTROLLER_ID_NOT_REGISTERED, "Controller ID 4 is not currently registered.")
    assert _refusal(_registered(1, 2, 3), 4) == expected
    assert _refusal(_registered(), 4) == expected


def test_the_error_response_carries_code_and_message() -> None:
    response = controller_unregistration.error_response(ApiError(ErrorCode.CONTROLLER_ID_NOT_REGISTERED, "m"))
    assert (response.error_code, response.error_message) == (ErrorCode.CONTROLLER_ID_NOT_REGISTERED, "m")
    assert response.encode(version=0)
