"""``kraft storage recover-quorum`` refuses where recovering would be wrong,
with one line naming the cause and the fix, and changes nothing then. Run
on copies of real Kafka 4.0 directories (``fixtures/``)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from kraft.records.state_files import MetaProperties
from kraft.tools.recover_quorum import recover_quorum_command

from tests.conftest import FIXTURES
from tests.harness import cli
REAL = FIXTURES / "kafka-4.0-real"


def copy_real(tmp_path: Path, name: str, node_id: int, extra: str = "") -> tuple[Path, Path]:
    source = REAL / name
    directory = tmp_path / name
    shutil.copytree(source, directory, ignore=shutil.ignore_patterns("alpha-*", "beta-*", "__consumer_offsets-*"))
    for p in [directory, *directory.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    config = tmp_path / f"{name}.properties"
    config.write_text(f"process.roles=controller\nnode.id={node_id}\nlisteners=CONTROLLER://127.0.0.1:1\n"
                      "controller.listener.names=CONTROLLER\n"
                      + (extra or "controller.quorum.bootstrap.servers=127.0.0.1:1\n")
                      + f"metadata.log.dir={directory}\n")
    return directory, config


def snapshot_of(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def run(config: Path, *args: str) -> tuple[int, str, str]:
    result = cli.invoke(["--config", str(config), *args], command=recover_quorum_command)
    return result.exit_code, result.stdout, result.stderr


def assert_refused(config: Path, directory: Path, *needles: str) -> None:
    before = snapshot_of(directory)
    code, out, err = run(config, "--unsafe", "--offline")
    assert code == 1, out + err
    assert len(err.strip().splitlines()) == 1, err
    for needle in needles:
        assert needle in err
    assert snapshot_of(directory) == before
    assert not list(directory.parent.glob("*.recover-quorum-backup-*"))


def test_a_node_that_was_not_a_voter_is_refused(tmp_path: Path) -> None:
    # broker4 fetched the controllers' log: voters 1, 2, 3; it is node 4.
    directory, config = copy_real(tmp_path, "broker4", 4)
    assert_refused(config, directory, "Node 4 was not a voter", "1:T4dov9WrS_Ooy3CnMXNmfw")


@pytest.mark.parametrize("kind", ["flock", "lockf"])
def test_a_directory_locked_by_a_running_process_is_refused(tmp_path: Path, kind: str) -> None:
    """kraft locks with flock; Kafka's LogManager with FileChannel.tryLock, a POSIX (lockf) lock."""
    directory, config = copy_real(tmp_path, "controller1", 1)
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import fcntl, os, sys, time\n"
         f"fd = os.open({str(directory / '.lock')!r}, os.O_RDWR | os.O_CREAT)\n"
         f"fcntl.{kind}(fd, fcntl.LOCK_EX)\nprint('locked', flush=True)\ntime.sleep(120)\n"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        assert_refused(config, directory, "is locked by a running process", "stop the node first")
    finally:
        holder.kill()
        holder.wait()
    code, out, err = run(config, "--unsafe", "--offline")
    assert code == 0, out + err


def test_a_static_quorum_config_is_refused_with_the_edit_to_make(tmp_path: Path) -> None:
    directory, config = copy_real(tmp_path, "controller1", 1, "controller.quorum.voters=1@127.0.0.1:1\n")
    assert_refused(config, directory, "controller.quorum.voters is set", "controller.quorum.bootstrap.servers")


def test_a_reformatted_directory_is_not_the_voter(tmp_path: Path) -> None:
    directory, config = copy_real(tmp_path, "controller1", 1)
    meta = MetaProperties.read(directory / "meta.properties")
    MetaProperties(1, meta.cluster_id, 1, uuid.uuid4()).write(directory / "meta.properties")
    assert_refused(config, directory, "is not the voter's T4dov9WrS_Ooy3CnMXNmfw", "re-formatted")


def test_a_node_id_that_is_not_the_directory_s_is_refused(tmp_path: Path) -> None:
    directory, config = copy_real(tmp_path, "controller1", 2)
    assert_refused(config, directory, "Stored node id 1", "node.id 2")


def test_a_corrupt_batch_with_data_after_it_is_refused(tmp_path: Path) -> None:
    directory, config = copy_real(tmp_path, "controller1", 1)
    segment = directory / "__cluster_metadata-0" / "00000000000000000000.log"
    data = bytearray(segment.read_bytes())
    data[len(data) // 2] ^= 0xFF
    segment.write_bytes(bytes(data))
    assert_refused(config, directory, "is corrupt at position", "would lose committed records")


def test_the_plan_changes_nothing_and_unsafe_cuts_a_torn_tail_and_backs_up_first(tmp_path: Path) -> None:
    directory, config = copy_real(tmp_path, "controller1", 1)
    segment = directory / "__cluster_metadata-0" / "00000000000000000000.log"
    original = segment.read_bytes()
    with segment.open("ab") as f:
        f.write(original[-40:-10])  # half a batch: a write cut by a crash
    before = snapshot_of(directory)
    code, out, err = run(config)
    assert code == 0, err
    assert "ends in a torn batch at position 37286" in out and "Nothing was changed" in out
    assert snapshot_of(directory) == before
    code, out, err = run(config, "--unsafe", "--offline", "--backup-dir", str(tmp_path / "backup"))
    assert code == 0, out + err
    backup = tmp_path / "backup"
    assert (backup / "__cluster_metadata-0" / "00000000000000000000.log").read_bytes() == original + original[-40:-10]
    assert (backup / "meta.properties").read_bytes() == before["meta.properties"]
    assert segment.read_bytes()[: len(original)] == original
    assert "Appended the new voter set at offsets 514..514 in epoch 3" in out
    # Running it again: nothing to do (tests/doctor/test_recover_static_and_rerun.py).
    # The voter set may be in a segment of its own: the fixture's records
    # are older than metadata.log.segment.ms, so the append rolls the log
    # (Kafka's LogSegment.shouldRoll).
    def segments() -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in sorted(segment.parent.glob("*.log"))}
    recovered = segments()
    assert sum(map(len, recovered.values())) > len(original)
    code, out, err = run(config, "--unsafe", "--offline", "--backup-dir", str(backup))
    assert code == 0 and "Nothing to recover" in out, out + err
    assert segments() == recovered
    # Another directory given an existing backup directory: nothing is overwritten.
    (tmp_path / "other").mkdir()
    other, other_config = copy_real(tmp_path / "other", "controller1", 1)
    before = snapshot_of(other)
    code, out, err = run(other_config, "--unsafe", "--offline", "--backup-dir", str(backup))
    assert code == 1 and "already exists" in err
    after = snapshot_of(other)
    assert after.pop(".lock", b"") == b"" and after == before  # the lock file it took stays, empty


def test_a_static_quorum_survivor_becomes_a_dynamic_single_voter(tmp_path: Path) -> None:
    """Kafka 4.0's combined-static fixture (kraft.version 0, voters only in
    controller.quorum.voters and quorum-state v0): once its config names
    controller.quorum.bootstrap.servers, the recovery writes a
    KRaftVersionRecord (level 1) before the VotersRecord, in one control batch."""
    from kraft.records.log import MetadataLog, metadata_partition_dir

    directory, config = copy_real(tmp_path, "combined-static", 1)
    code, out, err = run(config, "--unsafe", "--offline")
    assert code == 0, out + err
    assert "Current voters: [1] (kraft.version 0)" in out
    assert "KRaftVersionRecord(kraft.version=1), VotersRecord([1:gC5q7A32o7BtfCpJ0NpbQg" in out
    with MetadataLog.open(metadata_partition_dir(directory)) as log:
        state = log.kraft_control_state()
        assert state.kraft_version == 1
        assert state.voters is not None and [v.voter_id for v in state.voters.voters] == [1]
        assert (state.voters.offset, log.end_offset) == (130, 131)


def test_a_wildcard_controller_listener_cannot_go_into_the_voter_set(tmp_path: Path) -> None:
    directory, config = copy_real(tmp_path, "controller1", 1)
    config.write_text(config.read_text().replace("listeners=CONTROLLER://127.0.0.1:1", "listeners=CONTROLLER://0.0.0.0:9093"))
    assert_refused(config, directory, "0.0.0.0:9093", "advertised.listeners=CONTROLLER://")
    config.write_text(config.read_text() + "advertised.listeners=CONTROLLER://127.0.0.1:9093\n")
    code, out, err = run(config)
    assert code == 0 and "CONTROLLER://127.0.0.1:9093" in out, out + err
