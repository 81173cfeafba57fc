"""kraft's ``dump-log`` against the real ``DumpLogSegments`` of every
installed Kafka release, live, byte for byte (issue 35, issue 32 item 4).

For each release of ``.ci/kafka-releases``, one JVM call per mode dumps
every file the stored outputs cover (``fixtures/``) plus files
kraft writes itself (a segment of every metadata record type kraft encodes,
and the bootstrap snapshot ``kraft storage format --standalone`` writes);
``kraft dump-log --kafka-version <that release>`` dumps the same files and
must print the same stdout and stderr. An index whose ``.log`` is missing
makes every release's tool die (``NoSuchFileException`` from
``FileRecords.open`` in ``dumpIndex``): those are dumped apart, the abort is
recorded, and kraft's one-line answer is pinned.

With ``$KRAFT_LIVE_GOLDEN_DIR`` set, what the real tool printed is written
there per file (the stored outputs' form), and the stored outputs of the
same release (4.1.0; 4.0.0's against 4.0.x) are compared with the live ones,
so drift shows.
"""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

import pytest

from tests import golden
from tests.conftest import FIXTURES, fixture_path
from tests.harness import cli
from tests.kafka import interop, live_tools
from tests.harness.cli import kraft_args
from tests.kafka.report import report
from tests.kafka.releases import KafkaRelease, every_release, listed, unavailable

pytestmark = pytest.mark.slow

#: Every listed release: what the tools print differs from release to release.
release = pytest.fixture(params=listed())(every_release)

CLUSTER = "MkU3OEVBNTcwNTJENDM2Qg"

#: DumpLogSegments modes compared: the stored outputs' three, plus
#: ``--deep-iteration`` and ``--skip-record-metadata`` (4.3's ``| payload:``).
MODES: tuple[tuple[str, ...], ...] = (
    (),
    ("--deep-iteration",),
    ("--cluster-metadata-decoder",),
    ("--print-data-log",),
    ("--cluster-metadata-decoder", "--skip-record-metadata"),
)


def _stored_files(fixtures: Path) -> list[Path]:
    """Every file the stored dump-log outputs name, in their order."""
    seen: dict[Path, None] = {}
    for record in golden.records(golden.name("dump-log", "4.1.0")):
        for arg in record["args"]:
            if arg.startswith("fixtures:"):
                seen.setdefault(fixtures / arg.removeprefix("fixtures:"), None)
    return list(seen)


def _aborts(path: Path) -> bool:
    """An index or time index without its segment: DumpLogSegments dies on it."""
    return path.suffix in (".index", ".timeindex") and not path.with_suffix(".log").exists()


def _kraft_written(folder: Path) -> list[Path]:
    """Segments kraft's batch writer wrote (every metadata record type the
    benchmark synthesiser makes; record types newer than some releases) and
    the bootstrap snapshot of ``kraft storage format --standalone``."""
    from kraft.records.batch import Record, build_batch
    from kraft.tools.bench.records import MetadataSynth

    synth = MetadataSynth(random.Random(35))
    chunks, offset = [], 0
    for i in range(60):
        values = synth.batch_values()
        records = [Record(offset + j, 1_700_000_000_000 + i, None, v) for j, v in enumerate(values)]
        chunks.append(build_batch(records, base_offset=offset, partition_leader_epoch=1))
        offset += len(values)
    segment = folder / "kraft-log" / "00000000000000000000.log"
    segment.parent.mkdir(parents=True)
    segment.write_bytes(b"".join(chunks))
    # A record type newer than 4.0 and 4.1 (UnregisterControllerRecord, id
    # 29, Kafka 4.4) and one no release knows (id 99): each release's tool
    # prints what it knows, and kraft as that release must print the same.
    from kraft.records.metadata import encode_metadata_record
    from messages.generated.no_op_record import NoOpRecord
    from messages.generated.unregister_controller_record import UnregisterControllerRecord

    values = [encode_metadata_record(NoOpRecord()), encode_metadata_record(UnregisterControllerRecord(controller_id=2)),
              bytes([1, 99, 0, 0, 0, 0, 2])]
    newer = folder / "kraft-newer" / "00000000000000000000.log"
    newer.parent.mkdir(parents=True)
    newer.write_bytes(build_batch([Record(i, 1_700_000_000_000, None, v) for i, v in enumerate(values)],
                                  base_offset=0, partition_leader_epoch=1))
    data = folder / "kraft-format"
    cli.run("storage", "format", "-t", CLUSTER, "--node-id", "1", "--metadata-log-dir", str(data),
            "--standalone", "--controller-endpoint", "127.0.0.1:9", check=True)
    snapshot = data / "__cluster_metadata-0" / "00000000000000000000-0000000000.checkpoint"
    assert snapshot.exists()
    return [segment, newer, snapshot]


def _files(mode: tuple[str, ...], stored: list[Path], written: list[Path]) -> list[Path]:
    files = [p for p in stored if not _aborts(p)]
    if mode:  # record modes: segments and snapshots only
        files = [p for p in files if p.suffix in (".log", ".checkpoint")]
    if mode in (("--deep-iteration",), ("--cluster-metadata-decoder", "--skip-record-metadata")):
        files = [p for p in files if p.stat().st_size < 300_000]  # the large ones are covered by the two above
    return files + written


def _drift(release: KafkaRelease, mode: tuple[str, ...], live: dict[str, str], fixtures: Path) -> tuple[int, list[str]]:
    """The stored outputs of ``release``'s minor (4.1.0; 4.0.0 for 4.0.x)
    against what the live tool printed for the same file and mode: where they
    differ (stored as in test_dump_log_kafka: ``fixtures:`` paths, ``\\r`` as
    ``\\n``, outputs of 1 MB kept as head, tail and SHA-256)."""
    stored = [v for v in golden.VERSIONS if v.split(".")[:2] == release.version.split(".")[:2]]
    if not stored:
        return 0, []
    compared, drifted = 0, []
    for record in golden.records(golden.name("dump-log", stored[0])):
        flags = tuple(a for a in record["args"] if a.startswith("--") and a != "--files")
        files = [a for a in record["args"] if a.startswith("fixtures:")]
        path = str(fixtures / files[0].removeprefix("fixtures:")) if len(files) == 1 else ""
        if flags != mode or path not in live or record["rc"] != 0:
            continue
        text = live[path].replace(str(fixtures) + "/", "fixtures:").replace("\r\n", "\n").replace("\r", "\n")
        if record.get("truncated"):
            same = hashlib.sha256(text.encode()).hexdigest() == record["stdout_full_sha256"]
        else:
            same = text == record["stdout"]
        compared += 1
        if not same:
            drifted.append(f"{stored[0]} {' '.join(mode) or 'plain'} {files[0]}")
    return compared, drifted


def test_dump_log_prints_what_each_release_prints(release: KafkaRelease, tmp_path: Path) -> None:
    fixtures = FIXTURES.resolve()
    stored = _stored_files(fixtures)
    written = _kraft_written(tmp_path)
    lines = 0
    kafka_s = kraft_s = 0.0
    differences: list[str] = []
    drift: list[str] = []
    stored_compared = 0
    for mode in MODES:
        files = _files(mode, stored, written)
        theirs = live_tools.real_dump(release, mode, files, tmp_path)
        ours = live_tools.kraft_dump(release, mode, files)
        kafka_s, kraft_s = kafka_s + theirs.seconds, kraft_s + ours.seconds
        lines += theirs.stdout.count("\n") + theirs.stderr.count("\n")
        assert theirs.rc == 0, f"{release} DumpLogSegments {mode}: {theirs.stderr[:500]}"
        for what, expected, actual in (("stdout", theirs.stdout, ours.stdout), ("stderr", theirs.stderr,
                                                                                   ours.stderr)):
            where = live_tools.first_difference(expected, actual)
            if where:
                differences.append(f"{' '.join(mode) or 'plain'} {what}: {where}")
        assert ours.rc == 0
        live = live_tools.per_file(theirs.stdout)
        live_tools.write_golden(f"kafka-{release.version}-dump-log-live", [
            {"tool": "kafka-dump-log.sh", "args": [*mode, "--files", path], "stdout": text}
            for path, text in live.items()], fixtures)
        compared, drifted = _drift(release, mode, live, fixtures)
        stored_compared += compared
        drift += drifted
    print(f"\n{release}: {lines} lines compared; kraft {kraft_s:.1f} s, Kafka {kafka_s:.1f} s, "
          f"ratio {kraft_s / kafka_s:.2f}")
    assert not differences, "\n".join(differences)
    assert not drift, "the stored outputs drifted from the live ones:\n" + "\n".join(drift)
    # 4.0.x and 4.1.0 have stored outputs: all but the 4 aborting runs of 160 are compared.
    assert stored_compared == (156 if release.minor in ((4, 0), (4, 1)) else 0), stored_compared

    # Every release's tool dies on an index without its segment; kraft says so in one line.
    orphans = [p for p in stored if _aborts(p)]
    assert orphans
    theirs = live_tools.real_dump(release, (), orphans[:1], tmp_path)
    ours = live_tools.kraft_dump(release, (), orphans[:1])
    assert theirs.rc == 1 and "java.nio.file.NoSuchFileException" in theirs.stderr
    assert ours.rc != 0 and len(ours.stderr.splitlines()) == 1 and "No such file" in ours.stderr
    assert ours.stdout == theirs.stdout  # the "Dumping ..." header Kafka printed before dying
    _record_dump_log(release, lines, stored_compared)


def _record_dump_log(release: KafkaRelease, lines: int, stored_compared: int) -> None:
    """The table's cells of the dump-log rows (tests/kafka/interop.py)."""
    from kraft.kafka_release import kafka_release

    version = release.version
    interop.record("dump-log", version, f"yes: {lines:,} lines")
    unknown = 29 in kafka_release(live_tools.kafka_version(release)).unknown_metadata_records
    interop.record("dump-log-newer-record", version,
                   "yes: unknown to it, printed as `Unknown metadata id 29`" if unknown else "yes: decoded")
    interop.record("dump-log-orphan-index", version, "pinned: Kafka dies (`NoSuchFileException`)")
    stored = [v for v in golden.VERSIONS if v.split(".")[:2] == version.split(".")[:2]]
    interop.record("dump-log-stored-outputs", version,
                   f"yes: {stored_compared} runs ({stored[0]}'s stored)" if stored_compared else "none stored")


#: Snapshots whose stored stdin session is replayed live (no default client
#: quota entity: Kafka names it with the empty string and its ``find`` aborts,
#: a difference test_kafka_shell_golden pins): one per Kafka line of the fixtures.
SHELL_SNAPSHOTS = (
    "kafka-3.5-three-node/node1/__cluster_metadata-0/00000000000000028869-0000000189.checkpoint",
    "kafka-3.9-single-node/commit-4bef72a/data/__cluster_metadata-0/00000000000000243115-0000000030.checkpoint",
    "kafka-4.1-standalone-dynamic/__cluster_metadata-0/00000000000000007206-0000000001.checkpoint",
)


def _session(snapshot: str) -> str:
    for record in golden.records(golden.name("metadata-shell", "4.1.0")):
        if record["snapshot"] == f"fixtures:{snapshot}" and record.get("stdin"):
            return str(record["stdin"])
    raise LookupError(f"no stored stdin session for {snapshot}")


def _pinned(theirs: str) -> str:
    """kraft's deliberate answer where Kafka 4.0 and 4.1 fail on their own
    bug (``FeaturesImageNode`` lists zkMigrationState but has no such child):
    the state's name, as 3.x printed it (README, ``kraft shell``)."""
    return (theirs.replace("cat: /image/features/zkMigrationState: No such file or directory.\n", "NONE\n")
            .replace("zkMigrationState:\n", "zkMigrationState:\n  NONE\n"))


def test_shell_prints_what_each_release_prints(release: KafkaRelease, tmp_path: Path) -> None:
    """``kafka-metadata-shell.sh --snapshot`` of each release against ``kraft
    shell --kafka-version`` of it, on a stored stdin session per snapshot,
    plus ``find /``, which 4.0 and 4.1 abort ("Expected zkMigrationState to be
    a valid child"): recorded as such, kraft's full listing pinned; 4.2 on
    list no zkMigrationState and ``find /`` is compared like the rest. A
    release without a shell on Maven Central (4.2.1, 4.2.2, 4.4.0) is
    compared with the newest installed shell of an older line, with its own
    ``/local`` pair."""
    from kraft.kafka_release import kafka_release
    from tests.kafka.releases import require

    real = live_tools.shell_release(release, [require(v) for v in listed()])
    if real is None:
        unavailable(f"{release} has no metadata shell on Maven Central and no installed release's prints alike "
                    "(.ci/kafka-releases lists 4.2.0 for 4.2.2)")
        return
    ours_release = kafka_release(live_tools.kafka_version(release))
    lines = 0
    kafka_s = kraft_s = 0.0
    for snapshot in SHELL_SNAPSHOTS:
        path = fixture_path(*snapshot.split("/"))
        commands = _session(snapshot).rstrip("\n") + "\nfind /\n"
        theirs = live_tools.real_shell(real, path, commands, tmp_path)
        ours = live_tools.kraft_shell(release, path, commands)
        kafka_s, kraft_s = kafka_s + theirs.seconds, kraft_s + ours.seconds
        # /local is the release's build (a stand-in shell prints its own).
        version, commit_id = live_tools.build_info(real)
        theirs_text = (theirs.stdout.replace(f"{version}\n", f"{ours_release.version}\n")
                       .replace(f"{commit_id}\n", f"{ours_release.commit_id}\n"))
        lines += theirs.stdout.count("\n")
        if real.minor >= (4, 2):
            assert "/image/features/zkMigrationState\n" not in theirs.stdout and "Expected zkMigrationState" \
                not in theirs.stderr
            assert live_tools.answers(ours.stdout) == live_tools.answers(theirs_text), snapshot
            continue
        expected = live_tools.answers(_pinned(theirs_text))
        actual = live_tools.answers(ours.stdout)
        # Kafka's find / throws out of the shell's main loop: nothing on
        # stdout, the exception on stderr, no prompt after it. kraft lists
        # every node, then prompts again.
        assert expected[-1] == "" and "Expected zkMigrationState to be a valid child" in theirs.stderr, real
        assert actual[-1] == "" and actual[-2].startswith("/\n/image\n")
        assert "/image/features/zkMigrationState\n" in actual[-2]
        if real.minor < (4, 1) and snapshot.startswith("kafka-4.1-"):
            # 4.0 cannot load metadata.version 27 (4.1-IV1) and shows an
            # empty image; kraft opens it, as 4.1 does (README: deliberate).
            assert "metadataVersion\nzkMigrationState\n" in expected and "metadataVersion\nzkMigrationState\n" \
                not in actual
            continue
        assert actual[:-2] == expected[:-1], snapshot
    print(f"\n{release} shell ({real}'s): {lines} lines compared; kraft {kraft_s:.1f} s, Kafka {kafka_s:.1f} s, "
          f"ratio {kraft_s / kafka_s:.2f}")
    report(release.version, "shell", lines=lines, kraft_s=round(kraft_s, 1), kafka_s=round(kafka_s, 1),
           stand_in=None if real is release else real.version)
    stand_in = "" if real is release else f" (as {real.version}'s shell: none published for {release.version})"
    interop.record("shell", release.version, f"yes: {lines:,} lines{stand_in}")
    interop.record("shell-find", release.version, ("lists no zkMigrationState: compared" if real.minor >= (4, 2)
                                                  else "pinned: Kafka aborts, kraft lists every node") + stand_in)


#: Offline ``kafka-storage.sh`` commands whose output follows the release
#: (``MetadataVersion``, ``Feature``): one JVM each.
STORAGE_RUNS = (
    ("version-mapping",),
    ("version-mapping", "--release-version", "3.9-IV0"),
    ("feature-dependencies", "--feature", "group.version=1", "--feature", "kraft.version=1", "--feature",
     "transaction.version=2", "--feature", "eligible.leader.replicas.version=1"),
)


#: ``feature-dependencies`` and ``version-mapping`` runs some release refuses
#: (StorageTool.runFeatureDependencies: "Unknown feature: X", "Feature level
#: N is not supported for feature X"; runVersionMappingCommand and
#: MetadataVersion.fromVersionString: an unknown metadata.version):
#: share.version=2 is 4.4's (4.1 to 4.3 stop at 1, 4.0 has no share.version).
REFUSED_RUNS = (
    ("feature-dependencies", "--feature", "share.version=2"),
    ("feature-dependencies", "--feature", "streams.version=1"),
    ("feature-dependencies", "--feature", "group.version=2"),
    ("version-mapping", "--release-version", "9.9-IV9"),
)

#: Of them, those ``kafka-features.sh`` (FeatureCommand) answers offline too.
FEATURE_RUNS = (STORAGE_RUNS[0], STORAGE_RUNS[1], REFUSED_RUNS[0], REFUSED_RUNS[3])


def test_storage_offline_answers_follow_each_release(release: KafkaRelease, tmp_path: Path) -> None:
    from tests.kafka.processes import run_tool

    refused = 0
    # kafka-features.sh wants a bootstrap address even for its offline commands (it connects to none).
    offline = ("--bootstrap-server", "127.0.0.1:9")
    runs = [("StorageTool", ("storage",), args) for args in STORAGE_RUNS + REFUSED_RUNS]
    runs += [("FeatureCommand", ("features", *offline), args) for args in FEATURE_RUNS]
    for tool, command, args in runs:
        theirs = run_tool(release, tool, *command[1:], *args, work=tmp_path)
        ours = live_tools.timed(kraft_args(*command, *args, "--kafka-version", live_tools.kafka_version(release)))
        assert theirs.returncode == 0 or args in REFUSED_RUNS, theirs.stderr
        # FeatureCommand builds an admin client it never uses: its connection WARN lines are no answer.
        stderr = "".join(line for line in theirs.stderr.splitlines(keepends=True)
                         if "WARN [AdminClient" not in line)
        assert (ours.stdout, ours.stderr, ours.rc) == (theirs.stdout, stderr, theirs.returncode), \
            f"{release} {tool} {' '.join(args)}"
        refused += theirs.returncode != 0
    # group.version=2 and 9.9-IV9 are no release's; share.version=2 only 4.4's; streams.version 4.1's on
    # (storage: 4 runs refused by 4.0, 3 by 4.1 to 4.3, 2 by 4.4; features: 2, 2, 1).
    assert refused == {(4, 0): 6, (4, 4): 3}.get(release.minor, 5), refused
    interop.record("storage-offline", release.version, f"yes: {len(runs)} runs, {refused} refused alike")
