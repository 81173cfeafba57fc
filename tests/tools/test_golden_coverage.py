"""Audit: every record real Kafka 4.1.0's and 4.0.0's tools printed
(``fixtures/real-tool-outputs/kafka-{4.1.0,4.0.0}-{cli,dump-log,metadata-shell}.jsonl``)
is either replayed by a test (registered with :func:`tests.golden.replays`)
or listed, with its reason, in :data:`EXCLUDED` -- never both, never neither.
An exclusion names a kind (``cli``: every release's set) or one set
(``metadata-shell@4.0.0``). :func:`test_the_counts` pins how many records
are replayed and excluded.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import pytest

from tests import golden

#: The modules whose tests replay golden records; importing one registers its selector.
REPLAYING_TESTS = (
    "tests.tools.test_kafka_tool_parity",  # kafka-storage.sh, offline kafka-features.sh
    "tests.tools.test_quorum_golden",  # kafka-metadata-quorum.sh describe
    "tests.tools.test_kafka_tool_errors",  # error runs of dump-log, metadata-shell, quorum, features
    "tests.tools.test_dump_log_kafka",  # kafka-dump-log.sh on the fixture files
    "tests.image.test_kafka_shell_golden",  # kafka-metadata-shell.sh on the fixture snapshots
)


def _live(record: dict[str, Any]) -> bool:
    return not str(record.get("context", "")).startswith("no cluster")


def _replayed_error_run(record: dict[str, Any]) -> bool:
    from tests.tools.test_kafka_tool_errors import CASES

    return (record["tool"], *record["args"]) in CASES


def _shell_shows_kafkas_empty_image(record: dict[str, Any]) -> bool:
    """A command whose 4.0.0 output depends on the image Kafka could not load."""
    from tests.image.test_kafka_shell_golden import CONTENT_BLIND, RECORDS, kafka_could_not_load

    return kafka_could_not_load(RECORDS[record["snapshot"]]) and tuple(record["cmd"]) not in CONTENT_BLIND


#: THE exclusion table: (golden file, which records, why they are not replayed).
EXCLUDED: list[tuple[str, Callable[[dict[str, Any]], bool], str]] = [
    # argparse4j (storage, quorum, features, shell) and joptsimple (dump-log)
    # help text: ours is click's (README "Deliberate differences").
    ("cli", lambda r: "--help" in r["args"], "Kafka's --help text; `kraft <tool> --help` is click's"),
    ("cli", lambda r: (r["stderr"] or "").startswith("usage:") and not _replayed_error_run(r),
     "argparse4j usage error; ours is click's usage error, exit status 2"),
    ("cli", lambda r: r["tool"] == "kafka-dump-log.sh" and r["args"] == [],
     "joptsimple prints its help on a missing --files (exit 1); ours is click's usage error, exit status 2"),
    # Runs against the live Kafka clusters of the recording: their output
    # depends on that cluster's state (epochs, offsets, supported ranges) or
    # changed it. The protocol is tested against kraft nodes
    # (tests/node/test_kraft_version_upgrade.py, tests/tools/test_quorum_cli.py).
    ("cli", lambda r: _live(r) and r["tool"] == "kafka-features.sh"
     and ("describe" in r["args"] or "upgrade" in r["args"]),
     "kafka-features.sh describe/upgrade against the live Kafka cluster it was recorded against"),
    ("cli", lambda r: _live(r) and r["tool"] == "kafka-metadata-quorum.sh"
     and ("add-controller" in r["args"] or "remove-controller" in r["args"]),
     "add-/remove-controller change the live Kafka quorum they were recorded against"),
    # metadata-shell records that are not one command's output.
    ("metadata-shell", lambda r: r["cmd"] == ["<stdin-session>"] and "note" not in r,
     "the whole interactive session's transcript; each command of it is its own record, replayed"),
    ("metadata-shell", lambda r: "note" in r,
     "Kafka 4.0.0 and 4.1.0 hang on a snapshot of control records only (nothing recorded); "
     "ours is pinned in test_a_control_only_snapshot_opens"),
    ("metadata-shell@4.0.0", lambda r: r["cmd"] != ["<stdin-session>"] and "note" not in r
     and _shell_shows_kafkas_empty_image(r),
     "Kafka 4.0.0 cannot load metadata.version 27 and shows an empty image; we open it, also with "
     "--kafka-version 4.0, as 4.1.0 does (README; 4.1.0's records of it are replayed)"),
]


def golden_replayed(name: str, record: dict[str, Any]) -> list[str]:
    return [r.test for r in golden.REPLAYERS if golden.applies(r.golden, name) and r.selects(record)]


def _register_replayers() -> None:
    for module in REPLAYING_TESTS:
        importlib.import_module(module)


def audit(name: str, records: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """(records neither replayed nor excluded, records both replayed and excluded)."""
    _register_replayers()
    neither, both = [], []
    for index, record in enumerate(records):
        tests = golden_replayed(name, record)
        reasons = [why for golden_name, selects, why in EXCLUDED if golden.applies(golden_name, name) and selects(record)]
        where = f"{golden.GOLDEN_FILES[name]} line {index + 1}: {record['tool']} " \
            f"{' '.join(record.get('args') or record.get('cmd') or [])}"
        if not tests and not reasons:
            neither.append(where)
        elif tests and reasons:
            both.append(f"{where} (replayed by {tests}, excluded: {reasons})")
    return neither, both


@pytest.mark.parametrize("name", sorted(golden.GOLDEN_FILES))
def test_every_golden_record_is_replayed_or_excluded(name: str) -> None:
    records = golden.records(name)
    assert records, golden.GOLDEN_FILES[name]
    neither, both = audit(name, records)
    assert not neither, "records neither replayed by a test nor excluded with a reason:\n" + "\n".join(neither)
    assert not both, "records both replayed and excluded (drop the exclusion):\n" + "\n".join(both)


def test_the_audit_reports_a_record_nobody_replays_and_one_replayed_and_excluded() -> None:
    new = {"tool": "kafka-dump-log.sh", "args": ["--files", "new.log"], "stdout": "", "stderr": "", "rc": 0,
           "context": "no cluster"}
    # replayed by test_kafka_tool_errors.py, and (recorded against a live cluster) excluded too
    replayed = {"tool": "kafka-features.sh", "args": ["--bootstrap-controller", "127.0.0.1:21499",
                "--command-config", "short-timeout.properties", "describe"], "stdout": "", "stderr": "",
                "rc": 1, "context": "cluster x"}
    neither, both = audit("cli@4.0.0", [new, replayed])
    assert neither == ["kafka-4.0.0-cli.jsonl line 1: kafka-dump-log.sh --files new.log"]
    assert len(both) == 1 and both[0].startswith("kafka-4.0.0-cli.jsonl line 2: kafka-features.sh"), both


def test_every_replaying_test_replays_something() -> None:
    _register_replayers()
    for replayer in golden.REPLAYERS:
        sets = [g for g in golden.GOLDEN_FILES if golden.applies(replayer.golden, g)]
        assert any(golden.selected(g, replayer.selects) for g in sets), replayer.test


def test_the_counts() -> None:
    """How many records of each set are replayed and how many excluded (the
    README's compatibility section gives these numbers)."""
    _register_replayers()
    counts = {}
    for name in sorted(golden.GOLDEN_FILES):
        records = golden.records(name)
        replayed = sum(1 for r in records if golden_replayed(name, r))
        counts[name] = (replayed, len(records) - replayed)
    assert counts == {
        "cli@4.0.0": (56, 21), "cli@4.1.0": (39, 13),
        "dump-log@4.0.0": (160, 0), "dump-log@4.1.0": (160, 0),
        "metadata-shell@4.0.0": (4629, 109), "metadata-shell@4.1.0": (4683, 55),
    }, counts
