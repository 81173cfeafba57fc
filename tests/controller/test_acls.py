"""CreateAcls and DeleteAcls: Kafka 4.4's ``AclApis.handleCreateAcls`` /
``handleDeleteAcls``, ``AclControlManager.createAcls`` / ``validateNewAcl`` /
``validateHostPattern`` / ``deleteAcls`` and ``ResourcePatternFilter.matches``.
CIDR messages are what the 4.4.0 jars' ``CidrUtils.validate`` answers."""

from __future__ import annotations

import itertools
import uuid
from typing import Any

import pytest

from kraft.controller import acls
from kraft.controller.settings import ControllerSettings
from kraft.image.model import MetadataImage
from kraft.messages.generated.access_control_entry_record import AccessControlEntryRecord
from kraft.messages.generated.create_acls_request import AclCreation, CreateAclsRequest
from kraft.messages.generated.delete_acls_request import DeleteAclsFilter, DeleteAclsRequest
from kraft.wire.errors import ErrorCode
from tests.controller.images import features, replay

TOPIC, CLUSTER, LITERAL, PREFIXED, ANY, MATCH, READ, WRITE, ALLOW, DENY = 2, 4, 3, 4, 1, 2, 3, 4, 3, 2


def _ids() -> Any:
    counter = itertools.count(1)
    return lambda: uuid.UUID(int=next(counter))


def _acl(name: str = "t", pattern: int = LITERAL, principal: str = "User:alice", host: str = "*",
         operation: int = READ, rtype: int = TOPIC, permission: int = ALLOW) -> AclCreation:
    return AclCreation(resource_type=rtype, resource_name=name, resource_pattern_type=pattern, principal=principal,
                       host=host, operation=operation, permission_type=permission)


def _create(image: MetadataImage, *creations: AclCreation, new_id: Any = None) -> Any:
    return acls.create_acls(image, CreateAclsRequest(creations=list(creations)), 3, new_id=new_id or _ids())


def _errors(result: Any) -> list[tuple[int, str | None]]:
    return [(r.error_code, r.error_message) for r in result.response.results]


def _with_acls(*records: AccessControlEntryRecord, mv: int = 33) -> MetadataImage:
    return replay([*features(mv), *records])


def _record(i: int, name: str, pattern: int = LITERAL, operation: int = READ) -> AccessControlEntryRecord:
    return AccessControlEntryRecord(id=uuid.UUID(int=100 + i), resource_type=TOPIC, resource_name=name,
                                    pattern_type=pattern, principal="User:alice", host="*", operation=operation,
                                    permission_type=ALLOW)


def test_create_writes_one_record_per_new_acl() -> None:
    # createAcls: a duplicate in the request or an existing ACL succeeds with no record.
    image = _with_acls(_record(1, "old"))
    result = _create(image, _acl("t"), _acl("t"), _acl("old"), _acl("u", operation=WRITE))
    assert _errors(result) == [(0, None)] * 4
    assert [(r.message.resource_name, r.message.id, r.version) for r in result.records] == [
        ("t", uuid.UUID(int=1), 0), ("u", uuid.UUID(int=2), 0)]
    assert replay(result.records, image).acls[uuid.UUID(int=2)].operation == WRITE


def test_new_id_is_drawn_again_when_taken() -> None:
    # AclControlManager.newAclId: loops while the id names an ACL.
    image = _with_acls(_record(1, "old"))
    draws = iter([uuid.UUID(int=101), uuid.UUID(int=5)])
    result = _create(image, _acl("t"), new_id=lambda: next(draws))
    assert result.records[0].message.id == uuid.UUID(int=5)


@pytest.mark.parametrize(("creation", "error", "message"), [
    (_acl(rtype=CLUSTER, name="x"), ErrorCode.INVALID_REQUEST,
     "The only valid name for the CLUSTER resource is kafka-cluster"),
    (_acl(name=""), ErrorCode.INVALID_REQUEST, "Invalid empty resource name"),
    (_acl(rtype=42), ErrorCode.INVALID_REQUEST, "Invalid resourceType UNKNOWN"),
    (_acl(principal="alice"), ErrorCode.INVALID_REQUEST,
     "Could not parse principal from `alice` (no colon is present separating the principal type from the "
     "principal name)"),
    (_acl(host=""), ErrorCode.INVALID_REQUEST, "Host pattern cannot be null or empty"),
    (_acl(host="10.0.0.0/33"), ErrorCode.INVALID_REQUEST,
     "Invalid CIDR notation '10.0.0.0/33': Value [33] not in range [0,32]"),
    (_acl(host="256.0.0.0/8"), ErrorCode.INVALID_REQUEST,
     "Invalid CIDR notation '256.0.0.0/8': Value [256] not in range [0,255]"),
    (_acl(host="10.0.0/8"), ErrorCode.INVALID_REQUEST, "Invalid CIDR notation '10.0.0/8': Could not parse [10.0.0/8]"),
    (_acl(host="::1/129"), ErrorCode.INVALID_REQUEST,
     "Invalid CIDR notation '::1/129': Could not parse [::1/129] - prefix length must be between 0 and 128"),
    (_acl(host="zz::/64"), ErrorCode.INVALID_REQUEST, "Invalid CIDR notation 'zz::/64': Could not parse [zz::]"),
])
def test_validate_new_acl(creation: AclCreation, error: int, message: str) -> None:
    result = _create(_with_acls(), creation)
    assert _errors(result) == [(error, message)] and result.records == ()


@pytest.mark.parametrize("bad", [_acl(rtype=ANY), _acl(pattern=MATCH), _acl(pattern=ANY), _acl(operation=ANY),
                                 _acl(permission=ANY)])
def test_any_fails_the_whole_request(bad: AclCreation) -> None:
    # ResourcePattern / AccessControlEntry throw IllegalArgumentException for ANY in AclApis.handleCreateAcls;
    # CreateAclsRequest.getErrorResponse answers every creation with ApiError.fromThrowable: no message.
    result = _create(_with_acls(), _acl("fine"), bad)
    assert _errors(result) == [(ErrorCode.UNKNOWN_SERVER_ERROR, None)] * 2 and result.records == ()


def test_cidr_hosts_need_metadata_version_4_4_iv1() -> None:
    # validateHostPattern: MetadataVersion.isCidrAclSupported.
    assert _errors(_create(_with_acls(mv=31), _acl(host="10.0.0.0/8"))) == [
        (ErrorCode.UNSUPPORTED_VERSION, "CIDR-based ACL host patterns require metadata version 4.4-IV1 or higher.")]
    assert _errors(_create(_with_acls(mv=32), _acl(host="10.0.0.0/8"), _acl(host="fe80::/10"))) == [(0, None)] * 2


def test_no_authorizer_is_security_disabled() -> None:
    # AclApis: no authorizer.class.name.
    result = acls.create_acls(_with_acls(), CreateAclsRequest(creations=[_acl()]), 3, new_id=_ids(),
                              settings=ControllerSettings(node_id=1))
    assert _errors(result) == [(ErrorCode.SECURITY_DISABLED, "No Authorizer is configured.")]


def _delete(image: MetadataImage, *filters: DeleteAclsFilter) -> Any:
    return acls.delete_acls(image, DeleteAclsRequest(filters=list(filters)), 3)


def _f(name: str | None = None, pattern: int = ANY, rtype: int = ANY, operation: int = ANY) -> DeleteAclsFilter:
    return DeleteAclsFilter(resource_type_filter=rtype, resource_name_filter=name, pattern_type_filter=pattern,
                            principal_filter=None, host_filter=None, operation=operation, permission_type=ANY)


def names(result: Any) -> list[list[str]]:
    return [[m.resource_name for m in r.matching_acls] for r in result.response.filter_results]


def test_delete_filters_match_as_resource_pattern_filter() -> None:
    # ResourcePatternFilter.matches: ANY names exactly; MATCH takes literal, wildcard and prefixes.
    image = _with_acls(_record(1, "foo"), _record(2, "*"), _record(3, "fo", PREFIXED), _record(4, "bar"))
    assert names(_delete(image, _f("foo", ANY))) == [["foo"]]
    assert names(_delete(image, _f("foo", MATCH))) == [["foo", "*", "fo"]]
    assert names(_delete(image, _f(None, PREFIXED))) == [["fo"]]
    result = _delete(image, _f("foo", MATCH), _f("foo", LITERAL))
    assert [r.message.id for r in result.records] == [uuid.UUID(int=101), uuid.UUID(int=102), uuid.UUID(int=103)]
    assert all(r.version == 0 for r in result.records)
    assert len(replay(result.records, image).acls) == 1


def test_delete_unknown_filter() -> None:
    # AclControlManager.validateFilter.
    result = _delete(_with_acls(_record(1, "foo")), _f("foo", 0), _f("foo", operation=0))
    assert [(r.error_code, r.error_message) for r in result.response.filter_results] == [
        (ErrorCode.INVALID_REQUEST, "Unknown patternFilter."), (ErrorCode.INVALID_REQUEST, "Unknown entryFilter.")]
    assert result.records == ()
