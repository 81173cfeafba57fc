"""Kafka's system-test clients, ``VerifiableProducer`` and
``VerifiableConsumer`` (org.apache.kafka.tools), as background processes
writing their JSON event lines to a file, and the check Kafka's system tests
make of them (kafkatest.utils.util.validate_delivery).

The producer sends increasing integers and prints a ``producer_send_success``
event for each one the brokers acknowledged; the consumer (``--verbose``)
prints a ``record_data`` event for each record it consumed and a
``records_consumed`` event per poll. As in kafkatest's ``EndToEndTest``, a
value is a message's identity: every acknowledged value must have been
consumed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.kafka.processes import TOOL_LOG4J, Process, java_args, main_class
from tests.kafka.releases import KafkaRelease

__all__ = ["Delivery", "VerifiableClient", "delivery", "verifiable_consumer", "verifiable_producer"]

#: What kafkatest's VerifiableProducer service writes for an idempotent
#: producer (verifiable_producer.py, enable_idempotence): Kafka's own retries
#: ride out every failure the tests drive.
IDEMPOTENT_PRODUCER = {"enable.idempotence": "true", "max.in.flight.requests.per.connection": 5,
                       "retries": 1000000, "acks": "all", "request.timeout.ms": 30000}


class VerifiableClient(Process):
    """A Verifiable client's JVM; its events are the JSON lines of its output."""

    def events(self, name: str | None = None) -> Iterator[dict[str, object]]:
        """The events printed so far (only those called ``name``, if given).
        A line a JVM is still writing, or a warning on stderr, is no event."""
        if not self.out.exists():
            return
        for line in self.out.read_text(errors="replace").splitlines():
            if not line.startswith("{"):
                continue
            try:
                event = json.loads(line)
            except ValueError:
                continue  # the last line, half written
            if name is None or event.get("name") == name:
                yield event

    def values(self, name: str) -> list[int]:
        """The integer values of the ``name`` events (``producer_send_success``, ``record_data``)."""
        return [int(str(e["value"])) for e in self.events(name)]


def _client(release: KafkaRelease, tool: str, folder: Path, props: dict[str, object],
            args: list[str]) -> VerifiableClient:
    folder.mkdir(parents=True, exist_ok=True)
    log4j = folder / "tools-log4j2.properties"
    log4j.write_text(TOOL_LOG4J)
    config = folder / "client.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    # --producer.config / --consumer.config: 4.0 has no --command-config yet
    # (4.4 keeps the old option, deprecated).
    option = "--producer.config" if tool == "VerifiableProducer" else "--consumer.config"
    return VerifiableClient(f"{tool} ({release.version})",
                            java_args(release, log4j, main_class(release, tool), *args, option, str(config)),
                            folder)


def verifiable_producer(release: KafkaRelease, folder: Path, bootstrap: str, topic: str,
                        throughput: int) -> VerifiableClient:
    """kafkatest's ``VerifiableProducer(enable_idempotence=True)``: acks=-1,
    idempotent, ``throughput`` messages a second until stopped."""
    return _client(release, "VerifiableProducer", folder, dict(IDEMPOTENT_PRODUCER),
                   ["--bootstrap-server", bootstrap, "--topic", topic, "--throughput", str(throughput),
                    "--acks", "-1"])


def verifiable_consumer(release: KafkaRelease, folder: Path, bootstrap: str, topic: str,
                        group: str) -> VerifiableClient:
    """kafkatest's ``VerifiableConsumer`` with ``on_record_consumed`` (so
    ``--verbose``): the classic group protocol, committing after each poll,
    from the earliest offset."""
    return _client(release, "VerifiableConsumer", folder, {},
                   ["--bootstrap-server", bootstrap, "--topic", topic, "--group-id", group, "--verbose",
                    "--reset-policy", "earliest"])


@dataclass(frozen=True)
class Delivery:
    """What kafkatest's validate_delivery finds."""

    acked: int
    consumed: int
    #: Acknowledged values never consumed: lost messages.
    missing: frozenset[int]
    #: Values at two offsets of one partition: a duplicate an idempotent producer must not write.
    duplicated: frozenset[int]

    def __str__(self) -> str:
        return (f"{self.acked} acknowledged, {self.consumed} consumed, {len(self.missing)} missing "
                f"{sorted(self.missing)[:20]}, {len(self.duplicated)} written twice {sorted(self.duplicated)[:20]}")


def delivery(producer: VerifiableClient, consumer: VerifiableClient) -> Delivery:
    """validate_delivery(acked, consumed, idempotence_enabled=True): every
    acknowledged value consumed, none written twice. A record the consumer
    read twice at the same offset (it re-reads from the last commit after a
    rebalance, as kafkatest's consumer may) is one record: duplicates are
    counted in the log (two offsets), not in the reading."""
    acked = set(producer.values("producer_send_success"))
    at: dict[int, set[tuple[int, int]]] = {}
    for event in consumer.events("record_data"):
        where = (int(str(event["partition"])), int(str(event["offset"])))
        at.setdefault(int(str(event["value"])), set()).add(where)
    return Delivery(len(acked), len(at), frozenset(acked - set(at)),
                    frozenset(v for v, places in at.items() if len(places) > 1))
