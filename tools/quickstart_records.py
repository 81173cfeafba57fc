"""The metadata records ``kraft quickstart``'s leader writes: what a Kafka
controller would write for a small cluster, through the records layer's
codecs, so ``kraft observe``, ``kraft shell``, ``kraft dump-log
--cluster-metadata-decoder`` and the Spark source show a real image.

Once per cluster (whichever voter leads first, or the next leader if the
first died before it committed them), in one batch as Kafka's controller
writes a topic creation atomically:

* the bootstrap records of the node's metadata log directory (either layout)
  (``FeatureLevelRecord`` metadata.version, ...), as Kafka's
  ``QuorumController`` appends them when it first becomes active;
* two topics, ``quickstart-events`` (3 partitions) and ``quickstart-orders``
  (1 partition), each a ``TopicRecord`` and one ``PartitionRecord`` per
  partition, replicas spread over the voters' ids;
* a ``ConfigRecord``: ``retention.ms`` of ``quickstart-events``.

Then, while it leads, one ``ConfigRecord`` per demo record:
``kraft.quickstart.sequence`` of ``quickstart-events`` set to
``node=N epoch=E seq=S`` (a kraft key, named so; each value distinct, so the
quickstart can check every committed record is on every voter at the same
offset).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["EVENTS_TOPIC", "TOPICS", "SEQUENCE_KEY", "setup_records", "event_record"]

EVENTS_TOPIC = "quickstart-events"
#: name -> partitions
TOPICS = {EVENTS_TOPIC: 3, "quickstart-orders": 1}
SEQUENCE_KEY = "kraft.quickstart.sequence"
_TOPIC = 2  # ConfigResource.Type.TOPIC


def _bootstrap_records(metadata_log_dir: Path) -> list[Any]:
    from kraft.records.bootstrap import read_bootstrap_metadata

    return read_bootstrap_metadata(metadata_log_dir)


def setup_records(metadata_log_dir: Path, replica_ids: Sequence[int]) -> list[bytes]:
    """The once-per-cluster records, framed (one append: one batch)."""
    from kraft.messages.generated.config_record import ConfigRecord
    from kraft.messages.generated.partition_record import PartitionRecord
    from kraft.messages.generated.topic_record import TopicRecord
    from kraft.records.metadata import encode_metadata_record

    ids = sorted(replica_ids)
    messages: list[Any] = list(_bootstrap_records(metadata_log_dir))
    for name, count in TOPICS.items():
        topic_id = uuid.uuid4()
        messages.append(TopicRecord(name=name, topic_id=topic_id))
        for partition in range(count):
            replicas = ids[partition % len(ids):] + ids[:partition % len(ids)]
            messages.append(PartitionRecord(partition_id=partition, topic_id=topic_id, replicas=replicas,
                                            isr=list(replicas), leader=replicas[0], leader_epoch=0,
                                            partition_epoch=0))
    messages.append(ConfigRecord(resource_type=_TOPIC, resource_name=EVENTS_TOPIC, name="retention.ms",
                                 value=str(24 * 60 * 60 * 1000)))
    # The bootstrap records at version 0, as Kafka's BootstrapMetadata
    # carries them; the others at their highest version.
    bootstrap = len(messages) - sum(TOPICS.values()) - len(TOPICS) - 1
    return [encode_metadata_record(m, 0 if i < bootstrap else None) for i, m in enumerate(messages)]


def event_record(label: str) -> bytes:
    """One demo record: the sequence config of the events topic set to ``label``."""
    from kraft.messages.generated.config_record import ConfigRecord
    from kraft.records.metadata import encode_metadata_record

    return encode_metadata_record(ConfigRecord(resource_type=_TOPIC, resource_name=EVENTS_TOPIC,
                                               name=SEQUENCE_KEY, value=label))
