"""The interoperability table of docs/beside-kafka/interoperability.md,
generated: what each real-Kafka test found, release by release.

Each row is a :class:`Row` here: what it claims, the test of tests/kafka/
that checks it, and the releases it runs on (every listed release for the
tool comparisons; the oldest and newest for the cluster scenarios:
tests/kafka/conftest.py; the newest alone where only it has the feature).
A test that passes calls :func:`record` for its rows: the cell of its
release, with the figure it measured where the figure is the same from run
to run ("yes: 25,238 lines", "pinned: ..."; a cluster scenario's timings
are no cell: they are reported apart, tests/kafka/report.py). Run with
``KRAFT_INTEROP_WRITE=1``, the tests write their cells into :data:`ARTIFACT`
(committed, like generated code); otherwise each checks that its cell is
the recorded one, so a finding that changed fails its test. ``python -m
tests.kafka.interop`` writes the table into the page, and
tests/kafka/test_readme_table.py (no Kafka: cheap) fails when the page's
copy is stale, or a cell a row's test runs on was never recorded.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.kafka.releases import REPO, listed

__all__ = ["Row", "ROWS", "ARTIFACT", "PAGE", "record", "cells", "table", "page_text", "main"]

#: What the real-Kafka tests recorded: {row key: {release: cell}}.
ARTIFACT = REPO / "tests" / "kafka" / "interoperability.json"
#: The page of the documentation site that holds the table.
PAGE = REPO / "docs" / "beside-kafka" / "interoperability.md"
BEGIN = "<!-- the table is generated: python -m tests.kafka.interop (from tests/kafka/interoperability.json) -->"
END = "<!-- end of the generated table -->"
#: Set (to anything): :func:`record` writes the cells instead of checking them.
WRITE_VAR = "KRAFT_INTEROP_WRITE"


@dataclass(frozen=True)
class Row:
    """One claim of the table. ``scope``: "every" listed release, the two
    "ends" (oldest and newest), or the "newest" alone (with ``outside``:
    what the other releases' cells say)."""

    key: str
    test: str
    scope: str
    what: str
    outside: str = "oldest and newest only"

    def runs_on(self, version: str, versions: list[str]) -> bool:
        if self.scope == "every":
            return True
        if self.scope == "ends":
            return version in (versions[0], versions[-1])
        return version == versions[-1]


_NOT_44 = "no such option (4.4 on)"

ROWS: tuple[Row, ...] = (
    Row('dump-log', 'test_tools_live.py::test_dump_log_prints_what_each_release_prints', 'every',
        '`kraft dump-log` prints what `DumpLogSegments` prints on every fixture and on logs kraft writes, five modes'),
    Row('dump-log-newer-record', 'test_tools_live.py::test_dump_log_prints_what_each_release_prints', 'every',
        "a record type newer than the release (UnregisterControllerRecord) is printed as that release's tool prints it"),
    Row('dump-log-orphan-index', 'test_tools_live.py::test_dump_log_prints_what_each_release_prints', 'every',
        "an index without its `.log`: Kafka's tool dies (`NoSuchFileException`), kraft says it in one line"),
    Row('dump-log-stored-outputs', 'test_tools_live.py::test_dump_log_prints_what_each_release_prints', 'every',
        "the stored outputs (`fixtures/real-tool-outputs/`) match the live tool's, 156 dump-log runs per release (`KRAFT_LIVE_GOLDEN_DIR=DIR` writes the live outputs there)"),
    Row('shell', 'test_tools_live.py::test_shell_prints_what_each_release_prints', 'every',
        '`kraft shell` prints what `kafka-metadata-shell.sh` prints on three stored sessions'),
    Row('shell-find', 'test_tools_live.py::test_shell_prints_what_each_release_prints', 'every',
        'shell `find /`: Kafka aborts on zkMigrationState, kraft lists every node'),
    Row('storage-offline', 'test_tools_live.py::test_storage_offline_answers_follow_each_release', 'every',
        "`kraft storage version-mapping` / `feature-dependencies` print what `kafka-storage.sh` prints, refusals included (share.version=2 is 4.4's only, streams.version 4.1's on, group.version=2 no release's)"),
    Row('storage-format', 'test_storage_format_live.py::test_storage_format_prints_and_writes_what_each_release_does', 'every',
        '`kraft storage format --kafka-version X.Y` prints and writes what `kafka-storage.sh format` does, 15 cases (static, dynamic, broker, static with `--no-initial-controllers`, `--add-scram`, `--release-version` (4.4-IV0 too), kraft.version=0/1 refusals): stdout, stderr, exit code, the files and their records (4.4: the `Bootstrap metadata:` line, the KIP-1170 layout)'),
    Row('storage-format-default', 'test_storage_format_live.py::test_storage_format_by_default_is_the_newest_releases',
        'newest', '`kraft storage format` with no `--kafka-version` prints and writes what the newest release\'s '
        '`kafka-storage.sh format` does (4.4.0: the KIP-1170 layout), the same 15 cases', outside="the newest's"),
    Row('written-log', 'test_written_log.py::test_a_log_each_release_writes_is_read_by_kraft_as_its_tools_read_it', 'every',
        "a real cluster (two controllers, a broker) writes a metadata log: topics, a topic config, a SCRAM user, a client quota, an ACL, a feature upgrade from 3.9-IV0 (`kafka-features upgrade --release-version`), a controller added and removed (`add-controller`, `remove-controller`); kraft's decoded dump of its segments and snapshots equals `DumpLogSegments`', kraft's Spark rows hold the same batches with the same record counts and types, every record type and version decoded"),
    Row('written-log-shell', 'test_written_log.py::test_a_log_each_release_writes_is_read_by_kraft_as_its_tools_read_it', 'every',
        '... and `kafka-metadata-shell.sh` on the snapshot that cluster wrote answers a session (`ls`, `cat`, `tree` of topics, configs, ACLs, SCRAM, quotas, cluster) as `kraft shell` does'),
    Row('witness-registers', 'test_witness.py::test_the_witness_registers_so_that_kafka_upgrades_features', 'ends',
        'the witness registers with the active controller, so `kafka-features upgrade` passes; `kafka-cluster list-endpoints` lists it'),
    Row('witness-kill-leader', 'test_witness.py::test_a_killed_kafka_leader_is_replaced_by_the_other_kafka_controller_and_kraft_never_leads', 'ends',
        'kill -9 of the Kafka leader: the other Kafka controller leads, kraft never leads'),
    Row('witness-stale-survivor', 'test_witness.py::test_a_stale_kafka_survivor_is_handed_the_log_by_the_witness', 'ends',
        'a stale Kafka survivor is handed the log by the witness; no acknowledged topic is lost'),
    Row('witness-away', 'test_witness.py::test_a_witness_cut_off_and_back_changes_nothing_for_kafka', 'ends',
        'the witness away (paused, then killed and restarted): Kafka keeps its leader and epoch'),
    Row('observer-static', 'test_observer.py::test_a_kraft_observer_copies_a_real_quorum_byte_for_byte', 'ends',
        "a kraft observer follows a static quorum (a Kafka controller): fetches the leader's snapshot, then the log; listed as Observer with lag 0"),
    Row('observer-dynamic', 'test_observer.py::test_a_kraft_observer_copies_a_real_quorum_byte_for_byte', 'ends',
        'a kraft observer follows a dynamic quorum (KIP-853: `--standalone`, a controller added with the real `add-controller`)'),
    Row('observer-files', 'test_observer.py::test_a_kraft_observer_copies_a_real_quorum_byte_for_byte', 'ends',
        "the observer's files are byte-identical to the Kafka leader's: the snapshot it fetched, every batch both hold (segment names and boundaries differ by design)"),
    Row('observer-describe', 'test_observer.py::test_a_kraft_observer_copies_a_real_quorum_byte_for_byte', 'ends',
        '`kraft metadata-quorum describe --status/--replication` on a Kafka quorum prints what the real tool prints (moving offsets and times aside)'),
    Row('real-quorum-describe', 'test_quorum_tool.py::test_the_real_metadata_quorum_tool_describes_and_reconfigures_a_kraft_quorum', 'ends',
        'real `kafka-metadata-quorum describe --status`, `--replication`, `--replication --human-readable` on a kraft-only quorum print what `kraft metadata-quorum` prints'),
    Row('real-quorum-reconfigure', 'test_quorum_tool.py::test_the_real_metadata_quorum_tool_describes_and_reconfigures_a_kraft_quorum', 'ends',
        "real `add-controller` / `remove-controller` work on a kraft dynamic quorum, and kraft's print the same lines (4.4 prints `Removed KRaft` with one space, 4.0 and 4.1 with two)"),
    Row('remove-controller-line', 'test_quorum_tool.py::test_remove_controller_prints_each_releases_line', 'ends',
        "`remove-controller` prints the release's line: `Removed  KRaft` / `DRY RUN of removing  KRaft` (4.0, 4.1: two spaces), `Removed KRaft` (4.4: one)"),
    Row('remove-controller-unregister-dry-run', 'test_quorum_tool.py::test_remove_controller_unregister_is_each_releases', 'ends',
        "`remove-controller --dry-run --unregister` (KIP-1312) prints 4.4's second line, `DRY RUN of unregistering KRaft controller N`; a release before 4.4 refuses the option, and so does kraft as that release"),
    Row('unregister-kafka', 'test_unregister_controller.py::test_remove_controller_unregister_removes_and_unregisters_as_kafka_does', 'newest',
        "`remove-controller --unregister` removes a shut-down Kafka controller from the voters and drops its registration (RemoveRaftVoter, then UnregisterController), real and kraft alike; a controller that is no voter is refused with Kafka's line naming `kafka-cluster.sh unregister-controller`", _NOT_44),
    Row('unregister-kraft', 'test_unregister_controller.py::test_a_kraft_quorum_does_not_serve_unregister_controller', 'newest',
        "`remove-controller --unregister` on a kraft quorum: removed, then refused as Kafka's client refuses a node without UnregisterController (`The node does not support UNREGISTER_CONTROLLER`), by both tools", _NOT_44),
)

_BY_KEY = {row.key: row for row in ROWS}


@contextmanager
def _locked() -> Iterator[dict[str, dict[str, str]]]:
    """The artifact, read and written back under a lock (pytest-xdist's
    workers record at the same time)."""
    import tempfile

    with open(Path(tempfile.gettempdir()) / "kraft-interoperability.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        data = json.loads(ARTIFACT.read_text()) if ARTIFACT.exists() else {}
        yield data
        ARTIFACT.write_text(json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n")


def record(key: str, version: str, cell: str) -> None:
    """The cell of row ``key`` for release ``version``, as a passing test
    found it. With ``$KRAFT_INTEROP_WRITE`` set it is written into
    :data:`ARTIFACT`; otherwise it must be the one recorded there: a test
    whose finding or figure changed fails, naming the refresh."""
    if key not in _BY_KEY:
        raise KeyError(f"no row {key!r} in tests/kafka/interop.py")
    if os.environ.get(WRITE_VAR):
        with _locked() as data:
            data.setdefault(key, {})[version] = cell
        return
    stored = cells().get(key, {}).get(version)
    if stored != cell:
        import pytest

        pytest.fail(f"the interoperability table says {stored!r} for {key} on {version}, the test found {cell!r}: "
                    f"run the test with {WRITE_VAR}=1, then python -m tests.kafka.interop, and commit both",
                    pytrace=False)


def cells() -> dict[str, dict[str, str]]:
    """What the artifact holds."""
    return json.loads(ARTIFACT.read_text()) if ARTIFACT.exists() else {}


def table(recorded: dict[str, dict[str, str]], versions: list[str]) -> str:
    """The markdown table: one column per release, one row per :data:`ROWS`."""
    lines = [f"| what real Kafka does beside kraft | {' | '.join(versions)} | test |",
             "| --- |" + " --- |" * (len(versions) + 1)]
    for row in ROWS:
        found = recorded.get(row.key, {})
        values = [found.get(v, "not run yet") if row.runs_on(v, versions) else
                  row.outside for v in versions]
        lines.append(f"| {row.what} | {' | '.join(values)} | `{row.test}` |")
    return "\n".join(lines) + "\n"


def page_text(page: str, recorded: dict[str, dict[str, str]], versions: list[str]) -> str:
    """``page`` with the text between the markers replaced by the table."""
    head, begin, rest = page.partition(BEGIN + "\n")
    _, end, tail = rest.partition(END)
    if not begin or not end:
        raise ValueError(f"{PAGE} lacks the markers {BEGIN!r} ... {END!r}")
    return head + begin + table(recorded, versions) + end + tail


def main() -> None:
    """Write the table into the page."""
    PAGE.write_text(page_text(PAGE.read_text(), cells(), listed()))
    print(f"wrote the table of {len(ROWS)} rows into {PAGE.relative_to(REPO)}", file=sys.stderr)


if __name__ == "__main__":
    main()
