"""AlterUserScramCredentials: Kafka 4.4's ``ScramControlManager.alterCredentials``,
``validateUpsertion``, ``validateDeletion`` and ``finishUpsertion``."""

from __future__ import annotations

from typing import Any

from kraft.controller.scram_control import alter_user_scram_credentials
from kraft.image.model import MetadataImage
from kraft.messages.generated.alter_user_scram_credentials_request import (
    AlterUserScramCredentialsRequest,
    ScramCredentialDeletion,
    ScramCredentialUpsertion,
)
from kraft.messages.generated.user_scram_credential_record import UserScramCredentialRecord
from kraft.wire.errors import ErrorCode
from kraft.wire.scram import ScramMechanism, make_credential, salted_password
from tests.controller.images import features, replay

SHA256, SHA512 = 1, 2
SALT = b"0123456789abcdef"


def _image(mv: int = 33) -> MetadataImage:
    return replay([*features(mv), UserScramCredentialRecord(name="bob", mechanism=SHA256, salt=SALT,
                                                            stored_key=b"s", server_key=b"k", iterations=4096)])


def _up(name: str, mechanism: int = SHA256, iterations: int = 4096) -> ScramCredentialUpsertion:
    salted = salted_password(ScramMechanism.SCRAM_SHA_256, "secret", SALT, 4096)
    return ScramCredentialUpsertion(name=name, mechanism=mechanism, iterations=iterations, salt=SALT,
                                    salted_password=salted)


def _alter(image: MetadataImage, deletions: tuple[tuple[str, int], ...] | list[tuple[str, int]] = (),
           upsertions: tuple[Any, ...] | list[Any] = ()) -> Any:
    request = AlterUserScramCredentialsRequest(
        deletions=[ScramCredentialDeletion(name=n, mechanism=m) for n, m in deletions], upsertions=list(upsertions))
    return alter_user_scram_credentials(image, request, 0)


def _results(result: Any) -> list[tuple[str, int, str | None]]:
    return [(r.user, r.error_code, r.error_message) for r in result.response.results]


def test_upsert_derives_stored_and_server_keys() -> None:
    # finishUpsertion: ScramFormatter.storedKey(clientKey(salted)) and serverKey(salted).
    result = _alter(_image(), upsertions=[_up("alice")])
    assert _results(result) == [("alice", 0, None)]
    expected = make_credential(ScramMechanism.SCRAM_SHA_256, "secret", iterations=4096, salt=SALT)
    (record,) = result.records
    assert (record.message.stored_key, record.message.server_key, record.version) == (
        expected.stored_key, expected.server_key, 0)
    assert replay(result.records, _image()).scram[SHA256]["alice"].iterations == 4096


def test_delete_existing_and_missing() -> None:
    # validateDeletion: RESOURCE_NOT_FOUND for a credential the image lacks; deletions listed first.
    result = _alter(_image(), deletions=[("bob", SHA256), ("bob2", SHA256)], upsertions=[_up("carol")])
    assert _results(result) == [("bob", 0, None), ("carol", 0, None),
                                ("bob2", ErrorCode.RESOURCE_NOT_FOUND,
                                 "Attempt to delete a user credential that does not exist")]
    assert [type(r.message).__name__ for r in result.records] == ["RemoveUserScramCredentialRecord",
                                                                 "UserScramCredentialRecord"]
    assert _alter(_image(), deletions=[("bob", SHA512)]).response.results[0].error_code == ErrorCode.RESOURCE_NOT_FOUND


def test_twice_in_one_request_is_duplicate_resource() -> None:
    # alterCredentials: the same user deleted and upserted (any mechanism) is refused, with no record.
    result = _alter(_image(), deletions=[("bob", SHA256)], upsertions=[_up("bob", SHA512)])
    assert _results(result) == [("bob", ErrorCode.DUPLICATE_RESOURCE,
                                 "A user credential cannot be altered twice in the same request")]
    assert result.records == ()
    assert _results(_alter(_image(), upsertions=[_up("x"), _up("x")]))[0][1] == ErrorCode.DUPLICATE_RESOURCE


def test_bad_upsertions() -> None:
    # validateUpsertion and validateScramUsernameAndMechanism.
    result = _alter(_image(), upsertions=[_up("a", iterations=4095), _up("b", iterations=16385), _up("", SHA256),
                                          _up("c", 7)])
    assert sorted(_results(result)) == [
        ("", ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"),
        ("a", ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
        ("b", ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"),
        ("c", ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")]


def test_metadata_version_without_scram() -> None:
    # MetadataVersion.isScramSupported: from 3.5-IV2 (11).
    assert _results(_alter(_image(mv=10), upsertions=[_up("a")])) == [
        ("a", ErrorCode.UNSUPPORTED_VERSION, "The current metadata.version does not support SCRAM")]
