"""AlterClientQuotas on the controller: Kafka 4.4's
``ClientQuotaControlManager.alterClientQuotas`` (``validateEntity``,
``configKeysForEntityType``, ``validateQuotaKeyValue``) and
``AlterClientQuotasResponse.fromQuotaEntities``.

An entity is user and/or client-id, or ip alone; its keys are
``QuotaConfig``'s for that kind. A set writes a ClientQuotaRecord (v0) when
the value changes; a removal writes one (``remove``) when the key is set.
A repeated key or entity: "Ignoring duplicate entity ..." (Kafka's first
message for a repeated key is overwritten by that one).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Mapping

from kraft.controller.java_order import hash_map_order, map_hash
from kraft.controller.result import ApiError, ControllerResult, RecordAndVersion
from kraft.image.model import ClientQuotaEntity, MetadataImage
from kraft.messages.generated import alter_client_quotas_request as req
from kraft.messages.generated import alter_client_quotas_response as resp
from kraft.messages.generated import client_quota_record as rec
from kraft.wire.errors import ErrorCode

__all__ = ["USER_AND_CLIENT_QUOTAS", "IP_QUOTAS", "alter_client_quotas"]

USER, CLIENT_ID, IP = "user", "client-id", "ip"
#: ``QuotaConfig.userAndClientQuotaConfigs()`` and ``ipConfigs()``: key -> ConfigDef type.
USER_AND_CLIENT_QUOTAS: Mapping[str, str] = {"producer_byte_rate": "LONG", "consumer_byte_rate": "LONG",
                                             "request_percentage": "DOUBLE", "controller_mutation_rate": "DOUBLE"}
IP_QUOTAS: Mapping[str, str] = {"connection_creation_rate": "INT"}
_LIMITS = {"SHORT": (32767, "a SHORT"), "INT": ((1 << 31) - 1, "an INT"), "LONG": (float(1 << 63), "a LONG")}


def _entity_order(entries: Mapping[str, str | None]) -> list[str]:
    """The entity's types in its ``HashMap``'s order (``AlterClientQuotasRequest``
    sizes it by the request's entity list; repeated types are merged)."""
    return hash_map_order(entries, initial_capacity=len(entries))


def _java_map_text(entries: Mapping[str, str | None]) -> str:
    """``ClientQuotaEntity.toString``: its ``HashMap`` of entries."""
    return "ClientQuotaEntity(entries={" + ", ".join(f"{k}={entries[k]}" for k in _entity_order(entries)) + "})"


def _is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _entity_refusal(entries: Mapping[str, str | None], resolves: Callable[[str], bool]) -> ApiError | None:
    """``validateEntity`` then ``configKeysForEntityType``."""
    if not entries:
        return ApiError(ErrorCode.INVALID_REQUEST, "Invalid empty client quota entity")
    for entity_type in _entity_order(entries):
        if entity_type not in (USER, CLIENT_ID, IP):
            return ApiError(ErrorCode.INVALID_REQUEST, f"Unhandled client quota entity type: {entity_type}")
        if entries[entity_type] == "":
            return ApiError(ErrorCode.INVALID_REQUEST, f"Empty {entity_type} not supported")
    if IP in entries:
        if USER in entries or CLIENT_ID in entries:
            # Kafka's message lacks the space after "should".
            return ApiError(ErrorCode.INVALID_REQUEST, "Invalid quota entity combination, IP entity shouldnot be "
                                                       "combined with User or ClientId")
        ip = entries[IP]
        if ip is not None and not resolves(ip):
            return ApiError(ErrorCode.INVALID_REQUEST, f"{ip} is not a valid IP or resolvable host.")
    return None


def _value_refusal(keys: Mapping[str, str], key: str, value: float) -> ApiError | None:
    """``validateQuotaKeyValue``."""
    kind = keys.get(key)
    if kind is None:
        return ApiError(ErrorCode.INVALID_REQUEST, f"Invalid configuration key {key}")
    if value <= 0.0:
        return ApiError(ErrorCode.INVALID_REQUEST, f"Quota {key} must be greater than 0")
    if kind == "DOUBLE":
        return None
    limit, name = _LIMITS[kind]
    if value > limit:
        return ApiError(ErrorCode.INVALID_REQUEST, f"Proposed value for {key} is too large for {name}.")
    if abs(value % 1.0) > 1e-6:
        return ApiError(ErrorCode.INVALID_REQUEST, f"{key} cannot be a fractional value.")
    return None


def _entity_records(image: MetadataImage, entries: Mapping[str, str | None], ops: Mapping[str, float | None],
                    op_count: int, resolves: Callable[[str], bool]) -> tuple[list[RecordAndVersion], ApiError | None]:
    """``alterClientQuotaEntity``."""
    refusal = _entity_refusal(entries, resolves)
    if refusal is not None:
        return [], refusal
    keys = IP_QUOTAS if IP in entries else USER_AND_CLIENT_QUOTAS
    current = image.client_quotas.get(ClientQuotaEntity.of(dict(entries)), {})

    def record(key: str, value: float, remove: bool) -> RecordAndVersion:
        # validatedEntityMap is a HashMap<>(3).
        entity = [rec.EntityData(entity_type=t, entity_name=entries[t]) for t in hash_map_order(entries, initial_capacity=3)]
        return RecordAndVersion(rec.ClientQuotaRecord(entity=entity, key=key, value=value, remove=remove), 0)

    records = []
    for key in hash_map_order(ops, initial_capacity=op_count):
        value = ops[key]
        if value is None:
            if key in current:
                records.append(record(key, 0.0, True))
            continue
        refusal = _value_refusal(keys, key, value)
        if refusal is not None:
            return [], refusal
        if current.get(key) != value:
            records.append(record(key, value, False))
    return records, None


def alter_client_quotas(image: MetadataImage, request: req.AlterClientQuotasRequest, version: int, *,
                        host_resolves: Callable[[str], bool] = _is_ip_literal,
                        ) -> ControllerResult[resp.AlterClientQuotasResponse]:
    """``ClientQuotaControlManager.alterClientQuotas``, one answer per entity
    in Kafka's (``HashMap``) order. ``host_resolves``: Kafka's
    ``InetAddress.getByName`` for an ip entity; by default only IP literals
    pass (the controller does no I/O), the node may pass a resolver."""
    del version
    answers: dict[ClientQuotaEntity, tuple[Mapping[str, str | None], ApiError]] = {}
    records: list[RecordAndVersion] = []
    for entry in request.entries:
        entries = {e.entity_type: e.entity_name for e in entry.entity}
        entity = ClientQuotaEntity.of(entries)
        ops: dict[str, float | None] = {}
        repeated = entity in answers
        for op in entry.ops:
            repeated = repeated or op.key in ops
            ops.setdefault(op.key, None if op.remove else op.value)
        if repeated:
            answers[entity] = (entries, ApiError(ErrorCode.INVALID_REQUEST,
                                                 f"Ignoring duplicate entity {_java_map_text(entries)}"))
            continue
        new, refusal = _entity_records(image, entries, ops, len(entry.ops), host_resolves)
        records += new
        answers[entity] = (entries, refusal or ApiError(ErrorCode.NONE))
    # outputResults is a HashMap keyed by ClientQuotaEntity (whose hashCode is Objects.hash(entries)).
    order = hash_map_order(answers, lambda entity: 31 + map_hash(answers[entity][0]))
    response = resp.AlterClientQuotasResponse(entries=[
        resp.EntryData(error_code=e.error, error_message=e.message,
                       entity=[resp.EntityData(entity_type=t, entity_name=m[t]) for t in _entity_order(m)])
        for m, e in (answers[entity] for entity in order)])
    return ControllerResult.of(response, *(() if request.validate_only else records))
