"""AlterUserScramCredentials on the controller: Kafka 4.4's
``ScramControlManager.alterCredentials``.

A user is altered at most once per request (by name, whatever the
mechanism): a second deletion or upsertion of the same user turns it into
DUPLICATE_RESOURCE. Results come as Kafka lists them: the deletions, the
upsertions, then the refusals, each group in ``HashMap`` order of the user
names. An upsertion carries the salted password; the record keeps the
stored and server keys derived from it (``ScramFormatter``).
"""

from __future__ import annotations

from kraft.controller.java_order import hash_map_order
from kraft.controller.metadata_version import by_level
from kraft.controller.result import ApiError, ControllerResult, RecordAndVersion
from kraft.image.model import MetadataImage
from kraft.messages.generated import alter_user_scram_credentials_request as req
from kraft.messages.generated import alter_user_scram_credentials_response as resp
from kraft.messages.generated.remove_user_scram_credential_record import RemoveUserScramCredentialRecord
from kraft.messages.generated.user_scram_credential_record import UserScramCredentialRecord
from kraft.wire.errors import ErrorCode
from kraft.wire.scram_credentials import MAX_ITERATIONS, MIN_ITERATIONS, ScramMechanism, credential_from_salted

__all__ = ["alter_user_scram_credentials"]

_TWICE = ApiError(ErrorCode.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request")
_NO_SCRAM = ApiError(ErrorCode.UNSUPPORTED_VERSION, "The current metadata.version does not support SCRAM")
_KNOWN_MECHANISMS = frozenset(m.type_id for m in ScramMechanism)


def _name_and_mechanism_refusal(name: str, mechanism: int) -> ApiError | None:
    """``validateScramUsernameAndMechanism``."""
    if not name:
        return ApiError(ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
    if mechanism not in _KNOWN_MECHANISMS:
        return ApiError(ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")
    return None


def _deletion_refusal(image: MetadataImage, d: req.ScramCredentialDeletion) -> ApiError | None:
    """``validateDeletion``."""
    refusal = _name_and_mechanism_refusal(d.name, d.mechanism)
    if refusal is None and d.name not in image.scram.get(d.mechanism, {}):
        refusal = ApiError(ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist")
    return refusal


def _upsertion_refusal(u: req.ScramCredentialUpsertion) -> ApiError | None:
    """``validateUpsertion``: both mechanisms take 4096 to 16384 iterations."""
    refusal = _name_and_mechanism_refusal(u.name, u.mechanism)
    if refusal is None and u.iterations < MIN_ITERATIONS:
        refusal = ApiError(ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
    elif refusal is None and u.iterations > MAX_ITERATIONS:
        refusal = ApiError(ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
    return refusal


def _upsert_record(u: req.ScramCredentialUpsertion) -> RecordAndVersion:
    """``finishUpsertion``: the stored and server keys from the salted password."""
    credential = credential_from_salted(ScramMechanism.from_type(u.mechanism), u.salted_password, u.salt,
                                        u.iterations)
    return RecordAndVersion(UserScramCredentialRecord(
        name=u.name, mechanism=u.mechanism, salt=u.salt, stored_key=credential.stored_key,
        server_key=credential.server_key, iterations=u.iterations), 0)


def alter_user_scram_credentials(image: MetadataImage, request: req.AlterUserScramCredentialsRequest, version: int
                                 ) -> ControllerResult[resp.AlterUserScramCredentialsResponse]:
    """``ScramControlManager.alterCredentials`` (see the module docstring)."""
    del version
    supported = by_level(image.features.metadata_version or 0).is_scram_supported
    deletions: dict[str, req.ScramCredentialDeletion] = {}
    upsertions: dict[str, req.ScramCredentialUpsertion] = {}
    errors: dict[str, ApiError] = {}
    for d in request.deletions:
        if d.name in errors:
            continue
        if deletions.pop(d.name, None) is not None:
            errors[d.name] = _TWICE
        else:
            refusal = _NO_SCRAM if not supported else _deletion_refusal(image, d)
            if refusal is None:
                deletions[d.name] = d
            else:
                errors[d.name] = refusal
    for u in request.upsertions:
        if u.name in errors:
            continue
        if deletions.pop(u.name, None) is not None or upsertions.pop(u.name, None) is not None:
            errors[u.name] = _TWICE
        else:
            refusal = _NO_SCRAM if not supported else _upsertion_refusal(u)
            if refusal is None:
                upsertions[u.name] = u
            else:
                errors[u.name] = refusal
    records = [RecordAndVersion(RemoveUserScramCredentialRecord(name=n, mechanism=deletions[n].mechanism), 0)
               for n in hash_map_order(deletions)]
    records += [_upsert_record(upsertions[n]) for n in hash_map_order(upsertions)]
    results = [resp.AlterUserScramCredentialsResult(user=n, error_code=ErrorCode.NONE, error_message=None)
               for n in [*hash_map_order(deletions), *hash_map_order(upsertions)]]
    results += [resp.AlterUserScramCredentialsResult(user=n, error_code=errors[n].error, error_message=errors[n].message)
                for n in hash_map_order(errors)]
    return ControllerResult.of(resp.AlterUserScramCredentialsResponse(results=results), *records)
