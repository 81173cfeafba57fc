"""``kraft storage`` and ``kraft features`` against real Kafka 4.1.0's and
4.0.0's ``kafka-storage.sh`` / ``kafka-features.sh``: every offline record of
``fixtures/real-tool-outputs/kafka-{4.1.0,4.0.0}-cli.jsonl`` is
replayed, in the recorded order, in one scratch directory per release (4.1.0
with kraft's default, 4.0.0 with ``--kafka-version 4.0``), and our stdout,
stderr and exit code are compared byte for byte (Kafka's ``StorageTool``,
``Formatter``, ``FeatureCommand``; ``MetadataVersion`` and ``Feature``
changed in 4.1: default 4.1-IV1, maximum 4.2-IV1, share.version and
streams.version, a reworded kraft.version error).

What is replaced before comparing, and why:
- random directory ids (``directory.id=`` of ``info``): ours are random too;
- a Java exception (``Exception in thread "main" java.lang.X: MESSAGE`` and
  its stack): kraft prints MESSAGE alone, on one line (README "Exit codes
  and errors");
- the records kraft deliberately answers differently are listed in
  :data:`DIFFERENCES`, each with the README's reason, and pinned there.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from kraft.cli import main
from kraft.records.state_files import MetaProperties, uuid_to_kafka
from tests import golden

from tests.harness import cli

#: Records not reproduced: argparse4j's help and usage text (kraft's is
#: click's), and records that need a live Kafka cluster (describe/upgrade:
#: epochs and supported ranges are that cluster's; the protocol is tested
#: against kraft nodes in tests/node/test_kraft_version_upgrade.py).
def _skipped(record: dict[str, Any]) -> str | None:
    args = record["args"]
    if "--help" in args:
        return "argparse4j help text"
    if record["stderr"].startswith("usage:"):
        return "argparse4j usage error"
    if record["tool"] == "kafka-features.sh" and "cluster" in record["context"].split(";")[0] \
            and not record["context"].startswith("no cluster"):
        if not any(a in args for a in ("version-mapping", "feature-dependencies", "--dry-run")) \
                or "upgrade" in args:
            return "needs the live Kafka cluster it was recorded against"
    if record["tool"] == "kafka-features.sh" and "short-timeout.properties" in args:
        return "Kafka's admin-client retry log lines"
    return None


@golden.replays("cli", "tests/tools/test_kafka_tool_parity.py")
def replayed(record: dict[str, Any]) -> bool:
    return record["tool"] in ("kafka-storage.sh", "kafka-features.sh") and _skipped(record) is None


#: (tool, args) -> (what kraft prints on stderr instead, rc, why), for both releases.
DIFFERENCES: dict[tuple[str, ...], tuple[str, int, str]] = {
    ("format", "-t", "MkU3OEVBNTcwNTJENDM2Qg", "-c", "static2.properties", "--standalone"): (
        "You cannot specify controller.quorum.voters and format the node with --initial-controllers or "
        "--standalone. If you want to use dynamic quorum, please remove controller.quorum.voters and specify "
        "controller.quorum.bootstrap.servers instead.\n", 1,
        "stricter, as Kafka after 4.1.0 (StorageTool.runFormatCommand): a static voter list and a dynamic "
        "bootstrap snapshot contradict each other; 4.0.0 and 4.1.0 format it"),
}


def _records(version: str, tool: str) -> list[dict[str, Any]]:
    name = golden.name("cli", version)
    assert golden.recorded_path(golden.GOLDEN_FILES[name]).exists()
    return [r for r in golden.selected(name, replayed) if r["tool"] == tool]


def _java_message(stderr: str) -> str:
    """``Exception in thread "main" java.x.Y: MESSAGE\\n\\tat ...`` -> ``MESSAGE\\n``."""
    first = stderr.splitlines()[0]
    m = re.fullmatch(r'Exception in thread "main" [\w.$]+(?:: (.*))?', first)
    assert m is not None, first
    return (m.group(1) or "") + "\n"


def _invoke(tool: str, args: list[str], version: str) -> tuple[str, str, int]:
    prefix = ["storage"] if tool == "kafka-storage.sh" else ["features"]
    result = cli.invoke([*prefix, *golden.release_args(version), *args])
    return result.stdout, result.stderr, result.exit_code


def _expected_info(stdout: str) -> str:
    """Kafka's random directory.id replaced by the one our format wrote."""
    m = re.search(r"Found log director(?:y|ies):\n  (\S+)\n", stdout)
    if m is None or "directory.id=" not in stdout:
        return stdout
    ours = MetaProperties.read(Path(m.group(1)) / "meta.properties").directory_id
    assert ours is not None
    return re.sub(r"directory\.id=[\w-]+", f"directory.id={uuid_to_kafka(ours)}", stdout)


@pytest.mark.parametrize("version", golden.VERSIONS)
def test_kafka_storage_records_replayed_in_order(version: str, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    replayed = 0
    for record in _records(version, "kafka-storage.sh"):
        for name, text in (record.get("inputs") or {}).items():
            Path(name).parent.mkdir(parents=True, exist_ok=True)
            Path(name).write_text(text)
        stdout, stderr, rc = _invoke(record["tool"], record["args"], version)
        where = f"kafka-storage.sh {' '.join(record['args'])}"
        difference = DIFFERENCES.get(tuple(record["args"]))
        if difference is not None:
            assert (stdout, stderr, rc) == ("", difference[0], difference[1]), where
            continue
        expected_err = record["stderr"]
        if expected_err.startswith("Exception in thread"):
            expected_err = _java_message(expected_err)
            if "NoSuchFileException" in record["stderr"]:
                # Java's message is the bare path; ours says what it is.
                missing = expected_err.strip()
                expected_err = f"Unable to read {missing}: No such file or directory\n"
        assert (stdout, stderr, rc) == (_expected_info(record["stdout"]), expected_err, record["rc"]), where
        replayed += 1
    assert replayed >= 20


@pytest.mark.parametrize("version", golden.VERSIONS)
def test_kafka_features_offline_records(version: str) -> None:
    replayed = 0
    for record in _records(version, "kafka-features.sh"):
        stdout, stderr, rc = _invoke(record["tool"], record["args"], version)
        assert (stdout, stderr, rc) == (record["stdout"], record["stderr"], record["rc"]), record["args"]
        replayed += 1
    # Kafka 4.1.0's kafka-features.sh was recorded against no live cluster;
    # its version-mapping and feature-dependencies print from the same
    # Feature/MetadataVersion enums as kafka-storage.sh's (as 4.0.0's
    # records show): ours must print what 4.1.0's kafka-storage.sh printed.
    for record in _records(version, "kafka-storage.sh"):
        if record["args"][0] in ("version-mapping", "feature-dependencies") and record["rc"] == 0:
            stdout, stderr, rc = _invoke("kafka-features.sh", record["args"], version)
            assert (stdout, stderr, rc) == (record["stdout"], "", 0), record["args"]
            replayed += 1
    assert replayed >= 5


def test_format_writes_directories_in_kafkas_hash_map_order() -> None:
    """``MetaPropertiesEnsemble.Copier`` writes from a ``java.util.HashMap``:
    multi-b (bucket 8) before multi-a (bucket 11), as recorded."""
    from kraft.tools.storage import java_hash_map_order

    assert java_hash_map_order(["multi-a", "multi-b"]) == ["multi-b", "multi-a"]
    assert java_hash_map_order([]) == []
