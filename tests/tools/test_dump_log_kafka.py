"""``kraft dump-log`` against real Kafka 4.1.0's and 4.0.0's ``kafka-dump-log.sh``:
every output recorded in ``fixtures/real-tool-outputs/kafka-4.1.0-dump-log.jsonl``
reproduced byte for byte by default, every one of ``kafka-4.0.0-dump-log.jsonl``
with ``--kafka-version 4.0`` (``kafka.tools.DumpLogSegments.main``/``dumpLog``/
``dumpIndex``/``dumpTimeIndex``/``printControlRecord``: 4.1 decodes
LeaderChange control records), and the fast path printing the same bytes as
the record-by-record oracle on every fixture file, in both releases' forms.

How the recording was made (fixtures/README.md) decides two
transformations of our output before comparing: absolute fixture paths are
written ``fixtures:...``, and stdout was captured as text with universal
newlines, so a ``\\r`` inside a printed record value became ``\\n``. Outputs of
1 MB and more were kept as their first and last 1000 lines plus the SHA-256,
byte count and line count of the whole output; all four are checked.
"""

from __future__ import annotations

import hashlib
import io
from pathlib import Path
from typing import Any

import pytest

from kraft.tools.dump_log import run_dump
from tests import golden
from tests.conftest import fixture_path


@golden.replays("dump-log", "tests/tools/test_dump_log_kafka.py")
def replayed(record: dict[str, Any]) -> bool:
    return True  # every recorded run of both releases, in test_recorded_kafka_output_is_reproduced


def _id(version: str, run: dict[str, Any]) -> str:
    files = [a.removeprefix("fixtures:") for a in run["args"] if a.startswith("fixtures:")]
    flags = [a.removeprefix("--") for a in run["args"] if a.startswith("--") and a != "--files"]
    return version + "/" + "+".join(flags) + ":" + ",".join(files)


RUNS = [(version, run) for version in golden.VERSIONS
        for run in golden.selected(golden.name("dump-log", version), replayed)]
PARAMS = [
    pytest.param(version, run, id=_id(version, run), marks=[pytest.mark.slow] if run.get("truncated") else [])
    for version, run in RUNS
]


def _as_recorded(text: str, fixtures: Path) -> str:
    return text.replace(str(fixtures) + "/", "fixtures:").replace("\r\n", "\n").replace("\r", "\n")


def _dump(args: list[str], fixtures: Path, **kwargs: Any) -> tuple[int, str, str]:
    files = [str(fixtures / a.removeprefix("fixtures:")) for a in args if a.startswith("fixtures:")]
    out, err = io.StringIO(), io.StringIO()
    status = run_dump(
        files,
        print_data="--print-data-log" in args,
        metadata_decoder="--cluster-metadata-decoder" in args,
        out=out,
        err=err,
        **kwargs,
    )
    return status, _as_recorded(out.getvalue(), fixtures), err.getvalue()


@pytest.mark.parametrize("version,run", PARAMS)
def test_recorded_kafka_output_is_reproduced(version: str, run: dict[str, Any] | None) -> None:
    assert run is not None
    fixtures = fixture_path().resolve()
    status, stdout, stderr = _dump(run["args"], fixtures, release=golden.release(version))
    assert status == run["rc"]
    if run.get("truncated"):
        lines = stdout.split("\n")
        assert "\n".join(lines[:1000] + lines[-1000:]) == run["stdout"]
        assert len(lines) == run["stdout_full_lines"]
        assert len(stdout.encode("utf-8")) == run["stdout_full_bytes"]
        assert hashlib.sha256(stdout.encode("utf-8")).hexdigest() == run["stdout_full_sha256"]
    else:
        assert stdout == run["stdout"]
    if run["rc"] == 0:
        # Kafka prints nothing on stderr for these, e.g. no 'Non-consecutive
        # offsets' for a segment that does not start at offset 0.
        assert stderr == run["stderr"]
    else:
        # Kafka dies with a NoSuchFileException stack trace for an index
        # without its .log; we say it in one line (README: deliberate difference).
        assert "Exception" in run["stderr"]
        assert len(stderr.splitlines()) == 1
        assert ".log cannot be read" in stderr and "No such file" in stderr


def _fixture_logs() -> list[Path]:
    root = fixture_path()
    return sorted(p for p in [*root.rglob("*.log"), *root.rglob("*.checkpoint")])


def test_both_releases_are_replayed_whole() -> None:
    """Every run of both recordings is a case above: 160 each."""
    counts = {v: sum(1 for version, _ in RUNS if version == v) for v in golden.VERSIONS}
    assert counts == {"4.0.0": 160, "4.1.0": 160}


def test_leader_change_is_printed_as_each_release_prints_it() -> None:
    """``DumpLogSegments.printControlRecord``: 4.1 decodes a LeaderChange
    control record, 4.0 names its type."""
    from kraft.kafka_release import RELEASES
    from kraft.records.control import leader_change_batch

    import tempfile

    batch = leader_change_batch(base_offset=0, epoch=3, leader_id=3, voters=[1, 2, 3], granting_voters=[3, 1],
                                timestamp=1)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "00000000000000000000.log"
        path.write_bytes(batch)
        lines = {}
        for name, release in RELEASES.items():
            for fast in (True, False):
                out = io.StringIO()
                assert run_dump([str(path)], deep=True, out=out, err=io.StringIO(), release=release, fast=fast) == 0
                lines.setdefault(name, set()).add(out.getvalue().splitlines()[-1].split("headerKeys: [] ")[1])
    decoded = {'LeaderChange: {"version":0,"leaderId":3,"voters":[{"voterId":1},{"voterId":2},{"voterId":3}],'
               '"grantingVoters":[{"voterId":3},{"voterId":1}]}'}
    assert lines == {name: {"controlType: LEADER_CHANGE(2)"} if name.startswith("4.0.") else decoded
                     for name in RELEASES}


MODES = [
    pytest.param({"metadata_decoder": True}, id="cluster-metadata-decoder"),
    pytest.param({"print_data": True}, id="print-data-log"),
    pytest.param({"deep": True}, id="deep-iteration"),
    pytest.param({}, id="batches-only"),
    pytest.param({"metadata_decoder": True, "skip_record_metadata": True}, id="decoder-skip-record-metadata"),
    pytest.param({"metadata_decoder": True, "as_json": True}, id="json-decoder"),
    pytest.param({"as_json": True}, id="json-raw"),
]


def _both_paths(files: list[Path], mode: dict[str, Any]) -> None:
    from kraft.kafka_release import RELEASES

    for path in files:
        for release in RELEASES.values():
            outs = []
            for fast in (True, False):
                out, err = io.StringIO(), io.StringIO()
                status = run_dump([str(path)], out=out, err=err, fast=fast, release=release, **mode)
                outs.append((status, out.getvalue(), err.getvalue()))
            assert outs[0] == outs[1], f"fast and oracle paths differ on {path} ({mode}, Kafka {release.name})"


@pytest.mark.parametrize("mode", MODES)
def test_fast_path_prints_the_oracles_bytes_on_small_fixtures(mode: dict[str, Any]) -> None:
    _both_paths([p for p in _fixture_logs() if p.stat().st_size < 300_000], mode)


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
def test_fast_path_prints_the_oracles_bytes_on_large_fixtures(mode: dict[str, Any]) -> None:
    _both_paths([p for p in _fixture_logs() if p.stat().st_size >= 300_000], mode)


@pytest.mark.parametrize("mode", [
    pytest.param({"metadata_decoder": True}, id="cluster-metadata-decoder"),
    pytest.param({"metadata_decoder": True, "as_json": True}, id="json-decoder"),
    pytest.param({"deep": True}, id="deep-iteration"),
])
def test_parallel_rendering_prints_the_oracles_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      mode: dict[str, Any]) -> None:
    """Large files are rendered by forked workers, a run of batches each; the
    output and the offset-gap report (gaps inside a run and between runs)
    are the serial oracle's."""
    from kraft.records.batch import Record, build_batch
    from kraft.records.metadata import encode_metadata_record
    from kraft.tools import dump_log
    from kraft.tools.bench.records import MetadataSynth

    import random

    synth = MetadataSynth(random.Random(7))
    chunks = []
    offset = 0
    for i in range(400):
        values = synth.batch_values()
        records = [Record(offset + j, 1_700_000_000_000 + i, None, v) for j, v in enumerate(values)]
        chunks.append(build_batch(records, base_offset=offset, partition_leader_epoch=1))
        offset += len(values) + (5 if i % 97 == 0 else 0)  # gaps, some at run boundaries by chance
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"".join(chunks) + encode_metadata_record(synth.cls["NoOpRecord"]()))  # a torn tail too
    monkeypatch.setattr(dump_log, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(dump_log, "_worker_count", lambda: 3)
    outs = []
    for fast in (True, False):
        out, err = io.StringIO(), io.StringIO()
        status = run_dump([str(path)], out=out, err=err, fast=fast, **mode)
        outs.append((status, out.getvalue(), err.getvalue()))
    assert outs[0] == outs[1]
    assert "Non-consecutive offsets" in outs[0][2]
