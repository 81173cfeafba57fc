"""CreateAcls and DeleteAcls on the controller: Kafka 4.4's ``AclApis``
(no authorizer configured: SECURITY_DISABLED; the CLUSTER resource's name;
an empty name) and ``AclControlManager.createAcls`` / ``deleteAcls``
(``validateNewAcl``, ``validateFilter``, ``AclBindingFilter.matches``).

A new ACL already in the image, or repeated in the request, succeeds and
writes nothing; each other one is an AccessControlEntryRecord (v0) with a
fresh id. A filter removes every ACL it matches (RemoveAccessControlEntryRecord
v0, one per ACL even when several filters match it).
"""

from __future__ import annotations

import ipaddress
import re
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from kraft.controller.metadata_version import by_level
from kraft.controller.result import ApiError, ControllerResult, RecordAndVersion
from kraft.controller.settings import ControllerSettings
from kraft.image.model import MetadataImage, StandardAcl
from kraft.messages.generated import create_acls_request as create_req
from kraft.messages.generated import create_acls_response as create_resp
from kraft.messages.generated import delete_acls_request as delete_req
from kraft.messages.generated import delete_acls_response as delete_resp
from kraft.messages.generated.access_control_entry_record import AccessControlEntryRecord
from kraft.messages.generated.remove_access_control_entry_record import RemoveAccessControlEntryRecord
from kraft.wire.errors import ErrorCode

__all__ = ["RESOURCE_TYPES", "PATTERN_TYPES", "OPERATIONS", "PERMISSION_TYPES", "create_acls", "delete_acls",
           "validate_host_pattern"]

#: Kafka's ``ResourceType``, ``PatternType``, ``AclOperation`` and ``AclPermissionType`` codes.
RESOURCE_TYPES: Mapping[int, str] = {0: "UNKNOWN", 1: "ANY", 2: "TOPIC", 3: "GROUP", 4: "CLUSTER",
                                     5: "TRANSACTIONAL_ID", 6: "DELEGATION_TOKEN", 7: "USER"}
PATTERN_TYPES: Mapping[int, str] = {0: "UNKNOWN", 1: "ANY", 2: "MATCH", 3: "LITERAL", 4: "PREFIXED"}
OPERATIONS: Mapping[int, str] = {
    0: "UNKNOWN", 1: "ANY", 2: "ALL", 3: "READ", 4: "WRITE", 5: "CREATE", 6: "DELETE", 7: "ALTER", 8: "DESCRIBE",
    9: "CLUSTER_ACTION", 10: "DESCRIBE_CONFIGS", 11: "ALTER_CONFIGS", 12: "IDEMPOTENT_WRITE", 13: "CREATE_TOKENS",
    14: "DESCRIBE_TOKENS", 15: "TWO_PHASE_COMMIT"}
PERMISSION_TYPES: Mapping[int, str] = {0: "UNKNOWN", 1: "ANY", 2: "DENY", 3: "ALLOW"}

_UNKNOWN, _ANY, _MATCH, _LITERAL, _PREFIXED = 0, 1, 2, 3, 4
_CLUSTER = 4
_WILDCARD = "*"
_NO_AUTHORIZER = ApiError(ErrorCode.SECURITY_DISABLED, "No Authorizer is configured.")
_IPV4_CIDR = re.compile(r"(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})/(\d{1,2})")


def _code(table: Mapping[int, str], code: int) -> int:
    """``X.fromCode``: a code Kafka does not know is UNKNOWN."""
    return code if code in table else _UNKNOWN


def _ipv6_cidr_reason(host: str) -> str | None:
    """``CidrUtils``' ``SubnetUtils6``."""
    address, _, prefix = host.partition("/")
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return f"Could not parse [{address}]"
    if isinstance(parsed, ipaddress.IPv4Address) or (parsed.ipv4_mapped is not None):
        return f"Could not parse [{address}] - not an IPv6 address"
    if not prefix.isdigit() or not prefix.isascii():
        return f"Could not parse [{host}] - invalid prefix length"
    if not 0 <= int(prefix) <= 128:
        return f"Could not parse [{host}] - prefix length must be between 0 and 128"
    return None


def _ipv4_cidr_reason(host: str) -> str | None:
    """``CidrUtils``' ``SubnetUtils``: octets 0-255, then a prefix 0-32."""
    m = _IPV4_CIDR.fullmatch(host)
    if m is None:
        return f"Could not parse [{host}]"
    for octet in m.groups()[:4]:
        if int(octet) > 255:
            return f"Value [{int(octet)}] not in range [0,255]"
    if int(m.group(5)) > 32:
        return f"Value [{int(m.group(5))}] not in range [0,32]"
    return None


def validate_host_pattern(host: str, cidr_supported: bool) -> ApiError | None:
    """``AclControlManager.validateHostPattern``."""
    if not host:
        return ApiError(ErrorCode.INVALID_REQUEST, "Host pattern cannot be null or empty")
    if host == _WILDCARD or "/" not in host:
        return None
    if not cidr_supported:
        return ApiError(ErrorCode.UNSUPPORTED_VERSION,
                        "CIDR-based ACL host patterns require metadata version 4.4-IV1 or higher.")
    reason = _ipv6_cidr_reason(host) if ":" in host else _ipv4_cidr_reason(host)
    return None if reason is None else ApiError(ErrorCode.INVALID_REQUEST,
                                                f"Invalid CIDR notation '{host}': {reason}")


def _new_acl_refusal(acl: StandardAcl, cidr_supported: bool) -> ApiError | None:
    """``AclApis.handleCreateAcls``' checks, then ``AclControlManager.validateNewAcl``."""
    if acl.resource_type == _CLUSTER and acl.resource_name != "kafka-cluster":
        return ApiError(ErrorCode.INVALID_REQUEST, "The only valid name for the CLUSTER resource is kafka-cluster")
    if not acl.resource_name:
        return ApiError(ErrorCode.INVALID_REQUEST, "Invalid empty resource name")
    if acl.resource_type in (_UNKNOWN, _ANY):
        return ApiError(ErrorCode.INVALID_REQUEST, f"Invalid resourceType {RESOURCE_TYPES[acl.resource_type]}")
    if acl.pattern_type not in (_LITERAL, _PREFIXED):
        return ApiError(ErrorCode.INVALID_REQUEST, f"Invalid patternType {PATTERN_TYPES[acl.pattern_type]}")
    if acl.operation in (_UNKNOWN, _ANY):
        return ApiError(ErrorCode.INVALID_REQUEST, f"Invalid operation {OPERATIONS[acl.operation]}")
    if acl.permission_type not in (2, 3):
        return ApiError(ErrorCode.INVALID_REQUEST, f"Invalid permissionType {PERMISSION_TYPES[acl.permission_type]}")
    if ":" not in acl.principal:
        return ApiError(ErrorCode.INVALID_REQUEST, f"Could not parse principal from `{acl.principal}` (no colon is "
                                                   "present separating the principal type from the principal name)")
    return validate_host_pattern(acl.host, cidr_supported)


def _standard_acl(c: create_req.AclCreation) -> StandardAcl:
    """``CreateAclsRequest.aclBinding`` then ``StandardAcl.fromAclBinding``."""
    return StandardAcl(_code(RESOURCE_TYPES, c.resource_type), c.resource_name,
                       _code(PATTERN_TYPES, c.resource_pattern_type), c.principal, c.host,
                       _code(OPERATIONS, c.operation), _code(PERMISSION_TYPES, c.permission_type))


def _not_a_binding(acl: StandardAcl) -> bool:
    """``ResourcePattern`` and ``AccessControlEntry`` refuse ANY (and a MATCH
    pattern): ``AclApis`` then fails while building the bindings, and Kafka
    answers every creation of the request with UNKNOWN_SERVER_ERROR (no
    message: ``ApiError.fromThrowable`` of an ``IllegalArgumentException``)."""
    return (acl.resource_type == _ANY or acl.pattern_type in (_ANY, _MATCH) or acl.operation == _ANY
            or acl.permission_type == _ANY)


def _fresh_id(image: MetadataImage, taken: set[uuid.UUID], new_id: Callable[[], uuid.UUID]) -> uuid.UUID:
    """``AclControlManager.newAclId``: drawn again while it names an ACL."""
    while True:
        acl_id = new_id()
        if acl_id not in image.acls and acl_id not in taken:
            return acl_id


def create_acls(image: MetadataImage, request: create_req.CreateAclsRequest, version: int, *,
                new_id: Callable[[], uuid.UUID], settings: ControllerSettings | None = None,
                ) -> ControllerResult[create_resp.CreateAclsResponse]:
    """``AclApis.handleCreateAcls`` and ``AclControlManager.createAcls``: one
    result per creation, in the request's order. ``settings``: a controller
    without ``authorizer.class.name`` answers SECURITY_DISABLED (None: an
    authorizer is configured)."""
    del version
    if settings is not None and not settings.authorizer_class_name:
        return ControllerResult.of(create_resp.CreateAclsResponse(results=[
            create_resp.AclCreationResult(error_code=_NO_AUTHORIZER.error, error_message=_NO_AUTHORIZER.message)
            for _ in request.creations]))
    if any(_not_a_binding(_standard_acl(c)) for c in request.creations):
        return ControllerResult.of(create_resp.CreateAclsResponse(results=[
            create_resp.AclCreationResult(error_code=ErrorCode.UNKNOWN_SERVER_ERROR, error_message=None)
            for _ in request.creations]))
    cidr_supported = by_level(image.features.metadata_version or 0).is_cidr_acl_supported
    existing = set(image.acls.values())
    created: set[StandardAcl] = set()
    ids: set[uuid.UUID] = set()
    records: list[RecordAndVersion] = []
    results = []
    for creation in request.creations:
        acl = _standard_acl(creation)
        refusal = _new_acl_refusal(acl, cidr_supported)
        if refusal is not None:
            results.append(create_resp.AclCreationResult(error_code=refusal.error, error_message=refusal.message))
            continue
        if acl not in existing and acl not in created:
            created.add(acl)
            acl_id = _fresh_id(image, ids, new_id)
            ids.add(acl_id)
            records.append(RecordAndVersion(AccessControlEntryRecord(
                id=acl_id, resource_type=acl.resource_type, resource_name=acl.resource_name,
                pattern_type=acl.pattern_type, principal=acl.principal, host=acl.host, operation=acl.operation,
                permission_type=acl.permission_type), 0))
        results.append(create_resp.AclCreationResult(error_code=ErrorCode.NONE, error_message=None))
    return ControllerResult.of(create_resp.CreateAclsResponse(results=results), *records)


@dataclass(frozen=True, slots=True)
class _Filter:
    """``AclBindingFilter``: codes resolved; None matches any name, principal or host."""

    resource_type: int
    name: str | None
    pattern_type: int
    principal: str | None
    host: str | None
    operation: int
    permission_type: int

    def refusal(self) -> ApiError | None:
        """``AclControlManager.validateFilter``."""
        if self.resource_type == _UNKNOWN or self.pattern_type == _UNKNOWN:
            return ApiError(ErrorCode.INVALID_REQUEST, "Unknown patternFilter.")
        if self.operation == _UNKNOWN or self.permission_type == _UNKNOWN:
            return ApiError(ErrorCode.INVALID_REQUEST, "Unknown entryFilter.")
        return None

    def matches_pattern(self, acl: StandardAcl) -> bool:
        """``ResourcePatternFilter.matches``."""
        if self.resource_type != _ANY and self.resource_type != acl.resource_type:
            return False
        if self.pattern_type not in (_ANY, _MATCH) and self.pattern_type != acl.pattern_type:
            return False
        if self.name is None:
            return True
        if self.pattern_type in (_ANY, acl.pattern_type):
            return self.name == acl.resource_name
        if acl.pattern_type == _LITERAL:
            return self.name == acl.resource_name or acl.resource_name == _WILDCARD
        return acl.pattern_type == _PREFIXED and self.name.startswith(acl.resource_name)

    def matches(self, acl: StandardAcl) -> bool:
        """``AclBindingFilter.matches``: the pattern and ``AccessControlEntryFilter.matches``."""
        return (self.matches_pattern(acl)
                and (self.principal is None or self.principal == acl.principal)
                and (self.host is None or self.host == acl.host)
                and self.operation in (_ANY, acl.operation)
                and self.permission_type in (_ANY, acl.permission_type))


def _filter(f: delete_req.DeleteAclsFilter) -> _Filter:
    return _Filter(_code(RESOURCE_TYPES, f.resource_type_filter), f.resource_name_filter,
                   _code(PATTERN_TYPES, f.pattern_type_filter), f.principal_filter, f.host_filter,
                   _code(OPERATIONS, f.operation), _code(PERMISSION_TYPES, f.permission_type))


def _matching(acl: StandardAcl) -> delete_resp.DeleteAclsMatchingAcl:
    return delete_resp.DeleteAclsMatchingAcl(
        error_code=ErrorCode.NONE, error_message=None, resource_type=acl.resource_type,
        resource_name=acl.resource_name, pattern_type=acl.pattern_type, principal=acl.principal, host=acl.host,
        operation=acl.operation, permission_type=acl.permission_type)


def delete_acls(image: MetadataImage, request: delete_req.DeleteAclsRequest, version: int, *,
                settings: ControllerSettings | None = None) -> ControllerResult[delete_resp.DeleteAclsResponse]:
    """``AclApis.handleDeleteAcls`` and ``AclControlManager.deleteAcls``: one
    result per filter with the ACLs it matched."""
    del version
    if settings is not None and not settings.authorizer_class_name:
        return ControllerResult.of(delete_resp.DeleteAclsResponse(filter_results=[
            delete_resp.DeleteAclsFilterResult(error_code=_NO_AUTHORIZER.error, error_message=_NO_AUTHORIZER.message)
            for _ in request.filters]))
    removed: dict[uuid.UUID, RecordAndVersion] = {}
    results = []
    for raw in request.filters:
        f = _filter(raw)
        refusal = f.refusal()
        if refusal is not None:
            results.append(delete_resp.DeleteAclsFilterResult(error_code=refusal.error, error_message=refusal.message))
            continue
        matched = [(i, a) for i, a in image.acls.items() if f.matches(a)]
        for acl_id, _ in matched:
            removed.setdefault(acl_id, RecordAndVersion(RemoveAccessControlEntryRecord(id=acl_id), 0))
        results.append(delete_resp.DeleteAclsFilterResult(error_code=ErrorCode.NONE, error_message=None,
                                                          matching_acls=[_matching(a) for _, a in matched]))
    return ControllerResult.of(delete_resp.DeleteAclsResponse(filter_results=results), *removed.values())
