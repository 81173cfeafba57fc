"""``kraft bench chaos --load kafka``: a real Kafka cluster on the chaos
run's kraft controllers, its load Kafka's own system-test clients.

The voters run Kafka's controller (``kraft.controller=true``, formatted for
the jars' release); three real Kafka brokers from the released jars
(:mod:`kraft.tools.kafka_brokers`, as the quickstart starts them) register
with them; Kafka's ``TopicCommand`` creates a topic of 3 partitions,
replication factor 3, ``min.insync.replicas=2`` (kafkatest's
``ReplicationTest`` topic); ``VerifiableProducer`` (acks=-1, idempotent, as
kafkatest's ``VerifiableProducer(enable_idempotence=True)``) sends
``--append-rate`` values a second while the faults hit the controllers.

At the end the producer stops (SIGTERM: its shutdown hook closes it, every
send answered), its events become the run's history
(:mod:`.verifiable_events`), and ``VerifiableConsumer`` reads the topic from
the earliest offset until it has every acknowledged value (or a bound
passes); :func:`~kraft.tools.bench.chaos.checker.check_kafka_load` judges
what it read. The producer's ``producer_send_success`` lines are the run's
liveness signal.
"""

from __future__ import annotations

import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kraft.tools.bench.chaos.checker import check_kafka_load
from kraft.tools.bench.chaos.operations import appended_lines, read_sent_operations
from kraft.tools.bench.chaos.segments import NodeFiles
from kraft.tools.bench.chaos.verifiable_events import (consumed_records, count_events, read_events,
                                                        write_send_history)
from kraft.tools.kafka_brokers import KafkaBroker, KafkaJars, file_log4j

__all__ = ["BROKER_IDS", "KafkaLoad", "PARTITIONS", "TOPIC"]

BROKER_IDS = (101, 102, 103)
TOPIC = "chaos"
#: kafkatest's ReplicationTest topic: 3 partitions, 3 replicas, 2 in sync for acks=all.
PARTITIONS, REPLICATION_FACTOR, MIN_ISR = 3, 3, 2
#: What kafkatest's VerifiableProducer writes with enable_idempotence: the
#: producer's own retries ride out a broker that waits on its controller.
PRODUCER_CONFIG = {"enable.idempotence": "true", "max.in.flight.requests.per.connection": 5,
                   "retries": 1000000, "acks": "all", "request.timeout.ms": 30000}
#: The tools log to their own file: their stdout holds the JSON events alone.
TOOL_LOG4J = file_log4j("tool.log", "WARN")
#: Broker start, topic creation, the read back: each gives up after this.
BOUND_S = 180.0


class KafkaLoadError(Exception):
    """A broker or a tool did not come up: the run cannot go on."""


@dataclass
class KafkaLoad:
    """The brokers and the Verifiable clients of one run, in ``root``."""

    root: Path
    jars: KafkaJars
    cluster_id: str
    #: ``controller.quorum.voters`` of the chaos run's controllers.
    voters: str
    ports: list[int]
    rate: float
    brokers: dict[int, KafkaBroker] = field(default_factory=dict)
    producer: subprocess.Popen[bytes] | None = None
    consumer: subprocess.Popen[bytes] | None = None
    read_pos: int = 0
    #: Set by :meth:`close`: a start still under way in its thread (the run
    #: was interrupted) must start nothing more.
    closed: bool = False

    def __post_init__(self) -> None:
        for node_id, port in zip(BROKER_IDS, self.ports):
            broker = KafkaBroker(self.jars, node_id, port, self.root / f"broker-{node_id}",
                                 cluster_id=self.cluster_id, voters=self.voters,
                                 replication_factor=REPLICATION_FACTOR)
            with broker.config.open("a") as f:  # the later key wins in a properties file
                f.write(f"min.insync.replicas={MIN_ISR}\ndefault.replication.factor={REPLICATION_FACTOR}\n")
            self.brokers[node_id] = broker
        self.tools = self.root / "kafka-tools"
        self.tools.mkdir(parents=True, exist_ok=True)
        (self.tools / "log4j2.properties").write_text(TOOL_LOG4J)

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{b.port}" for b in self.brokers.values())

    @property
    def history(self) -> Path:
        return self.root / "client-history.jsonl"

    @property
    def producer_out(self) -> Path:
        return self.root / "producer.jsonl"

    @property
    def consumer_out(self) -> Path:
        return self.root / "consumer.jsonl"

    def _command(self, simple_name: str, *args: str) -> list[str]:
        return self.jars.command(self.jars.main_class(simple_name), *args, log4j=self.tools / "log4j2.properties",
                                 logs_dir=self.tools)

    def _spawn(self, out: Path, simple_name: str, *args: str) -> subprocess.Popen[bytes]:
        with out.open("ab") as f:
            return subprocess.Popen(self._command(simple_name, *args), stdout=f, stderr=subprocess.STDOUT)

    # --- the run's load interface (as :class:`~.client_load.ClientLoad`'s) ---------------

    def start(self) -> None:
        """Format and start the brokers (the controllers run), create the topic, start the producer."""
        try:
            with ThreadPoolExecutor(len(self.brokers)) as pool:
                list(pool.map(lambda b: b.format(), self.brokers.values()))
            for broker in self.brokers.values():
                broker.start()
            for broker in self.brokers.values():
                broker.wait_started(BOUND_S)
        except RuntimeError as e:
            raise KafkaLoadError(str(e)) from None
        self._create_topic()
        if self.closed:
            raise KafkaLoadError("stopped while starting")
        config = self.tools / "producer.properties"
        config.write_text("".join(f"{k}={v}\n" for k, v in PRODUCER_CONFIG.items()))
        # --producer.config: 4.0 has no --command-config yet (4.4 keeps the old option, deprecated).
        self.producer = self._spawn(self.producer_out, "VerifiableProducer", "--bootstrap-server", self.bootstrap,
                                    "--topic", TOPIC, "--throughput", f"{max(1, round(self.rate))}",
                                    "--acks", "-1", "--producer.config", str(config))

    def _create_topic(self) -> None:
        """Kafka's ``kafka-topics.sh --create``, asked again while a broker is still registering."""
        deadline = time.monotonic() + BOUND_S
        said = ""
        while time.monotonic() < deadline and not self.closed:
            done = subprocess.run(self._command("TopicCommand", "--bootstrap-server", self.bootstrap, "--create",
                                                "--if-not-exists", "--topic", TOPIC, "--partitions", str(PARTITIONS),
                                                "--replication-factor", str(REPLICATION_FACTOR)),
                                  capture_output=True, text=True, timeout=BOUND_S)
            if done.returncode == 0:
                return
            said = ((done.stderr or done.stdout).strip().splitlines() or [f"exit code {done.returncode}"])[-1]
            time.sleep(1)
        raise KafkaLoadError(f"kafka-topics --create --topic {TOPIC} failed for {BOUND_S:.0f} s: {said}")

    def new_oks(self) -> int:
        """How many sends the brokers acknowledged since the last call."""
        lines, self.read_pos = appended_lines(self.producer_out, self.read_pos)
        return count_events(lines, "producer_send_success")

    def stop(self, timeout_s: float = 60.0) -> int | None:
        """Stop the producer (SIGTERM), write the history, read the topic
        back, stop the consumer and the brokers; the producer's exit code."""
        code = _stop(self.producer, timeout_s)
        if self.producer is None:
            return None
        write_send_history(self.producer_out, self.history)
        self._read_back()
        for broker in self.brokers.values():
            broker.stop(timeout_s)
        return code

    def _read_back(self) -> None:
        """VerifiableConsumer from the earliest offset, until it read every acknowledged value."""
        acked = {(int(e["partition"]), int(e["offset"])) for e in read_events(self.producer_out, "producer_send_success")}
        self.consumer = self._spawn(self.consumer_out, "VerifiableConsumer", "--bootstrap-server", self.bootstrap,
                                    "--topic", TOPIC, "--group-id", f"chaos-{self.cluster_id[:8]}", "--verbose",
                                    "--reset-policy", "earliest")
        deadline = time.monotonic() + BOUND_S
        while time.monotonic() < deadline and self.consumer.poll() is None:
            read = {(p, o) for p, o, _ in consumed_records(read_events(self.consumer_out))}
            if acked <= read:
                time.sleep(2.0)  # a little more: a record past the last acknowledged one shows too
                break
            time.sleep(1.0)
        _stop(self.consumer, 30.0)

    def verdict(self, files: dict[int, NodeFiles], voters: set[int]) -> dict[str, Any]:
        """The producer's history against what the consumer read (the controllers' files: :func:`.check`)."""
        del files, voters
        return check_kafka_load(read_sent_operations(self.history),
                                consumed_records(read_events(self.consumer_out)))

    def close(self) -> None:
        """kill -9 of whatever still runs (every way out of the run)."""
        self.closed = True
        for proc in (self.producer, self.consumer):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
        for broker in self.brokers.values():
            broker.kill()


def _stop(proc: subprocess.Popen[bytes] | None, timeout_s: float) -> int | None:
    """SIGTERM (a Verifiable client's shutdown hook closes it), then kill -9."""
    if proc is None:
        return None
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode
