"""``kraft bench chaos --load kafka``: Kafka's VerifiableProducer's events
become the run's history, and the checker holds what VerifiableConsumer
read back to it; the run itself, on real Kafka 4.4.0 brokers over kraft
controllers under controller faults.

The event lines are the shapes ``org.apache.kafka.tools.VerifiableProducer``
prints (``SuccessfulSend``, ``FailedSend``, ``ToolData``) and
``VerifiableConsumer.RecordData``, as the slow run below shows them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from kraft.tools.bench.chaos.checker import chaos_ok, check_kafka_load
from kraft.tools.bench.chaos.operations import read_sent_operations
from kraft.tools.bench.chaos.verifiable_events import consumed_records, read_events, write_send_history
from tests.harness import cli
from tests.kafka.releases import require


def _success(value: int, partition: int, offset: int) -> dict[str, object]:
    return {"timestamp": 1, "name": "producer_send_success", "key": None, "value": str(value), "offset": offset,
            "topic": "chaos", "partition": partition}


def _record(value: int, partition: int, offset: int) -> dict[str, object]:
    return {"timestamp": 1, "name": "record_data", "key": None, "value": str(value), "topic": "chaos",
            "partition": partition, "offset": offset}


def _verdict(tmp_path: Path, producer: list[dict[str, object]], consumer: list[dict[str, object]]) -> dict[str, object]:
    out, history = tmp_path / "producer.jsonl", tmp_path / "client-history.jsonl"
    # A log line between the events, as a JVM may print one: no event.
    out.write_text("[2026-12-02] WARN a log line\n" + "".join(json.dumps(e) + "\n" for e in producer))
    write_send_history(out, history)
    return check_kafka_load(read_sent_operations(history), consumed_records(consumer))


def _base(result: dict[str, object]) -> dict[str, object]:
    """The keys chaos_ok reads of the whole run, as a run with sound controllers' files has them."""
    return {"lost_records": [], "out_of_order_leaders": [], "logs_disagree": {}, "two_leaders_in_an_epoch": {},
            **result}


SENT = [_success(0, 0, 0), _success(1, 1, 0), _success(2, 0, 1),
        {"timestamp": 2, "name": "shutdown_complete"},
        {"timestamp": 2, "name": "tool_data", "sent": 4, "acked": 3, "target_throughput": 50, "avg_throughput": 1.0}]


def test_every_acknowledged_value_read_back_at_its_offset_passes(tmp_path: Path) -> None:
    # Value 3 was sent (tool_data's sent 4) and never answered: info, here not read.
    result = _verdict(tmp_path, SENT, [_record(0, 0, 0), _record(2, 0, 1), _record(1, 1, 0), _record(1, 1, 0)])
    assert result["operations"] == {"invoked": 4, "ok": 3, "fail": 0, "info": 1}, result
    assert result["present"] == 3 and result["lost"] == 0 and result["read_back"] == 3, result
    assert result["info_not_committed"] == 1 and chaos_ok(_base(result)), result


def test_an_acknowledged_value_not_read_back_is_lost(tmp_path: Path) -> None:
    result = _verdict(tmp_path, SENT, [_record(0, 0, 0), _record(1, 1, 0)])
    assert result["lost"] == 1 and "2 (acknowledged at partition 0 offset 1, never read)" in result["lost_records"]
    assert not chaos_ok(_base(result))


def test_a_value_read_at_another_offset_than_acknowledged_is_lost(tmp_path: Path) -> None:
    result = _verdict(tmp_path, SENT, [_record(0, 0, 0), _record(1, 1, 0), _record(2, 2, 0)])
    assert result["lost"] == 1 and "read at [(2, 0)]" in str(result["lost_records"]), result


def test_a_value_never_sent_is_invented(tmp_path: Path) -> None:
    result = _verdict(tmp_path, SENT, [_record(0, 0, 0), _record(1, 1, 0), _record(2, 0, 1), _record(9, 0, 2)])
    assert result["invented"] == ["9"] and not chaos_ok(_base(result)), result


def test_a_value_at_two_offsets_was_written_twice(tmp_path: Path) -> None:
    result = _verdict(tmp_path, SENT, [_record(0, 0, 0), _record(1, 1, 0), _record(2, 0, 1), _record(2, 0, 2)])
    assert result["applied_twice"] == {"brokers": ["2"]} and not chaos_ok(_base(result)), result


def test_a_partition_out_of_send_order_fails(tmp_path: Path) -> None:
    sent = [_success(0, 0, 1), _success(1, 0, 0)]
    result = _verdict(tmp_path, sent, [_record(1, 0, 0), _record(0, 0, 1)])
    assert result["lost"] == 0 and result["out_of_order_partitions"] == [0] and not chaos_ok(_base(result)), result


def test_a_send_error_is_an_unknown_outcome_either_way(tmp_path: Path) -> None:
    """Sender fails an expired batch the broker may have appended: the error says nothing certain."""
    error = {"timestamp": 1, "name": "producer_send_error", "exception": "class org.apache.kafka.common.errors."
             "TimeoutException", "message": "Expiring 1 record(s)", "topic": "chaos", "key": None, "value": "1"}
    result = _verdict(tmp_path, [_success(0, 0, 0), error], [_record(0, 0, 0), _record(1, 0, 1)])
    assert result["operations"] == {"invoked": 2, "ok": 1, "fail": 0, "info": 1}, result
    assert result["info_committed"] == 1 and not result["invented"] and chaos_ok(_base(result)), result


def test_without_kafkas_jars_the_kafka_load_is_refused_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from kraft.tools import kafka_jars

    monkeypatch.setattr(kafka_jars, "LOCATORS", [])
    done = cli.invoke(["bench", "chaos", "--load", "kafka", "--nemesis", "kill"])
    assert done.exit_code == 1, done.output
    assert done.output.strip().splitlines()[-1].startswith("Error: --load kafka needs real Kafka: no Kafka jars")
    assert "Traceback" not in done.output


def test_the_kafka_load_refuses_a_partition_nemesis() -> None:
    done = cli.invoke(["bench", "chaos", "--load", "kafka", "--nemesis", "kill,cut"])
    assert done.exit_code == 2, done.output
    assert "--load kafka cannot run nemesis cut (Kafka's brokers and clients run on 127.0.0.1" in done.output
    assert "use --load client" in done.output


def _kafka_block() -> str:
    """Where docs/concepts/durability.md's ``--load kafka`` example is (``page:line``)."""
    from tests.test_readme import readme_blocks

    [where] = [w for w, lang, code in readme_blocks() if lang == "console" and "--load kafka" in code]
    return where


@pytest.mark.slow
def test_bench_chaos_on_a_kafka_cluster_loses_no_acknowledged_record(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The page's example, as written, on Kafka 4.4.0: three brokers on
    three kraft controllers, VerifiableProducer sending while the
    controllers are killed and paused; every acknowledged record is read
    back by VerifiableConsumer."""
    from tests.test_readme import readme_block, run_example

    release = require("4.4.0")
    monkeypatch.setenv("KRAFT_KAFKA_LIBS", str(release.home / "lib"))
    out = run_example("console", readme_block(_kafka_block()), tmp_path)
    print(out)

    def figure(label: str) -> int:
        found = re.search(rf"^{re.escape(label)}\s+(\d+)", out, re.MULTILINE)
        assert found is not None, f"no {label!r} line in: {out}"
        return int(found.group(1))

    assert "Kafka's VerifiableProducer sending 50 records/s to 3 Kafka 4.4.0 brokers" in out, out
    faults = re.search(r"^faults applied: kill (\d+), pause (\d+)", out, re.MULTILINE)
    assert faults is not None and int(faults.group(1)) + int(faults.group(2)) >= 1, out
    acknowledged = figure("acknowledged as committed")
    assert acknowledged > 0 and figure("present on every node") == acknowledged and figure("lost") == 0, out
    assert figure("read back by VerifiableConsumer") >= acknowledged, out
    assert "OK: every record the brokers acknowledged was read back" in out
