"""``kraft bench records``: the synthesized log is valid and both readers agree."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraft.records.batch import decode_batches
from kraft.records.metadata import decode_metadata_record
from kraft.records.control import decode_control_record
from kraft.tools.bench.records import decode_with_kafka_python, decode_with_kraft, synthesize_metadata_log
from tests.harness import cli


def test_synthesized_log_is_a_valid_mixed_metadata_log(tmp_path: Path) -> None:
    log = synthesize_metadata_log(tmp_path / "00000000000000000000.log", 400_000, seed=3)
    data = log.path.read_bytes()
    assert len(data) == log.size >= 400_000
    types = set()
    next_offset = 0
    for batch, records in decode_batches(data):
        assert batch.base_offset == next_offset
        next_offset = batch.next_offset
        for record in records:
            if batch.is_control:
                types.add(decode_control_record(record).type.name)
            else:
                types.add(decode_metadata_record(record.value).type_name)
    assert next_offset == log.records
    assert {"NO_OP_RECORD", "TOPIC_RECORD", "PARTITION_RECORD", "PARTITION_CHANGE_RECORD", "LEADER_CHANGE"} <= types
    assert decode_with_kraft(data) == decode_with_kafka_python(data) == log.records


def test_bench_records_cli_prints_both_readers_and_the_ratio(tmp_path: Path) -> None:
    result = cli.invoke(["bench", "records", "--size-mb", "0.5", "--dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("synthesized ")
    assert any(line.startswith("kraft        decode:") and "MB/s" in line and "records/s" in line for line in lines)
    assert any(line.startswith("kafka-python decode:") for line in lines)
    assert lines[-1].startswith("ratio (kraft / kafka-python): ")


def test_bench_dump_log_prints_ours_the_peer_and_the_ratios(tmp_path: Path) -> None:
    """``kraft bench dump-log``: whole kraft dump-log processes (text, --json)
    next to kafka-python's decoder on the same synthesized bytes."""
    result = cli.invoke(["bench", "dump-log", "--size-mb", "0.3", "--dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    out = result.output
    for label in ("kraft dump-log (text, process)", "kraft dump-log --json (process)", "kafka-python decode (in process)"):
        line = next(line for line in out.splitlines() if line.startswith(label))
        assert "MB/s" in line and "records/s" in line and "s CPU" in line
    assert "ratio text / kafka-python:" in out and "ratio json / kafka-python:" in out
    assert (tmp_path / "00000000000000000000.log").stat().st_size >= 300_000


@pytest.mark.parametrize("option", [("--size-mb", "-1"), ("--size-mb", "0"), ("--repeat", "0")])
def test_bench_dump_log_refuses_an_empty_benchmark_as_a_usage_error(tmp_path: Path, option: tuple[str, str]) -> None:
    """issue 33: ``--size-mb -1`` benchmarked an empty log. A size that holds
    no record, or no run at all, is a usage error (exit 2, one line naming the
    option), before anything is written."""
    done = cli.run("bench", "dump-log", *option, "--dir", str(tmp_path))
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"Invalid value for '{option[0]}'" in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert done.stdout == "" and list(tmp_path.iterdir()) == []
