"""AlterClientQuotas: Kafka 4.4's ``ClientQuotaControlManager.alterClientQuotas``,
``validateEntity``, ``configKeysForEntityType`` and ``validateQuotaKeyValue``."""

from __future__ import annotations

from typing import Any

import pytest

from kraft.controller.quotas import alter_client_quotas
from kraft.image.model import ClientQuotaEntity, MetadataImage
from kraft.messages.generated.alter_client_quotas_request import AlterClientQuotasRequest, EntityData, EntryData, OpData
from kraft.messages.generated import client_quota_record as rec
from kraft.wire.errors import ErrorCode
from tests.controller.images import features, replay


def _image() -> MetadataImage:
    return replay([*features(33), rec.ClientQuotaRecord(entity=[rec.EntityData(entity_type="user", entity_name="bob")],
                                                        key="producer_byte_rate", value=1024.0)])


def _entry(entity: dict[str, str | None], *ops: tuple[str, float | None]) -> EntryData:
    return EntryData(entity=[EntityData(entity_type=t, entity_name=n) for t, n in entity.items()],
                     ops=[OpData(key=k, value=v or 0.0, remove=v is None) for k, v in ops])


def _alter(image: MetadataImage, *entries: EntryData, validate_only: bool = False) -> Any:
    return alter_client_quotas(image, AlterClientQuotasRequest(entries=list(entries), validate_only=validate_only), 1)


def _answers(result: Any) -> list[tuple[int, str | None]]:
    return [(e.error_code, e.error_message) for e in result.response.entries]


def test_set_change_and_remove() -> None:
    # alterClientQuotaEntity: a record only when the value changes; a removal only of a set key.
    result = _alter(_image(), _entry({"user": "bob"}, ("producer_byte_rate", 1024.0), ("consumer_byte_rate", 2048.0),
                                     ("request_percentage", None)))
    assert _answers(result) == [(0, None)]
    assert [(r.message.key, r.message.value, r.message.remove, r.version) for r in result.records] == [
        ("consumer_byte_rate", 2048.0, False, 0)]
    result = _alter(_image(), _entry({"user": "bob"}, ("producer_byte_rate", None)))
    assert [(r.message.key, r.message.remove) for r in result.records] == [("producer_byte_rate", True)]
    assert replay(result.records, _image()).client_quotas == {}
    result = _alter(_image(), _entry({"user": None, "client-id": "app"}, ("request_percentage", 12.5)))
    image = replay(result.records, _image())
    assert image.client_quotas[ClientQuotaEntity.of({"user": None, "client-id": "app"})] == {"request_percentage": 12.5}
    assert _alter(_image(), _entry({"user": "x"}, ("request_percentage", 1.0)), validate_only=True).records == ()


@pytest.mark.parametrize(("entry", "message"), [
    (_entry({}, ("producer_byte_rate", 1.0)), "Invalid empty client quota entity"),
    (_entry({"group": "g"}, ("producer_byte_rate", 1.0)), "Unhandled client quota entity type: group"),
    (_entry({"user": ""}, ("producer_byte_rate", 1.0)), "Empty user not supported"),
    (_entry({"ip": "10.0.0.1", "user": "u"}, ("connection_creation_rate", 1.0)),
     "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"),
    (_entry({"ip": "no such host"}, ("connection_creation_rate", 1.0)),
     "no such host is not a valid IP or resolvable host."),
    (_entry({"ip": "10.0.0.1"}, ("producer_byte_rate", 1.0)), "Invalid configuration key producer_byte_rate"),
    (_entry({"user": "u"}, ("producer_byte_rate", 0.0)), "Quota producer_byte_rate must be greater than 0"),
    (_entry({"user": "u"}, ("producer_byte_rate", 1.5)), "producer_byte_rate cannot be a fractional value."),
    (_entry({"ip": "10.0.0.1"}, ("connection_creation_rate", 3e9)),
     "Proposed value for connection_creation_rate is too large for an INT."),
    (_entry({"user": "u"}, ("producer_byte_rate", 1.0), ("producer_byte_rate", 2.0)),
     "Ignoring duplicate entity ClientQuotaEntity(entries={user=u})"),
])
def test_refusals(entry: EntryData, message: str) -> None:
    result = _alter(_image(), entry)
    assert _answers(result) == [(ErrorCode.INVALID_REQUEST, message)] and result.records == ()


def test_ip_entity_and_default() -> None:
    # configKeysForEntityType: an ip entity takes connection_creation_rate; the default ip (null) too.
    result = _alter(_image(), _entry({"ip": None}, ("connection_creation_rate", 10.0)),
                    _entry({"ip": "::1"}, ("connection_creation_rate", 5.0)))
    assert _answers(result) == [(0, None), (0, None)] and len(result.records) == 2


def test_entity_repeated_in_request() -> None:
    # The second alteration of an entity is refused; the first one's records stay (Kafka's outputRecords).
    result = _alter(_image(), _entry({"user": "u"}, ("producer_byte_rate", 1.0)),
                    _entry({"user": "u"}, ("producer_byte_rate", 2.0)))
    assert _answers(result) == [(ErrorCode.INVALID_REQUEST, "Ignoring duplicate entity ClientQuotaEntity(entries={user=u})")]
    assert [r.message.value for r in result.records] == [1.0]


def test_answers_in_kafkas_hash_map_order() -> None:
    # alterClientQuotas' outputResults is a HashMap<ClientQuotaEntity, ApiError>; this order (and the
    # entity's own entry order) is what a JVM printed for these entities.
    result = _alter(_image(), *[_entry(e, ("request_percentage", 1.0)) for e in (
        {"user": "alice"}, {"user": "bob"}, {"client-id": "app"}, {"user": None}, {"user": "carol", "client-id": "x"})])
    assert [[(d.entity_type, d.entity_name) for d in e.entity] for e in result.response.entries] == [
        [("user", "alice")], [("client-id", "x"), ("user", "carol")], [("user", "bob")], [("client-id", "app")],
        [("user", None)]]
