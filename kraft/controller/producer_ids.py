"""AllocateProducerIds (Kafka's ``ProducerIdControlManager``): a block of
1,000 producer ids for a broker's idempotent and transactional producers.
The image keeps the next block's first id (-1 before any: the first block
starts at 0)."""

from __future__ import annotations

from kraft.controller.replica_checks import check_broker_epoch
from kraft.controller.result import ApiError, ControllerResult, RecordAndVersion
from kraft.image.model import MetadataImage
from kraft.messages.generated.allocate_producer_ids_request import AllocateProducerIdsRequest
from kraft.messages.generated.allocate_producer_ids_response import AllocateProducerIdsResponse
from kraft.messages.generated.producer_ids_record import ProducerIdsRecord
from kraft.wire.errors import ErrorCode

__all__ = ["PRODUCER_ID_BLOCK_SIZE", "allocate_producer_ids"]

#: ``ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE``.
PRODUCER_ID_BLOCK_SIZE = 1000
_INT64_MAX = 2**63 - 1


def allocate_producer_ids(image: MetadataImage, request: AllocateProducerIdsRequest
                          ) -> ControllerResult[AllocateProducerIdsResponse]:
    """``ProducerIdControlManager.generateNextProducerId``."""
    check_broker_epoch(image, request.broker_id, request.broker_epoch)
    first = max(image.producer_ids.next_producer_id, 0)
    if first > _INT64_MAX - PRODUCER_ID_BLOCK_SIZE:
        raise ApiError(ErrorCode.UNKNOWN_SERVER_ERROR, "Exhausted all producerIds as the next block's end producerId "
                       "has exceeded the int64 type limit")
    record = ProducerIdsRecord(broker_id=request.broker_id, broker_epoch=request.broker_epoch,
                               next_producer_id=first + PRODUCER_ID_BLOCK_SIZE)
    response = AllocateProducerIdsResponse(error_code=0, producer_id_start=first,
                                           producer_id_len=PRODUCER_ID_BLOCK_SIZE)
    return ControllerResult.of(response, RecordAndVersion(record, 0))
